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
use super::snapshot::Snapshot;
use super::status::Status;
use crate::model::pod::Pod;
use rayon::prelude::*;
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
    /// Raw scores of node-local score plugins, by node index × score position: one flat table,
    /// so a replica's scoring reads a slot per node instead of following a pointer per node.
    scores: Vec<Option<i64>>,
}

/// What is known of one node at one generation.
#[derive(Clone, Debug, Default)]
pub(super) struct NodeEntry {
    generation: u64,
    /// The first failing node-local filter (`Some(None)`: none fails), as `Mode::Decide` needs.
    first_local: Option<Option<(usize, Status)>>,
    /// Every failing node-local filter, as `Mode::Explain` needs.
    all_local: Option<Vec<(usize, Status)>>,
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
            scores: Vec::new(),
        }
    }

    /// Forgets everything: the next cycle runs PreFilter and evaluates every node again.
    pub fn clear(&mut self) {
        self.pre_filtered = None;
        self.pre_score_current.fill(false);
        self.nodes.clear();
        self.scores.clear();
    }

    /// Forgets what no longer describes its node: a node whose `generation` moved on (a pod
    /// assumed or removed there) is evaluated again. Once per cycle, so that reads during the
    /// cycle need not look at the node.
    pub(super) fn refresh(&mut self, snapshot: &Snapshot) {
        let width = self.local_score.len();
        let n = snapshot.num_nodes();
        self.nodes.resize_with(n, NodeEntry::default);
        self.scores.resize(n * width, None);
        for (i, (e, node)) in self.nodes.iter_mut().zip(&snapshot.nodes).enumerate() {
            if e.generation != node.generation {
                *e = NodeEntry {
                    generation: node.generation,
                    ..NodeEntry::default()
                };
                self.scores[i * width..(i + 1) * width].fill(None);
            }
        }
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

    /// What is known of node `i` (since `refresh`).
    pub(super) fn entry(&self, i: usize) -> &NodeEntry {
        &self.nodes[i]
    }

    /// Runs the node-local filters of `plan` on the `nodes` whose verdicts `mode` needs and the
    /// cache does not hold yet (every node in a sequence's first cycle, then those that changed).
    pub(super) fn learn_local_verdicts(
        &mut self,
        fw: &Framework,
        cx: &Cx,
        state: &CycleState,
        mode: Mode,
        plan: &FilterPlan,
        nodes: impl Iterator<Item = usize>,
    ) {
        let missing: Vec<usize> = nodes
            .filter(|&i| match mode {
                Mode::Decide => self.nodes[i].first_local.is_none(),
                Mode::Explain => self.nodes[i].all_local.is_none(),
            })
            .collect();
        let judge = |&i: &usize| {
            let node = &cx.snapshot.nodes[i];
            fw.run_filters_at(cx, state, node, mode, plan.local.iter().copied())
        };
        let verdicts: Vec<Vec<(usize, Status)>> = if fw.parallel_over(missing.len()) {
            missing.par_iter().map(judge).collect()
        } else {
            missing.iter().map(judge).collect()
        };
        for (i, failures) in missing.into_iter().zip(verdicts) {
            let e = &mut self.nodes[i];
            e.first_local = Some(failures.first().cloned());
            if mode == Mode::Explain {
                e.all_local = Some(failures);
            }
        }
    }

    /// The raw scores of the node-local Score plugin at `position` on `nodes` (by index), from
    /// the cache where known, else from `score` (and kept); `None` when the plugin is not
    /// node-local.
    pub(super) fn local_raw_scores(
        &mut self,
        fw: &Framework,
        position: usize,
        nodes: &[usize],
        score: impl Fn(usize) -> Result<i64, Status> + Sync,
    ) -> Option<Result<Vec<i64>, Status>> {
        if !self.local_score[position] {
            return None;
        }
        let width = self.local_score.len();
        let slot = |i: usize| i * width + position;
        let missing: Vec<usize> = nodes
            .iter()
            .copied()
            .filter(|&i| self.scores[slot(i)].is_none())
            .collect();
        let computed: Result<Vec<i64>, Status> = if fw.parallel_over(missing.len()) {
            missing.par_iter().map(|&i| score(i)).collect()
        } else {
            missing.iter().map(|&i| score(i)).collect()
        };
        let computed = match computed {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        for (i, v) in missing.into_iter().zip(computed) {
            self.scores[slot(i)] = Some(v);
        }
        Some(Ok(nodes
            .iter()
            .map(|&i| self.scores[slot(i)].expect("computed above"))
            .collect()))
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
    /// Where the first node-local filter fails, once known.
    pub(super) fn first_local(&self) -> Option<usize> {
        self.first_local.as_ref()?.as_ref().map(|(k, _)| *k)
    }

    /// The status of the first failing node-local filter, once known.
    pub(super) fn first_local_status(&self) -> Option<&Status> {
        self.first_local.as_ref()?.as_ref().map(|(_, s)| s)
    }

    /// Every failing node-local filter (`Mode::Explain`), once known.
    pub(super) fn all_local(&self) -> &[(usize, Status)] {
        self.all_local.as_deref().unwrap_or_default()
    }
}
