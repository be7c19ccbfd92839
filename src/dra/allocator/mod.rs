//! The structured allocator (`k8s.io/dynamic-resource-allocation/structured`): for one node,
//! the first way to give every pending claim of a pod its devices. Claims in order, requests in
//! claim order, devices one after the other from the pools the node can see; a device must be
//! free, pass its class's selectors and then the request's, tolerate its taints, fit its shared
//! counters and consumable capacity, and keep the claim's constraints. A dead end backtracks.
//!
//! Upstream ships three variants and picks the oldest that supports the enabled feature gates:
//! with v1.34's defaults the "experimental" one, from v1.35 on the "incubating" one. Where
//! they decide differently (incomplete and invalid pools) `AllocatorFeatures` says which way;
//! pools and slices are taken in name order, which v1.36 does and earlier releases leave to Go
//! map order.
//!
//! One concern per file, as upstream splits its allocator: `pools` gathers what the node can see
//! (`pools_incubating.go`), `search` walks claims, requests and devices (`allocateOne`,
//! `allocateDevice`), `constraints` keeps `matchAttribute`/`distinctAttribute` (`constraint.go`),
//! `counters` the shared counters of partitionable devices (`checkAvailableCounters`),
//! `capacity` consumable capacity (`consumable_capacity.go`), `rollback` what each release undoes
//! when a candidate device is rejected or backtracked (`rollbackDevice`), and `census` explains,
//! device by device, what a node offers a request.

mod capacity;
mod census;
mod constraints;
mod counters;
mod pools;
mod rollback;
mod search;
#[cfg(test)]
mod test_support;

pub use census::{ExcludedDevice, RequestCensus, census};
pub use constraints::lookup_attribute;

use crate::model::dra::objects::{
    AllocatedState, ClaimSpec, Device, DeviceId, Dra, NodeScope, Slice,
};
use crate::model::intern::Str;
use crate::model::labels::Labels;
use crate::model::node_selector::NodeSelector;
use crate::model::quantity::Quantity;
use search::{Location, Position, Search, Stop};
use std::collections::BTreeMap;

/// What the allocator may do, from the release's feature gates and code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocatorFeatures {
    pub admin_access: bool,
    pub prioritized_list: bool,
    pub partitionable_devices: bool,
    pub device_taints: bool,
    /// DRADeviceBindingConditions and DRAResourceClaimDeviceStatus together.
    pub binding_and_status: bool,
    pub consumable_capacity: bool,
    /// The incubating allocator (1.35+): incomplete and invalid pools are skipped, not used or
    /// fatal, and a pool's completeness counts its slices for other nodes too.
    pub skips_unusable_pools: bool,
    /// A rejected or backtracked device gives back everything it took: counters, constraint
    /// entries, its in-use mark and its share of capacity (1.36.3+). Before, some of it stays
    /// taken for the rest of the search on the node (`rollback` says what).
    pub rolls_back_rejected_devices: bool,
    /// Counter caches are keyed by driver and pool (1.36.4+), not by pool name alone.
    pub counters_by_pool_id: bool,
    /// Counters consumed by devices shared through consumable capacity count (1.36.2+).
    pub counters_count_shared_devices: bool,
}

/// The node being allocated for.
#[derive(Clone, Copy)]
pub struct NodeRef<'a> {
    pub name: Str,
    pub labels: &'a Labels,
}

/// A claim the pod needs allocated.
#[derive(Clone, Copy)]
pub struct ClaimInput<'a> {
    pub namespace: Str,
    pub name: Str,
    pub spec: &'a ClaimSpec,
}

/// Where an allocated device can be used, which pins the claim's allocation
/// (`createNodeSelector`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceLocation {
    /// On the node it was allocated for (a node-local device, or one that binds to its node).
    Node,
    Selector(NodeSelector),
    Everywhere,
}

/// One allocated device of a claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceResult {
    /// `<request>` or `<request>/<subrequest>`.
    pub request: String,
    pub id: DeviceId,
    pub admin_access: bool,
    /// Allocated as one share of a device that allows multiple allocations.
    pub shared: bool,
    pub consumed_capacity: BTreeMap<Str, Quantity>,
    pub location: DeviceLocation,
}

pub(super) fn location(slice: &Slice, device: &Device) -> DeviceLocation {
    if device.binds_to_node {
        return DeviceLocation::Node;
    }
    match &device.node_scope {
        Some(NodeScope::Name(_)) => DeviceLocation::Node,
        Some(NodeScope::Selector(s)) => DeviceLocation::Selector(s.clone()),
        Some(NodeScope::All | NodeScope::Unknown) => DeviceLocation::Everywhere,
        None => match (&slice.node_name, &slice.node_selector) {
            (Some(_), _) => DeviceLocation::Node,
            (None, Some(s)) => DeviceLocation::Selector(s.clone()),
            (None, None) => DeviceLocation::Everywhere,
        },
    }
}

/// Why allocation stopped without an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// Bad input (a CEL error, an unusable request): the cycle aborts with this text.
    Fatal(String),
    /// Nothing fits on this node and some pool was invalid (`ErrFailedAllocationOnNode`): the
    /// node is rejected with this text.
    Node(String),
}

pub(super) fn kobj(c: &ClaimInput) -> String {
    format!("{}/{}", c.namespace, c.name)
}

/// Allocates `claims` on `node`: `Ok(None)` when there is no solution.
pub fn allocate(
    dra: &Dra,
    features: AllocatorFeatures,
    allocated: &AllocatedState,
    node: NodeRef,
    claims: &[ClaimInput],
) -> Result<Option<Vec<Vec<DeviceResult>>>, AllocError> {
    let mut s = Search::new(dra, features, allocated, node, claims);
    s.prepare().map_err(AllocError::Fatal)?;
    match s.allocate_one(Position::default(), false, Location::default()) {
        Ok(true) => Ok(Some(s.results)),
        Ok(false) | Err(Stop::TooMany) => {
            if s.features.skips_unusable_pools && s.pools.iter().any(|p| p.invalid.is_some()) {
                return Err(AllocError::Node(
                    "invalid resource pools were encountered".into(),
                ));
            }
            Ok(None)
        }
        Err(Stop::Fatal(e)) => Err(AllocError::Fatal(e)),
    }
}
