//! TaintToleration (Filter, PreScore, Score): NoSchedule/NoExecute taints the pod does not
//! tolerate reject the node; untolerated PreferNoSchedule taints lower its score.

use super::helper::default_normalize_score;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::plugin::{Cx, Plugin, Points, Reuse};
use crate::framework::status::Status;
use crate::model::node_info::NodeInfo;
use crate::model::taints::{Effect, Toleration, first_untolerated_do_not_schedule, tolerated};

pub const NAME: &str = "TaintToleration";
const UNTOLERATED: &str = "node(s) had untolerated taint(s)";

#[derive(Clone, Debug)]
pub struct PreScoreState {
    tolerations_prefer_no_schedule: Vec<Toleration>,
}

pub struct TaintToleration {
    /// Since 1.35 (and in later 1.34 patch releases) the reason no longer names the taint, so
    /// FailedScheduling counts every untolerated taint together.
    pub reason_without_taint: bool,
    pre_score: StateKey<PreScoreState>,
}

impl TaintToleration {
    pub fn new(slots: &mut StateSlots, reason_without_taint: bool) -> TaintToleration {
        TaintToleration {
            reason_without_taint,
            pre_score: slots.register("PreScoreTaintToleration"),
        }
    }
}

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::FILTER | Points::PRE_SCORE | Points::SCORE
    }

    fn filter(&self, cx: &Cx, _state: &CycleState, node: &NodeInfo) -> Status {
        match first_untolerated_do_not_schedule(&node.node.taints, &cx.pod.tolerations) {
            None => Status::success(),
            Some(_) if self.reason_without_taint => Status::unresolvable(UNTOLERATED),
            Some(t) => Status::unresolvable(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                t.key, t.value
            )),
        }
    }

    fn pre_score(&self, cx: &Cx, state: &mut CycleState, _nodes: &[&NodeInfo]) -> Status {
        state.write(
            self.pre_score,
            PreScoreState {
                tolerations_prefer_no_schedule: cx
                    .pod
                    .tolerations
                    .iter()
                    .filter(|t| matches!(t.effect, None | Some(Some(Effect::PreferNoSchedule))))
                    .cloned()
                    .collect(),
            },
        );
        Status::success()
    }

    fn score(&self, _cx: &Cx, state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        let s = state.read(self.pre_score).ok_or_else(|| {
            Status::error("reading \"PreScoreTaintToleration\" from cycleState: not found")
        })?;
        Ok(node
            .node
            .taints
            .iter()
            .filter(|t| t.effect == Some(Effect::PreferNoSchedule))
            .filter(|t| !tolerated(&s.tolerations_prefer_no_schedule, t))
            .count() as i64)
    }

    fn has_score_extensions(&self) -> bool {
        true
    }

    fn normalize_score(&self, _cx: &Cx, _state: &CycleState, scores: &mut [i64]) -> Status {
        default_normalize_score(scores, true);
        Status::success()
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}
