//! The orders a drain may take, and where each pod may end.
//!
//! kubectl evicts a node's pods concurrently; each eviction lands when the API server takes it,
//! each controller creates its replacement as the eviction lands (a StatefulSet once the old pod
//! is gone), and kube-scheduler takes the replacements as they arrive, those waiting together by
//! priority; the kubelet deletes a terminating pod some time later. So the order of the
//! replacements, and whether a pod still runs, terminates or is gone when another is scheduled,
//! are a race. The plan is a transition system over these steps (`Action`): evict a pod, a
//! terminating pod is gone, schedule a queued pod; one step order is the most likely one
//! (`enabled` lists the steps so, the first is taken), and the others are explored:
//!
//! - only steps that can change each other's outcome are reordered (`Dependence`, from
//!   `interact`): a step whose pods interact with no other step's goes in the likely order; the
//!   pods that kube-scheduler could place on several tied nodes try each of them (up to
//!   `TIE_CHOICES`) when another pod interacts with them;
//! - orders are tried with fewer departures from the likely one first (iterative deepening), and
//!   states already reached are not walked again;
//! - the search stops after `budget` scheduling cycles (fewer on larger clusters) and says so.
//!
//! Each end state gives each pod its node (or pending); the union over the end states is what
//! the report calls `possibleNodes`. Everything is deterministic: no clock, no randomness
//! (`--seed` picks among tied nodes by hashing).

use super::drain::{self, Options};
use super::interact::may_use;
use super::queue::{Decision, Eviction};
use super::state::{DrainEnd, DrainStart, Handled, Leaver, LeaverState, State, Track, TrackState};
use super::{Fate, Origin, Outcome, PodResult};
use crate::framework::snapshot::Snapshot;
use crate::model::intern::Str;
use crate::model::pod::Pod;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// How many of the nodes tied for a pod's best score are tried when other pods depend on which
/// one it takes.
pub const TIE_CHOICES: usize = 4;
/// Scheduling cycles the search may run: about a second's worth on a large cluster (a cycle
/// costs in proportion to the nodes), and at most this many on a small one.
const MAX_CYCLES: usize = 20_000;
const NODE_CYCLES: usize = 400_000;
/// States a search may walk, whatever they cost.
const MAX_STATES: usize = 200_000;
/// The fewest cycles a search may run, however large the cluster.
const MIN_CYCLES: usize = 64;
/// Passes at one depth when each shows new contention.
const MAX_AGAIN: usize = 3;

/// One step of the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// kubectl's eviction of a leaver lands (its first attempt, or a retry the budget now allows).
    Evict(usize),
    /// A terminating leaver is gone.
    Gone(usize),
    /// kube-scheduler takes a queued track.
    Schedule(usize),
}

/// The steps that can happen now, the most likely first: kubectl's first eviction attempts
/// (they land within moments of each other), then kube-scheduler's queue in PrioritySort order,
/// then terminating pods going, then the evictions kubectl retries (every 5 s) that the budgets
/// now allow.
pub fn enabled(st: &State) -> Vec<Action> {
    let drain = st.phase.checked_sub(1);
    let mut out = Vec::new();
    let current = |l: &Leaver| l.drain.is_some() && l.drain == drain;
    for (i, l) in st.leavers.iter().enumerate() {
        if current(l) && l.state == (LeaverState::Running { refused: false }) {
            out.push(Action::Evict(i));
        }
    }
    let mut ready: Vec<(std::cmp::Reverse<i32>, u64, usize)> = st
        .tracks
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t.state {
            TrackState::Ready { since } => Some((std::cmp::Reverse(t.pod.priority), since, i)),
            _ => None,
        })
        .collect();
    ready.sort_unstable();
    out.extend(ready.into_iter().map(|(_, _, i)| Action::Schedule(i)));
    for (i, l) in st.leavers.iter().enumerate() {
        if l.state == LeaverState::Terminating {
            out.push(Action::Gone(i));
        }
    }
    for (i, l) in st.leavers.iter().enumerate() {
        if current(l)
            && l.state == (LeaverState::Running { refused: true })
            && st.evict_check(&l.pod) == Eviction::Allowed
        {
            out.push(Action::Evict(i));
        }
    }
    out
}

