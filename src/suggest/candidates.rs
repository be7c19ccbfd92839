//! Candidates from the rejections: per rejected node, the plugins that failed there (the seam the
//! per-reason facts can feed), and from them, with the node and pod objects, the changes that
//! could clear every failure on some node — in three families: the cluster (uncordon, remove a
//! taint, add a label, add a node like one that would fit empty, delete named pods), the pod
//! (tolerate, drop a nodeSelector key or the required node affinity, lower a request to what a
//! node has free, spread with ScheduleAnyway, drop a required (anti-)affinity term, remove its
//! scheduling gates), and nothing (pods already terminating go). None is trusted: each is
//! verified by the pipeline.

use super::pod_change::{PodChange, request_text};
use super::{Candidate, Kind, Problem};
use crate::explain::{Explanation, Stage};
use crate::framework::snapshot::Snapshot;
use crate::model::intern::Str;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use crate::model::resource::{CPU, EPHEMERAL_STORAGE, MEMORY};
use crate::model::taints::{Effect, Taint};
use crate::plan::DAEMON_SET;
use crate::plan::edit::{Edit, UNSCHEDULABLE_TAINT};
use crate::plugins::{
    inter_pod_affinity, node_affinity, node_ports, node_resources_fit, node_unschedulable,
    pod_topology_spread, scheduling_gates, taint_toleration,
};
use std::collections::{BTreeMap, BTreeSet};

/// Per rejected node (by snapshot index), the filter plugins that failed there.
pub struct Rejections {
    pub nodes: Vec<(usize, BTreeSet<&'static str>)>,
    /// Plugins that rejected the pod before any node (PreEnqueue, PreFilter).
    pub before_nodes: BTreeSet<String>,
}

impl Rejections {
    pub fn from_explanation(e: &Explanation, snapshot: &Snapshot) -> Rejections {
        let mut before_nodes = BTreeSet::new();
        if !e.prefilter.plugin.is_empty() {
            before_nodes.insert(e.prefilter.plugin.clone());
        }
        let nodes = e
            .nodes
            .iter()
            .filter(|n| !n.feasible && n.stage == Some(Stage::Filter))
            .filter_map(|n| {
                let i = snapshot.node_index(n.name)?;
                Some((i, n.all_reasons.keys().copied().collect()))
            })
            .collect();
        Rejections {
            nodes,
            before_nodes,
        }
    }

    /// Every plugin that rejected the pod, for a sentence.
    fn plugins(&self) -> BTreeSet<String> {
        let mut all = self.before_nodes.clone();
        for (_, s) in &self.nodes {
            all.extend(s.iter().map(|p| p.to_string()));
        }
        all
    }

    /// Why nothing was tried: the plugins whose rejections no change here addresses.
    pub fn unaddressed(&self, e: &Explanation) -> String {
        let plugins = self.plugins();
        if plugins.is_empty() {
            return match &e.error {
                Some(err) => format!("the cycle failed with an error ({err})"),
                None => "the pod was rejected before any node was evaluated".into(),
            };
        }
        format!(
            "the pod is rejected by {}, for which no change is proposed here",
            plugins.into_iter().collect::<Vec<_>>().join(", ")
        )
    }
}

/// The node taints the pod does not tolerate (NoSchedule and NoExecute: the filter's).
pub fn untolerated(pod: &Pod, node: &NodeInfo) -> Vec<Taint> {
    node.node
        .taints
        .iter()
        .filter(|t| matches!(t.effect, Some(Effect::NoSchedule | Effect::NoExecute)))
        .filter(|t| !pod.tolerations.iter().any(|tol| tol.tolerates(t)))
        .cloned()
        .collect()
}

/// The nodeSelector entries the node does not satisfy.
fn selector_misses(pod: &Pod, node: &NodeInfo) -> Vec<(Str, Str)> {
    pod.node_selector
        .iter()
        .flat_map(|s| s.iter())
        .filter(|(k, v)| node.node.labels.get(*k) != Some(*v))
        .collect()
}

fn required_affinity_matches(pod: &Pod, node: &NodeInfo) -> bool {
    pod.required_node_affinity
        .affinity
        .as_ref()
        .is_none_or(|a| a.matches(&node.node.labels, node.name()))
}

/// The node-local shortfalls of the pod's requests: (resource, requested, free).
fn shortfalls(pod: &Pod, node: &NodeInfo) -> Vec<(&'static str, i64, i64)> {
    let (alloc, used, want) = (node.allocatable(), &node.requested, &pod.requests);
    [
        (CPU, want.milli_cpu, alloc.milli_cpu - used.milli_cpu),
        (MEMORY, want.memory, alloc.memory - used.memory),
        (
            EPHEMERAL_STORAGE,
            want.ephemeral_storage,
            alloc.ephemeral_storage - used.ephemeral_storage,
        ),
    ]
    .into_iter()
    .filter(|(_, want, free)| want > free)
    .collect()
}

/// Whether the node has room for one more pod.
fn pods_full(node: &NodeInfo) -> bool {
    node.pods.len() as i64 >= node.allocatable().allowed_pods
}

fn only(failing: &BTreeSet<&'static str>, allowed: &[&str]) -> bool {
    failing.iter().all(|p| allowed.contains(p))
}

pub fn generate(p: &Problem, r: &Rejections) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (i, failing) in &r.nodes {
        let node = &p.snapshot.nodes[*i];
        out.extend(node_changes(p.pod, node, failing));
        out.extend(evictions(p.pod, node, failing));
        if p.pod_edits {
            out.extend(node_pod_edits(p.pod, node, failing));
        }
    }
    out.extend(clones(p, r));
    if p.pod_edits {
        out.extend(pod_wide_edits(p.pod, r));
    }
    out
}

