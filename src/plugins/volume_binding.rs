//! VolumeBinding (PreFilter, Filter, PreScore, Score, Reserve, PreBind): every claim of the pod
//! must be bound, or bindable on the node: bound PVs' node affinity must match it, and each
//! unbound claim whose class waits for the first consumer needs an available PV the node can
//! reach or a provisioner whose allowed topologies (and tracked capacity) include the node.
//! With StorageCapacityScoring (on by default from 1.37) it also scores: nodes where the pod's
//! volumes leave more of their storage class's capacity free score higher.

use super::csi_translation::{self, InTree};
use super::helper::{ShapePoint, broken_linear};
use super::storage::{
    ANN_BIND_COMPLETED, ANN_SELECTED_NODE, NOT_SUPPORTED_PROVISIONER, TopologyTerms,
    access_modes_match, annotation, claim_class, claim_key, claim_request, claim_volume_name,
    ephemeral_claim_is_for_pod, ephemeral_claim_name, migrated_on_node, name,
    node_affinity_matches, parse_volume_node_affinity, pvc_not_found, volume_bound_to_claim,
    volume_capacity, volume_class, volume_mode_mismatch,
};
use crate::framework::MAX_NODE_SCORE;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes, Reuse};
use crate::framework::status::{Code, Status};
use crate::model::cluster::Cluster;
use crate::model::intern::{Interner, Str};
use crate::model::labels::{Labels, Operator, Selector, check_requirement};
use crate::model::node_info::NodeInfo;
use crate::model::node_selector::NodeSelector;
use crate::model::pod::Pod;
use crate::model::quantity::Quantity;
use k8s_openapi::api::core::v1 as k8s;
use std::collections::HashMap;
use std::sync::Arc;

pub const NAME: &str = "VolumeBinding";
pub const ERR_REASON_BIND_CONFLICT: &str =
    "node(s) didn't find available persistent volumes to bind";
pub const ERR_REASON_NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
pub const ERR_REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
pub const ERR_REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
pub const ERR_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// What PreFilter learnt about the pod's claims (`PodVolumeClaims`), prepared for every node.
#[derive(Clone, Debug)]
pub struct PreFilterState(Arc<Claims>);

#[derive(Debug)]
struct Claims {
    bound: Vec<BoundClaim>,
    /// Unbound claims of classes that wait for the first consumer, in the pod's volume order.
    delayed: Vec<DelayedClaim>,
    /// The PVs some delayed claim could bind to.
    volumes: Vec<Volume>,
}

#[derive(Debug)]
struct BoundClaim {
    /// `None`: the PV the claim names does not exist.
    volume: Option<BoundVolume>,
}

#[derive(Debug)]
struct BoundVolume {
    affinity: Option<NodeSelector>,
    /// An in-tree PV of a plugin the scheduler migrates: read as its CSI translation on nodes
    /// whose CSINode lists the plugin as migrated (`tryTranslatePVToCSI`).
    migrated: Option<(&'static InTree, Result<Option<NodeSelector>, String>)>,
}

#[derive(Debug)]
struct Volume {
    pv: Arc<k8s::PersistentVolume>,
    size: Quantity,
    reach: Reach,
}

/// Which nodes a PV's node affinity lets use it (`CheckNodeAffinity`).
#[derive(Debug)]
enum Reach {
    Everywhere,
    /// A single `key In values`, the way local PVs name their host and zonal ones their zone.
    Label(Str, Vec<Str>),
    Selector(NodeSelector),
}

impl Reach {
    fn new(affinity: Option<&k8s::VolumeNodeAffinity>, strings: &Interner) -> Reach {
        if let Some((key, values)) = single_label_reach(affinity, strings) {
            return Reach::Label(key, values);
        }
        match parse_volume_node_affinity(affinity, strings) {
            None => Reach::Everywhere,
            Some(s) => Reach::Selector(s),
        }
    }

    fn matches(&self, labels: &Labels) -> bool {
        match self {
            Reach::Everywhere => true,
            Reach::Label(key, values) => labels.get(*key).is_some_and(|v| values.contains(&v)),
            Reach::Selector(s) => node_affinity_matches(Some(s), labels),
        }
    }
}

impl Volume {
    fn new(pv: &Arc<k8s::PersistentVolume>, strings: &Interner) -> Volume {
        let affinity = pv.spec.as_ref().and_then(|s| s.node_affinity.as_ref());
        Volume {
            pv: pv.clone(),
            size: volume_capacity(pv),
            reach: Reach::new(affinity, strings),
        }
    }
}

/// The `key In values` a PV's node affinity amounts to, when it is exactly one such requirement
/// (local PVs name their host this way, zonal ones their zone).
fn single_label_reach(
    affinity: Option<&k8s::VolumeNodeAffinity>,
    strings: &Interner,
) -> Option<(Str, Vec<Str>)> {
    let [term] = affinity?.required.as_ref()?.node_selector_terms.as_slice() else {
        return None;
    };
    if term.match_fields.as_ref().is_some_and(|f| !f.is_empty()) {
        return None;
    }
    let [req] = term.match_expressions.as_deref()? else {
        return None;
    };
    let values = req.values.as_deref()?;
    if req.operator != "In" || check_requirement(&req.key, Operator::In, values).is_err() {
        return None;
    }
    Some((
        strings.intern(&req.key),
        values.iter().map(|v| strings.intern(v)).collect(),
    ))
}

/// The PVs worth checking for a claim on any node, in the order they are tried, with those a
/// single label value reaches indexed by it so a node only looks at the ones it can reach.
#[derive(Debug)]
struct Matching {
    candidates: Vec<Candidate>,
    /// Positions in `candidates`, by the (key, value) that reaches them.
    by_label: HashMap<(Str, Str), Vec<usize>>,
    keys: Vec<Str>,
    /// Positions of the candidates every node must look at.
    others: Vec<usize>,
}

impl Matching {
    fn new(candidates: Vec<Candidate>, volumes: &[Volume]) -> Matching {
        let mut by_label: HashMap<(Str, Str), Vec<usize>> = HashMap::new();
        let mut keys = Vec::new();
        let mut others = Vec::new();
        for (pos, c) in candidates.iter().enumerate() {
            // A PV reserved for the claim decides even where it does not match, so it is always
            // looked at.
            match &volumes[c.volume].reach {
                Reach::Label(key, values) if !c.bound_to_claim => {
                    if !keys.contains(key) {
                        keys.push(*key);
                    }
                    for &v in values {
                        by_label.entry((*key, v)).or_default().push(pos);
                    }
                }
                _ => others.push(pos),
            }
        }
        Matching {
            candidates,
            by_label,
            keys,
            others,
        }
    }

