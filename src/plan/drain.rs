//! `kubectl drain` as kubectl and the eviction API carry it out (k8s.io/kubectl/pkg/drain and the
//! pods/eviction subresource): every node is cordoned first; then, node after node, kubectl's
//! filters decide which pods go (DaemonSet and mirror pods stay, emptyDir needs
//! `--delete-emptydir-data`, pods without a controller need `--force`), and any pod they refuse
//! stops that node's drain before anything is evicted. Evictions go through PodDisruptionBudgets:
//! a pod whose budget allows no disruption is retried, and goes once enough replacements are
//! running again; kubectl waits for every eviction of a node before it moves to the next.

use super::queue::{Eviction, Queue};
use super::{DAEMON_SET, Leaving, Origin, Outcome, fate};
use crate::model::intern::Str;
use crate::model::pod::Pod;
use std::sync::Arc;

/// kubectl drain's messages (filters.go).
const LOCAL_STORAGE_FATAL: &str =
    "Pods with local storage (use --delete-emptydir-data to override)";
const UNMANAGED_FATAL: &str = "Pods that declare no controller (use --force to override)";
const DAEMON_SET_STAYS: &str = "DaemonSet-managed (kubectl drain --ignore-daemonsets leaves it)";
const MIRROR_STAYS: &str = "a static pod's mirror (the kubelet owns it)";

/// `kubectl drain`'s flags that change which pods go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `--force`: pods without a controller are deleted (and lost).
    pub force: bool,
    /// `--delete-emptydir-data`: pods with emptyDir volumes are evicted (their data is lost).
    pub delete_emptydir_data: bool,
}

/// What kubectl's filters decide for one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Filtered {
    Evict,
    /// Left on the node, and why.
    Stays(&'static str),
    /// The drain of the node is refused for this pod.
    Error(&'static str),
}

/// A pod whose eviction never succeeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Blocked {
    pub pod: String,
    /// The PodDisruptionBudget that refuses it, `namespace/name`.
    pub pdb: Option<String>,
    pub message: String,
    /// The pods that budget selects, running now.
    pub protects: Vec<String>,
    /// kubectl retries it every few seconds, for ever unless `--timeout` is given.
    pub retried: bool,
}

