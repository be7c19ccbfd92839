//! The cluster as a plan changes it, and every pod the plan follows. Each change is logged and
//! can be undone in reverse (`checkpoint`, `rollback`): the exploration of orders (`race`) walks
//! many orders on one snapshot, going back to where they part. Changing the snapshot in place
//! keeps its nodes' generations growing, so nothing cached per node generation goes stale.

use super::interact::{Capacity, Relations};
use super::{Fate, Origin};
use crate::framework::runner::Framework;
use crate::framework::snapshot::Snapshot;
use crate::model::intern::Str;
use crate::model::pod::Pod;
use std::collections::HashMap;
use std::sync::Arc;

/// A pod the scheduler is to place: a replacement, a pod of `-f`, a DaemonSet pod, a pending pod.
#[derive(Clone, Debug)]
pub struct Track {
    /// Who it is whatever the order: the UID of the pod it replaces, or its own.
    pub key: Str,
    /// The pod as queued (a replacement: the new pod, not bound).
    pub pod: Arc<Pod>,
    pub origin: Origin,
    /// It replaces a healthy pod: once it is bound, the budgets selecting it get a disruption back.
    pub restores: bool,
    pub state: TrackState,
    /// kube-scheduler has tried it at least once.
    pub tried: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrackState {
    /// A StatefulSet's pod, created with the same name once the pod it replaces is gone.
    Waiting,
    /// In the active queue, ordered by `since`: when it arrived, or when it last failed (kube-
    /// scheduler keeps that time when an event moves it back).
    Ready {
        since: u64,
    },
    /// Tried at `failed` and fits nowhere: waits for an event that may help it.
    Unschedulable {
        failed: u64,
    },
    Bound(Binding),
    /// No profile serves its `schedulerName`: another scheduler places it.
    NotPredicted(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub node: Str,
    /// The winning total; `None` when one node was feasible (not scored).
    pub score: Option<i64>,
    /// Every node that shared the best score, by name (`node` among them).
    pub tied: Arc<[Str]>,
    /// The pods preempted for it.
    pub preempted: Vec<String>,
}

/// A pod the plan takes off its node: evicted by a drain, preempted, or displaced by an edit.
#[derive(Clone, Debug)]
pub struct Leaver {
    /// Who it is whatever the order: its UID, or, for a pod the plan placed, its track's key
    /// (the track is queued again as its replacement).
    pub key: Str,
    /// The pod as it ran.
    pub pod: Arc<Pod>,
    pub node: Str,
    pub origin: Origin,
    /// The drain (index) that evicts it.
    pub drain: Option<usize>,
    pub fate: Fate,
    pub state: LeaverState,
    /// Its controller's replacement, once created (a track index).
    pub replacement: Option<usize>,
}

impl Leaver {
    /// Its controller is a StatefulSet: the replacement, of the same name, waits until it is gone.
    pub fn stateful(&self) -> bool {
        self.fate == Fate::Recreated
            && self
                .pod
                .controller()
                .is_some_and(|o| o.kind == "StatefulSet")
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaverState {
    /// On its node. `refused`: its eviction was refused with 429 and kubectl retries it.
    Running {
        refused: bool,
    },
    /// Evicted: marked for deletion, still on its node for kube-scheduler until the kubelet is done.
    Terminating,
    Gone,
    /// Its eviction never succeeds; it stays.
    Blocked(Blocked),
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
    /// kubectl retries it every few seconds, for ever unless `--drain-timeout` is given.
    pub retried: bool,
}

/// One `--drain` node as kubectl starts it.
#[derive(Clone, Debug)]
pub struct DrainStart {
    pub node: Str,
    /// kubectl's filters refuse the node: nothing is evicted from it.
    pub refused: Option<String>,
    /// kubectl never gets to the node: it still waits on this earlier one.
    pub waiting_on: Option<Str>,
    pub stays: Vec<(String, &'static str)>,
}

/// How a drain that started ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrainEnd {
    Done,
    /// Evictions kubectl retries were still refused when `--drain-timeout` ran out: kubectl
    /// reports the error and goes on with the next node.
    TimedOut,
    /// The same without a timeout: kubectl retries for ever.
    Stuck,
}

/// The order pods were handled in (the report lists them so).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handled {
    Track(usize),
    Leaver(usize),
}

/// A PodDisruptionBudget as the plan changes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Healthy pods beyond the desired number (negative: short of it); disruptions allowed is
    /// this when positive, else 0.
    pub surplus: i32,
    pub current_healthy: i32,
    /// `status.disruptionsAllowed` was negative: the eviction API refuses outright.
    pub negative: bool,
}

enum Undo {
    Assumed { node: Str, uid: Str },
    Removed { node: Str, pod: Arc<Pod> },
    Budget { i: usize, was: Budget, allowed: i32 },
    Nominated(Vec<Arc<Pod>>),
    Track { i: usize, was: TrackState },
    Tried(usize),
    Restores { i: usize, was: bool },
    Pod { i: usize, was: Arc<Pod> },
    Leaver { i: usize, was: LeaverState },
    Replacement { leaver: usize },
    Phase(usize),
    Seq(u64),
}

/// Where to go back to.
#[derive(Clone, Copy, Debug)]
pub struct Checkpoint {
    undo: usize,
    tracks: usize,
    leavers: usize,
    handled: usize,
    evicted: usize,
    starts: usize,
    ends: usize,
    waits: usize,
}

pub struct State<'a> {
    pub fws: &'a [Framework],
    pub snapshot: Snapshot,
    pub budgets: Vec<Budget>,
    pub tracks: Vec<Track>,
    pub leavers: Vec<Leaver>,
    /// 0: the pods the edits and `-f` queue; `d + 1`: drain `d`.
    pub phase: usize,
    /// The `--drain` nodes, in order.
    pub drain_nodes: Vec<Str>,
    /// The drains started, in order, and how those that ended ended.
    pub starts: Vec<DrainStart>,
    pub ends: Vec<DrainEnd>,
    pub handled: Vec<Handled>,
    /// Leavers in the order their evictions went through.
    pub evicted: Vec<usize>,
    /// A track retried when a leaver was gone, then bound: it waited for that pod to go.
    pub waits: Vec<(usize, usize)>,
    /// A clock for the queue's order.
    pub seq: u64,
    /// `--seed`.
    pub seed: Option<u64>,
    pub relations: Relations,
    pub capacity: Capacity,
    /// A number per pod key, for state keys; never forgets.
    slots: HashMap<Str, u32>,
    undo: Vec<Undo>,
}

impl<'a> State<'a> {
    pub fn new(fws: &'a [Framework], snapshot: Snapshot, budgets: Vec<Budget>) -> State<'a> {
        State {
            fws,
            snapshot,
            budgets,
            tracks: Vec::new(),
            leavers: Vec::new(),
            phase: 0,
            drain_nodes: Vec::new(),
            starts: Vec::new(),
            ends: Vec::new(),
            handled: Vec::new(),
            evicted: Vec::new(),
            waits: Vec::new(),
            seq: 0,
            seed: None,
            relations: Relations::default(),
            capacity: Capacity::new(super::interact::Swing::of(fws)),
            slots: HashMap::new(),
            undo: Vec::new(),
        }
    }

    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            undo: self.undo.len(),
            tracks: self.tracks.len(),
            leavers: self.leavers.len(),
            handled: self.handled.len(),
            evicted: self.evicted.len(),
            starts: self.starts.len(),
            ends: self.ends.len(),
            waits: self.waits.len(),
        }
    }

