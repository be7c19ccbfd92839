//! The release switches (`Features`), each with the plugin whose filter, score or message it
//! changes: a difference between two releases' answers is put down to the switches that differ
//! between them and belong to a plugin whose output differs.

use crate::release::Features;
use serde::Serialize;

/// A switch of `Features`.
pub struct Switch {
    /// The field of `Features`.
    pub name: &'static str,
    /// The feature gate it follows, if it is one.
    pub gate: Option<&'static str>,
    /// The upstream plugin it changes.
    pub plugin: &'static str,
    /// What it does when on.
    pub what: &'static str,
    value: fn(&Features) -> bool,
}

macro_rules! switches {
    ($($field:ident, $gate:expr, $plugin:expr, $what:expr;)*) => {
        /// Every switch of `Features`.
        pub const SWITCHES: &[Switch] = &[$(Switch {
            name: stringify!($field),
            gate: $gate,
            plugin: $plugin,
            what: $what,
            value: |f| f.$field,
        }),*];

        #[cfg(test)]
        /// Names every field, so a new switch cannot be left out of `SWITCHES`.
        fn _every_field(f: Features) -> Features {
            let Features { $($field),* } = f;
            Features { $($field),* }
        }
    };
}

const DRA: &str = "DynamicResources";

switches! {
    enable_dra_prioritized_list, Some("DRAPrioritizedList"), DRA, "firstAvailable subrequests";
    enable_dra_admin_access, Some("DRAAdminAccess"), DRA, "admin access to devices in use";
    enable_dra_consumable_capacity, Some("DRAConsumableCapacity"), DRA, "devices shared through consumable capacity";
    enable_dra_device_taints, Some("DRADeviceTaints"), DRA, "device taints must be tolerated";
    enable_dra_device_binding_conditions, Some("DRADeviceBindingConditions"), DRA, "devices with binding conditions come last";
    enable_dra_partitionable_devices, Some("DRAPartitionableDevices"), DRA, "partitions share counters";
    enable_dra_extended_resource, Some("DRAExtendedResource"), "NodeResourcesFit", "extended resources backed by DRA devices";
    enable_dra_resource_claim_device_status, Some("DRAResourceClaimDeviceStatus"), DRA, "device status in claims";
    enable_dra_scheduler_filter_timeout, Some("DRASchedulerFilterTimeout"), DRA, "a time limit on Filter";
    enable_storage_capacity_scoring, Some("StorageCapacityScoring"), "VolumeBinding", "scores nodes by free storage capacity";
    enable_volume_limit_scaling, Some("VolumeLimitScaling"), "NodeVolumeLimits", "a node must have the CSI driver a volume needs, where the driver asks";
    enable_node_declared_features, Some("NodeDeclaredFeatures"), "NodeDeclaredFeatures", "filters nodes on the features pods need, in the default profile";
    node_declared_features_registered, None, "NodeDeclaredFeatures", "the plugin exists";
    node_declared_features_infers_user_namespaces, None, "NodeDeclaredFeatures", "host networking in a user namespace needs UserNamespacesHostNetworkSupport declared";
    untolerated_taint_reason_without_taint, None, "TaintToleration", "the reason no longer names the taint";
    dynamic_resources_scores, None, DRA, "scores nodes (weight 2)";
    balanced_allocation_scores_improvement, None, "NodeResourcesBalancedAllocation", "scores the change in balance the pod brings, not the balance with it";
    image_locality_counts_image_volumes, None, "ImageLocality", "counts image volumes' images";
    image_locality_image_volumes_in_threshold, None, "ImageLocality", "counts image volumes in its threshold";
    portworx_always_migrated, None, "NodeVolumeLimits", "in-tree Portworx volumes always count as CSI volumes";
    dra_binding_timeout_field, None, DRA, "DynamicResourcesArgs has bindingTimeout";
    fit_args_ratio_with_type, None, "NodeResourcesFit", "requestedToCapacityRatio goes with its type";
    preemption_success_message, None, "DefaultPreemption", "says where it makes room in the FailedScheduling message";
    dra_incubating_allocator, None, DRA, "the incubating allocator: incomplete and invalid pools skipped";
    dra_rolls_back_rejected_devices, None, DRA, "the allocator gives back what a device it gave up took";
    dra_counters_by_pool_id, None, DRA, "shared counters per driver and pool";
    dra_counters_count_shared_devices, None, DRA, "counters of devices shared through consumable capacity count";
    dra_score_handles_allocated_claims, None, DRA, "scores pods mixing allocated and new claims";
    dra_not_owner_message_capitalised, None, DRA, "\"Pod is not owner\", capitalised";
}

/// A switch set differently in the two releases.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cause {
    pub switch: &'static str,
    pub gate: Option<&'static str>,
    pub plugin: &'static str,
    pub what: &'static str,
    pub base: bool,
    pub other: bool,
}

/// The switches set differently in `base` and `other`.
pub fn differing(base: &Features, other: &Features) -> Vec<Cause> {
    SWITCHES
        .iter()
        .filter(|s| (s.value)(base) != (s.value)(other))
        .map(|s| Cause {
            switch: s.name,
            gate: s.gate,
            plugin: s.plugin,
            what: s.what,
            base: (s.value)(base),
            other: (s.value)(other),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Release;

    #[test]
    fn releases_differ_in_their_switches() {
        let r = |s: &str| Release::parse(s).unwrap().features();
        let names =
            |a, b| -> Vec<&str> { differing(&r(a), &r(b)).iter().map(|c| c.switch).collect() };
        assert_eq!(
            names("v1.36.2", "v1.36.3"),
            ["dra_rolls_back_rejected_devices"]
        );
        assert_eq!(
            names("v1.34.1", "v1.34.2"),
            ["untolerated_taint_reason_without_taint"]
        );
        assert!(names("1.35", "1.36").contains(&"balanced_allocation_scores_improvement"));
        assert!(names("1.36", "1.36").is_empty());
        for s in SWITCHES {
            if let Some(g) = s.gate {
                assert!(crate::release::gates::MODELLED.contains(&g), "{g}");
            }
        }
    }
}
