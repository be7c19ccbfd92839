//! DynamicResources (PreEnqueue, PreFilter, Filter, PostFilter, Score, Reserve): dynamic
//! resource allocation. A pod's ResourceClaims must exist; claims already allocated pin the pod
//! to the nodes of their allocation; the others must be allocatable together on the node by the
//! structured allocator (`dra::allocator`). Since 1.35 the plugin also scores: a node where a
//! `firstAvailable` request gets an earlier subrequest scores higher.

use super::feature::Features;
use super::helper::default_normalize_score;
use crate::dra::allocator::{
    self, AllocError, AllocatorFeatures, ClaimInput, DeviceResult, NodeRef,
};
use crate::dra::objects::{Claim, FIRST_AVAILABLE_MAX_SIZE, RequestKind};
use crate::framework::cycle_state::CycleState;
use crate::framework::plugin::{Cx, Plugin, Points, PostFilterOutcome, PreFilterNodes, Reuse};
use crate::framework::runner::{Framework, NodeToStatus};
use crate::framework::status::Status;
use crate::model::intern::Str;
use crate::model::node_info::NodeInfo;
use crate::model::pod::{ClaimSource, Pod};
use std::collections::BTreeSet;
use std::sync::Arc;

pub const NAME: &str = "DynamicResources";
/// What `cycleState.Read` returns when PreFilter never wrote the plugin's state.
pub const ERR_NOT_FOUND: &str = "not found";
pub const NO_NEW_CLAIMS: &str = "no new claims to deallocate";
pub const DEALLOCATED: &str = "deallocation of ResourceClaim completed";
pub const STILL_NOT_SCHEDULABLE: &str = "still not schedulable";
pub const CANNOT_ALLOCATE: &str = "cannot allocate all claims";
pub const NOT_AVAILABLE: &str = "resourceclaim not available on the node";
/// `resourceclaim.ErrClaimNotFound`.
pub const CLAIM_NOT_CREATED: &str = "ResourceClaim not created yet";
/// `resourceclaim.ErrAPIUnsupported`.
pub const API_UNSUPPORTED: &str = "none of the supported fields are set";

pub struct DynamicResources {
    pub features: Features,
}

/// What PreFilter found: the pod's claims in `spec.resourceClaims` order (a template claim the
/// controller deliberately did not create has none).
#[derive(Clone, Debug, Default)]
pub struct PreFilterState {
    claims: Vec<Arc<Claim>>,
}

impl PreFilterState {
    fn to_allocate(&self) -> impl Iterator<Item = &Arc<Claim>> {
        self.claims.iter().filter(|c| c.allocation.is_none())
    }
}

/// The devices Reserve would allocate to one claim on the chosen node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimAllocation {
    pub claim: Str,
    pub devices: Vec<DeviceResult>,
}

impl DynamicResources {
    pub fn allocator_features(&self) -> AllocatorFeatures {
        let f = &self.features;
        AllocatorFeatures {
            admin_access: f.enable_dra_admin_access,
            prioritized_list: f.enable_dra_prioritized_list,
            partitionable_devices: f.enable_dra_partitionable_devices,
            device_taints: f.enable_dra_device_taints,
            binding_and_status: f.enable_dra_device_binding_conditions
                && f.enable_dra_resource_claim_device_status,
            consumable_capacity: f.enable_dra_consumable_capacity,
            skips_unusable_pools: f.dra_incubating_allocator,
            rolls_back_rejected_devices: f.dra_rolls_back_rejected_devices,
            counters_by_pool_id: f.dra_counters_by_pool_id,
            counters_count_shared_devices: f.dra_counters_count_shared_devices,
        }
    }

    /// `resourceclaim.IsForPod`: a claim generated from a template must be controlled by the pod.
    fn not_owner(&self, claim: &Claim, pod: &Pod) -> Option<String> {
        if claim.controller_uid == Some(pod.uid) {
            return None;
        }
        Some(if self.features.dra_not_owner_message_capitalised {
            format!(
                "ResourceClaim {}/{} was not created for Pod {}/{} (Pod is not owner)",
                claim.namespace, claim.name, pod.namespace, pod.name
            )
        } else {
            format!(
                "ResourceClaim {}/{} was not created for pod {}/{} (pod is not owner)",
                claim.namespace, claim.name, pod.namespace, pod.name
            )
        })
    }

