//! NodeVolumeLimits (PreFilter, Filter), the CSI limits plugin: the volumes of a CSI driver
//! attached to a node, counting in-tree volumes migrated to CSI, may not exceed what the node's
//! CSINode allows for that driver. A volume several pods share counts once.

use super::csi_translation::{self, InTree};
use super::storage::{
    claim_class, claim_named, claim_volume_name, ephemeral_claim_is_for_pod, ephemeral_claim_name,
    migrated_on_node, pvc_not_found, with_claim,
};
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::{Detail, Fact};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes, Reuse};
use crate::framework::status::Status;
use crate::model::cluster::Cluster;
use crate::model::intern::Interner;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::api::storage::v1::CSINode;
use std::borrow::Cow;
use std::sync::Arc;

pub const NAME: &str = "NodeVolumeLimits";
pub const ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED: &str = "node(s) exceed max volume count";

/// Stands in for upstream's random prefix of the handle it gives a claim not bound yet: unique
/// to the claim and unlike any real handle.
const UNBOUND_HANDLE_PREFIX: &str = "\u{0}kubectl-sched-unbound";

/// A volume as `getVolumeUniqueName` identifies it: driver and handle.
#[derive(Clone, Debug, PartialEq, Eq)]
struct VolumeId<'a> {
    driver: &'a str,
    handle: Cow<'a, str>,
}

/// How a volume counts towards a node's CSI limits, before knowing the node.
#[derive(Clone, Debug)]
enum Attachable<'a> {
    Csi(VolumeId<'a>),
    /// An in-tree volume (or provisioner) counts as its CSI driver's where the node migrated it;
    /// `Err` when translating it fails, which upstream reports as an error on such nodes only.
    InTree(&'static InTree, Result<Option<VolumeId<'a>>, String>),
}

impl<'a> Attachable<'a> {
    /// A copy that owns its strings, for the cycle state.
    fn into_static(self, strings: &Interner) -> Attachable<'static> {
        let own = |id: VolumeId| VolumeId {
            driver: strings.intern(id.driver).as_str(),
            handle: Cow::Owned(id.handle.into_owned()),
        };
        match self {
            Attachable::Csi(id) => Attachable::Csi(own(id)),
            Attachable::InTree(p, r) => Attachable::InTree(p, r.map(|id| id.map(own))),
        }
    }

    /// The volume on the node; `None` when it does not count there.
    fn on_node(&self, node: NodeCsi) -> Result<Option<&VolumeId<'a>>, String> {
        match self {
            Attachable::Csi(id) => Ok(Some(id)),
            Attachable::InTree(p, r) if node.migrated(p) => match r {
                Ok(id) => Ok(id.as_ref()),
                Err(e) => Err(e.clone()),
            },
            Attachable::InTree(..) => Ok(None),
        }
    }
}

/// A node's CSINode, and how the release decides which in-tree plugins it migrated.
#[derive(Clone, Copy)]
struct NodeCsi<'n> {
    csi_node: Option<&'n CSINode>,
    /// Portworx counts as CSI only where the CSINode lists it as migrated (until 1.36 removed
    /// its migration gate).
    portworx_needs_annotation: bool,
}

impl NodeCsi<'_> {
    /// `isCSIMigrationOn`.
    fn migrated(self, p: &InTree) -> bool {
        self.csi_node.is_some()
            && p.migrated
            && (!(p.limits_need_annotation && self.portworx_needs_annotation)
                || migrated_on_node(self.csi_node, p.plugin))
    }
}

/// `getCSIDriverInfo`: the claim's PV, else what its StorageClass would provision.
fn claim_attachable<'a>(
    cluster: &'a Cluster,
    pvc: &'a k8s::PersistentVolumeClaim,
) -> Option<Attachable<'a>> {
    let pv = cluster
        .strings
        .get(claim_volume_name(pvc))
        .and_then(|n| cluster.pvs.get(&n));
    let Some(pv) = pv else {
        return class_attachable(cluster, pvc);
    };
    if let Some(csi) = pv.spec.as_ref().and_then(|s| s.csi.as_ref()) {
        return Some(Attachable::Csi(VolumeId {
            driver: &csi.driver,
            handle: Cow::Borrowed(&csi.volume_handle),
        }));
    }
    let plugin = csi_translation::pv_plugin(pv)?;
    let translated = csi_translation::translate_pv(pv).ok().map(|t| VolumeId {
        driver: t.driver,
        handle: Cow::Owned(t.handle),
    });
    Some(Attachable::InTree(plugin, Ok(translated)))
}

