//! VolumeZone (PreFilter, Filter): the zones and regions a bound PV is labelled with must include
//! the node's.

use super::storage::{
    LABEL_FAILURE_DOMAIN_BETA_REGION, LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE, MULTI_ZONE_DELIMITER, claim_class, claim_fact, claim_named,
    claim_volume_name, name, pv_not_found, pvc_not_found, storage_class_not_found, with_claim,
};
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::{ClaimFact, Detail, Fact, ZoneMiss};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes, Reuse};
use crate::framework::status::Status;
use crate::model::intern::{Interner, Str};
use crate::model::node_info::NodeInfo;
use k8s_openapi::api::core::v1 as k8s;
use std::sync::Arc;

pub const NAME: &str = "VolumeZone";
pub const ERR_REASON_CONFLICT: &str = "node(s) had no available volume zone";

/// The labels a PV may carry, in the order upstream reads them.
const TOPOLOGY_LABELS: [&str; 4] = [
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
];

/// A PV's topology label: the node must have `key` (or its GA form) with one of `values`.
#[derive(Clone, Debug)]
struct PvTopology {
    /// The PV's name.
    volume: Str,
    key: Str,
    ga_key: Str,
    values: Vec<Str>,
}

#[derive(Clone, Debug)]
pub struct PreFilterState {
    topologies: Arc<Vec<PvTopology>>,
}

pub struct VolumeZone {
    pre_filter: StateKey<PreFilterState>,
}

/// `translateToGALabel`.
fn ga_label(key: &str) -> &str {
    match key {
        LABEL_FAILURE_DOMAIN_BETA_REGION => LABEL_TOPOLOGY_REGION,
        LABEL_FAILURE_DOMAIN_BETA_ZONE => LABEL_TOPOLOGY_ZONE,
        other => other,
    }
}

/// `getPVTopologies`: a label whose zone list has an empty entry is ignored.
fn pv_topologies(pv: &k8s::PersistentVolume, out: &mut Vec<PvTopology>, strings: &Interner) {
    let Some(labels) = &pv.metadata.labels else {
        return;
    };
    for key in TOPOLOGY_LABELS {
        let Some(value) = labels.get(key) else {
            continue;
        };
        let zones: Vec<&str> = value.split(MULTI_ZONE_DELIMITER).map(str::trim).collect();
        if zones.iter().any(|z| z.is_empty()) {
            continue;
        }
        out.push(PvTopology {
            volume: strings.intern(name(&pv.metadata)),
            key: strings.intern(key),
            ga_key: strings.intern(ga_label(key)),
            values: zones.into_iter().map(|z| strings.intern(z)).collect(),
        });
    }
}

impl VolumeZone {
    pub fn new(slots: &mut StateSlots) -> VolumeZone {
        VolumeZone {
            pre_filter: slots.register("PreFilterVolumeZone"),
        }
    }

    /// `getPVbyPod`.
    fn pod_topologies(cx: &Cx) -> Result<Vec<PvTopology>, Status> {
        let pod = cx.pod;
        let cluster = &cx.snapshot.cluster;
        let mut out = Vec::new();
        for claim in pod.claim_names() {
            let name = claim.as_str();
            let unresolvable = |reason: String, fact: ClaimFact| {
                with_claim(cx, Status::unresolvable(reason), || fact)
            };
            if name.is_empty() {
                return Err(unresolvable(
                    "PersistentVolumeClaim had no name".into(),
                    claim_named(cx, name),
                ));
            }
            let Some(pvc) = cluster
                .strings
                .get(name)
                .and_then(|n| cluster.pvcs.get(&(pod.namespace, n)))
            else {
                return Err(unresolvable(pvc_not_found(name), claim_named(cx, name)));
            };
            let pv_name = claim_volume_name(pvc);
            if pv_name.is_empty() {
                let class_name = claim_class(pvc);
                if class_name.is_empty() {
                    return Err(unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name".into(),
                        claim_fact(cx, pvc),
                    ));
                }
                let Some(class) = cluster
                    .strings
                    .get(class_name)
                    .and_then(|n| cluster.storage_classes.get(&n))
                else {
                    return Err(unresolvable(
                        storage_class_not_found(class_name),
                        claim_fact(cx, pvc),
                    ));
                };
                match class.volume_binding_mode.as_deref() {
                    None => {
                        return Err(unresolvable(
                            format!("VolumeBindingMode not set for StorageClass {class_name:?}"),
                            claim_fact(cx, pvc),
                        ));
                    }
                    Some("WaitForFirstConsumer") => continue,
                    Some(_) => {
                        return Err(unresolvable(
                            "PersistentVolume had no name".into(),
                            claim_fact(cx, pvc),
                        ));
                    }
                }
            }
            let Some(pv) = cluster
                .strings
                .get(pv_name)
                .and_then(|n| cluster.pvs.get(&n))
            else {
                return Err(unresolvable(pv_not_found(pv_name), claim_fact(cx, pvc)));
            };
            pv_topologies(pv, &mut out, &cluster.strings);
        }
        Ok(out)
    }
}

