//! What a scheduling cycle may reuse from earlier cycles of an identical pod (replicas: the same
//! spec, other names) on the same snapshot as it changes. This is the tool's own optimisation
//! (upstream runs every cycle from scratch); each piece is kept only where reuse gives exactly
//! what a cold cycle would, which the tests check:
//!
//! - the cycle state after PreFilter, kept current with AddPod as pods are assumed (as upstream's
//!   nominated-pods pass does), so PreFilter runs once;
//! - per PreScore plugin, whether its state is still current (`Plugin::pre_score_add_pod`);
//! - per node, the verdicts of the node-local filters and the raw scores of the node-local score
//!   plugins (`Plugin::reuse`), valid while the node's `generation` is the one they were
//!   computed at: a node that changes (a pod assumed or removed there) is evaluated again.
//!
//! A cache serves one snapshot and the snapshots cloned from it, and nodes that change only
//! through `NodeInfo`'s methods.

use super::cycle_state::CycleState;
use super::plugin::Cx;
use super::runner::{Framework, Mode, PreFilterResult};
use super::status::Status;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use std::sync::Arc;

pub struct CycleCache {
    /// The cycle state after PreFilter and the PreFilter result, once a cycle ran PreFilter
    /// successfully.
    pre_filtered: Option<(CycleState, PreFilterResult)>,
    /// `pre_filtered` was made by a cycle that explains, so it holds what facts need.
    pre_filtered_explains: bool,
    /// Per PreScore plugin (profile order): its state in `pre_filtered` is current.
    pub(super) pre_score_current: Vec<bool>,
    /// Per Filter plugin (profile order): its verdict on a node depends on that node alone.
    local_filter: Vec<bool>,
    /// Per Score plugin (profile order): its raw score on a node depends on that node alone.
    local_score: Vec<bool>,
    /// By node index.
    nodes: Vec<NodeEntry>,
}

/// What is known of one node at one generation.
#[derive(Clone, Debug, Default)]
pub(super) struct NodeEntry {
    generation: u64,
    /// The first failing node-local filter (`Some(None)`: none fails), as `Mode::Decide` needs.
    first_local: Option<Option<(usize, Status)>>,
    /// Every failing node-local filter, as `Mode::Explain` needs.
    all_local: Option<Vec<(usize, Status)>>,
    /// Raw scores of node-local score plugins, by score position.
    scores: Vec<Option<i64>>,
}

/// New knowledge of a node, found while its entry was only read (on several threads).
pub(super) enum Learned {
    FirstLocal(Option<(usize, Status)>),
    AllLocal(Vec<(usize, Status)>),
}

/// The Filter positions a cycle runs, split by whether their verdicts are cached.
pub(super) struct FilterPlan {
    /// Node-local filters PreFilter did not skip, in profile order.
    pub local: Vec<usize>,
    /// The others, in profile order.
    pub global: Vec<usize>,
}

impl CycleCache {
    pub fn new(fw: &Framework) -> CycleCache {
        CycleCache {
            pre_filtered: None,
            pre_filtered_explains: false,
            pre_score_current: vec![false; fw.pre_score.len()],
            local_filter: (0..fw.filter.len())
                .map(|k| fw.filter_plugin(k).reuse().node_local_filter)
                .collect(),
            local_score: (0..fw.score.len())
                .map(|k| fw.score_plugin(k).reuse().node_local_score)
                .collect(),
            nodes: Vec::new(),
        }
    }

    /// Forgets everything: the next cycle runs PreFilter and evaluates every node again.
    pub fn clear(&mut self) {
        self.pre_filtered = None;
        self.pre_score_current.fill(false);
        self.nodes.clear();
    }

    /// The kept state after PreFilter, if a cycle that explains as this one (`cx.explain`)
    /// made it: one that explains keeps more than one that decides, so neither serves the other.
    pub(super) fn take_pre_filtered(&mut self, cx: &Cx) -> Option<(CycleState, PreFilterResult)> {
        self.pre_filtered
            .take()
            .filter(|_| self.pre_filtered_explains == cx.explain)
    }

    pub(super) fn keep_pre_filtered(&mut self, cx: &Cx, state: CycleState, pre: PreFilterResult) {
        self.pre_filtered = Some((state, pre));
        self.pre_filtered_explains = cx.explain;
    }

    pub(super) fn filter_plan(&self, fw: &Framework, state: &CycleState) -> FilterPlan {
        let (mut local, mut global) = (Vec::new(), Vec::new());
        for k in 0..fw.filter.len() {
            if state.skips_filter(fw.filter_plugin(k).name()) {
                continue;
            }
            if self.local_filter[k] {
                local.push(k);
            } else {
                global.push(k);
            }
        }
        FilterPlan { local, global }
    }

