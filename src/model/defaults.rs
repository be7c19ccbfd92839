//! What the API server does to objects before the scheduler sees them: core/v1 defaulting and
//! the Priority and RuntimeClass admission plugins. Objects read from files get this first, as in a real cluster.

use super::intern::Str;
use super::quantity::Quantity;
use super::resource::{ContainerResources, PodResources, RequestOptions, ResourceList};
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use std::collections::BTreeMap;

/// The classes every API server creates (`scheduling.SystemPriorityClasses`).
pub const SYSTEM_CLUSTER_CRITICAL: (&str, i32) = ("system-cluster-critical", 2_000_000_000);
pub const SYSTEM_NODE_CRITICAL: (&str, i32) = ("system-node-critical", 2_000_001_000);

/// Requests default to limits, per container (`SetDefaults_Pod`).
fn default_container_requests(c: &mut k8s::Container) {
    let Some(resources) = c.resources.as_mut() else {
        return;
    };
    let Some(limits) = resources.limits.as_ref() else {
        return;
    };
    let requests = resources.requests.get_or_insert_with(BTreeMap::new);
    for (k, v) in limits {
        requests.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

fn parsed(map: Option<&BTreeMap<String, K8sQuantity>>) -> ResourceList {
    let mut l = ResourceList::new();
    for (k, v) in map.into_iter().flatten() {
        if let Ok(q) = Quantity::parse(&v.0) {
            l.set(Str::new(k), q);
        }
    }
    l
}

fn is_pod_level(name: &str) -> bool {
    name == "cpu" || name == "memory" || name.starts_with("hugepages-")
}

/// `defaultHugePagePodLimits` and `defaultPodRequests` (PodLevelResources is on in v1.34).
fn default_pod_level_resources(spec: &mut k8s::PodSpec) {
    let Some(res) = spec.resources.as_ref() else {
        return;
    };
    let has_limits = res.limits.as_ref().is_some_and(|l| !l.is_empty());
    let has_requests = res.requests.as_ref().is_some_and(|r| !r.is_empty());
    if !has_limits && !has_requests {
        return;
    }
    let aggregate =
        |pick: fn(&k8s::ResourceRequirements) -> Option<&BTreeMap<String, K8sQuantity>>| {
            let as_container = |c: &k8s::Container| ContainerResources {
                requests: parsed(c.resources.as_ref().and_then(pick)),
                sidecar: c.restart_policy.as_deref() == Some("Always"),
                ..Default::default()
            };
            PodResources {
                containers: spec.containers.iter().map(as_container).collect(),
                init_containers: spec
                    .init_containers
                    .iter()
                    .flatten()
                    .map(as_container)
                    .collect(),
                ..Default::default()
            }
            .requests(&RequestOptions::default())
        };
    let container_limits = aggregate(|r| r.limits.as_ref());
    let container_requests = aggregate(|r| r.requests.as_ref());
    let res = spec.resources.as_mut().expect("checked above");
    let mut limits = res.limits.clone().unwrap_or_default();
    let requests_before = res.requests.clone().unwrap_or_default();
    for (name, q) in container_limits.iter() {
        if name.starts_with("hugepages-") && !requests_before.contains_key(name.as_str()) {
            limits
                .entry(name.to_string())
                .or_insert_with(|| K8sQuantity(q.to_string()));
        }
    }
    if !limits.is_empty() {
        res.limits = Some(limits.clone());
    }
    if limits.is_empty() {
        return;
    }
    let mut requests = requests_before;
    for (name, q) in container_requests.iter() {
        // Overcommit is allowed for cpu and memory, not hugepages.
        if (name.as_str() == "cpu" || name.as_str() == "memory")
            && !requests.contains_key(name.as_str())
        {
            requests.insert(name.to_string(), K8sQuantity(q.to_string()));
        }
    }
    for (name, q) in &limits {
        if is_pod_level(name) && !requests.contains_key(name) {
            requests.insert(name.clone(), q.clone());
        }
    }
    if !requests.is_empty() {
        res.requests = Some(requests);
    }
}

/// `SetDefaults_Pod` and `SetDefaults_PodSpec`, for the fields the scheduler reads.
pub fn pod(p: &mut k8s::Pod, default_namespace: &str) {
    if p.metadata.namespace.as_deref().is_none_or(str::is_empty) {
        p.metadata.namespace = Some(default_namespace.to_string());
    }
    let Some(spec) = p.spec.as_mut() else { return };
    if let Some(affinity) = spec.affinity.as_mut() {
        let no_labels = BTreeMap::new();
        merge_label_keys(affinity, p.metadata.labels.as_ref().unwrap_or(&no_labels));
    }
    for c in spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
    {
        default_container_requests(c);
        for port in c.ports.iter_mut().flatten() {
            if port.protocol.as_deref().is_none_or(str::is_empty) {
                port.protocol = Some("TCP".into());
            }
        }
    }
    default_pod_level_resources(spec);
    if spec.host_network == Some(true) {
        for c in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            for port in c.ports.iter_mut().flatten() {
                if port.host_port.unwrap_or(0) == 0 {
                    port.host_port = Some(port.container_port);
                }
            }
        }
    }
    if spec.scheduler_name.as_deref().is_none_or(str::is_empty) {
        spec.scheduler_name = Some(super::pod::DEFAULT_SCHEDULER_NAME.to_string());
    }
}

/// The pod strategy's `applyMatchLabelKeysAndMismatchLabelKeys` (MatchLabelKeysInPodAffinity, on in
/// v1.34): each `matchLabelKeys` key the pod has becomes `key In [value]` in the term's selector,
/// each `mismatchLabelKeys` key `key NotIn [value]`; the scheduler itself never reads the keys.
fn merge_label_keys(affinity: &mut k8s::Affinity, labels: &BTreeMap<String, String>) {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    let merge = |term: &mut k8s::PodAffinityTerm| {
        let Some(selector) = term.label_selector.as_mut() else {
            return;
        };
        let keys = [
            ("In", term.match_label_keys.as_deref()),
            ("NotIn", term.mismatch_label_keys.as_deref()),
        ];
        for (operator, keys) in keys {
            for key in keys.unwrap_or_default() {
                if let Some(value) = labels.get(key) {
                    selector
                        .match_expressions
                        .get_or_insert_with(Vec::new)
                        .push(LabelSelectorRequirement {
                            key: key.clone(),
                            operator: operator.into(),
                            values: Some(vec![value.clone()]),
                        });
                }
            }
        }
    };
    let affinity_terms = affinity.pod_affinity.as_mut().map(|a| {
        (
            &mut a.required_during_scheduling_ignored_during_execution,
            &mut a.preferred_during_scheduling_ignored_during_execution,
        )
    });
    let anti_terms = affinity.pod_anti_affinity.as_mut().map(|a| {
        (
            &mut a.required_during_scheduling_ignored_during_execution,
            &mut a.preferred_during_scheduling_ignored_during_execution,
        )
    });
    for (required, preferred) in affinity_terms.into_iter().chain(anti_terms) {
        required.iter_mut().flatten().for_each(merge);
        preferred
            .iter_mut()
            .flatten()
            .for_each(|w| merge(&mut w.pod_affinity_term));
    }
}

/// Why an admission plugin refuses a pod: its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

/// The Priority admission plugin: `spec.priority` from the named class, or the global default
/// class, else 0; `preemptionPolicy` from the class. A priority or policy written in the pod that
/// differs from the class's is refused, as the API server refuses it.
pub fn admit_priority(p: &mut k8s::Pod, classes: &[PriorityClass]) -> Result<(), Refused> {
    let Some(spec) = p.spec.as_mut() else {
        return Ok(());
    };
    let (value, policy) = match spec
        .priority_class_name
        .as_deref()
        .filter(|n| !n.is_empty())
    {
        Some(name) => match classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name))
        {
            Some(c) => (c.value.unwrap_or(0), c.preemption_policy.clone()),
            None => match [SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL]
                .iter()
                .find(|(n, _)| *n == name)
            {
                Some((_, v)) => (*v, Some("PreemptLowerPriority".to_string())),
                None => {
                    return Err(Refused(format!(
                        "no PriorityClass with name {name} was found"
                    )));
                }
            },
        },
        None => match classes
            .iter()
            .filter(|c| c.global_default == Some(true))
            .min_by_key(|c| c.value)
        {
            Some(c) => {
                spec.priority_class_name = c.metadata.name.clone();
                (c.value.unwrap_or(0), c.preemption_policy.clone())
            }
            None => (0, None),
        },
    };
    if let Some(given) = spec.priority
        && given != value
    {
        return Err(Refused(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        )));
    }
    spec.priority = Some(value);
    if let Some(policy) = policy {
        if let Some(given) = spec.preemption_policy.as_deref()
            && given != policy
        {
            return Err(Refused(format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            )));
        }
        spec.preemption_policy = Some(policy);
    } else if spec.preemption_policy.is_none() {
        spec.preemption_policy = Some("PreemptLowerPriority".into());
    }
    Ok(())
}

