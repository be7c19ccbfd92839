//! Edits to the pod being scheduled: each applied to the parsed pod (what the verification
//! schedules) and written as RFC 6902 operations on the pod's manifest (what a reader or a
//! script applies before `whatif -f`). Both come from the same value, one change at a time, so
//! each operation addresses the manifest as the changes before it left it.

use crate::model::intern::Str;
use crate::model::labels::Selector;
use crate::model::pod::Pod;
use crate::model::quantity::Quantity;
use crate::model::taints::{Taint, Toleration, TolerationOperator};
use serde_json::{Value, json};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodChange {
    /// Tolerate this taint exactly (`operator: Equal`).
    Tolerate(Taint),
    /// Drop this key from `spec.nodeSelector`.
    DropNodeSelector(Str),
    /// Drop `requiredDuringSchedulingIgnoredDuringExecution` of the node affinity.
    DropRequiredNodeAffinity,
    /// Set a container's request of one resource; `text` is the quantity as written.
    Request {
        container: usize,
        resource: Str,
        text: String,
    },
    /// `whenUnsatisfiable: ScheduleAnyway` for the topology spread constraint at this index.
    ScheduleAnyway(usize),
    /// Drop the required pod anti-affinity term at this index.
    DropAntiAffinityTerm(usize),
    /// Drop the required pod affinity term at this index.
    DropAffinityTerm(usize),
    /// Remove every scheduling gate.
    RemoveSchedulingGates,
}