/// Picks among `n` tied choices: the first by name, or, with `--seed`, one by hashing the seed
/// and the pod (the same pod and seed always pick the same).
pub fn tie_pick(seed: Option<u64>, key: Str, n: usize) -> usize {
    match seed {
        None => 0,
        Some(seed) => {
            let mut h = std::hash::DefaultHasher::new();
            seed.hash(&mut h);
            key.as_str().hash(&mut h);
            (h.finish() % n as u64) as usize
        }
    }
}

/// What is known of one pod key for the dependence relation.
#[derive(Clone)]
struct Known {
    key: Str,
    pod: Arc<Pod>,
    /// The node it leaves, for a leaver.
    node: Option<Str>,
    stateful: bool,
}

/// Which steps can change each other's outcome, frozen for one pass of the search over the pod
/// keys known then; a key learnt later depends on everything until the next pass.
///
/// Pods interact directly (`interact`: labels, shared objects, a budget, room on nodes); a step
/// can also matter through what it sets off (a pod gone wakes a pending pod that then competes
/// with a third), so steps depend on each other when their pods are in the same group (connected
/// through interactions). A pod going from its node matters only when it is a StatefulSet's
/// (its replacement waits for it) or when some pod of the group sees its presence (pod
/// (anti-)affinity, a shared claim, room on a node it may use).
#[derive(Clone, Default, PartialEq, Eq)]
struct Dependence {
    index: HashMap<Str, usize>,
    /// Direct interactions, per ordered pair of keys: bit `MEET`, their schedules interact; bit
    /// `SEES`, the row's schedule sees the column's presence.
    bits: Vec<u8>,
    n: usize,
    /// Each key's group.
    group: Vec<usize>,
    /// Each key's going from its node matters to its group.
    going_matters: Vec<bool>,
}

const MEET: u8 = 1;
const SEES: u8 = 2;

impl Dependence {
    fn of(st: &mut State, known: &[Known]) -> Dependence {
        let n = known.len();
        let mut bits = vec![0u8; n * n];
        let cluster = st.snapshot.cluster.clone();
        let pdbs: Vec<Vec<usize>> = known.iter().map(|k| st.pdbs_of(&k.pod)).collect();
        let preempts: Vec<bool> = known
            .iter()
            .map(|k| st.capacity.contests.get(&k.key).is_some_and(|c| c.preempts))
            .collect();
        for a in 0..n {
            for b in 0..n {
                let (ka, kb) = (&known[a], &known[b]);
                let lab = st
                    .relations
                    .labelled(&cluster, (ka.key, &ka.pod), (kb.key, &kb.pod));
                let near = kb
                    .node
                    .and_then(|node| st.snapshot.get(node))
                    .is_some_and(|info| may_use(&ka.pod, &info.node));
                let sees = lab.presence() || near;
                let meet = a != b
                    && (lab.any()
                        || preempts[a]
                        || preempts[b]
                        || pdbs[a].iter().any(|p| pdbs[b].contains(p))
                        || st
                            .capacity
                            .contend(&st.snapshot, (ka.key, &ka.pod), (kb.key, &kb.pod)));
                bits[a * n + b] = (u8::from(meet) * MEET) | (u8::from(sees) * SEES);
            }
        }
        // Groups: union-find over every interaction, either way.
        let mut group: Vec<usize> = (0..n).collect();
        fn root(group: &mut [usize], mut i: usize) -> usize {
            while group[i] != i {
                group[i] = group[group[i]];
                i = group[i];
            }
            i
        }
        for a in 0..n {
            for b in 0..n {
                if bits[a * n + b] != 0 {
                    let (ra, rb) = (root(&mut group, a), root(&mut group, b));
                    group[ra.max(rb)] = ra.min(rb);
                }
            }
        }
        let group: Vec<usize> = (0..n).map(|i| root(&mut group, i)).collect();
        let going_matters = (0..n)
            .map(|b| known[b].stateful || (0..n).any(|a| bits[a * n + b] & SEES != 0))
            .collect();
        Dependence {
            index: known.iter().enumerate().map(|(i, k)| (k.key, i)).collect(),
            bits,
            n,
            group,
            going_matters,
        }
    }

