//! VolumeRestrictions (PreFilter with AddPod/RemovePod, Filter): a GCE PD, AWS EBS, RBD or iSCSI
//! disk another pod on the node mounts in a conflicting way, and ReadWriteOncePod claims already
//! in use by a scheduled pod.

use super::storage::{claim_access_modes, claim_named, pvc_not_found, with_claim};
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::{ClaimFact, Detail, Fact, PodRef, sorted_pods};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes};
use crate::framework::status::Status;
use crate::model::intern::Str;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use crate::model::volume::Volume;
use k8s_openapi::api::core::v1 as k8s;
use std::sync::Arc;

pub const NAME: &str = "VolumeRestrictions";
pub const ERR_REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
pub const ERR_REASON_RWOP_CONFLICT: &str = "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

#[derive(Clone, Debug)]
pub struct PreFilterState {
    /// Names of the pod's claims with the ReadWriteOncePod access mode.
    rwop_claims: Arc<Vec<Str>>,
    /// How many scheduled pods' references to those claims there are.
    conflicting_refs: i64,
}

impl PreFilterState {
    /// Upstream matches the added or removed pod's claims by name only, whatever its namespace.
    fn update_with_pod(&mut self, pod: &Pod, sign: i64) {
        let refs = pod
            .claim_names()
            .filter(|c| self.rwop_claims.contains(c))
            .count();
        self.conflicting_refs += sign * refs as i64;
    }
}

pub struct VolumeRestrictions {
    pre_filter: StateKey<PreFilterState>,
}

impl VolumeRestrictions {
    pub fn new(slots: &mut StateSlots) -> VolumeRestrictions {
        VolumeRestrictions {
            pre_filter: slots.register("PreFilterVolumeRestrictions"),
        }
    }
}

/// What the API server defaults an RBD volume's pool to.
const RBD_DEFAULT_POOL: &str = "rbd";

/// The volume as written when it has a disk source this plugin compares.
fn checked_disk(v: &Volume) -> Option<&k8s::Volume> {
    v.as_written().filter(|v| {
        v.gce_persistent_disk.is_some()
            || v.aws_elastic_block_store.is_some()
            || v.rbd.is_some()
            || v.iscsi.is_some()
    })
}

/// `isVolumeConflict`: the volume cannot be mounted next to one of `existing`'s volumes.
fn volume_conflicts(v: &k8s::Volume, existing: &Pod) -> bool {
    let mut disks = existing.volumes.iter().filter_map(checked_disk);
    disks.any(|e| {
        if let (Some(d), Some(ed)) = (&v.gce_persistent_disk, &e.gce_persistent_disk)
            && d.pd_name == ed.pd_name
            && !(d.read_only == Some(true) && ed.read_only == Some(true))
        {
            return true;
        }
        if let (Some(d), Some(ed)) = (&v.aws_elastic_block_store, &e.aws_elastic_block_store)
            && d.volume_id == ed.volume_id
        {
            return true;
        }
        if let (Some(d), Some(ed)) = (&v.iscsi, &e.iscsi)
            && d.iqn == ed.iqn
            && !(d.read_only == Some(true) && ed.read_only == Some(true))
        {
            return true;
        }
        if let (Some(d), Some(ed)) = (&v.rbd, &e.rbd)
            && d.monitors.iter().any(|m| ed.monitors.contains(m))
            && d.pool.as_deref().unwrap_or(RBD_DEFAULT_POOL)
                == ed.pool.as_deref().unwrap_or(RBD_DEFAULT_POOL)
            && d.image == ed.image
            && !(d.read_only == Some(true) && ed.read_only == Some(true))
        {
            return true;
        }
        false
    })
}

