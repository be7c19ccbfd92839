//! API-server validation, for every field the scheduler reads: of the pod given with `-f`, so a
//! typo gets the error a real cluster would give instead of a silently different answer, and of
//! the objects of a dump, which a hand-edited dump may have broken.

use super::field::{Errors, not_supported};
use super::labels::{
    Operator, check_requirement, is_dns1123_subdomain, validate_label_key, validate_label_value,
};
use super::quantity::Quantity;
use k8s_openapi::api::core::v1 as k8s;
use std::collections::{BTreeMap, HashSet};
use std::fmt;

const DNS1123_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// `ValidateDNS1123Subdomain`: object names of most kinds, node names.
fn subdomain(errs: &mut Errors, field: &str, name: &str) {
    if !is_dns1123_subdomain(name) {
        errs.push(
            field,
            format!("Invalid value: {name:?}: {DNS1123_SUBDOMAIN}"),
        );
    }
}

/// `ValidateDNS1123Label`: namespace names.
fn dns_label(errs: &mut Errors, field: &str, name: &str) {
    if name.len() > 63 || !is_dns1123_subdomain(name) || name.contains('.') {
        errs.push(field, format!("Invalid value: {name:?}: {DNS1123_LABEL}"));
    }
}

/// The name (and namespace) of an object, as `ValidateObjectMeta` checks them.
fn meta(
    errs: &mut Errors,
    m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    namespaced: bool,
) {
    match m.name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => subdomain(errs, "metadata.name", name),
        None if m.generate_name.as_deref().is_some_and(|g| !g.is_empty()) => {}
        None => errs.push(
            "metadata.name",
            "Required value: name or generateName is required",
        ),
    }
    if namespaced && let Some(ns) = m.namespace.as_deref().filter(|n| !n.is_empty()) {
        dns_label(errs, "metadata.namespace", ns);
    }
    labels(errs, "metadata.labels", m.labels.as_ref());
}

fn labels(errs: &mut Errors, field: &str, map: Option<&BTreeMap<String, String>>) {
    for (k, v) in map.into_iter().flatten() {
        if let Err(e) = validate_label_key(k).and_then(|_| validate_label_value(v)) {
            errs.push(field, e);
        }
    }
}

const EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "PreferNoSchedule"];
const PREEMPTION_POLICIES: &[&str] = &["Never", "PreemptLowerPriority"];

/// `field` names the list; it is written out only for an error.
fn quantities<'m>(
    errs: &mut Errors,
    field: &dyn fmt::Display,
    map: Option<&'m BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> BTreeMap<&'m str, Quantity> {
    let mut out = BTreeMap::new();
    for (name, q) in map.into_iter().flatten() {
        let f = || format!("{field}[{name}]");
        match Quantity::parse(&q.0) {
            Err(e) => errs.push(&f(), format!("Invalid value: {:?}: {e}", q.0)),
            Ok(v) if v.is_negative() => errs.push(
                &f(),
                format!(
                    "Invalid value: {:?}: must be greater than or equal to 0",
                    q.0
                ),
            ),
            Ok(v) => {
                let integral = name.starts_with("hugepages-") || super::resource::is_extended(name);
                if integral && Quantity::from_units(v.value()) != v {
                    errs.push(
                        &f(),
                        format!("Invalid value: {:?}: must be an integer", q.0),
                    );
                }
                out.insert(name.as_str(), v);
            }
        }
        if name != "cpu"
            && name != "memory"
            && name != "ephemeral-storage"
            && !name.starts_with("hugepages-")
            && !name.contains('/')
        {
            errs.push(
                &f(),
                format!(
                    "Invalid value: {name:?}: must be a standard resource type or fully qualified"
                ),
            );
        }
    }
    out
}