/// A JSON Pointer reference token (RFC 6901): `~` and `/` escaped.
fn token(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

impl PodChange {
    /// What it does, for people.
    pub fn describe(&self, pod: &Pod) -> String {
        match self {
            PodChange::Tolerate(t) => format!("tolerate {t}"),
            PodChange::DropNodeSelector(k) => {
                let v = pod
                    .node_selector
                    .as_ref()
                    .and_then(|s| s.get(*k))
                    .unwrap_or_default();
                format!("drop nodeSelector {k}={v}")
            }
            PodChange::DropRequiredNodeAffinity => "drop the required node affinity".into(),
            PodChange::Request {
                container,
                resource,
                text,
            } => {
                let was = pod
                    .resources
                    .containers
                    .get(*container)
                    .and_then(|c| c.requests.get(resource))
                    .map(|q| quantity_text(resource, q))
                    .unwrap_or_default();
                format!("request {resource} {text} (was {was}) in container #{container}")
            }
            PodChange::ScheduleAnyway(i) => {
                let key = pod
                    .topology_spread_constraints
                    .get(*i)
                    .map(|c| c.topology_key.as_str())
                    .unwrap_or_default();
                format!("spread over {key} with whenUnsatisfiable: ScheduleAnyway")
            }
            PodChange::DropAntiAffinityTerm(i) => term_text("anti-affinity", pod, *i, true),
            PodChange::DropAffinityTerm(i) => term_text("affinity", pod, *i, false),
            PodChange::RemoveSchedulingGates => format!(
                "remove the scheduling gate(s) {}",
                pod.scheduling_gates
                    .iter()
                    .map(|g| g.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The RFC 6902 operations on the manifest of `pod` (the pod as the changes before this
    /// one left it).
    pub fn patch(&self, pod: &Pod) -> Vec<Value> {
        match self {
            PodChange::Tolerate(t) => {
                let mut toleration =
                    json!({"key": t.key.as_str(), "operator": "Equal", "value": t.value.as_str()});
                if let Some(e) = t.effect {
                    toleration["effect"] = json!(e.as_str());
                }
                if pod.tolerations.is_empty() {
                    vec![json!({"op": "add", "path": "/spec/tolerations", "value": [toleration]})]
                } else {
                    vec![json!({"op": "add", "path": "/spec/tolerations/-", "value": toleration})]
                }
            }
            PodChange::DropNodeSelector(k) => vec![json!({
                "op": "remove",
                "path": format!("/spec/nodeSelector/{}", token(k)),
            })],
            PodChange::DropRequiredNodeAffinity => vec![json!({
                "op": "remove",
                "path": "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
            })],
            PodChange::Request {
                container,
                resource,
                text,
            } => {
                // The whole map: a container given only limits has no `requests` to add into
                // (the API server copies limits into requests; so does the map written here).
                let mut requests = serde_json::Map::new();
                if let Some(c) = pod.resources.containers.get(*container) {
                    for (name, q) in c.requests.iter() {
                        requests.insert(name.to_string(), json!(quantity_text(&name, q)));
                    }
                }
                requests.insert(resource.to_string(), json!(text));
                vec![json!({
                    "op": "add",
                    "path": format!("/spec/containers/{container}/resources/requests"),
                    "value": requests,
                })]
            }
            PodChange::ScheduleAnyway(i) => {
                let mut ops = vec![json!({
                    "op": "replace",
                    "path": format!("/spec/topologySpreadConstraints/{i}/whenUnsatisfiable"),
                    "value": "ScheduleAnyway",
                })];
                // The API server accepts minDomains only with DoNotSchedule.
                if pod
                    .topology_spread_constraints
                    .get(*i)
                    .is_some_and(|c| c.min_domains.is_some())
                {
                    ops.push(json!({
                        "op": "remove",
                        "path": format!("/spec/topologySpreadConstraints/{i}/minDomains"),
                    }));
                }
                ops
            }
            PodChange::DropAntiAffinityTerm(i) => vec![json!({
                "op": "remove",
                "path": format!("/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/{i}"),
            })],
            PodChange::DropAffinityTerm(i) => vec![json!({
                "op": "remove",
                "path": format!("/spec/affinity/podAffinity/requiredDuringSchedulingIgnoredDuringExecution/{i}"),
            })],
            PodChange::RemoveSchedulingGates => {
                vec![json!({"op": "remove", "path": "/spec/schedulingGates"})]
            }
        }
    }

    /// The change on the parsed pod, as parsing the patched manifest would give it.
    pub fn apply(&self, pod: &mut Pod) {
        match self {
            PodChange::Tolerate(t) => pod.tolerations.push(Toleration {
                key: t.key,
                operator: TolerationOperator::Equal,
                value: t.value,
                effect: t.effect.map(Some),
                seconds: None,
            }),
            PodChange::DropNodeSelector(k) => {
                if let Some(sel) = &mut pod.node_selector {
                    sel.remove(*k);
                    pod.required_node_affinity.node_selector = Some(Selector::from_set(sel));
                }
            }
            PodChange::DropRequiredNodeAffinity => {
                pod.required_node_affinity.affinity = None;
                pod.required_node_affinity_terms = None;
            }
            PodChange::Request {
                container,
                resource,
                text,
            } => {
                let Ok(q) = Quantity::parse(text) else {
                    return;
                };
                if let Some(c) = pod.resources.containers.get_mut(*container) {
                    c.requests.set(*resource, q);
                }
                (pod.requests, pod.non_zero_cpu, pod.non_zero_memory) = pod.resources.calculate();
            }
            PodChange::ScheduleAnyway(i) => {
                if let Some(c) = pod.topology_spread_constraints.get_mut(*i) {
                    c.when_unsatisfiable = "ScheduleAnyway".into();
                    c.min_domains = None;
                }
            }
            PodChange::DropAntiAffinityTerm(i) => {
                if *i < pod.affinity.required_anti_affinity.len() {
                    pod.affinity.required_anti_affinity.remove(*i);
                }
            }
            PodChange::DropAffinityTerm(i) => {
                if *i < pod.affinity.required_affinity.len() {
                    pod.affinity.required_affinity.remove(*i);
                }
            }
            PodChange::RemoveSchedulingGates => pod.scheduling_gates.clear(),
        }
    }
}

fn term_text(what: &str, pod: &Pod, i: usize, anti: bool) -> String {
    let terms = if anti {
        &pod.affinity.required_anti_affinity
    } else {
        &pod.affinity.required_affinity
    };
    match terms.get(i) {
        Some(t) => format!(
            "drop the required pod {what} term #{i} (topologyKey {})",
            t.topology_key
        ),
        None => format!("drop the required pod {what} term #{i}"),
    }
}

/// A quantity as a manifest would write it: cpu in millicores, memory and storage in Mi when
/// whole, anything else as a plain number.
pub fn quantity_text(resource: &str, q: Quantity) -> String {
    const MI: i64 = 1 << 20;
    match resource {
        crate::model::resource::CPU => format!("{}m", q.milli_value()),
        crate::model::resource::MEMORY | crate::model::resource::EPHEMERAL_STORAGE
            if q.value() % MI == 0 =>
        {
            format!("{}Mi", q.value() / MI)
        }
        _ => q.to_string(),
    }
}

/// A request of `amount` (millicores for cpu, else units) as a manifest would write it, rounded
/// down to a whole Mi for memory and storage above one Mi.
pub fn request_text(resource: &str, amount: i64) -> String {
    const MI: i64 = 1 << 20;
    match resource {
        crate::model::resource::CPU => format!("{amount}m"),
        crate::model::resource::MEMORY | crate::model::resource::EPHEMERAL_STORAGE
            if amount >= MI =>
        {
            format!("{}Mi", amount / MI)
        }
        _ => amount.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::taints::Effect;

    #[test]
    fn pointer_tokens_escape_tilde_and_slash() {
        assert_eq!(token("kubernetes.io/os"), "kubernetes.io~1os");
        assert_eq!(token("a~b"), "a~0b");
    }

    #[test]
    fn the_first_toleration_adds_the_list_and_the_next_appends() {
        let mut pod = crate::testing::parsed_pod(crate::testing::pod(
            "ns/p",
            None,
            "1",
            0,
            serde_json::json!({}),
        ));
        let taint = Taint {
            key: Str::new("dedicated"),
            value: Str::new("gpu"),
            effect: Some(Effect::NoSchedule),
        };
        let change = PodChange::Tolerate(taint.clone());
        assert_eq!(change.patch(&pod)[0]["path"], "/spec/tolerations");
        change.apply(&mut pod);
        assert!(pod.tolerations[0].tolerates(&taint));
        assert_eq!(change.patch(&pod)[0]["path"], "/spec/tolerations/-");
    }

    #[test]
    fn requests_are_written_as_manifests_write_them() {
        assert_eq!(request_text("cpu", 1500), "1500m");
        assert_eq!(request_text("memory", (3 << 20) + 5), "3Mi");
        assert_eq!(request_text("memory", 512), "512");
    }
}