    /// The candidates a node with these labels may match, in order.
    fn for_node(&self, labels: &Labels) -> impl Iterator<Item = &Candidate> {
        let mut positions = self.others.clone();
        for &key in &self.keys {
            if let Some(p) = labels.get(key).and_then(|v| self.by_label.get(&(key, v))) {
                positions.extend_from_slice(p);
            }
        }
        positions.sort_unstable();
        positions.into_iter().map(|p| &self.candidates[p])
    }
}

/// A PV `FindMatchingVolume` would consider for a claim, whatever the node.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    volume: usize,
    /// The PV is already reserved for this claim: taken if the node matches, else nothing is.
    bound_to_claim: bool,
}

#[derive(Debug)]
struct DelayedClaim {
    key: String,
    size: Quantity,
    /// `volume.kubernetes.io/selected-node`: provisioning was already started for that node.
    selected_node: Option<String>,
    /// The candidate PVs, or the error matching them gives.
    matching: Result<Matching, String>,
    provision: Result<Provision, String>,
}

#[derive(Debug)]
enum Provision {
    /// The class has no provisioner (or `kubernetes.io/no-provisioner`).
    Unsupported,
    Dynamic {
        class: String,
        provisioner: String,
        topology: TopologyTerms,
        capacity: Capacity,
    },
}

#[derive(Debug)]
enum Capacity {
    Unchecked,
    /// The driver tracks capacity: the CSIStorageCapacities big enough, in list order, by their
    /// node topology, with the capacity each reports (what capacity scoring reads).
    Tracked(Vec<(Selector, i64)>),
}

/// What the node would get (`PodVolumes`).
struct PodVolumes<'s> {
    /// Claim (index into `delayed`) and the PV it would bind to.
    static_bindings: Vec<(usize, usize)>,
    /// Claims (index into `delayed`) the provisioner would create a PV for, with the capacity
    /// of the CSIStorageCapacity that made room for it, when the driver tracks capacity.
    dynamic_provisions: Vec<(usize, Option<i64>)>,
    reasons: Vec<&'static str>,
    claims: &'s Claims,
}

fn ephemeral_missing(name: &str) -> String {
    format!("waiting for ephemeral volume controller to create the persistentvolumeclaim {name:?}")
}

/// The claim a volume uses (`persistentVolumeClaim` or generic ephemeral), with whether it is
/// ephemeral; `None` for other volumes.
fn volume_claim(pod: &Pod, v: &k8s::Volume) -> Option<(String, bool)> {
    if let Some(c) = &v.persistent_volume_claim {
        Some((c.claim_name.clone(), false))
    } else if v.ephemeral.is_some() {
        Some((ephemeral_claim_name(&pod.name, v), true))
    } else {
        None
    }
}

fn lookup_claim<'a>(
    cluster: &'a Cluster,
    pod: &Pod,
    name: &str,
) -> Option<&'a Arc<k8s::PersistentVolumeClaim>> {
    cluster
        .strings
        .get(name)
        .and_then(|n| cluster.pvcs.get(&(pod.namespace, n)))
}

/// `podHasPVCs`: the pod's claims, each checked to exist, not be lost or deleted, and (for an
/// ephemeral volume) belong to the pod.
fn pod_claims(cx: &Cx) -> Result<Vec<Arc<k8s::PersistentVolumeClaim>>, Status> {
    let pod = cx.pod;
    let mut claims = Vec::new();
    for v in &pod.volumes {
        let Some((claim_name, ephemeral)) = volume_claim(pod, v) else {
            continue;
        };
        let Some(pvc) = lookup_claim(&cx.snapshot.cluster, pod, &claim_name) else {
            return Err(Status::unresolvable(if ephemeral {
                ephemeral_missing(&claim_name)
            } else {
                pvc_not_found(&claim_name)
            }));
        };
        let pvc_name = name(&pvc.metadata);
        if pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Lost") {
            return Err(Status::unresolvable(format!(
                "persistentvolumeclaim {pvc_name:?} bound to non-existent persistentvolume {:?}",
                claim_volume_name(pvc)
            )));
        }
        if pvc.metadata.deletion_timestamp.is_some() {
            return Err(Status::unresolvable(format!(
                "persistentvolumeclaim {pvc_name:?} is being deleted"
            )));
        }
        if ephemeral {
            ephemeral_claim_is_for_pod(pod, pvc).map_err(Status::unresolvable)?;
        }
        claims.push(pvc.clone());
    }
    Ok(claims)
}

/// `IsDelayBindingMode`.
fn delay_binding(cluster: &Cluster, pvc: &k8s::PersistentVolumeClaim) -> Result<bool, String> {
    let class_name = claim_class(pvc);
    if class_name.is_empty() {
        return Ok(false);
    }
    let Some(class) = cluster
        .strings
        .get(class_name)
        .and_then(|n| cluster.storage_classes.get(&n))
    else {
        return Ok(false);
    };
    match class.volume_binding_mode.as_deref() {
        None => Err(format!(
            "VolumeBindingMode not set for StorageClass {class_name:?}"
        )),
        Some(mode) => Ok(mode == "WaitForFirstConsumer"),
    }
}

