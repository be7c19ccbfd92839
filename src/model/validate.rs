//! API-server validation of a pod given with `-f`, for every field the scheduler reads, so a typo
//! gets the error a real cluster would give instead of a silently different answer.

use super::labels::{Operator, Requirement, validate_label_key, validate_label_value};
use super::quantity::Quantity;
use k8s_openapi::api::core::v1 as k8s;
use std::collections::{BTreeMap, HashSet};

/// Field errors, as `field.ErrorList` would print them.
#[derive(Debug, Default)]
pub struct Errors(pub Vec<String>);

impl Errors {
    fn push(&mut self, field: &str, msg: impl std::fmt::Display) {
        self.0.push(format!("{field}: {msg}"));
    }
}

const EFFECTS: &str = "\"NoExecute\", \"NoSchedule\", \"PreferNoSchedule\"";

fn quantities(
    errs: &mut Errors,
    field: &str,
    map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    for (name, q) in map.into_iter().flatten() {
        let f = format!("{field}[{name}]");
        match Quantity::parse(&q.0) {
            Err(e) => errs.push(&f, format!("Invalid value: {:?}: {e}", q.0)),
            Ok(v) if v.is_negative() => errs.push(
                &f,
                format!(
                    "Invalid value: {:?}: must be greater than or equal to 0",
                    q.0
                ),
            ),
            Ok(v) => {
                let integral = name.starts_with("hugepages-") || super::resource::is_extended(name);
                if integral && Quantity::from_units(v.value()) != v {
                    errs.push(&f, format!("Invalid value: {:?}: must be an integer", q.0));
                }
                out.insert(name.clone(), v);
            }
        }
        if name != "cpu"
            && name != "memory"
            && name != "ephemeral-storage"
            && !name.starts_with("hugepages-")
            && !name.contains('/')
        {
            errs.push(
                &f,
                format!(
                    "Invalid value: {name:?}: must be a standard resource type or fully qualified"
                ),
            );
        }
    }
    out
}

