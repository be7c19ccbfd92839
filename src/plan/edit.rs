//! Edits to the cluster before anything is placed: `--cordon`, `--uncordon`, `--delete-node`,
//! `--taint`, `--untaint`, `--label`, `--add-node`, `--clone-node`, `--delete-pod`, and the cordon
//! of `--drain`. Each names an existing node or pod, or is an error naming the flag and value.

use super::daemonset;
use super::{DAEMON_SET, Fate, Leaving, fate};
use crate::model::cluster::Cluster;
use crate::model::intern::{Interner, Str};
use crate::model::labels::{Selector, validate_label_key, validate_label_value};
use crate::model::node::{LABEL_HOSTNAME, Node};
use crate::model::pod::Pod;
use crate::model::taints::{Effect, Taint};
use std::fmt;
use std::sync::Arc;

/// The taint the node lifecycle controller adds to a cordoned node (TaintNodesByCondition).
pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";
/// Taints under this prefix are derived from node conditions and cordoning; a fresh node has none.
const CONDITION_TAINT_PREFIX: &str = "node.kubernetes.io/";

/// Nodes one `--clone-node` adds at most.
pub const MAX_CLONES: usize = 10_000;

#[derive(Clone, Debug)]
pub enum Edit {
    Cordon(Str),
    Uncordon(Str),
    DeleteNode(Str),
    Taint {
        node: Str,
        taint: Taint,
    },
    /// Without an effect, every taint with the key goes.
    Untaint {
        node: Str,
        key: Str,
        effect: Option<Effect>,
    },
    /// `value: None` removes the label (`KEY-`).
    Label {
        node: Str,
        key: Str,
        value: Option<Str>,
    },
    /// A Node manifest, read from `file`.
    AddNode {
        node: Box<Node>,
        file: String,
    },
    CloneNode {
        node: Str,
        count: usize,
    },
    DeletePod {
        namespace: Str,
        name: Str,
    },
    /// Cordoned where it appears; its pods are evicted after every other change.
    Drain(Str),
    /// A change to every node a label selector (`-l`) selects where the edit appears, in name
    /// order, as kubectl's `drain -l`, `cordon -l` and `taint nodes -l` act.
    Selected {
        change: NodeChange,
        selector: Selector,
        /// The selector as written, for messages.
        text: String,
    },
}

/// What `-l` does to each node it selects.
#[derive(Clone, Debug)]
pub enum NodeChange {
    Cordon,
    Uncordon,
    Drain,
    Taint(Taint),
}

impl NodeChange {
    fn flag(&self) -> &'static str {
        match self {
            NodeChange::Cordon => "--cordon",
            NodeChange::Uncordon => "--uncordon",
            NodeChange::Drain => "--drain",
            NodeChange::Taint(_) => "--taint",
        }
    }

    /// The same change to one node.
    fn on(&self, node: Str) -> Edit {
        match self {
            NodeChange::Cordon => Edit::Cordon(node),
            NodeChange::Uncordon => Edit::Uncordon(node),
            NodeChange::Drain => Edit::Drain(node),
            NodeChange::Taint(taint) => Edit::Taint {
                node,
                taint: taint.clone(),
            },
        }
    }
}

/// An edit that cannot be applied or parsed: the flag and value, then why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {message}")]
pub struct EditError {
    pub flag: String,
    pub message: String,
}

/// An edit as applied: what it did and which pods it took off their nodes.
#[derive(Clone, Debug)]
pub struct Applied {
    /// The flag and value, as given (`--cordon worker-a1`).
    pub flag: String,
    /// What it did, in words.
    pub summary: String,
    /// Nodes it added.
    pub added_nodes: Vec<Str>,
    /// Pods it took off their nodes, with what happens to each.
    pub displaced: Vec<(Arc<Pod>, Fate)>,
    /// DaemonSet pods new nodes get, each pinned to its node, for the scheduler to place.
    pub daemon_pods: Vec<(Str, Pod)>,
    /// The nodes it drains, in order (their pods go after every other change).
    pub drains: Vec<Str>,
}

