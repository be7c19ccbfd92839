//! The scorer NodeResourcesFit and NodeResourcesBalancedAllocation share
//! (`noderesources/resource_allocation.go`): per configured resource, the node's allocatable and
//! what it would have requested with the pod on it.

use crate::framework::facts::ScoreInput;
use crate::model::intern::Str;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use crate::model::resource::{self, NonMissing, RequestOptions};

/// A resource and its weight (`config.ResourceSpec`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceSpec {
    pub name: Str,
    pub weight: i64,
}

/// The pod's request for each resource: cpu in millicores, the rest in units.
///
/// Upstream builds NodeResourcesFit's scorer without its feature flags, so Fit scores pods with
/// the 100m / 200Mi defaults, ignoring pod-level resources and resize status, while
/// BalancedAllocation reads both: `use_requested` selects which of the two this is.
pub fn pod_requests(pod: &Pod, resources: &[ResourceSpec], use_requested: bool) -> Vec<i64> {
    let opts = if use_requested {
        RequestOptions {
            use_status_resources: true,
            non_missing_defaults: NonMissing::None,
            skip_pod_level: false,
        }
    } else {
        RequestOptions {
            use_status_resources: false,
            non_missing_defaults: NonMissing::CpuAndMemory,
            skip_pod_level: true,
        }
    };
    let requests = pod.requests_with(&opts);
    resources
        .iter()
        .map(|r| match requests.get(&r.name) {
            Some(q) if r.name.as_str() == resource::CPU => q.milli_value(),
            Some(q) => q.value(),
            None => 0,
        })
        .collect()
}

/// `calculateResourceAllocatableRequest`: (allocatable, requested without the pod).
fn allocatable_and_requested(
    node: &NodeInfo,
    name: Str,
    pod_request: i64,
    use_requested: bool,
) -> (i64, i64) {
    let requested = if use_requested {
        &node.requested
    } else {
        &node.non_zero_requested
    };
    let alloc = node.allocatable();
    match name.as_str() {
        resource::CPU => (alloc.milli_cpu, requested.milli_cpu),
        resource::MEMORY => (alloc.memory, requested.memory),
        resource::EPHEMERAL_STORAGE => (alloc.ephemeral_storage, node.requested.ephemeral_storage),
        n if pod_request == 0 && resource::is_scalar(n) => (0, 0),
        _ if alloc.has_scalar(name) => (alloc.scalar(name), node.requested.scalar(name)),
        _ => (0, 0),
    }
}

/// Per configured resource, what a scorer compares: the node's requests with the pod and
/// without it, and its allocatable. Resources the node does not have are 0 everywhere.
pub struct Usage {
    pub requested: Vec<i64>,
    pub allocated: Vec<i64>,
    pub allocatable: Vec<i64>,
}

/// What `resourceAllocationScorer.score` hands its scorer: the node's usage of each resource.
pub fn usage(
    node: &NodeInfo,
    resources: &[ResourceSpec],
    pod_requests: &[i64],
    use_requested: bool,
) -> Usage {
    let n = resources.len();
    let mut usage = Usage {
        requested: vec![0; n],
        allocated: vec![0; n],
        allocatable: vec![0; n],
    };
    for (i, r) in resources.iter().enumerate() {
        let (alloc, req) = allocatable_and_requested(node, r.name, pod_requests[i], use_requested);
        if alloc != 0 {
            usage.allocatable[i] = alloc;
            usage.allocated[i] = req;
            usage.requested[i] = req + pod_requests[i];
        }
    }
    usage
}

impl Usage {
    /// The scorer's inputs: per resource the node has, requested with the pod and allocatable.
    pub fn inputs(&self, resources: &[ResourceSpec]) -> Vec<ScoreInput> {
        resources
            .iter()
            .enumerate()
            .filter(|&(i, _)| self.allocatable[i] != 0)
            .map(|(i, r)| ScoreInput::Resource {
                resource: r.name,
                requested: self.requested[i],
                allocatable: self.allocatable[i],
            })
            .collect()
    }
}