    /// Whether two pods' steps may change each other's outcome; `going` says which of them
    /// go from their node in the step.
    fn depends(&self, a: Str, b: Str, going: (bool, bool)) -> bool {
        if a == b {
            return true;
        }
        let (Some(&i), Some(&j)) = (self.index.get(&a), self.index.get(&b)) else {
            return true;
        };
        self.group[i] == self.group[j]
            && (!going.0 || self.going_matters[i])
            && (!going.1 || self.going_matters[j])
    }

    /// Whether the direct interactions here are a subset of `other`'s.
    fn within(&self, other: &Dependence) -> bool {
        self.index.iter().all(|(a, &i)| {
            self.index.iter().all(|(b, &j)| {
                let theirs = match (other.index.get(a), other.index.get(b)) {
                    (Some(&x), Some(&y)) => other.bits[x * other.n + y],
                    _ => MEET | SEES,
                };
                self.bits[i * self.n + j] & !theirs == 0
            })
        })
    }

    /// Whether key `a` interacts with no other key.
    fn alone(&self, a: Str) -> bool {
        let Some(&i) = self.index.get(&a) else {
            return false;
        };
        (0..self.n).all(|j| j == i || self.group[j] != self.group[i])
    }

    /// The direct interaction bits between two keys, either way.
    fn between(&self, a: Str, b: Str) -> u8 {
        match (self.index.get(&a), self.index.get(&b)) {
            (Some(&i), Some(&j)) => self.bits[i * self.n + j] | self.bits[j * self.n + i],
            _ => 0,
        }
    }
}

/// Where one pod (by key) ended in the end states found.
#[derive(Clone, Debug, Default)]
pub struct Reach {
    /// A node, or `None` for staying pending (a pod never evicted stays on its node).
    pub nodes: BTreeSet<Option<Str>>,
    /// The distinct outcomes up to ties: a tie set, or a kind of not being placed.
    pub outcomes: BTreeSet<Vec<Str>>,
    /// In how many end states it was handled at all.
    present: usize,
    /// For a pod some order takes off its node: the pod, why it leaves, and the node it stays on
    /// in the orders that do not.
    first: Option<(Arc<Pod>, Origin, Str)>,
}

/// The pods and drains of the end state of the most likely order, for the report.
pub struct Ending {
    pub tracks: Vec<Track>,
    pub leavers: Vec<Leaver>,
    pub starts: Vec<DrainStart>,
    pub ends: Vec<DrainEnd>,
    pub handled: Vec<Handled>,
    pub evicted: Vec<usize>,
    pub waits: Vec<(usize, usize)>,
    pub snapshot: Snapshot,
    /// The FailedScheduling message each track left pending would show on that end state.
    pub messages: HashMap<usize, String>,
}

/// What the search found.
pub struct Explored {
    pub ending: Ending,
    pub reach: HashMap<Str, Reach>,
    /// Pods pending, lost, blocked or left to another scheduler in some end state, or drains that
    /// did not complete: the plan is not safe in every order.
    pub unsafe_somewhere: bool,
    pub end_states: usize,
    pub cycles: usize,
    /// The search stopped before every order was tried.
    pub capped: bool,
    /// End states reached, counting repeats: a pod handled in fewer is left alone in some.
    calls: usize,
}

struct Search {
    opts: Options,
    budget: usize,
    memo: HashMap<(Box<[u32]>, usize), Decision>,
    visited: HashMap<Box<[u32]>, u32>,
    cycles: usize,
    states: usize,
    capped: bool,
    pruned: bool,
    dependence: Dependence,
    reach: HashMap<Str, Reach>,
    ends: HashSet<Box<[u32]>>,
    calls: usize,
    /// Every pod key met in an end state.
    known: Vec<Known>,
    known_keys: HashSet<Str>,
    ending: Option<Ending>,
    unsafe_somewhere: bool,
    /// The budget ran out: no more branching.
    exhausted: bool,
}

/// Runs the plan from `st` (its queue set up, phase 0) in the most likely order and explores the
/// others; `st` is back where it started afterwards.
pub fn explore(st: &mut State, opts: Options) -> Explored {
    let budget = MAX_CYCLES
        .min(NODE_CYCLES / st.snapshot.num_nodes().max(1))
        .max(MIN_CYCLES);
    explore_within(st, opts, budget)
}