fn resources(errs: &mut Errors, field: &str, r: Option<&k8s::ResourceRequirements>) {
    let Some(r) = r else { return };
    let requests = quantities(errs, &format!("{field}.requests"), r.requests.as_ref());
    let limits = quantities(errs, &format!("{field}.limits"), r.limits.as_ref());
    for (name, req) in &requests {
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

fn container(errs: &mut Errors, field: &str, c: &k8s::Container, names: &mut HashSet<String>) {
    if c.name.is_empty() {
        errs.push(&format!("{field}.name"), "Required value");
    } else if !names.insert(c.name.clone()) {
        errs.push(
            &format!("{field}.name"),
            format!("Duplicate value: {:?}", c.name),
        );
    }
    if c.image.as_deref().is_none_or(str::is_empty) {
        errs.push(&format!("{field}.image"), "Required value");
    }
    resources(errs, &format!("{field}.resources"), c.resources.as_ref());
    for (j, p) in c.ports.iter().flatten().enumerate() {
        let pf = format!("{field}.ports[{j}]");
        if !(1..=65535).contains(&p.container_port) {
            errs.push(
                &format!("{pf}.containerPort"),
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
                &format!("{pf}.hostPort"),
                format!("Invalid value: {hp}: must be between 1 and 65535, inclusive"),
            );
        }
        if let Some(proto) = p.protocol.as_deref()
            && !matches!(proto, "TCP" | "UDP" | "SCTP")
        {
            errs.push(
                &format!("{pf}.protocol"),
                format!(
                    "Unsupported value: {proto:?}: supported values: \"SCTP\", \"TCP\", \"UDP\""
                ),
            );
        }
    }
}

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
        let Some(op) = Operator::from_node_selector(&r.operator) else {
            let other = &r.operator;
            errs.push(
                &format!("{f}.operator"),
                format!("Invalid value: {other:?}: not a valid selector operator"),
            );
            continue;
        };
        if let Err(e) = Requirement::new(&r.key, op, values) {
            errs.push(&f, e);
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
        if let Err(err) = Requirement::new(&e.key, op, e.values.as_deref().unwrap_or(&[])) {
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
        let f = format!("spec.tolerations[{i}]");
        let key = t.key.as_deref().unwrap_or("");
        if !key.is_empty()
            && let Err(e) = validate_label_key(key)
        {
            errs.push(&format!("{f}.key"), e);
        }
        match t.operator.as_deref().unwrap_or("") {
            "" | "Equal" => {
                if key.is_empty() {
                    errs.push(&format!("{f}.operator"), "Invalid value: operator must be Exists when `key` is empty, which means \"match all values and all keys\"");
                }
                if let Err(e) = validate_label_value(t.value.as_deref().unwrap_or("")) {
                    errs.push(&format!("{f}.value"), e);
                }
            }
            "Exists" => {
                if !t.value.as_deref().unwrap_or("").is_empty() {
                    errs.push(
                        &format!("{f}.operator"),
                        "Invalid value: value must be empty when `operator` is 'Exists'",
                    );
                }
            }
            other => errs.push(
                &format!("{f}.operator"),
                format!("Unsupported value: {other:?}: supported values: \"Equal\", \"Exists\""),
            ),
        }
        let effect = t.effect.as_deref().unwrap_or("");
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute")
        {
            errs.push(
                &format!("{f}.effect"),
                format!("Unsupported value: {effect:?}: supported values: {EFFECTS}"),
            );
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            errs.push(&format!("{f}.effect"), format!("Invalid value: {effect:?}: effect must be 'NoExecute' when `tolerationSeconds` is set"));
        }
    }
}

fn topology_spread(errs: &mut Errors, cs: &[k8s::TopologySpreadConstraint]) {
    let mut seen = HashSet::new();
    for (i, c) in cs.iter().enumerate() {
        let f = format!("spec.topologySpreadConstraints[{i}]");
        if c.max_skew <= 0 {
            errs.push(
                &format!("{f}.maxSkew"),
                format!("Invalid value: {}: must be greater than zero", c.max_skew),
            );
        }
        if c.topology_key.is_empty() {
            errs.push(
                &format!("{f}.topologyKey"),
                "Required value: can not be empty",
            );
        } else if let Err(e) = validate_label_key(&c.topology_key) {
            errs.push(&format!("{f}.topologyKey"), e);
        }
        match c.when_unsatisfiable.as_str() {
            "DoNotSchedule" | "ScheduleAnyway" => {}
            other => errs.push(&format!("{f}.whenUnsatisfiable"), format!("Unsupported value: {other:?}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\"")),
        }
        if !seen.insert((c.topology_key.clone(), c.when_unsatisfiable.clone())) {
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
            if let Some(p) = policy
                && !matches!(p.as_str(), "Honor" | "Ignore")
            {
                errs.push(
                    &format!("{f}.{name}"),
                    format!("Unsupported value: {p:?}: supported values: \"Honor\", \"Ignore\""),
                );
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
    if p.metadata.name.as_deref().is_none_or(str::is_empty)
        && p.metadata
            .generate_name
            .as_deref()
            .is_none_or(str::is_empty)
    {
        errs.push(
            "metadata.name",
            "Required value: name or generateName is required",
        );
    }
    for (k, v) in p.metadata.labels.iter().flatten() {
        if let Err(e) = validate_label_key(k).and_then(|_| validate_label_value(v)) {
            errs.push("metadata.labels", e);
        }
    }
    let Some(spec) = &p.spec else {
        errs.push("spec", "Required value");
        return Err(errs);
    };
    if spec.containers.is_empty() {
        errs.push("spec.containers", "Required value");
    }
    let mut names = HashSet::new();
    for (i, c) in spec.containers.iter().enumerate() {
        container(&mut errs, &format!("spec.containers[{i}]"), c, &mut names);
    }
    for (i, c) in spec.init_containers.iter().flatten().enumerate() {
        container(
            &mut errs,
            &format!("spec.initContainers[{i}]"),
            c,
            &mut names,
        );
        if let Some(rp) = c.restart_policy.as_deref()
            && rp != "Always"
        {
            errs.push(
                &format!("spec.initContainers[{i}].restartPolicy"),
                format!("Unsupported value: {rp:?}: supported values: \"Always\""),
            );
        }
    }
    if let Some(r) = &spec.resources {
        for (name, _) in r.requests.iter().flatten().chain(r.limits.iter().flatten()) {
            if !(name == "cpu" || name == "memory" || name.starts_with("hugepages-")) {
                errs.push(&format!("spec.resources[{name}]"), format!("Unsupported value: {name:?}: supported values: \"cpu\", \"memory\", \"hugepages-*\""));
            }
        }
        resources(&mut errs, "spec.resources", Some(r));
    }
    quantities(&mut errs, "spec.overhead", spec.overhead.as_ref());
    for (k, v) in spec.node_selector.iter().flatten() {
        if let Err(e) = validate_label_key(k).and_then(|_| validate_label_value(v)) {
            errs.push("spec.nodeSelector", e);
        }
    }
    if let Some(a) = &spec.affinity {
        affinity(&mut errs, a);
    }
    tolerations(&mut errs, spec.tolerations.as_deref().unwrap_or(&[]));
    topology_spread(
        &mut errs,
        spec.topology_spread_constraints.as_deref().unwrap_or(&[]),
    );
    if let Some(policy) = spec.preemption_policy.as_deref()
        && !matches!(policy, "Never" | "PreemptLowerPriority")
    {
        errs.push("spec.preemptionPolicy", format!("Unsupported value: {policy:?}: supported values: \"Never\", \"PreemptLowerPriority\""));
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
    if errs.0.is_empty() { Ok(()) } else { Err(errs) }
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
        let errs = pod(&p).unwrap_err().0.join("\n");
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
                .any(|e| e.starts_with("spec.containers"))
        );
    }
}