    /// Undoes every change since `cp`, the last first.
    pub fn rollback(&mut self, cp: Checkpoint) {
        while self.undo.len() > cp.undo {
            match self.undo.pop().expect("an undo entry") {
                Undo::Assumed { node, uid } => {
                    self.snapshot.remove(node, uid);
                }
                Undo::Removed { node, pod } => {
                    self.snapshot.assume(pod, node);
                }
                Undo::Budget { i, was, allowed } => {
                    self.budgets[i] = was;
                    self.set_allowed(i, allowed);
                }
                Undo::Nominated(was) => self.snapshot.nominated = was,
                Undo::Track { i, was } => self.tracks[i].state = was,
                Undo::Tried(i) => self.tracks[i].tried = false,
                Undo::Restores { i, was } => self.tracks[i].restores = was,
                Undo::Pod { i, was } => self.tracks[i].pod = was,
                Undo::Leaver { i, was } => self.leavers[i].state = was,
                Undo::Replacement { leaver } => self.leavers[leaver].replacement = None,
                Undo::Phase(was) => self.phase = was,
                Undo::Seq(was) => self.seq = was,
            }
        }
        self.tracks.truncate(cp.tracks);
        self.leavers.truncate(cp.leavers);
        self.handled.truncate(cp.handled);
        self.evicted.truncate(cp.evicted);
        self.starts.truncate(cp.starts);
        self.ends.truncate(cp.ends);
        self.waits.truncate(cp.waits);
    }

