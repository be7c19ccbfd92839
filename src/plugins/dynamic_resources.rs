//! DynamicResources (PreEnqueue, PreFilter, Filter, PostFilter, Score, Reserve): dynamic
//! resource allocation. A pod's ResourceClaims must exist; claims already allocated pin the pod
//! to the nodes of their allocation; the others must be allocatable together on the node by the
//! structured allocator (`dra::allocator`). Since 1.35 the plugin also scores: a node where a
//! `firstAvailable` request gets an earlier subrequest scores higher.

use super::helper::default_normalize_score;
use crate::dra::allocator::{
    self, AllocError, AllocatorFeatures, ClaimInput, DeviceResult, NodeRef, RequestCensus,
};
use crate::dra::assumed::{
    ClaimAllocation, EXTENDED_CLAIM_IN_MEMORY, EXTENDED_CLAIM_IN_MEMORY_NAME,
    extended_resource_claim,
};
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::Detail;
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes, Reuse};
use crate::framework::post_filter::PostFilterOutcome;
use crate::framework::runner::Framework;
use crate::framework::status::NodeToStatus;
use crate::framework::status::Status;
use crate::model::dra::objects::{
    AllocationMode, Claim, ClaimSpec, DEVICE_CLASS_RESOURCE_PREFIX, DeviceId, Dra, ExactRequest,
    FIRST_AVAILABLE_MAX_SIZE, Request, RequestKind,
};
use crate::model::intern::{Interner, Str};
use crate::model::node_info::NodeInfo;
use crate::model::pod::{ClaimSource, Pod};
use crate::model::resource::ContainerResources;
use crate::release::{Features, Release};
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
    pre_filter: StateKey<PreFilterState>,
}

/// What PreFilter found: the pod's claims in `spec.resourceClaims` order (a template claim the
/// controller deliberately did not create has none), then the claim for its extended resources
/// backed by DRA, if it has some.
#[derive(Clone, Debug, Default)]
pub struct PreFilterState {
    claims: Vec<Arc<Claim>>,
    /// The extended resources the pod requests that could be backed by DRA (DRAExtendedResource).
    extended: Option<Vec<Str>>,
}

impl PreFilterState {
    fn to_allocate(&self) -> impl Iterator<Item = &Arc<Claim>> {
        self.claims.iter().filter(|c| c.allocation.is_none())
    }

    fn user_claims(&self) -> &[Arc<Claim>] {
        let n = self.claims.len() - usize::from(self.extended.is_some());
        &self.claims[..n]
    }

    /// The claim for extended resources: one an earlier cycle created, or the in-memory one.
    fn extended_claim(&self) -> Option<&Arc<Claim>> {
        self.extended.as_ref().and(self.claims.last())
    }
}

/// A claim of the pod that cannot be used yet, with the claim as its fact.
fn unusable_claim(cx: &Cx, (reason, claim): (String, Str)) -> Status {
    cx.with_fact(Status::unresolvable(reason), || {
        Detail::Devices(vec![claim])
    })
}

pub const CANNOT_FIT_RESOURCE: &str = "cannot fit resource";
pub const CANNOT_SCHEDULE_EXTENDED_CLAIM: &str = "cannot schedule extended resource claim";
pub const EXTENDED_CLAIM_DELETED: &str = "deletion of ResourceClaim completed";