impl Plugin for VolumeZone {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        match VolumeZone::pod_topologies(cx) {
            Err(s) => (s, None),
            Ok(t) if t.is_empty() => (Status::skip(), None),
            Ok(t) => {
                state.write(
                    self.pre_filter,
                    PreFilterState {
                        topologies: Arc::new(t),
                    },
                );
                (Status::success(), None)
            }
        }
    }

    fn filter(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        if cx.pod.volumes.is_empty() {
            return Status::success();
        }
        let computed;
        let topologies = match state.read(self.pre_filter) {
            Some(s) => &s.topologies[..],
            None => match VolumeZone::pod_topologies(cx) {
                Ok(t) => {
                    computed = t;
                    &computed[..]
                }
                Err(s) => return s,
            },
        };
        let labels = &node.node.labels;
        if !TOPOLOGY_LABELS.iter().any(|k| labels.get_str(k).is_some()) {
            return Status::success();
        }
        let value = |t: &PvTopology| labels.get(t.key).or_else(|| labels.get(t.ga_key));
        let misses = |t: &&PvTopology| !value(t).is_some_and(|v| t.values.contains(&v));
        if !topologies.iter().any(|t| misses(&t)) {
            return Status::success();
        }
        cx.with_facts(Status::unresolvable(ERR_REASON_CONFLICT), || {
            topologies
                .iter()
                .filter(misses)
                .map(|t| {
                    Fact::of(Detail::Zone(Box::new(ZoneMiss {
                        volume: t.volume,
                        key: t.key,
                        values: t.values.clone(),
                        node_value: value(t),
                    })))
                })
                .collect()
        })
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}

#[cfg(test)]
mod tests {
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    fn plugin() -> super::VolumeZone {
        super::VolumeZone::new(&mut crate::framework::cycle_state::StateSlots::default())
    }

    use super::*;
    use crate::framework::snapshot::Snapshot;
    use crate::model::cluster::convert_pod;
    use crate::model::pod::Pod;
    use crate::testing::{cluster, node, pod};
    use serde_json::{Value, json};

    fn app(claim: &str) -> Pod {
        let mut p = pod("default/app", None, "100m", 0, json!({}));
        p["spec"]["volumes"] =
            json!([{"name": "v", "persistentVolumeClaim": {"claimName": claim}}]);
        convert_pod(
            serde_json::from_value(p).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod()
    }

    fn bound(claim: &str, pv: &str, pv_labels: Value) -> Vec<Value> {
        vec![
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim, "namespace": "default"}, "spec": {"volumeName": pv}}),
            json!({"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": pv, "labels": pv_labels}, "spec": {}}),
        ]
    }

    fn verdicts(items: Vec<Value>, claim: &str) -> (Status, Vec<Status>) {
        let snapshot = Snapshot::new(cluster(items), None);
        let p = app(claim);
        let cx = Cx::new(&p, &snapshot);
        let mut state = CycleState::default();
        let (pre, _) = plugin().pre_filter(&cx, &mut state);
        let per_node = snapshot
            .nodes
            .iter()
            .map(|n| plugin().filter(&cx, &state, n))
            .collect();
        (pre, per_node)
    }

    #[test]
    fn region_label_matches_the_nodes_ga_label_and_unlabelled_nodes_pass() {
        let mut items = vec![
            node("n1", "4", json!({"topology.kubernetes.io/region": "r1"})),
            node("n2", "4", json!({"topology.kubernetes.io/region": "r2"})),
            node("n3", "4", json!({})),
        ];
        items.extend(bound(
            "c",
            "pv",
            json!({"failure-domain.beta.kubernetes.io/region": "r1"}),
        ));
        let (pre, filters) = verdicts(items, "c");
        assert!(pre.is_success());
        assert!(filters[0].is_success());
        assert_eq!(filters[1], Status::unresolvable(ERR_REASON_CONFLICT));
        assert!(filters[2].is_success());
    }

    #[test]
    fn a_zone_list_with_an_empty_entry_is_ignored() {
        let mut items = vec![node(
            "n1",
            "4",
            json!({"topology.kubernetes.io/zone": "z9"}),
        )];
        items.extend(bound(
            "c",
            "pv",
            json!({"topology.kubernetes.io/zone": "z1__"}),
        ));
        let (pre, _) = verdicts(items, "c");
        assert!(pre.is_skip());
    }

    #[test]
    fn missing_pv_and_unbound_immediate_claim_are_prefilter_errors() {
        let mut items = vec![node("n1", "4", json!({}))];
        items.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "gone", "namespace": "default"}, "spec": {"volumeName": "pv-gone"}}));
        items.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "imm", "namespace": "default"}, "spec": {"storageClassName": "std"}}));
        items.push(
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "std"}, "provisioner": "x"}),
        );
        let (pre, _) = verdicts(items.clone(), "gone");
        assert_eq!(
            pre,
            Status::unresolvable("persistentvolume \"pv-gone\" not found")
        );
        let (pre, _) = verdicts(items, "imm");
        assert_eq!(pre, Status::unresolvable("PersistentVolume had no name"));
    }
}
