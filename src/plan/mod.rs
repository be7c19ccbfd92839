//! Change planning: "if I drain node-7, does everything find a home?", "would two more nodes like
//! node-3 schedule my pending pods?", "which nodes would this DaemonSet skip?".
//!
//! Edits are applied to the cluster in the order given (`edit`); the pods they leave without a
//! node, the pods of `-f` workloads (`daemonset` for DaemonSets) and, for `explain
//! --all-pending`, the pending pods go through kube-scheduler's queue (`queue`), each with the
//! whole pipeline including preemption, each placement assumed before the next pod. Drains come
//! last, node after node, as `kubectl drain` carries them out (`drain`): evictions concurrent, each
//! replacement queued as its eviction lands, evicted pods terminating on their node until they are
//! gone. Which of those steps comes first is a race: `race` follows the most likely order and
//! explores the others that can change an outcome, so the report can say where each pod may end
//! (`interact` says which pods can change each other's). Everything happens on one snapshot that
//! records how to undo each change (`state`). Pure and synchronous: the cluster is only ever read.

pub mod daemonset;
pub mod drain;
pub mod edit;
pub mod interact;
pub mod queue;
pub mod race;
pub mod report;
pub mod state;
pub mod table;

use crate::framework::runner::Framework;
use crate::framework::snapshot::Snapshot;
use crate::model::cluster::Cluster;
use crate::model::intern::Str;
use crate::model::node::Node;
use crate::model::pod::{Phase, Pod};
use state::State;
use std::sync::Arc;

/// The kind of the owner that marks a pod as a DaemonSet's.
pub const DAEMON_SET: &str = "DaemonSet";

/// Where a pod handled by the plan comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Evicted by `--drain` from this node.
    Drained { node: Str },
    /// Removed from this node by the edit at this position (`--delete-node`, a NoExecute
    /// `--taint`, `--delete-pod`).
    Displaced { node: Str, edit: usize },
    /// A preemption victim on this node, evicted for the pod `by`.
    Preempted { node: Str, by: String },
    /// A pod of the `-f` document at this position (from 0).
    Workload { document: usize },
    /// A DaemonSet's pod for one node: of a `-f` DaemonSet, or of a DaemonSet already running
    /// in the cluster for a node an edit added.
    DaemonSet { name: String, node: Str },
    /// Pending in the cluster already (`explain --all-pending`).
    Pending,
}

/// What became of a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Placed on `node`. `score` is null when only one node was feasible (not scored); `tied`
    /// are the nodes that shared the best score, by name; `preempted` are the victims evicted
    /// there first.
    Scheduled {
        node: Str,
        score: Option<i64>,
        tied: Vec<Str>,
        preempted: Vec<String>,
    },
    /// Fits no node: the FailedScheduling message (with preemption's part).
    Pending { message: String },
    /// Gone for good: nothing recreates it.
    Lost { reason: String },
    /// Its eviction is refused and it stays where it is.
    Blocked { message: String },
    /// Gone as intended (deleted, or a DaemonSet or mirror pod that goes with its node).
    Removed { reason: String },
    /// Another scheduler places it (no profile serves its `schedulerName`).
    NotPredicted { reason: String },
    /// Not moved in the most likely order (it runs on `node`); listed because other orders
    /// move it.
    Stays { node: Str },
}

/// One pod the plan handled, in the order the queue took it in the most likely order.
#[derive(Clone, Debug)]
pub struct PodResult {
    /// The pod as queued (for a replacement: the recreated pod, not yet bound).
    pub pod: Arc<Pod>,
    pub origin: Origin,
    /// Its outcome in the most likely order.
    pub outcome: Outcome,
    /// Where it may end in the orders explored, by name: a node (the one it stays on when its
    /// eviction may be refused), or `None` when it may stay pending. Empty for a pod that goes.
    pub possible: Vec<Option<Str>>,
    /// Its outcome differs between orders (not only between tied nodes).
    pub order_dependent: bool,
    /// Why it may vary: the pods it competes or interacts with, ties, a predecessor it waits for.
    pub why: Vec<String>,
}