impl Applied {
    /// An edit before it has done anything.
    fn of(edit: &Edit) -> Applied {
        Applied {
            flag: edit.flag(),
            summary: String::new(),
            added_nodes: Vec::new(),
            displaced: Vec::new(),
            daemon_pods: Vec::new(),
            drains: Vec::new(),
        }
    }
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

fn parse_effect(s: &str) -> Result<Effect, String> {
    Effect::parse(s).ok_or_else(|| {
        format!(
            "invalid taint effect {s:?}: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
        )
    })
}

/// `KEY[=VALUE]:EFFECT`, kubectl taint's syntax; `whole` is what the flag's value should look
/// like, for the message.
fn parse_taint(spec: &str, whole: &str) -> Result<Taint, String> {
    let (kv, effect) = spec
        .rsplit_once(':')
        .ok_or_else(|| format!("expected {whole} (the effect is required)"))?;
    let effect = parse_effect(effect)?;
    let (key, val) = kv.split_once('=').unwrap_or((kv, ""));
    validate_label_key(key)?;
    validate_label_value(val)?;
    Ok(Taint {
        key: Str::new(key),
        value: Str::new(val),
        effect: Some(effect),
    })
}

/// `NODE=REST`, as `--taint`, `--untaint` and `--clone-node` take it.
fn node_and(value: &str, what: &str) -> Result<(Str, String), String> {
    match value.split_once('=') {
        Some((node, rest)) if !node.is_empty() && !rest.is_empty() => {
            Ok((Str::new(node), rest.to_string()))
        }
        _ => Err(format!("expected NODE={what}")),
    }
}

impl Edit {
    /// `--taint NODE=KEY[=VALUE]:EFFECT`, kubectl taint's syntax.
    pub fn taint(value: &str) -> Result<Edit, EditError> {
        let err = |message: String| EditError {
            flag: format!("--taint {value}"),
            message,
        };
        let (node, spec) = node_and(value, "KEY[=VALUE]:EFFECT").map_err(err)?;
        let taint = parse_taint(&spec, "NODE=KEY[=VALUE]:EFFECT").map_err(err)?;
        Ok(Edit::Taint { node, taint })
    }

    /// `--cordon -l SELECTOR`, `--uncordon -l …`, `--drain -l …` and `--taint -l SELECTOR
    /// KEY[=VALUE]:EFFECT`: the change on every node the selector selects (`taint` is the
    /// taint's spec, for `--taint` only).
    pub fn selected(flag: &str, selector: &str, taint: Option<&str>) -> Result<Edit, EditError> {
        let err = |message: String| EditError {
            flag: match taint {
                Some(t) => format!("--{flag} -l {selector} {t}"),
                None => format!("--{flag} -l {selector}"),
            },
            message,
        };
        let change = match (flag, taint) {
            ("cordon", None) => NodeChange::Cordon,
            ("uncordon", None) => NodeChange::Uncordon,
            ("drain", None) => NodeChange::Drain,
            ("taint", Some(spec)) => {
                NodeChange::Taint(parse_taint(spec, "KEY[=VALUE]:EFFECT").map_err(err)?)
            }
            _ => {
                return Err(err(
                    "-l selects nodes for --cordon, --uncordon, --drain and --taint".into(),
                ));
            }
        };
        let parsed = crate::model::selection::parse_label_selector(selector, &Interner::new())
            .map_err(err)?;
        Ok(Edit::Selected {
            change,
            selector: parsed,
            text: selector.to_string(),
        })
    }

    /// `-l`'s change to every node it selects where it stands, in name order, as one edit; a
    /// selector that selects no node is an error, as a name that names none.
    fn apply_selected(
        &self,
        change: &NodeChange,
        selector: &Selector,
        cluster: &mut Cluster,
    ) -> Result<Applied, EditError> {
        let mut nodes: Vec<Str> = cluster
            .nodes
            .iter()
            .filter(|n| selector.matches(&n.labels))
            .map(|n| n.name)
            .collect();
        if nodes.is_empty() {
            return Err(self.error("no node matches"));
        }
        nodes.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        let mut all = Applied::of(self);
        let mut summaries = Vec::new();
        for node in &nodes {
            let one = change.on(*node).apply(cluster)?;
            summaries.push(one.summary);
            all.displaced.extend(one.displaced);
            all.drains.extend(one.drains);
        }
        let names: Vec<&str> = nodes.iter().map(|n| n.as_str()).collect();
        all.summary = match change {
            NodeChange::Drain => format!(
                "drain {}: cordoned now, their pods evicted after the other changes, node after node",
                names.join(", ")
            ),
            _ => summaries.join("; "),
        };
        Ok(all)
    }