fn bound_volume(cluster: &Cluster, pvc: &k8s::PersistentVolumeClaim) -> Option<BoundVolume> {
    let pv = cluster
        .strings
        .get(claim_volume_name(pvc))
        .and_then(|n| cluster.pvs.get(&n))?;
    let spec = pv.spec.as_ref();
    let migrated = csi_translation::pv_plugin(pv)
        .filter(|p| p.migrated)
        .map(|p| {
            let translated = csi_translation::translate_pv(pv)
                .map(|t| parse_volume_node_affinity(t.node_affinity.as_ref(), &cluster.strings))
                .map_err(|e| format!("could not translate pv: {e}"));
            (p, translated)
        });
    Some(BoundVolume {
        affinity: parse_volume_node_affinity(
            spec.and_then(|s| s.node_affinity.as_ref()),
            &cluster.strings,
        ),
        migrated,
    })
}

/// The node-independent part of `FindMatchingVolume`: the PVs of the claim's class worth
/// checking against a node, each with whether it is reserved for the claim.
fn candidates<'a>(
    pvc: &k8s::PersistentVolumeClaim,
    size: Quantity,
    class_pvs: &[&'a Arc<k8s::PersistentVolume>],
    strings: &Interner,
) -> Result<Vec<(&'a Arc<k8s::PersistentVolume>, bool)>, String> {
    let spec = pvc.spec.as_ref();
    let selector = match spec.and_then(|s| s.selector.as_ref()) {
        None => None,
        Some(sel) => Some(
            Selector::from_label_selector(Some(sel), strings).map_err(|e| {
                format!(
                    "error creating internal label selector for claim: {}: {e}",
                    claim_key(pvc)
                )
            })?,
        ),
    };
    let claim_vac = spec
        .and_then(|s| s.volume_attributes_class_name.as_deref())
        .unwrap_or("");
    let mut out = Vec::new();
    for &pv in class_pvs {
        let pv_spec = pv.spec.as_ref();
        let bound_to_claim = volume_bound_to_claim(pv, pvc);
        if pv_spec.is_some_and(|s| s.claim_ref.is_some()) && !bound_to_claim {
            continue;
        }
        let vac = pv_spec
            .and_then(|s| s.volume_attributes_class_name.as_deref())
            .unwrap_or("");
        if volume_capacity(pv) < size
            || volume_mode_mismatch(pvc, pv)
            || vac != claim_vac
            || pv.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        if !bound_to_claim {
            let available =
                pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available");
            let selected = || {
                let labels = pv
                    .metadata
                    .labels
                    .as_ref()
                    .map(|l| Labels::from_map(l, strings));
                selector
                    .as_ref()
                    .is_none_or(|s| s.matches(&labels.unwrap_or_default()))
            };
            if !available || !access_modes_match(pvc, pv) || !selected() {
                continue;
            }
        }
        out.push((pv, bound_to_claim));
    }
    // Upstream lists a class's PVs in no particular order; by name here, so runs repeat.
    out.sort_by(|a, b| name(&a.0.metadata).cmp(name(&b.0.metadata)));
    Ok(out)
}

/// The provisioning part of `checkVolumeProvisions` that does not depend on the node.
fn provision(cluster: &Cluster, pvc: &k8s::PersistentVolumeClaim) -> Result<Provision, String> {
    let class_name = claim_class(pvc);
    if class_name.is_empty() {
        return Err(format!("no class for claim {:?}", claim_key(pvc)));
    }
    let class = cluster
        .strings
        .get(class_name)
        .and_then(|n| cluster.storage_classes.get(&n))
        .ok_or_else(|| format!("failed to find storage class {class_name:?}"))?;
    let provisioner = class.provisioner.as_str();
    if provisioner.is_empty() || provisioner == NOT_SUPPORTED_PROVISIONER {
        return Ok(Provision::Unsupported);
    }
    Ok(Provision::Dynamic {
        class: class_name.to_string(),
        provisioner: provisioner.to_string(),
        topology: TopologyTerms::parse(class.allowed_topologies.as_deref(), &cluster.strings),
        capacity: capacity(cluster, pvc, class_name, provisioner),
    })
}

/// `hasEnoughCapacity`, but for the node's labels: only drivers that opt into storage capacity
/// tracking are checked, and only for claims that request a size.
fn capacity(
    cluster: &Cluster,
    pvc: &k8s::PersistentVolumeClaim,
    class: &str,
    provisioner: &str,
) -> Capacity {
    let requested = pvc
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .is_some_and(|r| r.contains_key("storage"));
    let tracked = cluster
        .strings
        .get(provisioner)
        .and_then(|n| cluster.csi_drivers.get(&n))
        .is_some_and(|d| d.spec.storage_capacity == Some(true));
    if !requested || !tracked {
        return Capacity::Unchecked;
    }
    let size = claim_request(pvc).value();
    let accessible = cluster
        .csi_storage_capacities
        .iter()
        .filter(|c| c.storage_class_name == class)
        .filter(|c| {
            c.maximum_volume_size
                .as_ref()
                .or(c.capacity.as_ref())
                .and_then(|q| Quantity::parse(&q.0).ok())
                .is_some_and(|q| q.value() >= size)
        })
        .filter_map(|c| {
            let topology =
                Selector::from_label_selector(Some(c.node_topology.as_ref()?), &cluster.strings)
                    .ok()?;
            // A capacity that reports only a maximum volume size offers nothing to score by.
            let reported = c
                .capacity
                .as_ref()
                .and_then(|q| Quantity::parse(&q.0).ok())
                .map_or(0, |q| q.value());
            Some((topology, reported))
        })
        .collect();
    Capacity::Tracked(accessible)
}

