//! The in-tree registry (`NewInTreeRegistry`): every plugin by its upstream name, built from its
//! arguments as its factory builds it; and the frameworks of a configuration's profiles
//! (`scheduler.New`: extenders, then `profile.NewMap`).

use super::helper::ShapePoint;
use super::resource_allocation::ResourceSpec;
use super::*;
use crate::config::args::{self, Args, Shape};
use crate::config::profile::default_plugins;
use crate::config::{Configuration, Failure};
use crate::framework::MAX_NODE_SCORE;
use crate::framework::cycle_state::StateSlots;
use crate::framework::plugin::Plugin;
use crate::framework::profile;
use crate::framework::runner::Framework;
use crate::model::intern::{Interner, Str};
use crate::model::node_selector::{NodeSelector, PreferredSchedulingTerms};
use crate::model::pod::DEFAULT_SCHEDULER_NAME;
use crate::release::{Features, ReleaseChoice};
use node_resources_fit::Strategy;
use std::collections::BTreeMap;
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

/// Builds the plugin named `name` (upstream name), or `None` if kubectl-sched does not know it.
pub fn new_plugin(
    name: &str,
    args: &PluginArgs,
    features: &Features,
    slots: &mut StateSlots,
) -> Option<Arc<dyn Plugin>> {
    let plugin: Arc<dyn Plugin> = match name {
        scheduling_gates::NAME => Arc::new(scheduling_gates::SchedulingGates),
        queue_sort::NAME => Arc::new(queue_sort::PrioritySort),
        node_unschedulable::NAME => Arc::new(node_unschedulable::NodeUnschedulable),
        node_name::NAME => Arc::new(node_name::NodeName),
        taint_toleration::NAME => Arc::new(taint_toleration::TaintToleration::new(
            slots,
            features.untolerated_taint_reason_without_taint,
        )),
        node_affinity::NAME => Arc::new(node_affinity::NodeAffinity::new(
            slots,
            args.node_affinity.clone(),
        )),
        node_ports::NAME => Arc::new(node_ports::NodePorts::new(slots)),
        node_resources_fit::NAME => Arc::new(node_resources_fit::NodeResourcesFit::new(
            slots,
            args.node_resources_fit.clone(),
            features.enable_dra_extended_resource,
        )),
        dynamic_resources::NAME => {
            Arc::new(dynamic_resources::DynamicResources::new(slots, *features))
        }
        default_preemption::NAME => Arc::new(default_preemption::DefaultPreemption {
            args: args.default_preemption.clone(),
        }),
        node_resources_balanced_allocation::NAME => {
            Arc::new(node_resources_balanced_allocation::BalancedAllocation::new(
                slots,
                args.balanced_allocation.clone(),
                features.balanced_allocation_scores_improvement,
            ))
        }
        pod_topology_spread::NAME => Arc::new(pod_topology_spread::PodTopologySpread::new(
            slots,
            &args.pod_topology_spread,
        )),
        inter_pod_affinity::NAME => Arc::new(inter_pod_affinity::InterPodAffinity::new(
            slots,
            args.inter_pod_affinity.clone(),
        )),
        image_locality::NAME => Arc::new(image_locality::ImageLocality {
            counts_image_volumes: features.image_locality_counts_image_volumes,
            image_volumes_in_threshold: features.image_locality_image_volumes_in_threshold,
        }),
        volume_restrictions::NAME => Arc::new(volume_restrictions::VolumeRestrictions::new(slots)),
        volume_zone::NAME => Arc::new(volume_zone::VolumeZone::new(slots)),
        volume_binding::NAME => Arc::new(volume_binding::VolumeBinding::new(
            slots,
            features
                .enable_storage_capacity_scoring
                .then(|| args.volume_binding.shape.clone()),
        )),
        node_volume_limits::NAME => Arc::new(node_volume_limits::NodeVolumeLimits::new(
            slots,
            !features.portworx_always_migrated,
            features.enable_volume_limit_scaling,
        )),
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

/// A configured shape in node-score units: its scores go up to 10
/// (`config.MaxCustomPriorityScore`), node scores to 100.
fn shape_points(shape: &[Shape]) -> Vec<ShapePoint> {
    shape
        .iter()
        .map(|p| ShapePoint {
            utilization: p.utilization.into(),
            score: i64::from(p.score)
                * (MAX_NODE_SCORE / i64::from(args::MAX_CUSTOM_PRIORITY_SCORE)),
        })
        .collect()
}

fn plugin_resources(resources: &[args::ResourceSpec]) -> Vec<ResourceSpec> {
    resources
        .iter()
        .map(|r| ResourceSpec {
            name: Str::new(&r.name),
            weight: r.weight,
        })
        .collect()
}

/// Why a plugin's factory refuses its arguments: an error kube-scheduler reports, or a
/// configuration it crashes on.
pub enum InitError {
    Invalid(String),
    Crash(String),
}

/// Sets a `pluginConfig` entry's (defaulted, validated) arguments into the plugins' arguments, as
/// the plugin's factory reads them; NodeResourcesFit's are validated here, as its factory does.
fn apply(
    args: &Args,
    out: &mut PluginArgs,
    features: &Features,
    strings: &Interner,
) -> Result<(), InitError> {
    match args {
        Args::NodeResourcesFit {
            ignored_resources,
            ignored_resource_groups,
            scoring_strategy,
        } => {
            if let Some(e) = args::node_resources_fit_error(
                ignored_resources,
                ignored_resource_groups,
                scoring_strategy.as_ref(),
                features,
            ) {
                return Err(InitError::Invalid(e));
            }
            let s = scoring_strategy.as_ref().expect("defaulted");
            let strategy = match s.kind.as_str() {
                "MostAllocated" => Strategy::MostAllocated,
                "RequestedToCapacityRatio" => {
                    let Some(shape) = &s.shape else {
                        return Err(InitError::Crash(
                                "scoringStrategy.type RequestedToCapacityRatio without scoringStrategy.requestedToCapacityRatio: kube-scheduler before 1.36 crashes (nil pointer dereference) on this configuration".into(),
                            ));
                    };
                    Strategy::RequestedToCapacityRatio(shape_points(shape))
                }
                _ => Strategy::LeastAllocated,
            };
            out.node_resources_fit = node_resources_fit::Args {
                ignored_resources: ignored_resources.clone(),
                ignored_resource_groups: ignored_resource_groups.clone(),
                strategy,
                resources: plugin_resources(&s.resources),
            };
        }
        Args::BalancedAllocation { resources } => {
            out.balanced_allocation.resources = plugin_resources(resources)
        }
        Args::PodTopologySpread {
            default_constraints,
            defaulting_type,
        } => {
            out.pod_topology_spread = pod_topology_spread::Args {
                default_constraints: default_constraints.clone(),
                defaulting_type: if defaulting_type == "List" {
                    pod_topology_spread::DefaultingType::List
                } else {
                    pod_topology_spread::DefaultingType::System
                },
            }
        }
        Args::InterPodAffinity {
            hard_pod_affinity_weight,
            ignore_preferred_terms_of_existing_pods,
        } => {
            out.inter_pod_affinity.hard_pod_affinity_weight = hard_pod_affinity_weight.unwrap_or(1);
            out.inter_pod_affinity
                .ignore_preferred_terms_of_existing_pods = *ignore_preferred_terms_of_existing_pods;
        }
        Args::NodeAffinity { added_affinity } => {
            let a = added_affinity.as_ref();
            out.node_affinity = node_affinity::Args {
                added_required: a
                    .and_then(|a| {
                        a.required_during_scheduling_ignored_during_execution
                            .as_ref()
                    })
                    .map(|ns| NodeSelector::parse(ns, strings)),
                added_preferred: a
                    .and_then(|a| {
                        a.preferred_during_scheduling_ignored_during_execution
                            .as_deref()
                    })
                    .filter(|t| !t.is_empty())
                    .map(|t| {
                        PreferredSchedulingTerms::parse(t, strings).map_err(InitError::Invalid)
                    })
                    .transpose()?,
            };
        }
        Args::DefaultPreemption {
            min_candidate_nodes_percentage,
            min_candidate_nodes_absolute,
        } => {
            out.default_preemption.min_candidate_nodes_percentage =
                min_candidate_nodes_percentage.unwrap_or(10);
            out.default_preemption.min_candidate_nodes_absolute =
                min_candidate_nodes_absolute.unwrap_or(100);
        }
        Args::VolumeBinding {
            shape: Some(shape), ..
        } => out.volume_binding.shape = shape_points(shape),
        // Nothing offline depends on them.
        Args::VolumeBinding { .. } | Args::DynamicResources { .. } | Args::Raw(_) => {}
    }
    Ok(())
}

/// `scheduler.New`: extenders, then `profile.NewMap`: one framework per profile, each with the
/// configuration's extenders.
pub fn frameworks(cfg: &Configuration, release: ReleaseChoice) -> Result<Vec<Framework>, Failure> {
    let features = release.features();
    // The strings of the plugins' arguments (added node affinity).
    let strings = Interner::new();
    let mut profiles = cfg.profiles.clone();
    if !cfg.extenders.is_empty() {
        // Resources managed by extenders and ignored by the scheduler replace NodeResourcesFit's
        // ignoredResources in every profile.
        let ignored: Vec<String> = cfg
            .extenders
            .iter()
            .flat_map(|e| {
                e.managed_resources
                    .iter()
                    .filter(|r| r.ignored_by_scheduler)
                    .map(|r| r.name.clone())
            })
            .collect();
        if !ignored.is_empty() {
            for p in &mut profiles {
                let fit = p
                    .plugin_config
                    .iter_mut()
                    .find(|c| c.name == node_resources_fit::NAME);
                match fit.map(|c| &mut c.args) {
                    Some(Args::NodeResourcesFit {
                        ignored_resources, ..
                    }) => *ignored_resources = ignored.clone(),
                    _ => {
                        return Err(Failure::Rejected(
                            "couldn't build extenders: can't find NodeResourcesFitArgs in plugin config".into(),
                        ));
                    }
                }
            }
        }
    }

    let percentage = cfg.percentage_of_nodes_to_score;
    let mut frameworks = Vec::new();
    for p in &profiles {
        let mut plugin_args = PluginArgs::default();
        let mut init_errors: BTreeMap<&str, String> = BTreeMap::new();
        let needed = p.plugins.needed();
        for c in &p.plugin_config {
            match apply(&c.args, &mut plugin_args, &features, &strings) {
                Ok(()) => {}
                Err(InitError::Crash(message)) if needed.contains(c.name.as_str()) => {
                    return Err(Failure::Crash(message));
                }
                Err(InitError::Invalid(message)) => {
                    init_errors.insert(c.name.as_str(), message);
                }
                Err(InitError::Crash(_)) => {}
            }
        }
        let fw = profile::build(
            &p.scheduler_name,
            &p.plugins,
            p.percentage_of_nodes_to_score.or(percentage),
            release,
            &mut |name, slots| match init_errors.get(name) {
                Some(e) => Err(e.clone()),
                None => Ok(new_plugin(name, &plugin_args, &features, slots)),
            },
        )
        .map_err(|e| {
            Failure::Rejected(format!(
                "initializing profiles: creating profile for scheduler name {}: {e}",
                p.scheduler_name
            ))
        })?;
        frameworks.push(Framework {
            extenders: cfg.extenders.clone(),
            ..fw
        });
    }
    Ok(frameworks)
}

/// The release's default profile.
pub fn default_framework(release: ReleaseChoice) -> Framework {
    let args = PluginArgs::default();
    let features = release.features();
    profile::build(
        DEFAULT_SCHEDULER_NAME,
        &default_plugins(release),
        None,
        release,
        &mut |name, slots| Ok(new_plugin(name, &args, &features, slots)),
    )
    .expect("the default plugins build")
}

#[cfg(test)]
mod tests;