    /// `--untaint NODE=KEY[:EFFECT]`.
    pub fn untaint(value: &str) -> Result<Edit, EditError> {
        let err = |message: String| EditError {
            flag: format!("--untaint {value}"),
            message,
        };
        let (node, spec) = node_and(value, "KEY[:EFFECT]").map_err(err)?;
        let (key, effect) = match spec.split_once(':') {
            Some((k, e)) => (k, Some(parse_effect(e).map_err(err)?)),
            None => (spec.as_str(), None),
        };
        validate_label_key(key).map_err(err)?;
        Ok(Edit::Untaint {
            node,
            key: Str::new(key),
            effect,
        })
    }

    /// `--label NODE KEY=VALUE`, or `KEY-` to remove the label.
    pub fn label(node: &str, change: &str) -> Result<Edit, EditError> {
        let err = |message: String| EditError {
            flag: format!("--label {node} {change}"),
            message,
        };
        let (key, value) = match change.strip_suffix('-') {
            Some(key) if !change.contains('=') => (key, None),
            _ => {
                let (k, v) = change
                    .split_once('=')
                    .ok_or_else(|| err("expected KEY=VALUE, or KEY- to remove".into()))?;
                validate_label_value(v).map_err(err)?;
                (k, Some(Str::new(v)))
            }
        };
        validate_label_key(key).map_err(err)?;
        Ok(Edit::Label {
            node: Str::new(node),
            key: Str::new(key),
            value,
        })
    }

    /// `--clone-node NODE=COUNT`.
    pub fn clone_node(value: &str) -> Result<Edit, EditError> {
        let err = |message: String| EditError {
            flag: format!("--clone-node {value}"),
            message,
        };
        let (node, count) = node_and(value, "COUNT").map_err(err)?;
        let count = count
            .parse::<usize>()
            .ok()
            .filter(|&c| (1..=MAX_CLONES).contains(&c))
            .ok_or_else(|| err(format!("{count:?} is not a count from 1 to {MAX_CLONES}")))?;
        Ok(Edit::CloneNode { node, count })
    }

