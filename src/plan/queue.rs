//! kube-scheduler's queue and scheduling loop, offline, and what the API server and the
//! controllers do around them.
//!
//! Pods wait in the active queue in PrioritySort order (higher priority first, then the earlier
//! time they entered the queue) and each is scheduled with the profile that serves it, the whole
//! pipeline including PostFilter. A pod that fits nowhere waits, unschedulable, until an event that
//! may help it moves it back (a pod it counts or sees bound or gone, room freed on a node it may
//! use), keeping the time it failed, as the queueing hints of the plugins that rejected it
//! decide. When preemption nominates a node, its victims are deleted (their controllers'
//! replacements join the queue) and the pod is scheduled again at once, its nominated node first.
//!
//! Evictions go through the eviction API's checks against PodDisruptionBudgets: a healthy pod
//! leaving lowers its budgets, a replacement that is bound raises them again (it is assumed to
//! start and become ready). An evicted pod terminates on its node, where kube-scheduler still sees
//! it, until it is gone; ReplicaSets, Jobs and other controllers replace it as soon as it
//! terminates, a StatefulSet once it is gone (the new pod takes its name).

use super::daemonset::{self, Coverage, DaemonSet, NodeStatus};
use super::interact::may_use;
use super::state::{
    Binding, Blocked, Budget, Handled, Leaver, LeaverState, State, Track, TrackState,
};
use super::{Fate, Leaving, Origin, fate, replacement};
use crate::framework::runner::Mode;
use crate::framework::schedule_one::Ties;
use crate::model::cluster::Cluster;
use crate::model::intern::Str;
use crate::model::pod::{Phase, Pod};
use k8s_openapi::jiff::Timestamp;
use std::sync::Arc;

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

/// What one scheduling cycle of a queued pod decided, before anything changes.
#[derive(Clone, Debug)]
pub enum Decision {
    /// No profile serves its `schedulerName`.
    NotPredicted(String),
    /// Fits nowhere (or is gated, or a plugin failed): the FailedScheduling message.
    Unschedulable(String),
    /// The nodes (by index) tied for the best total, by name, and that total (`None`: one node
    /// was feasible and nothing was scored).
    Fits {
        selected: Arc<[usize]>,
        score: Option<i64>,
    },
    /// Fits nowhere, and preemption nominates one of these nodes; equally good candidates, by
    /// name.
    Preempts(Arc<[Candidate]>),
}

/// A node preemption may nominate, with the pods it would evict there.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub node: Str,
    pub victims: Vec<Arc<Pod>>,
}

/// The budgets as the cluster reports them.
pub fn budgets(cluster: &Cluster) -> Vec<Budget> {
    cluster
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
        .collect()
}

/// Why a pod leaves its node, worded for the report when nothing recreates it.
fn fate_on_eviction(pod: &Pod, drained: bool) -> Fate {
    match fate(pod, Leaving::Evicted) {
        Fate::Lost(why) if drained => {
            Fate::Lost(format!("{why} (kubectl drain --force deletes it)"))
        }
        f => f,
    }
}

