//! kube-scheduler's scheduling queue and loop, offline: pods wait in PrioritySort order (higher
//! priority first, then the earlier creation time; pods without one, such as `-f` pods, come after
//! those with one, in the order they were queued), and each is scheduled with the profile that
//! serves it, the whole pipeline including PostFilter. A placement is assumed before the next pod
//! is scheduled. When preemption nominates a node, its victims are evicted (their controllers'
//! replacements join the queue) and the pod is scheduled again at once, its nominated node first.
//!
//! PodDisruptionBudgets follow the pods: a healthy pod leaving lowers its budgets, a replacement
//! that is scheduled raises them again (it is assumed to become ready), and the eviction API's
//! checks read them.

use super::daemonset::{self, Coverage, DaemonSet, NodeStatus};
use super::{Fate, Leaving, Origin, Outcome, PodResult, fate, replacement};
use crate::framework::runner::{Framework, Mode};
use crate::framework::schedule_one::{CycleResult, Ties};
use crate::framework::snapshot::Snapshot;
use crate::model::intern::Str;
use crate::model::pod::{Phase, Pod};
use k8s_openapi::jiff::Timestamp;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

struct Entry {
    priority: i32,
    created: Option<Timestamp>,
    seq: u64,
    pod: Arc<Pod>,
    origin: Origin,
    /// It replaces a healthy pod: once scheduled, the budgets selecting it get a disruption back.
    restores: bool,
}

impl Entry {
    /// `Greater` is popped first.
    fn order(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then_with(|| match (self.created, other.created) {
                (Some(a), Some(b)) => b.cmp(&a),
                (Some(_), None) => Ordering::Greater,
                (None, Some(_)) => Ordering::Less,
                (None, None) => Ordering::Equal,
            })
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.order(other)
    }
}

/// A PodDisruptionBudget as the plan changes it.
#[derive(Clone, Copy, Debug)]
struct Budget {
    /// Healthy pods beyond the desired number (negative: short of it); disruptions allowed is
    /// this when positive, else 0.
    surplus: i32,
    current_healthy: i32,
    /// `status.disruptionsAllowed` was negative: the eviction API refuses outright.
    negative: bool,
}

/// The eviction API's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Eviction {
    Allowed,
    Refused {
        /// The budget that refuses it (`None` when several select the pod).
        pdb: Option<usize>,
        message: String,
        /// 429 Too Many Requests: kubectl retries.
        retried: bool,
    },
}

pub const PDB_VIOLATION: &str = "Cannot evict pod as it would violate the pod's disruption budget.";
pub const SEVERAL_PDBS: &str = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";

pub struct Queue<'a> {
    fws: &'a [Framework],
    snapshot: Snapshot,
    heap: BinaryHeap<Entry>,
    seq: u64,
    ties: Ties,
    results: Vec<PodResult>,
    budgets: Vec<Budget>,
}