impl Plugin for VolumeRestrictions {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER
    }

    fn replicas_interact(&self, cx: &Cx) -> bool {
        super::storage::replicas_share_claims(cx.pod)
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        let pod = cx.pod;
        let cluster = &cx.snapshot.cluster;
        let needs_check = pod.volumes.iter().any(|v| checked_disk(v).is_some());
        let mut rwop_claims: Vec<Str> = Vec::new();
        for claim in pod.claim_names() {
            let Some(pvc) = cluster.pvcs.get(&(pod.namespace, claim)) else {
                let status = Status::unresolvable(pvc_not_found(&claim));
                return (with_claim(cx, status, || claim_named(cx, &claim)), None);
            };
            if claim_access_modes(pvc)
                .iter()
                .any(|m| m == "ReadWriteOncePod")
                && !rwop_claims.contains(&claim)
            {
                rwop_claims.push(claim);
            }
        }
        // `IsPVCUsedByPods`: at most one scheduled pod can be using each such claim.
        let conflicting_refs = rwop_claims
            .iter()
            .filter(|&&name| {
                let key = (pod.namespace, name);
                cx.snapshot
                    .nodes
                    .iter()
                    .any(|n| n.pvc_ref_counts.contains_key(&key))
            })
            .count() as i64;
        if !needs_check && conflicting_refs == 0 {
            return (Status::skip(), None);
        }
        state.write(
            self.pre_filter,
            PreFilterState {
                rwop_claims: Arc::new(rwop_claims),
                conflicting_refs,
            },
        );
        (Status::success(), None)
    }

    fn has_pre_filter_extensions(&self) -> bool {
        true
    }

    fn add_pod(
        &self,
        _cx: &Cx,
        state: &mut CycleState,
        pod: &Arc<Pod>,
        _node: &NodeInfo,
    ) -> Status {
        match state.read_mut(self.pre_filter) {
            Some(s) => {
                s.update_with_pod(pod, 1);
                Status::success()
            }
            None => Status::error(ERR_NO_STATE),
        }
    }

    fn remove_pod(&self, _cx: &Cx, state: &mut CycleState, pod: &Pod, _node: &NodeInfo) -> Status {
        match state.read_mut(self.pre_filter) {
            Some(s) => {
                s.update_with_pod(pod, -1);
                Status::success()
            }
            None => Status::error(ERR_NO_STATE),
        }
    }

    fn filter(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        let checked = || cx.pod.volumes.iter().filter_map(checked_disk);
        if checked().any(|v| node.pods.iter().any(|p| volume_conflicts(v, p))) {
            return cx.with_facts(Status::unschedulable(ERR_REASON_DISK_CONFLICT), || {
                checked()
                    .filter_map(|v| {
                        let pods: Vec<PodRef> = node
                            .pods
                            .iter()
                            .filter(|p| volume_conflicts(v, p))
                            .map(|p| PodRef::of(p))
                            .collect();
                        let volume = cx.snapshot.cluster.strings.intern(&v.name);
                        (!pods.is_empty())
                            .then(|| Fact::of(Detail::Disk(Box::new((volume, sorted_pods(pods))))))
                    })
                    .collect()
            });
        }
        match state.read(self.pre_filter) {
            None => Status::error(ERR_NO_STATE),
            Some(s) if s.conflicting_refs > 0 => cx
                .with_facts(Status::unschedulable(ERR_REASON_RWOP_CONFLICT), || {
                    rwop_users(cx, &s.rwop_claims)
                }),
            Some(_) => Status::success(),
        }
    }
}

/// Per ReadWriteOncePod claim of the pod that scheduled pods use: the claim and those pods.
fn rwop_users(cx: &Cx, claims: &[Str]) -> Vec<Fact> {
    claims
        .iter()
        .filter_map(|name| {
            let pods: Vec<PodRef> = cx
                .snapshot
                .nodes
                .iter()
                .flat_map(|n| n.pods.iter())
                .filter(|p| p.namespace == cx.pod.namespace)
                .filter(|p| p.claim_names().any(|c| c == *name))
                .map(|p| PodRef::of(p))
                .collect();
            (!pods.is_empty()).then(|| {
                Fact::of(Detail::Claim(Box::new(ClaimFact {
                    pods: sorted_pods(pods),
                    ..claim_named(cx, name)
                })))
            })
        })
        .collect()
}

const ERR_NO_STATE: &str = "cannot read \"PreFilterVolumeRestrictions\" from cycleState";

#[cfg(test)]
mod tests {
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    fn plugin() -> super::VolumeRestrictions {
        super::VolumeRestrictions::new(&mut crate::framework::cycle_state::StateSlots::default())
    }

    use super::*;
    use crate::framework::snapshot::Snapshot;
    use crate::model::cluster::convert_pod;
    use crate::testing::{cluster, node, pod};
    use serde_json::{Value, json};

