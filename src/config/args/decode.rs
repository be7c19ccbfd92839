//! Decoding one plugin's arguments strictly, as `PluginConfig.decodeNestedObjects` does: the
//! kind checked, each field typed as Go types it, unknown and repeated fields reported.

use super::{Args, KINDS, ResourceSpec, ScoringStrategy, Shape};
use crate::config::decode::{Field, Obj, Res, Strict};
use crate::config::node::Node;
use crate::release::Features;
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

/// A decoding failure of one plugin's arguments.
pub enum DecodeError {
    /// Stops decoding (a value of the wrong type, a wrong kind).
    Fatal(String),
    /// Unknown or repeated fields: reported with the others once decoding finished.
    Strict(String),
}

/// `PluginConfig.decodeNestedObjects`.
pub fn decode(plugin: &str, raw: Option<&Node>, features: &Features) -> Result<Args, DecodeError> {
    if !KINDS.contains(&plugin) {
        return Ok(Args::Raw(raw.cloned()));
    }
    let empty = Node::Map(Vec::new());
    let node = match raw {
        None | Some(Node::Null) => &empty,
        Some(n) => n,
    };
    let go_struct: &'static str = match plugin {
        "DefaultPreemption" => "DefaultPreemptionArgs",
        "InterPodAffinity" => "InterPodAffinityArgs",
        "NodeResourcesBalancedAllocation" => "NodeResourcesBalancedAllocationArgs",
        "NodeResourcesFit" => "NodeResourcesFitArgs",
        "PodTopologySpread" => "PodTopologySpreadArgs",
        "VolumeBinding" => "VolumeBindingArgs",
        "NodeAffinity" => "NodeAffinityArgs",
        _ => "DynamicResourcesArgs",
    };
    let fatal = |e: String| DecodeError::Fatal(format!("decoding args for plugin {plugin}: {e}"));
    let mut o = Obj::root(node, go_struct).map_err(fatal)?;
    let (api_version, kind) = o.type_meta().map_err(fatal)?;
    let group = api_version
        .as_deref()
        .map_or(Some("kubescheduler.config.k8s.io"), |gv| {
            gv.rsplit_once('/').map(|(g, _)| g)
        });
    let kind = kind.unwrap_or_else(|| go_struct.to_string());
    if group != Some("kubescheduler.config.k8s.io") || kind != go_struct {
        let gv = api_version.unwrap_or_else(|| crate::config::v1::GROUP_VERSION.to_string());
        return Err(fatal(format!(
            "no kind {kind:?} is registered for version {gv:?} in scheme {:?}",
            crate::config::SCHEME
        )));
    }
    let mut strict = Strict::default();
    let args = decode_fields(plugin, &mut o, &mut strict, features).map_err(fatal)?;
    o.finish(&mut strict);
    if strict.is_empty() {
        Ok(args)
    } else {
        Err(DecodeError::Strict(format!(
            "decoding args for plugin {plugin}: strict decoding error: {}",
            strict.into_messages().join(", ")
        )))
    }
}

fn resource_specs(f: Field, strict: &mut Strict) -> Res<Vec<ResourceSpec>> {
    f.items("[]v1.ResourceSpec")?
        .iter()
        .map(|i| {
            let mut o = i.field().object("ResourceSpec", "v1.ResourceSpec")?;
            let r = ResourceSpec {
                name: o.string("name")?.unwrap_or_default(),
                weight: o.i64("weight")?.unwrap_or(0),
            };
            o.finish(strict);
            Ok(r)
        })
        .collect()
}

fn shape(f: Field, strict: &mut Strict) -> Res<Vec<Shape>> {
    f.items("[]v1.UtilizationShapePoint")?
        .iter()
        .map(|i| {
            let mut o = i
                .field()
                .object("UtilizationShapePoint", "v1.UtilizationShapePoint")?;
            let s = Shape {
                utilization: o.i32("utilization")?.unwrap_or(0),
                score: o.i32("score")?.unwrap_or(0),
            };
            o.finish(strict);
            Ok(s)
        })
        .collect()
}

fn label_selector(f: Field, strict: &mut Strict) -> Res<meta::LabelSelector> {
    let mut o = f.object("LabelSelector", "v1.LabelSelector")?;
    let sel = meta::LabelSelector {
        match_labels: o.with("matchLabels", |f| f.string_map())?,
        match_expressions: o.with("matchExpressions", |f| {
            f.items("[]v1.LabelSelectorRequirement")?
                .iter()
                .map(|i| {
                    let mut o = i
                        .field()
                        .object("LabelSelectorRequirement", "v1.LabelSelectorRequirement")?;
                    let r = meta::LabelSelectorRequirement {
                        key: o.string("key")?.unwrap_or_default(),
                        operator: o
                            .with("operator", |f| f.string_of("v1.LabelSelectorOperator"))?
                            .unwrap_or_default(),
                        values: o.strings("values")?,
                    };
                    o.finish(strict);
                    Ok(r)
                })
                .collect()
        })?,
    };
    o.finish(strict);
    Ok(sel)
}

