//! What a release switches on (upstream's `plugins/feature.Features`): the default feature gates
//! the scheduler reads, and the code changes upstream made without a gate. Plugins and the
//! framework receive it when they are built, as upstream's plugin factories do.

use super::Release;
use super::gates::Gates;

/// What the release does: its gates (the release's defaults, or `--feature-gates`) and its code.
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
    /// `VolumeLimitScaling`: NodeVolumeLimits rejects nodes without a CSI driver the pod's
    /// volumes need, when its CSIDriver opts in.
    pub enable_volume_limit_scaling: bool,
    /// `NodeDeclaredFeatures`: the NodeDeclaredFeatures plugin filters, and joins the default
    /// profile.
    pub enable_node_declared_features: bool,

    // What the plugin registry holds (a configuration naming a plugin the release does not have
    // is refused).
    /// NodeDeclaredFeatures (1.35).
    pub node_declared_features_registered: bool,
    /// Its feature registry infers that a pod with host networking in a user namespace needs
    /// UserNamespacesHostNetworkSupport (1.36); 1.35's infers restart rules only.
    pub node_declared_features_infers_user_namespaces: bool,

    // Code changes without a gate.
    /// TaintToleration's reason no longer names the taint: "node(s) had untolerated taint(s)"
    /// (1.35.0, and 1.34.2 onwards).
    pub untolerated_taint_reason_without_taint: bool,
    /// DynamicResources is a Score plugin with weight 2 in the default profile (1.35).
    pub dynamic_resources_scores: bool,
    /// NodeResourcesBalancedAllocation scores the change in balance the pod brings (1.36).
    pub balanced_allocation_scores_improvement: bool,
    /// ImageLocality counts image volumes' images (1.36)...
    pub image_locality_counts_image_volumes: bool,
    /// ...and in its threshold, as images (1.37).
    pub image_locality_image_volumes_in_threshold: bool,
    /// In-tree Portworx volumes count as CSI volumes on every node with a CSINode (1.36 removed
    /// the CSIMigrationPortworx gate and its per-node annotation check).
    pub portworx_always_migrated: bool,
    /// DynamicResourcesArgs has `bindingTimeout` (1.35).
    pub dra_binding_timeout_field: bool,
    /// NodeResourcesFitArgs' `requestedToCapacityRatio` must go with its type, and its shape
    /// errors name it (1.36).
    pub fit_args_ratio_with_type: bool,
    /// A successful preemption says where and how many pods it evicts in the FailedScheduling
    /// message (1.37).
    pub preemption_success_message: bool,
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
    /// Devices with binding conditions make PreBind wait, bounded by `bindingTimeout`.
    pub fn binds_with_conditions(&self) -> bool {
        self.enable_dra_device_binding_conditions && self.enable_dra_resource_claim_device_status
    }

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
            enable_volume_limit_scaling: since(37),
            enable_node_declared_features: since(36),
            node_declared_features_registered: since(35),
            node_declared_features_infers_user_namespaces: since(36),
            untolerated_taint_reason_without_taint: release.at_least(34, 2),
            dynamic_resources_scores: since(35),
            balanced_allocation_scores_improvement: since(36),
            image_locality_counts_image_volumes: since(36),
            image_locality_image_volumes_in_threshold: since(37),
            portworx_always_migrated: since(36),
            dra_binding_timeout_field: since(35),
            fit_args_ratio_with_type: since(36),
            preemption_success_message: since(37),
            dra_incubating_allocator: since(35),
            dra_rolls_back_rejected_devices: release.at_least(36, 3),
            dra_counters_by_pool_id: release.at_least(36, 4),
            dra_counters_count_shared_devices: release.at_least(36, 2),
            dra_score_handles_allocated_claims: release.at_least(36, 2),
            dra_not_owner_message_capitalised: since(36),
        }
    }

    /// The release's switches with the gates in force: each gate `gates::MODELLED` names sets its
    /// field (a gate the release does not have is off, as `of` has it).
    pub fn with_gates(release: Release, gates: &Gates) -> Features {
        let on = |name: &str| gates.is_on(name);
        Features {
            enable_dra_prioritized_list: on("DRAPrioritizedList"),
            enable_dra_admin_access: on("DRAAdminAccess"),
            enable_dra_consumable_capacity: on("DRAConsumableCapacity"),
            enable_dra_device_taints: on("DRADeviceTaints"),
            enable_dra_device_binding_conditions: on("DRADeviceBindingConditions"),
            enable_dra_partitionable_devices: on("DRAPartitionableDevices"),
            enable_dra_extended_resource: on("DRAExtendedResource"),
            enable_dra_resource_claim_device_status: on("DRAResourceClaimDeviceStatus"),
            enable_dra_scheduler_filter_timeout: on("DRASchedulerFilterTimeout"),
            enable_storage_capacity_scoring: on("StorageCapacityScoring"),
            enable_volume_limit_scaling: on("VolumeLimitScaling"),
            enable_node_declared_features: on("NodeDeclaredFeatures"),
            ..Features::of(release)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_gates_are_the_releases_switches() {
        for release in Release::all_modelled() {
            assert_eq!(
                Features::with_gates(release, &Gates::defaults(release)),
                Features::of(release),
                "{release}"
            );
        }
    }

    #[test]
    fn a_gate_sets_its_switch() {
        let release = Release::parse("1.35").unwrap();
        let (gates, _) = Gates::parse(release, &["NodeDeclaredFeatures=true".into()]).unwrap();
        let f = Features::with_gates(release, &gates);
        assert!(f.enable_node_declared_features && f.node_declared_features_registered);
        assert!(!Features::of(release).enable_node_declared_features);
    }
}