    /// The next tick of the queue's clock.
    pub fn tick(&mut self) -> u64 {
        self.undo.push(Undo::Seq(self.seq));
        self.seq += 1;
        self.seq
    }

    pub fn assume(&mut self, pod: Arc<Pod>, node: Str) {
        let uid = pod.uid;
        if self.snapshot.assume(pod, node) {
            self.undo.push(Undo::Assumed { node, uid });
        }
    }

    pub fn remove(&mut self, node: Str, uid: Str) -> Option<Arc<Pod>> {
        let pod = self.snapshot.remove(node, uid)?;
        self.undo.push(Undo::Removed {
            node,
            pod: pod.clone(),
        });
        Some(pod)
    }

    pub fn set_budget(&mut self, i: usize, b: Budget) {
        let allowed = self.snapshot.cluster.pdbs[i].disruptions_allowed;
        self.undo.push(Undo::Budget {
            i,
            was: self.budgets[i],
            allowed,
        });
        self.budgets[i] = b;
        // Preemption reads the budgets from the cluster, as it reads PDB status upstream.
        self.set_allowed(i, b.surplus.max(0));
    }

    fn set_allowed(&mut self, i: usize, allowed: i32) {
        if self.snapshot.cluster.pdbs[i].disruptions_allowed != allowed {
            Arc::make_mut(&mut self.snapshot.cluster).pdbs[i].disruptions_allowed = allowed;
        }
    }

    pub fn forget_nomination(&mut self, uid: Str) {
        if self.snapshot.nominated.iter().any(|p| p.uid == uid) {
            self.undo
                .push(Undo::Nominated(self.snapshot.nominated.clone()));
            self.snapshot.nominated.retain(|p| p.uid != uid);
        }
    }

    pub fn set_track(&mut self, i: usize, state: TrackState) {
        let was = std::mem::replace(&mut self.tracks[i].state, state);
        self.undo.push(Undo::Track { i, was });
    }

    /// Track `i` follows a new pod: its pod's controller replaced it again.
    pub fn requeue(&mut self, i: usize, pod: Arc<Pod>, restores: bool) {
        let was = std::mem::replace(&mut self.tracks[i].restores, restores);
        self.undo.push(Undo::Restores { i, was });
        let was = std::mem::replace(&mut self.tracks[i].pod, pod);
        self.undo.push(Undo::Pod { i, was });
    }

    pub fn mark_tried(&mut self, i: usize) {
        self.undo.push(Undo::Tried(i));
        self.tracks[i].tried = true;
    }

    pub fn set_leaver(&mut self, i: usize, state: LeaverState) {
        let was = std::mem::replace(&mut self.leavers[i].state, state);
        self.undo.push(Undo::Leaver { i, was });
    }

    pub fn set_phase(&mut self, phase: usize) {
        self.undo.push(Undo::Phase(self.phase));
        self.phase = phase;
    }

    /// Adds a track (undone by truncation) and returns its index.
    pub fn push_track(&mut self, track: Track) -> usize {
        self.slot(track.key);
        self.capacity.meet(&track.pod);
        self.tracks.push(track);
        self.tracks.len() - 1
    }

    pub fn push_leaver(&mut self, leaver: Leaver) -> usize {
        self.slot(leaver.key);
        self.leavers.push(leaver);
        self.leavers.len() - 1
    }