fn topology_spread_constraint(f: Field, strict: &mut Strict) -> Res<k8s::TopologySpreadConstraint> {
    let mut o = f.object("TopologySpreadConstraint", "v1.TopologySpreadConstraint")?;
    let c = k8s::TopologySpreadConstraint {
        max_skew: o.i32("maxSkew")?.unwrap_or(0),
        topology_key: o.string("topologyKey")?.unwrap_or_default(),
        when_unsatisfiable: o
            .with("whenUnsatisfiable", |f| {
                f.string_of("v1.UnsatisfiableConstraintAction")
            })?
            .unwrap_or_default(),
        label_selector: o.with("labelSelector", |f| label_selector(f, strict))?,
        min_domains: o.i32("minDomains")?,
        node_affinity_policy: o.with("nodeAffinityPolicy", |f| {
            f.string_of("v1.NodeInclusionPolicy")
        })?,
        node_taints_policy: o.with("nodeTaintsPolicy", |f| {
            f.string_of("v1.NodeInclusionPolicy")
        })?,
        match_label_keys: o.strings("matchLabelKeys")?,
    };
    o.finish(strict);
    Ok(c)
}

fn node_selector_requirements(
    f: Field,
    strict: &mut Strict,
) -> Res<Vec<k8s::NodeSelectorRequirement>> {
    f.items("[]v1.NodeSelectorRequirement")?
        .iter()
        .map(|i| {
            let mut o = i
                .field()
                .object("NodeSelectorRequirement", "v1.NodeSelectorRequirement")?;
            let r = k8s::NodeSelectorRequirement {
                key: o.string("key")?.unwrap_or_default(),
                operator: o
                    .with("operator", |f| f.string_of("v1.NodeSelectorOperator"))?
                    .unwrap_or_default(),
                values: o.strings("values")?,
            };
            o.finish(strict);
            Ok(r)
        })
        .collect()
}

fn node_selector_term(f: Field, strict: &mut Strict) -> Res<k8s::NodeSelectorTerm> {
    let mut o = f.object("NodeSelectorTerm", "v1.NodeSelectorTerm")?;
    let t = k8s::NodeSelectorTerm {
        match_expressions: o.with("matchExpressions", |f| {
            node_selector_requirements(f, strict)
        })?,
        match_fields: o.with("matchFields", |f| node_selector_requirements(f, strict))?,
    };
    o.finish(strict);
    Ok(t)
}

fn node_affinity(f: Field, strict: &mut Strict) -> Res<k8s::NodeAffinity> {
    let mut o = f.object("NodeAffinity", "v1.NodeAffinity")?;
    let required = o.with("requiredDuringSchedulingIgnoredDuringExecution", |f| {
        let mut o = f.object("NodeSelector", "v1.NodeSelector")?;
        let terms = o.with("nodeSelectorTerms", |f| {
            f.items("[]v1.NodeSelectorTerm")?
                .iter()
                .map(|i| node_selector_term(i.field(), strict))
                .collect()
        })?;
        o.finish(strict);
        Ok(k8s::NodeSelector {
            node_selector_terms: terms.unwrap_or_default(),
        })
    })?;
    let preferred = o.with("preferredDuringSchedulingIgnoredDuringExecution", |f| {
        f.items("[]v1.PreferredSchedulingTerm")?
            .iter()
            .map(|i| {
                let mut o = i
                    .field()
                    .object("PreferredSchedulingTerm", "v1.PreferredSchedulingTerm")?;
                let t = k8s::PreferredSchedulingTerm {
                    weight: o.i32("weight")?.unwrap_or(0),
                    preference: o
                        .with("preference", |f| node_selector_term(f, strict))?
                        .unwrap_or_default(),
                };
                o.finish(strict);
                Ok(t)
            })
            .collect()
    })?;
    o.finish(strict);
    Ok(k8s::NodeAffinity {
        required_during_scheduling_ignored_during_execution: required,
        preferred_during_scheduling_ignored_during_execution: preferred,
    })
}

