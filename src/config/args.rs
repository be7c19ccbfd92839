//! Plugin arguments (`pluginConfig[].args`): the v1 `<Plugin>Args` kinds, decoded strictly,
//! defaulted and validated as `apis/config/v1/defaults.go` and
//! `apis/config/validation/validation_pluginargs.go` do.

use super::decode::{Field, Obj, Res, Strict};
use super::duration;
use super::node::Node;
use crate::model::field::{
    FieldError, Path, Value, label_value_errors, qualified_name_errors, validate_label_name,
};
use crate::release::Features;
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

/// `config.MaxCustomPriorityScore`: shape scores go up to 10 and are scaled to `MaxNodeScore`.
pub const MAX_CUSTOM_PRIORITY_SCORE: i32 = 10;
/// `DynamicResourcesBindingTimeoutDefault`: 10 minutes, in nanoseconds.
const DRA_BINDING_TIMEOUT_DEFAULT: i64 = 600 * 1_000_000_000;
/// `DynamicResourcesFilterTimeoutDefault` (the DRASchedulerFilterTimeout gate is on in every
/// modelled release).
const DRA_FILTER_TIMEOUT_DEFAULT: i64 = 10_000_000_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceSpec {
    pub name: String,
    pub weight: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Shape {
    #[serde(rename = "Utilization")]
    pub utilization: i32,
    #[serde(rename = "Score")]
    pub score: i32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScoringStrategy {
    pub kind: String,
    pub resources: Vec<ResourceSpec>,
    /// `requestedToCapacityRatio.shape`, when `requestedToCapacityRatio` is given.
    pub shape: Option<Vec<Shape>>,
}

/// The arguments of one `pluginConfig` entry.
#[derive(Clone, Debug, PartialEq)]
pub enum Args {
    NodeResourcesFit {
        ignored_resources: Vec<String>,
        ignored_resource_groups: Vec<String>,
        scoring_strategy: Option<ScoringStrategy>,
    },
    BalancedAllocation {
        resources: Vec<ResourceSpec>,
    },
    PodTopologySpread {
        default_constraints: Vec<k8s::TopologySpreadConstraint>,
        defaulting_type: String,
    },
    InterPodAffinity {
        hard_pod_affinity_weight: Option<i32>,
        ignore_preferred_terms_of_existing_pods: bool,
    },
    NodeAffinity {
        added_affinity: Option<k8s::NodeAffinity>,
    },
    DefaultPreemption {
        min_candidate_nodes_percentage: Option<i32>,
        min_candidate_nodes_absolute: Option<i32>,
    },
    VolumeBinding {
        bind_timeout_seconds: Option<i64>,
        shape: Option<Vec<Shape>>,
    },
    DynamicResources {
        filter_timeout: Option<i64>,
        /// Nanoseconds; a field since 1.35.
        binding_timeout: Option<i64>,
    },
    /// A plugin without an args kind: kept as written, never looked at.
    Raw(Option<Node>),
}

/// The v1 kinds of plugin arguments, by plugin name.
const KINDS: [&str; 8] = [
    "DefaultPreemption",
    "InterPodAffinity",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "PodTopologySpread",
    "VolumeBinding",
    "NodeAffinity",
    "DynamicResources",
];

/// Whether `<kind>` is registered in kubescheduler.config.k8s.io/v1.
pub fn is_args_kind(kind: &str) -> bool {
    kind.strip_suffix("Args")
        .is_some_and(|p| KINDS.contains(&p))
}

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
        let gv = api_version.unwrap_or_else(|| super::v1::GROUP_VERSION.to_string());
        return Err(fatal(format!(
            "no kind {kind:?} is registered for version {gv:?} in scheme {:?}",
            super::SCHEME
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

    /// What `validatePluginConfig` checks at `path` (`profiles[i].pluginConfig[j].args`).
    /// NodeResourcesFit is not among them: its validator is registered under the key
    /// "NodeResourcesFitArgs" there, so only the plugin's factory validates it.
    pub fn validate_in_config(&self, path: &Path, features: &Features) -> Vec<FieldError> {
        match self {
            Args::NodeResourcesFit { .. } | Args::Raw(_) => Vec::new(),
            Args::BalancedAllocation { resources } => validate_balanced_allocation(resources, path),
            Args::PodTopologySpread {
                default_constraints,
                defaulting_type,
            } => validate_pod_topology_spread(default_constraints, defaulting_type, path),
            Args::InterPodAffinity {
                hard_pod_affinity_weight,
                ..
            } => {
                let w = hard_pod_affinity_weight.unwrap_or(1);
                if (0..=100).contains(&w) {
                    Vec::new()
                } else {
                    vec![FieldError::invalid(
                        &path.child("hardPodAffinityWeight"),
                        w,
                        "not in valid range [0, 100]",
                    )]
                }
            }
            Args::NodeAffinity { added_affinity } => {
                validate_node_affinity(added_affinity.as_ref(), path)
            }
            Args::DefaultPreemption {
                min_candidate_nodes_percentage,
                min_candidate_nodes_absolute,
            } => validate_default_preemption(
                min_candidate_nodes_percentage.unwrap_or(10),
                min_candidate_nodes_absolute.unwrap_or(100),
                path,
            ),
            Args::VolumeBinding {
                bind_timeout_seconds,
                shape,
            } => {
                let mut errs = Vec::new();
                let t = bind_timeout_seconds.unwrap_or(600);
                if t < 0 {
                    errs.push(FieldError::invalid(
                        &path.child("bindTimeoutSeconds"),
                        t,
                        "invalid BindTimeoutSeconds, should not be a negative value",
                    ));
                }
                if features.enable_storage_capacity_scoring {
                    errs.extend(validate_shape(
                        shape.as_deref().unwrap_or_default(),
                        &path.child("shape"),
                    ));
                } else if let Some(shape) = shape {
                    errs.push(FieldError::invalid(
                        &path.child("shape"),
                        Value::json(shape),
                        "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
                    ));
                }
                errs
            }
            Args::DynamicResources {
                filter_timeout,
                binding_timeout,
            } => {
                let mut errs = Vec::new();
                if let Some(t) = filter_timeout.filter(|t| *t < 0) {
                    errs.push(FieldError::invalid(
                        &path.child("filterTimeout"),
                        Value::json(&duration::format(t)),
                        "must be zero or positive",
                    ));
                }
                match binding_timeout {
                    Some(t) if features.binds_with_conditions() && *t < 1_000_000_000 => {
                        errs.push(FieldError::invalid(
                            &path.child("bindingTimeout"),
                            Value::json(&duration::format(*t)),
                            "must be at least 1 second",
                        ))
                    }
                    Some(_) if !features.binds_with_conditions() => errs.push(FieldError::forbidden(
                        &path.child("bindingTimeout"),
                        "DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
                    )),
                    _ => {}
                }
                errs
            }
        }
    }
}

fn validate_default_preemption(pct: i32, abs: i32, path: &Path) -> Vec<FieldError> {
    let (pct_path, abs_path) = (
        path.child("minCandidateNodesPercentage"),
        path.child("minCandidateNodesAbsolute"),
    );
    let mut errs = Vec::new();
    if !(0..=100).contains(&pct) {
        errs.push(FieldError::invalid(
            &pct_path,
            pct,
            "not in valid range [0, 100]",
        ));
    }
    if abs < 0 {
        errs.push(FieldError::invalid(
            &abs_path,
            abs,
            "not in valid range [0, inf)",
        ));
    }
    if pct == 0 && abs == 0 {
        errs.push(FieldError::invalid(
            &pct_path,
            pct,
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        ));
        errs.push(FieldError::invalid(
            &abs_path,
            abs,
            "cannot be zero at the same time as minCandidateNodesPercentage",
        ));
    }
    errs
}

fn validate_balanced_allocation(resources: &[ResourceSpec], path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, r) in resources.iter().enumerate() {
        let p = path.child("resources").index(i);
        if resources[..i].iter().any(|prev| prev.name == r.name) {
            errs.push(FieldError::duplicate(&p.child("name"), &r.name));
        }
        if r.weight != 1 {
            errs.push(FieldError::invalid(
                &p.child("weight"),
                r.weight,
                "must be 1",
            ));
        }
    }
    errs
}

fn validate_pod_topology_spread(
    constraints: &[k8s::TopologySpreadConstraint],
    defaulting: &str,
    path: &Path,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let dt_path = path.child("defaultingType");
    if defaulting != "System" && defaulting != "List" {
        errs.push(FieldError::not_supported(
            &dt_path,
            defaulting,
            &["System", "List"],
        ));
    } else if defaulting == "System" && !constraints.is_empty() {
        errs.push(FieldError::invalid(
            &dt_path,
            defaulting,
            "when .defaultConstraints are not empty",
        ));
    }
    let cs_path = path.child("defaultConstraints");
    for (i, c) in constraints.iter().enumerate() {
        let p = cs_path.index(i);
        if c.max_skew <= 0 {
            errs.push(FieldError::invalid(
                &p.child("maxSkew"),
                c.max_skew,
                "not in valid range (0, inf)",
            ));
        }
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(
                &p.child("topologyKey"),
                "can not be empty",
            ));
        } else {
            errs.extend(validate_label_name(
                &c.topology_key,
                &p.child("topologyKey"),
            ));
        }
        let wu_path = p.child("whenUnsatisfiable");
        match c.when_unsatisfiable.as_str() {
            "" => errs.push(FieldError::required(&wu_path, "can not be empty")),
            "DoNotSchedule" | "ScheduleAnyway" => {}
            other => errs.push(FieldError::not_supported(
                &wu_path,
                other,
                &["DoNotSchedule", "ScheduleAnyway"],
            )),
        }
        if c.label_selector.is_some() {
            errs.push(FieldError::forbidden(
                &p.child("labelSelector"),
                "constraint must not define a selector, as they deduced for each pod",
            ));
        }
        if constraints[..i].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(FieldError::duplicate(
                &p,
                Value::Str(format!("{{{}, {}}}", c.topology_key, c.when_unsatisfiable)),
            ));
        }
    }
    errs
}

