//! The plan report: the documented schema of `-o json|yaml` that the table view also reads, and
//! the verdict a person wants first.

use super::daemonset::NodeStatus;
use super::{Origin, Outcome, Plan};
use crate::explain::list_names;
use crate::model::intern::Str;
use crate::model::node::Node;
use crate::release::ReleaseChoice;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReport {
    /// The kube-scheduler release modelled and why.
    #[serde(flatten)]
    pub scheduler: ReleaseChoice,
    /// Nodes after the edits.
    pub num_nodes: usize,
    /// `--seed`, when ties were broken at random.
    pub seed: Option<u64>,
    pub verdict: Verdict,
    /// How far the orders kubectl and kube-scheduler may take were explored.
    pub exploration: ExplorationReport,
    pub edits: Vec<EditReport>,
    pub drains: Vec<DrainReport>,
    pub pods: Vec<PodReport>,
    pub daemon_sets: Vec<DaemonSetReport>,
    pub per_node: Vec<NodeSummary>,
    pub per_zone: Vec<ZoneSummary>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// Every pod finds a home and every drain completes.
    pub safe: bool,
    /// The verdict in one sentence.
    pub summary: String,
    /// Pods that need a node (every pod but those removed on purpose).
    pub pods: usize,
    pub scheduled: usize,
    pub pending: usize,
    pub lost: usize,
    pub blocked: usize,
    pub not_predicted: usize,
    /// Placements that preempted other pods first.
    pub preempting: usize,
    /// Pods whose outcome depends on the order of evictions and arrivals.
    pub order_dependent: usize,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplorationReport {
    /// Distinct end states found over the orders explored.
    pub end_states: usize,
    /// Scheduling cycles run, the most likely order's included.
    pub cycles: usize,
    /// The search stopped before trying every order that could differ: `possibleNodes` may miss
    /// some.
    pub capped: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EditReport {
    /// The flag and value as given.
    pub flag: String,
    /// What it did.
    pub summary: String,
    pub added_nodes: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StayReport {
    pub pod: String,
    pub reason: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockedReport {
    pub pod: String,
    pub pdb: Option<String>,
    pub message: String,
    /// The running pods the budget selects.
    pub protects: Vec<String>,
    /// kubectl retries the eviction (until `--timeout`).
    pub retried: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainReport {
    pub node: String,
    /// kubectl would report the node drained.
    pub completed: bool,
    /// Why kubectl refuses to drain the node (it evicts nothing from it).
    pub refused: Option<String>,
    /// The earlier node whose drain kubectl is still waiting on: it never starts this one.
    pub waiting_on: Option<String>,
    pub evicted: Vec<String>,
    pub stays: Vec<StayReport>,
    pub blocked: Vec<BlockedReport>,
    /// `--drain-timeout` ran out while evictions were still refused: kubectl reported the error
    /// and went on with the next node.
    pub timed_out: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum OriginKind {
    Drained,
    Displaced,
    Preempted,
    Workload,
    DaemonSet,
    Pending,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum OutcomeKind {
    Scheduled,
    Pending,
    Lost,
    Blocked,
    Removed,
    NotPredicted,
    Stays,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodReport {
    /// `namespace/name` (a replacement keeps the name of the pod it replaces).
    pub pod: String,
    pub priority: i32,
    pub origin: OriginKind,
    /// The node it leaves (drained, displaced, preempted).
    pub from: Option<String>,
    /// The edit that displaced it (from 0, in `edits`).
    pub edit: Option<usize>,
    /// The pod whose preemption evicted it.
    pub preempted_by: Option<String>,
    /// The `-f` document it comes from (from 0).
    pub document: Option<usize>,
    /// The DaemonSet whose pod it is, `namespace/name`.
    pub daemon_set: Option<String>,
    pub outcome: OutcomeKind,
    /// Where it is scheduled.
    pub node: Option<String>,
    /// The winning total score; null when only one node was feasible.
    pub score: Option<i64>,
    /// How many nodes tied for the best score.
    pub tied: usize,
    /// The nodes tied for the best score, by name: kube-scheduler picks one at random.
    pub tied_nodes: Vec<String>,
    /// Every node the pod may end on in the orders explored (the node it stays on when its
    /// eviction may be refused), by name; `null` when it may stay pending.
    pub possible_nodes: Vec<Option<String>>,
    /// Its outcome depends on the order of evictions and arrivals, not only on a tie.
    pub order_dependent: bool,
    /// Why it may vary.
    pub why: Vec<String>,
    /// The pods preempted to make room for it.
    pub preempts: Vec<String>,
    /// Why it is not scheduled: the FailedScheduling message, the eviction's refusal, …
    pub message: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetNode {
    pub node: String,
    /// `Scheduled`, `Pending`, … for nodes that get a pod; `Skipped` or `Kept` otherwise.
    pub outcome: String,
    /// Why it is skipped, what keeps it, or why its pod is pending.
    pub reason: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetReport {
    pub daemon_set: String,
    pub scheduled: usize,
    pub skipped: usize,
    pub pending: usize,
    pub kept: usize,
    /// Pods of it that were running and are replaced (or removed where it no longer runs).
    pub replaced: Vec<String>,
    pub nodes: Vec<DaemonSetNode>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    pub node: String,
    pub zone: Option<String>,
    /// Null for a node the edits added.
    pub pods_before: Option<usize>,
    /// Null for a node the edits deleted.
    pub pods_after: Option<usize>,
    /// Pods the plan placed there and took off it.
    pub added: usize,
    pub removed: usize,
    /// Requests over allocatable after the plan, in percent.
    pub cpu_percent: Option<i64>,
    pub memory_percent: Option<i64>,
    pub unschedulable: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ZoneSummary {
    pub zone: String,
    pub added: usize,
    pub removed: usize,
}

/// "1 pod stays pending" / "2 pods stay pending": the count with its verb.
fn count_pods(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 pod {one}")
    } else {
        format!("{n} pods {many}")
    }
}

fn percent(requested: i64, allocatable: i64) -> Option<i64> {
    (allocatable > 0).then(|| requested * 100 / allocatable)
}

/// The report of a plan.
pub fn build(scheduler: ReleaseChoice, seed: Option<u64>, plan: &Plan) -> PlanReport {
    let pods: Vec<PodReport> = plan.pods.iter().map(pod_report).collect();
    let drains: Vec<DrainReport> = plan
        .drains
        .iter()
        .map(|d| DrainReport {
            node: d.node.to_string(),
            completed: d.completed(),
            refused: d.refused.clone(),
            waiting_on: d.waiting_on.map(|n| n.to_string()),
            evicted: d.evicted.clone(),
            stays: d
                .stays
                .iter()
                .map(|(pod, reason)| StayReport {
                    pod: pod.clone(),
                    reason: reason.to_string(),
                })
                .collect(),
            blocked: d
                .blocked
                .iter()
                .map(|b| BlockedReport {
                    pod: b.pod.clone(),
                    pdb: b.pdb.clone(),
                    message: b.message.clone(),
                    protects: b.protects.clone(),
                    retried: b.retried,
                })
                .collect(),
            timed_out: d.timed_out,
        })
        .collect();
    let (per_node, per_zone) = summaries(plan);
    PlanReport {
        scheduler,
        num_nodes: plan.snapshot.num_nodes(),
        seed,
        verdict: verdict(&pods, &drains, plan.exploration.unsafe_somewhere),
        exploration: ExplorationReport {
            end_states: plan.exploration.end_states,
            cycles: plan.exploration.cycles,
            capped: plan.exploration.capped,
        },
        edits: plan
            .edits
            .iter()
            .map(|e| EditReport {
                flag: e.flag.clone(),
                summary: e.summary.clone(),
                added_nodes: e.added_nodes.iter().map(|n| n.to_string()).collect(),
            })
            .collect(),
        drains,
        pods,
        daemon_sets: plan
            .daemon_sets
            .iter()
            .map(|c| {
                let nodes: Vec<DaemonSetNode> = c
                    .nodes
                    .iter()
                    .map(|(node, status)| {
                        let (outcome, reason) = match status {
                            NodeStatus::Skipped(why) => ("Skipped".to_string(), Some(why.clone())),
                            NodeStatus::Kept(pods) => {
                                ("Kept".to_string(), Some(format!("OnDelete keeps {pods}")))
                            }
                            NodeStatus::Queued => ("Queued".to_string(), None),
                            NodeStatus::Gets(o) => {
                                let (kind, message) = outcome_of(o);
                                (format!("{kind:?}"), message)
                            }
                        };
                        DaemonSetNode {
                            node: node.to_string(),
                            outcome,
                            reason,
                        }
                    })
                    .collect();
                let count = |o: &str| nodes.iter().filter(|n| n.outcome == o).count();
                DaemonSetReport {
                    daemon_set: c.daemon_set.clone(),
                    scheduled: count("Scheduled"),
                    skipped: count("Skipped"),
                    pending: count("Pending"),
                    kept: count("Kept"),
                    replaced: c.replaced.clone(),
                    nodes,
                }
            })
            .collect(),
        per_node,
        per_zone,
    }
}

fn outcome_of(o: &Outcome) -> (OutcomeKind, Option<String>) {
    match o {
        Outcome::Scheduled { .. } => (OutcomeKind::Scheduled, None),
        Outcome::Pending { message } => (OutcomeKind::Pending, Some(message.clone())),
        Outcome::Lost { reason } => (OutcomeKind::Lost, Some(reason.clone())),
        Outcome::Blocked { message } => (OutcomeKind::Blocked, Some(message.clone())),
        Outcome::Removed { reason } => (OutcomeKind::Removed, Some(reason.clone())),
        Outcome::NotPredicted { reason } => (OutcomeKind::NotPredicted, Some(reason.clone())),
        Outcome::Stays { .. } => (OutcomeKind::Stays, None),
    }
}

fn pod_report(r: &super::PodResult) -> PodReport {
    let (outcome, message) = outcome_of(&r.outcome);
    let mut report = PodReport {
        pod: r.pod.key(),
        priority: r.pod.priority,
        origin: OriginKind::Pending,
        from: None,
        edit: None,
        preempted_by: None,
        document: None,
        daemon_set: None,
        outcome,
        node: None,
        score: None,
        tied: 0,
        tied_nodes: Vec::new(),
        possible_nodes: r
            .possible
            .iter()
            .map(|n| n.map(|n| n.to_string()))
            .collect(),
        order_dependent: r.order_dependent,
        why: r.why.clone(),
        preempts: Vec::new(),
        message,
    };
    match &r.origin {
        Origin::Drained { node } => {
            report.origin = OriginKind::Drained;
            report.from = Some(node.to_string());
        }
        Origin::Displaced { node, edit } => {
            report.origin = OriginKind::Displaced;
            report.from = Some(node.to_string());
            report.edit = Some(*edit);
        }
        Origin::Preempted { node, by } => {
            report.origin = OriginKind::Preempted;
            report.from = Some(node.to_string());
            report.preempted_by = Some(by.clone());
        }
        Origin::Workload { document } => {
            report.origin = OriginKind::Workload;
            report.document = Some(*document);
        }
        Origin::DaemonSet { name, .. } => {
            report.origin = OriginKind::DaemonSet;
            report.daemon_set = Some(name.clone());
        }
        Origin::Pending => {}
    }
    if let Outcome::Scheduled {
        node,
        score,
        tied,
        preempted,
    } = &r.outcome
    {
        report.node = Some(node.to_string());
        report.score = *score;
        report.tied = tied.len();
        report.tied_nodes = tied.iter().map(|n| n.to_string()).collect();
        report.preempts = preempted.clone();
    }
    if let Outcome::Stays { node } = &r.outcome {
        report.node = Some(node.to_string());
    }
    report
}

fn verdict(pods: &[PodReport], drains: &[DrainReport], unsafe_somewhere: bool) -> Verdict {
    let keys = |o: OutcomeKind| -> Vec<String> {
        pods.iter()
            .filter(|p| p.outcome == o)
            .map(|p| p.pod.clone())
            .collect()
    };
    let (pending, lost, blocked, elsewhere) = (
        keys(OutcomeKind::Pending),
        keys(OutcomeKind::Lost),
        keys(OutcomeKind::Blocked),
        keys(OutcomeKind::NotPredicted),
    );
    let scheduled = keys(OutcomeKind::Scheduled).len();
    let preempting = pods.iter().filter(|p| !p.preempts.is_empty()).count();
    let victims: usize = pods.iter().map(|p| p.preempts.len()).sum();
    let needing = pods
        .iter()
        .filter(|p| !matches!(p.outcome, OutcomeKind::Removed | OutcomeKind::Stays))
        .count();
    // Outcomes of other orders that the most likely one does not show.
    let may = |bad: &dyn Fn(&PodReport) -> bool| -> Vec<String> {
        pods.iter()
            .filter(|p| bad(p))
            .map(|p| p.pod.clone())
            .collect()
    };
    let may_pend = may(&|p| p.outcome != OutcomeKind::Pending && p.possible_nodes.contains(&None));
    let may_stay = may(&|p| {
        p.origin == OriginKind::Drained
            && p.outcome != OutcomeKind::Blocked
            && p.possible_nodes.contains(&p.from)
    });
    let mut problems = Vec::new();
    for d in drains {
        if let Some(msg) = &d.refused {
            problems.push(format!("kubectl drain refuses {}: {msg}", d.node));
        }
        if let Some(on) = &d.waiting_on {
            problems.push(format!(
                "kubectl drain never gets to {}: it waits on {on} for ever",
                d.node
            ));
        }
        if d.timed_out {
            problems.push(format!(
                "kubectl drain gives up on {} at --drain-timeout and goes on",
                d.node
            ));
        }
    }
    for (keys, one, many) in [
        (&pending, "stays pending", "stay pending"),
        (&blocked, "cannot be evicted", "cannot be evicted"),
        (
            &lost,
            "is lost: no controller recreates it",
            "are lost: no controller recreates them",
        ),
        (
            &elsewhere,
            "is left to another scheduler, not predicted",
            "are left to another scheduler, not predicted",
        ),
    ] {
        if !keys.is_empty() {
            problems.push(format!(
                "{} ({})",
                count_pods(keys.len(), one, many),
                list_names(keys)
            ));
        }
    }
    let mut maybe = Vec::new();
    for (keys, one, many) in [
        (&may_pend, "may stay pending", "may stay pending"),
        (&may_stay, "may not be evicted", "may not be evicted"),
    ] {
        if !keys.is_empty() {
            maybe.push(format!(
                "{} ({})",
                count_pods(keys.len(), one, many),
                list_names(keys)
            ));
        }
    }
    if maybe.is_empty() && problems.is_empty() && unsafe_somewhere {
        maybe.push("a drain may not complete".to_string());
    }
    if !maybe.is_empty() {
        problems.push(format!("depending on the order, {}", maybe.join(", ")));
    }
    let drained: Vec<&str> = drains.iter().map(|d| d.node.as_str()).collect();
    let safe = problems.is_empty();
    let summary = if safe {
        let home = match needing {
            0 => "no pod needs a new home".to_string(),
            1 => "the 1 pod finds a home".to_string(),
            n => format!("all {n} pods find a home"),
        };
        let preemption = if preempting > 0 {
            format!(
                " ({preempting} by preempting {} lower-priority pod(s))",
                victims
            )
        } else {
            String::new()
        };
        if drained.is_empty() {
            format!("{home}{preemption}")
        } else {
            format!("safe to drain {}: {home}{preemption}", drained.join(", "))
        }
    } else if drained.is_empty() {
        problems.join("; ")
    } else {
        format!(
            "NOT SAFE to drain {}: {}",
            drained.join(", "),
            problems.join("; ")
        )
    };
    Verdict {
        safe,
        summary,
        pods: needing,
        scheduled,
        pending: pending.len(),
        lost: lost.len(),
        blocked: blocked.len(),
        not_predicted: elsewhere.len(),
        preempting,
        order_dependent: pods.iter().filter(|p| p.order_dependent).count(),
    }
}

/// Per node and per zone: pods added and taken off, for the nodes the plan touched.
fn summaries(plan: &Plan) -> (Vec<NodeSummary>, Vec<ZoneSummary>) {
    let mut added: HashMap<Str, usize> = HashMap::new();
    let mut removed: HashMap<Str, usize> = HashMap::new();
    for r in &plan.pods {
        match &r.origin {
            Origin::Drained { node }
            | Origin::Displaced { node, .. }
            | Origin::Preempted { node, .. }
                if !matches!(r.outcome, Outcome::Blocked { .. }) =>
            {
                *removed.entry(*node).or_default() += 1;
            }
            _ => {}
        }
        if let Outcome::Scheduled { node, .. } = &r.outcome {
            *added.entry(*node).or_default() += 1;
        }
    }
    let before: HashMap<Str, (&Node, usize)> = plan
        .before
        .iter()
        .map(|(n, count)| (n.name, (&**n, *count)))
        .collect();
    let mut touched: Vec<Str> = added.keys().chain(removed.keys()).copied().collect();
    for e in &plan.edits {
        touched.extend(e.added_nodes.iter().copied());
    }
    for d in &plan.drains {
        touched.push(d.node);
    }
    touched.sort();
    touched.dedup();
    let mut zones: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let nodes = touched
        .into_iter()
        .map(|name| {
            let info = plan.snapshot.get(name);
            let (a, r) = (
                added.get(&name).copied().unwrap_or(0),
                removed.get(&name).copied().unwrap_or(0),
            );
            let zone = info
                .map(|i| &*i.node)
                .or(before.get(&name).map(|(n, _)| *n))
                .and_then(Node::zone)
                .map(|z| z.to_string());
            if let Some(z) = &zone {
                let e = zones.entry(z.clone()).or_default();
                e.0 += a;
                e.1 += r;
            }
            NodeSummary {
                node: name.to_string(),
                zone,
                pods_before: before.get(&name).map(|(_, count)| *count),
                pods_after: info.map(|i| i.pods.len()),
                added: a,
                removed: r,
                cpu_percent: info
                    .and_then(|i| percent(i.requested.milli_cpu, i.allocatable().milli_cpu)),
                memory_percent: info
                    .and_then(|i| percent(i.requested.memory, i.allocatable().memory)),
                unschedulable: info.is_some_and(|i| i.node.unschedulable),
            }
        })
        .collect();
    let zones = zones
        .into_iter()
        .map(|(zone, (added, removed))| ZoneSummary {
            zone,
            added,
            removed,
        })
        .collect();
    (nodes, zones)
}