    /// `--delete-pod NAMESPACE/NAME`.
    pub fn delete_pod(value: &str) -> Result<Edit, EditError> {
        match value.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(Edit::DeletePod {
                    namespace: Str::new(ns),
                    name: Str::new(name),
                })
            }
            _ => Err(EditError {
                flag: format!("--delete-pod {value}"),
                message: "expected NAMESPACE/NAME".into(),
            }),
        }
    }

    /// The flag and value as a user writes them.
    pub fn flag(&self) -> String {
        match self {
            Edit::Cordon(n) => format!("--cordon {n}"),
            Edit::Uncordon(n) => format!("--uncordon {n}"),
            Edit::DeleteNode(n) => format!("--delete-node {n}"),
            Edit::Taint { node, taint } => format!("--taint {node}={taint}"),
            Edit::Untaint { node, key, effect } => match effect {
                Some(e) => format!("--untaint {node}={key}:{}", e.as_str()),
                None => format!("--untaint {node}={key}"),
            },
            Edit::Label { node, key, value } => match value {
                Some(v) => format!("--label {node} {key}={v}"),
                None => format!("--label {node} {key}-"),
            },
            Edit::AddNode { file, .. } => format!("--add-node {file}"),
            Edit::CloneNode { node, count } => format!("--clone-node {node}={count}"),
            Edit::DeletePod { namespace, name } => format!("--delete-pod {namespace}/{name}"),
            Edit::Drain(n) => format!("--drain {n}"),
            Edit::Selected { change, text, .. } => match change {
                NodeChange::Taint(t) => format!("--taint -l {text} {t}"),
                _ => format!("{} -l {text}", change.flag()),
            },
        }
    }

    fn error(&self, message: impl fmt::Display) -> EditError {
        EditError {
            flag: self.flag(),
            message: message.to_string(),
        }
    }

    fn node_index(&self, cluster: &Cluster, name: Str) -> Result<usize, EditError> {
        cluster
            .nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| self.error(format!("no node named {name:?}")))
    }

    /// Applies the edit to the cluster.
    pub fn apply(&self, cluster: &mut Cluster) -> Result<Applied, EditError> {
        let mut applied = Applied::of(self);
        match self {
            Edit::Selected {
                change, selector, ..
            } => return self.apply_selected(change, selector, cluster),
            Edit::Cordon(name) | Edit::Drain(name) => {
                let i = self.node_index(cluster, *name)?;
                let already = cluster.nodes[i].unschedulable;
                cordon(Arc::make_mut(&mut cluster.nodes[i]), true);
                applied.summary = match (self, already) {
                    (Edit::Drain(_), _) => {
                        applied.drains.push(*name);
                        format!(
                            "drain {name}: cordoned now, its pods evicted after the other changes"
                        )
                    }
                    (_, true) => format!("cordon {name} (already cordoned)"),
                    _ => format!("cordon {name}"),
                };
            }
            Edit::Uncordon(name) => {
                let i = self.node_index(cluster, *name)?;
                let was = cluster.nodes[i].unschedulable;
                cordon(Arc::make_mut(&mut cluster.nodes[i]), false);
                applied.summary = if was {
                    format!("uncordon {name}")
                } else {
                    format!("uncordon {name} (was not cordoned)")
                };
            }
            Edit::DeleteNode(name) => {
                let i = self.node_index(cluster, *name)?;
                cluster.nodes.remove(i);
                cluster.csi_nodes.remove(name);
                cluster.volume_attachments.remove(name);
                applied.displaced = take_pods(cluster, Leaving::NodeDeleted, |p| {
                    p.node_name == Some(*name)
                });
                applied.summary = format!(
                    "delete node {name}{}",
                    displaced_summary(&applied.displaced)
                );
            }
            Edit::Taint { node, taint } => {
                let i = self.node_index(cluster, *node)?;
                let n = Arc::make_mut(&mut cluster.nodes[i]);
                let replaced = n
                    .taints
                    .iter()
                    .position(|t| t.key == taint.key && t.effect == taint.effect)
                    .map(|k| n.taints.remove(k));
                n.taints.push(taint.clone());
                applied.summary = match replaced {
                    Some(old) => format!("taint {node} {taint} (was {old})"),
                    None => format!("taint {node} {taint}"),
                };
                if taint.effect == Some(Effect::NoExecute) {
                    applied.displaced = take_pods(cluster, Leaving::TaintEvicted, |p| {
                        p.node_name == Some(*node) && !p.mirror && evicted_by(taint, p)
                    });
                    applied
                        .summary
                        .push_str(&displaced_summary(&applied.displaced));
                }
            }
            Edit::Untaint { node, key, effect } => {
                let i = self.node_index(cluster, *node)?;
                let n = Arc::make_mut(&mut cluster.nodes[i]);
                let before = n.taints.len();
                n.taints
                    .retain(|t| t.key != *key || effect.is_some_and(|e| t.effect != Some(e)));
                if n.taints.len() == before {
                    return Err(self.error(format!("{node} has no such taint")));
                }
                if key.as_str() == UNSCHEDULABLE_TAINT && n.unschedulable {
                    // The node lifecycle controller puts it back while the node is cordoned.
                    return Err(self.error(format!(
                        "{node} is cordoned, and the node lifecycle controller keeps this taint on a cordoned node: use --uncordon {node}"
                    )));
                }
                applied.summary = format!("untaint {node} {key}");
            }
            Edit::Label { node, key, value } => {
                let i = self.node_index(cluster, *node)?;
                let n = Arc::make_mut(&mut cluster.nodes[i]);
                applied.summary = match value {
                    Some(v) => {
                        let old = n.labels.get(*key);
                        n.labels.insert(*key, *v);
                        match old {
                            Some(old) => format!("label {node} {key}={v} (was {old})"),
                            None => format!("label {node} {key}={v}"),
                        }
                    }
                    None => match n.labels.remove(*key) {
                        Some(old) => format!("label {node} {key}- (was {old})"),
                        None => return Err(self.error(format!("{node} has no label {key}"))),
                    },
                };
            }
            Edit::AddNode { node, file } => {
                if cluster.nodes.iter().any(|n| n.name == node.name) {
                    return Err(self.error(format!("a node named {:?} exists already", node.name)));
                }
                let name = node.name;
                cluster.nodes.push(Arc::new((**node).clone()));
                applied.daemon_pods = daemonset::inferred_pods(cluster, node)
                    .into_iter()
                    .map(|p| (name, p))
                    .collect();
                applied.added_nodes.push(name);
                applied.summary = format!(
                    "add node {name} (from {file}){}",
                    daemon_summary(applied.daemon_pods.len(), false)
                );
            }
            Edit::CloneNode { node, count } => {
                let i = self.node_index(cluster, *node)?;
                let original = cluster.nodes[i].clone();
                let originals: Vec<Arc<Pod>> = cluster
                    .pods
                    .iter()
                    .filter(|p| p.node_name == Some(*node))
                    .filter(|p| p.mirror || p.controller().is_some_and(|o| o.kind == DAEMON_SET))
                    .cloned()
                    .collect();
                let csi = cluster.csi_nodes.get(node).cloned();
                let mut k = 1;
                for _ in 0..*count {
                    let name = loop {
                        let candidate = Str::new(format!("{node}-clone-{k}"));
                        k += 1;
                        if !cluster.nodes.iter().any(|n| n.name == candidate) {
                            break candidate;
                        }
                    };
                    cluster.nodes.push(Arc::new(clone_node(&original, name)));
                    if let Some(csi) = &csi {
                        let mut c = (**csi).clone();
                        c.metadata.name = Some(name.to_string());
                        cluster.csi_nodes.insert(name, Arc::new(c));
                    }
                    for p in &originals {
                        let copy = daemonset::copy_to(p, name, &cluster.strings);
                        if p.mirror {
                            // The kubelet runs static pods without the scheduler.
                            cluster.pods.push(Arc::new(copy));
                        } else {
                            applied.daemon_pods.push((name, copy));
                        }
                    }
                    applied.added_nodes.push(name);
                }
                let names: Vec<&str> = applied.added_nodes.iter().map(|n| n.as_str()).collect();
                let per_node = originals.len();
                applied.summary = format!(
                    "clone {node} ×{count}: {}{}",
                    names.join(", "),
                    daemon_summary(per_node, *count > 1)
                );
            }
            Edit::DeletePod { namespace, name } => {
                let Some(pod) = cluster.find_pod(namespace, name).cloned() else {
                    return Err(self.error(format!("no pod {name:?} in namespace {namespace:?}")));
                };
                if pod.mirror {
                    return Err(self.error(
                        "a mirror pod: the kubelet recreates it from its static pod manifest, which only the node can change",
                    ));
                }
                let uid = pod.uid;
                cluster.terminated_pods.retain(|p| p.uid != uid);
                applied.displaced = take_pods(cluster, Leaving::Deleted, |p| p.uid == uid);
                applied.summary = format!(
                    "delete pod {namespace}/{name}{}",
                    match applied.displaced.first().map(|(_, f)| f) {
                        Some(Fate::Recreated) => " (its controller recreates it)".to_string(),
                        Some(Fate::Removed(why) | Fate::Lost(why)) => format!(" ({why})"),
                        None => " (finished: it held nothing)".to_string(),
                    }
                );
            }
        }
        Ok(applied)
    }
}