/// `explore`, stopping after `budget` scheduling cycles once the most likely order has ended.
fn explore_within(st: &mut State, opts: Options, budget: usize) -> Explored {
    let mut s = Search {
        opts,
        budget,
        memo: HashMap::new(),
        visited: HashMap::new(),
        cycles: 0,
        states: 0,
        capped: false,
        pruned: false,
        dependence: Dependence::default(),
        reach: HashMap::new(),
        ends: HashSet::new(),
        calls: 0,
        known: Vec::new(),
        known_keys: HashSet::new(),
        ending: None,
        unsafe_somewhere: false,
        exhausted: false,
    };
    let mut deviations = 0;
    let mut again = 0;
    loop {
        s.dependence = Dependence::of(st, &s.known);
        s.visited.clear();
        s.pruned = false;
        s.walk(st, deviations);
        if s.exhausted {
            s.capped |= s.pruned;
            break;
        }
        // This pass's cycles may show pods contending that did not seem to: if the relation
        // grew, the same departures are tried again with it.
        let grown = !Dependence::of(st, &s.known).within(&s.dependence);
        if grown && again < MAX_AGAIN {
            again += 1;
            continue;
        }
        if !s.pruned {
            break;
        }
        again = 0;
        deviations += 1;
    }
    Explored {
        ending: s.ending.expect("the most likely order ends"),
        reach: s.reach,
        unsafe_somewhere: s.unsafe_somewhere,
        end_states: s.ends.len(),
        cycles: s.cycles,
        capped: s.capped,
        calls: s.calls,
    }
}

/// Every pod key of these leavers and tracks, with what the dependence relation needs of it.
fn known(leavers: &[Leaver], tracks: &[Track]) -> Vec<Known> {
    let mut seen: HashSet<Str> = HashSet::new();
    let leaving = leavers.iter().map(|l| Known {
        key: l.key,
        pod: l.pod.clone(),
        node: Some(l.node),
        stateful: l.stateful(),
    });
    let queued = tracks.iter().map(|t| Known {
        key: t.key,
        pod: t.pod.clone(),
        node: None,
        stateful: false,
    });
    leaving
        .chain(queued)
        .filter(|k| seen.insert(k.key))
        .collect()
}

/// The pod key a step is about.
fn key_of(st: &State, a: Action) -> Str {
    match a {
        Action::Evict(l) | Action::Gone(l) => st.leavers[l].key,
        Action::Schedule(t) => st.tracks[t].key,
    }
}

impl Search {
    fn depends(&self, st: &State, a: Action, b: Action) -> bool {
        let going = |x: Action| matches!(x, Action::Gone(_));
        self.dependence
            .depends(key_of(st, a), key_of(st, b), (going(a), going(b)))
    }

    /// The steps to try from here: the most likely one and, closed under dependence, the steps
    /// that could change its outcome or be changed by it.
    fn persistent(&self, st: &State, actions: &[Action]) -> Vec<Action> {
        let mut set = vec![actions[0]];
        loop {
            let before = set.len();
            for &a in actions {
                if !set.contains(&a) && set.iter().any(|&b| self.depends(st, a, b)) {
                    set.push(a);
                }
            }
            if set.len() == before {
                return set;
            }
        }
    }

    /// Takes automatic steps until a choice is to be made (true) or the plan has ended (false):
    /// unschedulable pods that would fit now go back to the queue (kube-scheduler's periodic
    /// flush catches what no event did), a drain with nothing left to do ends, the next starts.
    fn settle(&mut self, st: &mut State) -> bool {
        loop {
            if !enabled(st).is_empty() {
                return true;
            }
            if self.flush(st) {
                continue;
            }
            if st.phase > 0 && st.ends.len() < st.phase {
                drain::end(st, st.phase - 1, self.opts);
            }
            if st.phase == st.drain_nodes.len() {
                return false;
            }
            st.set_phase(st.phase + 1);
            drain::start(st, st.phase - 1, self.opts);
        }
    }