/// One `--drain` node.
#[derive(Clone, Debug, Default)]
pub struct DrainResult {
    pub node: Str,
    /// kubectl refuses to drain the node and evicts nothing from it (the node stays cordoned).
    pub refused: Option<String>,
    /// kubectl never starts on this node: it is still waiting for an eviction on this earlier one.
    pub waiting_on: Option<Str>,
    /// Pods left on the node and why.
    pub stays: Vec<(String, &'static str)>,
    /// Pods evicted, in order.
    pub evicted: Vec<String>,
    pub blocked: Vec<Blocked>,
}

impl DrainResult {
    /// kubectl would report the node drained.
    pub fn completed(&self) -> bool {
        self.refused.is_none() && self.waiting_on.is_none() && self.blocked.is_empty()
    }
}

/// kubectl drain's filters, in its order; the first that keeps a pod decides. Pods deleted long
/// ago are skipped only with `--skip-wait-for-delete-timeout`, whose default (0) skips none.
pub fn filter(pod: &Pod, opts: Options) -> Filtered {
    let finished = pod.is_terminated();
    // kubectl compares the kind only, then looks the DaemonSet up in apps/v1; the cluster read
    // holds no DaemonSets, so the one the pod names is taken to exist.
    if !finished && pod.controller().is_some_and(|o| o.kind == DAEMON_SET) {
        return Filtered::Stays(DAEMON_SET_STAYS);
    }
    if pod.mirror {
        return Filtered::Stays(MIRROR_STAYS);
    }
    if !finished && !opts.delete_emptydir_data && pod.volumes.iter().any(|v| v.empty_dir.is_some())
    {
        return Filtered::Error(LOCAL_STORAGE_FATAL);
    }
    if !finished && pod.controller().is_none() && !opts.force {
        return Filtered::Error(UNMANAGED_FATAL);
    }
    Filtered::Evict
}

/// kubectl's refusal: every error with the pods it concerns, aggregated as utilerrors does
/// (sorted here; kubectl's order is a map's).
fn refusal(errors: &[(&'static str, String)]) -> Option<String> {
    let mut by_message: Vec<(&str, Vec<&str>)> = Vec::new();
    for (msg, pod) in errors {
        match by_message.iter_mut().find(|(m, _)| m == msg) {
            Some((_, pods)) => pods.push(pod),
            None => by_message.push((msg, vec![pod])),
        }
    }
    by_message.sort();
    let parts: Vec<String> = by_message
        .iter()
        .map(|(msg, pods)| format!("cannot delete {msg}: {}", pods.join(", ")))
        .collect();
    match parts.len() {
        0 => None,
        1 => Some(parts[0].clone()),
        _ => Some(format!("[{}]", parts.join(", "))),
    }
}

/// Drains the nodes in order, each to completion (every pod evicted and every replacement
/// queued and scheduled) before the next, as kubectl does.
pub fn drain_all(queue: &mut Queue, nodes: &[Str], opts: Options) -> Vec<DrainResult> {
    let mut results = Vec::with_capacity(nodes.len());
    let mut stuck: Option<Str> = None;
    for &node in nodes {
        let mut r = DrainResult {
            node,
            ..Default::default()
        };
        if let Some(s) = stuck {
            r.waiting_on = Some(s);
            results.push(r);
            continue;
        }
        drain_node(queue, &mut r, opts);
        if r.blocked.iter().any(|b| b.retried) {
            stuck = Some(node);
        }
        results.push(r);
    }
    results
}

fn drain_node(queue: &mut Queue, r: &mut DrainResult, opts: Options) {
    let mut pods: Vec<Arc<Pod>> = queue
        .snapshot()
        .get(r.node)
        .map(|n| n.pods.clone())
        .unwrap_or_default();
    // The order the API server lists them in.
    pods.sort_by_key(|a| (a.namespace, a.name));
    let mut errors = Vec::new();
    let mut evict = Vec::new();
    for p in pods {
        match filter(&p, opts) {
            Filtered::Evict => evict.push(p),
            Filtered::Stays(why) => r.stays.push((p.key(), why)),
            Filtered::Error(msg) => errors.push((msg, p.key())),
        }
    }
    if let Some(msg) = refusal(&errors) {
        r.refused = Some(msg);
        return;
    }
    let mut retry = Vec::new();
    for p in evict {
        attempt(queue, r, p, &mut retry);
    }
    // kubectl retries refused evictions while the replacements of earlier ones start; it
    // stops when every pod is gone or, here, when a round evicts nothing more.
    loop {
        queue.run();
        if retry.is_empty() {
            break;
        }
        let waiting = std::mem::take(&mut retry);
        let before = waiting.len();
        for (p, _) in waiting {
            attempt(queue, r, p, &mut retry);
        }
        if retry.len() == before {
            break;
        }
    }
    for (p, blocked) in retry {
        queue.record(
            p,
            Origin::Drained { node: r.node },
            Outcome::Blocked {
                message: blocked.message.clone(),
            },
        );
        r.blocked.push(blocked);
    }
}

/// One eviction request; a refusal kubectl retries goes to `retry`.
fn attempt(
    queue: &mut Queue,
    r: &mut DrainResult,
    pod: Arc<Pod>,
    retry: &mut Vec<(Arc<Pod>, Blocked)>,
) {
    match queue.evict(&pod) {
        Eviction::Allowed => {
            r.evicted.push(pod.key());
            let origin = Origin::Drained { node: r.node };
            let mut f = fate(&pod, Leaving::Evicted);
            if let super::Fate::Lost(why) = &f {
                f = super::Fate::Lost(format!("{why} (kubectl drain --force deletes it)"));
            }
            queue.take_off(&pod, r.node, origin, f);
        }
        Eviction::Refused {
            pdb,
            message,
            retried,
        } => {
            let protects = pdb.map(|i| queue.protected_by(i)).unwrap_or_default();
            let blocked = Blocked {
                pod: pod.key(),
                pdb: pdb.map(|i| queue.pdb_name(i)),
                message,
                protects,
                retried,
            };
            if retried {
                retry.push((pod, blocked));
            } else {
                queue.record(
                    pod,
                    Origin::Drained { node: r.node },
                    Outcome::Blocked {
                        message: blocked.message.clone(),
                    },
                );
                r.blocked.push(blocked);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cluster::convert_pod;
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    use crate::testing::pod;
    use serde_json::json;

    fn parsed(v: serde_json::Value) -> Pod {
        convert_pod(
            serde_json::from_value(v).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod()
    }

    fn owned(kind: &str, api_version: &str) -> Pod {
        let mut p = pod("ns/p", Some("a"), "1", 0, json!({}));
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": api_version, "kind": kind, "name": "o", "uid": "o", "controller": true}]);
        parsed(p)
    }

    #[test]
    fn kubectls_filters_in_its_order() {
        let opts = Options::default();
        assert_eq!(
            filter(&owned("DaemonSet", "apps/v1"), opts),
            Filtered::Stays(DAEMON_SET_STAYS)
        );
        // kubectl reads the kind, not the group.
        assert_eq!(
            filter(&owned("DaemonSet", "example.com/v1"), opts),
            Filtered::Stays(DAEMON_SET_STAYS)
        );
        assert_eq!(
            filter(&owned("ReplicaSet", "apps/v1"), opts),
            Filtered::Evict
        );
        let mut mirror = pod("ns/m", Some("a"), "1", 0, json!({}));
        mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "h"});
        assert_eq!(filter(&parsed(mirror), opts), Filtered::Stays(MIRROR_STAYS));
        let bare = parsed(pod("ns/b", Some("a"), "1", 0, json!({})));
        assert_eq!(filter(&bare, opts), Filtered::Error(UNMANAGED_FATAL));
        let force = Options {
            force: true,
            ..opts
        };
        assert_eq!(filter(&bare, force), Filtered::Evict);
        // Local storage is checked before the controller, and needs its own flag.
        let mut scratch = pod("ns/s", Some("a"), "1", 0, json!({}));
        scratch["spec"]["volumes"] = json!([{"name": "tmp", "emptyDir": {}}]);
        let scratch = parsed(scratch);
        assert_eq!(
            filter(&scratch, force),
            Filtered::Error(LOCAL_STORAGE_FATAL)
        );
        let both = Options {
            force: true,
            delete_emptydir_data: true,
        };
        assert_eq!(filter(&scratch, both), Filtered::Evict);
        // Finished pods always go.
        let mut done = pod("ns/d", Some("a"), "1", 0, json!({}));
        done["status"]["phase"] = json!("Succeeded");
        done["spec"]["volumes"] = json!([{"name": "tmp", "emptyDir": {}}]);
        assert_eq!(filter(&parsed(done), opts), Filtered::Evict);
    }

    #[test]
    fn refusals_read_as_kubectls() {
        assert_eq!(
            refusal(&[
                (UNMANAGED_FATAL, "ns/a".into()),
                (UNMANAGED_FATAL, "ns/b".into())
            ])
            .unwrap(),
            "cannot delete Pods that declare no controller (use --force to override): ns/a, ns/b"
        );
        assert_eq!(
            refusal(&[
                (UNMANAGED_FATAL, "ns/a".into()),
                (LOCAL_STORAGE_FATAL, "ns/b".into())
            ])
            .unwrap(),
            "[cannot delete Pods that declare no controller (use --force to override): ns/a, cannot delete Pods with local storage (use --delete-emptydir-data to override): ns/b]"
        );
        assert_eq!(refusal(&[]), None);
    }
}
