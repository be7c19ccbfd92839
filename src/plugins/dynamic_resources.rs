//! DynamicResources (PreFilter, Filter, PostFilter, …): dynamic resource allocation. kubectl-sched
//! does not model ResourceClaims: a pod that has any is reported as not modelled instead of being
//! judged wrongly. For every other pod the plugin's visible effect is its PostFilter part of the
//! FailedScheduling message, which is reproduced exactly.

use super::helper::default_normalize_score;
use crate::framework::cycle_state::CycleState;
use crate::framework::plugin::{Cx, Plugin, Points, PostFilterOutcome, PreFilterNodes, Reuse};
use crate::framework::runner::{Framework, NodeToStatus};
use crate::framework::status::Status;

pub const NAME: &str = "DynamicResources";
/// What `cycleState.Read` returns when PreFilter never wrote the plugin's state.
pub const ERR_NOT_FOUND: &str = "not found";
pub const NO_NEW_CLAIMS: &str = "no new claims to deallocate";

pub struct DynamicResources {
    /// A Score plugin since 1.35: it favours nodes where earlier `firstAvailable` subrequests
    /// can be allocated (0 everywhere for a pod without claims).
    pub scores: bool,
}

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        let points = Points::PRE_ENQUEUE
            | Points::PRE_FILTER
            | Points::FILTER
            | Points::POST_FILTER
            | Points::PRE_SCORE
            | Points::RESERVE
            | Points::PRE_BIND;
        if self.scores {
            points | Points::SCORE
        } else {
            points
        }
    }

    fn has_score_extensions(&self) -> bool {
        true
    }

    fn normalize_score(&self, _cx: &Cx, _state: &CycleState, scores: &mut [i64]) -> Status {
        default_normalize_score(scores, false);
        Status::success()
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        state.dynamic_resources_prefiltered = true;
        if cx.pod.resource_claims.is_empty() {
            return (Status::skip(), None);
        }
        let claims: Vec<&str> = cx.pod.resource_claims.iter().map(|c| c.as_str()).collect();
        (
            Status::error(format!(
                "not modelled: the pod has resource claims ({}); kubectl-sched does not model dynamic resource allocation",
                claims.join(", ")
            )),
            None,
        )
    }

    fn post_filter(
        &self,
        _fw: &Framework,
        _cx: &Cx,
        state: &CycleState,
        _statuses: &NodeToStatus,
    ) -> PostFilterOutcome {
        let status = if state.dynamic_resources_prefiltered {
            Status::unschedulable(NO_NEW_CLAIMS)
        } else {
            Status::error(ERR_NOT_FOUND)
        };
        PostFilterOutcome {
            status,
            preemption: None,
        }
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}