    /// `foreachPodResourceClaim`: the pod's claims, or why one of them cannot be used yet.
    fn pod_claims(&self, cx: &Cx) -> Result<Vec<Arc<Claim>>, String> {
        let pod = cx.pod;
        let mut out = Vec::new();
        for rc in &pod.resource_claims {
            let (name, check_owner) = match &rc.source {
                ClaimSource::Claim(n) => (*n, false),
                ClaimSource::Template {
                    generated: Some(Some(n)),
                    ..
                } => (*n, true),
                ClaimSource::Template {
                    generated: Some(None),
                    ..
                } => continue,
                ClaimSource::Template {
                    generated: None, ..
                } => {
                    return Err(format!(
                        "pod \"{}/{}\": {CLAIM_NOT_CREATED}",
                        pod.namespace, pod.name
                    ));
                }
                ClaimSource::Unsupported => {
                    return Err(format!(
                        "pod \"{}/{}\", spec.resourceClaim {:?}: {API_UNSUPPORTED}",
                        pod.namespace,
                        pod.name,
                        rc.name.as_str()
                    ));
                }
            };
            let Some(claim) = cx.snapshot.claim(pod.namespace, name) else {
                return Err(format!(
                    "could not find ResourceClaim \"{}/{}\"",
                    pod.namespace, name
                ));
            };
            if claim.deleting {
                return Err(format!(
                    "resourceclaim {:?} is being deleted",
                    claim.name.as_str()
                ));
            }
            if check_owner && let Some(e) = self.not_owner(claim, pod) {
                return Err(e);
            }
            out.push(claim.clone());
        }
        Ok(out)
    }

    /// Runs the allocator for the pod's unallocated claims on `node`.
    pub fn allocate(
        &self,
        cx: &Cx,
        state: &PreFilterState,
        node: &NodeInfo,
    ) -> Result<Option<Vec<Vec<DeviceResult>>>, AllocError> {
        let dra = &cx.snapshot.cluster.dra;
        let claims: Vec<ClaimInput> = state
            .to_allocate()
            .map(|c| ClaimInput {
                namespace: c.namespace,
                name: c.name,
                spec: &c.spec,
            })
            .collect();
        allocator::allocate(
            dra,
            self.allocator_features(),
            cx.snapshot
                .allocated_devices(self.features.enable_dra_consumable_capacity),
            NodeRef {
                name: node.name(),
                labels: &node.node.labels,
            },
            &claims,
        )
    }

    /// `validateDeviceClass`.
    fn check_class(cx: &Cx, class: Str, request: &str) -> Option<Status> {
        if class.is_empty() {
            return Some(Status::error(format!(
                "request {request}: unsupported request type"
            )));
        }
        if !cx.snapshot.cluster.dra.classes.contains_key(&class) {
            return Some(Status::unresolvable(format!(
                "request {request}: device class {class} does not exist"
            )));
        }
        None
    }