impl State<'_> {
    /// The budgets that select `pod`, as the eviction API finds them.
    pub fn pdbs_of(&self, pod: &Pod) -> Vec<usize> {
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
            let mut b = self.budgets[i];
            b.surplus += delta;
            b.current_healthy += delta;
            self.set_budget(i, b);
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
            .filter(|(_, p)| sel.matches(&p.labels) && p.deletion_timestamp.is_none())
            .map(|(_, p)| p.key())
            .collect();
        pods.sort();
        pods
    }

    /// The eviction subresource's checks for a pod (`EvictionREST.Create`).
    pub fn evict_check(&self, pod: &Pod) -> Eviction {
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

    /// A refused eviction as the report shows it.
    pub fn blocked(
        &self,
        pod: &Pod,
        pdb: Option<usize>,
        message: String,
        retried: bool,
    ) -> Blocked {
        Blocked {
            pod: pod.key(),
            pdb: pdb.map(|i| self.pdb_name(i)),
            message,
            protects: pdb.map(|i| self.protected_by(i)).unwrap_or_default(),
            retried,
        }
    }

    /// Queues a pod that is on no node; it arrives now.
    pub fn queue(&mut self, key: Str, pod: Arc<Pod>, origin: Origin, restores: bool) -> usize {
        let since = self.tick();
        self.push_track(Track {
            key,
            pod,
            origin,
            restores,
            state: TrackState::Ready { since },
            tried: false,
        })
    }

    /// Records a pod taken off its node (`pod` as it ran; it is no longer on `node`, or is
    /// terminating there) and does what its controller does: a replacement is queued now, or,
    /// for a StatefulSet, waits until the pod is gone.
    fn leave(
        &mut self,
        pod: Arc<Pod>,
        node: Str,
        origin: Origin,
        drain: Option<usize>,
        state: LeaverState,
        fate: Fate,
    ) -> usize {
        if pod.ready {
            self.disrupt(&pod, -1);
        }
        let l = self.push_leaver(Leaver {
            key: self.key_of_running(&pod),
            pod,
            node,
            origin,
            drain,
            fate,
            state,
            replacement: None,
        });
        self.follow(l);
        l
    }

    fn follow(&mut self, l: usize) {
        let leaver = &self.leavers[l];
        match &leaver.fate {
            Fate::Recreated => {
                let (key, restores) = (leaver.key, leaver.pod.ready);
                let waits = leaver.stateful() && leaver.state != LeaverState::Gone;
                // A pod the plan placed: its track is queued again, as the new pod.
                let again = self.tracks.iter().position(|t| t.key == key);
                let t = match again {
                    Some(t) => {
                        let pod = Arc::new(replacement(&leaver.pod));
                        self.requeue(t, pod, restores);
                        let state = if waits {
                            TrackState::Waiting
                        } else {
                            TrackState::Ready { since: self.tick() }
                        };
                        self.set_track(t, state);
                        t
                    }
                    None => {
                        let pod = Arc::new(replacement(&leaver.pod));
                        let origin = leaver.origin.clone();
                        if waits {
                            self.push_track(Track {
                                key,
                                pod,
                                origin,
                                restores,
                                state: TrackState::Waiting,
                                tried: false,
                            })
                        } else {
                            self.queue(key, pod, origin, restores)
                        }
                    }
                };
                self.link_replacement(l, t);
            }
            Fate::Lost(_) | Fate::Removed(_) => self.handled.push(Handled::Leaver(l)),
        }
    }

    /// Pods an edit took out of the cluster before the plan's snapshot was built.
    pub fn displaced(&mut self, pods: &[(Arc<Pod>, Fate)], edit: usize) {
        for (pod, fate) in pods {
            let node = pod.node_name.unwrap_or_default();
            let origin = Origin::Displaced { node, edit };
            self.leave(
                pod.clone(),
                node,
                origin,
                None,
                LeaverState::Gone,
                fate.clone(),
            );
        }
    }

    /// A drain's eviction of leaver `l`, as the API server answers it now.
    pub fn evict(&mut self, l: usize) {
        let pod = self.leavers[l].pod.clone();
        match self.evict_check(&pod) {
            Eviction::Allowed => {
                let node = self.leavers[l].node;
                self.evicted.push(l);
                if pod.ready {
                    self.disrupt(&pod, -1);
                }
                // The API server deletes at once what no kubelet has to stop.
                let state = if pod.deletion_timestamp.is_some() {
                    LeaverState::Terminating
                } else if pod.is_terminated() || pod.node_name.is_none() {
                    self.remove(node, pod.uid);
                    LeaverState::Gone
                } else {
                    self.remove(node, pod.uid);
                    let mut terminating = (*pod).clone();
                    terminating.deletion_timestamp = Some(Timestamp::UNIX_EPOCH);
                    self.assume(Arc::new(terminating), node);
                    LeaverState::Terminating
                };
                self.set_leaver(l, state);
                self.follow(l);
            }
            Eviction::Refused { retried: true, .. } => {
                self.set_leaver(l, LeaverState::Running { refused: true })
            }
            Eviction::Refused { pdb, message, .. } => {
                let b = self.blocked(&pod, pdb, message, false);
                self.set_leaver(l, LeaverState::Blocked(b));
                self.handled.push(Handled::Leaver(l));
            }
        }
    }

    /// The kubelet is done with a terminating pod: it is deleted, and kube-scheduler forgets it.
    pub fn gone(&mut self, l: usize) {
        let leaver = &self.leavers[l];
        let (node, key, pod) = (leaver.node, leaver.key, leaver.pod.clone());
        self.remove(node, pod.uid);
        self.set_leaver(l, LeaverState::Gone);
        if let Some(t) = self.leavers[l].replacement
            && self.tracks[t].state == TrackState::Waiting
        {
            let since = self.tick();
            self.set_track(t, TrackState::Ready { since });
        }
        self.retry_after_going(node, (key, pod), Some(l));
    }

    /// A pod left `node` for good: unschedulable pods that may use the room, or that see it,
    /// are retried.
    fn retry_after_going(&mut self, node: Str, gone: (Str, Arc<Pod>), leaver: Option<usize>) {
        let info = self.snapshot.get(node).map(|n| n.node.clone());
        self.retry(
            |st, x| {
                info.as_ref().is_some_and(|n| may_use(&st.tracks[x].pod, n))
                    || st.related(x, gone.clone())
            },
            leaver,
        );
    }

    /// Whether the pod of track `x` and `other` see each other through labels or shared objects.
    fn related(&mut self, x: usize, other: (Str, Arc<Pod>)) -> bool {
        let cluster = self.snapshot.cluster.clone();
        let t = &self.tracks[x];
        let (key, pod) = (t.key, t.pod.clone());
        self.relations
            .labelled(&cluster, (key, &pod), (other.0, &other.1))
            .any()
    }

    /// An event happened: unschedulable pods it may help go back to the active queue, in the
    /// order they failed. `woken_by`: the leaver whose going is the event.
    fn retry(&mut self, helps: impl Fn(&mut Self, usize) -> bool, woken_by: Option<usize>) {
        for x in 0..self.tracks.len() {
            if let TrackState::Unschedulable { failed } = self.tracks[x].state
                && helps(self, x)
            {
                self.set_track(x, TrackState::Ready { since: failed });
                if let Some(l) = woken_by {
                    self.waits.push((x, l));
                }
            }
        }
    }

    /// One scheduling cycle of track `t` on the cluster as it is: nothing changes but what the
    /// cycle teaches about the nodes the pod contends for.
    pub fn decide(&mut self, t: usize) -> Decision {
        let track = &self.tracks[t];
        let (key, pod) = (track.key, track.pod.clone());
        let Some(fw) = self.framework(&pod) else {
            return Decision::NotPredicted(format!(
                "schedulerName {:?} matches no profile: another scheduler places it",
                pod.scheduler_name.as_str()
            ));
        };
        let result = fw.schedule_pod(
            &self.snapshot,
            &pod,
            Mode::Decide,
            &mut Ties::FirstByName,
            None,
        );
        let placed = self.placed_load();
        self.capacity
            .observe((key, &pod), &result, &self.snapshot, &placed);
        if let Some(gate) = &result.gated {
            return Decision::Unschedulable(gate.message());
        }
        if let Some(err) = &result.error {
            return Decision::Unschedulable(err.message());
        }
        if !result.selected.is_empty() {
            return Decision::Fits {
                score: result.chosen_score(),
                selected: result.selected.into(),
            };
        }
        let preemption = result
            .post_filter
            .as_ref()
            .and_then(|o| o.preemption.as_ref())
            .filter(|p| !p.tied.is_empty());
        match preemption {
            Some(p) => Decision::Preempts(
                p.tied
                    .iter()
                    .map(|&node| Candidate {
                        node,
                        victims: p
                            .candidates
                            .iter()
                            .find(|c| c.node == node)
                            .map(|c| c.victims.iter().map(|v| v.pod.clone()).collect())
                            .unwrap_or_default(),
                    })
                    .collect(),
            ),
            None => Decision::Unschedulable(result.message),
        }
    }

    /// Carries out what `decide` decided for track `t`, taking tied node (or preemption
    /// candidate) `choice`.
    pub fn commit(&mut self, t: usize, decision: &Decision, choice: usize) {
        if !self.tracks[t].tried {
            self.mark_tried(t);
            self.handled.push(Handled::Track(t));
        }
        match decision {
            Decision::NotPredicted(reason) => {
                self.set_track(t, TrackState::NotPredicted(reason.clone()))
            }
            Decision::Unschedulable(_) => {
                let failed = self.tick();
                self.set_track(t, TrackState::Unschedulable { failed });
            }
            Decision::Fits { selected, score } => {
                self.bind(t, selected, selected[choice], *score, Vec::new())
            }
            Decision::Preempts(candidates) => {
                let Candidate { node, victims } = &candidates[choice];
                let by = self.tracks[t].pod.key();
                for v in victims.iter() {
                    let origin = Origin::Preempted {
                        node: *node,
                        by: by.clone(),
                    };
                    self.remove(*node, v.uid);
                    let fate = fate_on_eviction(v, false);
                    let l = self.leave(v.clone(), *node, origin, None, LeaverState::Gone, fate);
                    let key = self.leavers[l].key;
                    self.retry_after_going(*node, (key, v.clone()), None);
                }
                let mut nominated = (*self.tracks[t].pod).clone();
                nominated.nominated_node_name = Some(*node);
                let fw = self.framework(&nominated).expect("it was scheduled");
                let again = fw.schedule_pod(
                    &self.snapshot,
                    &nominated,
                    Mode::Decide,
                    &mut Ties::FirstByName,
                    None,
                );
                if again.selected.is_empty() {
                    let failed = self.tick();
                    self.set_track(t, TrackState::Unschedulable { failed });
                } else {
                    let keys = victims.iter().map(|v| v.key()).collect();
                    let chosen = again.selected[0];
                    self.bind(t, &again.selected, chosen, again.chosen_score(), keys);
                }
            }
        }
    }

    /// Binds track `t` to node `chosen` (index), one of `tied`.
    fn bind(
        &mut self,
        t: usize,
        tied: &[usize],
        chosen: usize,
        score: Option<i64>,
        preempted: Vec<String>,
    ) {
        let node = self.snapshot.nodes[chosen].name();
        let track = &self.tracks[t];
        let (key, restores) = (track.key, track.restores);
        let mut bound = (*track.pod).clone();
        bound.node_name = Some(node);
        bound.nominated_node_name = None;
        // Assumed to start and become ready, as the budgets assume it.
        bound.phase = Phase::Running;
        bound.ready = true;
        let uid = bound.uid;
        self.forget_nomination(uid);
        let bound = Arc::new(bound);
        self.assume(bound.clone(), node);
        if restores {
            self.disrupt(&bound, 1);
        }
        let tied_names: Arc<[Str]> = tied
            .iter()
            .map(|&i| self.snapshot.nodes[i].name())
            .collect();
        self.capacity.placed(key, tied);
        self.set_track(
            t,
            TrackState::Bound(Binding {
                node,
                score,
                tied: tied_names,
                preempted,
            }),
        );
        self.retry(|st, x| st.related(x, (key, bound.clone())), None);
    }
}

