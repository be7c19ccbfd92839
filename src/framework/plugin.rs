//! The extension points of `framework/interface.go`, as one trait whose methods default to "not
//! implemented here"; `points()` says which ones a plugin really extends.

use super::cycle_state::CycleState;
use super::facts::{Detail, Fact, ScoreInput};
use super::post_filter::PostFilterOutcome;
use super::runner::Framework;
use super::snapshot::Snapshot;
use super::status::{NodeToStatus, Status};
use crate::dra::assumed::ClaimAllocation;
use crate::model::intern::Str;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use std::collections::BTreeSet;
use std::sync::Arc;

/// A set of extension points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Points(u16);

impl Points {
    pub const NONE: Points = Points(0);
    pub const PRE_ENQUEUE: Points = Points(1);
    pub const QUEUE_SORT: Points = Points(1 << 1);
    pub const PRE_FILTER: Points = Points(1 << 2);
    pub const FILTER: Points = Points(1 << 3);
    pub const POST_FILTER: Points = Points(1 << 4);
    pub const PRE_SCORE: Points = Points(1 << 5);
    pub const SCORE: Points = Points(1 << 6);
    pub const RESERVE: Points = Points(1 << 7);
    pub const PERMIT: Points = Points(1 << 8);
    pub const PRE_BIND: Points = Points(1 << 9);
    pub const BIND: Points = Points(1 << 10);
    pub const POST_BIND: Points = Points(1 << 11);

    pub const fn union(self, other: Points) -> Points {
        Points(self.0 | other.0)
    }

    pub const fn contains(self, other: Points) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }
}

impl std::ops::BitOr for Points {
    type Output = Points;
    fn bitor(self, rhs: Points) -> Points {
        self.union(rhs)
    }
}

/// What a plugin sees of the cycle: the pod being scheduled, the cluster snapshot, and whether
/// the cycle explains (then plugins attach the facts behind their verdicts).
#[derive(Clone, Copy)]
pub struct Cx<'a> {
    pub pod: &'a Pod,
    pub snapshot: &'a Snapshot,
    pub explain: bool,
}

impl<'a> Cx<'a> {
    /// A cycle that decides without explaining.
    pub fn new(pod: &'a Pod, snapshot: &'a Snapshot) -> Cx<'a> {
        Cx {
            pod,
            snapshot,
            explain: false,
        }
    }

    /// `status` with the facts behind its reasons when the cycle explains; `facts` runs only
    /// then, so deciding never pays for them.
    pub fn with_facts(&self, status: Status, facts: impl FnOnce() -> Vec<Fact>) -> Status {
        if self.explain {
            status.with_facts(facts())
        } else {
            status
        }
    }

    /// `status` with one fact behind its first reason, when the cycle explains.
    pub fn with_fact(&self, status: Status, detail: impl FnOnce() -> Detail) -> Status {
        self.with_facts(status, || vec![Fact::of(detail())])
    }
}

/// `PreFilterResult`: `None` means all nodes.
pub type PreFilterNodes = Option<BTreeSet<Str>>;

/// What a replica sequence may reuse of a plugin's results from one replica to the next. This is
/// the tool's own optimisation (upstream re-runs everything for every pod): each flag may be set
/// only where reuse gives exactly what a fresh cycle would.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reuse {
    /// Filter's verdict on a node depends only on the pod and that node's `NodeInfo`, not on other
    /// nodes or on cycle state that AddPod changes: it changes only where a pod was placed.
    pub node_local_filter: bool,
    /// Score's raw score for a node depends only on the pod, that node and PreScore state that
    /// stays current.
    pub node_local_score: bool,
    /// PreScore state (and its Skip decision) comes from the pod alone.
    pub pre_score_from_pod: bool,
}

impl Reuse {
    pub const NOTHING: Reuse = Reuse {
        node_local_filter: false,
        node_local_score: false,
        pre_score_from_pod: false,
    };
    /// Everything the plugin decides depends on the pod and the one node it looks at.
    pub const NODE_LOCAL: Reuse = Reuse {
        node_local_filter: true,
        node_local_score: true,
        pre_score_from_pod: true,
    };
}