/// `getCSIDriverInfoFromSC`.
fn class_attachable<'a>(
    cluster: &'a Cluster,
    pvc: &'a k8s::PersistentVolumeClaim,
) -> Option<Attachable<'a>> {
    let class = cluster
        .strings
        .get(claim_class(pvc))
        .and_then(|n| cluster.storage_classes.get(&n))?;
    let handle = Cow::Owned(format!(
        "{UNBOUND_HANDLE_PREFIX}-{}/{}",
        pvc.metadata.namespace.as_deref().unwrap_or(""),
        pvc.metadata.name.as_deref().unwrap_or("")
    ));
    Some(match csi_translation::by_plugin_name(&class.provisioner) {
        Some(p) => Attachable::InTree(
            p,
            Ok(Some(VolumeId {
                driver: p.driver,
                handle,
            })),
        ),
        None => Attachable::Csi(VolumeId {
            driver: &class.provisioner,
            handle,
        }),
    })
}

/// `checkAttachableInlineVolume`, before knowing the node.
fn inline_attachable(v: &k8s::Volume) -> Option<Attachable<'static>> {
    let plugin = csi_translation::inline_plugin(v).filter(|p| p.migrated)?;
    let translated = csi_translation::translate_inline(v)
        .map(|(driver, handle)| {
            Some(VolumeId {
                driver,
                handle: Cow::Owned(handle),
            })
        })
        .map_err(|e| format!("converting volume({}) from inline to csi: {e}", v.name));
    Some(Attachable::InTree(plugin, translated))
}

fn ephemeral_claim<'a>(
    cluster: &'a Cluster,
    pod: &Pod,
    volume: &str,
) -> (String, Option<&'a Arc<k8s::PersistentVolumeClaim>>) {
    let name = ephemeral_claim_name(&pod.name, volume);
    let pvc = cluster
        .strings
        .get(&name)
        .and_then(|n| cluster.pvcs.get(&(pod.namespace, n)));
    (name, pvc)
}

/// `filterAttachableVolumes` for the pod being scheduled, in volume order: what each volume
/// counts as, or the status that stops the Filter when it is reached.
fn new_pod_volumes(cx: &Cx) -> Vec<Result<Attachable<'static>, Status>> {
    let pod = cx.pod;
    let cluster = &*cx.snapshot.cluster;
    let mut out = Vec::new();
    for v in &pod.volumes {
        let (name, pvc, ephemeral) = if let Some(c) = v.claim() {
            let pvc = cluster.pvcs.get(&(pod.namespace, c));
            (c.to_string(), pvc, false)
        } else if let Some(volume) = v.ephemeral_name() {
            let (name, pvc) = ephemeral_claim(cluster, pod, volume);
            (name, pvc, true)
        } else {
            out.extend(v.as_written().and_then(inline_attachable).map(Ok));
            continue;
        };
        if name.is_empty() {
            out.push(Err(Status::error("PersistentVolumeClaim had no name")));
            continue;
        }
        let Some(pvc) = pvc else {
            let status = Status::unresolvable(format!(
                "looking up PVC {}/{name}: {}",
                pod.namespace,
                pvc_not_found(&name)
            ));
            out.push(Err(with_claim(cx, status, || claim_named(cx, &name))));
            continue;
        };
        if ephemeral && let Err(e) = ephemeral_claim_is_for_pod(pod, pvc) {
            out.push(Err(Status::error(e)));
            continue;
        }
        out.extend(claim_attachable(cluster, pvc).map(|a| Ok(a.into_static(&cluster.strings))));
    }
    out
}

#[derive(Clone, Debug)]
pub struct PreFilterState {
    new_volumes: Arc<Vec<Result<Attachable<'static>, Status>>>,
}

pub struct NodeVolumeLimits {
    /// See `NodeCsi`.
    pub portworx_needs_annotation: bool,
    /// `VolumeLimitScaling`: a pod's CSI volumes need their driver on the node when the
    /// CSIDriver asks for it (`preventPodSchedulingIfMissing`).
    pub volume_limit_scaling: bool,
    pre_filter: StateKey<PreFilterState>,
}

impl NodeVolumeLimits {
    pub fn new(
        slots: &mut StateSlots,
        portworx_needs_annotation: bool,
        volume_limit_scaling: bool,
    ) -> NodeVolumeLimits {
        NodeVolumeLimits {
            portworx_needs_annotation,
            volume_limit_scaling,
            pre_filter: slots.register("PreFilterNodeVolumeLimits"),
        }
    }
}

