//! One scheduling cycle as `schedule_one.go` and `frameworkImpl` run it — PreEnqueue, PreFilter,
//! Filter (with nominated pods), PostFilter, PreScore, Score, NormalizeScore, weights — except that
//! every filter runs on every node, so the explanation can show all the reasons while still
//! recording where the real scheduler would have stopped.

use super::cycle_state::CycleState;
use super::extender::{self, Extender, ExtenderConfig, Feasible};
use super::fit_error;
use super::plugin::{Cx, Plugin, PostFilterOutcome, PreFilterNodes};
use super::snapshot::Snapshot;
use super::status::{Code, Status};
use crate::model::intern::Str;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use crate::plugins::dynamic_resources::ClaimAllocation;
use crate::plugins::feature::Features;
use crate::release::ReleaseChoice;
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

pub const MAX_NODE_SCORE: i64 = 100;
/// `minFeasibleNodesToFind` and `minFeasibleNodesPercentageToFind` of schedule_one.go.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;

/// How much of the filtering to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every filter on every node, for the explanation.
    Explain,
    /// Stop at each node's first failing filter, as kube-scheduler does.
    Decide,
}

/// A profile, instantiated: plugins per extension point in the order they run.
pub struct Framework {
    /// The `schedulerName` this profile serves.
    pub profile: String,
    /// The kube-scheduler release this framework behaves as, and why that one.
    pub release: ReleaseChoice,
    pub features: Features,
    pub plugins: Vec<Arc<dyn Plugin>>,
    pub pre_enqueue: Vec<usize>,
    pub pre_filter: Vec<usize>,
    pub filter: Vec<usize>,
    pub post_filter: Vec<usize>,
    pub pre_score: Vec<usize>,
    /// Score plugins with their weights.
    pub score: Vec<(usize, i64)>,
    pub reserve: Vec<usize>,
    pub pre_bind: Vec<usize>,
    /// The profile's (or else the global) `percentageOfNodesToScore`; `None` is adaptive.
    pub percentage_of_nodes_to_score: Option<i32>,
    /// Filter and score nodes on several threads (results are identical either way).
    pub parallel: bool,
    /// The configuration's scheduler extenders, in the order kube-scheduler calls them.
    pub extenders: Vec<ExtenderConfig>,
    /// Their clients, in the same order, when the user lets them be called (`--call-extenders`);
    /// without them the cycle runs as if no extender were configured.
    pub extender_clients: Vec<Arc<dyn Extender>>,
}

/// `NodeToStatus`: the status of every node that failed, plus the one of nodes never filtered.
#[derive(Clone, Debug)]
pub struct NodeToStatus {
    pub by_node: HashMap<Str, Status>,
    /// Status of nodes absent from `by_node`.
    pub absent: Status,
}

impl NodeToStatus {
    pub fn get(&self, node: Str) -> &Status {
        self.by_node.get(&node).unwrap_or(&self.absent)
    }
}

/// Filter results of one node.
#[derive(Clone, Debug)]
pub struct NodeFilterResult {
    /// Where the real scheduler stopped (None: the node passes).
    pub first: Option<Status>,
    /// Every failing filter, each judged on its own.
    pub all: Vec<Status>,
}

#[derive(Clone, Debug)]
pub enum NodeOutcome {
    /// Never reached Filter: PreFilter rejected the pod or its result left this node out.
    Excluded,
    Filtered(NodeFilterResult),
}