/// Cordons (`spec.unschedulable` and its taint) or uncordons a node.
fn cordon(node: &mut Node, on: bool) {
    node.unschedulable = on;
    let key = Str::new(UNSCHEDULABLE_TAINT);
    let has = node.taints.iter().any(|t| t.key == key);
    if on && !has {
        node.taints.push(Taint {
            key,
            value: Str::empty(),
            effect: Some(Effect::NoSchedule),
        });
    } else if !on {
        node.taints.retain(|t| t.key != key);
    }
}

/// A fresh node of the same shape: labels (hostname set to the new name), capacity and the
/// taints a user set; not cordoned, ready, and without images pulled or condition taints.
fn clone_node(original: &Node, name: Str) -> Node {
    let mut n = original.clone();
    n.name = name;
    if n.labels.get_str(LABEL_HOSTNAME).is_some() {
        n.labels.insert(Str::new(LABEL_HOSTNAME), name);
    }
    n.taints
        .retain(|t| !t.key.as_str().starts_with(CONDITION_TAINT_PREFIX));
    n.unschedulable = false;
    n.images.clear();
    n.ready = Some(true);
    n.api_object = None;
    n
}

/// The taint manager evicts a pod for a NoExecute taint unless the first toleration that matches
/// it has no `tolerationSeconds` (with seconds the pod goes once they have passed).
fn evicted_by(taint: &Taint, pod: &Pod) -> bool {
    pod.tolerations
        .iter()
        .find(|t| t.tolerates(taint))
        .is_none_or(|t| t.seconds.is_some())
}

