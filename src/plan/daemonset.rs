//! The DaemonSet controller's part: on which nodes a DaemonSet runs a pod
//! (`NodeShouldRunDaemonPod`: the template's nodeName, its required node affinity and
//! nodeSelector, and the node's NoSchedule/NoExecute taints against its tolerations plus the ones
//! the controller adds), and the pod it creates for a node, pinned there by a required node
//! affinity on `metadata.name` that replaces the template's. The scheduler still decides whether
//! the pinned pod fits (resources, ports, volumes) and may preempt to make room.

use super::{DAEMON_SET, Origin, Outcome, PodResult};
use crate::model::cluster::Cluster;
use crate::model::intern::{Interner, Str};
use crate::model::node::Node;
use crate::model::node_selector::NodeSelector;
use crate::model::pod::Pod;
use crate::model::taints::{Effect, Taint, Toleration, TolerationOperator};
use crate::plugins::node_affinity;
use k8s_openapi::api::core::v1 as k8s;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A DaemonSet of `-f`.
#[derive(Clone, Debug)]
pub struct DaemonSet {
    pub namespace: Str,
    pub name: Str,
    /// A pod as the controller creates it, before it is pinned to a node: the template, with
    /// the tolerations the controller adds and the DaemonSet as its controller.
    pub template: Pod,
    /// `updateStrategy: OnDelete`: pods already running are kept, not replaced.
    pub on_delete: bool,
}

/// What the DaemonSet does on one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeStatus {
    /// `NodeShouldRunDaemonPod` says no: which predicate, in words.
    Skipped(String),
    /// A pod of the DaemonSet already runs there and `OnDelete` keeps it.
    Kept(String),
    /// A pod is created for the node and waits in the queue.
    Queued,
    /// A pod is created for the node; what the scheduler did with it.
    Gets(Outcome),
}

/// Every node, with what the DaemonSet does there.
#[derive(Clone, Debug)]
pub struct Coverage {
    /// `namespace/name`.
    pub daemon_set: String,
    pub nodes: Vec<(Str, NodeStatus)>,
    /// Pods of the DaemonSet that were running, each replaced or removed by the update.
    pub replaced: Vec<String>,
}

impl Coverage {
    /// Fills in what the scheduler did with each node's pod.
    pub fn resolve(&mut self, pods: &[PodResult]) {
        let mine: BTreeMap<Str, &Outcome> = pods
            .iter()
            .filter_map(|r| match &r.origin {
                Origin::DaemonSet { name, node } if *name == self.daemon_set => {
                    Some((*node, &r.outcome))
                }
                _ => None,
            })
            .collect();
        for (node, status) in &mut self.nodes {
            if *status == NodeStatus::Queued
                && let Some(outcome) = mine.get(node)
            {
                *status = NodeStatus::Gets((*outcome).clone());
            }
        }
    }
}

/// `AddOrUpdateDaemonPodTolerations`: what every DaemonSet pod tolerates.
pub fn add_controller_tolerations(pod: &mut Pod) {
    let mut add = |key: &str, effect: Effect| {
        let t = Toleration {
            key: Str::new(key),
            operator: TolerationOperator::Exists,
            value: Str::empty(),
            effect: Some(Some(effect)),
            seconds: None,
        };
        // `AddOrUpdateTolerationInPodSpec`: an equal toleration is replaced, not repeated.
        match pod.tolerations.iter_mut().find(|x| {
            x.key == t.key && x.operator == t.operator && x.value == t.value && x.effect == t.effect
        }) {
            Some(existing) => *existing = t,
            None => pod.tolerations.push(t),
        }
    };
    add("node.kubernetes.io/not-ready", Effect::NoExecute);
    add("node.kubernetes.io/unreachable", Effect::NoExecute);
    add("node.kubernetes.io/disk-pressure", Effect::NoSchedule);
    add("node.kubernetes.io/memory-pressure", Effect::NoSchedule);
    add("node.kubernetes.io/pid-pressure", Effect::NoSchedule);
    add("node.kubernetes.io/unschedulable", Effect::NoSchedule);
    if pod.host_network {
        add("node.kubernetes.io/network-unavailable", Effect::NoSchedule);
    }
}