/// Cluster edits that clear every failure on this node, if there are such edits.
fn node_changes(pod: &Pod, node: &NodeInfo, failing: &BTreeSet<&'static str>) -> Option<Candidate> {
    let name = node.name();
    let mut edits = Vec::new();
    let mut words = Vec::new();
    let cordoned = failing.contains(node_unschedulable::NAME);
    if cordoned {
        edits.push(Edit::Uncordon(name));
        words.push(format!("uncordon {name}"));
    }
    for plugin in failing {
        match *plugin {
            node_unschedulable::NAME => {}
            taint_toleration::NAME => {
                let keys: BTreeMap<(&str, Option<&str>), Taint> = untolerated(pod, node)
                    .into_iter()
                    .filter(|t| !(cordoned && t.key == UNSCHEDULABLE_TAINT))
                    .map(|t| ((t.key.as_str(), t.effect.map(Effect::as_str)), t))
                    .collect();
                for taint in keys.into_values() {
                    edits.push(Edit::Untaint {
                        node: name,
                        key: taint.key,
                        effect: taint.effect,
                    });
                    words.push(format!("remove taint {taint} from {name}"));
                }
            }
            node_affinity::NAME if required_affinity_matches(pod, node) => {
                for (k, v) in selector_misses(pod, node) {
                    edits.push(Edit::Label {
                        node: name,
                        key: k,
                        value: Some(v),
                    });
                    words.push(format!("label {name} {k}={v}"));
                }
            }
            _ => return None,
        }
    }
    (!edits.is_empty()).then(|| Candidate {
        kind: Kind::Cluster,
        edits,
        pod: Vec::new(),
        amount: 0,
        description: words.join(", "),
    })
}