/// The RuntimeClass admission plugin: a pod naming a RuntimeClass gets the class's overhead and
/// scheduling constraints (node selector, tolerations); a class that does not exist, or an
/// overhead the class does not define, is refused. A pod that carries an overhead and names a
/// class the cluster state lacks was admitted already (`kubectl get pod -o yaml` prints it so):
/// it is taken as written, with a warning (the `Ok` value).
pub fn admit_runtime_class(
    p: &mut k8s::Pod,
    classes: &std::collections::HashMap<Str, std::sync::Arc<RuntimeClass>>,
) -> Result<Option<String>, Refused> {
    let Some(spec) = p.spec.as_mut() else {
        return Ok(None);
    };
    let class = match spec.runtime_class_name.as_deref().filter(|n| !n.is_empty()) {
        None => None,
        Some(name) => match classes.get(&Str::new(name)) {
            Some(class) => Some(class),
            None if spec.overhead.is_some() => {
                return Ok(Some(format!(
                    "RuntimeClass {name:?} is not in the cluster state: the pod's overhead, node selector and tolerations are taken as admission wrote them"
                )));
            }
            None => {
                return Err(Refused(format!(
                    "pod rejected: RuntimeClass {name:?} not found"
                )));
            }
        },
    };
    let fixed = class
        .and_then(|c| c.overhead.as_ref())
        .and_then(|o| o.pod_fixed.clone());
    match (&fixed, &spec.overhead) {
        (Some(fixed), Some(given)) if fixed != given => {
            return Err(Refused(
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead".into(),
            ));
        }
        (None, Some(_)) => {
            return Err(Refused(
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
                    .into(),
            ));
        }
        _ => {}
    }
    if fixed.is_some() {
        spec.overhead = fixed;
    }
    let Some(scheduling) = class.and_then(|c| c.scheduling.as_ref()) else {
        return Ok(None);
    };
    let selector = spec.node_selector.get_or_insert_with(BTreeMap::new);
    for (key, value) in scheduling.node_selector.iter().flatten() {
        match selector.get(key) {
            Some(own) if own != value => {
                return Err(Refused(format!(
                    "pod rejected: conflict: runtimeClass.scheduling.nodeSelector[{key}] = {value}; pod.spec.nodeSelector[{key}] = {own}"
                )));
            }
            _ => {
                selector.insert(key.clone(), value.clone());
            }
        }
    }
    if selector.is_empty() {
        spec.node_selector = None;
    }
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    for t in scheduling.tolerations.iter().flatten() {
        if !tolerations.contains(t) {
            tolerations.push(t.clone());
        }
    }
    if tolerations.is_empty() {
        spec.tolerations = None;
    }
    Ok(None)
}

