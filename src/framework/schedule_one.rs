//! One scheduling cycle as `schedule_one.go` runs it: `schedulePod` (PreEnqueue, PreFilter,
//! `findNodesThatFitPod`, PostFilter when nothing fits), `prioritizeNodes` (PreScore, Score,
//! normalisation, weights, extenders) and `selectHost`. In `Mode::Explain` every filter runs on
//! every node, so the explanation can show all the reasons while recording where the real
//! scheduler would have stopped; `Mode::Decide` stops where it stops. A `CycleCache` passed in
//! lets a cycle reuse what earlier cycles of an identical pod found.

use super::cache::{CycleCache, FilterPlan, NodeEntry};
use super::cycle_state::CycleState;
use super::extender::{self, Feasible};
use super::facts::{Detail, Fact};
use super::fit_error;
use super::plugin::{Cx, PreFilterNodes};
use super::post_filter::PostFilterOutcome;
use super::runner::{Framework, Mode, NodeFilterResult, NodeScores, PreFilterResult};
use super::snapshot::Snapshot;
use super::status::{Code, NodeToStatus, Status};
use crate::dra::assumed::ClaimAllocation;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use rayon::prelude::*;
use std::collections::HashMap;

/// How `selectHost` picks among the nodes tied for the best score.
pub enum Ties {
    /// The first by name: repeatable.
    FirstByName,
    /// Uniformly at random, seeded: kube-scheduler picks uniformly among the tied nodes.
    Seeded(fastrand::Rng),
}

impl Ties {
    /// An index below `n` (`n` > 0).
    pub fn pick(&mut self, n: usize) -> usize {
        match self {
            Ties::FirstByName => 0,
            Ties::Seeded(rng) => rng.usize(..n),
        }
    }
}

#[derive(Clone, Debug)]
pub enum NodeOutcome {
    /// Never reached Filter: PreFilter rejected the pod or its result left this node out.
    Excluded,
    Filtered(NodeFilterResult),
}

#[derive(Debug)]
pub struct CycleResult {
    /// A PreEnqueue plugin held the pod back: nothing else ran.
    pub gated: Option<Status>,
    /// PreFilter's combined status (Success, or the rejection with its plugin).
    pub prefilter: Status,
    pub prefilter_nodes: PreFilterNodes,
    /// Per node (`Mode::Explain` only; empty in `Mode::Decide`).
    pub nodes: Vec<NodeOutcome>,
    pub excluded_status: Option<Status>,
    pub feasible: Vec<usize>,
    /// Per feasible node, same order as `feasible`.
    pub scores: Vec<NodeScores>,
    /// The nodes with the best total, by name.
    pub selected: Vec<usize>,
    /// The one of `selected` the cycle takes (`selectHost`).
    pub chosen: Option<usize>,
    /// Exactly one feasible node: the real scheduler does not score (`Mode::Decide` does not
    /// either).
    pub scoring_skipped: bool,
    /// `status.nominatedNodeName` passed the filters: the real scheduler takes it without looking further.
    pub nominated_fast_path: Option<usize>,
    pub message_before_post_filter: String,
    pub post_filter: Option<PostFilterOutcome>,
    pub message: String,
    /// A plugin failed with an error: the real scheduler would retry the pod.
    pub error: Option<Status>,
    /// How many feasible nodes the real scheduler looks for before it stops filtering.
    pub num_nodes_to_find: usize,
    /// What PreBind plugins would do on the first selected node (`Mode::Explain`).
    pub binding: Vec<String>,
    /// The requests made to extenders, in order (preemption's are in its outcome).
    pub extender_calls: Vec<extender::Call>,
    /// Feasible nodes scored as the Node object a non-nodeCacheCapable extender returned.
    pub scored_as_returned: Vec<usize>,
    /// Per node (by index), the devices Reserve would allocate to the pod's claims: every
    /// selected node in `Mode::Explain`, the chosen one in `Mode::Decide`.
    pub device_allocations: Vec<(usize, Vec<ClaimAllocation>)>,
    /// The cycle state at the end (`Mode::Explain`): what Score read, for the inputs behind
    /// the scores of the nodes an explanation shows (`Framework::score_inputs`).
    pub state: Option<CycleState>,
}

