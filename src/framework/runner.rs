//! `frameworkImpl`: a profile's plugins per extension point, and the one `Run…Plugins` of each
//! point. `schedule_one` drives them through a scheduling cycle; preemption, replica sequences
//! and plans call them through it or directly, never around them.

use super::MAX_NODE_SCORE;
use super::cycle_state::CycleState;
use super::extender::Extender;
use super::facts::ScoreInput;
use super::plugin::{Cx, Plugin, PreFilterNodes};
use super::post_filter::PostFilterOutcome;
use super::status::{Code, NodeToStatus, Status};
use crate::config::extender::ExtenderConfig;
use crate::dra::assumed::ClaimAllocation;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use crate::release::Features;
use crate::release::ReleaseChoice;
use rayon::prelude::*;
use std::sync::Arc;

/// `minFeasibleNodesToFind` and `minFeasibleNodesPercentageToFind` of schedule_one.go.
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: i64 = 5;
/// Below this many nodes, handing work to other threads costs more than it saves.
pub(super) const PARALLEL_MIN_NODES: usize = 64;

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

/// What PreFilter decided (`RunPreFilterPlugins`).
#[derive(Clone, Debug)]
pub struct PreFilterResult {
    /// Success, or the rejection (or error) with its plugin.
    pub status: Status,
    /// The nodes the plugins allow; `None` is every node.
    pub nodes: PreFilterNodes,
    /// The plugins that restricted the nodes, in the order they ran.
    pub restricted_by: Vec<&'static str>,
}

/// Filter results of one node.
#[derive(Clone, Debug)]
pub struct NodeFilterResult {
    /// Where the real scheduler stopped (None: the node passes).
    pub first: Option<Status>,
    /// Every failing filter, each judged on its own (`Mode::Decide`: only the first).
    pub all: Vec<Status>,
}

impl NodeFilterResult {
    fn failed(status: Status) -> NodeFilterResult {
        NodeFilterResult {
            first: Some(status.clone()),
            all: vec![status],
        }
    }