/// Queueing what `-f` and the edits add.
impl State<'_> {
    /// Queues a DaemonSet pod pinned to `node`.
    pub fn queue_daemon(&mut self, node: Str, pod: Pod) {
        let name = match pod.controller() {
            Some(o) => format!("{}/{}", pod.namespace, o.name),
            None => pod.key(),
        };
        let pod = Arc::new(pod);
        self.queue(pod.uid, pod, Origin::DaemonSet { name, node }, false);
    }

    /// Queues `count` pods of a `-f` template, numbered when the workload makes several.
    pub fn queue_replicas(&mut self, template: &Pod, count: usize, document: usize) {
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
            let p = Arc::new(p);
            self.queue(p.uid, p, Origin::Workload { document }, false);
        }
    }

    /// A `-f` DaemonSet: per node, the controller's decision; the pods it creates are queued.
    /// Pods it already runs are replaced, as a rolling update does (the old pod goes first), or
    /// kept with `OnDelete`.
    pub fn queue_daemon_set(&mut self, ds: &DaemonSet) -> Coverage {
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
                self.remove(node, p.uid);
                coverage.replaced.push(p.key());
            }
            coverage.nodes.push((node, status));
        }
        for (node, pod) in queued {
            let pod = Arc::new(pod);
            let origin = Origin::DaemonSet {
                name: name.clone(),
                node,
            };
            self.queue(pod.uid, pod, origin, false);
        }
        coverage
    }
}

