//! NodeResourcesFit (PreFilter, Filter, PreScore, Score): the pod's requests must fit in what the
//! node has left; nodes are scored by LeastAllocated (default), MostAllocated or
//! RequestedToCapacityRatio over the configured resources.

use super::helper::{ShapePoint, broken_linear};
use super::resource_allocation::{self, ResourceSpec, Usage};
use crate::framework::MAX_NODE_SCORE;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::{Detail, Fact, ScoreInput, Shortfall};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes, Reuse};
use crate::framework::status::{Code, Status};
use crate::model::dra::objects::Dra;
use crate::model::intern::{Entry, Str};
use crate::model::node_info::NodeInfo;
use crate::model::resource::{self, RequestOptions, Resource};

pub const NAME: &str = "NodeResourcesFit";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strategy {
    LeastAllocated,
    MostAllocated,
    /// The shape, with scores already scaled to 0..=100.
    RequestedToCapacityRatio(Vec<ShapePoint>),
}

/// `NodeResourcesFitArgs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    pub ignored_resources: Vec<String>,
    pub ignored_resource_groups: Vec<String>,
    pub strategy: Strategy,
    pub resources: Vec<ResourceSpec>,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            ignored_resources: Vec::new(),
            ignored_resource_groups: Vec::new(),
            strategy: Strategy::LeastAllocated,
            resources: default_resources(),
        }
    }
}

/// cpu and memory, weight 1 each.
pub fn default_resources() -> Vec<ResourceSpec> {
    vec![
        ResourceSpec {
            name: "cpu".into(),
            weight: 1,
        },
        ResourceSpec {
            name: "memory".into(),
            weight: 1,
        },
    ]
}

#[derive(Clone, Debug)]
pub struct PreFilterState {
    pub request: Resource,
}

#[derive(Clone, Debug)]
pub struct PreScoreState {
    pod_requests: Vec<i64>,
}

pub struct NodeResourcesFit {
    pub args: Args,
    /// DRAExtendedResource: an extended resource the node does not offer but a DeviceClass
    /// backs is left to DynamicResources (1.36).
    pub dra_extended_resource: bool,
    pre_filter: StateKey<PreFilterState>,
    pre_score: StateKey<PreScoreState>,
}

/// One resource the node lacks, as `InsufficientResource`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insufficient {
    pub reason: String,
    pub shortfall: Shortfall,
    /// The request exceeds the node's allocatable: evicting pods cannot help.
    pub unresolvable: bool,
}

static CPU: Entry = Entry::constant(resource::CPU);
static MEMORY: Entry = Entry::constant(resource::MEMORY);
static EPHEMERAL_STORAGE: Entry = Entry::constant(resource::EPHEMERAL_STORAGE);
static PODS: Entry = Entry::constant(resource::PODS);

impl NodeResourcesFit {
    pub fn new(
        slots: &mut StateSlots,
        args: Args,
        dra_extended_resource: bool,
    ) -> NodeResourcesFit {
        NodeResourcesFit {
            args,
            dra_extended_resource,
            pre_filter: slots.register("PreFilterNodeResourcesFit"),
            pre_score: slots.register("PreScoreNodeResourcesFit"),
        }
    }

    fn ignored(&self, name: &str) -> bool {
        if !resource::is_extended(name) {
            return false;
        }
        let group = name.split('/').next().unwrap_or("");
        self.args.ignored_resources.iter().any(|r| r == name)
            || (!self.args.ignored_resource_groups.is_empty()
                && self.args.ignored_resource_groups.iter().any(|g| g == group))
    }

    /// `shouldDelegateResourceToDRA`.
    fn delegated(&self, name: Str, node: &NodeInfo, dra: &Dra) -> bool {
        self.dra_extended_resource
            && node.allocatable().scalar(name) <= 0
            && dra.extended_resources.contains_key(&name)
    }

    /// `fitsRequest`.
    pub fn insufficient(
        &self,
        request: &Resource,
        node: &NodeInfo,
        dra: &Dra,
    ) -> Vec<Insufficient> {
        let mut out = Vec::new();
        let alloc = node.allocatable();
        let used = &node.requested;
        let pods = node.pods.len() as i64;
        if pods + 1 > alloc.allowed_pods {
            // One pod more than allowed: a full node, which evicting pods can resolve.
            out.push(Insufficient {
                reason: "Too many pods".into(),
                shortfall: Shortfall {
                    resource: Str::from_static(&PODS),
                    requested: 1,
                    allocatable: alloc.allowed_pods,
                    used: pods,
                },
                unresolvable: false,
            });
        }
        if request.milli_cpu == 0
            && request.memory == 0
            && request.ephemeral_storage == 0
            && request.scalars.is_empty()
        {
            return out;
        }
        let mut check =
            |reason: &str, resource: Str, requested: i64, used: i64, allocatable: i64| {
                if requested > 0 && requested > allocatable - used {
                    out.push(Insufficient {
                        reason: reason.to_string(),
                        shortfall: Shortfall {
                            resource,
                            requested,
                            allocatable,
                            used,
                        },
                        unresolvable: requested > allocatable,
                    });
                }
            };
        check(
            "Insufficient cpu",
            Str::from_static(&CPU),
            request.milli_cpu,
            used.milli_cpu,
            alloc.milli_cpu,
        );
        check(
            "Insufficient memory",
            Str::from_static(&MEMORY),
            request.memory,
            used.memory,
            alloc.memory,
        );
        check(
            "Insufficient ephemeral-storage",
            Str::from_static(&EPHEMERAL_STORAGE),
            request.ephemeral_storage,
            used.ephemeral_storage,
            alloc.ephemeral_storage,
        );
        // Upstream walks a Go map here (random order); sorting by name makes the output stable.
        let mut scalars = request.scalars.clone();
        scalars.sort_by_key(|s| s.0);
        for (name, req) in scalars {
            if req == 0 || self.ignored(&name) || self.delegated(name, node, dra) {
                continue;
            }
            check(
                &format!("Insufficient {name}"),
                name,
                req,
                used.scalar(name),
                alloc.scalar(name),
            );
        }
        out
    }