/// Takes the pods matching `f` out of the cluster, each with what its controller does when it
/// leaves `why`.
fn take_pods(
    cluster: &mut Cluster,
    why: Leaving,
    f: impl Fn(&Pod) -> bool,
) -> Vec<(Arc<Pod>, Fate)> {
    let (taken, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut cluster.pods)
        .into_iter()
        .partition(|p| f(p));
    cluster.pods = kept;
    taken
        .into_iter()
        .map(|p| {
            let fate = fate(&p, why);
            (p, fate)
        })
        .collect()
}

fn displaced_summary(displaced: &[(Arc<Pod>, Fate)]) -> String {
    if displaced.is_empty() {
        return String::new();
    }
    let recreated = displaced
        .iter()
        .filter(|(_, f)| *f == Fate::Recreated)
        .count();
    let lost = displaced
        .iter()
        .filter(|(_, f)| matches!(f, Fate::Lost(_)))
        .count();
    let removed = displaced.len() - recreated - lost;
    let mut parts = Vec::new();
    if recreated > 0 {
        parts.push(format!("{} recreated elsewhere", plural(recreated, "pod")));
    }
    if lost > 0 {
        parts.push(format!("{} lost", plural(lost, "pod")));
    }
    if removed > 0 {
        parts.push(format!("{} gone", plural(removed, "pod")));
    }
    format!(": {}", parts.join(", "))
}

