//! One file per upstream plugin, named after it (`framework/plugins/<plugin>`), plus the registry
//! that builds them by upstream name.

pub mod csi_translation;
pub mod default_binder;
pub mod default_preemption;
pub mod dynamic_resources;
pub mod feature;
pub mod helper;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_declared_features;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_balanced_allocation;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod pod_topology_spread;
pub mod queue_sort;
pub mod resource_allocation;
pub mod scheduling_gates;
pub mod storage;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;

use crate::framework::plugin::Plugin;
use feature::Features;
use std::sync::Arc;

/// Arguments of the plugins that take them (`pluginConfig`), defaulted as v1 defaults them.
#[derive(Clone, Debug, Default)]
pub struct PluginArgs {
    pub node_resources_fit: node_resources_fit::Args,
    pub balanced_allocation: node_resources_balanced_allocation::Args,
    pub node_affinity: node_affinity::Args,
    pub default_preemption: crate::preemption::Args,
    pub pod_topology_spread: pod_topology_spread::Args,
    pub inter_pod_affinity: inter_pod_affinity::Args,
    pub volume_binding: volume_binding::Args,
}

/// The default profile's multiPoint plugins in order, with their score weights
/// (`getDefaultPlugins`; DynamicResourceAllocation is on in every modelled release, so
/// DynamicResources comes before DefaultPreemption).
pub fn default_plugins(features: &Features) -> Vec<(&'static str, Option<i64>)> {
    let mut plugins = vec![
        (scheduling_gates::NAME, None),
        (queue_sort::NAME, None),
        (node_unschedulable::NAME, None),
        (node_name::NAME, None),
        (taint_toleration::NAME, Some(3)),
        (node_affinity::NAME, Some(2)),
        (node_ports::NAME, None),
        (node_resources_fit::NAME, Some(1)),
        (volume_restrictions::NAME, None),
        (node_volume_limits::NAME, None),
        (volume_binding::NAME, None),
        (volume_zone::NAME, None),
        (pod_topology_spread::NAME, Some(2)),
        (inter_pod_affinity::NAME, Some(2)),
        (
            dynamic_resources::NAME,
            features.dynamic_resources_scores.then_some(2),
        ),
        (default_preemption::NAME, None),
        (node_resources_balanced_allocation::NAME, Some(1)),
        (image_locality::NAME, Some(1)),
        (default_binder::NAME, None),
    ];
    // Gated plugins go last, as `applyFeatureGates` appends them.
    if features.enable_node_declared_features {
        plugins.push((node_declared_features::NAME, None));
    }
    plugins
}

/// Builds the plugin named `name` (upstream name), or `None` if kubectl-sched does not know it.
pub fn new_plugin(name: &str, args: &PluginArgs, features: &Features) -> Option<Arc<dyn Plugin>> {
    let plugin: Arc<dyn Plugin> = match name {
        scheduling_gates::NAME => Arc::new(scheduling_gates::SchedulingGates),
        queue_sort::NAME => Arc::new(queue_sort::PrioritySort),
        node_unschedulable::NAME => Arc::new(node_unschedulable::NodeUnschedulable),
        node_name::NAME => Arc::new(node_name::NodeName),
        taint_toleration::NAME => Arc::new(taint_toleration::TaintToleration {
            reason_without_taint: features.untolerated_taint_reason_without_taint,
        }),
        node_affinity::NAME => Arc::new(node_affinity::NodeAffinity {
            args: args.node_affinity.clone(),
        }),
        node_ports::NAME => Arc::new(node_ports::NodePorts),
        node_resources_fit::NAME => Arc::new(node_resources_fit::NodeResourcesFit {
            args: args.node_resources_fit.clone(),
            dra_extended_resource: features.enable_dra_extended_resource,
        }),
        dynamic_resources::NAME => Arc::new(dynamic_resources::DynamicResources {
            features: *features,
        }),
        default_preemption::NAME => Arc::new(default_preemption::DefaultPreemption {
            args: args.default_preemption.clone(),
        }),
        node_resources_balanced_allocation::NAME => {
            Arc::new(node_resources_balanced_allocation::BalancedAllocation {
                args: args.balanced_allocation.clone(),
                scores_improvement: features.balanced_allocation_scores_improvement,
            })
        }
        pod_topology_spread::NAME => Arc::new(pod_topology_spread::PodTopologySpread::new(
            &args.pod_topology_spread,
        )),
        inter_pod_affinity::NAME => Arc::new(inter_pod_affinity::InterPodAffinity {
            args: args.inter_pod_affinity.clone(),
        }),
        image_locality::NAME => Arc::new(image_locality::ImageLocality {
            counts_image_volumes: features.image_locality_counts_image_volumes,
            image_volumes_in_threshold: features.image_locality_image_volumes_in_threshold,
        }),
        volume_restrictions::NAME => Arc::new(volume_restrictions::VolumeRestrictions),
        volume_zone::NAME => Arc::new(volume_zone::VolumeZone),
        volume_binding::NAME => Arc::new(volume_binding::VolumeBinding {
            scorer: features
                .enable_storage_capacity_scoring
                .then(|| args.volume_binding.shape.clone()),
        }),
        node_volume_limits::NAME => Arc::new(node_volume_limits::NodeVolumeLimits {
            portworx_needs_annotation: !features.portworx_always_migrated,
            volume_limit_scaling: features.enable_volume_limit_scaling,
        }),
        default_binder::NAME => Arc::new(default_binder::DefaultBinder),
        node_declared_features::NAME if features.node_declared_features_registered => {
            Arc::new(node_declared_features::NodeDeclaredFeatures {
                enabled: features.enable_node_declared_features,
                infers_user_namespaces: features.node_declared_features_infers_user_namespaces,
            })
        }
        _ => return None,
    };
    Some(plugin)
}