/// What happens to a pod taken off its node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Its controller creates a new pod, which the scheduler places.
    Recreated,
    Lost(String),
    Removed(String),
}

/// Why a pod leaves its node, which decides who recreates it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leaving {
    /// Its node is deleted: pod GC deletes it.
    NodeDeleted,
    /// The taint manager evicts it for a NoExecute taint it does not tolerate.
    TaintEvicted,
    /// Deleted by name (`--delete-pod`).
    Deleted,
    /// Evicted through the eviction API (`kubectl drain`, or the scheduler's preemption).
    Evicted,
}

/// What its controller does when a pod leaves its node.
pub fn fate(pod: &Pod, why: Leaving) -> Fate {
    if pod.deletion_timestamp.is_some() {
        // Controllers stop counting a pod once it is terminating: the replacement exists already.
        return Fate::Removed("already terminating; its controller has replaced it".into());
    }
    let daemon = pod.controller().is_some_and(|o| o.kind == DAEMON_SET);
    match why {
        Leaving::NodeDeleted if pod.mirror => {
            Fate::Removed("a static pod's mirror: goes with its node".into())
        }
        _ if pod.mirror => Fate::Removed(
            "a static pod's mirror: the kubelet recreates it on its node, not the scheduler".into(),
        ),
        Leaving::NodeDeleted if daemon => {
            Fate::Removed("a DaemonSet pod: goes with its node".into())
        }
        Leaving::TaintEvicted if daemon => Fate::Removed(
            "a DaemonSet pod: the DaemonSet controller does not recreate it on a node with a NoExecute taint it does not tolerate".into(),
        ),
        _ if pod.controller().is_some() => Fate::Recreated,
        Leaving::Deleted => Fate::Removed("deleted; no controller recreates it".into()),
        _ => Fate::Lost("no controller recreates it".into()),
    }
}

/// The pod a controller creates in place of `pod`: the same spec, no node, a new UID, and no
/// status (so no resize or readiness carried over). It is created during the plan: its creation
/// time is not the old pod's but unknown, and its place in the queue is the moment it arrives
/// there (`state::TrackState::Ready`). Controllers other than StatefulSet name it afresh; the
/// old name is kept so the report can say which pod it replaces.
pub fn replacement(pod: &Pod) -> Pod {
    let mut p = pod.clone();
    p.uid = Str::new(format!("kubectl-sched-plan/{}", pod.uid));
    p.creation_timestamp = None;
    p.node_name = None;
    p.nominated_node_name = None;
    p.phase = Phase::Pending;
    p.start_time = None;
    p.deletion_timestamp = None;
    p.disruption_target_by_preemption = false;
    p.ready = false;
    for c in p
        .resources
        .containers
        .iter_mut()
        .chain(p.resources.init_containers.iter_mut())
    {
        c.status_requests = None;
        c.allocated = None;
    }
    p.resources.resize_infeasible = false;
    (p.requests, p.non_zero_cpu, p.non_zero_memory) = p.resources.calculate();
    p
}

/// A workload of `-f`, ready to be queued.
#[derive(Clone, Debug)]
pub enum Workload {
    /// `count` pods of `template` (a Pod is one), named `<name>-1`… when a controller makes them
    /// or there are several.
    Replicas {
        template: Pod,
        count: usize,
    },
    DaemonSet(daemonset::DaemonSet),
}

/// Which of the cluster's pods a request is about.
pub type PodFilter = Box<dyn Fn(&Pod) -> bool>;

/// Everything a plan is asked to do.
pub struct Request {
    /// In command-line order.
    pub edits: Vec<edit::Edit>,
    pub drain: drain::Options,
    /// The `-f` documents, in order.
    pub workloads: Vec<Workload>,
    /// Queue the pods already pending that this selects (`explain --all-pending`: `-n`, `-l`,
    /// `--field-selector`).
    pub pending: Option<PodFilter>,
    /// `--seed`: choose among tied nodes at random, seeded; `None` takes the first by name.
    pub seed: Option<u64>,
}