/// For the explanation of a node DynamicResources rejected: what each request of the pod's
/// pending claims finds there, and why the other devices do not serve it.
pub fn device_report(features: &Features, cx: &Cx, node: &NodeInfo) -> Vec<RequestCensus> {
    let plugin = DynamicResources::new(&mut StateSlots::default(), *features);
    let Ok(claims) = plugin.pod_claims(cx) else {
        return Vec::new();
    };
    let snapshot = cx.snapshot;
    let allocated = snapshot.allocated_devices(features.enable_dra_consumable_capacity);
    let holder = |id: &DeviceId| {
        let Some(h) = allocated.devices.get(id) else {
            return "another claim".to_string();
        };
        let pods: Vec<String> = snapshot
            .claim(h.namespace, h.claim)
            .map(|c| {
                c.reserved_for
                    .iter()
                    .filter_map(|&uid| snapshot.pod_by_uid(uid))
                    .map(|p| p.key())
                    .collect()
            })
            .unwrap_or_default();
        match pods.as_slice() {
            [] => format!("claim {}/{}", h.namespace, h.claim),
            _ => format!(
                "claim {}/{} (pod {})",
                h.namespace,
                h.claim,
                pods.join(", ")
            ),
        }
    };
    pending(&claims)
        .flat_map(|c| {
            allocator::census(
                &snapshot.cluster.dra,
                plugin.allocator_features(),
                allocated,
                node_ref(node),
                c,
                &holder,
            )
        })
        .collect()
}

/// The release from which the allocator gives back everything a device it rejected or
/// backtracked from took (`rollbackDevice`).
const ROLLS_BACK_REJECTED_DEVICES: Release = Release {
    minor: 36,
    patch: 3,
};

/// For the explanation of a node DynamicResources rejected: when this release's allocator finds
/// no devices for the pod's pending claims there only because it keeps what a rejected or
/// backtracked device took, the release whose allocator gives it back and allocates here.
pub fn allocator_fixed_in(features: &Features, cx: &Cx, node: &NodeInfo) -> Option<Release> {
    if features.dra_rolls_back_rejected_devices {
        return None;
    }
    let plugin = DynamicResources::new(&mut StateSlots::default(), *features);
    let claims = plugin.pod_claims(cx).ok()?;
    let pending: Vec<ClaimInput> = pending(&claims).collect();
    let dra = &cx.snapshot.cluster.dra;
    let allocated = cx
        .snapshot
        .allocated_devices(features.enable_dra_consumable_capacity);
    let mut f = plugin.allocator_features();
    let now = allocator::allocate(dra, f, allocated, node_ref(node), &pending);
    f.rolls_back_rejected_devices = true;
    let fixed = allocator::allocate(dra, f, allocated, node_ref(node), &pending);
    matches!((now, fixed), (Ok(None), Ok(Some(_)))).then_some(ROLLS_BACK_REJECTED_DEVICES)
}

/// The claims of the pod not allocated yet, as the allocator takes them.
fn pending(claims: &[Arc<Claim>]) -> impl Iterator<Item = ClaimInput<'_>> {
    claims
        .iter()
        .filter(|c| c.allocation.is_none())
        .map(|c| ClaimInput {
            namespace: c.namespace,
            name: c.name,
            spec: &c.spec,
        })
}

fn node_ref(node: &NodeInfo) -> NodeRef<'_> {
    NodeRef {
        name: node.name(),
        labels: &node.node.labels,
    }
}

/// Whether placing `pod` takes devices: it has claims, or requests extended resources a
/// DeviceClass backs (from 1.36).
pub fn takes_devices(features: &Features, dra: &Dra, pod: &Pod) -> bool {
    !pod.resource_claims.is_empty()
        || (features.enable_dra_extended_resource
            && pod
                .requests
                .scalars
                .iter()
                .any(|(n, _)| dra.extended_resources.contains_key(n)))
}

/// `IsDRAExtendedResourceName`.
fn is_dra_extended_resource(name: Str) -> bool {
    crate::model::resource::is_extended(&name) || name.starts_with(DEVICE_CLASS_RESOURCE_PREFIX)
}