#[derive(Clone, Debug, Default)]
pub struct NodeScores {
    /// (plugin, normalised and weighted score), in profile order.
    pub by_plugin: Vec<(&'static str, i64)>,
    pub total: i64,
}

#[derive(Debug)]
pub struct CycleResult {
    /// A PreEnqueue plugin held the pod back: nothing else ran.
    pub gated: Option<Status>,
    /// PreFilter's combined status (Success, or the rejection with its plugin).
    pub prefilter: Status,
    pub prefilter_nodes: PreFilterNodes,
    pub nodes: Vec<NodeOutcome>,
    pub excluded_status: Option<Status>,
    pub feasible: Vec<usize>,
    /// Per feasible node, same order as `feasible`.
    pub scores: Vec<NodeScores>,
    pub selected: Vec<usize>,
    /// Exactly one feasible node: the real scheduler does not score.
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
    /// What Reserve/PreBind plugins would do on the first selected node.
    pub binding: Vec<String>,
    /// The requests made to extenders, in order (preemption's are in its outcome).
    pub extender_calls: Vec<extender::Call>,
    /// Feasible nodes scored as the Node object a non-nodeCacheCapable extender returned.
    pub scored_as_returned: Vec<usize>,
    /// Per selected node (by index), the devices Reserve would allocate to the pod's claims.
    pub device_allocations: Vec<(usize, Vec<ClaimAllocation>)>,
}

impl CycleResult {
    /// A plugin failed with an error: the cycle stops, nothing is feasible, and the event
    /// carries the error.
    fn fail(&mut self, error: Status) {
        self.feasible.clear();
        self.scores.clear();
        self.message = error.message();
        self.message_before_post_filter = self.message.clone();
        self.error = Some(error);
    }
}

fn rejected_reasons_status(plugin: &'static str, s: Status) -> Status {
    if s.is_success() || s.is_rejected() {
        s.with_plugin(plugin)
    } else {
        Status::error(format!("running {plugin:?} filter plugin: {}", s.message()))
            .with_plugin(plugin)
    }
}

impl Framework {
    pub fn plugin(&self, idx: usize) -> &dyn Plugin {
        self.plugins[idx].as_ref()
    }

    pub fn has_plugin(&self, name: &str) -> bool {
        self.plugins.iter().any(|p| p.name() == name)
    }

    pub fn filter_plugin_names(&self) -> Vec<&'static str> {
        self.filter
            .iter()
            .map(|&i| self.plugins[i].name())
            .collect()
    }

    /// `RunPreFilterPlugins`: the combined status and the node set the plugins allow.
    pub fn run_pre_filter(
        &self,
        cx: &Cx,
        state: &mut CycleState,
    ) -> (Status, PreFilterNodes, Vec<&'static str>) {
        let mut result: PreFilterNodes = None;
        let mut plugins_with_nodes: Vec<&'static str> = Vec::new();
        let mut return_status = Status::success();
        for &i in &self.pre_filter {
            let pl = self.plugin(i);
            let (s, nodes) = pl.pre_filter(cx, state);
            if s.is_skip() {
                state.skip_filter.push(pl.name());
                continue;
            }
            if !s.is_success() {
                let s = s.with_plugin(pl.name());
                match s.code {
                    Code::UnschedulableAndUnresolvable => return (s, None, plugins_with_nodes),
                    Code::Unschedulable => {
                        return_status = s;
                        continue;
                    }
                    _ => {
                        let msg =
                            format!("running PreFilter plugin {:?}: {}", pl.name(), s.message());
                        return (
                            Status::error(msg).with_plugin(pl.name()),
                            None,
                            plugins_with_nodes,
                        );
                    }
                }
            }
            if let Some(nodes) = nodes {
                plugins_with_nodes.push(pl.name());
                result = Some(match result {
                    None => nodes,
                    Some(prev) => prev.intersection(&nodes).copied().collect(),
                });
                if result.as_ref().is_some_and(BTreeSet::is_empty) {
                    let mut sorted = plugins_with_nodes.clone();
                    sorted.sort();
                    let msg = if sorted.len() == 1 {
                        format!("node(s) didn't satisfy plugin {}", sorted[0])
                    } else {
                        format!(
                            "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                            sorted.join(" ")
                        )
                    };
                    return (Status::unresolvable(msg), result, plugins_with_nodes);
                }
            }
        }
        (return_status, result, plugins_with_nodes)
    }

    /// Runs the filters on the node, every one in `Mode::Explain`. Returns (first failure, every
    /// failure found).
    fn run_filters_all(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
        mode: Mode,
    ) -> (Option<Status>, Vec<Status>) {
        let mut first = None;
        let mut all = Vec::new();
        for &i in &self.filter {
            if mode == Mode::Decide && first.is_some() {
                break;
            }
            let pl = self.plugin(i);
            if state.skips_filter(pl.name()) {
                continue;
            }
            let s = pl.filter(cx, state, node);
            if s.is_success() {
                continue;
            }
            let s = rejected_reasons_status(pl.name(), s);
            if first.is_none() {
                first = Some(s.clone());
            }
            all.push(s);
        }
        (first, all)
    }

