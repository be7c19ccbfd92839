//! v1 defaulting of plugin arguments (`SetDefaults_<Plugin>Args`).

use super::{Args, KINDS, MAX_CUSTOM_PRIORITY_SCORE, ResourceSpec, ScoringStrategy, Shape, decode};
use crate::release::Features;

/// `DynamicResourcesBindingTimeoutDefault`: 10 minutes, in nanoseconds.
const DRA_BINDING_TIMEOUT_DEFAULT: i64 = 600 * 1_000_000_000;
/// `DynamicResourcesFilterTimeoutDefault` (the DRASchedulerFilterTimeout gate is on in every
/// modelled release).
const DRA_FILTER_TIMEOUT_DEFAULT: i64 = 10_000_000_000;

fn default_resources() -> Vec<ResourceSpec> {
    ["cpu", "memory"]
        .map(|name| ResourceSpec {
            name: name.to_string(),
            weight: 1,
        })
        .to_vec()
}

impl Args {
    /// The defaulted arguments of a plugin that has an args kind but no `pluginConfig` entry.
    pub fn defaults_for(plugin: &str, features: &Features) -> Option<Args> {
        if !KINDS.contains(&plugin) {
            return None;
        }
        let Ok(mut args) = decode(plugin, None, features) else {
            unreachable!("empty arguments always decode")
        };
        args.set_defaults(features);
        Some(args)
    }

    /// The v1 `SetDefaults_<Plugin>Args`.
    pub fn set_defaults(&mut self, features: &Features) {
        match self {
            Args::NodeResourcesFit {
                scoring_strategy, ..
            } => {
                let s = scoring_strategy.get_or_insert_with(|| ScoringStrategy {
                    kind: "LeastAllocated".into(),
                    resources: default_resources(),
                    shape: None,
                });
                if s.resources.is_empty() {
                    s.resources = default_resources();
                }
                s.resources
                    .iter_mut()
                    .filter(|r| r.weight == 0)
                    .for_each(|r| r.weight = 1);
            }
            Args::BalancedAllocation { resources } => {
                if resources.is_empty() {
                    *resources = default_resources();
                }
                resources
                    .iter_mut()
                    .filter(|r| r.weight == 0)
                    .for_each(|r| r.weight = 1);
            }
            Args::PodTopologySpread {
                defaulting_type, ..
            } => {
                if defaulting_type.is_empty() {
                    *defaulting_type = "System".into();
                }
            }
            Args::InterPodAffinity {
                hard_pod_affinity_weight,
                ..
            } => {
                hard_pod_affinity_weight.get_or_insert(1);
            }
            Args::DefaultPreemption {
                min_candidate_nodes_percentage,
                min_candidate_nodes_absolute,
            } => {
                min_candidate_nodes_percentage.get_or_insert(10);
                min_candidate_nodes_absolute.get_or_insert(100);
            }
            Args::VolumeBinding {
                bind_timeout_seconds,
                shape,
            } => {
                bind_timeout_seconds.get_or_insert(600);
                if features.enable_storage_capacity_scoring
                    && shape.as_ref().is_none_or(Vec::is_empty)
                {
                    *shape = Some(vec![
                        Shape {
                            utilization: 0,
                            score: MAX_CUSTOM_PRIORITY_SCORE,
                        },
                        Shape {
                            utilization: 100,
                            score: 0,
                        },
                    ]);
                }
            }
            Args::DynamicResources {
                filter_timeout,
                binding_timeout,
            } => {
                filter_timeout.get_or_insert(DRA_FILTER_TIMEOUT_DEFAULT);
                if features.binds_with_conditions() {
                    binding_timeout.get_or_insert(DRA_BINDING_TIMEOUT_DEFAULT);
                }
            }
            Args::NodeAffinity { .. } | Args::Raw(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Release;

    #[test]
    fn plugins_without_arguments_get_the_v1_defaults() {
        let f = Release::OLDEST.features();
        assert_eq!(
            Args::defaults_for("DefaultPreemption", &f),
            Some(Args::DefaultPreemption {
                min_candidate_nodes_percentage: Some(10),
                min_candidate_nodes_absolute: Some(100),
            })
        );
        let Some(Args::NodeResourcesFit {
            scoring_strategy: Some(s),
            ..
        }) = Args::defaults_for("NodeResourcesFit", &f)
        else {
            panic!("NodeResourcesFit has a scoring strategy by default");
        };
        assert_eq!(s.kind, "LeastAllocated");
        assert_eq!(s.resources, default_resources());
        assert_eq!(Args::defaults_for("ImageLocality", &f), None);
    }

    #[test]
    fn a_weight_of_zero_is_one() {
        let mut a = Args::BalancedAllocation {
            resources: vec![ResourceSpec {
                name: "cpu".into(),
                weight: 0,
            }],
        };
        a.set_defaults(&Release::OLDEST.features());
        assert_eq!(
            a,
            Args::BalancedAllocation {
                resources: vec![ResourceSpec {
                    name: "cpu".into(),
                    weight: 1,
                }],
            }
        );
    }
}