fn untolerated(taints: &[Taint], tolerations: &[Toleration]) -> Option<String> {
    crate::model::taints::first_untolerated_do_not_schedule(taints, tolerations)
        .map(|t| format!("untolerated taint {t}"))
}

/// `NodeShouldRunDaemonPod`'s first answer: `Err` says which predicate fails.
pub fn should_run(template: &Pod, node: &Node) -> Result<(), String> {
    if let Some(name) = template.node_name
        && name != node.name
    {
        return Err(format!("the template's nodeName is {name}"));
    }
    if !template
        .required_node_affinity
        .matches(&node.labels, node.name)
    {
        return Err(node_affinity::ERR_REASON_POD.to_string());
    }
    untolerated(&node.taints, &template.tolerations).map_or(Ok(()), Err)
}

/// Replaces the pod's required node affinity by the one the controller writes: this node only.
pub fn pin(pod: &mut Pod, node: Str, strings: &Interner) {
    let term = k8s::NodeSelectorTerm {
        match_fields: Some(vec![k8s::NodeSelectorRequirement {
            key: "metadata.name".into(),
            operator: "In".into(),
            values: Some(vec![node.to_string()]),
        }]),
        match_expressions: None,
    };
    pod.required_node_affinity.affinity = Some(NodeSelector::parse(
        &k8s::NodeSelector {
            node_selector_terms: vec![term.clone()],
        },
        strings,
    ));
    pod.required_node_affinity_terms = Some(vec![term]);
}

/// The pod the DaemonSet of `template` creates for `node`.
pub fn pod_for(template: &Pod, node: Str, strings: &Interner) -> Pod {
    let mut p = template.clone();
    p.name = Str::new(format!("{}-{node}", template.name));
    p.uid = Str::new(format!(
        "kubectl-sched-plan/{}/{}",
        template.namespace, p.name
    ));
    p.node_name = None;
    pin(&mut p, node, strings);
    p
}

/// A copy of a DaemonSet or static pod for another node: a DaemonSet pod re-pinned there (for
/// the scheduler to place), a mirror pod bound there (the kubelet runs it).
pub fn copy_to(pod: &Pod, node: Str, strings: &Interner) -> Pod {
    let mut p = super::replacement(pod);
    p.uid = Str::new(format!("{}@{node}", pod.uid));
    match (pod.mirror, pod.node_name) {
        (true, Some(old)) => {
            // Mirror pods are named after their node.
            let base = pod.name.strip_suffix(old.as_str()).unwrap_or(&pod.name);
            p.name = Str::new(format!("{base}{node}"));
            p.node_name = Some(node);
        }
        _ => {
            let owner = pod.controller().map_or(pod.name, |o| o.name);
            p.name = Str::new(format!("{owner}-{node}"));
            pin(&mut p, node, strings);
        }
    }
    p
}

/// The pods the DaemonSets already running in the cluster would create on a node added with
/// `--add-node`. Each DaemonSet is known only by its pods, whose required node affinity the
/// controller replaced: its nodeSelector and tolerations decide, its node affinity is unknown.
pub fn inferred_pods(cluster: &Cluster, node: &Node) -> Vec<Pod> {
    let mut representatives: BTreeMap<(Str, Str), &Arc<Pod>> = BTreeMap::new();
    for p in &cluster.pods {
        if let Some(o) = p.controller().filter(|o| o.kind == DAEMON_SET) {
            representatives
                .entry((p.namespace, o.name))
                .and_modify(|r| {
                    if p.name < r.name {
                        *r = p;
                    }
                })
                .or_insert(p);
        }
    }
    representatives
        .values()
        .filter(|p| {
            p.node_selector
                .as_ref()
                .is_none_or(|s| s.iter().all(|(k, v)| node.labels.get(k) == Some(v)))
                && untolerated(&node.taints, &p.tolerations).is_none()
        })
        .map(|p| copy_to(p, node.name, &cluster.strings))
        .collect()
}