/// How far the exploration of orders went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exploration {
    /// Distinct end states found.
    pub end_states: usize,
    /// Scheduling cycles run, the most likely order's included.
    pub cycles: usize,
    /// The search stopped before trying every order that could differ.
    pub capped: bool,
    /// Some order leaves a pod without a home or a drain incomplete.
    pub unsafe_somewhere: bool,
}

/// What the plan did: the edits as applied, the drains, and every pod it handled.
pub struct Plan {
    pub edits: Vec<edit::Applied>,
    pub drains: Vec<drain::DrainResult>,
    pub pods: Vec<PodResult>,
    /// Per `-f` DaemonSet: every node, with the pod it gets or why not.
    pub daemon_sets: Vec<daemonset::Coverage>,
    /// The cluster after the plan, for per-node and per-zone summaries.
    pub snapshot: Snapshot,
    /// The nodes before the plan, with their pod counts: what the summaries compare with.
    pub before: Vec<(Arc<Node>, usize)>,
    pub exploration: Exploration,
}

/// Applies the edits, queues what they displace and what `-f` adds, then drains.
pub fn run(fws: &[Framework], cluster: Cluster, request: Request) -> Result<Plan, edit::EditError> {
    let mut cluster = cluster;
    let before: Vec<(Arc<Node>, usize)> = {
        let mut counts: std::collections::HashMap<Str, usize> = Default::default();
        for p in &cluster.pods {
            if let Some(n) = p.node_name {
                *counts.entry(n).or_default() += 1;
            }
        }
        cluster
            .nodes
            .iter()
            .map(|n| (n.clone(), counts.get(&n.name).copied().unwrap_or(0)))
            .collect()
    };
    let mut applied = Vec::with_capacity(request.edits.len());
    for e in &request.edits {
        applied.push(e.apply(&mut cluster)?);
    }
    let drains: Vec<Str> = applied.iter().flat_map(|a| a.drains.clone()).collect();
    if let Some(gone) = drains.iter().find(|n| cluster.node(n).is_none()) {
        return Err(edit::EditError {
            flag: format!("--drain {gone}"),
            message: "a later --delete-node removes the node before it could be drained".into(),
        });
    }
    let mut pending: Vec<Arc<Pod>> = match &request.pending {
        Some(selected) => cluster
            .pods
            .iter()
            .filter(|p| p.node_name.is_none() && selected(p))
            .cloned()
            .collect(),
        None => Vec::new(),
    };
    pending.sort_by_key(|p| (p.creation_timestamp.is_none(), p.creation_timestamp));
    let snapshot = Snapshot::new(Arc::new(cluster), None);
    let budgets = queue::budgets(&snapshot.cluster);
    let mut st = State::new(fws, snapshot, budgets);
    st.seed = request.seed;
    st.drain_nodes = drains;
    // Pods already pending have been in the queue longest, then come the new pods: the edits'
    // replacements, new nodes' DaemonSet pods, the pods of -f in file order.
    for p in pending {
        st.queue(p.uid, p, Origin::Pending, false);
    }
    for (i, a) in applied.iter().enumerate() {
        st.displaced(&a.displaced, i);
        for (node, p) in &a.daemon_pods {
            st.queue_daemon(*node, p.clone());
        }
    }
    let mut daemon_sets = Vec::new();
    for (document, w) in request.workloads.iter().enumerate() {
        match w {
            Workload::Replicas { template, count } => st.queue_replicas(template, *count, document),
            Workload::DaemonSet(ds) => daemon_sets.push(st.queue_daemon_set(ds)),
        }
    }
    let explored = race::explore(&mut st, request.drain);
    let pods = explored.pod_results(&mut st);
    for c in &mut daemon_sets {
        c.resolve(&pods);
    }
    let exploration = Exploration {
        end_states: explored.end_states,
        cycles: explored.cycles,
        capped: explored.capped,
        unsafe_somewhere: explored.unsafe_somewhere,
    };
    let e = explored.ending;
    Ok(Plan {
        edits: applied,
        drains: drain::results(&e.starts, &e.ends, &e.leavers, &e.evicted),
        pods,
        daemon_sets,
        snapshot: e.snapshot,
        before,
        exploration,
    })
}

#[cfg(test)]
mod tests;