/// `createRequestsAndMappings`: one request per container and extended resource the node must
/// serve through DRA, named `container-<i>-request-<j>` (`i` counts init containers first, `j`
/// is the resource's place among the container's sorted requests). Init containers that run
/// before the others reuse what long-lived containers get, and only the largest of their
/// remaining requests is kept.
fn extended_claim_spec(pod: &Pod, wanted: &[Str], dra: &Dra, strings: &Interner) -> ClaimSpec {
    let res = &pod.resources;
    let containers: Vec<&ContainerResources> =
        res.init_containers.iter().chain(&res.containers).collect();
    let n_init = res.init_containers.len();
    let request = |i: usize, c: &ContainerResources, name: Str, class: Str, count: i64| {
        let mut keys: Vec<&str> = c.requests.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        let j = keys.iter().position(|k| *k == name.as_str()).unwrap_or(0);
        let name = strings.intern(format!("container-{i}-request-{j}"));
        (
            name,
            ExactRequest {
                name,
                class,
                selectors: Vec::new(),
                mode: AllocationMode::ExactCount(count),
                mode_name: "ExactCount".into(),
                admin_access: None,
                tolerations: Vec::new(),
                capacity: None,
            },
        )
    };
    let mut wanted = wanted.to_vec();
    wanted.sort();
    let mut out: Vec<(Str, ExactRequest)> = Vec::new();
    for name in wanted {
        let Some(&class) = dra.extended_resources.get(&name) else {
            continue;
        };
        let count_of = |c: &ContainerResources| {
            c.requests
                .get(&name)
                .and_then(|q| q.as_int64())
                .filter(|&n| n != 0)
        };
        let long_lived: Vec<Option<(Str, ExactRequest)>> = containers
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let short = i < n_init && !c.sidecar;
                if short {
                    return None;
                }
                count_of(c).map(|n| request(i, c, name, class, n))
            })
            .collect();
        let mut largest_short: Option<(Str, ExactRequest)> = None;
        for (i, c) in containers.iter().enumerate() {
            if i >= n_init || c.sidecar {
                continue;
            }
            let Some(want) = count_of(c) else { continue };
            let reused: i64 = long_lived[i..]
                .iter()
                .flatten()
                .map(|(_, r)| match r.mode {
                    AllocationMode::ExactCount(n) => n,
                    _ => 0,
                })
                .sum();
            if reused >= want {
                continue;
            }
            let r = request(i, c, name, class, want - reused);
            let count = |r: &(Str, ExactRequest)| match r.1.mode {
                AllocationMode::ExactCount(n) => n,
                _ => 0,
            };
            if largest_short.as_ref().is_none_or(|l| count(l) < count(&r)) {
                largest_short = Some(r);
            }
        }
        out.extend(largest_short);
        out.extend(long_lived.into_iter().flatten());
    }
    out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
    ClaimSpec {
        requests: out
            .into_iter()
            .map(|(name, r)| Request {
                name,
                kind: RequestKind::Exactly(r),
            })
            .collect(),
        constraints: Vec::new(),
    }
}

impl DynamicResources {
    pub fn new(slots: &mut StateSlots, features: Features) -> DynamicResources {
        DynamicResources {
            features,
            pre_filter: slots.register("DynamicResources"),
        }
    }

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

