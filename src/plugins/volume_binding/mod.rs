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
    access_modes_match, annotation, claim_class, claim_fact, claim_key, claim_named, claim_request,
    claim_volume_name, ephemeral_claim_is_for_pod, ephemeral_claim_name, migrated_on_node, name,
    node_affinity_matches, parse_volume_node_affinity, pvc_not_found, volume_bound_to_claim,
    volume_capacity, volume_class, volume_mode_mismatch, with_claim,
};
use crate::framework::MAX_NODE_SCORE;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::{ClaimFact, Detail, Fact};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes, Reuse};
use crate::framework::status::{Code, Status};
use crate::model::cluster::Cluster;
use crate::model::intern::{Interner, Str};
use crate::model::labels::{Labels, Operator, Selector, check_requirement};
use crate::model::node_info::NodeInfo;
use crate::model::node_selector::NodeSelector;
use crate::model::pod::Pod;
use crate::model::quantity::Quantity;
use crate::model::volume;
use k8s_openapi::api::core::v1 as k8s;
use std::collections::HashMap;
use std::sync::Arc;

mod binder;
mod matching;
mod scorer;
#[cfg(test)]
mod tests;

use binder::*;
use matching::*;
pub use scorer::Args;
use scorer::*;

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

fn ephemeral_missing(name: &str) -> String {
    format!("waiting for ephemeral volume controller to create the persistentvolumeclaim {name:?}")
}

/// The claim a volume uses (`persistentVolumeClaim` or generic ephemeral), with whether it is
/// ephemeral; `None` for other volumes.
fn volume_claim(pod: &Pod, v: &volume::Volume) -> Option<(String, bool)> {
    match v.claim() {
        Some(c) => Some((c.to_string(), false)),
        None => v
            .ephemeral_name()
            .map(|volume| (ephemeral_claim_name(&pod.name, volume), true)),
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
            let status = Status::unresolvable(if ephemeral {
                ephemeral_missing(&claim_name)
            } else {
                pvc_not_found(&claim_name)
            });
            return Err(with_claim(cx, status, || claim_named(cx, &claim_name)));
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

/// Per reason of a node's verdict, the claim behind it: the bound claim whose PV is missing or
/// out of reach, the unbound claim that can be neither matched nor provisioned.
fn failed_claims(v: &PodVolumes) -> Vec<Fact> {
    (0..)
        .zip(&v.reasons)
        .filter_map(|(reason, &text)| {
            let claim = match text {
                ERR_REASON_NODE_CONFLICT | ERR_REASON_PV_NOT_EXIST => {
                    &v.claims.bound[v.failed_bound?].fact
                }
                _ => &v.claims.delayed[v.failed_delayed?].fact,
            };
            Some(Fact {
                reason,
                detail: Detail::Claim(Box::new(claim.clone())),
            })
        })
        .collect()
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
            Ok(v) => cx.with_facts(
                Status::with_reasons(
                    Code::UnschedulableAndUnresolvable,
                    v.reasons.iter().map(|r| r.to_string()).collect(),
                ),
                || failed_claims(&v),
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