impl CycleResult {
    fn new(num_nodes_to_find: usize) -> CycleResult {
        CycleResult {
            gated: None,
            prefilter: Status::success(),
            prefilter_nodes: None,
            nodes: Vec::new(),
            excluded_status: None,
            feasible: Vec::new(),
            scores: Vec::new(),
            selected: Vec::new(),
            chosen: None,
            scoring_skipped: false,
            nominated_fast_path: None,
            message_before_post_filter: String::new(),
            post_filter: None,
            message: String::new(),
            error: None,
            num_nodes_to_find,
            binding: Vec::new(),
            extender_calls: Vec::new(),
            scored_as_returned: Vec::new(),
            device_allocations: Vec::new(),
            state: None,
        }
    }

    /// A plugin failed with an error: the cycle stops, nothing is feasible, and the event
    /// carries the error.
    fn fail(&mut self, error: Status) {
        self.feasible.clear();
        self.scores.clear();
        self.message = error.message();
        self.message_before_post_filter = self.message.clone();
        self.error = Some(error);
    }

    /// The devices Reserve would allocate on `node`.
    pub fn allocations_on(&self, node: usize) -> &[ClaimAllocation] {
        self.device_allocations
            .iter()
            .find(|(n, _)| *n == node)
            .map_or(&[], |(_, a)| a.as_slice())
    }

    /// The chosen node's total, unless the cycle did not score.
    pub fn chosen_score(&self) -> Option<i64> {
        let chosen = self.chosen?;
        if self.scoring_skipped {
            return None;
        }
        let p = self.feasible.iter().position(|&f| f == chosen)?;
        Some(self.scores[p].total)
    }
}

/// How one node fared in `findNodesThatFitPod`; small, since there is one per node per cycle.
enum Verdict {
    Fits,
    /// The first failure, unless it is the node's cached first node-local failure
    /// (`Mode::Decide` with a cache), which stays in the cache until it is needed.
    Fails(Option<Box<Status>>),
    /// Every filter's verdict (`Mode::Explain`).
    Explained(Box<NodeFilterResult>),
}

/// What `findNodesThatFitPod` found.
struct Found {
    feasible: Vec<usize>,
    /// Failing nodes, with their first failure where it is not in the cache.
    failed: Vec<(usize, Option<Status>)>,
    /// Per candidate node (`Mode::Explain`).
    outcomes: Vec<(usize, NodeFilterResult)>,
    error: Option<Status>,
}

impl Framework {
    /// The whole cycle for `pod` against `snapshot`, explained.
    pub fn schedule(&self, snapshot: &Snapshot, pod: &Pod) -> CycleResult {
        self.schedule_pod(snapshot, pod, Mode::Explain, &mut Ties::FirstByName, None)
    }

    /// The cycle as the real scheduler runs it, stopping at each node's first failing filter:
    /// enough to decide, not to explain every reason. Ties go to the first node by name.
    pub fn decide(&self, snapshot: &Snapshot, pod: &Pod) -> CycleResult {
        self.schedule_pod(snapshot, pod, Mode::Decide, &mut Ties::FirstByName, None)
    }

