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
        }
    }
}