/// Pods deleted on a node whose only failures are room and ports: the port holders, then the
/// lowest-priority pods until the pod's requests fit. A set of pods all already terminating is
/// nothing to do but wait.
fn evictions(pod: &Pod, node: &NodeInfo, failing: &BTreeSet<&'static str>) -> Option<Candidate> {
    if !only(failing, &[node_resources_fit::NAME, node_ports::NAME]) {
        return None;
    }
    // DaemonSet and mirror pods come back where they were.
    let movable = |q: &Pod| !q.mirror && q.controller().is_none_or(|o| o.kind != DAEMON_SET);
    let mut chosen: Vec<&Pod> = node
        .pods
        .iter()
        .map(|q| q.as_ref())
        .filter(|q| {
            q.host_ports.iter().any(|held| {
                pod.host_ports.iter().any(|want| {
                    held.protocol == want.protocol
                        && held.port == want.port
                        && (held.ip == want.ip
                            || held.ip.as_str() == "0.0.0.0"
                            || want.ip.as_str() == "0.0.0.0")
                })
            })
        })
        .collect();
    if chosen.iter().any(|q| !movable(q)) {
        return None;
    }
    let mut rest: Vec<&Pod> = node
        .pods
        .iter()
        .map(|q| q.as_ref())
        .filter(|q| movable(q) && !chosen.iter().any(|c| c.uid == q.uid))
        .collect();
    // Terminating pods first (they are going anyway), then the lowest priority, then the
    // largest, then by name.
    rest.sort_by(|a, b| {
        (
            a.deletion_timestamp.is_none(),
            a.priority,
            -a.requests.milli_cpu,
            -a.requests.memory,
            a.key(),
        )
            .cmp(&(
                b.deletion_timestamp.is_none(),
                b.priority,
                -b.requests.milli_cpu,
                -b.requests.memory,
                b.key(),
            ))
    });
    let short = |chosen: &[&Pod]| {
        let mut freed = crate::model::resource::Resource::default();
        for q in chosen {
            freed.milli_cpu += q.requests.milli_cpu;
            freed.memory += q.requests.memory;
            freed.ephemeral_storage += q.requests.ephemeral_storage;
        }
        let (alloc, used, want) = (node.allocatable(), &node.requested, &pod.requests);
        want.milli_cpu > alloc.milli_cpu - used.milli_cpu + freed.milli_cpu
            || want.memory > alloc.memory - used.memory + freed.memory
            || want.ephemeral_storage
                > alloc.ephemeral_storage - used.ephemeral_storage + freed.ephemeral_storage
            || (node.pods.len() - chosen.len()) as i64 >= alloc.allowed_pods
    };
    let mut rest = rest.into_iter();
    while short(&chosen) {
        chosen.push(rest.next()?);
    }
    if chosen.is_empty() {
        return None;
    }
    let mut names: Vec<String> = chosen.iter().map(|q| q.key()).collect();
    names.sort();
    let name = node.name();
    let waiting = chosen.iter().all(|q| q.deletion_timestamp.is_some());
    let description = if waiting {
        format!(
            "wait: fits on {name} once {} (terminating) {} gone",
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" }
        )
    } else {
        format!("delete {} on {name}", names.join(", "))
    };
    Some(Candidate {
        kind: if waiting { Kind::Wait } else { Kind::Evict },
        edits: names
            .iter()
            .map(|n| {
                let (namespace, name) = n.split_once('/').unwrap_or(("", n));
                Edit::DeletePod {
                    namespace: Str::new(namespace),
                    name: Str::new(name),
                }
            })
            .collect(),
        pod: Vec::new(),
        amount: chosen.len() as i64,
        description,
    })
}

/// Pod edits that clear every failure on this node.
fn node_pod_edits(
    pod: &Pod,
    node: &NodeInfo,
    failing: &BTreeSet<&'static str>,
) -> Option<Candidate> {
    let mut changes = Vec::new();
    let mut amount = 0;
    for plugin in failing {
        match *plugin {
            taint_toleration::NAME => {
                changes.extend(untolerated(pod, node).into_iter().map(PodChange::Tolerate))
            }
            node_affinity::NAME => {
                changes.extend(
                    selector_misses(pod, node)
                        .into_iter()
                        .map(|(k, _)| PodChange::DropNodeSelector(k)),
                );
                if !required_affinity_matches(pod, node) {
                    changes.push(PodChange::DropRequiredNodeAffinity);
                }
            }
            node_resources_fit::NAME => {
                let (lowered, thousandths) = lower_requests(pod, node)?;
                changes.extend(lowered);
                amount += thousandths;
            }
            _ => return None,
        }
    }
    if changes.is_empty() {
        return None;
    }
    let description = changes
        .iter()
        .map(|c| c.describe(pod))
        .collect::<Vec<_>>()
        .join(", ");
    Some(Candidate {
        kind: Kind::Pod,
        edits: Vec::new(),
        pod: changes,
        amount,
        description,
    })
}