pub trait Plugin: Send + Sync {
    /// The upstream plugin name (`names.NodeAffinity`, …).
    fn name(&self) -> &'static str;

    /// The extension points this plugin implements.
    fn points(&self) -> Points;

    fn pre_enqueue(&self, _cx: &Cx) -> Status {
        Status::success()
    }

    fn pre_filter(&self, _cx: &Cx, _state: &mut CycleState) -> (Status, PreFilterNodes) {
        (Status::success(), None)
    }

    /// Whether `add_pod`/`remove_pod` (PreFilterExtensions) are implemented.
    fn has_pre_filter_extensions(&self) -> bool {
        false
    }

    fn add_pod(
        &self,
        _cx: &Cx,
        _state: &mut CycleState,
        _pod_to_add: &Arc<Pod>,
        _node: &NodeInfo,
    ) -> Status {
        Status::success()
    }

    fn remove_pod(
        &self,
        _cx: &Cx,
        _state: &mut CycleState,
        _pod_to_remove: &Pod,
        _node: &NodeInfo,
    ) -> Status {
        Status::success()
    }

    fn filter(&self, _cx: &Cx, _state: &CycleState, _node: &NodeInfo) -> Status {
        Status::success()
    }

    fn post_filter(
        &self,
        _fw: &Framework,
        _cx: &Cx,
        _state: &CycleState,
        _statuses: &NodeToStatus,
    ) -> PostFilterOutcome {
        PostFilterOutcome {
            status: Status::unschedulable(""),
            preemption: None,
        }
    }

    fn pre_score(&self, _cx: &Cx, _state: &mut CycleState, _nodes: &[&NodeInfo]) -> Status {
        Status::success()
    }

    fn score(&self, _cx: &Cx, _state: &CycleState, _node: &NodeInfo) -> Result<i64, Status> {
        Ok(0)
    }

    /// The inputs behind `score`'s raw score on a node, for the explanation: the values the
    /// score is computed from, by the same code.
    fn score_inputs(&self, _cx: &Cx, _state: &CycleState, _node: &NodeInfo) -> Vec<ScoreInput> {
        Vec::new()
    }

    /// Whether `normalize_score` (ScoreExtensions) is implemented.
    fn has_score_extensions(&self) -> bool {
        false
    }

    fn normalize_score(&self, _cx: &Cx, _state: &CycleState, _scores: &mut [i64]) -> Status {
        Status::success()
    }

    /// Reserve: the devices this plugin would allocate to the pod's claims on the chosen node,
    /// which assuming the pod there takes.
    fn reserve(&self, _cx: &Cx, _state: &CycleState, _node: &NodeInfo) -> Vec<ClaimAllocation> {
        Vec::new()
    }

    /// PreBind: what this plugin would do on the chosen node before the pod is bound, in words.
    fn pre_bind(&self, _cx: &Cx, _state: &CycleState, _node: &NodeInfo) -> Vec<String> {
        Vec::new()
    }

    /// What a replica sequence may reuse from one replica to the next.
    fn reuse(&self) -> Reuse {
        Reuse::NOTHING
    }

    /// Whether placing one replica of the pod changes this plugin's answers for the next beyond
    /// the node it went to (the replicas share a claim that becomes allocated or in use): a
    /// replica sequence then gives every replica a cold cycle.
    fn replicas_interact(&self, _cx: &Cx) -> bool {
        false
    }

    /// After an identical pod was placed on `node`, updates this plugin's PreScore state (and
    /// Skip decision) for the next one. Returns false when PreScore must run again.
    fn pre_score_add_pod(
        &self,
        _cx: &Cx,
        _state: &mut CycleState,
        _placed: &Pod,
        _node: &NodeInfo,
    ) -> bool {
        self.reuse().pre_score_from_pod
    }
}