fn decode_fields(plugin: &str, o: &mut Obj, strict: &mut Strict, features: &Features) -> Res<Args> {
    Ok(match plugin {
        "DefaultPreemption" => Args::DefaultPreemption {
            min_candidate_nodes_percentage: o.i32("minCandidateNodesPercentage")?,
            min_candidate_nodes_absolute: o.i32("minCandidateNodesAbsolute")?,
        },
        "InterPodAffinity" => Args::InterPodAffinity {
            hard_pod_affinity_weight: o.i32("hardPodAffinityWeight")?,
            ignore_preferred_terms_of_existing_pods: o
                .bool("ignorePreferredTermsOfExistingPods")?
                .unwrap_or(false),
        },
        "NodeResourcesBalancedAllocation" => Args::BalancedAllocation {
            resources: o
                .with("resources", |f| resource_specs(f, strict))?
                .unwrap_or_default(),
        },
        "NodeResourcesFit" => Args::NodeResourcesFit {
            ignored_resources: o.strings("ignoredResources")?.unwrap_or_default(),
            ignored_resource_groups: o.strings("ignoredResourceGroups")?.unwrap_or_default(),
            scoring_strategy: o.with("scoringStrategy", |f| {
                let mut s = f.object("ScoringStrategy", "v1.ScoringStrategy")?;
                let strategy = ScoringStrategy {
                    kind: s
                        .with("type", |f| f.string_of("v1.ScoringStrategyType"))?
                        .unwrap_or_default(),
                    resources: s
                        .with("resources", |f| resource_specs(f, strict))?
                        .unwrap_or_default(),
                    shape: s.with("requestedToCapacityRatio", |f| {
                        let mut r = f.object(
                            "RequestedToCapacityRatioParam",
                            "v1.RequestedToCapacityRatioParam",
                        )?;
                        let points = r.with("shape", |f| shape(f, strict))?.unwrap_or_default();
                        r.finish(strict);
                        Ok(points)
                    })?,
                };
                s.finish(strict);
                Ok(strategy)
            })?,
        },
        "PodTopologySpread" => Args::PodTopologySpread {
            default_constraints: o
                .with("defaultConstraints", |f| {
                    f.items("[]v1.TopologySpreadConstraint")?
                        .iter()
                        .map(|i| topology_spread_constraint(i.field(), strict))
                        .collect()
                })?
                .unwrap_or_default(),
            defaulting_type: o
                .with("defaultingType", |f| {
                    f.string_of("v1.PodTopologySpreadConstraintsDefaulting")
                })?
                .unwrap_or_default(),
        },
        "VolumeBinding" => Args::VolumeBinding {
            bind_timeout_seconds: o.i64("bindTimeoutSeconds")?,
            shape: o.with("shape", |f| shape(f, strict))?,
        },
        "NodeAffinity" => Args::NodeAffinity {
            added_affinity: o.with("addedAffinity", |f| node_affinity(f, strict))?,
        },
        _ => Args::DynamicResources {
            filter_timeout: o.duration("filterTimeout")?,
            // Before 1.35 the field does not exist: strict decoding reports it as unknown.
            binding_timeout: if features.dra_binding_timeout_field {
                o.duration("bindingTimeout")?
            } else {
                None
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::node;
    use crate::release::Release;

    fn args(plugin: &str, yaml: &str) -> Result<Args, DecodeError> {
        let n = node::parse(yaml).unwrap();
        decode(plugin, Some(&n), &Release::OLDEST.features())
    }

    #[test]
    fn each_kind_decodes_its_fields_and_refuses_others() {
        assert_eq!(
            args("InterPodAffinity", "hardPodAffinityWeight: 5\n").ok(),
            Some(Args::InterPodAffinity {
                hard_pod_affinity_weight: Some(5),
                ignore_preferred_terms_of_existing_pods: false,
            })
        );
        match args(
            "DefaultPreemption",
            "minCandidateNodesPercentage: 5\nfoo: 1\n",
        ) {
            Err(DecodeError::Strict(m)) => assert!(m.contains("unknown field \"foo\""), "{m}"),
            _ => panic!("an unknown field is a strict decoding error"),
        }
        match args("NodeAffinity", "kind: InterPodAffinityArgs\n") {
            Err(DecodeError::Fatal(m)) => {
                assert!(m.contains("no kind \"InterPodAffinityArgs\""), "{m}")
            }
            _ => panic!("another kind is fatal"),
        }
        // A plugin without an args kind keeps what it was given, unread.
        assert!(matches!(
            args("ImageLocality", "x: 1\n"),
            Ok(Args::Raw(Some(_)))
        ));
    }
}