impl Claims {
    /// `GetPodVolumeClaims` and what each node check needs of them.
    fn new(cx: &Cx, pvcs: Vec<Arc<k8s::PersistentVolumeClaim>>) -> Result<Claims, Status> {
        let cluster = &*cx.snapshot.cluster;
        let mut bound = Vec::new();
        let mut delayed_pvcs = Vec::new();
        let mut immediate = false;
        for pvc in pvcs {
            let volume_name = claim_volume_name(&pvc);
            if !volume_name.is_empty() && annotation(&pvc.metadata, ANN_BIND_COMPLETED).is_some() {
                bound.push(BoundClaim {
                    volume: bound_volume(cluster, &pvc),
                });
            } else if delay_binding(cluster, &pvc).map_err(Status::error)? && volume_name.is_empty()
            {
                delayed_pvcs.push(pvc);
            } else {
                immediate = true;
            }
        }
        if immediate {
            return Err(Status::unresolvable(ERR_UNBOUND_IMMEDIATE));
        }
        let mut classes: Vec<&str> = delayed_pvcs.iter().map(|p| claim_class(p)).collect();
        classes.sort_unstable();
        classes.dedup();
        let class_pvs: Vec<&Arc<k8s::PersistentVolume>> = if classes.is_empty() {
            Vec::new()
        } else {
            cluster
                .pvs
                .values()
                .filter(|pv| classes.binary_search(&volume_class(pv)).is_ok())
                .collect()
        };
        // Only the PVs some claim could take are parsed, each once.
        let mut volumes: Vec<Volume> = Vec::new();
        let mut volume_index: HashMap<*const k8s::PersistentVolume, usize> = HashMap::new();
        let mut delayed = Vec::with_capacity(delayed_pvcs.len());
        for pvc in delayed_pvcs {
            let size = claim_request(&pvc);
            let class = claim_class(&pvc);
            let of_class: Vec<&Arc<k8s::PersistentVolume>> = class_pvs
                .iter()
                .copied()
                .filter(|pv| volume_class(pv) == class)
                .collect();
            let matching = candidates(&pvc, size, &of_class, &cluster.strings).map(|found| {
                let candidates = found
                    .into_iter()
                    .map(|(pv, bound_to_claim)| Candidate {
                        volume: *volume_index.entry(Arc::as_ptr(pv)).or_insert_with(|| {
                            volumes.push(Volume::new(pv, &cluster.strings));
                            volumes.len() - 1
                        }),
                        bound_to_claim,
                    })
                    .collect();
                Matching::new(candidates, &volumes)
            });
            delayed.push(DelayedClaim {
                key: claim_key(&pvc),
                size,
                selected_node: annotation(&pvc.metadata, ANN_SELECTED_NODE).map(str::to_string),
                matching,
                provision: provision(cluster, &pvc),
            });
        }
        Ok(Claims {
            bound,
            delayed,
            volumes,
        })
    }

    /// `checkBoundClaims`: (node affinity satisfied, every PV found).
    fn check_bound(&self, cluster: &Cluster, node: &NodeInfo) -> Result<(bool, bool), String> {
        let csi_node = cluster.csi_nodes.get(&node.name()).map(|n| &**n);
        for claim in &self.bound {
            let Some(v) = &claim.volume else {
                return Ok((true, false));
            };
            let affinity = match &v.migrated {
                Some((p, translated)) if migrated_on_node(csi_node, p.plugin) => {
                    translated.as_ref().map_err(String::clone)?
                }
                _ => &v.affinity,
            };
            if !node_affinity_matches(affinity.as_ref(), &node.node.labels) {
                return Ok((false, true));
            }
        }
        Ok((true, true))
    }

    /// `FindMatchingVolume` on a node: the claim's PV, or the smallest that fits; `None` also
    /// when the PV reserved for the claim is out of the node's reach.
    fn find_matching(&self, m: &Matching, chosen: &[usize], labels: &Labels) -> Option<usize> {
        let mut smallest: Option<usize> = None;
        for c in m.for_node(labels) {
            if chosen.contains(&c.volume) {
                continue;
            }
            let v = &self.volumes[c.volume];
            let reachable = v.reach.matches(labels);
            if c.bound_to_claim {
                return reachable.then_some(c.volume);
            }
            if reachable && smallest.is_none_or(|s| self.volumes[s].size > v.size) {
                smallest = Some(c.volume);
            }
        }
        smallest
    }