/// `checkCSIDriverOnNode`: a driver without a CSIDriver object, or one that does not opt in,
/// counts as installed.
fn driver_installed(cluster: &Cluster, driver: &str, csi_node: Option<&CSINode>) -> bool {
    let opted_in = cluster
        .strings
        .get(driver)
        .and_then(|d| cluster.csi_drivers.get(&d))
        .is_some_and(|d| d.spec.prevent_pod_scheduling_if_missing == Some(true));
    !opted_in || csi_node.is_some_and(|n| n.spec.drivers.iter().any(|d| d.name == driver))
}

fn insert<'a>(set: &mut Vec<VolumeId<'a>>, id: &VolumeId<'a>) {
    if !set.contains(id) {
        set.push(id.clone());
    }
}

/// The volumes of the pods already on the node (`filterAttachableVolumes` for existing pods).
fn attached_volumes<'a>(
    cluster: &'a Cluster,
    node: &'a NodeInfo,
    csi: NodeCsi,
) -> Result<Vec<VolumeId<'a>>, Status> {
    let mut attached = Vec::new();
    // Every claim the node's pods mount; a claim several pods share is one volume anyway.
    for key in node.pvc_ref_counts.keys() {
        if let Some(a) = cluster
            .pvcs
            .get(key)
            .and_then(|pvc| claim_attachable(cluster, pvc))
            && let Ok(Some(id)) = a.on_node(csi)
        {
            insert(&mut attached, id);
        }
    }
    for pod in &node.pods {
        for v in &pod.volumes {
            let a = if v.claim().is_some() {
                continue;
            } else if let Some(volume) = v.ephemeral_name() {
                let (_, pvc) = ephemeral_claim(cluster, pod, volume);
                let Some(pvc) = pvc else { continue };
                ephemeral_claim_is_for_pod(pod, pvc).map_err(Status::error)?;
                claim_attachable(cluster, pvc)
            } else {
                v.as_written().and_then(inline_attachable)
            };
            if let Some(a) = a
                && let Some(id) = a.on_node(csi).map_err(Status::error)?
            {
                insert(&mut attached, id);
            }
        }
    }
    Ok(attached)
}

