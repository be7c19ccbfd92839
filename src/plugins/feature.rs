//! What a release switches on (`plugins/feature.Features`): the default feature gates the
//! scheduler reads, and the code changes upstream made without a gate. Plugins and the framework
//! receive it when they are built, as upstream's plugin factories do.

use crate::release::Release;

/// Every field is what the release does by default; kubectl-sched models default gates only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    // Feature gates, by their upstream names.
    /// `DRAPrioritizedList`: `firstAvailable` subrequests.
    pub enable_dra_prioritized_list: bool,
    /// `DRAAdminAccess`.
    pub enable_dra_admin_access: bool,
    /// `DRAConsumableCapacity`.
    pub enable_dra_consumable_capacity: bool,
    /// `DRADeviceTaints`.
    pub enable_dra_device_taints: bool,
    /// `DRADeviceBindingConditions`.
    pub enable_dra_device_binding_conditions: bool,
    /// `DRAPartitionableDevices`.
    pub enable_dra_partitionable_devices: bool,
    /// `DRAExtendedResource`: extended resources backed by DRA devices.
    pub enable_dra_extended_resource: bool,
    /// `DRAResourceClaimDeviceStatus`.
    pub enable_dra_resource_claim_device_status: bool,
    /// `DRASchedulerFilterTimeout`.
    pub enable_dra_scheduler_filter_timeout: bool,
    /// `StorageCapacityScoring`: VolumeBinding scores nodes by free storage capacity.
    pub enable_storage_capacity_scoring: bool,
    /// `NodeDeclaredFeatures`: the NodeDeclaredFeatures plugin joins the default profile.
    pub enable_node_declared_features: bool,

    // Code changes without a gate.
    /// TaintToleration's reason no longer names the taint: "node(s) had untolerated taint(s)"
    /// (1.35.0, and 1.34.2 onwards).
    pub untolerated_taint_reason_without_taint: bool,
    /// DynamicResources is a Score plugin with weight 2 in the default profile (1.35).
    pub dynamic_resources_scores: bool,
    /// NodeResourcesBalancedAllocation scores the change in balance the pod brings (1.36).
    pub balanced_allocation_scores_improvement: bool,
    /// The structured allocator is the "incubating" variant (1.35): with 1.34's gates upstream
    /// selects the "experimental" one, which uses incomplete pools and fails on invalid ones.
    pub dra_incubating_allocator: bool,
    /// The allocator gives back the counters and constraint entries of a device it rejects or
    /// backtracks from (1.36.3).
    pub dra_rolls_back_rejected_devices: bool,
    /// Shared-counter caches are keyed by driver and pool, not by pool name (1.36.4).
    pub dra_counters_by_pool_id: bool,
    /// Counters consumed by devices shared through consumable capacity count (1.36.2).
    pub dra_counters_count_shared_devices: bool,
    /// DynamicResources' Score finds the allocation of each claim when a pod mixes allocated
    /// and unallocated claims (1.36.2); before, it fails the cycle.
    pub dra_score_handles_allocated_claims: bool,
    /// "ResourceClaim … was not created for Pod … (Pod is not owner)", capitalised (1.36).
    pub dra_not_owner_message_capitalised: bool,
}

impl Features {
    pub fn of(release: Release) -> Features {
        let since = |minor: u16| release.minor >= minor;
        Features {
            enable_dra_prioritized_list: true,
            enable_dra_admin_access: true,
            enable_dra_consumable_capacity: since(36),
            enable_dra_device_taints: since(36),
            enable_dra_device_binding_conditions: since(36),
            enable_dra_partitionable_devices: since(36),
            enable_dra_extended_resource: since(36),
            enable_dra_resource_claim_device_status: true,
            enable_dra_scheduler_filter_timeout: true,
            enable_storage_capacity_scoring: since(37),
            enable_node_declared_features: since(36),
            untolerated_taint_reason_without_taint: release.at_least(34, 2),
            dynamic_resources_scores: since(35),
            balanced_allocation_scores_improvement: since(36),
            dra_incubating_allocator: since(35),
            dra_rolls_back_rejected_devices: release.at_least(36, 3),
            dra_counters_by_pool_id: release.at_least(36, 4),
            dra_counters_count_shared_devices: release.at_least(36, 2),
            dra_score_handles_allocated_claims: release.at_least(36, 2),
            dra_not_owner_message_capitalised: since(36),
        }
    }
}