    fn flush(&mut self, st: &mut State) -> bool {
        let key = st.key();
        let mut moved = false;
        for t in 0..st.tracks.len() {
            let TrackState::Unschedulable { failed } = st.tracks[t].state else {
                continue;
            };
            if matches!(
                self.decision(st, &key, t),
                Decision::Fits { .. } | Decision::Preempts(_)
            ) {
                st.set_track(t, TrackState::Ready { since: failed });
                moved = true;
            }
        }
        moved
    }

    /// `decide`, remembered per state and pod.
    fn decision(&mut self, st: &mut State, key: &[u32], t: usize) -> Decision {
        let slot = st.slot(st.tracks[t].key) as usize;
        if let Some(d) = self.memo.get(&(key.into(), slot)) {
            return d.clone();
        }
        self.cycles += 1;
        let d = st.decide(t);
        #[cfg(test)]
        if self.ending.is_none() {
            st.check_against_whatif(t, &d);
        }
        self.memo.insert((key.into(), slot), d.clone());
        d
    }

    /// Walks on from `st` along the most likely order, trying the others with up to `left`
    /// departures from it; `st` is back where it was afterwards.
    fn walk(&mut self, st: &mut State, mut left: u32) {
        let cp = st.checkpoint();
        loop {
            if !self.settle(st) {
                self.end(st);
                break;
            }
            if self.cycles >= self.budget || self.states >= MAX_STATES {
                self.exhausted = true;
                // The most likely order (the first pass) always runs to its end; any other
                // order stops here, unrecorded, or every branch left open would still run to
                // its end and the budget would bound nothing.
                if self.ending.is_some() {
                    self.pruned = true;
                    break;
                }
                left = 0;
            }
            let key = st.key();
            if self.visited.get(&key).is_some_and(|&l| l >= left) {
                break;
            }
            self.visited.insert(key.clone(), left);
            self.states += 1;
            let actions = enabled(st);
            let mut chosen = if st.phase > 0 {
                self.persistent(st, &actions)
            } else {
                vec![actions[0]]
            };
            if chosen.len() > 1 && left == 0 {
                self.pruned = true;
                chosen.truncate(1);
            }
            for &a in &chosen[1..] {
                let back = st.checkpoint();
                self.take(st, &key, a, left - 1);
                self.walk(st, left - 1);
                st.rollback(back);
            }
            self.take(st, &key, chosen[0], left);
        }
        st.rollback(cp);
    }

    fn take(&mut self, st: &mut State, key: &[u32], a: Action, left: u32) {
        match a {
            Action::Evict(l) => st.evict(l),
            Action::Gone(l) => st.gone(l),
            Action::Schedule(t) => {
                let d = self.decision(st, key, t);
                let choices = self.choices(st, t, &d);
                if choices.len() > 1 {
                    if left == 0 {
                        self.pruned = true;
                    } else {
                        for &c in &choices[1..] {
                            let back = st.checkpoint();
                            st.commit(t, &d, c);
                            self.walk(st, left - 1);
                            st.rollback(back);
                        }
                    }
                }
                st.commit(t, &d, choices[0]);
            }
        }
    }

    /// The tied nodes (or preemption candidates) worth trying, the one taken by default first.
    fn choices(&self, st: &State, t: usize, d: &Decision) -> Vec<usize> {
        let n = match d {
            Decision::Fits { selected, .. } => selected.len(),
            Decision::Preempts(candidates) => candidates.len(),
            _ => 1,
        };
        let key = st.tracks[t].key;
        let first = tie_pick(st.seed, key, n);
        if n == 1 || st.phase == 0 || self.dependence.alone(key) {
            return vec![first];
        }
        let mut out = vec![first];
        let step = n.div_ceil(TIE_CHOICES);
        out.extend((0..n).step_by(step.max(1)).filter(|&c| c != first));
        out.truncate(TIE_CHOICES);
        out
    }