    /// `RunFilterPlugins`: stops at the first failure, as upstream.
    pub fn run_filters(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        for &i in &self.filter {
            let pl = self.plugin(i);
            if state.skips_filter(pl.name()) {
                continue;
            }
            let s = pl.filter(cx, state, node);
            if !s.is_success() {
                return rejected_reasons_status(pl.name(), s);
            }
        }
        Status::success()
    }

    /// `RunPreFilterExtensionAddPod`.
    pub fn run_add_pod(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pod: &Arc<Pod>,
        node: &NodeInfo,
    ) -> Status {
        self.run_extension(state, "AddPod", |pl, st| pl.add_pod(cx, st, pod, node))
    }

    /// `RunPreFilterExtensionRemovePod`.
    pub fn run_remove_pod(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pod: &Pod,
        node: &NodeInfo,
    ) -> Status {
        self.run_extension(state, "RemovePod", |pl, st| {
            pl.remove_pod(cx, st, pod, node)
        })
    }

    /// Runs a PreFilterExtensions method on every PreFilter plugin that has them and ran.
    fn run_extension(
        &self,
        state: &mut CycleState,
        what: &str,
        mut call: impl FnMut(&dyn Plugin, &mut CycleState) -> Status,
    ) -> Status {
        for &i in &self.pre_filter {
            let pl = self.plugin(i);
            if state.skips_filter(pl.name()) || !pl.has_pre_filter_extensions() {
                continue;
            }
            let s = call(pl, state);
            if !s.is_success() {
                return Status::error(format!(
                    "running {what} on PreFilter plugin {:?}: {}",
                    pl.name(),
                    s.message()
                ));
            }
        }
        Status::success()
    }

    /// `addGENominatedPods`: a copy of state and node with the nominated pods of equal or higher
    /// priority added, or `None` when there are none.
    pub fn with_nominated_pods(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
    ) -> Result<Option<(CycleState, NodeInfo)>, Status> {
        let mut added: Option<(CycleState, NodeInfo)> = None;
        for p in cx.snapshot.nominated_on(node.name(), cx.pod) {
            if p.priority < cx.pod.priority {
                continue;
            }
            let (st, ni) = added.get_or_insert_with(|| (state.clone(), node.clone()));
            ni.add_pod(p.clone());
            let s = self.run_add_pod(cx, st, p, ni);
            if !s.is_success() {
                return Err(s);
            }
        }
        Ok(added)
    }

    /// `RunFilterPluginsWithNominatedPods`, reporting every failing filter as well.
    fn filter_node(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
        mode: Mode,
    ) -> NodeFilterResult {
        let with_nominated = match self.with_nominated_pods(cx, state, node) {
            Ok(w) => w,
            Err(e) => {
                return NodeFilterResult {
                    first: Some(e.clone()),
                    all: vec![e],
                };
            }
        };
        let Some((state1, node1)) = with_nominated else {
            let (first, all) = self.run_filters_all(cx, state, node, mode);
            return NodeFilterResult { first, all };
        };
        // First pass with the nominated pods assumed running, second without; a filter fails if
        // it fails in either, and the real scheduler reports the first pass's failure if any.
        let (first1, all1) = self.run_filters_all(cx, &state1, &node1, mode);
        if mode == Mode::Decide && first1.is_some() {
            return NodeFilterResult {
                first: first1,
                all: all1,
            };
        }
        let (first2, all2) = self.run_filters_all(cx, state, node, mode);
        let mut all = all1;
        for s in all2 {
            if !all.iter().any(|a| a.plugin == s.plugin) {
                all.push(s);
            }
        }
        let order = |s: &Status| {
            self.filter
                .iter()
                .position(|&i| self.plugins[i].name() == s.plugin)
        };
        all.sort_by_key(order);
        NodeFilterResult {
            first: first1.or(first2),
            all,
        }
    }