/// Each short resource requested by less, from the container that requests the most of it, to
/// what the node has free; with how much was taken off, in thousandths of the pod's request.
fn lower_requests(pod: &Pod, node: &NodeInfo) -> Option<(Vec<PodChange>, i64)> {
    if pod.resources.pod_level_requests.is_some() || pods_full(node) {
        return None;
    }
    let mut changes = Vec::new();
    let mut thousandths = 0;
    for (resource, want, free) in shortfalls(pod, node) {
        if free <= 0 {
            return None;
        }
        let amount = |q: crate::model::quantity::Quantity| {
            if resource == CPU {
                q.milli_value()
            } else {
                q.value()
            }
        };
        let (container, has) = pod
            .resources
            .containers
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.requests.get(resource).map(|q| (i, amount(q))))
            .max_by_key(|&(i, has)| (has, std::cmp::Reverse(i)))?;
        let lowered = has - (want - free);
        if lowered <= 0 {
            return None;
        }
        thousandths += (want - free) * 1000 / want.max(1);
        changes.push(PodChange::Request {
            container,
            resource: Str::new(resource),
            text: request_text(resource, lowered),
        });
    }
    Some((changes, thousandths))
}

/// Pod edits not tied to one node: spreading, inter-pod terms, scheduling gates.
fn pod_wide_edits(pod: &Pod, r: &Rejections) -> Vec<Candidate> {
    let plugins = r.plugins();
    let mut changes = Vec::new();
    if plugins.contains(scheduling_gates::NAME) && !pod.scheduling_gates.is_empty() {
        changes.push(PodChange::RemoveSchedulingGates);
    }
    if plugins.contains(pod_topology_spread::NAME) {
        changes.extend(
            pod.topology_spread_constraints
                .iter()
                .enumerate()
                .filter(|(_, c)| c.when_unsatisfiable == "DoNotSchedule")
                .map(|(i, _)| PodChange::ScheduleAnyway(i)),
        );
    }
    if plugins.contains(inter_pod_affinity::NAME) {
        changes.extend(
            (0..pod.affinity.required_anti_affinity.len()).map(PodChange::DropAntiAffinityTerm),
        );
        changes.extend((0..pod.affinity.required_affinity.len()).map(PodChange::DropAffinityTerm));
    }
    changes
        .into_iter()
        .map(|c| Candidate {
            kind: Kind::Pod,
            edits: Vec::new(),
            description: c.describe(pod),
            pod: vec![c],
            amount: 0,
        })
        .collect()
}

/// One node like a rejected one that would take the pod empty (its failures are room, ports,
/// cordoning or spreading): the smallest such node of each shape.
fn clones(p: &Problem, r: &Rejections) -> Vec<Candidate> {
    let mut shapes: BTreeMap<String, (i64, Str)> = BTreeMap::new();
    for (i, failing) in &r.nodes {
        if !only(
            failing,
            &[
                node_resources_fit::NAME,
                node_ports::NAME,
                node_unschedulable::NAME,
                pod_topology_spread::NAME,
                inter_pod_affinity::NAME,
            ],
        ) {
            continue;
        }
        let node = &p.snapshot.nodes[*i];
        let alloc = node.allocatable();
        let want = &p.pod.requests;
        if want.milli_cpu > alloc.milli_cpu
            || want.memory > alloc.memory
            || want.ephemeral_storage > alloc.ephemeral_storage
        {
            continue;
        }
        let mut labels: Vec<String> = node
            .node
            .labels
            .iter()
            .filter(|(k, _)| k.as_str() != crate::model::node::LABEL_HOSTNAME)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        labels.sort();
        let taints: Vec<String> = node.node.taints.iter().map(|t| t.to_string()).collect();
        let shape = format!(
            "{} {} {} {:?} {:?}",
            alloc.milli_cpu, alloc.memory, alloc.ephemeral_storage, labels, taints
        );
        let size = alloc.milli_cpu;
        shapes
            .entry(shape)
            .and_modify(|e| {
                if node.name().as_str() < e.1.as_str() {
                    e.1 = node.name();
                }
            })
            .or_insert((size, node.name()));
    }
    shapes
        .into_values()
        .map(|(size, node)| clone_node(node, 1, size))
        .collect()
}

/// `--clone-node NODE=COUNT`; `node_size` (its allocatable cpu) ranks the smaller node first.
pub(super) fn clone_node(node: Str, count: usize, node_size: i64) -> Candidate {
    Candidate {
        kind: Kind::Cluster,
        edits: vec![Edit::CloneNode { node, count }],
        pod: Vec::new(),
        amount: node_size * count as i64,
        description: match count {
            1 => format!("add 1 node like {node}"),
            n => format!("add {n} nodes like {node}"),
        },
    }
}