    /// `FindPodVolumes`: what the node would get, with the reasons it cannot.
    fn find_pod_volumes(
        &self,
        cluster: &Cluster,
        node: &NodeInfo,
    ) -> Result<PodVolumes<'_>, String> {
        let mut out = PodVolumes {
            static_bindings: Vec::new(),
            dynamic_provisions: Vec::new(),
            reasons: Vec::new(),
            claims: self,
        };
        let (bound_satisfied, bound_found) = if self.bound.is_empty() {
            (true, true)
        } else {
            self.check_bound(cluster, node)?
        };
        let (unbound_satisfied, storage_sufficient) = self.check_delayed(node, &mut out)?;
        for (failed, reason) in [
            (!bound_satisfied, ERR_REASON_NODE_CONFLICT),
            (!unbound_satisfied, ERR_REASON_BIND_CONFLICT),
            (!storage_sufficient, ERR_REASON_NOT_ENOUGH_SPACE),
            (!bound_found, ERR_REASON_PV_NOT_EXIST),
        ] {
            if failed {
                out.reasons.push(reason);
            }
        }
        Ok(out)
    }

    /// The unbound part of `FindPodVolumes`: (claims satisfied, storage sufficient).
    fn check_delayed(&self, node: &NodeInfo, out: &mut PodVolumes) -> Result<(bool, bool), String> {
        if self.delayed.is_empty() {
            return Ok((true, true));
        }
        let mut to_match: Vec<usize> = Vec::new();
        let mut to_provision: Vec<usize> = Vec::new();
        for (i, c) in self.delayed.iter().enumerate() {
            match &c.selected_node {
                Some(n) if n.as_str() != node.name().as_str() => return Ok((false, true)),
                Some(_) => to_provision.push(i),
                None => to_match.push(i),
            }
        }
        let labels = &node.node.labels;
        let mut satisfied = true;
        if !to_match.is_empty() {
            // Smallest request first, so each claim gets the smallest PV that fits.
            to_match.sort_by_key(|&i| self.delayed[i].size);
            let mut chosen: Vec<usize> = Vec::new();
            for i in to_match {
                let candidates = self.delayed[i].matching.as_ref().map_err(String::clone)?;
                match self.find_matching(candidates, &chosen, labels) {
                    Some(v) => {
                        chosen.push(v);
                        out.static_bindings.push((i, v));
                    }
                    None => {
                        to_provision.push(i);
                        satisfied = false;
                    }
                }
            }
        }
        if to_provision.is_empty() {
            return Ok((satisfied, true));
        }
        // `checkVolumeProvisions`: the first claim that cannot be provisioned decides.
        for i in to_provision {
            match self.delayed[i].provision.as_ref().map_err(String::clone)? {
                Provision::Unsupported => return Ok((false, true)),
                Provision::Dynamic {
                    topology, capacity, ..
                } => {
                    if !topology.matches(labels) {
                        return Ok((false, true));
                    }
                    let node_capacity = match capacity {
                        Capacity::Unchecked => None,
                        Capacity::Tracked(accessible) => {
                            match accessible.iter().find(|(s, _)| s.matches(labels)) {
                                Some(&(_, reported)) => Some(reported),
                                None => {
                                    out.dynamic_provisions.clear();
                                    return Ok((true, false));
                                }
                            }
                        }
                    };
                    out.dynamic_provisions.push((i, node_capacity));
                }
            }
        }
        Ok((true, true))
    }
}

impl PodVolumes<'_> {
    /// Per storage class, the storage the pod's volumes would take on the node and what the
    /// class holds there (`classResourceMap`): the static bindings' PVs if there are any, else
    /// the provisions on capacity-tracking drivers.
    fn class_usage(&self) -> HashMap<&str, (i64, i64)> {
        let claims = self.claims;
        let mut usage: HashMap<&str, (i64, i64)> = HashMap::new();
        if !self.static_bindings.is_empty() {
            for &(i, v) in &self.static_bindings {
                let volume = &claims.volumes[v];
                let class = volume
                    .pv
                    .spec
                    .as_ref()
                    .and_then(|s| s.storage_class_name.as_deref())
                    .unwrap_or("");
                let entry = usage.entry(class).or_default();
                entry.0 += claims.delayed[i].size.value();
                entry.1 += volume.size.value();
            }
            return usage;
        }
        for &(i, capacity) in &self.dynamic_provisions {
            let c = &claims.delayed[i];
            if let (Some(capacity), Ok(Provision::Dynamic { class, .. })) = (capacity, &c.provision)
            {
                let entry = usage.entry(class.as_str()).or_default();
                entry.0 += c.size.value();
                // Several claims of one class share the capacity: it is not added up.
                entry.1 = capacity;
            }
        }
        usage
    }

    /// In words, for the explanation.
    fn describe(&self, node: &NodeInfo) -> Vec<String> {
        let claims = self.claims;
        let mut out = Vec::new();
        let mut chosen: Vec<usize> = Vec::new();
        for &(i, v) in &self.static_bindings {
            let c = &claims.delayed[i];
            let pv = &claims.volumes[v];
            let capacity = pv
                .pv
                .spec
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .and_then(|c| c.get("storage"))
                .map(|q| format!(" ({})", q.0))
                .unwrap_or_default();
            let mut line = format!(
                "PersistentVolumeClaim {} would bind to PersistentVolume {}{capacity}",
                c.key,
                name(&pv.pv.metadata)
            );
            // The real scheduler takes whichever equally small PV it happens to list first.
            let ties: Vec<&str> = c
                .matching
                .iter()
                .flat_map(|m| m.candidates.iter())
                .filter(|cand| !cand.bound_to_claim && !chosen.contains(&cand.volume))
                .map(|cand| &claims.volumes[cand.volume])
                .filter(|o| o.size == pv.size && o.reach.matches(&node.node.labels))
                .map(|o| name(&o.pv.metadata))
                .collect();
            if ties.len() > 1 {
                line.push_str(&format!(
                    " (equally small here: {}; kube-scheduler may take any of them)",
                    ties.join(", ")
                ));
            }
            chosen.push(v);
            out.push(line);
        }
        for &(i, _) in &self.dynamic_provisions {
            let c = &claims.delayed[i];
            if let Ok(Provision::Dynamic {
                class, provisioner, ..
            }) = &c.provision
            {
                let already = if c.selected_node.is_some() {
                    " (provisioning already started for this node)"
                } else {
                    ""
                };
                out.push(format!(
                    "PersistentVolumeClaim {} would be provisioned by StorageClass {class} (provisioner {provisioner}) for node {}{already}",
                    c.key,
                    node.name()
                ));
            }
        }
        out
    }
}

/// `VolumeBindingArgs`, as far as scoring reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// Score by utilisation of each class's capacity, in node-score units.
    pub shape: Vec<ShapePoint>,
}