    pub fn link_replacement(&mut self, leaver: usize, track: usize) {
        self.undo.push(Undo::Replacement { leaver });
        self.leavers[leaver].replacement = Some(track);
    }

    /// The number of a pod key.
    pub fn slot(&mut self, key: Str) -> u32 {
        let next = self.slots.len() as u32;
        *self.slots.entry(key).or_insert(next)
    }

    pub fn slot_of(&self, key: Str) -> Option<u32> {
        self.slots.get(&key).copied()
    }

    /// Everything that decides what happens next, as numbers: the phase, each track's and each
    /// leaver's state (by slot), the order of the ready queue, the budgets. Two orders that reach
    /// equal keys go on alike.
    pub fn key(&self) -> Box<[u32]> {
        const NONE: u32 = u32::MAX;
        let node = |n: Str| self.snapshot.node_index(n).map_or(NONE - 1, |i| i as u32);
        let mut tracks: Vec<[u32; 3]> = self
            .tracks
            .iter()
            .map(|t| {
                let slot = self.slots[&t.key];
                match &t.state {
                    TrackState::Waiting => [slot, 0, NONE],
                    TrackState::Ready { .. } => [slot, 1, NONE],
                    TrackState::Unschedulable { .. } => [slot, 2, NONE],
                    TrackState::Bound(b) => [slot, 3, node(b.node)],
                    TrackState::NotPredicted(_) => [slot, 4, NONE],
                }
            })
            .collect();
        tracks.sort_unstable();
        let mut ready: Vec<(u64, u32)> = self
            .tracks
            .iter()
            .filter_map(|t| match t.state {
                TrackState::Ready { since } => Some((since, self.slots[&t.key])),
                _ => None,
            })
            .collect();
        ready.sort_unstable();
        let mut leavers: Vec<[u32; 2]> = self
            .leavers
            .iter()
            .map(|l| {
                let state = match &l.state {
                    LeaverState::Running { refused: false } => 0,
                    LeaverState::Running { refused: true } => 1,
                    LeaverState::Terminating => 2,
                    LeaverState::Gone => 3,
                    LeaverState::Blocked(_) => 4,
                };
                [self.slots[&l.key], state]
            })
            .collect();
        leavers.sort_unstable();
        let mut key = vec![self.phase as u32, self.ends.len() as u32];
        key.extend(tracks.iter().flatten());
        key.push(NONE);
        key.extend(ready.iter().map(|(_, s)| *s));
        key.push(NONE);
        key.extend(leavers.iter().flatten());
        key.push(NONE);
        key.extend(
            self.budgets
                .iter()
                .flat_map(|b| [b.surplus as u32, b.current_healthy as u32]),
        );
        key.into_boxed_slice()
    }

    /// The framework serving a pod's `schedulerName`.
    pub fn framework(&self, pod: &Pod) -> Option<&'a Framework> {
        self.fws
            .iter()
            .find(|f| f.profile == pod.scheduler_name.as_str())
    }

    /// The key a pod on a node is followed by: its track's when the plan placed it, else its UID.
    pub fn key_of_running(&self, pod: &Pod) -> Str {
        self.tracks
            .iter()
            .find(|t| t.pod.uid == pod.uid && matches!(t.state, TrackState::Bound(_)))
            .map_or(pod.uid, |t| t.key)
    }

    /// Nodes holding pods the plan placed, by index, with the cpu and memory they request there.
    pub fn placed_load(&self) -> Vec<(usize, i64, i64)> {
        let mut load: Vec<(usize, i64, i64)> = Vec::new();
        for t in &self.tracks {
            let TrackState::Bound(b) = &t.state else {
                continue;
            };
            let Some(n) = self.snapshot.node_index(b.node) else {
                continue;
            };
            match load.iter_mut().find(|(m, _, _)| *m == n) {
                Some(l) => {
                    l.1 += t.pod.requests.milli_cpu;
                    l.2 += t.pod.requests.memory;
                }
                None => load.push((n, t.pod.requests.milli_cpu, t.pod.requests.memory)),
            }
        }
        load.sort_unstable();
        load
    }
}