    /// Notes where every pod ended in this end state.
    fn end(&mut self, st: &mut State) {
        let key = st.key();
        self.calls += 1;
        let mut safe = st.ends.iter().all(|e| *e == DrainEnd::Done)
            && st
                .starts
                .iter()
                .all(|s| s.refused.is_none() && s.waiting_on.is_none());
        let mut present: HashSet<Str> = HashSet::new();
        for l in &st.leavers {
            present.insert(l.key);
            let r = self.reach.entry(l.key).or_default();
            r.first
                .get_or_insert_with(|| (l.pod.clone(), l.origin.clone(), l.node));
            match (&l.state, &l.fate) {
                (LeaverState::Blocked(_), _) => {
                    safe = false;
                    r.nodes.insert(Some(l.node));
                    r.outcomes.insert(vec![Str::new("Blocked")]);
                }
                (_, Fate::Lost(_)) => {
                    safe = false;
                    r.outcomes.insert(vec![Str::new("Lost")]);
                }
                (_, Fate::Removed(_)) => {
                    r.outcomes.insert(vec![Str::new("Removed")]);
                }
                (_, Fate::Recreated) => {}
            }
        }
        for t in &st.tracks {
            present.insert(t.key);
            let r = self.reach.entry(t.key).or_default();
            match &t.state {
                TrackState::Bound(b) => {
                    // kube-scheduler may have taken any of the tied nodes.
                    r.nodes.extend(b.tied.iter().map(|&n| Some(n)));
                    r.outcomes.insert(b.tied.to_vec());
                }
                TrackState::NotPredicted(_) => {
                    safe = false;
                    r.outcomes.insert(vec![Str::new("NotPredicted")]);
                }
                _ => {
                    safe = false;
                    r.nodes.insert(None);
                    r.outcomes.insert(Vec::new());
                }
            }
        }
        for k in present {
            self.reach.get_mut(&k).expect("noted above").present += 1;
        }
        for k in known(&st.leavers, &st.tracks) {
            if self.known_keys.insert(k.key) {
                self.known.push(k);
            }
        }
        self.unsafe_somewhere |= !safe;
        self.ends.insert(key.clone());
        if self.ending.is_none() {
            let mut messages = HashMap::new();
            for t in 0..st.tracks.len() {
                if matches!(st.tracks[t].state, TrackState::Unschedulable { .. })
                    && let Decision::Unschedulable(m) = self.decision(st, &key, t)
                {
                    messages.insert(t, m);
                }
            }
            self.ending = Some(Ending {
                tracks: st.tracks.clone(),
                leavers: st.leavers.clone(),
                starts: st.starts.clone(),
                ends: st.ends.clone(),
                handled: st.handled.clone(),
                evicted: st.evicted.clone(),
                waits: st.waits.clone(),
                snapshot: st.snapshot.clone(),
                messages,
            });
        }
    }
}

impl Explored {
    /// Every pod the plan handled, in the order the most likely order handled them, with where it
    /// may end and why; then the pods only other orders move.
    pub fn pod_results(&self, st: &mut State) -> Vec<PodResult> {
        let e = &self.ending;
        let known = known(&e.leavers, &e.tracks);
        let dependence = Dependence::of(st, &known);
        let mut out = Vec::new();
        let mut listed: HashSet<Str> = HashSet::new();
        let mut handled = e.handled.clone();
        for t in 0..e.tracks.len() {
            if !e.tracks[t].tried {
                handled.push(Handled::Track(t));
            }
        }
        for h in handled {
            let (key, pod, origin, outcome) = match h {
                Handled::Track(t) => {
                    let track = &e.tracks[t];
                    let outcome = match &track.state {
                        TrackState::Bound(b) => Outcome::Scheduled {
                            node: b.node,
                            score: b.score,
                            tied: b.tied.to_vec(),
                            preempted: b.preempted.clone(),
                        },
                        TrackState::NotPredicted(reason) => Outcome::NotPredicted {
                            reason: reason.clone(),
                        },
                        _ => Outcome::Pending {
                            message: e.messages.get(&t).cloned().unwrap_or_else(|| {
                                "not created: the pod it replaces is not gone".to_string()
                            }),
                        },
                    };
                    (track.key, track.pod.clone(), track.origin.clone(), outcome)
                }
                Handled::Leaver(l) => {
                    let leaver = &e.leavers[l];
                    let outcome = match (&leaver.state, &leaver.fate) {
                        (LeaverState::Blocked(b), _) => Outcome::Blocked {
                            message: b.message.clone(),
                        },
                        (_, Fate::Lost(reason)) => Outcome::Lost {
                            reason: reason.clone(),
                        },
                        (_, Fate::Removed(reason)) => Outcome::Removed {
                            reason: reason.clone(),
                        },
                        (_, Fate::Recreated) => continue,
                    };
                    (
                        leaver.key,
                        leaver.pod.clone(),
                        leaver.origin.clone(),
                        outcome,
                    )
                }
            };
            // A pod refused in this order and replaced in another is one entry.
            if !listed.insert(key) {
                continue;
            }
            out.push(self.result(st, &dependence, &known, key, pod, origin, outcome));
        }
        let mut others: Vec<(&Str, &Reach)> = self
            .reach
            .iter()
            .filter(|(k, r)| !listed.contains(*k) && r.first.is_some())
            .collect();
        others.sort_by_key(|(k, _)| **k);
        for (&key, r) in others {
            let (pod, origin, node) = r.first.clone().expect("filtered");
            let outcome = Outcome::Stays { node };
            out.push(self.result(st, &dependence, &known, key, pod, origin, outcome));
        }
        out
    }