#[cfg(test)]
impl State<'_> {
    /// In tests, every decision of the most likely order is checked against single-pod what-if
    /// (a full explaining cycle) on the cluster as it is at that moment: the same node set for a
    /// placement, the same nomination for a preemption, the same message for a pod that fits
    /// nowhere.
    pub fn check_against_whatif(&self, t: usize, decision: &Decision) {
        let pod = &self.tracks[t].pod;
        let Some(fw) = self.framework(pod) else {
            return;
        };
        let whatif = fw.schedule(&self.snapshot, pod);
        let e = crate::explain::build(fw, &self.snapshot, pod, &whatif);
        let names = |nodes: &[usize]| -> Vec<Str> {
            nodes
                .iter()
                .map(|&i| self.snapshot.nodes[i].name())
                .collect()
        };
        match decision {
            Decision::Fits { selected, .. } => {
                let names = names(selected);
                assert!(
                    names.iter().all(|n| e.selected.contains(n)),
                    "{}: placed on one of {names:?}, what-if selects {:?}",
                    pod.key(),
                    e.selected
                );
            }
            Decision::Preempts(candidates) => {
                let p = e.preemption.expect("what-if preempts too");
                assert!(
                    candidates
                        .iter()
                        .all(|c| p.tied_nodes.iter().any(|t| t == c.node.as_str())),
                    "{}: what-if nominates {:?}",
                    pod.key(),
                    p.tied_nodes
                );
            }
            Decision::Unschedulable(message)
                if whatif.gated.is_none() && whatif.error.is_none() =>
            {
                assert!(e.selected.is_empty());
                assert_eq!(*message, e.message, "{}", pod.key());
            }
            _ => {}
        }
    }
}