/// `field` is the path of the `resources` checked, written out only for an error.
fn resources(errs: &mut Errors, field: &dyn fmt::Display, r: Option<&k8s::ResourceRequirements>) {
    let Some(r) = r else { return };
    let requests = quantities(errs, &format_args!("{field}.requests"), r.requests.as_ref());
    let limits = quantities(errs, &format_args!("{field}.limits"), r.limits.as_ref());
    for (&name, req) in &requests {
        if let Some(lim) = limits.get(name)
            && req > lim
        {
            errs.push(
                &format!("{field}.requests[{name}]"),
                format!(
                    "Invalid value: {req}: must be less than or equal to {name} limit of {lim}"
                ),
            );
        }
        let no_overcommit = super::resource::is_extended(name) || name.starts_with("hugepages-");
        if no_overcommit && limits.get(name) != Some(req) {
            errs.push(
                &format!("{field}.requests[{name}]"),
                "Invalid value: must be equal to the limit: this resource cannot be overcommitted",
            );
        }
    }
}

/// `field` (`spec.containers[0]`) is written out only for an error: every container of every pod
/// of a dump goes through here.
fn container<'c>(
    errs: &mut Errors,
    field: &dyn fmt::Display,
    c: &'c k8s::Container,
    names: &mut HashSet<&'c str>,
) {
    if c.name.is_empty() {
        errs.push(&format!("{field}.name"), "Required value");
    } else if !names.insert(&c.name) {
        errs.push(
            &format!("{field}.name"),
            format!("Duplicate value: {:?}", c.name),
        );
    }
    if c.image.as_deref().is_none_or(str::is_empty) {
        errs.push(&format!("{field}.image"), "Required value");
    }
    resources(
        errs,
        &format_args!("{field}.resources"),
        c.resources.as_ref(),
    );
    for (j, p) in c.ports.iter().flatten().enumerate() {
        if !(1..=65535).contains(&p.container_port) {
            errs.push(
                &format!("{field}.ports[{j}].containerPort"),
                format!(
                    "Invalid value: {}: must be between 1 and 65535, inclusive",
                    p.container_port
                ),
            );
        }
        if let Some(hp) = p.host_port
            && !(0..=65535).contains(&hp)
        {
            errs.push(
                &format!("{field}.ports[{j}].hostPort"),
                format!("Invalid value: {hp}: must be between 1 and 65535, inclusive"),
            );
        }
        if let Some(proto) = p.protocol.as_deref() {
            errs.one_of(
                format_args!("{field}.ports[{j}].protocol"),
                proto,
                &["SCTP", "TCP", "UDP"],
            );
        }
    }
}