    /// `foreachPodResourceClaim`: the pod's claims, or why one of them cannot be used yet and
    /// which (the claim, or the pod's entry for one not generated yet).
    fn pod_claims(&self, cx: &Cx) -> Result<Vec<Arc<Claim>>, (String, Str)> {
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
                    return Err((
                        format!(
                            "pod \"{}/{}\": {CLAIM_NOT_CREATED}",
                            pod.namespace, pod.name
                        ),
                        rc.name,
                    ));
                }
                ClaimSource::Unsupported => {
                    return Err((
                        format!(
                            "pod \"{}/{}\", spec.resourceClaim {:?}: {API_UNSUPPORTED}",
                            pod.namespace,
                            pod.name,
                            rc.name.as_str()
                        ),
                        rc.name,
                    ));
                }
            };
            let Some(claim) = cx.snapshot.claim(pod.namespace, name) else {
                return Err((
                    format!(
                        "could not find ResourceClaim \"{}/{}\"",
                        pod.namespace, name
                    ),
                    name,
                ));
            };
            if claim.deleting {
                return Err((
                    format!("resourceclaim {:?} is being deleted", claim.name.as_str()),
                    name,
                ));
            }
            if check_owner && let Some(e) = self.not_owner(claim, pod) {
                return Err((e, name));
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
        let extended = match self.extended_requests(cx, state, node) {
            Ok(Some(spec)) => Some(spec),
            _ => None,
        };
        let special = state.extended_claim();
        let claims: Vec<ClaimInput> = state
            .to_allocate()
            .map(|c| ClaimInput {
                namespace: c.namespace,
                name: c.name,
                spec: match (&extended, special) {
                    (Some(spec), Some(s)) if Arc::ptr_eq(s, c) => spec,
                    _ => &c.spec,
                },
            })
            .collect();
        allocator::allocate(
            dra,
            self.allocator_features(),
            cx.snapshot
                .allocated_devices(self.features.enable_dra_consumable_capacity),
            node_ref(node),
            &claims,
        )
    }

    /// `preFilterExtendedResources`: the pod's requests of extended resources some DeviceClass
    /// backs, and the claim for them (an earlier cycle's, or a new in-memory one).
    fn extended_resources(&self, cx: &Cx) -> Option<(Vec<Str>, Arc<Claim>)> {
        if !self.features.enable_dra_extended_resource {
            return None;
        }
        let dra = &cx.snapshot.cluster.dra;
        let pod = cx.pod;
        let requests: Vec<Str> = pod
            .requests
            .scalars
            .iter()
            .filter(|&&(n, q)| q != 0 && is_dra_extended_resource(n))
            .map(|&(n, _)| n)
            .collect();
        if !requests
            .iter()
            .any(|n| dra.extended_resources.contains_key(n))
        {
            return None;
        }
        let mut existing: Vec<&Arc<Claim>> = dra
            .claims
            .values()
            .filter(|c| {
                c.extended_resource_claim
                    && c.namespace == pod.namespace
                    && c.owner_uids.iter().any(|&(uid, ctl)| ctl && uid == pod.uid)
            })
            .collect();
        existing.sort_by_key(|c| c.name);
        let claim = match existing.first() {
            Some(c) => Arc::clone(c),
            None => Arc::new(extended_resource_claim(
                pod,
                Str::from_static(&EXTENDED_CLAIM_IN_MEMORY_NAME),
                Str::empty(),
            )),
        };
        Some((requests, claim))
    }

    /// `filterExtendedResources`: the requests the node must serve through DRA, or why it
    /// cannot; `Ok(None)` when the extended resource claim needs nothing on this node.
    fn extended_requests(
        &self,
        cx: &Cx,
        state: &PreFilterState,
        node: &NodeInfo,
    ) -> Result<Option<ClaimSpec>, Status> {
        let (Some(requests), Some(claim)) = (&state.extended, state.extended_claim()) else {
            return Ok(None);
        };
        if !claim.spec.requests.is_empty() {
            return Err(Status::unresolvable(CANNOT_SCHEDULE_EXTENDED_CLAIM));
        }
        let dra = &cx.snapshot.cluster.dra;
        let allocatable = node.allocatable();
        let mut wanted = Vec::new();
        for &name in requests {
            let offered = allocatable.scalars.iter().find(|(n, _)| *n == name);
            let backed = dra.extended_resources.contains_key(&name);
            if backed && offered.is_none_or(|&(_, q)| q == 0) {
                wanted.push(name);
            } else if offered.is_none() {
                return Err(Status::unresolvable(CANNOT_FIT_RESOURCE));
            }
        }
        if (state.user_claims().is_empty() && wanted.is_empty()) || claim.allocation.is_some() {
            return Ok(None);
        }
        Ok(Some(extended_claim_spec(
            cx.pod,
            &wanted,
            dra,
            &cx.snapshot.cluster.strings,
        )))
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
            Err(e) => unusable_claim(cx, e),
        }
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        state.write(self.pre_filter, PreFilterState::default());
        let mut claims = match self.pod_claims(cx) {
            Ok(c) => c,
            Err(e) => return (unusable_claim(cx, e), None),
        };
        let extended = self.extended_resources(cx).map(|(requests, claim)| {
            claims.push(claim);
            requests
        });
        if claims.is_empty() {
            return (Status::skip(), None);
        }
        for (i, claim) in claims.iter().enumerate() {
            if extended.is_some() && i == claims.len() - 1 && claim.allocation.is_none() {
                // Its requests depend on the node; Filter builds them.
                continue;
            }
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
        state.write(self.pre_filter, PreFilterState { claims, extended });
        (Status::success(), None)
    }

    fn filter(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        let Some(s) = state.read(self.pre_filter) else {
            return Status::error(ERR_NOT_FOUND);
        };
        if s.claims.is_empty() {
            return Status::success();
        }
        // The claims behind a rejection: those to allocate, or those allocated elsewhere.
        let claims = |of: &dyn Fn(&Claim) -> bool| {
            Detail::Devices(s.claims.iter().filter(|c| of(c)).map(|c| c.name).collect())
        };
        let pending = |c: &Claim| c.allocation.is_none();
        let extended = match self.extended_requests(cx, s, node) {
            Ok(e) => e,
            Err(status) => return cx.with_fact(status, || claims(&pending)),
        };
        if extended.is_none() && s.user_claims().is_empty() {
            return Status::success();
        }
        let labels = &node.node.labels;
        let elsewhere = |c: &Claim| {
            c.allocation
                .as_ref()
                .is_some_and(|a| !a.available_on(labels, node.name()))
        };
        let unavailable = s.claims.iter().any(|c| elsewhere(c));
        if s.to_allocate().next().is_some() {
            let rejected = match self.allocate(cx, s, node) {
                Ok(Some(_)) => None,
                Ok(None) => Some(Status::unresolvable(CANNOT_ALLOCATE)),
                Err(AllocError::Node(e)) => Some(Status::unresolvable(e)),
                Err(AllocError::Fatal(e)) => return Status::error(e),
            };
            if let Some(status) = rejected {
                return cx.with_fact(status, || claims(&pending));
            }
        }
        if unavailable {
            return cx.with_fact(Status::unresolvable(NOT_AVAILABLE), || claims(&elsewhere));
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
        let status = match state.read(self.pre_filter) {
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
                let deallocatable = s.user_claims().iter().any(|c| {
                    let Some(a) = &c.allocation else {
                        return false;
                    };
                    let unavailable = reached
                        .iter()
                        .any(|n| !a.available_on(&n.node.labels, n.name()));
                    unavailable
                        && (c.reserved_for.is_empty() || c.reserved_for.as_slice() == [cx.pod.uid])
                });
                let stale_extended_claim = s
                    .extended_claim()
                    .is_some_and(|c| c.name != EXTENDED_CLAIM_IN_MEMORY);
                Status::unschedulable(if deallocatable {
                    DEALLOCATED
                } else if stale_extended_claim {
                    EXTENDED_CLAIM_DELETED
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
        let Some(s) = state.read(self.pre_filter) else {
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

    fn reserve(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Vec<ClaimAllocation> {
        let Some(s) = state.read(self.pre_filter) else {
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

    // Replicas whose claims or extended resources involve DRA interact (a placement takes
    // devices any node may see); for the others this plugin does nothing.
    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }

    fn replicas_interact(&self, cx: &Cx) -> bool {
        takes_devices(&self.features, &cx.snapshot.cluster.dra, cx.pod)
    }
}

#[cfg(test)]
mod tests {
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    use crate::release::Release;
    use crate::testing::{
        cluster, device_class, explain_as, gpu_slice, node, pod, resource_claim, with_claims,
    };
    use serde_json::{Value, json};

    const V134: Release = Release {
        minor: 34,
        patch: 1,
    };
    const V135: Release = Release {
        minor: 35,
        patch: 4,
    };
    const V136: Release = Release {
        minor: 36,
        patch: 2,
    };

    fn gpu_request(name: &str) -> Value {
        json!({"requests": [{"name": name, "exactly": {"deviceClassName": "gpu"}}]})
    }

    fn base() -> Vec<Value> {
        vec![
            node("node-1", "4", json!({})),
            node("node-2", "4", json!({})),
            device_class("gpu", &["device.driver == \"gpu.example.com\""]),
            gpu_slice("node-1", json!([{"name": "gpu-0"}])),
        ]
    }

    #[test]
    fn pre_enqueue_holds_a_pod_whose_claims_are_missing_or_not_its_own() {
        let p = with_claims(pod("default/app", None, "100m", 0, json!({})), &["gpu"]);
        let e = explain_as(V134, cluster(base()), p);
        assert_eq!(e.prefilter.plugin, "DynamicResources");
        assert_eq!(
            e.prefilter.reasons,
            ["could not find ResourceClaim \"default/gpu\""]
        );
        assert_eq!(e.message, "", "a pod held back has no event");

        let mut p = pod("default/app", None, "100m", 0, json!({}));
        p["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimTemplateName": "t"}]);
        let e = explain_as(V134, cluster(base()), p.clone());
        assert_eq!(
            e.prefilter.reasons,
            ["pod \"default/app\": ResourceClaim not created yet"]
        );
        p["status"]["resourceClaimStatuses"] =
            json!([{"name": "gpu", "resourceClaimName": "app-gpu"}]);
        let mut items = base();
        items.push(resource_claim("default/app-gpu", gpu_request("gpu")));
        let e = explain_as(V135, cluster(items.clone()), p.clone());
        assert_eq!(
            e.prefilter.reasons,
            [
                "ResourceClaim default/app-gpu was not created for pod default/app (pod is not owner)"
            ]
        );
        let e = explain_as(V136, cluster(items.clone()), p.clone());
        assert_eq!(
            e.prefilter.reasons,
            [
                "ResourceClaim default/app-gpu was not created for Pod default/app (Pod is not owner)"
            ]
        );
        let last = items.len() - 1;
        items[last]["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod",
            "name": "app", "uid": "default/app", "controller": true}]);
        let e = explain_as(V136, cluster(items), p);
        assert_eq!(e.selected, ["node-1"], "{:?}", e.prefilter);
    }

    #[test]
    fn a_template_claim_deliberately_not_created_is_ignored() {
        let mut p = pod("default/app", None, "100m", 0, json!({}));
        p["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimTemplateName": "t"}]);
        p["status"]["resourceClaimStatuses"] = json!([{"name": "gpu"}]);
        let e = explain_as(V134, cluster(base()), p);
        assert_eq!(e.selected, ["node-1", "node-2"]);
    }

    #[test]
    fn a_missing_class_stops_pre_filter() {
        let mut items = base();
        items.push(resource_claim(
            "default/gpu",
            json!({"requests": [{"name": "fpga", "exactly": {"deviceClassName": "fpga"}}]}),
        ));
        let p = with_claims(pod("default/app", None, "100m", 0, json!({})), &["gpu"]);
        let e = explain_as(V134, cluster(items), p);
        assert_eq!(
            e.message,
            "0/2 nodes are available: request fpga: device class fpga does not exist. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
        );
    }

    #[test]
    fn an_allocated_claim_pins_the_pod_and_post_filter_deallocates_it() {
        let mut items = base();
        let mut claim = resource_claim("default/gpu", gpu_request("gpu"));
        claim["status"] = json!({"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}});
        items.push(claim.clone());
        let p = with_claims(pod("default/app", None, "100m", 0, json!({})), &["gpu"]);
        let e = explain_as(V134, cluster(items.clone()), p.clone());
        assert_eq!(e.selected, ["node-1"]);
        assert!(e.dra_allocation.is_empty(), "nothing new is allocated");
        let n2 = e.nodes.iter().find(|n| n.name == "node-2").unwrap();
        assert_eq!(n2.reasons, ["resourceclaim not available on the node"]);

        // node-1 lacks cpu now and node-2 finds the claim unavailable: reserved for nobody, the
        // claim is deallocated.
        items[0] = node("node-1", "1", json!({}));
        let p = with_claims(pod("default/app", None, "2", 0, json!({})), &["gpu"]);
        let e = explain_as(V134, cluster(items.clone()), p.clone());
        assert!(
            e.message
                .contains("deallocation of ResourceClaim completed"),
            "{}",
            e.message
        );
        let last = items.len() - 1;
        items[last]["status"]["reservedFor"] =
            json!([{"resource": "pods", "name": "other", "uid": "other-uid"}]);
        let e = explain_as(V134, cluster(items.clone()), p);
        assert!(e.message.contains("still not schedulable"), "{}", e.message);
        // Nodes that failed an earlier filter never ran this one: nothing to deallocate.
        let p = with_claims(pod("default/app", None, "5", 0, json!({})), &["gpu"]);
        items[last]["status"]["reservedFor"] = json!([]);
        let e = explain_as(V134, cluster(items), p);
        assert!(e.message.contains("still not schedulable"), "{}", e.message);
    }

    #[test]
    fn score_prefers_earlier_subrequests_from_1_35() {
        let mut items = base();
        items.push(gpu_slice("node-2", json!([{"name": "gpu-0"}])));
        items[3]["spec"]["devices"][0]["attributes"] = json!({"big": {"bool": true}});
        items.push(resource_claim(
            "default/gpu",
            json!({"requests": [{"name": "gpu", "firstAvailable": [
                {"name": "big", "deviceClassName": "gpu", "selectors": [{"cel": {"expression": "has(device.attributes[\"gpu.example.com\"].big)"}}]},
                {"name": "any", "deviceClassName": "gpu"}]}]}),
        ));
        let p = with_claims(pod("default/app", None, "100m", 0, json!({})), &["gpu"]);
        let e = explain_as(V134, cluster(items.clone()), p.clone());
        assert_eq!(e.selected, ["node-1", "node-2"], "1.34 does not score");
        let e = explain_as(V135, cluster(items), p);
        assert_eq!(e.selected, ["node-1"]);
        let score =
            |n: &str| e.nodes.iter().find(|x| x.name == n).unwrap().scores["DynamicResources"];
        assert_eq!((score("node-1"), score("node-2")), (200, 174));
    }

    #[test]
    fn mixing_allocated_and_new_claims_fails_scoring_before_1_36_2() {
        let mut items = base();
        items.push(gpu_slice("node-2", json!([{"name": "gpu-0"}])));
        let mut shared = resource_claim("default/shared", gpu_request("gpu"));
        shared["status"] = json!({"allocation": {"devices": {"results": []}}});
        items.push(shared);
        items.push(resource_claim("default/own", gpu_request("gpu")));
        let p = with_claims(
            pod("default/app", None, "100m", 0, json!({})),
            &["shared", "own"],
        );
        let e = explain_as(V135, cluster(items.clone()), p.clone());
        assert_eq!(
            e.error.as_deref(),
            Some(
                "plugin \"DynamicResources\" failed with: number of allocations 1 is smaller than number of claims"
            )
        );
        let e = explain_as(V136, cluster(items), p);
        assert_eq!(e.selected, ["node-1", "node-2"]);
    }

    #[test]
    fn extended_resources_backed_by_dra_from_1_36() {
        let mut items = base();
        items[2]["spec"]["extendedResourceName"] = json!("example.com/gpu");
        let mut p = pod("default/app", None, "100m", 0, json!({}));
        p["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = json!("1");
        p["spec"]["containers"][0]["resources"]["limits"] = json!({"example.com/gpu": "1"});
        let e = explain_as(V135, cluster(items.clone()), p.clone());
        assert!(
            e.message
                .starts_with("0/2 nodes are available: 2 Insufficient example.com/gpu."),
            "{}",
            e.message
        );
        let e = explain_as(V136, cluster(items), p);
        assert_eq!(e.selected, ["node-1"]);
        let n2 = e.nodes.iter().find(|n| n.name == "node-2").unwrap();
        assert_eq!(n2.plugin, Some("DynamicResources"));
        assert_eq!(n2.reasons, ["cannot allocate all claims"]);
        let devices = &e.dra_allocation[&crate::model::intern::Str::new("node-1")]
            [&crate::model::intern::Str::new("<extended-resources>")];
        assert_eq!(devices[0].request, "container-0-request-1");
    }
}

#[cfg(test)]
mod replica_tests {
    use crate::framework::sequence::place;
    use crate::framework::snapshot::Snapshot;
    use crate::plugins::registry::default_framework;
    use crate::release::Release;
    use crate::testing::{cluster, device_class, gpu_slice, node, pod};
    use serde_json::json;

    /// Each replica gets its own claim from the template, so one GPU serves one replica.
    #[test]
    fn replicas_get_claims_from_their_template() {
        let template = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}});
        let c = cluster(vec![
            node("node-1", "4", json!({})),
            node("node-2", "4", json!({})),
            device_class("gpu", &["device.driver == \"gpu.example.com\""]),
            gpu_slice("node-1", json!([{"name": "gpu-0"}])),
            gpu_slice("node-2", json!([{"name": "gpu-0"}])),
            template,
        ]);
        let mut p = pod("default/app", None, "100m", 0, json!({}));
        p["spec"]["resourceClaims"] =
            json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]);
        let p = crate::model::cluster::convert_pod(
            serde_json::from_value(p).unwrap(),
            &crate::model::parse::Parse::new(&crate::model::intern::Interner::new()),
        )
        .unwrap()
        .into_pod();
        let fw = default_framework(Release::NEWEST.into());
        let mut snapshot = Snapshot::new(c, None);
        let seq = place(&fw, &mut snapshot, &p, 3);
        let nodes: Vec<&str> = seq.placements.iter().map(|p| p.node.as_str()).collect();
        assert_eq!(nodes, ["node-1", "node-2"]);
        assert!(
            seq.stopped
                .as_deref()
                .unwrap_or("")
                .contains("2 cannot allocate all claims"),
            "{:?}",
            seq.stopped
        );
    }

    /// Each replica's extended-resource claim takes its devices for the next ones (1.36).
    #[test]
    fn replicas_with_extended_resources_backed_by_dra_take_devices() {
        let mut class = device_class("gpu", &["device.driver == \"gpu.example.com\""]);
        class["spec"]["extendedResourceName"] = json!("example.com/gpu");
        let c = cluster(vec![
            node("node-1", "4", json!({})),
            class,
            gpu_slice("node-1", json!([{"name": "gpu-0"}, {"name": "gpu-1"}])),
        ]);
        let mut p = pod("default/app", None, "100m", 0, json!({}));
        p["spec"]["containers"][0]["resources"]["limits"] = json!({"example.com/gpu": "1"});
        let p = crate::model::cluster::convert_pod(
            serde_json::from_value(p).unwrap(),
            &crate::model::parse::Parse::new(&crate::model::intern::Interner::new()),
        )
        .unwrap()
        .into_pod();
        let fw = default_framework(Release::NEWEST.into());
        let mut snapshot = Snapshot::new(c, None);
        let seq = place(&fw, &mut snapshot, &p, 3);
        assert_eq!(seq.placements.len(), 2, "{:?}", seq);
    }
}