    /// `schedulePod`: one cycle for `pod`, reusing and updating `cache` when given (only for
    /// pods identical to those it saw, on this snapshot as it changes).
    pub fn schedule_pod(
        &self,
        snapshot: &Snapshot,
        pod: &Pod,
        mode: Mode,
        ties: &mut Ties,
        mut cache: Option<&mut CycleCache>,
    ) -> CycleResult {
        let cx = Cx {
            explain: mode == Mode::Explain,
            ..Cx::new(pod, snapshot)
        };
        let n = snapshot.num_nodes();
        let mut result = CycleResult::new(self.num_feasible_nodes_to_find(n));
        if let Some(gate) = self.run_pre_enqueue_plugins(&cx) {
            result.gated = Some(gate);
            return result;
        }
        if n == 0 {
            result.message = "no nodes available to schedule pods".into();
            result.message_before_post_filter = result.message.clone();
            return result;
        }
        let kept = cache.as_deref_mut().and_then(|c| c.take_pre_filtered(&cx));
        let (mut state, pre) = match kept {
            Some(kept) => kept,
            None => {
                if let Some(c) = cache.as_deref_mut() {
                    c.clear();
                }
                let mut state = CycleState::default();
                let pre = self.run_pre_filter_plugins(&cx, &mut state);
                (state, pre)
            }
        };
        if let Some(c) = cache.as_deref_mut() {
            c.refresh(snapshot);
        }
        self.schedule_after_pre_filter(
            &cx,
            &mut state,
            &pre,
            mode,
            ties,
            cache.as_deref_mut(),
            &mut result,
        );
        let keep = pre.status.is_success();
        match cache {
            Some(c) if keep => {
                if mode == Mode::Explain {
                    result.state = Some(state.clone());
                }
                c.keep_pre_filtered(&cx, state, pre);
            }
            _ if mode == Mode::Explain => result.state = Some(state),
            _ => {}
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn schedule_after_pre_filter(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pre: &PreFilterResult,
        mode: Mode,
        ties: &mut Ties,
        mut cache: Option<&mut CycleCache>,
        result: &mut CycleResult,
    ) {
        let snapshot = cx.snapshot;
        let n = snapshot.num_nodes();
        result.prefilter = pre.status.clone();
        result.prefilter_nodes = pre.nodes.clone();
        if mode == Mode::Explain {
            result.nodes = vec![NodeOutcome::Excluded; n];
        }
        if !pre.status.is_success() && !pre.status.is_rejected() {
            result.fail(pre.status.clone());
            return;
        }
        let mut statuses = NodeToStatus {
            by_node: HashMap::new(),
            absent: Status::success(),
        };
        if pre.status.is_rejected() {
            statuses.absent = pre.status.clone();
            result.excluded_status = Some(pre.status.clone());
            result.message_before_post_filter =
                fit_error::message(n, Some(&pre.status.message()), &statuses, n);
            self.finish_with_post_filter(cx, state, &statuses, result);
            return;
        }
        // Nodes the PreFilter result leaves out are UnschedulableAndUnresolvable without filtering.
        let candidates: Vec<usize> = match &pre.nodes {
            None => (0..n).collect(),
            Some(names) => {
                let mut sorted = pre.restricted_by.clone();
                sorted.sort();
                let excluded = Status::unresolvable(format!(
                    "node(s) didn't satisfy plugin(s) [{}]",
                    sorted.join(" ")
                ))
                .with_facts(vec![Fact::of(Detail::Restricted(sorted))]);
                statuses.absent = excluded.clone();
                result.excluded_status = Some(excluded);
                names
                    .iter()
                    .filter_map(|&name| snapshot.node_index(name))
                    .collect()
            }
        };
        let found =
            self.find_nodes_that_fit_pod(cx, state, &candidates, mode, cache.as_deref_mut());
        result.feasible = found.feasible;
        for (i, r) in found.outcomes {
            result.nodes[i] = NodeOutcome::Filtered(r);
        }
        if let Some(e) = found.error {
            result.fail(e);
            return;
        }
        let mut failed = found.failed;
        let mut feasible = match self.pass_extenders(cx, &mut statuses, result) {
            Ok(f) => f,
            Err(e) => {
                // The error is the whole FailedScheduling message: no FitError, no PostFilter.
                result.feasible.clear();
                result.message = e.message();
                result.message_before_post_filter = result.message.clone();
                result.error = Some(e);
                return;
            }
        };
        feasible.sort_by_key(|f| f.index);
        result.feasible = feasible.iter().map(|f| f.index).collect();
        result.scored_as_returned = feasible
            .iter()
            .filter(|f| f.fresh.is_some())
            .map(|f| f.index)
            .collect();
        if result.feasible.is_empty() {
            for (i, status) in failed.drain(..) {
                let status = status
                    .or_else(|| {
                        cache
                            .as_deref()
                            .and_then(|c| c.entry(i).first_local_status().cloned())
                    })
                    .expect("a failing node's status is known or cached");
                statuses.by_node.insert(snapshot.nodes[i].name(), status);
            }
            let explicit = statuses.by_node.len();
            result.message_before_post_filter = fit_error::message(n, None, &statuses, explicit);
            self.finish_with_post_filter(cx, state, &statuses, result);
            return;
        }
        result.scoring_skipped = result.feasible.len() == 1;
        if mode == Mode::Explain || !result.scoring_skipped {
            let calls = &mut result.extender_calls;
            match self.prioritize_nodes(cx, state, &feasible, mode, cache, calls) {
                Ok(scores) => result.scores = scores,
                Err(e) => {
                    result.fail(e);
                    return;
                }
            }
        }
        self.select_host(cx, state, mode, ties, result);
    }

    /// `findNodesThatFitPod`'s filtering: every candidate node through the Filter plugins (with
    /// nominated pods), on several threads when there are many.
    fn find_nodes_that_fit_pod(
        &self,
        cx: &Cx,
        state: &CycleState,
        candidates: &[usize],
        mode: Mode,
        cache: Option<&mut CycleCache>,
    ) -> Found {
        let snapshot = cx.snapshot;
        // A node with nominated pods is filtered twice, with and without them: never cached.
        let any_nominated = !snapshot.nominated.is_empty();
        let cold = |i: usize| any_nominated && self.has_nominated_pods(cx, &snapshot.nodes[i]);
        let cached = cache.map(|c| {
            let plan = c.filter_plan(self, state);
            let warm = candidates.iter().copied().filter(|&i| !cold(i));
            c.learn_local_verdicts(self, cx, state, mode, &plan, warm);
            (&*c, plan)
        });
        let judge = |&i: &usize| {
            let node = &snapshot.nodes[i];
            match &cached {
                Some((c, plan)) if !cold(i) => {
                    self.judge_with_cache(cx, state, node, mode, plan, c.entry(i))
                }
                _ => {
                    let r = self.run_filter_plugins_with_nominated_pods(cx, state, node, mode);
                    match mode {
                        Mode::Explain => Verdict::Explained(Box::new(r)),
                        Mode::Decide => match r.first {
                            Some(s) => Verdict::Fails(Some(Box::new(s))),
                            None => Verdict::Fits,
                        },
                    }
                }
            }
        };
        // With only cached node-local filters to consult, a node is a few reads: cheaper on
        // this thread than handed out.
        let cheap = cached.as_ref().is_some_and(|(_, p)| p.global.is_empty());
        let judged: Vec<Verdict> = if !cheap && self.parallel_over(candidates.len()) {
            candidates.par_iter().map(judge).collect()
        } else {
            candidates.iter().map(judge).collect()
        };
        let mut found = Found {
            feasible: Vec::with_capacity(candidates.len()),
            failed: Vec::new(),
            outcomes: Vec::new(),
            error: None,
        };
        for (&i, verdict) in candidates.iter().zip(judged) {
            let first = match verdict {
                Verdict::Fits => None,
                Verdict::Fails(s) => Some(s.map(|s| *s)),
                Verdict::Explained(r) => {
                    let first = r.first.clone().map(Some);
                    found.outcomes.push((i, *r));
                    first
                }
            };
            match first {
                None => found.feasible.push(i),
                Some(status) => {
                    if let Some(s) = &status
                        && s.code == Code::Error
                    {
                        found.error = Some(s.clone());
                    }
                    found.failed.push((i, status));
                }
            }
        }
        found.feasible.sort_unstable();
        found
    }

    /// A node's filter verdict from the cache's node-local verdicts and the other filters, as a
    /// cold `RunFilterPlugins` would give it.
    fn judge_with_cache(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
        mode: Mode,
        plan: &FilterPlan,
        entry: &NodeEntry,
    ) -> Verdict {
        match mode {
            Mode::Decide => {
                let local = entry.first_local();
                if plan.global.is_empty() {
                    return match local {
                        Some(_) => Verdict::Fails(None),
                        None => Verdict::Fits,
                    };
                }
                // Filters that are not node-local run in profile order up to the first failing
                // node-local one: where the real scheduler stops is the earlier of the two.
                let limit = local.unwrap_or(usize::MAX);
                let global = self
                    .run_filters_at(
                        cx,
                        state,
                        node,
                        mode,
                        plan.global.iter().copied().take_while(|&k| k < limit),
                    )
                    .into_iter()
                    .next();
                match (global, local) {
                    (Some((_, s)), _) => Verdict::Fails(Some(Box::new(s))),
                    (None, Some(_)) => Verdict::Fails(None),
                    (None, None) => Verdict::Fits,
                }
            }
            Mode::Explain => {
                let mut all = entry.all_local().to_vec();
                all.extend(self.run_filters_at(cx, state, node, mode, plan.global.iter().copied()));
                all.sort_by_key(|(k, _)| *k);
                Verdict::Explained(Box::new(NodeFilterResult::from_failures(all)))
            }
        }
    }

    /// `prioritizeNodes`: PreScore and Score on the feasible nodes (normalised, weighted), then
    /// the extenders' scores.
    fn prioritize_nodes(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        feasible: &[Feasible],
        mode: Mode,
        mut cache: Option<&mut CycleCache>,
        calls: &mut Vec<extender::Call>,
    ) -> Result<Vec<NodeScores>, Status> {
        let snapshot = cx.snapshot;
        let infos: Vec<&NodeInfo> = feasible.iter().map(|f| f.info(snapshot)).collect();
        self.run_pre_score_plugins(
            cx,
            state,
            &infos,
            cache
                .as_deref_mut()
                .map(|c| c.pre_score_current.as_mut_slice()),
        )?;
        let state = &*state;
        // A node an extender returned as a Node object is not the snapshot's: never cached.
        let mut cache = cache.filter(|_| feasible.iter().all(|f| f.fresh.is_none()));
        let indices: Vec<usize> = match cache {
            Some(_) => feasible.iter().map(|f| f.index).collect(),
            None => Vec::new(),
        };
        let mut scores = self.run_score_plugins(cx, state, &infos, mode, |k, pl| {
            cache
                .as_deref_mut()?
                .local_raw_scores(self, k, &indices, |i| {
                    pl.score(cx, state, &snapshot.nodes[i])
                })
        })?;
        let by_extenders = extender::prioritize(
            &self.extender_clients,
            cx.pod,
            &infos,
            feasible.len() == 1,
            calls,
        );
        for (scores, extra) in scores.iter_mut().zip(by_extenders) {
            for (name, score) in extra {
                scores.by_plugin.push((name, score));
                scores.total = scores.total.wrapping_add(score);
            }
        }
        Ok(scores)
    }

    /// `selectHost`: the nodes tied for the best total (or the nominated node kube-scheduler
    /// took without looking further), one of them taken; then what Reserve and PreBind would do.
    fn select_host(
        &self,
        cx: &Cx,
        state: &CycleState,
        mode: Mode,
        ties: &mut Ties,
        result: &mut CycleResult,
    ) {
        let snapshot = cx.snapshot;
        result.selected = match result.nominated_fast_path {
            Some(i) => vec![i],
            None if result.feasible.len() == 1 => result.feasible.clone(),
            None => {
                let best = result.scores.iter().map(|s| s.total).max().unwrap_or(0);
                result
                    .feasible
                    .iter()
                    .zip(&result.scores)
                    .filter(|(_, s)| s.total == best)
                    .map(|(&i, _)| i)
                    .collect()
            }
        };
        result.selected.sort_by_key(|&i| snapshot.nodes[i].name());
        let chosen = result.selected[ties.pick(result.selected.len())];
        result.chosen = Some(chosen);
        let reserved_on: &[usize] = match mode {
            Mode::Explain => &result.selected,
            Mode::Decide => std::slice::from_ref(&chosen),
        };
        for &node in reserved_on {
            let allocations = self.run_reserve_plugins(cx, state, &snapshot.nodes[node]);
            if !allocations.is_empty() {
                result.device_allocations.push((node, allocations));
            }
        }
        if mode == Mode::Explain {
            result.binding =
                self.run_pre_bind_plugins(cx, state, &snapshot.nodes[result.selected[0]]);
        }
    }

    /// What kube-scheduler does after the Filter plugins: the nominated node alone through the
    /// filter extenders (`evaluateNominatedNode`; if it passes, no other node is looked at),
    /// else every node that passed the plugins (`findNodesThatPassExtenders`). Nodes extenders
    /// reject get their status; an extender error that is not ignorable fails the cycle.
    fn pass_extenders(
        &self,
        cx: &Cx,
        statuses: &mut NodeToStatus,
        result: &mut CycleResult,
    ) -> Result<Vec<Feasible>, Status> {
        let snapshot = cx.snapshot;
        let nominated = cx
            .pod
            .nominated_node_name
            .and_then(|name| snapshot.node_index(name))
            .filter(|i| result.feasible.contains(i));
        if self.extender_clients.is_empty() {
            // Nothing filters after the plugins: the nominated node passes alone, if it is one.
            if let Some(i) = nominated {
                result.nominated_fast_path = Some(i);
                return Ok(vec![Feasible::of(i)]);
            }
            return Ok(result.feasible.iter().copied().map(Feasible::of).collect());
        }
        let mut pass = |nodes: Vec<Feasible>, result: &mut CycleResult| {
            let passed = extender::find_nodes_that_pass(
                &self.extender_clients,
                cx.pod,
                snapshot,
                nodes,
                statuses,
                &mut result.extender_calls,
            );
            // Where each node stopped, also when a later extender failed.
            let rejected = passed
                .rejected
                .into_iter()
                .filter_map(|(name, s)| snapshot.node_index(name).map(|i| (i, s)));
            let dropped = passed
                .dropped
                .into_iter()
                .map(|(i, extender)| (i, extender::dropped_status(extender)));
            for (i, status) in rejected.chain(dropped) {
                if let Some(NodeOutcome::Filtered(f)) = result.nodes.get_mut(i)
                    && f.first.is_none()
                {
                    f.first = Some(status);
                }
            }
            match passed.error {
                Some(e) => Err(e),
                None => Ok(passed.feasible),
            }
        };
        if let Some(nominated) = nominated {
            // Upstream only logs an error on this pass, then evaluates every node.
            if let Ok(passed) = pass(vec![Feasible::of(nominated)], result)
                && !passed.is_empty()
            {
                result.nominated_fast_path = Some(nominated);
                return Ok(passed);
            }
        }
        let nodes = result.feasible.iter().copied().map(Feasible::of).collect();
        pass(nodes, result)
    }

    fn finish_with_post_filter(
        &self,
        cx: &Cx,
        state: &CycleState,
        statuses: &NodeToStatus,
        result: &mut CycleResult,
    ) {
        if self.post_filter.is_empty() {
            result.message = result.message_before_post_filter.clone();
            return;
        }
        let out = self.run_post_filter_plugins(cx, state, statuses);
        let msg = out.status.message();
        result.message = if msg.is_empty() {
            result.message_before_post_filter.clone()
        } else {
            format!("{} {msg}", result.message_before_post_filter)
        };
        result.post_filter = Some(out);
    }
}