/// `nodeaffinity.NewNodeSelector`'s and `NewPreferredSchedulingTerms`' parse errors.
fn validate_node_affinity(affinity: Option<&k8s::NodeAffinity>, path: &Path) -> Vec<FieldError> {
    let Some(a) = affinity else { return Vec::new() };
    let mut errs = Vec::new();
    let added = path.child("addedAffinity");
    if let Some(ns) = &a.required_during_scheduling_ignored_during_execution {
        let terms = added
            .child("requiredDuringSchedulingIgnoredDuringExecution")
            .child("nodeSelectorTerms");
        for (i, t) in ns.node_selector_terms.iter().enumerate() {
            errs.extend(node_selector_term_errors(t, &terms.index(i)));
        }
    }
    if let Some(terms) = &a.preferred_during_scheduling_ignored_during_execution {
        let p = added.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in terms.iter().enumerate() {
            if t.weight != 0 {
                errs.extend(node_selector_term_errors(&t.preference, &p.index(i)));
            }
        }
    }
    errs
}

fn node_selector_term_errors(t: &k8s::NodeSelectorTerm, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, r) in t.match_expressions.iter().flatten().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let values = r.values.as_deref().unwrap_or(&[]);
        let values_json = || Value::json(&r.values);
        let count_error = match r.operator.as_str() {
            "In" | "NotIn" => values
                .is_empty()
                .then_some("for 'in', 'notin' operators, values set can't be empty"),
            "Exists" | "DoesNotExist" => (!values.is_empty())
                .then_some("values set must be empty for exists and does not exist"),
            "Gt" | "Lt" => (values.len() != 1)
                .then_some("for 'Gt', 'Lt' operators, exactly one value is required"),
            other => {
                errs.push(FieldError::not_supported(
                    &p.child("operator"),
                    other,
                    &["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"],
                ));
                continue;
            }
        };
        let key_errors = qualified_name_errors(&r.key);
        if !key_errors.is_empty() {
            errs.push(FieldError::invalid(
                &p.child("key"),
                &r.key,
                &key_errors.join("; "),
            ));
        }
        if let Some(msg) = count_error {
            errs.push(FieldError::invalid(&p.child("values"), values_json(), msg));
        }
        if matches!(r.operator.as_str(), "Gt" | "Lt") {
            for (j, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(FieldError::invalid(
                        &p.child("values").index(j),
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
        for (j, v) in values.iter().enumerate() {
            let v_errors = label_value_errors(v);
            if !v_errors.is_empty() {
                errs.push(FieldError::invalid(
                    &p.child("values").index(j).key(&r.key),
                    v,
                    &v_errors.join("; "),
                ));
            }
        }
    }
    for (i, r) in t.match_fields.iter().flatten().enumerate() {
        let p = path.child("matchFields").index(i);
        match r.operator.as_str() {
            "In" | "NotIn" => {
                if r.values.as_ref().is_none_or(|v| v.len() != 1) {
                    errs.push(FieldError::invalid(
                        &p.child("values"),
                        Value::json(&r.values),
                        "must have one element",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(
                &p.child("operator"),
                other,
                &["In", "NotIn"],
            )),
        }
    }
    errs
}

/// `ValidateNodeResourcesFitArgs`, as `NewFit` runs it: its aggregated error, if any.
pub fn node_resources_fit_error(
    ignored_resources: &[String],
    ignored_resource_groups: &[String],
    strategy: Option<&ScoringStrategy>,
    features: &Features,
) -> Option<String> {
    let errs = validate_node_resources_fit(
        ignored_resources,
        ignored_resource_groups,
        strategy,
        features,
    );
    (!errs.is_empty()).then(|| crate::model::field::aggregate(&errs))
}

/// `ValidateNodeResourcesFitArgs` with the nil path.
fn validate_node_resources_fit(
    ignored_resources: &[String],
    ignored_resource_groups: &[String],
    strategy: Option<&ScoringStrategy>,
    features: &Features,
) -> Vec<FieldError> {
    let path = Path::root();
    let mut errs = Vec::new();
    for (i, r) in ignored_resources.iter().enumerate() {
        errs.extend(validate_label_name(
            r,
            &path.child("ignoredResources").index(i),
        ));
    }
    for (i, g) in ignored_resource_groups.iter().enumerate() {
        let p = path.child("ignoredResourceGroups").index(i);
        if g.contains('/') {
            errs.push(FieldError::invalid(
                &p,
                g,
                "resource group name can't contain '/'",
            ));
        }
        errs.extend(validate_label_name(g, &p));
    }
    if let Some(s) = strategy {
        let sp = path.child("scoringStrategy");
        const TYPES: [&str; 3] = [
            "LeastAllocated",
            "MostAllocated",
            "RequestedToCapacityRatio",
        ];
        if !TYPES.contains(&s.kind.as_str()) {
            errs.push(FieldError::not_supported(
                &sp.child("type"),
                &s.kind,
                &TYPES,
            ));
        }
        for (i, r) in s.resources.iter().enumerate() {
            if r.weight <= 0 || r.weight > 100 {
                errs.push(FieldError::invalid(
                    &sp.child("resources").index(i).child("weight"),
                    r.weight,
                    &format!("resource weight of {} not in valid range (0, 100]", r.name),
                ));
            }
        }
        let ratio = sp.child("requestedToCapacityRatio");
        let is_ratio = s.kind == "RequestedToCapacityRatio";
        match &s.shape {
            Some(shape) if !features.fit_args_ratio_with_type => {
                errs.extend(validate_shape(shape, &sp.child("shape")))
            }
            Some(shape) if is_ratio => errs.extend(validate_shape(shape, &ratio.child("shape"))),
            Some(_) => errs.push(FieldError::forbidden(
                &ratio,
                "must be nil when type is not RequestedToCapacityRatio",
            )),
            None if is_ratio && features.fit_args_ratio_with_type => {
                errs.push(FieldError::required(
                    &ratio,
                    "must be specified when type is RequestedToCapacityRatio",
                ))
            }
            None => {}
        }
    }
    errs
}

/// `validateFunctionShape`.
fn validate_shape(shape: &[Shape], path: &Path) -> Vec<FieldError> {
    if shape.is_empty() {
        return vec![FieldError::required(
            path,
            "at least one point must be specified",
        )];
    }
    let mut errs = Vec::new();
    if let Some(i) = (1..shape.len()).find(|&i| shape[i - 1].utilization >= shape[i].utilization) {
        errs.push(FieldError::invalid(
            &path.index(i).child("utilization"),
            shape[i].utilization,
            "values must be sorted in increasing order",
        ));
    }
    for (i, p) in shape.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            errs.push(FieldError::invalid(
                &path.index(i).child("utilization"),
                p.utilization,
                "not in valid range [0, 100]",
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&p.score) {
            errs.push(FieldError::invalid(
                &path.index(i).child("score"),
                p.score,
                &format!("not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"),
            ));
        }
    }
    errs
}
