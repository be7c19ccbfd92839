//! PodTopologySpread (PreFilter, Filter, PreScore, Score): spreads pods matching the pod's
//! topology spread constraints (or the profile's default constraints) across topology domains.
//!
//! PreFilter counts the matching pods of every domain once (DoNotSchedule constraints) and keeps
//! the two smallest domains per constraint, so Filter is a lookup per constraint; AddPod/RemovePod
//! adjust those counts for preemption and nominated pods. PreScore counts the domains of the
//! feasible nodes for the ScheduleAnyway constraints; Score reads them.

use crate::framework::MAX_NODE_SCORE;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::{Detail, Fact, ScoreInput, SpreadMiss};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes};
use crate::framework::snapshot::Snapshot;
use crate::framework::status::Status;
use crate::model::cluster::{Cluster, Workloads};
use crate::model::intern::{Interner, Str};
use crate::model::labels::{Labels, Selector};
use crate::model::node::{LABEL_HOSTNAME, LABEL_ZONE, Node};
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use crate::model::taints::first_untolerated_do_not_schedule;
use k8s_openapi::api::core::v1 as k8s;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::hash_map::Entry;
use std::sync::Arc;

mod common;
mod filtering;
mod scoring;

use common::*;
// The plan's interaction relation reads the default constraints' selector as this plugin does.
pub use common::default_selector;
use filtering::*;
use scoring::*;

pub const NAME: &str = "PodTopologySpread";
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

const HONOR: &str = "Honor";

/// Below this many nodes, counting on several threads costs more than it saves.
const PARALLEL_MIN_NODES: usize = 256;
/// A per-node count slot for a constraint that does not count on that node.
const EXCLUDED: i64 = -1;
/// The "no domain yet" value of a critical path (upstream's `math.MaxInt32`).
const NO_DOMAIN: i64 = i32::MAX as i64;

/// `PodTopologySpreadArgs.defaultingType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DefaultingType {
    /// The built-in defaults: zone (maxSkew 5) and hostname (maxSkew 3), both ScheduleAnyway.
    #[default]
    System,
    /// `defaultConstraints` as configured.
    List,
}

/// `PodTopologySpreadArgs`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    pub default_constraints: Vec<k8s::TopologySpreadConstraint>,
    pub defaulting_type: DefaultingType,
}

/// The constraints `DefaultingType::System` applies to pods without their own.
pub fn system_default_constraints() -> Vec<k8s::TopologySpreadConstraint> {
    [(LABEL_HOSTNAME, 3), (LABEL_ZONE, 5)]
        .into_iter()
        .map(|(key, max_skew)| k8s::TopologySpreadConstraint {
            topology_key: key.to_string(),
            when_unsatisfiable: Action::ScheduleAnyway.as_str().to_string(),
            max_skew,
            ..Default::default()
        })
        .collect()
}

pub struct PodTopologySpread {
    default_constraints: Vec<k8s::TopologySpreadConstraint>,
    system_defaulted: bool,
    pre_filter: StateKey<PreFilterState>,
    pre_score: StateKey<PreScoreState>,
}

impl PodTopologySpread {
    pub fn new(slots: &mut StateSlots, args: &Args) -> PodTopologySpread {
        let (default_constraints, system_defaulted) = match args.defaulting_type {
            DefaultingType::System => (system_default_constraints(), true),
            DefaultingType::List => (args.default_constraints.clone(), false),
        };
        PodTopologySpread {
            default_constraints,
            system_defaulted,
            pre_filter: slots.register("PreFilterPodTopologySpread"),
            pre_score: slots.register("PreScorePodTopologySpread"),
        }
    }

    /// `getConstraints` for one action: the pod's own, or else the defaults with the selector
    /// of the workloads selecting the pod (none when nothing selects it).
    fn constraints(
        &self,
        pod: &Pod,
        cluster: &Cluster,
        action: Action,
    ) -> Result<Vec<Constraint>, String> {
        let strings = &cluster.strings;
        if !pod.topology_spread_constraints.is_empty() {
            return parse_constraints(
                &pod.topology_spread_constraints,
                &pod.labels,
                action,
                strings,
            )
            .map_err(|e| {
                format!(
                    "obtaining pod's {} topology spread constraints: {e}",
                    action.hardness()
                )
            });
        }
        let mut constraints =
            parse_constraints(&self.default_constraints, &pod.labels, action, strings).map_err(
                |e| {
                    format!(
                        "setting default {} topology spread constraints: {e}",
                        action.hardness()
                    )
                },
            )?;
        if constraints.is_empty() {
            return Ok(constraints);
        }
        let selector = default_selector(pod, &cluster.workloads);
        if selector.is_empty() {
            return Ok(Vec::new());
        }
        for c in &mut constraints {
            c.selector = selector.clone();
        }
        Ok(constraints)
    }
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::PRE_SCORE | Points::SCORE
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        self.pre_filter_state(cx, state)
    }

    fn has_pre_filter_extensions(&self) -> bool {
        true
    }

    fn add_pod(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pod_to_add: &Arc<Pod>,
        node: &NodeInfo,
    ) -> Status {
        self.add_pod_to_state(cx, state, pod_to_add, node)
    }

    fn remove_pod(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pod_to_remove: &Pod,
        node: &NodeInfo,
    ) -> Status {
        self.remove_pod_from_state(cx, state, pod_to_remove, node)
    }

    fn filter(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        self.filter_node(cx, state, node)
    }

    fn pre_score(&self, cx: &Cx, state: &mut CycleState, nodes: &[&NodeInfo]) -> Status {
        self.pre_score_state(cx, state, nodes)
    }

    fn score(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        self.score_node(cx, state, node)
    }

    fn score_inputs(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Vec<ScoreInput> {
        self.score_node_inputs(cx, state, node)
    }

    fn has_score_extensions(&self) -> bool {
        true
    }

    fn normalize_score(&self, cx: &Cx, state: &CycleState, scores: &mut [i64]) -> Status {
        self.normalize_node_scores(cx, state, scores)
    }
}

#[cfg(test)]
mod tests;