    /// From failures in profile order.
    pub(super) fn from_failures(failures: Vec<(usize, Status)>) -> NodeFilterResult {
        NodeFilterResult {
            first: failures.first().map(|(_, s)| s.clone()),
            all: failures.into_iter().map(|(_, s)| s).collect(),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct NodeScores {
    /// (plugin, normalised and weighted score), in profile order; empty in `Mode::Decide`, which
    /// needs only the total.
    pub by_plugin: Vec<(&'static str, i64)>,
    pub total: i64,
}

/// A filter's status as the framework reports it: its plugin set, an error worded as upstream.
fn filter_status(plugin: &'static str, s: Status) -> Status {
    if s.is_success() || s.is_rejected() {
        s.with_plugin(plugin)
    } else {
        Status::error(format!("running {plugin:?} filter plugin: {}", s.message()))
            .with_plugin(plugin)
    }
}

fn score_error(plugin: &'static str, s: &Status) -> Status {
    Status::error(format!("plugin {plugin:?} failed with: {}", s.message()))
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

    /// Whether replicas of the pod interact beyond their nodes (`Plugin::replicas_interact`).
    pub fn replicas_interact(&self, cx: &Cx) -> bool {
        self.plugins.iter().any(|p| p.replicas_interact(cx))
    }

    /// The Filter plugin at `position` (profile order).
    pub(super) fn filter_plugin(&self, position: usize) -> &dyn Plugin {
        self.plugin(self.filter[position])
    }

    /// The Score plugin at `position` (profile order).
    pub(super) fn score_plugin(&self, position: usize) -> &dyn Plugin {
        self.plugin(self.score[position].0)
    }

    /// Whether work over this many nodes goes to several threads.
    pub(super) fn parallel_over(&self, nodes: usize) -> bool {
        self.parallel && nodes > PARALLEL_MIN_NODES
    }

    /// `RunPreEnqueuePlugins`: the first plugin that holds the pod back, with its status.
    pub fn run_pre_enqueue_plugins(&self, cx: &Cx) -> Option<Status> {
        self.pre_enqueue.iter().find_map(|&i| {
            let pl = self.plugin(i);
            let s = pl.pre_enqueue(cx);
            (!s.is_success()).then(|| s.with_plugin(pl.name()))
        })
    }

    /// `RunPreFilterPlugins`: the combined status and the node set the plugins allow.
    pub fn run_pre_filter_plugins(&self, cx: &Cx, state: &mut CycleState) -> PreFilterResult {
        let mut out = PreFilterResult {
            status: Status::success(),
            nodes: None,
            restricted_by: Vec::new(),
        };
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
                    Code::UnschedulableAndUnresolvable => {
                        out.status = s;
                        out.nodes = None;
                        return out;
                    }
                    Code::Unschedulable => {
                        out.status = s;
                        continue;
                    }
                    _ => {
                        let msg =
                            format!("running PreFilter plugin {:?}: {}", pl.name(), s.message());
                        out.status = Status::error(msg).with_plugin(pl.name());
                        out.nodes = None;
                        return out;
                    }
                }
            }
            if let Some(nodes) = nodes {
                out.restricted_by.push(pl.name());
                let allowed = match out.nodes.take() {
                    None => nodes,
                    Some(prev) => prev.intersection(&nodes).copied().collect(),
                };
                let none_left = allowed.is_empty();
                out.nodes = Some(allowed);
                if none_left {
                    let mut sorted = out.restricted_by.clone();
                    sorted.sort();
                    let msg = if sorted.len() == 1 {
                        format!("node(s) didn't satisfy plugin {}", sorted[0])
                    } else {
                        format!(
                            "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                            sorted.join(" ")
                        )
                    };
                    out.status = Status::unresolvable(msg);
                    return out;
                }
            }
        }
        out
    }

    /// The Filter plugins at `positions` (profile order, ascending) on a node, leaving out those
    /// PreFilter skipped; in `Mode::Decide` up to the first failure. The failures, with their
    /// positions.
    pub(super) fn run_filters_at(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
        mode: Mode,
        positions: impl Iterator<Item = usize>,
    ) -> Vec<(usize, Status)> {
        let mut failures = Vec::new();
        for k in positions {
            let pl = self.filter_plugin(k);
            if state.skips_filter(pl.name()) {
                continue;
            }
            let s = pl.filter(cx, state, node);
            if s.is_success() {
                continue;
            }
            failures.push((k, filter_status(pl.name(), s)));
            if mode == Mode::Decide {
                break;
            }
        }
        failures
    }

    /// `RunFilterPlugins`: in `Mode::Decide` it stops at the first failure, as upstream; in
    /// `Mode::Explain` every filter runs, each judged on its own.
    pub fn run_filter_plugins(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
        mode: Mode,
    ) -> NodeFilterResult {
        NodeFilterResult::from_failures(self.run_filters_at(
            cx,
            state,
            node,
            mode,
            0..self.filter.len(),
        ))
    }

    /// `RunPreFilterExtensionAddPod`.
    pub fn run_pre_filter_extension_add_pod(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pod: &Arc<Pod>,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_extension(state, "AddPod", |pl, st| pl.add_pod(cx, st, pod, node))
    }

    /// `RunPreFilterExtensionRemovePod`.
    pub fn run_pre_filter_extension_remove_pod(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pod: &Pod,
        node: &NodeInfo,
    ) -> Status {
        self.run_pre_filter_extension(state, "RemovePod", |pl, st| {
            pl.remove_pod(cx, st, pod, node)
        })
    }

    /// Runs a PreFilterExtensions method on every PreFilter plugin that has them and ran.
    fn run_pre_filter_extension(
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
    pub fn add_nominated_pods(
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
            let s = self.run_pre_filter_extension_add_pod(cx, st, p, ni);
            if !s.is_success() {
                return Err(s);
            }
        }
        Ok(added)
    }

    /// Whether a node has nominated pods that `add_nominated_pods` would add.
    pub(super) fn has_nominated_pods(&self, cx: &Cx, node: &NodeInfo) -> bool {
        cx.snapshot
            .nominated_on(node.name(), cx.pod)
            .any(|p| p.priority >= cx.pod.priority)
    }

    /// `RunFilterPluginsWithNominatedPods`: with nominated pods of equal or higher priority on
    /// the node, the filters run twice, with them assumed running and without; a filter fails if
    /// it fails in either, and the first pass's failure is the one reported.
    pub fn run_filter_plugins_with_nominated_pods(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
        mode: Mode,
    ) -> NodeFilterResult {
        let (state1, node1) = match self.add_nominated_pods(cx, state, node) {
            Ok(Some(added)) => added,
            Ok(None) => return self.run_filter_plugins(cx, state, node, mode),
            Err(e) => return NodeFilterResult::failed(e),
        };
        let first_pass = self.run_filters_at(cx, &state1, &node1, mode, 0..self.filter.len());
        if mode == Mode::Decide && !first_pass.is_empty() {
            return NodeFilterResult::from_failures(first_pass);
        }
        let second_pass = self.run_filters_at(cx, state, node, mode, 0..self.filter.len());
        let first = first_pass
            .first()
            .or(second_pass.first())
            .map(|(_, s)| s.clone());
        let mut all = first_pass;
        for (k, s) in second_pass {
            if !all.iter().any(|(j, _)| *j == k) {
                all.push((k, s));
            }
        }
        all.sort_by_key(|(k, _)| *k);
        NodeFilterResult {
            first,
            all: all.into_iter().map(|(_, s)| s).collect(),
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

    /// `RunPreScorePlugins`, leaving out the plugins whose state `current` marks as still valid
    /// (a replica sequence keeps them current); marks the others current once they ran.
    pub fn run_pre_score_plugins(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        nodes: &[&NodeInfo],
        mut current: Option<&mut [bool]>,
    ) -> Result<(), Status> {
        for (k, &i) in self.pre_score.iter().enumerate() {
            if current.as_deref().is_some_and(|c| c[k]) {
                continue;
            }
            let pl = self.plugin(i);
            // A Skip recorded by an earlier run of this plugin no longer holds.
            state.skip_score.retain(|&n| n != pl.name());
            let s = pl.pre_score(cx, state, nodes);
            if s.is_skip() {
                state.skip_score.push(pl.name());
            } else if !s.is_success() {
                return Err(Status::error(format!(
                    "running PreScore plugin {:?}: {}",
                    pl.name(),
                    s.message()
                )));
            }
            if let Some(c) = current.as_deref_mut() {
                c[k] = true;
            }
        }
        Ok(())
    }

    /// `RunScorePlugins`: every Score plugin PreScore did not skip, on every node, normalised,
    /// checked and weighted. `known` gives a plugin's (by position) raw scores on `nodes` when
    /// the caller has them (a replica sequence's cache); the others are computed here. In
    /// `Mode::Decide` only the totals are kept.
    pub fn run_score_plugins(
        &self,
        cx: &Cx,
        state: &CycleState,
        nodes: &[&NodeInfo],
        mode: Mode,
        mut known: impl FnMut(usize, &dyn Plugin) -> Option<Result<Vec<i64>, Status>>,
    ) -> Result<Vec<NodeScores>, Status> {
        let active: Vec<(usize, &dyn Plugin, i64)> = (0..self.score.len())
            .map(|k| (k, self.score_plugin(k), self.score[k].1))
            .filter(|(_, pl, _)| !state.skips_score(pl.name()))
            .collect();
        let mut raw: Vec<Vec<i64>> = Vec::with_capacity(active.len());
        for &(k, pl, _) in &active {
            let error = |e: Status| score_error(pl.name(), &e);
            if let Some(scores) = known(k, pl) {
                raw.push(scores.map_err(error)?);
                continue;
            }
            let score_on = |n: usize| pl.score(cx, state, nodes[n]).map_err(error);
            raw.push(if self.parallel_over(nodes.len()) {
                (0..nodes.len())
                    .into_par_iter()
                    .map(score_on)
                    .collect::<Result<_, _>>()?
            } else {
                (0..nodes.len()).map(score_on).collect::<Result<_, _>>()?
            });
        }
        for (&(_, pl, _), scores) in active.iter().zip(&mut raw) {
            if pl.has_score_extensions() {
                let s = pl.normalize_score(cx, state, scores);
                if !s.is_success() {
                    return Err(score_error(pl.name(), &s));
                }
            }
        }
        let mut out = vec![NodeScores::default(); nodes.len()];
        for (&(_, pl, weight), scores) in active.iter().zip(raw) {
            for (node, score) in out.iter_mut().zip(scores) {
                if !(0..=MAX_NODE_SCORE).contains(&score) {
                    return Err(Status::error(format!(
                        "plugin {:?} returns an invalid score {score}, it should in the range of [0, {MAX_NODE_SCORE}] after normalizing",
                        pl.name()
                    )));
                }
                if mode == Mode::Explain {
                    node.by_plugin.push((pl.name(), score * weight));
                }
                node.total += score * weight;
            }
        }
        Ok(out)
    }

    /// Per Score plugin PreScore did not skip, in profile order: its raw score on `node` and the
    /// inputs behind it, for an explanation. `state` is the cycle's (`CycleResult::state`).
    pub fn score_inputs(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
    ) -> Vec<(&'static str, i64, Vec<ScoreInput>)> {
        (0..self.score.len())
            .map(|k| self.score_plugin(k))
            .filter(|pl| !state.skips_score(pl.name()))
            .filter_map(|pl| {
                let raw = pl.score(cx, state, node).ok()?;
                Some((pl.name(), raw, pl.score_inputs(cx, state, node)))
            })
            .collect()
    }

    /// `RunPostFilterPlugins`.
    pub fn run_post_filter_plugins(
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
            if s.is_success() || s.code == Code::UnschedulableAndUnresolvable {
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

    /// What the Reserve plugins would allocate for the pod on `node`, per claim.
    pub fn run_reserve_plugins(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
    ) -> Vec<ClaimAllocation> {
        self.reserve
            .iter()
            .flat_map(|&i| self.plugin(i).reserve(cx, state, node))
            .collect()
    }

    /// What the PreBind plugins would do for the pod on `node`, in words.
    pub fn run_pre_bind_plugins(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
    ) -> Vec<String> {
        self.pre_bind
            .iter()
            .flat_map(|&i| self.plugin(i).pre_bind(cx, state, node))
            .collect()
    }
}