    fn with_volumes(mut p: Value, volumes: Value) -> Value {
        p["spec"]["volumes"] = volumes;
        p
    }

    fn parse(p: Value) -> Pod {
        convert_pod(
            serde_json::from_value(p).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod()
    }

    fn rwop_pvc(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default",
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"accessModes": ["ReadWriteOncePod"], "volumeName": "pv-1"}})
    }

    fn claim(name: &str) -> Value {
        json!([{"name": "v", "persistentVolumeClaim": {"claimName": name}}])
    }

    #[test]
    fn gce_pd_conflicts_unless_both_read_only() {
        let pd = |ro: bool| json!([{"name": "d", "gcePersistentDisk": {"pdName": "data", "readOnly": ro}}]);
        for (existing_ro, new_ro, conflict) in [
            (true, true, false),
            (true, false, true),
            (false, true, true),
        ] {
            let c = cluster(vec![
                node("n1", "4", json!({})),
                with_volumes(
                    pod("default/a", Some("n1"), "100m", 0, json!({})),
                    pd(existing_ro),
                ),
            ]);
            let snapshot = Snapshot::new(c, None);
            let p = parse(with_volumes(
                pod("default/b", None, "100m", 0, json!({})),
                pd(new_ro),
            ));
            let cx = Cx::new(&p, &snapshot);
            let mut state = CycleState::default();
            assert!(plugin().pre_filter(&cx, &mut state).0.is_success());
            let s = plugin().filter(&cx, &state, &snapshot.nodes[0]);
            assert_eq!(!s.is_success(), conflict, "{existing_ro} {new_ro}");
        }
    }

    /// An EBS volume conflicts whatever the read-only flags, an iSCSI disk unless both mount it
    /// read-only; the ServiceAccount volume beside them plays no part and alone skips.
    #[test]
    fn ebs_and_iscsi_conflicts_beside_a_service_account_volume() {
        let sa = json!({"name": "kube-api-access-x", "projected": {"sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}});
        let ebs = |id: &str| json!({"name": "e", "awsElasticBlockStore": {"volumeID": id, "readOnly": true}});
        let iscsi = |ro: bool| json!({"name": "i", "iscsi": {"targetPortal": "t:3260", "iqn": "iqn.x", "lun": 0, "readOnly": ro}});
        let c = cluster(vec![
            node("n1", "4", json!({})),
            with_volumes(
                pod("default/a", Some("n1"), "100m", 0, json!({})),
                json!([sa, ebs("vol-1"), iscsi(true)]),
            ),
        ]);
        let snapshot = Snapshot::new(c, None);
        for (volume, conflict) in [
            (ebs("vol-1"), true),
            (ebs("vol-2"), false),
            (iscsi(true), false),
            (iscsi(false), true),
        ] {
            let p = parse(with_volumes(
                pod("default/b", None, "100m", 0, json!({})),
                json!([sa, volume]),
            ));
            let cx = Cx::new(&p, &snapshot);
            let mut state = CycleState::default();
            assert!(plugin().pre_filter(&cx, &mut state).0.is_success());
            let s = plugin().filter(&cx, &state, &snapshot.nodes[0]);
            assert_eq!(
                s.reasons == [ERR_REASON_DISK_CONFLICT],
                conflict,
                "{volume}"
            );
        }
        let p = parse(with_volumes(
            pod("default/b", None, "100m", 0, json!({})),
            json!([sa]),
        ));
        let cx = Cx::new(&p, &snapshot);
        assert!(
            plugin()
                .pre_filter(&cx, &mut CycleState::default())
                .0
                .is_skip()
        );
    }

    #[test]
    fn rbd_conflicts_need_a_shared_monitor() {
        let rbd = |mons: &[&str]| json!([{"name": "r", "rbd": {"monitors": mons, "pool": "p", "image": "img"}}]);
        let c = cluster(vec![
            node("n1", "4", json!({})),
            with_volumes(
                pod("default/a", Some("n1"), "100m", 0, json!({})),
                rbd(&["m1", "m2"]),
            ),
        ]);
        let snapshot = Snapshot::new(c, None);
        for (mons, conflict) in [(&["m2"][..], true), (&["m3"][..], false)] {
            let p = parse(with_volumes(
                pod("default/b", None, "100m", 0, json!({})),
                rbd(mons),
            ));
            let cx = Cx::new(&p, &snapshot);
            let mut state = CycleState::default();
            plugin().pre_filter(&cx, &mut state);
            let s = plugin().filter(&cx, &state, &snapshot.nodes[0]);
            assert_eq!(s.reasons == [ERR_REASON_DISK_CONFLICT], conflict);
        }
    }

    #[test]
    fn missing_claim_is_unresolvable_and_unused_rwop_claim_skips() {
        let c = cluster(vec![node("n1", "4", json!({})), rwop_pvc("solo")]);
        let snapshot = Snapshot::new(c, None);
        let p = parse(with_volumes(
            pod("default/b", None, "100m", 0, json!({})),
            claim("nope"),
        ));
        let cx = Cx::new(&p, &snapshot);
        let (s, _) = plugin().pre_filter(&cx, &mut CycleState::default());
        assert_eq!(
            s,
            Status::unresolvable("persistentvolumeclaim \"nope\" not found")
        );
        let p = parse(with_volumes(
            pod("default/b", None, "100m", 0, json!({})),
            claim("solo"),
        ));
        let cx = Cx::new(&p, &snapshot);
        let (s, _) = plugin().pre_filter(&cx, &mut CycleState::default());
        assert!(s.is_skip());
    }

    /// The real cycle: a higher-priority pod preempts the one holding the claim, and only on
    /// its node, since evicting pods elsewhere leaves the claim in use.
    #[test]
    fn preemption_evicts_the_rwop_claim_holder() {
        let holder = with_volumes(
            pod("default/holder", Some("n2"), "100m", 0, json!({})),
            claim("solo"),
        );
        let c = cluster(vec![
            node("n1", "4", json!({})),
            node("n2", "4", json!({})),
            pod("default/other", Some("n1"), "100m", 0, json!({})),
            rwop_pvc("solo"),
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
                "spec": {"accessModes": ["ReadWriteOncePod"], "csi": {"driver": "d", "volumeHandle": "h"},
                    "claimRef": {"name": "solo", "namespace": "default"}}}),
            holder,
        ]);
        let e = crate::testing::explain(
            c,
            with_volumes(pod("default/b", None, "100m", 10, json!({})), claim("solo")),
        );
        assert!(
            e.message_before_post_filter
                .contains(ERR_REASON_RWOP_CONFLICT),
            "{}",
            e.message
        );
        let p = e.preemption.expect("preemption ran");
        assert_eq!(p.nominated_node, "n2");
        assert_eq!(p.victims, ["default/holder"]);
    }

    /// Preemption removes the pod holding the claim: RemovePod clears the conflict, AddPod brings
    /// it back.
    #[test]
    fn rwop_conflict_follows_remove_and_add_pod() {
        let holder = with_volumes(
            pod("default/holder", Some("n1"), "100m", 0, json!({})),
            claim("solo"),
        );
        let c = cluster(vec![
            node("n1", "4", json!({})),
            rwop_pvc("solo"),
            holder.clone(),
        ]);
        let snapshot = Snapshot::new(c, None);
        let p = parse(with_volumes(
            pod("default/b", None, "100m", 10, json!({})),
            claim("solo"),
        ));
        let cx = Cx::new(&p, &snapshot);
        let mut state = CycleState::default();
        assert!(plugin().pre_filter(&cx, &mut state).0.is_success());
        let n = &snapshot.nodes[0];
        assert_eq!(
            plugin().filter(&cx, &state, n).reasons,
            [ERR_REASON_RWOP_CONFLICT]
        );
        let holder = Arc::new(parse(holder));
        let mut removed = state.clone();
        assert!(
            plugin()
                .remove_pod(&cx, &mut removed, &holder, n)
                .is_success()
        );
        assert!(plugin().filter(&cx, &removed, n).is_success());
        assert!(plugin().add_pod(&cx, &mut removed, &holder, n).is_success());
        assert!(!plugin().filter(&cx, &removed, n).is_success());
        // The original state is untouched by what the clone went through.
        assert!(!plugin().filter(&cx, &state, n).is_success());
    }
}