/// Whether `pod` is one of this DaemonSet's.
pub fn owns(ds: &DaemonSet, pod: &Pod) -> bool {
    pod.namespace == ds.namespace
        && pod
            .controller()
            .is_some_and(|o| o.kind == DAEMON_SET && o.name == ds.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cluster::convert_pod;
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    use crate::testing::{cluster, node, pod};
    use serde_json::json;

    fn template(extra: serde_json::Value) -> Pod {
        let mut p = pod("ns/agent", None, "100m", 0, json!({}));
        for (k, v) in extra.as_object().unwrap() {
            p["spec"][k] = v.clone();
        }
        let mut p = convert_pod(
            serde_json::from_value(p).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod();
        add_controller_tolerations(&mut p);
        p
    }

    fn tainted(name: &str, taints: serde_json::Value) -> Node {
        let mut n = node(name, "4", json!({"pool": "gpu"}));
        n["spec"] = json!({"taints": taints});
        Node::from_k8s(
            &serde_json::from_value(n).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
    }

    #[test]
    fn the_controller_tolerates_cordons_pressure_and_not_ready_nodes() {
        let t = template(json!({}));
        for taint in [
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
            json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
            json!([{"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]),
            json!([{"key": "dedicated", "value": "gpu", "effect": "PreferNoSchedule"}]),
        ] {
            assert_eq!(
                should_run(&t, &tainted("n", taint.clone())),
                Ok(()),
                "{taint}"
            );
        }
        assert_eq!(
            should_run(
                &t,
                &tainted(
                    "n",
                    json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
                )
            ),
            Err("untolerated taint dedicated=gpu:NoSchedule".into())
        );
        // network-unavailable only for host-network pods.
        let net =
            json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]);
        assert!(should_run(&t, &tainted("n", net.clone())).is_err());
        let host = template(json!({"hostNetwork": true}));
        assert_eq!(should_run(&host, &tainted("n", net)), Ok(()));
        // Adding twice does not repeat a toleration.
        let mut twice = t.clone();
        add_controller_tolerations(&mut twice);
        assert_eq!(twice.tolerations, t.tolerations);
    }

    #[test]
    fn node_selector_affinity_and_node_name_are_the_controllers_predicates() {
        let n = tainted("n", json!([]));
        let sel = template(json!({"nodeSelector": {"pool": "cpu"}}));
        assert_eq!(
            should_run(&sel, &n),
            Err(node_affinity::ERR_REASON_POD.into())
        );
        let named = template(json!({"nodeName": "other"}));
        assert_eq!(
            should_run(&named, &n),
            Err("the template's nodeName is other".into())
        );
        let aff = template(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}]}}}}),
        );
        assert_eq!(should_run(&aff, &n), Ok(()));
        // The pinned pod keeps its nodeSelector; its affinity now names the node only.
        let pinned = pod_for(&aff, n.name, &Interner::new());
        assert!(pinned.required_node_affinity.matches(&n.labels, n.name));
        assert!(
            !pinned
                .required_node_affinity
                .matches(&n.labels, Str::new("m"))
        );
        assert_eq!(pinned.name.as_str(), "agent-n");
    }

    #[test]
    fn added_nodes_get_the_daemon_pods_whose_selector_and_tolerations_admit_them() {
        let ds = |name: &str, node: &str, extra: serde_json::Value| {
            let mut p = pod(
                &format!("ns/{name}-{node}"),
                Some(node),
                "100m",
                0,
                json!({}),
            );
            p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name, "uid": name, "controller": true}]);
            for (k, v) in extra.as_object().unwrap() {
                p["spec"][k] = v.clone();
            }
            p
        };
        let c = cluster(vec![
            node("a", "4", json!({})),
            node("b", "4", json!({})),
            ds("everywhere", "a", json!({})),
            ds("everywhere", "b", json!({})),
            ds(
                "gpu-only",
                "a",
                json!({"nodeSelector": {"pool": "gpu"}, "tolerations": [{"key": "dedicated", "operator": "Exists"}]}),
            ),
            ds("cpu-only", "b", json!({"nodeSelector": {"pool": "cpu"}})),
        ]);
        let gpu = tainted(
            "g",
            json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        );
        let names: Vec<String> = inferred_pods(&c, &gpu)
            .iter()
            .map(|p| p.name.to_string())
            .collect();
        assert_eq!(names, ["gpu-only-g"]);
        let cpu = Node::from_k8s(
            &serde_json::from_value(node("p", "4", json!({"pool": "cpu"}))).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap();
        let names: Vec<String> = inferred_pods(&c, &cpu)
            .iter()
            .map(|p| p.name.to_string())
            .collect();
        assert_eq!(names, ["cpu-only-p", "everywhere-p"]);
    }
}