impl<'a> Queue<'a> {
    pub fn new(fws: &'a [Framework], snapshot: Snapshot, ties: Ties) -> Queue<'a> {
        let budgets = snapshot
            .cluster
            .pdbs
            .iter()
            .map(|p| {
                let allowed = p.disruptions_allowed;
                Budget {
                    surplus: if allowed > 0 {
                        allowed
                    } else {
                        allowed.min(p.current_healthy - p.desired_healthy)
                    },
                    current_healthy: p.current_healthy,
                    negative: allowed < 0,
                }
            })
            .collect();
        Queue {
            fws,
            snapshot,
            heap: BinaryHeap::new(),
            seq: 0,
            ties,
            results: Vec::new(),
            budgets,
        }
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    fn enqueue(&mut self, pod: Arc<Pod>, origin: Origin, restores: bool) {
        self.seq += 1;
        self.heap.push(Entry {
            priority: pod.priority,
            created: pod.creation_timestamp,
            seq: self.seq,
            pod,
            origin,
            restores,
        });
    }

    /// Queues a pod that is on no node.
    pub fn push(&mut self, pod: Arc<Pod>, origin: Origin) {
        self.enqueue(pod, origin, false);
    }

    /// Records what became of a pod the queue does not schedule.
    pub fn record(&mut self, pod: Arc<Pod>, origin: Origin, outcome: Outcome) {
        self.results.push(PodResult {
            pod,
            origin,
            outcome,
        });
    }

    /// A pod that left its node: its controller's replacement is queued, or its end recorded.
    fn follow(&mut self, pod: &Arc<Pod>, origin: Origin, fate: Fate) {
        if pod.ready {
            self.disrupt(pod, -1);
        }
        match fate {
            Fate::Recreated => {
                let serial = self.seq as usize;
                self.enqueue(Arc::new(replacement(pod, serial)), origin, pod.ready);
            }
            Fate::Lost(reason) => self.record(pod.clone(), origin, Outcome::Lost { reason }),
            Fate::Removed(reason) => self.record(pod.clone(), origin, Outcome::Removed { reason }),
        }
    }

    /// Pods an edit took out of the cluster before the snapshot was built.
    pub fn displaced(&mut self, pods: &[(Arc<Pod>, Fate)], edit: usize) {
        for (pod, fate) in pods {
            let origin = Origin::Displaced {
                node: pod.node_name.unwrap_or_default(),
                edit,
            };
            self.follow(pod, origin, fate.clone());
        }
    }

    /// Takes a bound pod off its node (an eviction, a preemption victim) and follows it.
    pub fn take_off(&mut self, pod: &Arc<Pod>, node: Str, origin: Origin, fate: Fate) {
        self.snapshot.remove(node, pod.uid);
        self.follow(pod, origin, fate);
    }

    /// Queues a DaemonSet pod pinned to `node`.
    pub fn push_daemon(&mut self, node: Str, pod: Pod) {
        let name = match pod.controller() {
            Some(o) => format!("{}/{}", pod.namespace, o.name),
            None => pod.key(),
        };
        self.push(Arc::new(pod), Origin::DaemonSet { name, node });
    }

    /// Queues `count` pods of a `-f` template, numbered when the workload makes several.
    pub fn push_replicas(&mut self, template: &Pod, count: usize, document: usize) {
        let numbered = count > 1 || template.controller().is_some();
        for i in 1..=count {
            let mut p = template.clone();
            if numbered {
                p.name = Str::new(format!("{}-{i}", template.name));
            }
            p.uid = Str::new(format!(
                "kubectl-sched-plan/{document}/{}/{}",
                p.namespace, p.name
            ));
            self.push(Arc::new(p), Origin::Workload { document });
        }
    }

    /// A `-f` DaemonSet: per node, the controller's decision; the pods it creates are queued.
    /// Pods it already runs are replaced, as a rolling update does (the old pod goes first), or
    /// kept with `OnDelete`.
    pub fn push_daemon_set(&mut self, ds: &DaemonSet) -> Coverage {
        let name = format!("{}/{}", ds.namespace, ds.name);
        let mut coverage = Coverage {
            daemon_set: name.clone(),
            nodes: Vec::with_capacity(self.snapshot.num_nodes()),
            replaced: Vec::new(),
        };
        let mut queued = Vec::new();
        for i in 0..self.snapshot.num_nodes() {
            let info = &self.snapshot.nodes[i];
            let node = info.name();
            let running: Vec<Arc<Pod>> = info
                .pods
                .iter()
                .filter(|p| daemonset::owns(ds, p))
                .cloned()
                .collect();
            if ds.on_delete && !running.is_empty() {
                let names: Vec<String> = running.iter().map(|p| p.key()).collect();
                coverage
                    .nodes
                    .push((node, NodeStatus::Kept(names.join(", "))));
                continue;
            }
            let status = match daemonset::should_run(&ds.template, &info.node) {
                Ok(()) => {
                    queued.push((
                        node,
                        daemonset::pod_for(&ds.template, node, &self.snapshot.cluster.strings),
                    ));
                    NodeStatus::Queued
                }
                Err(why) => NodeStatus::Skipped(why),
            };
            for p in running {
                self.snapshot.remove(node, p.uid);
                coverage.replaced.push(p.key());
            }
            coverage.nodes.push((node, status));
        }
        for (node, pod) in queued {
            self.push(
                Arc::new(pod),
                Origin::DaemonSet {
                    name: name.clone(),
                    node,
                },
            );
        }
        coverage
    }

    /// The budgets that select `pod`, as the eviction API finds them.
    fn pdbs_of(&self, pod: &Pod) -> Vec<usize> {
        self.snapshot
            .cluster
            .pdbs
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                p.namespace == pod.namespace
                    && p.selector.as_ref().is_some_and(|s| s.matches(&pod.labels))
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// A healthy pod selected by budgets leaves (`-1`) or a replacement becomes healthy (`+1`).
    fn disrupt(&mut self, pod: &Pod, delta: i32) {
        for i in self.pdbs_of(pod) {
            let b = &mut self.budgets[i];
            b.surplus += delta;
            b.current_healthy += delta;
            let allowed = b.surplus.max(0);
            // Preemption reads the budgets from the cluster, as it reads PDB status upstream.
            if self.snapshot.cluster.pdbs[i].disruptions_allowed != allowed {
                Arc::make_mut(&mut self.snapshot.cluster).pdbs[i].disruptions_allowed = allowed;
            }
        }
    }

    /// `namespace/name` of a budget.
    pub fn pdb_name(&self, i: usize) -> String {
        let p = &self.snapshot.cluster.pdbs[i];
        format!("{}/{}", p.namespace, p.name)
    }

    /// The running pods a budget selects.
    pub fn protected_by(&self, i: usize) -> Vec<String> {
        let pdb = &self.snapshot.cluster.pdbs[i];
        let Some(sel) = &pdb.selector else {
            return Vec::new();
        };
        let mut pods: Vec<String> = self
            .snapshot
            .pods_in_namespace(pdb.namespace)
            .iter()
            .filter(|(_, p)| sel.matches(&p.labels))
            .map(|(_, p)| p.key())
            .collect();
        pods.sort();
        pods
    }

    /// The eviction subresource's checks for a pod (`EvictionREST.Create`).
    pub fn evict(&self, pod: &Pod) -> Eviction {
        if matches!(pod.phase, Phase::Pending | Phase::Succeeded | Phase::Failed)
            || pod.deletion_timestamp.is_some()
        {
            return Eviction::Allowed;
        }
        let pdbs = self.pdbs_of(pod);
        let i = match pdbs.as_slice() {
            [] => return Eviction::Allowed,
            [i] => *i,
            several => {
                let names: Vec<String> = several.iter().map(|&i| self.pdb_name(i)).collect();
                return Eviction::Refused {
                    pdb: None,
                    message: format!("{SEVERAL_PDBS} ({})", names.join(", ")),
                    retried: false,
                };
            }
        };
        let pdb = &self.snapshot.cluster.pdbs[i];
        let b = self.budgets[i];
        if !pod.ready
            && (pdb.unhealthy_always_allow
                || (b.current_healthy >= pdb.desired_healthy && pdb.desired_healthy > 0))
        {
            return Eviction::Allowed;
        }
        if b.negative {
            return Eviction::Refused {
                pdb: Some(i),
                message: format!(
                    "poddisruptionbudgets.policy {:?} is forbidden: pdb disruptions allowed is negative",
                    pdb.name.as_str()
                ),
                retried: false,
            };
        }
        if b.surplus <= 0 {
            let cause = if b.current_healthy <= pdb.desired_healthy {
                format!(
                    "The disruption budget {} needs {} healthy pods and has {} currently",
                    pdb.name, pdb.desired_healthy, b.current_healthy
                )
            } else {
                format!(
                    "The disruption budget {} does not allow evicting pods currently",
                    pdb.name
                )
            };
            return Eviction::Refused {
                pdb: Some(i),
                message: format!("{PDB_VIOLATION} ({cause})"),
                retried: true,
            };
        }
        Eviction::Allowed
    }

    /// Schedules every queued pod, in queue order, until the queue is empty.
    pub fn run(&mut self) {
        while let Some(e) = self.heap.pop() {
            self.schedule(e);
        }
    }

    /// In tests, every decision is checked against single-pod what-if (a full explaining cycle)
    /// on the cluster as it is at that moment: the same node set for a placement, the same
    /// nomination for a preemption, the same message for a pod left pending.
    #[cfg(test)]
    fn check_against_whatif(&self, fw: &Framework, pod: &Pod, outcome: &Outcome) {
        let whatif = fw.schedule(&self.snapshot, pod);
        let e = crate::explain::build(fw, &self.snapshot, pod, &whatif);
        match outcome {
            Outcome::Scheduled {
                node, preempted, ..
            } if preempted.is_empty() => assert!(
                e.selected.contains(node),
                "{}: placed on {node}, what-if selects {:?}",
                pod.key(),
                e.selected
            ),
            Outcome::Scheduled { node, .. } => {
                let p = e.preemption.expect("what-if preempts too");
                assert!(
                    p.tied_nodes.iter().any(|t| t == node.as_str()),
                    "{}: preempted on {node}, what-if nominates {:?}",
                    pod.key(),
                    p.tied_nodes
                );
            }
            Outcome::Pending { message }
                if whatif.gated.is_none()
                    && whatif.error.is_none()
                    && e.preemption
                        .as_ref()
                        .is_none_or(|p| p.nominated_node.is_empty()) =>
            {
                assert!(e.selected.is_empty());
                assert_eq!(*message, e.message, "{}", pod.key());
            }
            _ => {}
        }
    }

    fn schedule(&mut self, e: Entry) {
        let fws = self.fws;
        let Some(fw) = fws
            .iter()
            .find(|f| f.profile == e.pod.scheduler_name.as_str())
        else {
            let reason = format!(
                "schedulerName {:?} matches no profile: another scheduler places it",
                e.pod.scheduler_name.as_str()
            );
            return self.record(e.pod, e.origin, Outcome::NotPredicted { reason });
        };
        #[cfg(test)]
        let before = self.snapshot.clone();
        let result = fw.schedule_pod(&self.snapshot, &e.pod, Mode::Decide, &mut self.ties, None);
        let outcome = if let Some(gate) = &result.gated {
            Outcome::Pending {
                message: gate.message(),
            }
        } else if let Some(err) = &result.error {
            Outcome::Pending {
                message: err.message(),
            }
        } else if !result.selected.is_empty() {
            self.place(&e, &e.pod, &result, Vec::new())
        } else {
            match result
                .post_filter
                .as_ref()
                .and_then(|o| o.preemption.as_ref())
                .filter(|p| !p.tied.is_empty())
            {
                Some(p) => {
                    let node = p.tied[self.ties.pick(p.tied.len())];
                    let victims: Vec<Arc<Pod>> = p
                        .candidates
                        .iter()
                        .find(|c| c.node == node)
                        .map(|c| c.victims.iter().map(|v| v.pod.clone()).collect())
                        .unwrap_or_default();
                    for v in &victims {
                        let origin = Origin::Preempted {
                            node,
                            by: e.pod.key(),
                        };
                        self.take_off(v, node, origin, fate(v, Leaving::Evicted));
                    }
                    let mut nominated = (*e.pod).clone();
                    nominated.nominated_node_name = Some(node);
                    let again = fw.schedule_pod(
                        &self.snapshot,
                        &nominated,
                        Mode::Decide,
                        &mut self.ties,
                        None,
                    );
                    if again.selected.is_empty() {
                        Outcome::Pending {
                            message: again.message,
                        }
                    } else {
                        let keys = victims.iter().map(|v| v.key()).collect();
                        self.place(&e, &Arc::new(nominated), &again, keys)
                    }
                }
                None => Outcome::Pending {
                    message: result.message,
                },
            }
        };
        #[cfg(test)]
        {
            let now = std::mem::replace(&mut self.snapshot, before);
            self.check_against_whatif(fw, &e.pod, &outcome);
            self.snapshot = now;
        }
        self.record(e.pod, e.origin, outcome);
    }

    /// Binds the pod to one of the best nodes of `result`.
    fn place(
        &mut self,
        e: &Entry,
        pod: &Arc<Pod>,
        result: &CycleResult,
        preempted: Vec<String>,
    ) -> Outcome {
        let chosen = result.chosen.expect("a node was selected");
        let score = result.chosen_score();
        let node = self.snapshot.nodes[chosen].name();
        let mut bound = (**pod).clone();
        bound.node_name = Some(node);
        bound.nominated_node_name = None;
        self.snapshot.nominated.retain(|p| p.uid != pod.uid);
        self.snapshot.assume(Arc::new(bound), node);
        if e.restores {
            self.disrupt(pod, 1);
        }
        Outcome::Scheduled {
            node,
            score,
            tied: result.selected.len(),
            preempted,
        }
    }

    /// The cluster after the plan, and every pod handled, in the order they were handled.
    pub fn finish(self) -> (Snapshot, Vec<PodResult>) {
        (self.snapshot, self.results)
    }
}