/// The pods a new node starts with; `each` when several nodes were added alike.
fn daemon_summary(count: usize, each: bool) -> String {
    let pods = plural(count, "DaemonSet or static pod");
    match (count, each) {
        (0, _) => String::new(),
        (_, true) => format!(" (each with {pods})"),
        (_, false) => format!(" (with {pods})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{cluster, node, pod};
    use serde_json::json;

    fn owned(mut p: serde_json::Value, kind: &str) -> serde_json::Value {
        let api = if kind == "Node" { "v1" } else { "apps/v1" };
        p["metadata"]["ownerReferences"] =
            json!([{"apiVersion": api, "kind": kind, "name": "o", "uid": "o", "controller": true}]);
        p
    }

    fn base() -> Cluster {
        let mut mirror = pod("kube-system/proxy-a", Some("a"), "100m", 0, json!({}));
        mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "x"});
        (*cluster(vec![
            node("a", "4", json!({"zone": "z1"})),
            node("b", "4", json!({"zone": "z2"})),
            owned(pod("ns/web-1", Some("a"), "1", 0, json!({})), "ReplicaSet"),
            owned(
                pod("ns/agent-a", Some("a"), "100m", 0, json!({})),
                DAEMON_SET,
            ),
            pod("ns/bare", Some("a"), "1", 0, json!({})),
            mirror,
        ]))
        .clone()
    }

    fn node_of<'a>(c: &'a Cluster, name: &str) -> &'a Node {
        c.node(name).unwrap()
    }

    #[test]
    fn cordon_sets_the_flag_and_the_taint_and_uncordon_clears_both() {
        let mut c = base();
        Edit::Cordon(Str::new("a")).apply(&mut c).unwrap();
        let a = node_of(&c, "a");
        assert!(a.unschedulable);
        assert!(a.taints.iter().any(|t| t.key == UNSCHEDULABLE_TAINT));
        let again = Edit::Cordon(Str::new("a")).apply(&mut c).unwrap();
        assert_eq!(again.summary, "cordon a (already cordoned)");
        assert_eq!(node_of(&c, "a").taints.len(), 1);
        Edit::Uncordon(Str::new("a")).apply(&mut c).unwrap();
        let a = node_of(&c, "a");
        assert!(!a.unschedulable && a.taints.is_empty());
    }

    #[test]
    fn unknown_nodes_and_pods_are_errors_naming_the_flag() {
        let mut c = base();
        let e = Edit::Cordon(Str::new("zz")).apply(&mut c).unwrap_err();
        assert_eq!(e.to_string(), "--cordon zz: no node named \"zz\"");
        let e = Edit::delete_pod("ns/nope")
            .unwrap()
            .apply(&mut c)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "--delete-pod ns/nope: no pod \"nope\" in namespace \"ns\""
        );
        let e = Edit::untaint("a=missing")
            .unwrap()
            .apply(&mut c)
            .unwrap_err();
        assert_eq!(e.to_string(), "--untaint a=missing: a has no such taint");
    }

    #[test]
    fn flags_parse_as_kubectl_writes_them() {
        let Edit::Taint { node, taint } = Edit::taint("a=dedicated=gpu:NoSchedule").unwrap() else {
            panic!()
        };
        assert_eq!(
            (node.as_str(), taint.to_string().as_str()),
            ("a", "dedicated=gpu:NoSchedule")
        );
        let Edit::Taint { taint, .. } = Edit::taint("a=example.com/k:NoExecute").unwrap() else {
            panic!()
        };
        assert_eq!(taint.value.as_str(), "");
        for bad in [
            "a",
            "a=k",
            "a=k:Never",
            "=k:NoSchedule",
            "a=bad key:NoSchedule",
        ] {
            assert!(Edit::taint(bad).is_err(), "{bad}");
        }
        assert!(matches!(
            Edit::untaint("a=k:NoExecute").unwrap(),
            Edit::Untaint {
                effect: Some(Effect::NoExecute),
                ..
            }
        ));
        assert!(matches!(
            Edit::label("a", "disk-").unwrap(),
            Edit::Label { value: None, .. }
        ));
        assert!(matches!(
            Edit::label("a", "tier=front-").unwrap_err(),
            EditError { .. }
        ));
        assert!(Edit::label("a", "disk").is_err());
        assert!(Edit::clone_node("a=0").is_err());
        assert!(Edit::clone_node("a=x").is_err());
        assert!(Edit::delete_pod("pod").is_err());
        assert_eq!(Edit::clone_node("a=2").unwrap().flag(), "--clone-node a=2");
    }

    #[test]
    fn deleting_a_node_recreates_owned_pods_and_loses_bare_ones() {
        let mut c = base();
        let a = Edit::DeleteNode(Str::new("a")).apply(&mut c).unwrap();
        let fates: Vec<(String, &Fate)> = a.displaced.iter().map(|(p, f)| (p.key(), f)).collect();
        assert!(fates.contains(&("ns/web-1".into(), &Fate::Recreated)));
        assert!(matches!(
            fates.iter().find(|(k, _)| k == "ns/bare").unwrap().1,
            Fate::Lost(_)
        ));
        assert!(matches!(
            fates.iter().find(|(k, _)| k == "ns/agent-a").unwrap().1,
            Fate::Removed(_)
        ));
        assert!(matches!(
            fates
                .iter()
                .find(|(k, _)| k == "kube-system/proxy-a")
                .unwrap()
                .1,
            Fate::Removed(_)
        ));
        assert!(c.node("a").is_none() && c.pods.is_empty());
        assert_eq!(
            a.summary,
            "delete node a: 1 pod recreated elsewhere, 1 pod lost, 2 pods gone"
        );
    }

    #[test]
    fn a_no_execute_taint_evicts_pods_that_do_not_tolerate_it_for_good() {
        let mut c = base();
        let mut tolerant = pod("ns/tolerant", Some("b"), "1", 0, json!({}));
        tolerant["spec"]["tolerations"] = json!([{"key": "k", "operator": "Exists"}]);
        let mut timed = pod("ns/timed", Some("b"), "1", 0, json!({}));
        timed["spec"]["tolerations"] =
            json!([{"key": "k", "operator": "Exists", "tolerationSeconds": 60}]);
        let mut c2 = (*cluster(vec![node("b", "4", json!({})), tolerant, timed])).clone();
        let a = Edit::taint("b=k:NoExecute")
            .unwrap()
            .apply(&mut c2)
            .unwrap();
        let gone: Vec<String> = a.displaced.iter().map(|(p, _)| p.key()).collect();
        assert_eq!(gone, ["ns/timed"]);
        // NoSchedule evicts nothing; the mirror pod always stays.
        let a = Edit::taint("a=k:NoSchedule")
            .unwrap()
            .apply(&mut c)
            .unwrap();
        assert!(a.displaced.is_empty());
        let a = Edit::taint("a=k:NoExecute").unwrap().apply(&mut c).unwrap();
        assert_eq!(a.displaced.len(), 3);
        assert_eq!(
            a.summary,
            "taint a k:NoExecute: 1 pod recreated elsewhere, 1 pod lost, 1 pod gone"
        );
    }

    #[test]
    fn labels_are_set_replaced_and_removed() {
        let mut c = base();
        let s = Edit::label("a", "zone=z9").unwrap().apply(&mut c).unwrap();
        assert_eq!(s.summary, "label a zone=z9 (was z1)");
        assert_eq!(
            node_of(&c, "a").labels.get_str("zone").unwrap().as_str(),
            "z9"
        );
        Edit::label("a", "zone-").unwrap().apply(&mut c).unwrap();
        assert!(node_of(&c, "a").labels.get_str("zone").is_none());
        assert!(Edit::label("a", "zone-").unwrap().apply(&mut c).is_err());
    }

    #[test]
    fn clones_are_fresh_nodes_of_the_same_shape_with_their_daemon_pods() {
        let mut c = base();
        Edit::Cordon(Str::new("a")).apply(&mut c).unwrap();
        let a = Edit::clone_node("a=2").unwrap().apply(&mut c).unwrap();
        assert_eq!(
            a.added_nodes.iter().map(|n| n.as_str()).collect::<Vec<_>>(),
            ["a-clone-1", "a-clone-2"]
        );
        let clone = node_of(&c, "a-clone-2");
        assert!(!clone.unschedulable && clone.taints.is_empty());
        assert_eq!(clone.labels.get_str("zone").unwrap().as_str(), "z1");
        assert_eq!(
            clone.labels.get_str(LABEL_HOSTNAME).unwrap().as_str(),
            "a-clone-2"
        );
        assert_eq!(clone.allocatable, node_of(&c, "a").allocatable);
        // The DaemonSet pod is queued for each clone, pinned to it; the static pod runs there.
        assert_eq!(a.daemon_pods.len(), 2);
        let (pinned_to, pinned) = &a.daemon_pods[1];
        assert_eq!(pinned_to.as_str(), "a-clone-2");
        assert!(pinned.node_name.is_none());
        let labels = &clone.labels;
        assert!(pinned.required_node_affinity.matches(labels, clone.name));
        assert!(!pinned.required_node_affinity.matches(labels, Str::new("a")));
        assert!(
            c.pods
                .iter()
                .any(|p| p.mirror && p.node_name == Some(clone.name))
        );
        // Numbering goes on after existing clones.
        let again = Edit::clone_node("a=1").unwrap().apply(&mut c).unwrap();
        assert_eq!(again.added_nodes[0].as_str(), "a-clone-3");
    }

    #[test]
    fn deleting_pods_by_name() {
        let mut c = base();
        let a = Edit::delete_pod("ns/web-1").unwrap().apply(&mut c).unwrap();
        assert_eq!(
            a.summary,
            "delete pod ns/web-1 (its controller recreates it)"
        );
        let a = Edit::delete_pod("ns/bare").unwrap().apply(&mut c).unwrap();
        assert_eq!(
            a.summary,
            "delete pod ns/bare (deleted; no controller recreates it)"
        );
        let e = Edit::delete_pod("kube-system/proxy-a")
            .unwrap()
            .apply(&mut c)
            .unwrap_err();
        assert!(e.message.starts_with("a mirror pod"));
    }
}
