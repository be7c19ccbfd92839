//! `kubectl drain` as kubectl and the eviction API carry it out (k8s.io/kubectl/pkg/drain and the
//! pods/eviction subresource): every node is cordoned first; then, node after node, kubectl's
//! filters decide which pods go (DaemonSet and mirror pods stay, emptyDir needs
//! `--delete-emptydir-data`, pods without a controller need `--force`), and any pod they refuse
//! stops that node's drain before anything is evicted. kubectl then evicts the node's pods
//! concurrently, through PodDisruptionBudgets: an eviction a budget refuses (429) is retried
//! every few seconds, and goes once enough replacements run again; kubectl waits until every
//! evicted pod is gone. A node whose retried evictions never go keeps kubectl there for ever, or,
//! with `--drain-timeout` (kubectl's `--timeout`), until the timeout, when kubectl reports the
//! error and goes on with the next node.
//!
//! `start` and `end` are a node's beginning and end in the plan's transition system (`race`);
//! the evictions in between are its steps.

use super::state::{Blocked, DrainEnd, DrainStart, Leaver, LeaverState, State};
use super::{DAEMON_SET, Fate, Leaving, Origin, fate};
use crate::model::intern::Str;
use crate::model::pod::Pod;
use crate::model::volume::Volume;
use std::sync::Arc;
use std::time::Duration;

/// kubectl drain's messages (filters.go).
const LOCAL_STORAGE_FATAL: &str =
    "Pods with local storage (use --delete-emptydir-data to override)";
const UNMANAGED_FATAL: &str = "Pods that declare no controller (use --force to override)";
const DAEMON_SET_STAYS: &str = "DaemonSet-managed (kubectl drain --ignore-daemonsets leaves it)";
const MIRROR_STAYS: &str = "a static pod's mirror (the kubelet owns it)";

/// `kubectl drain`'s flags that change what it does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `--force`: pods without a controller are deleted (and lost).
    pub force: bool,
    /// `--delete-emptydir-data`: pods with emptyDir volumes are evicted (their data is lost).
    pub delete_emptydir_data: bool,
    /// `--drain-timeout` (kubectl's `--timeout`): how long kubectl tries one node before it
    /// reports the error and goes on; `None` (0) tries for ever.
    pub timeout: Option<Duration>,
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
    /// `--drain-timeout` ran out while kubectl still retried refused evictions: it reported the
    /// error and went on with the next node.
    pub timed_out: bool,
}

impl DrainResult {
    /// kubectl would report the node drained.
    pub fn completed(&self) -> bool {
        self.refused.is_none()
            && self.waiting_on.is_none()
            && self.blocked.is_empty()
            && !self.timed_out
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
    if !finished && !opts.delete_emptydir_data && pod.volumes.iter().any(Volume::has_empty_dir) {
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

/// kubectl starts on drain `d`: unless an earlier node keeps it waiting for ever, it lists the
/// node's pods (in the API server's order), applies its filters, and either refuses the node or
/// sends an eviction for every pod that goes.
pub fn start(st: &mut State, d: usize, opts: Options) {
    let node = st.drain_nodes[d];
    let waiting_on = st
        .ends
        .iter()
        .zip(&st.starts)
        .find(|(end, _)| **end == DrainEnd::Stuck)
        .map(|(_, s)| s.node);
    let mut start = DrainStart {
        node,
        refused: None,
        waiting_on,
        stays: Vec::new(),
    };
    if waiting_on.is_none() {
        let mut pods: Vec<Arc<Pod>> = st
            .snapshot
            .get(node)
            .map(|n| n.pods.clone())
            .unwrap_or_default();
        pods.sort_by_key(|a| (a.namespace, a.name));
        let mut errors = Vec::new();
        let mut evict = Vec::new();
        for p in pods {
            match filter(&p, opts) {
                Filtered::Evict => evict.push(p),
                Filtered::Stays(why) => start.stays.push((p.key(), why)),
                Filtered::Error(msg) => errors.push((msg, p.key())),
            }
        }
        start.refused = refusal(&errors);
        if start.refused.is_none() {
            for pod in evict {
                let fate = match fate(&pod, Leaving::Evicted) {
                    Fate::Lost(why) => {
                        Fate::Lost(format!("{why} (kubectl drain --force deletes it)"))
                    }
                    f => f,
                };
                st.push_leaver(Leaver {
                    key: st.key_of_running(&pod),
                    pod,
                    node,
                    origin: Origin::Drained { node },
                    drain: Some(d),
                    fate,
                    state: LeaverState::Running { refused: false },
                    replacement: None,
                });
            }
        }
    }
    st.starts.push(start);
}

/// Drain `d` has nothing left to do: the evictions kubectl still retries are refused for good
/// (until `--drain-timeout`, or for ever).
pub fn end(st: &mut State, d: usize, opts: Options) {
    let mut retried = false;
    for l in 0..st.leavers.len() {
        let leaver = &st.leavers[l];
        if leaver.drain != Some(d) || leaver.state != (LeaverState::Running { refused: true }) {
            continue;
        }
        let pod = leaver.pod.clone();
        let (pdb, message) = match st.evict_check(&pod) {
            super::queue::Eviction::Refused { pdb, message, .. } => (pdb, message),
            super::queue::Eviction::Allowed => (None, String::new()),
        };
        let blocked = st.blocked(&pod, pdb, message, true);
        st.set_leaver(l, LeaverState::Blocked(blocked));
        st.handled.push(super::state::Handled::Leaver(l));
        retried = true;
    }
    st.ends.push(match (retried, opts.timeout) {
        (false, _) => DrainEnd::Done,
        (true, Some(_)) => DrainEnd::TimedOut,
        (true, None) => DrainEnd::Stuck,
    });
}

/// What kubectl did on each node, as the plan ended.
pub fn results(
    starts: &[DrainStart],
    ends: &[DrainEnd],
    leavers: &[Leaver],
    evicted: &[usize],
) -> Vec<DrainResult> {
    starts
        .iter()
        .enumerate()
        .map(|(d, s)| DrainResult {
            node: s.node,
            refused: s.refused.clone(),
            waiting_on: s.waiting_on,
            stays: s.stays.clone(),
            evicted: evicted
                .iter()
                .filter(|&&l| leavers[l].drain == Some(d))
                .map(|&l| leavers[l].pod.key())
                .collect(),
            blocked: leavers
                .iter()
                .filter(|l| l.drain == Some(d))
                .filter_map(|l| match &l.state {
                    LeaverState::Blocked(b) => Some(b.clone()),
                    _ => None,
                })
                .collect(),
            timed_out: ends.get(d) == Some(&DrainEnd::TimedOut),
        })
        .collect()
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
            ..opts
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