    /// The node's usage with the pod, which the score is computed from.
    fn usage(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Usage {
        let computed;
        let requests = match state.read(self.pre_score) {
            Some(s) => &s.pod_requests,
            None => {
                computed = resource_allocation::pod_requests(cx.pod, &self.args.resources, false);
                &computed
            }
        };
        resource_allocation::usage(node, &self.args.resources, requests, false)
    }

    fn scorer(&self, requested: &[i64], allocatable: &[i64]) -> i64 {
        let weights = self.args.resources.iter().map(|r| r.weight);
        match &self.args.strategy {
            Strategy::LeastAllocated | Strategy::MostAllocated => {
                let most = self.args.strategy == Strategy::MostAllocated;
                let (mut node_score, mut weight_sum) = (0, 0);
                for ((&req, &cap), w) in requested.iter().zip(allocatable).zip(weights) {
                    if cap == 0 {
                        continue;
                    }
                    // int64 arithmetic as upstream's: it wraps on absurd capacities.
                    let s = if most {
                        req.min(cap).wrapping_mul(MAX_NODE_SCORE) / cap
                    } else if req > cap {
                        0
                    } else {
                        (cap - req).wrapping_mul(MAX_NODE_SCORE) / cap
                    };
                    node_score += s * w;
                    weight_sum += w;
                }
                if weight_sum == 0 {
                    0
                } else {
                    node_score / weight_sum
                }
            }
            Strategy::RequestedToCapacityRatio(shape) => {
                let (mut node_score, mut weight_sum) = (0, 0);
                for ((&req, &cap), w) in requested.iter().zip(allocatable).zip(weights) {
                    if cap == 0 {
                        continue;
                    }
                    let utilization = if req > cap {
                        100
                    } else {
                        req.wrapping_mul(100) / cap
                    };
                    let s = broken_linear(shape, utilization);
                    if s > 0 {
                        node_score += s * w;
                        weight_sum += w;
                    }
                }
                if weight_sum == 0 {
                    0
                } else {
                    (node_score as f64 / weight_sum as f64).round() as i64
                }
            }
        }
    }
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::PRE_SCORE | Points::SCORE
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        let requests = cx.pod.requests_with(&RequestOptions::default());
        state.write(
            self.pre_filter,
            PreFilterState {
                request: Resource::max_of_list(&requests),
            },
        );
        (Status::success(), None)
    }

    fn filter(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        let Some(s) = state.read(self.pre_filter) else {
            return Status::error(
                "error reading \"PreFilterNodeResourcesFit\" from cycleState: not found",
            );
        };
        let insufficient = self.insufficient(&s.request, node, &cx.snapshot.cluster.dra);
        if insufficient.is_empty() {
            return Status::success();
        }
        let code = if insufficient.iter().any(|i| i.unresolvable) {
            Code::UnschedulableAndUnresolvable
        } else {
            Code::Unschedulable
        };
        let facts = || {
            (0..)
                .zip(&insufficient)
                .map(|(reason, i)| Fact {
                    reason,
                    detail: Detail::Resource(i.shortfall),
                })
                .collect()
        };
        let status = cx.with_facts(Status::with_reasons(code, Vec::new()), facts);
        Status {
            reasons: insufficient.into_iter().map(|i| i.reason).collect(),
            ..status
        }
    }

    fn pre_score(&self, cx: &Cx, state: &mut CycleState, _nodes: &[&NodeInfo]) -> Status {
        state.write(
            self.pre_score,
            PreScoreState {
                pod_requests: resource_allocation::pod_requests(
                    cx.pod,
                    &self.args.resources,
                    false,
                ),
            },
        );
        Status::success()
    }

    fn score(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        let u = self.usage(cx, state, node);
        Ok(self.scorer(&u.requested, &u.allocatable))
    }

    fn score_inputs(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Vec<ScoreInput> {
        self.usage(cx, state, node).inputs(&self.args.resources)
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}