impl Plugin for NodeVolumeLimits {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        let relevant = cx.pod.volumes.iter().any(|v| {
            v.claim().is_some()
                || v.ephemeral_name().is_some()
                || v.as_written()
                    .and_then(csi_translation::inline_plugin)
                    .is_some()
        });
        if !relevant {
            return (Status::skip(), None);
        }
        state.write(
            self.pre_filter,
            PreFilterState {
                new_volumes: Arc::new(new_pod_volumes(cx)),
            },
        );
        (Status::success(), None)
    }

    fn filter(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        if cx.pod.volumes.is_empty() {
            return Status::success();
        }
        let computed;
        let entries = match state.read(self.pre_filter) {
            Some(s) => &s.new_volumes[..],
            None => {
                computed = new_pod_volumes(cx);
                &computed[..]
            }
        };
        let cluster = &*cx.snapshot.cluster;
        let csi_node = cluster.csi_nodes.get(&node.name()).map(|n| &**n);
        let csi = NodeCsi {
            csi_node,
            portworx_needs_annotation: self.portworx_needs_annotation,
        };
        let mut new: Vec<&VolumeId> = Vec::new();
        for e in entries {
            match e {
                Err(s) => return s.clone(),
                Ok(a) => match a.on_node(csi) {
                    Err(msg) => return Status::error(msg),
                    Ok(Some(id)) if !new.contains(&id) => new.push(id),
                    Ok(_) => {}
                },
            }
        }
        if new.is_empty() {
            return Status::success();
        }
        if self.volume_limit_scaling
            && let Some(id) = new
                .iter()
                .find(|id| !driver_installed(cluster, id.driver, csi_node))
        {
            let status = Status::unschedulable(format!(
                "{} CSI driver is not installed on the node",
                id.driver
            ));
            return cx.with_fact(status, || {
                Detail::MissingDriver(cluster.strings.intern(id.driver))
            });
        }
        let limits: Vec<(&str, i64)> = csi_node
            .into_iter()
            .flat_map(|n| n.spec.drivers.iter())
            .filter_map(|d| {
                let count = d.allocatable.as_ref()?.count?;
                Some((d.name.as_str(), i64::from(count)))
            })
            .collect();
        if limits.is_empty() {
            return Status::success();
        }
        let attached = match attached_volumes(cluster, node, csi) {
            Ok(a) => a,
            Err(s) => return s,
        };
        // Volumes still attached to the node without a pod there using them.
        let mut detached: Vec<VolumeId> = Vec::new();
        for va in cluster
            .volume_attachments
            .get(&node.name())
            .into_iter()
            .flatten()
        {
            let Some(pv) = va.persistent_volume.and_then(|n| cluster.pvs.get(&n)) else {
                continue;
            };
            if va.attacher.is_empty() {
                continue;
            }
            if let Some(csi) = pv.spec.as_ref().and_then(|s| s.csi.as_ref()) {
                let id = VolumeId {
                    driver: va.attacher.as_str(),
                    handle: Cow::Borrowed(&csi.volume_handle),
                };
                if !attached.contains(&id) {
                    insert(&mut detached, &id);
                }
            }
        }
        new.retain(|id| !attached.contains(id));
        let per_driver =
            |ids: &[VolumeId], driver: &str| ids.iter().filter(|id| id.driver == driver).count();
        let exceeding = || {
            limits.iter().filter_map(|&(driver, limit)| {
                let adding = new.iter().filter(|id| id.driver == driver).count() as i64;
                let present =
                    (per_driver(&attached, driver) + per_driver(&detached, driver)) as i64;
                (adding > 0 && present + adding > limit).then_some((driver, present, adding, limit))
            })
        };
        if exceeding().next().is_none() {
            return Status::success();
        }
        cx.with_facts(
            Status::unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED),
            || {
                exceeding()
                    .map(|(driver, attached, adding, limit)| {
                        Fact::of(Detail::VolumeLimit {
                            driver: cluster.strings.intern(driver),
                            attached,
                            adding,
                            limit,
                        })
                    })
                    .collect()
            },
        )
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
    fn v134() -> super::NodeVolumeLimits {
        super::NodeVolumeLimits::new(
            &mut crate::framework::cycle_state::StateSlots::default(),
            true,
            false,
        )
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

    fn claims(names: &[&str]) -> Value {
        Value::Array(
            names
                .iter()
                .map(|n| json!({"name": n, "persistentVolumeClaim": {"claimName": n}}))
                .collect(),
        )
    }

    /// A claim bound to a PV with this spec.
    fn bound_claim(name: &str, pv_spec: Value) -> Vec<Value> {
        vec![
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default",
                    "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
                "spec": {"volumeName": format!("pv-{name}")}}),
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": format!("pv-{name}")},
                "spec": pv_spec}),
        ]
    }

    /// A claim bound to a CSI PV of `driver`.
    fn csi_claim(name: &str, driver: &str) -> Vec<Value> {
        bound_claim(
            name,
            json!({"csi": {"driver": driver, "volumeHandle": format!("h-{name}")}}),
        )
    }

    fn csi_node(name: &str, limits: &[(&str, i32)]) -> Value {
        let drivers: Vec<Value> = limits
            .iter()
            .map(|(d, c)| json!({"name": d, "nodeID": name, "allocatable": {"count": c}}))
            .collect();
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": name}, "spec": {"drivers": drivers}})
    }

    fn run(items: Vec<Value>, new_pod: Value) -> Vec<Status> {
        let snapshot = Snapshot::new(cluster(items), None);
        let p = convert_pod(
            serde_json::from_value(new_pod).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod();
        let cx = Cx::new(&p, &snapshot);
        let mut state = CycleState::default();
        let (s, _) = v134().pre_filter(&cx, &mut state);
        assert!(s.is_success(), "{s:?}");
        snapshot
            .nodes
            .iter()
            .map(|n| v134().filter(&cx, &state, n))
            .collect()
    }

    /// From 1.37 a CSIDriver that opts in keeps pods off nodes without the driver; one that
    /// does not, or a driver without a CSIDriver object, leaves them alone.
    #[test]
    fn drivers_that_opt_in_must_be_on_the_node_from_1_37() {
        use crate::release::Release;
        use crate::testing::explain_as;
        let driver = |name: &str, opt_in: bool| {
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
                "spec": {"preventPodSchedulingIfMissing": opt_in}})
        };
        let mut items = vec![
            node("with", "4", json!({})),
            node("without", "4", json!({})),
            csi_node("with", &[("strict.csi", 10), ("lax.csi", 10)]),
            driver("strict.csi", true),
            driver("lax.csi", false),
        ];
        items.extend(csi_claim("s", "strict.csi"));
        items.extend(csi_claim("l", "lax.csi"));
        let c = cluster(items);
        let rejection = |release: &str, claim: &str| {
            let p = with_volumes(pod("default/p", None, "1m", 0, json!({})), claims(&[claim]));
            let e = explain_as(Release::parse(release).unwrap(), c.clone(), p);
            let n = e.nodes.iter().find(|n| n.name == "without").unwrap();
            n.all_reasons.get(NAME).map(|s| s.reasons.join("; "))
        };
        assert_eq!(
            rejection("1.37", "s").as_deref(),
            Some("strict.csi CSI driver is not installed on the node")
        );
        assert_eq!(rejection("1.36", "s"), None);
        assert_eq!(rejection("1.37", "l"), None);
    }

    /// In-tree Portworx volumes count against the CSI driver's limit only on nodes whose CSINode
    /// lists the plugin as migrated, until 1.36 made the migration unconditional.
    #[test]
    fn portworx_counts_everywhere_from_1_36() {
        use crate::release::Release;
        use crate::testing::explain_as;
        let px_claim = |name: &str| {
            bound_claim(
                name,
                json!({"portworxVolume": {"volumeID": format!("vol-{name}")}}),
            )
        };
        let mut items = vec![
            node("n1", "4", json!({})),
            csi_node("n1", &[("pxd.portworx.com", 1)]),
            with_volumes(
                pod("default/a", Some("n1"), "1m", 0, json!({})),
                claims(&["old"]),
            ),
        ];
        items.extend(px_claim("old"));
        items.extend(px_claim("new"));
        let c = cluster(items);
        let p = with_volumes(pod("default/p", None, "1m", 0, json!({})), claims(&["new"]));
        let fits = |release: &str| {
            explain_as(Release::parse(release).unwrap(), c.clone(), p.clone()).fits()
        };
        assert!(
            fits("1.35"),
            "without the annotation the volumes are not CSI"
        );
        assert!(!fits("1.36"), "the second volume exceeds the limit of 1");
    }

    #[test]
    fn limits_count_attached_volumes_per_driver() {
        let mut items = vec![
            node("n1", "4", json!({})),
            node("n2", "4", json!({})),
            node("n3", "4", json!({})),
            csi_node("n1", &[("ebs", 1)]),
            csi_node("n2", &[("ebs", 2)]),
            csi_node("n3", &[("other", 0)]),
            with_volumes(
                pod("default/a", Some("n1"), "1m", 0, json!({})),
                claims(&["old"]),
            ),
            with_volumes(
                pod("default/b", Some("n2"), "1m", 0, json!({})),
                claims(&["old"]),
            ),
            with_volumes(
                pod("default/c", Some("n3"), "1m", 0, json!({})),
                claims(&["old"]),
            ),
        ];
        items.extend(csi_claim("old", "ebs"));
        items.extend(csi_claim("new", "ebs"));
        let v = run(
            items,
            with_volumes(pod("default/p", None, "1m", 0, json!({})), claims(&["new"])),
        );
        assert_eq!(
            v[0],
            Status::unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        );
        assert!(v[1].is_success());
        // No limit for the driver the pod uses.
        assert!(v[2].is_success());
    }

    #[test]
    fn a_volume_already_on_the_node_does_not_count_again() {
        let mut items = vec![
            node("n1", "4", json!({})),
            csi_node("n1", &[("ebs", 1)]),
            with_volumes(
                pod("default/a", Some("n1"), "1m", 0, json!({})),
                claims(&["shared"]),
            ),
        ];
        items.extend(csi_claim("shared", "ebs"));
        let v = run(
            items,
            with_volumes(
                pod("default/p", None, "1m", 0, json!({})),
                claims(&["shared"]),
            ),
        );
        assert!(v[0].is_success());
    }

    #[test]
    fn volume_attachments_without_pods_count() {
        let mut items = vec![node("n1", "4", json!({})), csi_node("n1", &[("ebs", 1)])];
        items.extend(csi_claim("leftover", "ebs"));
        items.extend(csi_claim("new", "ebs"));
        items.push(json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": "va"},
            "spec": {"attacher": "ebs", "nodeName": "n1", "source": {"persistentVolumeName": "pv-leftover"}}}));
        let v = run(
            items,
            with_volumes(pod("default/p", None, "1m", 0, json!({})), claims(&["new"])),
        );
        assert_eq!(
            v[0],
            Status::unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        );
    }

    /// In-tree EBS volumes count as the CSI driver's wherever the node has a CSINode.
    #[test]
    fn migrated_in_tree_volumes_and_unbound_claims_count() {
        let ebs = |id: &str| json!([{"name": "d", "awsElasticBlockStore": {"volumeID": id}}]);
        let items = vec![
            node("n1", "4", json!({})),
            node("n2", "4", json!({})),
            csi_node("n1", &[("ebs.csi.aws.com", 1)]),
            with_volumes(
                pod("default/a", Some("n1"), "1m", 0, json!({})),
                ebs("vol-1"),
            ),
            with_volumes(
                pod("default/b", Some("n2"), "1m", 0, json!({})),
                ebs("vol-1"),
            ),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": "gp2"}, "provisioner": "kubernetes.io/aws-ebs"}),
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "fresh", "namespace": "default"},
                "spec": {"storageClassName": "gp2"}}),
        ];
        let v = run(
            items.clone(),
            with_volumes(
                pod("default/p", None, "1m", 0, json!({})),
                claims(&["fresh"]),
            ),
        );
        assert_eq!(
            v[0],
            Status::unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        );
        // No CSINode on n2: nothing is migrated there, so no limit applies.
        assert!(v[1].is_success());
        // The same in-tree volume again is already attached.
        let v = run(
            items,
            with_volumes(
                pod("default/p", None, "1m", 0, json!({})),
                ebs("aws://us-east-1a/vol-1"),
            ),
        );
        assert!(v[0].is_success());
    }

    /// Inline GCE PD and Cinder volumes of the pods on the node count as their CSI drivers'
    /// through translation, each disk once; a pod with only its ServiceAccount volume skips.
    #[test]
    fn inline_in_tree_volumes_count_through_translation() {
        let sa = json!({"name": "kube-api-access-x", "projected": {"sources": []}});
        let pd = |name: &str| json!({"name": "d", "gcePersistentDisk": {"pdName": name}});
        let cinder = |id: &str| json!({"name": "c", "cinder": {"volumeID": id}});
        let items = vec![
            node("n1", "4", json!({})),
            csi_node(
                "n1",
                &[
                    ("pd.csi.storage.gke.io", 2),
                    ("cinder.csi.openstack.org", 1),
                ],
            ),
            with_volumes(
                pod("default/a", Some("n1"), "1m", 0, json!({})),
                json!([sa, pd("one"), cinder("c-1")]),
            ),
            with_volumes(
                pod("default/b", Some("n1"), "1m", 0, json!({})),
                json!([sa, pd("two"), cinder("c-1")]),
            ),
        ];
        let new = |volume: Value| {
            with_volumes(
                pod("default/p", None, "1m", 0, json!({})),
                json!([sa, volume]),
            )
        };
        let exceeded = Status::unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED);
        assert_eq!(run(items.clone(), new(pd("three")))[0], exceeded);
        assert!(run(items.clone(), new(pd("one")))[0].is_success());
        assert_eq!(run(items.clone(), new(cinder("c-2")))[0], exceeded);
        assert!(run(items.clone(), new(cinder("c-1")))[0].is_success());
        let snapshot = Snapshot::new(cluster(items), None);
        let p = convert_pod(
            serde_json::from_value(with_volumes(
                pod("default/p", None, "1m", 0, json!({})),
                json!([sa]),
            ))
            .unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod();
        let cx = Cx::new(&p, &snapshot);
        assert!(
            v134()
                .pre_filter(&cx, &mut CycleState::default())
                .0
                .is_skip()
        );
    }

    #[test]
    fn missing_claim_and_foreign_ephemeral_claim() {
        let mut items = vec![node("n1", "4", json!({})), csi_node("n1", &[("ebs", 1)])];
        items.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "p-scratch", "namespace": "default",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "other",
                    "uid": "other-uid", "controller": true}]},
            "spec": {"storageClassName": "x"}}));
        let v = run(
            items.clone(),
            with_volumes(
                pod("default/p", None, "1m", 0, json!({})),
                claims(&["nope"]),
            ),
        );
        assert_eq!(
            v[0],
            Status::unresolvable(
                "looking up PVC default/nope: persistentvolumeclaim \"nope\" not found"
            )
        );
        let eph = json!([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]);
        let v = run(
            items,
            with_volumes(pod("default/p", None, "1m", 0, json!({})), eph),
        );
        assert_eq!(
            v[0],
            Status::error(
                "PVC default/p-scratch was not created for pod default/p (pod is not owner)"
            )
        );
    }
}
