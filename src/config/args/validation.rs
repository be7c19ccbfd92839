//! Validation of plugin arguments: what `validatePluginConfig` checks in a configuration, and
//! what NodeResourcesFit's factory checks (`ValidateNodeResourcesFitArgs`).

use super::{Args, MAX_CUSTOM_PRIORITY_SCORE, ResourceSpec, ScoringStrategy, Shape};
use crate::config::duration;
use crate::model::field::{
    FieldError, Path, Value, label_value_errors, qualified_name_errors, validate_label_name,
};
use crate::release::Features;
use k8s_openapi::api::core::v1 as k8s;

impl Args {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Release;

    fn texts(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::to_string).collect()
    }

    #[test]
    fn arguments_are_validated_at_their_path() {
        let f = Release::OLDEST.features();
        let path = Path::new("args");
        let both_zero = Args::DefaultPreemption {
            min_candidate_nodes_percentage: Some(0),
            min_candidate_nodes_absolute: Some(0),
        };
        assert_eq!(
            texts(both_zero.validate_in_config(&path, &f)),
            [
                "args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
                "args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
            ]
        );
        let shape = [
            Shape {
                utilization: 50,
                score: 1,
            },
            Shape {
                utilization: 10,
                score: 11,
            },
        ];
        assert_eq!(
            texts(validate_shape(&shape, &path.child("shape"))),
            [
                "args.shape[1].utilization: Invalid value: 10: values must be sorted in increasing order",
                "args.shape[1].score: Invalid value: 11: not in valid range [0, 10]",
            ]
        );
    }

    #[test]
    fn node_resources_fit_is_left_to_its_factory() {
        let f = Release::OLDEST.features();
        let fit = Args::NodeResourcesFit {
            ignored_resources: vec!["a/b/c".into()],
            ignored_resource_groups: Vec::new(),
            scoring_strategy: None,
        };
        assert!(fit.validate_in_config(&Path::new("args"), &f).is_empty());
        let e = node_resources_fit_error(&["a/b/c".into()], &[], None, &f).unwrap();
        assert!(
            e.starts_with("ignoredResources[0]: Invalid value: \"a/b/c\""),
            "{e}"
        );
    }
}