    /// `numFeasibleNodesToFind`.
    pub fn num_feasible_nodes_to_find(&self, num_all_nodes: usize) -> usize {
        if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
            return num_all_nodes;
        }
        let mut percentage = i64::from(self.percentage_of_nodes_to_score.unwrap_or(0));
        if percentage == 0 {
            percentage =
                (50 - num_all_nodes as i64 / 125).max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
        }
        let n = (num_all_nodes as i64 * percentage / 100) as usize;
        n.max(MIN_FEASIBLE_NODES_TO_FIND)
    }

    /// Runs PreScore and Score on the feasible nodes: normalised, weighted scores per node.
    pub fn score_nodes(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        feasible: &[&NodeInfo],
    ) -> Result<Vec<NodeScores>, Status> {
        for &i in &self.pre_score {
            let pl = self.plugin(i);
            let s = pl.pre_score(cx, state, feasible);
            if s.is_skip() {
                state.skip_score.push(pl.name());
            } else if !s.is_success() {
                return Err(Status::error(format!(
                    "running PreScore plugin {:?}: {}",
                    pl.name(),
                    s.message()
                )));
            }
        }
        let state = &*state;
        let active: Vec<(usize, i64)> = self
            .score
            .iter()
            .copied()
            .filter(|&(i, _)| !state.skips_score(self.plugins[i].name()))
            .collect();
        let score_one = |node: &&NodeInfo| -> Result<Vec<i64>, Status> {
            active
                .iter()
                .map(|&(i, _)| {
                    let pl = self.plugin(i);
                    pl.score(cx, state, node).map_err(|e| {
                        Status::error(format!(
                            "plugin {:?} failed with: {}",
                            pl.name(),
                            e.message()
                        ))
                    })
                })
                .collect()
        };
        let raw: Vec<Vec<i64>> = if self.parallel && feasible.len() > 64 {
            feasible
                .par_iter()
                .map(score_one)
                .collect::<Result<_, _>>()?
        } else {
            feasible.iter().map(score_one).collect::<Result<_, _>>()?
        };
        let mut per_plugin: Vec<Vec<i64>> = (0..active.len())
            .map(|p| raw.iter().map(|r| r[p]).collect())
            .collect();
        for (p, &(i, _)) in active.iter().enumerate() {
            let pl = self.plugin(i);
            if pl.has_score_extensions() {
                let s = pl.normalize_score(cx, state, &mut per_plugin[p]);
                if !s.is_success() {
                    return Err(Status::error(format!(
                        "plugin {:?} failed with: {}",
                        pl.name(),
                        s.message()
                    )));
                }
            }
        }
        let mut out = Vec::with_capacity(feasible.len());
        for n in 0..feasible.len() {
            let mut scores = NodeScores::default();
            for (plugin_scores, &(i, weight)) in per_plugin.iter().zip(&active) {
                let score = plugin_scores[n];
                let name = self.plugins[i].name();
                if !(0..=MAX_NODE_SCORE).contains(&score) {
                    return Err(Status::error(format!(
                        "plugin {name:?} returns an invalid score {score}, it should in the range of [0, {MAX_NODE_SCORE}] after normalizing"
                    )));
                }
                scores.by_plugin.push((name, score * weight));
                scores.total += score * weight;
            }
            out.push(scores);
        }
        Ok(out)
    }

    /// `RunPostFilterPlugins`.
    pub fn run_post_filter(
        &self,
        cx: &Cx,
        state: &CycleState,
        statuses: &NodeToStatus,
    ) -> PostFilterOutcome {
        let mut reasons = Vec::new();
        let mut rejector: &'static str = "";
        let mut preemption = None;
        for &i in &self.post_filter {
            let pl = self.plugin(i);
            let out = pl.post_filter(self, cx, state, statuses);
            let s = out.status;
            if out.preemption.is_some() {
                preemption = out.preemption;
            }
            if s.is_success() {
                return PostFilterOutcome {
                    status: s.with_plugin(pl.name()),
                    preemption,
                };
            }
            if s.code == Code::UnschedulableAndUnresolvable {
                return PostFilterOutcome {
                    status: s.with_plugin(pl.name()),
                    preemption,
                };
            }
            if !s.is_rejected() {
                return PostFilterOutcome {
                    status: Status::with_reasons(Code::Error, s.reasons).with_plugin(pl.name()),
                    preemption,
                };
            }
            reasons.extend(s.reasons);
            if rejector.is_empty() {
                rejector = pl.name();
            }
        }
        PostFilterOutcome {
            status: Status::with_reasons(Code::Unschedulable, reasons).with_plugin(rejector),
            preemption,
        }
    }

    /// The whole cycle for `pod` against `snapshot`.
    pub fn schedule(&self, snapshot: &Snapshot, pod: &Pod) -> CycleResult {
        self.run_cycle(snapshot, pod, Mode::Explain)
    }

    /// The cycle as the real scheduler runs it, stopping at each node's first failing filter:
    /// enough to decide, not to explain every reason.
    pub fn decide(&self, snapshot: &Snapshot, pod: &Pod) -> CycleResult {
        self.run_cycle(snapshot, pod, Mode::Decide)
    }

    fn run_cycle(&self, snapshot: &Snapshot, pod: &Pod, mode: Mode) -> CycleResult {
        let cx = Cx { pod, snapshot };
        let n = snapshot.num_nodes();
        let mut result = CycleResult {
            gated: None,
            prefilter: Status::success(),
            prefilter_nodes: None,
            nodes: vec![NodeOutcome::Excluded; n],
            excluded_status: None,
            feasible: Vec::new(),
            scores: Vec::new(),
            selected: Vec::new(),
            scoring_skipped: false,
            nominated_fast_path: None,
            message_before_post_filter: String::new(),
            post_filter: None,
            message: String::new(),
            error: None,
            num_nodes_to_find: self.num_feasible_nodes_to_find(n),
            binding: Vec::new(),
            extender_calls: Vec::new(),
            scored_as_returned: Vec::new(),
            device_allocations: Vec::new(),
        };
        for &i in &self.pre_enqueue {
            let s = self.plugin(i).pre_enqueue(&cx);
            if !s.is_success() {
                result.gated = Some(s.with_plugin(self.plugin(i).name()));
                return result;
            }
        }
        if n == 0 {
            result.message = "no nodes available to schedule pods".into();
            result.message_before_post_filter = result.message.clone();
            return result;
        }
        let mut state = CycleState::default();
        let (pre_status, pre_nodes, plugins_with_nodes) = self.run_pre_filter(&cx, &mut state);
        result.prefilter = pre_status.clone();
        result.prefilter_nodes = pre_nodes.clone();
        if !pre_status.is_success() && !pre_status.is_rejected() {
            result.fail(pre_status);
            return result;
        }
        let mut statuses = NodeToStatus {
            by_node: HashMap::new(),
            absent: Status::success(),
        };
        if pre_status.is_rejected() {
            statuses.absent = pre_status.clone();
            result.excluded_status = Some(pre_status.clone());
            result.message_before_post_filter =
                fit_error::message(n, Some(&pre_status.message()), &statuses, n);
            self.finish_with_post_filter(&cx, &state, &statuses, &mut result);
            return result;
        }
        // Nodes the PreFilter result leaves out are UnschedulableAndUnresolvable without filtering.
        let candidates: Vec<usize> = match &pre_nodes {
            None => (0..n).collect(),
            Some(names) => {
                let mut sorted = plugins_with_nodes.clone();
                sorted.sort();
                let excluded = Status::unresolvable(format!(
                    "node(s) didn't satisfy plugin(s) [{}]",
                    sorted.join(" ")
                ));
                statuses.absent = excluded.clone();
                result.excluded_status = Some(excluded);
                names
                    .iter()
                    .filter_map(|&name| snapshot.node_index(name))
                    .collect()
            }
        };
        let filter_one = |&i: &usize| (i, self.filter_node(&cx, &state, &snapshot.nodes[i], mode));
        let filtered: Vec<(usize, NodeFilterResult)> = if self.parallel && candidates.len() > 64 {
            candidates.par_iter().map(filter_one).collect()
        } else {
            candidates.iter().map(filter_one).collect()
        };
        for (i, r) in filtered {
            if let Some(first) = &r.first {
                if first.code == Code::Error {
                    result.error = Some(first.clone());
                }
                statuses
                    .by_node
                    .insert(snapshot.nodes[i].name(), first.clone());
            } else {
                result.feasible.push(i);
            }
            result.nodes[i] = NodeOutcome::Filtered(r);
        }
        result.feasible.sort_unstable();
        if let Some(e) = result.error.take() {
            result.fail(e);
            return result;
        }
        let mut feasible = match self.pass_extenders(&cx, &mut statuses, &mut result) {
            Ok(f) => f,
            Err(e) => {
                // The error is the whole FailedScheduling message: no FitError, no PostFilter.
                result.feasible.clear();
                result.message = e.message();
                result.message_before_post_filter = result.message.clone();
                result.error = Some(e);
                return result;
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
            let explicit = statuses.by_node.len();
            result.message_before_post_filter = fit_error::message(n, None, &statuses, explicit);
            self.finish_with_post_filter(&cx, &state, &statuses, &mut result);
            return result;
        }
        result.scoring_skipped = result.feasible.len() == 1;
        let feasible_infos: Vec<&NodeInfo> = feasible.iter().map(|f| f.info(snapshot)).collect();
        match self.score_nodes(&cx, &mut state, &feasible_infos) {
            Ok(scores) => result.scores = scores,
            Err(e) => {
                result.fail(e);
                return result;
            }
        }
        let by_extenders = extender::prioritize(
            &self.extender_clients,
            pod,
            &feasible_infos,
            result.scoring_skipped,
            &mut result.extender_calls,
        );
        for (scores, extra) in result.scores.iter_mut().zip(by_extenders) {
            for (name, score) in extra {
                scores.by_plugin.push((name, score));
                scores.total = scores.total.wrapping_add(score);
            }
        }
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
        for &node in &result.selected {
            let allocations: Vec<ClaimAllocation> = self
                .reserve
                .iter()
                .flat_map(|&i| {
                    self.plugin(i)
                        .reserve_allocations(&cx, &state, &snapshot.nodes[node])
                })
                .collect();
            if !allocations.is_empty() {
                result.device_allocations.push((node, allocations));
            }
        }
        if let Some(&first) = result.selected.first() {
            for &i in &self.pre_bind {
                result.binding.extend(self.plugin(i).describe_binding(
                    &cx,
                    &state,
                    &snapshot.nodes[first],
                ));
            }
        }
        result
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
                if let NodeOutcome::Filtered(f) = &mut result.nodes[i]
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
        if let Some(nominated) = cx
            .pod
            .nominated_node_name
            .and_then(|name| snapshot.node_index(name))
            .filter(|i| result.feasible.contains(i))
        {
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
        let out = self.run_post_filter(cx, state, statuses);
        let msg = out.status.message();
        result.message = if msg.is_empty() {
            result.message_before_post_filter.clone()
        } else {
            format!("{} {msg}", result.message_before_post_filter)
        };
        result.post_filter = Some(out);
    }
}

#[cfg(test)]
mod tests {
    use crate::explain;
    use crate::framework::profile::default_framework;
    use crate::framework::snapshot::Snapshot;
    use crate::release::Release;
    use crate::testing::{cluster, node, pod};
    use serde_json::json;

    /// Filtering and scoring on several threads decide exactly as on one, on a cluster large
    /// enough for the parallel paths to run.
    #[test]
    fn parallel_and_serial_explanations_are_identical() {
        let mut items = Vec::new();
        for i in 0..400 {
            let name = format!("n{i}");
            items.push(node(
                &name,
                ["2", "4", "8"][i % 3],
                json!({"zone": format!("z{}", i % 5)}),
            ));
            for j in 0..(i % 4) {
                items.push(pod(
                    &format!("ns/p{i}-{j}"),
                    Some(&name),
                    "500m",
                    (j * 10) as i32,
                    json!({"app": format!("a{}", j % 2)}),
                ));
            }
        }
        let c = cluster(items);
        let mut p = pod("ns/new", None, "3", 100, json!({"app": "a1"}));
        p["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "a1"}}}]);
        p["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "a1"}}}]}});
        let pod = crate::model::cluster::convert_pod(serde_json::from_value(p).unwrap())
            .unwrap()
            .into_pod();
        let snapshot = Snapshot::new(c, None);
        let mut fw = default_framework(Release::OLDEST.into());
        let run = |fw: &super::Framework| {
            serde_json::to_value(explain::build(
                fw,
                &snapshot,
                &pod,
                &fw.schedule(&snapshot, &pod),
            ))
            .unwrap()
        };
        let parallel = run(&fw);
        fw.parallel = false;
        assert_eq!(parallel, run(&fw));
        assert!(!parallel["selected"].as_array().unwrap().is_empty());
    }
}