    /// `computeScore`: 8 − index of the subrequest each `firstAvailable` request got.
    fn score_of(
        &self,
        state: &PreFilterState,
        results: &[Vec<DeviceResult>],
    ) -> Result<i64, String> {
        let mut score = 0;
        let mut pending = results.iter();
        for (i, claim) in state.claims.iter().enumerate() {
            let requests: BTreeSet<String> = match &claim.allocation {
                Some(a) if self.features.dra_score_handles_allocated_claims => {
                    a.devices.iter().map(|d| d.request.to_string()).collect()
                }
                _ => {
                    let next = if self.features.dra_score_handles_allocated_claims {
                        pending.next()
                    } else {
                        // Before 1.36.2 the n-th claim took the n-th new allocation.
                        results.get(i)
                    };
                    let Some(r) = next else {
                        return Err(if self.features.dra_score_handles_allocated_claims {
                            format!(
                                "number of allocations {} is smaller than number of claims needing allocation",
                                results.len()
                            )
                        } else {
                            format!(
                                "number of allocations {} is smaller than number of claims",
                                results.len()
                            )
                        });
                    };
                    r.iter().map(|d| d.request.clone()).collect()
                }
            };
            for request in &claim.spec.requests {
                if let RequestKind::FirstAvailable(subs) = &request.kind {
                    for (j, sub) in subs.iter().enumerate() {
                        if requests.contains(&format!("{}/{}", request.name, sub.name)) {
                            score += FIRST_AVAILABLE_MAX_SIZE - j as i64;
                        }
                    }
                }
            }
        }
        Ok(score)
    }
}

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        let points = Points::PRE_ENQUEUE
            | Points::PRE_FILTER
            | Points::FILTER
            | Points::POST_FILTER
            | Points::PRE_SCORE
            | Points::RESERVE
            | Points::PRE_BIND;
        if self.features.dynamic_resources_scores {
            points | Points::SCORE
        } else {
            points
        }
    }

    fn pre_enqueue(&self, cx: &Cx) -> Status {
        match self.pod_claims(cx) {
            Ok(_) => Status::success(),
            Err(e) => Status::unresolvable(e),
        }
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        state.dynamic_resources = Some(PreFilterState::default());
        let claims = match self.pod_claims(cx) {
            Ok(c) => c,
            Err(e) => return (Status::unresolvable(e), None),
        };
        if claims.is_empty() {
            return (Status::skip(), None);
        }
        for claim in &claims {
            if let Some(a) = &claim.allocation {
                if let Some(e) = a.node_selector_errors.first() {
                    return (Status::error(e.clone()), None);
                }
                continue;
            }
            for request in &claim.spec.requests {
                let status = match &request.kind {
                    RequestKind::Exactly(r) => Self::check_class(cx, r.class, &request.name),
                    RequestKind::FirstAvailable(subs) => subs.iter().find_map(|s| {
                        Self::check_class(cx, s.class, &format!("{}/{}", request.name, s.name))
                    }),
                    RequestKind::Unknown => Some(Status::unresolvable(format!(
                        "resource claim {}, request {}: unknown request type",
                        claim.key(),
                        request.name
                    ))),
                };
                if let Some(s) = status {
                    return (s, None);
                }
            }
        }
        state.dynamic_resources = Some(PreFilterState { claims });
        (Status::success(), None)
    }

    fn filter(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        let Some(s) = &state.dynamic_resources else {
            return Status::error(ERR_NOT_FOUND);
        };
        if s.claims.is_empty() {
            return Status::success();
        }
        let labels = &node.node.labels;
        let unavailable = s.claims.iter().any(|c| {
            c.allocation
                .as_ref()
                .is_some_and(|a| !a.available_on(labels, node.name()))
        });
        if s.to_allocate().next().is_some() {
            match self.allocate(cx, s, node) {
                Ok(Some(_)) => {}
                Ok(None) => return Status::unresolvable(CANNOT_ALLOCATE),
                Err(AllocError::Node(e)) => return Status::unresolvable(e),
                Err(AllocError::Fatal(e)) => return Status::error(e),
            }
        }
        if unavailable {
            return Status::unresolvable(NOT_AVAILABLE);
        }
        Status::success()
    }

    fn post_filter(
        &self,
        fw: &Framework,
        cx: &Cx,
        state: &CycleState,
        statuses: &NodeToStatus,
    ) -> PostFilterOutcome {
        let status = match &state.dynamic_resources {
            None => Status::error(ERR_NOT_FOUND),
            Some(s) if s.claims.is_empty() => Status::unschedulable(NO_NEW_CLAIMS),
            Some(s) => {
                // The allocated claims whose Filter found them unavailable on some node: the
                // nodes that got as far as this plugin's Filter.
                let order = fw.filter_plugin_names();
                let own = order.iter().position(|&p| p == NAME);
                let reached: Vec<&NodeInfo> = statuses
                    .by_node
                    .iter()
                    .filter(|(_, st)| {
                        own.is_some_and(|own| {
                            order.iter().position(|&p| p == st.plugin) >= Some(own)
                        })
                    })
                    .filter_map(|(&n, _)| cx.snapshot.get(n))
                    .collect();
                let deallocatable = s.claims.iter().any(|c| {
                    let Some(a) = &c.allocation else {
                        return false;
                    };
                    let unavailable = reached
                        .iter()
                        .any(|n| !a.available_on(&n.node.labels, n.name()));
                    unavailable
                        && (c.reserved_for.is_empty() || c.reserved_for.as_slice() == [cx.pod.uid])
                });
                Status::unschedulable(if deallocatable {
                    DEALLOCATED
                } else {
                    STILL_NOT_SCHEDULABLE
                })
            }
        };
        PostFilterOutcome {
            status,
            preemption: None,
        }
    }

    fn score(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = &state.dynamic_resources else {
            return Err(Status::error(ERR_NOT_FOUND));
        };
        if s.to_allocate().next().is_none() {
            return Ok(0);
        }
        let mixed = s.claims.iter().any(|c| c.allocation.is_some());
        let first_available = s.claims.iter().any(|c| {
            c.spec
                .requests
                .iter()
                .any(|r| matches!(r.kind, RequestKind::FirstAvailable(_)))
        });
        // Before 1.36.2 a pod mixing allocated and unallocated claims fails scoring.
        let fails = mixed && !self.features.dra_score_handles_allocated_claims;
        if !first_available && !fails {
            return Ok(0);
        }
        let results = match self.allocate(cx, s, node) {
            Ok(Some(r)) => r,
            _ => return Ok(0),
        };
        self.score_of(s, &results).map_err(Status::error)
    }

    fn has_score_extensions(&self) -> bool {
        true
    }

    fn normalize_score(&self, _cx: &Cx, _state: &CycleState, scores: &mut [i64]) -> Status {
        default_normalize_score(scores, false);
        Status::success()
    }

    fn reserve_allocations(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
    ) -> Vec<ClaimAllocation> {
        let Some(s) = &state.dynamic_resources else {
            return Vec::new();
        };
        if s.to_allocate().next().is_none() {
            return Vec::new();
        }
        match self.allocate(cx, s, node) {
            Ok(Some(results)) => s
                .to_allocate()
                .zip(results)
                .map(|(c, devices)| ClaimAllocation {
                    claim: c.name,
                    devices,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    // Whether a node fits depends on the devices other pods' claims took, which placing a
    // replica changes anywhere.
    fn reuse(&self) -> Reuse {
        Reuse::NOTHING
    }
}