impl Default for Args {
    /// The v1 default: the emptier the better.
    fn default() -> Self {
        Args {
            shape: vec![
                ShapePoint {
                    utilization: 0,
                    score: MAX_NODE_SCORE,
                },
                ShapePoint {
                    utilization: 100,
                    score: 0,
                },
            ],
        }
    }
}

/// `buildScorerFunction`: each class scored by its utilisation, the node by their rounded mean.
fn capacity_score(shape: &[ShapePoint], usage: &HashMap<&str, (i64, i64)>) -> i64 {
    if usage.is_empty() {
        return 0;
    }
    let sum: i64 = usage
        .values()
        .map(|&(requested, capacity)| {
            let utilization = if capacity == 0 || requested > capacity {
                100
            } else {
                requested * 100 / capacity
            };
            broken_linear(shape, utilization)
        })
        .sum();
    (sum as f64 / usage.len() as f64).round() as i64
}

pub struct VolumeBinding {
    /// The capacity scorer's shape, when StorageCapacityScoring is on.
    pub scorer: Option<Vec<ShapePoint>>,
    pre_filter: StateKey<PreFilterState>,
}

impl VolumeBinding {
    pub fn new(slots: &mut StateSlots, scorer: Option<Vec<ShapePoint>>) -> VolumeBinding {
        VolumeBinding {
            scorer,
            pre_filter: slots.register("PreFilterVolumeBinding"),
        }
    }
}