/// `ValidateNodeSelectorRequirement`: the operator and how many values it takes, and the key;
/// the values themselves are not checked (a `Gt` on `16Gi` is stored, and never matches).
fn node_selector_requirements(
    errs: &mut Errors,
    field: &str,
    reqs: Option<&Vec<k8s::NodeSelectorRequirement>>,
    fields: bool,
) {
    for (i, r) in reqs.into_iter().flatten().enumerate() {
        let f = format!("{field}[{i}]");
        let values = r.values.as_deref().unwrap_or(&[]);
        if fields {
            if r.key != "metadata.name" {
                errs.push(
                    &format!("{f}.key"),
                    format!("Invalid value: {:?}: not a valid field selector key", r.key),
                );
            }
            if !matches!(r.operator.as_str(), "In" | "NotIn") {
                errs.push(
                    &format!("{f}.operator"),
                    format!(
                        "Invalid value: {:?}: not a valid selector operator",
                        r.operator
                    ),
                );
            } else if values.len() != 1 {
                errs.push(&format!("{f}.values"), "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector");
            }
            continue;
        }
        match Operator::from_node_selector(&r.operator) {
            Some(Operator::In | Operator::NotIn) if values.is_empty() => errs.push(
                &format!("{f}.values"),
                "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            ),
            Some(Operator::Exists | Operator::DoesNotExist) if !values.is_empty() => errs.push(
                &format!("{f}.values"),
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            Some(Operator::Gt | Operator::Lt) if values.len() != 1 => errs.push(
                &format!("{f}.values"),
                "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
            ),
            Some(_) => {}
            None => errs.push(
                &format!("{f}.operator"),
                not_supported(
                    &r.operator,
                    &["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"],
                ),
            ),
        }
        if let Err(e) = validate_label_key(&r.key) {
            errs.push(&format!("{f}.key"), e);
        }
    }
}

fn node_selector_term(errs: &mut Errors, field: &str, t: &k8s::NodeSelectorTerm) {
    node_selector_requirements(
        errs,
        &format!("{field}.matchExpressions"),
        t.match_expressions.as_ref(),
        false,
    );
    node_selector_requirements(
        errs,
        &format!("{field}.matchFields"),
        t.match_fields.as_ref(),
        true,
    );
}

fn label_selector(
    errs: &mut Errors,
    field: &str,
    s: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) {
    let Some(s) = s else { return };
    for (k, v) in s.match_labels.iter().flatten() {
        if let Err(e) = validate_label_key(k).and_then(|_| validate_label_value(v)) {
            errs.push(&format!("{field}.matchLabels"), e);
        }
    }
    for (i, e) in s.match_expressions.iter().flatten().enumerate() {
        let f = format!("{field}.matchExpressions[{i}]");
        let Some(op) = Operator::from_label_selector(&e.operator) else {
            let other = &e.operator;
            errs.push(
                &format!("{f}.operator"),
                format!("Invalid value: {other:?}: not a valid selector operator"),
            );
            continue;
        };
        if let Err(err) = check_requirement(&e.key, op, e.values.as_deref().unwrap_or(&[])) {
            errs.push(&f, err);
        }
    }
}

fn pod_affinity_term(errs: &mut Errors, field: &str, t: &k8s::PodAffinityTerm) {
    label_selector(
        errs,
        &format!("{field}.labelSelector"),
        t.label_selector.as_ref(),
    );
    label_selector(
        errs,
        &format!("{field}.namespaceSelector"),
        t.namespace_selector.as_ref(),
    );
    if t.topology_key.is_empty() {
        errs.push(
            &format!("{field}.topologyKey"),
            "Required value: can not be empty",
        );
    } else if let Err(e) = validate_label_key(&t.topology_key) {
        errs.push(&format!("{field}.topologyKey"), e);
    }
}

fn weight(errs: &mut Errors, field: &str, w: i32) {
    if !(1..=100).contains(&w) {
        errs.push(
            field,
            format!("Invalid value: {w}: must be in the range 1-100"),
        );
    }
}

fn affinity(errs: &mut Errors, a: &k8s::Affinity) {
    if let Some(na) = &a.node_affinity {
        if let Some(req) = &na.required_during_scheduling_ignored_during_execution {
            let f = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
            if req.node_selector_terms.is_empty() {
                errs.push(
                    f,
                    "Required value: must have at least one node selector term",
                );
            }
            for (i, t) in req.node_selector_terms.iter().enumerate() {
                node_selector_term(errs, &format!("{f}[{i}]"), t);
            }
        }
        for (i, t) in na
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .enumerate()
        {
            let f = format!(
                "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            );
            weight(errs, &format!("{f}.weight"), t.weight);
            node_selector_term(errs, &format!("{f}.preference"), &t.preference);
        }
    }
    let pod_terms = [
        (
            "podAffinity",
            a.pod_affinity.as_ref().map(|p| {
                (
                    &p.required_during_scheduling_ignored_during_execution,
                    &p.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
        (
            "podAntiAffinity",
            a.pod_anti_affinity.as_ref().map(|p| {
                (
                    &p.required_during_scheduling_ignored_during_execution,
                    &p.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
    ];
    for (kind, terms) in pod_terms {
        let Some((required, preferred)) = terms else {
            continue;
        };
        for (i, t) in required.iter().flatten().enumerate() {
            pod_affinity_term(
                errs,
                &format!(
                    "spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"
                ),
                t,
            );
        }
        for (i, t) in preferred.iter().flatten().enumerate() {
            let f = format!(
                "spec.affinity.{kind}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            );
            weight(errs, &format!("{f}.weight"), t.weight);
            pod_affinity_term(errs, &format!("{f}.podAffinityTerm"), &t.pod_affinity_term);
        }
    }
}

fn tolerations(errs: &mut Errors, ts: &[k8s::Toleration]) {
    for (i, t) in ts.iter().enumerate() {
        let f = || format!("spec.tolerations[{i}]");
        let key = t.key.as_deref().unwrap_or("");
        if !key.is_empty()
            && let Err(e) = validate_label_key(key)
        {
            errs.push(&format!("{}.key", f()), e);
        }
        match t.operator.as_deref().unwrap_or("") {
            "" | "Equal" => {
                if key.is_empty() {
                    errs.push(&format!("{}.operator", f()), "Invalid value: operator must be Exists when `key` is empty, which means \"match all values and all keys\"");
                }
                if let Err(e) = validate_label_value(t.value.as_deref().unwrap_or("")) {
                    errs.push(&format!("{}.value", f()), e);
                }
            }
            "Exists" => {
                if !t.value.as_deref().unwrap_or("").is_empty() {
                    errs.push(
                        &format!("{}.operator", f()),
                        "Invalid value: value must be empty when `operator` is 'Exists'",
                    );
                }
            }
            other => errs.push(
                &format!("{}.operator", f()),
                not_supported(other, &["Equal", "Exists"]),
            ),
        }
        let effect = t.effect.as_deref().unwrap_or("");
        if !effect.is_empty() {
            errs.one_of(
                format_args!("spec.tolerations[{i}].effect"),
                effect,
                EFFECTS,
            );
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            errs.push(&format!("{}.effect", f()), format!("Invalid value: {effect:?}: effect must be 'NoExecute' when `tolerationSeconds` is set"));
        }
    }
}

fn topology_spread(errs: &mut Errors, cs: &[k8s::TopologySpreadConstraint]) {
    let mut seen = HashSet::new();
    for (i, c) in cs.iter().enumerate() {
        let f = format_args!("spec.topologySpreadConstraints[{i}]");
        if c.max_skew <= 0 {
            errs.push(
                &format!("{f}.maxSkew"),
                format!("Invalid value: {}: must be greater than zero", c.max_skew),
            );
        }
        // Only required: unlike pod affinity's, a spread constraint's key is not a label name.
        if c.topology_key.is_empty() {
            errs.push(
                &format!("{f}.topologyKey"),
                "Required value: can not be empty",
            );
        }
        errs.one_of(
            format_args!("{f}.whenUnsatisfiable"),
            &c.when_unsatisfiable,
            &["DoNotSchedule", "ScheduleAnyway"],
        );
        if !seen.insert((c.topology_key.as_str(), c.when_unsatisfiable.as_str())) {
            errs.push(
                &format!("{f}.{{topologyKey, whenUnsatisfiable}}"),
                format!(
                    "Duplicate value: \"{{{}, {}}}\"",
                    c.topology_key, c.when_unsatisfiable
                ),
            );
        }
        if let Some(md) = c.min_domains {
            if md <= 0 {
                errs.push(
                    &format!("{f}.minDomains"),
                    format!("Invalid value: {md}: must be greater than zero"),
                );
            } else if c.when_unsatisfiable != "DoNotSchedule" {
                errs.push(&format!("{f}.minDomains"), format!("Invalid value: {md}: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {}", c.when_unsatisfiable));
            }
        }
        for (name, policy) in [
            ("nodeAffinityPolicy", &c.node_affinity_policy),
            ("nodeTaintsPolicy", &c.node_taints_policy),
        ] {
            if let Some(p) = policy {
                errs.one_of(format_args!("{f}.{name}"), p, &["Honor", "Ignore"]);
            }
        }
        label_selector(
            errs,
            &format!("{f}.labelSelector"),
            c.label_selector.as_ref(),
        );
    }
}

/// Validates what the scheduler reads from a pod; the errors name each field.
pub fn pod(p: &k8s::Pod) -> Result<(), Errors> {
    let mut errs = Errors::default();
    meta(&mut errs, &p.metadata, true);
    let Some(spec) = &p.spec else {
        errs.push("spec", "Required value");
        return Err(errs);
    };
    if spec.containers.is_empty() {
        errs.push("spec.containers", "Required value");
    }
    let claims: HashSet<&str> = spec
        .resource_claims
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    let mut names = HashSet::new();
    let containers = spec
        .containers
        .iter()
        .enumerate()
        .map(|(i, c)| ("spec.containers", i, c));
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| ("spec.initContainers", i, c));
    for (list, i, c) in containers.chain(init) {
        let f = format_args!("{list}[{i}]");
        container(&mut errs, &f, c, &mut names);
        for (j, claim) in c
            .resources
            .iter()
            .flat_map(|r| r.claims.iter().flatten())
            .enumerate()
        {
            if !claims.contains(claim.name.as_str()) {
                errs.push(
                    &format!("{f}.resources.claims[{j}]"),
                    format!(
                        "Not found: {:?}: must be one of the names in pod.spec.resourceClaims",
                        claim.name
                    ),
                );
            }
        }
        if spec.host_network == Some(true) {
            for (j, port) in c.ports.iter().flatten().enumerate() {
                if let Some(hp) = port.host_port
                    && hp != port.container_port
                {
                    errs.push(
                        &format!("{f}.ports[{j}].hostPort"),
                        format!(
                            "Invalid value: {hp}: must match `containerPort` when `hostNetwork` is true"
                        ),
                    );
                }
            }
        }
        if list == "spec.initContainers"
            && let Some(rp) = c.restart_policy.as_deref()
        {
            errs.one_of(format_args!("{f}.restartPolicy"), rp, &["Always"]);
        }
    }
    if let Some(rp) = spec.restart_policy.as_deref() {
        errs.one_of("spec.restartPolicy", rp, &["Always", "OnFailure", "Never"]);
    }
    if let Some(r) = &spec.resources {
        pod_level_resources(&mut errs, spec, r);
    }
    quantities(&mut errs, &"spec.overhead", spec.overhead.as_ref());
    if let Some(node) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        subdomain(&mut errs, "spec.nodeName", node);
        if spec
            .scheduling_gates
            .as_ref()
            .is_some_and(|g| !g.is_empty())
        {
            errs.push(
                "spec.nodeName",
                "Forbidden: cannot be set until all schedulingGates have been cleared",
            );
        }
    }
    labels(&mut errs, "spec.nodeSelector", spec.node_selector.as_ref());
    if let Some(a) = &spec.affinity {
        affinity(&mut errs, a);
    }
    tolerations(&mut errs, spec.tolerations.as_deref().unwrap_or(&[]));
    topology_spread(
        &mut errs,
        spec.topology_spread_constraints.as_deref().unwrap_or(&[]),
    );
    if let Some(policy) = spec.preemption_policy.as_deref() {
        errs.one_of("spec.preemptionPolicy", policy, PREEMPTION_POLICIES);
    }
    let mut gates = HashSet::new();
    for (i, g) in spec.scheduling_gates.iter().flatten().enumerate() {
        if let Err(e) = validate_label_key(&g.name) {
            errs.push(&format!("spec.schedulingGates[{i}].name"), e);
        }
        if !gates.insert(g.name.clone()) {
            errs.push(
                &format!("spec.schedulingGates[{i}]"),
                format!("Duplicate value: {:?}", g.name),
            );
        }
    }
    let mut vols = HashSet::new();
    for (i, v) in spec.volumes.iter().flatten().enumerate() {
        if !vols.insert(v.name.clone()) {
            errs.push(
                &format!("spec.volumes[{i}].name"),
                format!("Duplicate value: {:?}", v.name),
            );
        }
        if let Some(pvc) = &v.persistent_volume_claim
            && pvc.claim_name.is_empty()
        {
            errs.push(
                &format!("spec.volumes[{i}].persistentVolumeClaim.claimName"),
                "Required value",
            );
        }
    }
    errs.result()
}

/// Pod-level `resources`: only cpu, memory and hugepages, and no less than the containers ask for
/// together (`validatePodResourceConsistency`).
fn pod_level_resources(errs: &mut Errors, spec: &k8s::PodSpec, r: &k8s::ResourceRequirements) {
    for (name, _) in r.requests.iter().flatten().chain(r.limits.iter().flatten()) {
        if !(name == "cpu" || name == "memory" || name.starts_with("hugepages-")) {
            errs.push(
                &format!("spec.resources[{name}]"),
                not_supported(name, &["cpu", "memory", "hugepages-*"]),
            );
        }
    }
    resources(errs, &"spec.resources", Some(r));
    let request = |c: &k8s::Container, name: &str| {
        c.resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|m| m.get(name))
            .and_then(|q| Quantity::parse(&q.0).ok())
            .unwrap_or(Quantity::ZERO)
    };
    for (name, q) in r.requests.iter().flatten() {
        let Ok(pod_level) = Quantity::parse(&q.0) else {
            continue;
        };
        // Sidecars run beside the app containers; a plain init container runs alone, after the
        // sidecars started before it.
        let mut sidecars = Quantity::ZERO;
        let mut aggregate = Quantity::ZERO;
        for c in spec.init_containers.iter().flatten() {
            if c.restart_policy.as_deref() == Some("Always") {
                sidecars = sidecars + request(c, name);
            } else {
                aggregate = aggregate.max(sidecars + request(c, name));
            }
        }
        let app = spec
            .containers
            .iter()
            .fold(sidecars, |sum, c| sum + request(c, name));
        let aggregate = aggregate.max(app);
        if pod_level < aggregate {
            errs.push(
                &format!("spec.resources.requests[{name}]"),
                format!(
                    "Invalid value: {:?}: must be greater than or equal to aggregate container requests of {aggregate}",
                    q.0
                ),
            );
        }
    }
}

/// Objects of a dump, validated as the API server validates them on create, for what the
/// scheduler reads. Their errors are warnings: the objects came from a server (or were edited).
pub mod dump {
    use super::*;
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use k8s_openapi::api::scheduling::v1::PriorityClass;
    use k8s_openapi::api::storage::v1::StorageClass;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    /// Quantities the scheduler compares must parse and not be negative: unlike other invalid
    /// fields, a wrong one would change the answer without a word, so the caller refuses it.
    pub fn amounts(
        field: &str,
        map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
    ) -> Result<(), Errors> {
        let mut errs = Errors::default();
        for (name, q) in map.into_iter().flatten() {
            let f = format!("{field}.{name}");
            match Quantity::parse(&q.0) {
                Err(e) => errs.push(&f, format!("invalid quantity {:?}: {e}", q.0)),
                Ok(v) if v.is_negative() => errs.push(
                    &f,
                    format!(
                        "Invalid value: {:?}: must be greater than or equal to 0",
                        q.0
                    ),
                ),
                Ok(_) => {}
            }
        }
        errs.result()
    }

    pub fn node(n: &k8s::Node) -> Result<(), Errors> {
        let mut errs = Errors::default();
        meta(&mut errs, &n.metadata, false);
        let mut seen = HashSet::new();
        for (i, t) in n
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .enumerate()
        {
            let f = format!("spec.taints[{i}]");
            if let Err(e) = validate_label_key(&t.key) {
                errs.push(&format!("{f}.key"), e);
            }
            if let Err(e) = validate_label_value(t.value.as_deref().unwrap_or("")) {
                errs.push(&format!("{f}.value"), e);
            }
            if !seen.insert((&t.key, &t.effect)) {
                errs.push(
                    &f,
                    format!(
                        "Duplicate value: taints must be unique by key and effect pair: {}:{}",
                        t.key, t.effect
                    ),
                );
            }
        }
        errs.result()
    }

    pub fn namespace(ns: &k8s::Namespace) -> Result<(), Errors> {
        let mut errs = Errors::default();
        if let Some(name) = ns.metadata.name.as_deref() {
            dns_label(&mut errs, "metadata.name", name);
        }
        labels(&mut errs, "metadata.labels", ns.metadata.labels.as_ref());
        errs.result()
    }

    pub fn priority_class(pc: &PriorityClass) -> Result<(), Errors> {
        let mut errs = Errors::default();
        meta(&mut errs, &pc.metadata, false);
        if let Some(p) = pc.preemption_policy.as_deref() {
            errs.one_of("preemptionPolicy", p, PREEMPTION_POLICIES);
        }
        let system = pc
            .metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("system-"));
        if !system && pc.value.unwrap_or(0) > 1_000_000_000 {
            errs.push(
                "value",
                format!(
                    "Invalid value: {}: maximum allowed value of a user defined priority is 1000000000",
                    pc.value.unwrap_or(0)
                ),
            );
        }
        errs.result()
    }

    fn access_modes(errs: &mut Errors, modes: Option<&Vec<String>>) {
        for m in modes.into_iter().flatten() {
            errs.one_of(
                "spec.accessModes",
                m,
                &[
                    "ReadOnlyMany",
                    "ReadWriteMany",
                    "ReadWriteOnce",
                    "ReadWriteOncePod",
                ],
            );
        }
    }

    pub fn pvc(pvc: &k8s::PersistentVolumeClaim) -> Result<(), Errors> {
        let mut errs = Errors::default();
        meta(&mut errs, &pvc.metadata, true);
        access_modes(
            &mut errs,
            pvc.spec.as_ref().and_then(|s| s.access_modes.as_ref()),
        );
        errs.result()
    }

    pub fn pv(pv: &k8s::PersistentVolume) -> Result<(), Errors> {
        let mut errs = Errors::default();
        meta(&mut errs, &pv.metadata, false);
        let spec = pv.spec.as_ref();
        access_modes(&mut errs, spec.and_then(|s| s.access_modes.as_ref()));
        if let Some(required) = spec
            .and_then(|s| s.node_affinity.as_ref())
            .and_then(|a| a.required.as_ref())
        {
            let f = "spec.nodeAffinity.required.nodeSelectorTerms";
            if required.node_selector_terms.is_empty() {
                errs.push(
                    f,
                    "Required value: must have at least one node selector term",
                );
            }
            for (i, t) in required.node_selector_terms.iter().enumerate() {
                node_selector_term(&mut errs, &format!("{f}[{i}]"), t);
            }
        }
        errs.result()
    }

    pub fn storage_class(sc: &StorageClass) -> Result<(), Errors> {
        let mut errs = Errors::default();
        meta(&mut errs, &sc.metadata, false);
        if let Some(mode) = sc.volume_binding_mode.as_deref() {
            errs.one_of(
                "volumeBindingMode",
                mode,
                &["Immediate", "WaitForFirstConsumer"],
            );
        }
        errs.result()
    }

    fn int_or_percent(errs: &mut Errors, field: &str, v: Option<&IntOrString>) {
        match v {
            Some(IntOrString::Int(n)) if *n < 0 => errs.push(
                field,
                format!("Invalid value: {n}: must be greater than or equal to 0"),
            ),
            Some(IntOrString::String(s)) => {
                let percent = s.strip_suffix('%').and_then(|p| p.parse::<u32>().ok());
                match percent {
                    None => errs.push(
                        field,
                        format!("Invalid value: {s:?}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"),
                    ),
                    Some(p) if p > 100 => errs.push(
                        field,
                        format!("Invalid value: {s:?}: must not be greater than 100%"),
                    ),
                    Some(_) => {}
                }
            }
            _ => {}
        }
    }

    pub fn pdb(pdb: &PodDisruptionBudget) -> Result<(), Errors> {
        let mut errs = Errors::default();
        meta(&mut errs, &pdb.metadata, true);
        let spec = pdb.spec.as_ref();
        int_or_percent(
            &mut errs,
            "spec.minAvailable",
            spec.and_then(|s| s.min_available.as_ref()),
        );
        int_or_percent(
            &mut errs,
            "spec.maxUnavailable",
            spec.and_then(|s| s.max_unavailable.as_ref()),
        );
        errs.result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> k8s::Pod {
        let v: serde_json::Value = serde_saphyr::from_str(yaml).unwrap();
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn accepts_a_plain_pod() {
        let p = parse(
            "metadata: {name: a}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {cpu: 100m}}\n",
        );
        assert!(pod(&p).is_ok());
    }

    #[test]
    fn reports_typos_by_field() {
        let p = parse(
            "metadata: {name: a}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {cpu: 1x}}\n  tolerations:\n  - key: k\n    operator: Exist\n    effect: NoSchedul\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions:\n          - {key: zone, operator: in, values: [a]}\n",
        );
        let errs = pod(&p).unwrap_err().to_string();
        assert!(
            errs.contains("spec.containers[0].resources.requests[cpu]"),
            "{errs}"
        );
        assert!(errs.contains("spec.tolerations[0].operator"), "{errs}");
        assert!(errs.contains("spec.tolerations[0].effect"), "{errs}");
        assert!(errs.contains("matchExpressions[0].operator"), "{errs}");
    }

    #[test]
    fn needs_a_container() {
        let p = parse("metadata: {name: a}\nspec: {containers: []}\n");
        assert!(
            pod(&p)
                .unwrap_err()
                .0
                .iter()
                .any(|e| e.field.starts_with("spec.containers"))
        );
    }

    fn fields<T: serde::de::DeserializeOwned>(
        check: fn(&T) -> Result<(), Errors>,
        v: serde_json::Value,
    ) -> Vec<String> {
        let object: T = serde_json::from_value(v).unwrap();
        check(&object)
            .err()
            .map(|e| e.0.into_iter().map(|e| e.field).collect())
            .unwrap_or_default()
    }

    #[test]
    fn dump_objects_are_validated_for_what_the_scheduler_reads() {
        use serde_json::json;
        assert_eq!(
            fields(
                dump::node,
                json!({"metadata": {"name": "Bad_Name", "labels": {"a b": "c"}},
                "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}, {"key": "k", "value": "v v", "effect": "NoExecute"}]}})
            ),
            [
                "metadata.name",
                "metadata.labels",
                "spec.taints[1]",
                "spec.taints[2].value"
            ]
        );
        assert_eq!(
            fields(
                dump::priority_class,
                json!({"metadata": {"name": "x"}, "value": 2_000_000_000, "preemptionPolicy": "never"})
            ),
            ["preemptionPolicy", "value"]
        );
        assert!(
            fields(
                dump::priority_class,
                json!({"metadata": {"name": "system-x"}, "value": 2_000_000_000})
            )
            .is_empty()
        );
        assert_eq!(
            fields(
                dump::pv,
                json!({"metadata": {"name": "pv"}, "spec": {"accessModes": ["rwo"], "nodeAffinity": {"required": {"nodeSelectorTerms": []}}}})
            ),
            [
                "spec.accessModes",
                "spec.nodeAffinity.required.nodeSelectorTerms"
            ]
        );
        assert_eq!(
            fields(
                dump::storage_class,
                json!({"metadata": {"name": "sc"}, "provisioner": "p", "volumeBindingMode": "Later"})
            ),
            ["volumeBindingMode"]
        );
        for (bad, good) in [
            (json!("abc"), json!("50%")),
            (json!("200%"), json!(2)),
            (json!(-1), json!("100%")),
        ] {
            let pdb = |v| json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {"minAvailable": v}});
            assert_eq!(fields(dump::pdb, pdb(bad)), ["spec.minAvailable"]);
            assert!(fields(dump::pdb, pdb(good)).is_empty());
        }
        assert_eq!(
            dump::amounts(
                "spec.capacity",
                Some(
                    &[(
                        "storage".to_string(),
                        k8s_openapi::apimachinery::pkg::api::resource::Quantity("-5Gi".into())
                    )]
                    .into()
                )
            )
            .unwrap_err()
            .0[0]
                .field,
            "spec.capacity.storage"
        );
        assert!(fields(dump::namespace, json!({"metadata": {"name": "ok-ns"}})).is_empty());
        assert_eq!(
            fields(dump::namespace, json!({"metadata": {"name": "a.b"}})),
            ["metadata.name"]
        );
    }
}