    /// A pod placed before any drain, the same way in every order: it does not race.
    fn settled(&self, key: Str) -> bool {
        self.reach
            .get(&key)
            .is_none_or(|r| r.first.is_none() && r.outcomes.len() == 1 && !r.nodes.contains(&None))
    }

    #[allow(clippy::too_many_arguments)]
    fn result(
        &self,
        st: &mut State,
        dependence: &Dependence,
        known: &[Known],
        key: Str,
        pod: Arc<Pod>,
        origin: Origin,
        outcome: Outcome,
    ) -> PodResult {
        let empty = Reach::default();
        let reach = self.reach.get(&key).unwrap_or(&empty);
        let mut nodes = reach.nodes.clone();
        let mut outcomes = reach.outcomes.clone();
        if reach.present < self.calls {
            // Some order never moves it: it stays where it runs.
            if let Some((_, _, home)) = &reach.first {
                nodes.insert(Some(*home));
                outcomes.insert(vec![Str::new("Stays")]);
            }
        }
        let order_dependent = outcomes.len() > 1;
        let mut possible: Vec<Option<Str>> =
            nodes.iter().copied().filter(Option::is_some).collect();
        if nodes.contains(&None) {
            possible.push(None);
        }
        let mut why = Vec::new();
        if order_dependent {
            why.extend(self.partners(st, dependence, known, key));
        }
        let e = &self.ending;
        for &(t, l) in &e.waits {
            if e.tracks[t].key == key && matches!(e.tracks[t].state, TrackState::Bound(_)) {
                why.push(format!(
                    "waited for {} to terminate",
                    e.leavers[l].pod.key()
                ));
            }
        }
        why.dedup();
        if let Outcome::Scheduled { tied, .. } = &outcome
            && tied.len() > 1
        {
            why.push(format!(
                "{} nodes tie for its best score: kube-scheduler picks one at random",
                tied.len()
            ));
        }
        if order_dependent && self.capped {
            why.push("not every order was explored".to_string());
        }
        PodResult {
            pod,
            origin,
            outcome,
            possible,
            order_dependent,
            why,
        }
    }