impl Plugin for VolumeBinding {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER
            | Points::FILTER
            | Points::PRE_SCORE
            | Points::SCORE
            | Points::RESERVE
            | Points::PRE_BIND
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        let pvcs = match pod_claims(cx) {
            Ok(p) => p,
            Err(s) => return (s, None),
        };
        if pvcs.is_empty() {
            return (Status::skip(), None);
        }
        match Claims::new(cx, pvcs) {
            Ok(claims) => {
                state.write(self.pre_filter, PreFilterState(Arc::new(claims)));
                (Status::success(), None)
            }
            Err(s) => (s, None),
        }
    }

    fn filter(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        let Some(PreFilterState(claims)) = state.read(self.pre_filter) else {
            return Status::error("not found");
        };
        match claims.find_pod_volumes(&cx.snapshot.cluster, node) {
            Err(e) => Status::error(e),
            Ok(v) if v.reasons.is_empty() => Status::success(),
            Ok(v) => Status::with_reasons(
                Code::UnschedulableAndUnresolvable,
                v.reasons.iter().map(|r| r.to_string()).collect(),
            ),
        }
    }

    /// Without StorageCapacityScoring there is no scorer; with it every pod is scored, 0 where
    /// it has no volume to bind or provision.
    fn pre_score(&self, _cx: &Cx, _state: &mut CycleState, _nodes: &[&NodeInfo]) -> Status {
        if self.scorer.is_some() {
            Status::success()
        } else {
            Status::skip()
        }
    }

    fn score(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        let (Some(shape), Some(PreFilterState(claims))) =
            (&self.scorer, state.read(self.pre_filter))
        else {
            return Ok(0);
        };
        match claims.find_pod_volumes(&cx.snapshot.cluster, node) {
            Ok(v) if v.reasons.is_empty() => Ok(capacity_score(shape, &v.class_usage())),
            _ => Ok(0),
        }
    }

    fn pre_bind(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Vec<String> {
        let Some(PreFilterState(claims)) = state.read(self.pre_filter) else {
            return Vec::new();
        };
        match claims.find_pod_volumes(&cx.snapshot.cluster, node) {
            Ok(v) if v.reasons.is_empty() => v.describe(node),
            _ => Vec::new(),
        }
    }

    /// Depends on the pod, the node and the cluster's volume objects, which placing a replica
    /// does not change here.
    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }

    fn replicas_interact(&self, cx: &Cx) -> bool {
        super::storage::replicas_share_claims(cx.pod)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::snapshot::Snapshot;
    use crate::model::cluster::convert_pod;
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    use crate::testing::{cluster, node, pod};
    use serde_json::{Value, json};

    fn app(claims: &[&str]) -> Pod {
        let mut p = pod("default/app", None, "100m", 0, json!({}));
        p["spec"]["volumes"] = Value::Array(
            claims
                .iter()
                .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
                .collect(),
        );
        convert_pod(
            serde_json::from_value(p).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod()
    }

    fn class(name: &str, provisioner: &str, extra: Value) -> Value {
        let mut c = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name}, "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer"});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                c[k] = v;
            }
        }
        c
    }

    fn unbound(name: &str, class: &str, size: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": size}}}})
    }

    fn bound(name: &str, pv: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default",
                "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"volumeName": pv}})
    }

    /// An available local PV of `class` reachable from `host` only.
    fn local_pv(name: &str, class: &str, size: &str, host: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"storageClassName": class, "capacity": {"storage": size},
                "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}},
            "status": {"phase": "Available"}})
    }

    struct Run {
        pre: Status,
        filters: Vec<Status>,
        binding: Vec<Vec<String>>,
    }

    fn unscored() -> VolumeBinding {
        VolumeBinding::new(&mut StateSlots::default(), None)
    }

    fn run(items: Vec<Value>, p: Pod) -> Run {
        let snapshot = Snapshot::new(cluster(items), None);
        let cx = Cx {
            pod: &p,
            snapshot: &snapshot,
        };
        let mut state = CycleState::default();
        let (pre, _) = unscored().pre_filter(&cx, &mut state);
        let filters = snapshot
            .nodes
            .iter()
            .map(|n| unscored().filter(&cx, &state, n))
            .collect();
        let binding = snapshot
            .nodes
            .iter()
            .map(|n| unscored().pre_bind(&cx, &state, n))
            .collect();
        Run {
            pre,
            filters,
            binding,
        }
    }

    fn rejected(reasons: &[&str]) -> Status {
        Status::with_reasons(
            Code::UnschedulableAndUnresolvable,
            reasons.iter().map(|r| r.to_string()).collect(),
        )
    }

    #[test]
    fn bound_pv_node_affinity_and_missing_pv() {
        let mut pv = local_pv("pv-1", "", "1Gi", "n1");
        pv["status"]["phase"] = json!("Bound");
        let items = vec![
            node("n1", "4", json!({})),
            node("n2", "4", json!({})),
            pv,
            bound("data", "pv-1"),
            bound("orphan", "pv-gone"),
        ];
        let r = run(items.clone(), app(&["data"]));
        assert!(r.pre.is_success());
        assert!(r.filters[0].is_success());
        assert_eq!(r.filters[1], rejected(&[ERR_REASON_NODE_CONFLICT]));
        // Nothing to bind: the claims are bound already.
        assert!(r.binding[0].is_empty());
        let r = run(items, app(&["orphan"]));
        assert_eq!(r.filters[0], rejected(&[ERR_REASON_PV_NOT_EXIST]));
    }

    #[test]
    fn wffc_without_matching_pv_or_provisioner() {
        let items = vec![
            node("n1", "4", json!({})),
            node("n2", "4", json!({})),
            class("local", "kubernetes.io/no-provisioner", json!({})),
            local_pv("small", "local", "1Gi", "n1"),
            local_pv("big", "local", "10Gi", "n2"),
            unbound("c", "local", "5Gi"),
        ];
        let r = run(items, app(&["c"]));
        assert!(r.pre.is_success());
        assert_eq!(r.filters[0], rejected(&[ERR_REASON_BIND_CONFLICT]));
        assert!(r.filters[1].is_success());
        assert_eq!(
            r.binding[1],
            ["PersistentVolumeClaim default/c would bind to PersistentVolume big (10Gi)"]
        );
    }

    /// A PV reserved for the claim decides: where it is out of reach, no other PV is taken.
    #[test]
    fn a_pv_reserved_for_the_claim_wins_or_blocks() {
        let mut reserved = local_pv("reserved", "local", "10Gi", "n2");
        reserved["spec"]["claimRef"] = json!({"name": "c", "namespace": "default"});
        let items = vec![
            node("n1", "4", json!({})),
            node("n2", "4", json!({})),
            class("local", "kubernetes.io/no-provisioner", json!({})),
            local_pv("free", "local", "10Gi", "n1"),
            reserved,
            unbound("c", "local", "5Gi"),
        ];
        let r = run(items, app(&["c"]));
        assert_eq!(r.filters[0], rejected(&[ERR_REASON_BIND_CONFLICT]));
        assert_eq!(
            r.binding[1],
            ["PersistentVolumeClaim default/c would bind to PersistentVolume reserved (10Gi)"]
        );
    }

    /// PVs reached through one label and through a general selector are tried together, in
    /// name order, and equally small ones are reported as ties.
    #[test]
    fn label_indexed_and_general_affinities_mix() {
        let mut general = local_pv("a-general", "local", "5Gi", "n1");
        general["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z9"]}]}]}});
        let items = vec![
            node("n1", "4", json!({"zone": "z1"})),
            node("n2", "4", json!({"zone": "z9"})),
            class("local", "kubernetes.io/no-provisioner", json!({})),
            general,
            local_pv("b-host", "local", "5Gi", "n1"),
            local_pv("c-host", "local", "5Gi", "n2"),
            unbound("c", "local", "5Gi"),
        ];
        let r = run(items, app(&["c"]));
        assert_eq!(
            r.binding[0],
            [
                "PersistentVolumeClaim default/c would bind to PersistentVolume a-general (5Gi) (equally small here: a-general, b-host; kube-scheduler may take any of them)"
            ]
        );
        assert_eq!(
            r.binding[1],
            ["PersistentVolumeClaim default/c would bind to PersistentVolume c-host (5Gi)"]
        );
    }

    #[test]
    fn smallest_fitting_pvs_each_claim_its_own() {
        let items = vec![
            node("n1", "4", json!({})),
            class("local", "kubernetes.io/no-provisioner", json!({})),
            local_pv("a-20", "local", "20Gi", "n1"),
            local_pv("b-5", "local", "5Gi", "n1"),
            local_pv("c-8", "local", "8Gi", "n1"),
            unbound("big", "local", "6Gi"),
            unbound("small", "local", "2Gi"),
        ];
        let r = run(items.clone(), app(&["big", "small"]));
        assert!(r.filters[0].is_success());
        // The smaller request is matched first and takes the 5Gi PV; the other gets 8Gi.
        assert_eq!(
            r.binding[0],
            [
                "PersistentVolumeClaim default/small would bind to PersistentVolume b-5 (5Gi)",
                "PersistentVolumeClaim default/big would bind to PersistentVolume c-8 (8Gi)"
            ]
        );
        // The same claim twice needs two PVs.
        let r = run(items, app(&["big", "big"]));
        assert!(r.filters[0].is_success());
        assert_eq!(r.binding[0].len(), 2);
    }

    #[test]
    fn provisioning_follows_allowed_topologies_and_selected_node() {
        let mut items = vec![
            node("n1", "4", json!({"zone": "a"})),
            node("n2", "4", json!({"zone": "b"})),
            class(
                "zonal",
                "csi.example.com",
                json!({"allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}]}),
            ),
            unbound("c", "zonal", "1Gi"),
        ];
        let r = run(items.clone(), app(&["c"]));
        assert_eq!(r.filters[0], rejected(&[ERR_REASON_BIND_CONFLICT]));
        assert!(r.filters[1].is_success());
        assert_eq!(
            r.binding[1],
            [
                "PersistentVolumeClaim default/c would be provisioned by StorageClass zonal (provisioner csi.example.com) for node n2"
            ]
        );
        // Provisioning already started for n1: no other node will do.
        items[3]["metadata"]["annotations"] = json!({"volume.kubernetes.io/selected-node": "n1"});
        let r = run(items, app(&["c"]));
        assert_eq!(r.filters[1], rejected(&[ERR_REASON_BIND_CONFLICT]));
    }

    #[test]
    fn tracked_storage_capacity_limits_provisioning() {
        let items = vec![
            node("n1", "4", json!({"zone": "a"})),
            node("n2", "4", json!({"zone": "b"})),
            class("fast", "csi.example.com", json!({})),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                "metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": true}}),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                "metadata": {"name": "cap-a", "namespace": "kube-system"},
                "storageClassName": "fast", "capacity": "10Gi",
                "nodeTopology": {"matchLabels": {"zone": "a"}}}),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                "metadata": {"name": "cap-b", "namespace": "kube-system"},
                "storageClassName": "fast", "capacity": "1Gi",
                "nodeTopology": {"matchLabels": {"zone": "b"}}}),
            unbound("c", "fast", "5Gi"),
        ];
        let r = run(items, app(&["c"]));
        assert!(r.filters[0].is_success());
        assert_eq!(r.filters[1], rejected(&[ERR_REASON_NOT_ENOUGH_SPACE]));
    }

    /// From 1.37 nodes where the claims leave more of the class's capacity free score higher;
    /// a pod without claims scores 0 everywhere.
    #[test]
    fn capacity_scoring_from_1_37() {
        use crate::release::Release;
        use crate::testing::explain_as;
        let capacity = |name: &str, zone: &str, size: &str| {
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                "metadata": {"name": name, "namespace": "kube-system"},
                "storageClassName": "fast", "capacity": size,
                "nodeTopology": {"matchLabels": {"zone": zone}}})
        };
        let c = cluster(vec![
            node("n1", "4", json!({"zone": "a"})),
            node("n2", "4", json!({"zone": "b"})),
            class("fast", "csi.example.com", json!({})),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                "metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": true}}),
            capacity("cap-a", "a", "100Gi"),
            capacity("cap-b", "b", "20Gi"),
            unbound("c", "fast", "10Gi"),
        ]);
        let mut p = pod("default/app", None, "100m", 0, json!({}));
        p["spec"]["volumes"] = json!([{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]);
        let scores = |release: &str, p: &Value| {
            let e = explain_as(Release::parse(release).unwrap(), c.clone(), p.clone());
            e.nodes
                .iter()
                .map(|n| (n.name.to_string(), n.scores.get(NAME).copied()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            scores("1.37", &p),
            [("n1".into(), Some(90)), ("n2".into(), Some(50))]
        );
        assert_eq!(
            scores("1.36", &p),
            [("n1".into(), None), ("n2".into(), None)]
        );
        let plain = pod("default/plain", None, "100m", 0, json!({}));
        assert!(scores("1.37", &plain).iter().all(|(_, s)| *s == Some(0)));
    }

    #[test]
    fn unbound_immediate_and_missing_class_binding_mode() {
        let items = vec![
            node("n1", "4", json!({})),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": "std"}, "provisioner": "x"}),
            unbound("c", "std", "1Gi"),
            unbound("prebound", "local", "1Gi"),
        ];
        let r = run(items.clone(), app(&["c"]));
        assert_eq!(r.pre, Status::unresolvable(ERR_UNBOUND_IMMEDIATE));
        // A claim of a class that does not exist binds immediately, so it must be bound already.
        let r = run(items, app(&["prebound"]));
        assert_eq!(r.pre, Status::unresolvable(ERR_UNBOUND_IMMEDIATE));
    }

    /// On a node whose CSINode says the GCE PD plugin migrated, a bound in-tree PV is read as
    /// the CSI driver's: its zone label becomes the driver's topology key.
    #[test]
    fn migrated_in_tree_pv_uses_the_drivers_topology() {
        let items = vec![
            node(
                "n1",
                "4",
                json!({"topology.kubernetes.io/zone": "us-central1-a"}),
            ),
            node(
                "n2",
                "4",
                json!({"topology.kubernetes.io/zone": "us-central1-a",
                "topology.gke.io/zone": "us-central1-a"}),
            ),
            node(
                "n3",
                "4",
                json!({"topology.kubernetes.io/zone": "us-central1-a"}),
            ),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": "n1",
                    "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"}},
                "spec": {"drivers": []}}),
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": "n2",
                    "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs,kubernetes.io/gce-pd"}},
                "spec": {"drivers": []}}),
            json!({"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": "pd", "labels": {"topology.kubernetes.io/zone": "us-central1-a"}},
                "spec": {"gcePersistentDisk": {"pdName": "disk"}}}),
            bound("data", "pd"),
        ];
        let r = run(items, app(&["data"]));
        assert_eq!(r.filters[0], rejected(&[ERR_REASON_NODE_CONFLICT]));
        assert!(r.filters[1].is_success());
        // Not migrated on n3: the in-tree PV has no node affinity at all.
        assert!(r.filters[2].is_success());
    }

    #[test]
    fn invalid_claim_selector_is_an_error() {
        let mut c = unbound("c", "local", "1Gi");
        c["spec"]["selector"] = json!({"matchExpressions": [{"key": "k", "operator": "Bogus"}]});
        let items = vec![
            node("n1", "4", json!({})),
            class("local", "kubernetes.io/no-provisioner", json!({})),
            c,
        ];
        let r = run(items, app(&["c"]));
        assert_eq!(r.filters[0].code, Code::Error);
        assert!(
            r.filters[0].reasons[0]
                .starts_with("error creating internal label selector for claim: default/c: ")
        );
    }
}