    pub(super) fn local_score(&self, position: usize) -> bool {
        self.local_score[position]
    }

    /// The entry of node `i` if it describes the node as it is.
    pub(super) fn entry(&self, i: usize, node: &NodeInfo) -> Option<&NodeEntry> {
        self.nodes
            .get(i)
            .filter(|e| e.generation == node.generation)
    }

    fn entry_mut(&mut self, i: usize, node: &NodeInfo, score_plugins: usize) -> &mut NodeEntry {
        if self.nodes.len() <= i {
            self.nodes.resize_with(i + 1, NodeEntry::default);
        }
        let e = &mut self.nodes[i];
        if e.generation != node.generation || e.scores.len() != score_plugins {
            *e = NodeEntry {
                generation: node.generation,
                first_local: None,
                all_local: None,
                scores: vec![None; score_plugins],
            };
        }
        e
    }

    pub(super) fn learn(&mut self, i: usize, node: &NodeInfo, score_plugins: usize, l: Learned) {
        let e = self.entry_mut(i, node, score_plugins);
        match l {
            Learned::FirstLocal(first) => e.first_local = Some(first),
            Learned::AllLocal(all) => {
                e.first_local = Some(all.first().cloned());
                e.all_local = Some(all);
            }
        }
    }

    pub(super) fn learn_score(
        &mut self,
        i: usize,
        node: &NodeInfo,
        score_plugins: usize,
        position: usize,
        raw: i64,
    ) {
        self.entry_mut(i, node, score_plugins).scores[position] = Some(raw);
    }

    /// After `placed` was assumed on node `i`, brings the kept cycle state up to date for the
    /// next pod (`cx.pod`): AddPod, and the PreScore states that can follow. When a plugin cannot
    /// follow, the next cycle starts from PreFilter again.
    pub fn pod_added(&mut self, fw: &Framework, cx: &Cx, placed: &Arc<Pod>, i: usize) {
        let Some((state, _)) = &mut self.pre_filtered else {
            return;
        };
        // The state is brought up to date as the cycle that made it would.
        let cx = &Cx {
            explain: self.pre_filtered_explains,
            ..*cx
        };
        let node = &cx.snapshot.nodes[i];
        if !fw
            .run_pre_filter_extension_add_pod(cx, state, placed, node)
            .is_success()
        {
            self.clear();
            return;
        }
        for (k, &p) in fw.pre_score.iter().enumerate() {
            self.pre_score_current[k] = self.pre_score_current[k]
                && fw.plugin(p).pre_score_add_pod(cx, state, placed, node);
        }
    }
}

impl NodeEntry {
    pub(super) fn first_local(&self) -> Option<&Option<(usize, Status)>> {
        self.first_local.as_ref()
    }

    /// The status of the first failing node-local filter, once known.
    pub(super) fn first_local_status(&self) -> Option<&Status> {
        self.first_local.as_ref()?.as_ref().map(|(_, s)| s)
    }

    pub(super) fn all_local(&self) -> Option<&Vec<(usize, Status)>> {
        self.all_local.as_ref()
    }

    pub(super) fn score(&self, position: usize) -> Option<i64> {
        self.scores.get(position).copied().flatten()
    }
}

/// Where the first node-local filter fails on a node (`Mode::Decide`), from its entry or
/// computed; its status stays in (or goes to) the entry.
pub(super) fn first_local_failure(
    fw: &Framework,
    cx: &Cx,
    state: &CycleState,
    node: &NodeInfo,
    plan: &FilterPlan,
    entry: Option<&NodeEntry>,
) -> (Option<usize>, Option<Learned>) {
    match entry.and_then(NodeEntry::first_local) {
        Some(first) => (first.as_ref().map(|(k, _)| *k), None),
        None => {
            let first = fw
                .run_filters_at(cx, state, node, Mode::Decide, plan.local.iter().copied())
                .into_iter()
                .next();
            (
                first.as_ref().map(|(k, _)| *k),
                Some(Learned::FirstLocal(first)),
            )
        }
    }
}

/// Every failing node-local filter on a node (`Mode::Explain`), from its entry or computed.
pub(super) fn all_local_failures(
    fw: &Framework,
    cx: &Cx,
    state: &CycleState,
    node: &NodeInfo,
    plan: &FilterPlan,
    entry: Option<&NodeEntry>,
) -> (Vec<(usize, Status)>, Option<Learned>) {
    match entry.and_then(NodeEntry::all_local) {
        Some(all) => (all.clone(), None),
        None => {
            let all = fw.run_filters_at(cx, state, node, Mode::Explain, plan.local.iter().copied());
            (all.clone(), Some(Learned::AllLocal(all)))
        }
    }
}