    /// What ties a pod's outcome to other pods': whom it competes with for which nodes, whose
    /// presence its constraints count, whose budget it shares.
    fn partners(
        &self,
        st: &mut State,
        dependence: &Dependence,
        known: &[Known],
        key: Str,
    ) -> Vec<String> {
        const SHOWN: usize = 3;
        let Some(me) = known.iter().find(|k| k.key == key) else {
            return Vec::new();
        };
        let cluster = st.snapshot.cluster.clone();
        let my_pdbs = st.pdbs_of(&me.pod);
        // Pods competing for the same nodes are named together.
        let mut competing: Vec<(Vec<usize>, Vec<String>)> = Vec::new();
        let mut other = Vec::new();
        for k in known {
            if k.key == key || dependence.between(key, k.key) == 0 || self.settled(k.key) {
                continue;
            }
            let name = k.pod.key();
            let mut nodes = st.capacity.contested(&st.snapshot, key, (k.key, &k.pod));
            nodes.extend(st.capacity.contested(&st.snapshot, k.key, (key, &me.pod)));
            nodes.sort_unstable();
            nodes.dedup();
            if !nodes.is_empty() {
                match competing.iter_mut().find(|(n, _)| *n == nodes) {
                    Some((_, names)) => names.push(name),
                    None => competing.push((nodes, vec![name])),
                }
                continue;
            }
            let lab = st
                .relations
                .labelled(&cluster, (key, &me.pod), (k.key, &k.pod));
            other.push(if lab.affinity {
                format!("pod (anti-)affinity ties it to {name}")
            } else if lab.a_counts_b {
                format!("its topology spread counts {name}")
            } else if lab.b_counts_a {
                format!("{name}'s topology spread counts it")
            } else if lab.shared {
                format!("shares a volume or device claim with {name}")
            } else if st.pdbs_of(&k.pod).iter().any(|p| my_pdbs.contains(p)) {
                format!("shares a PodDisruptionBudget with {name}")
            } else {
                continue;
            });
        }
        let node_names = |nodes: &[usize]| -> String {
            let names: Vec<&str> = nodes
                .iter()
                .take(SHOWN)
                .map(|&n| st.snapshot.nodes[n].name().as_str())
                .collect();
            let etc = if nodes.len() > SHOWN { ", …" } else { "" };
            format!("{}{etc}", names.join(", "))
        };
        let mut out: Vec<String> = competing
            .iter()
            .map(|(nodes, names)| {
                let more = names.len().saturating_sub(SHOWN);
                let mut who = names[..names.len().min(SHOWN)].join(", ");
                if more > 0 {
                    who.push_str(&format!(" and {more} more"));
                }
                format!("competes with {who} for {}", node_names(nodes))
            })
            .collect();
        let more = other.len().saturating_sub(SHOWN);
        out.extend(other.into_iter().take(SHOWN));
        if more > 0 {
            out.push(format!("and {more} more"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::snapshot::Snapshot;
    use crate::plugins::registry::default_framework;
    use crate::release::Release;
    use crate::testing::{cluster, node, pod};
    use serde_json::json;

    /// `count` ready pods of their own ReplicaSets on `n1`, each wanting the room of one of the
    /// `slots` one-cpu nodes: every order of their replacements ends differently.
    fn racing(count: usize, slots: usize) -> Vec<serde_json::Value> {
        let mut n1 = node("n1", "64", json!({}));
        n1["spec"] = json!({"unschedulable": true});
        let mut items = vec![n1];
        for s in 0..slots {
            items.push(node(&format!("s{s}"), "1", json!({})));
        }
        for i in 0..count {
            let mut p = pod(
                &format!("ns/p{i}"),
                Some("n1"),
                "1",
                0,
                json!({"app": format!("p{i}")}),
            );
            p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": format!("p{i}"), "uid": format!("p{i}"), "controller": true}]);
            p["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
            items.push(p);
        }
        items
    }

    fn search(items: Vec<serde_json::Value>, budget: usize) -> Explored {
        let fws = vec![default_framework(Release::OLDEST.into())];
        let snapshot = Snapshot::new(cluster(items), None);
        let budgets = super::super::queue::budgets(&snapshot.cluster);
        let mut st = State::new(&fws, snapshot, budgets);
        st.drain_nodes = vec![Str::new("n1")];
        explore_within(&mut st, Options::default(), budget)
    }

    #[test]
    fn the_search_stops_at_its_budget_once_the_most_likely_order_has_ended() {
        // Unbounded, three pods racing for two slots end in many ways.
        let full = search(racing(3, 2), MAX_CYCLES);
        assert!(!full.capped && full.end_states > 1, "{}", full.end_states);
        // The most likely order alone costs what a budget of one cycle runs: it always ends.
        let likely = search(racing(3, 2), 1);
        assert!(likely.capped);
        assert_eq!(likely.end_states, 1);
        // A budget between the two stops there: no branch left open runs on after it.
        let budget = likely.cycles + 4;
        let some = search(racing(3, 2), budget);
        assert!(some.capped, "{} of {}", some.cycles, full.cycles);
        assert!(
            some.cycles <= budget + 1,
            "{} cycles for a budget of {budget}",
            some.cycles
        );
        assert!(some.end_states < full.end_states);
        // What the bounded search says of the most likely order is what the full one says.
        let node_of = |e: &Explored| {
            e.ending
                .tracks
                .iter()
                .map(|t| (t.key, t.state.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(node_of(&some), node_of(&full));
    }
}