/// Namespaces carry their own name as the `kubernetes.io/metadata.name` label.
pub fn namespace(ns: &mut k8s::Namespace) {
    if let Some(name) = ns.metadata.name.clone() {
        ns.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("kubernetes.io/metadata.name".into(), name);
    }
}

/// StorageClasses default to `volumeBindingMode: Immediate`.
pub fn storage_class(sc: &mut k8s_openapi::api::storage::v1::StorageClass) {
    if sc.volume_binding_mode.as_deref().is_none_or(str::is_empty) {
        sc.volume_binding_mode = Some("Immediate".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, value: i32, global: bool) -> PriorityClass {
        PriorityClass {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            value: Some(value),
            global_default: Some(global),
            ..Default::default()
        }
    }

    fn pod_with_class(name: Option<&str>) -> k8s::Pod {
        k8s::Pod {
            spec: Some(k8s::PodSpec {
                priority_class_name: name.map(String::from),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn priority_from_class_global_default_and_system_classes() {
        let classes = vec![class("high", 1000, false), class("default", 5, true)];
        let mut p = pod_with_class(Some("high"));
        admit_priority(&mut p, &classes).unwrap();
        assert_eq!(p.spec.as_ref().unwrap().priority, Some(1000));
        let mut p = pod_with_class(None);
        admit_priority(&mut p, &classes).unwrap();
        assert_eq!(p.spec.as_ref().unwrap().priority, Some(5));
        assert_eq!(
            p.spec.as_ref().unwrap().priority_class_name.as_deref(),
            Some("default")
        );
        let mut p = pod_with_class(Some("system-node-critical"));
        admit_priority(&mut p, &classes).unwrap();
        assert_eq!(p.spec.as_ref().unwrap().priority, Some(2_000_001_000));
        let mut p = pod_with_class(Some("nope"));
        assert!(admit_priority(&mut p, &classes).is_err());
    }

    #[test]
    fn a_priority_that_contradicts_the_class_is_refused() {
        let classes = vec![class("low", 10, false)];
        let mut p = pod_with_class(Some("low"));
        p.spec.as_mut().unwrap().priority = Some(100_000);
        assert_eq!(
            admit_priority(&mut p, &classes).unwrap_err().0,
            "the integer value of priority (100000) must not be provided in pod spec; priority admission controller computed 10 from the given PriorityClass name"
        );
        // The same number is accepted: it is what `kubectl get pod -o yaml` carries.
        let mut p = pod_with_class(Some("low"));
        p.spec.as_mut().unwrap().priority = Some(10);
        admit_priority(&mut p, &classes).unwrap();
        // Without a class and without a global default, the computed priority is 0.
        let mut p = pod_with_class(None);
        p.spec.as_mut().unwrap().priority = Some(5);
        assert!(admit_priority(&mut p, &[]).is_err());
        let mut never = class("never", 10, false);
        never.preemption_policy = Some("Never".into());
        let mut p = pod_with_class(Some("never"));
        p.spec.as_mut().unwrap().preemption_policy = Some("PreemptLowerPriority".into());
        assert!(admit_priority(&mut p, &[never]).is_err());
    }

    #[test]
    fn runtime_class_admission() {
        let rc: RuntimeClass = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gvisor"}, "handler": "runsc",
            "overhead": {"podFixed": {"cpu": "250m"}},
            "scheduling": {"nodeSelector": {"sandbox": "true"}, "tolerations": [{"key": "sandbox", "operator": "Exists"}]},
        }))
        .unwrap();
        let classes = [(Str::new("gvisor"), std::sync::Arc::new(rc))]
            .into_iter()
            .collect();
        let mut p = pod_with_class(None);
        p.spec.as_mut().unwrap().runtime_class_name = Some("gvisor".into());
        admit_runtime_class(&mut p, &classes).unwrap();
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.overhead.as_ref().unwrap()["cpu"].0, "250m");
        assert_eq!(spec.node_selector.as_ref().unwrap()["sandbox"], "true");
        assert_eq!(spec.tolerations.as_ref().unwrap().len(), 1);
        p.spec.as_mut().unwrap().runtime_class_name = Some("kata".into());
        // Admitted already: it carries the overhead.
        assert!(admit_runtime_class(&mut p, &classes).unwrap().is_some());
        p.spec.as_mut().unwrap().overhead = None;
        assert_eq!(
            admit_runtime_class(&mut p, &classes).unwrap_err().0,
            "pod rejected: RuntimeClass \"kata\" not found"
        );
        let mut p = pod_with_class(None);
        p.spec.as_mut().unwrap().overhead =
            Some([("cpu".to_string(), K8sQuantity("1".into()))].into());
        assert!(admit_runtime_class(&mut p, &classes).is_err());
    }

    #[test]
    fn match_label_keys_merge_into_the_selector() {
        let v: serde_json::Value = serde_json::json!({
            "metadata": {"name": "p", "labels": {"app": "web", "version": "v2"}},
            "spec": {"containers": [], "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": ["version", "absent"], "mismatchLabelKeys": ["app"]}]}}}
        });
        let mut p: k8s::Pod = serde_json::from_value(v).unwrap();
        pod(&mut p, "default");
        let term = &p
            .spec
            .unwrap()
            .affinity
            .unwrap()
            .pod_anti_affinity
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .unwrap()[0];
        let exprs = term
            .label_selector
            .as_ref()
            .unwrap()
            .match_expressions
            .as_ref()
            .unwrap();
        let got: Vec<(&str, &str, &str)> = exprs
            .iter()
            .map(|e| {
                (
                    e.key.as_str(),
                    e.operator.as_str(),
                    e.values.as_ref().unwrap()[0].as_str(),
                )
            })
            .collect();
        assert_eq!(got, [("version", "In", "v2"), ("app", "NotIn", "web")]);
    }

    #[test]
    fn requests_default_to_limits() {
        let mut c = k8s::Container {
            resources: Some(k8s::ResourceRequirements {
                limits: Some(BTreeMap::from([(
                    "cpu".to_string(),
                    K8sQuantity("2".into()),
                )])),
                ..Default::default()
            }),
            ..Default::default()
        };
        default_container_requests(&mut c);
        assert_eq!(c.resources.unwrap().requests.unwrap()["cpu"].0, "2");
    }
}
