//! TaintToleration (Filter, PreScore, Score): NoSchedule/NoExecute taints the pod does not
//! tolerate reject the node; untolerated PreferNoSchedule taints lower its score.

use super::helper::default_normalize_score;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::{Detail, Fact, ScoreInput};
use crate::framework::plugin::{Cx, Plugin, Points, Reuse};
use crate::framework::status::Status;
use crate::model::node_info::NodeInfo;
use crate::model::taints::{
    Effect, Taint, Toleration, first_untolerated_do_not_schedule, tolerated,
    untolerated_do_not_schedule,
};

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

impl TaintToleration {
    /// The PreferNoSchedule taints the pod does not tolerate: the score counts them.
    fn counted<'a>(
        &self,
        state: &'a CycleState,
        node: &'a NodeInfo,
    ) -> Result<impl Iterator<Item = &'a Taint>, Status> {
        let s = state.read(self.pre_score).ok_or_else(|| {
            Status::error("reading \"PreScoreTaintToleration\" from cycleState: not found")
        })?;
        Ok(node
            .node
            .taints
            .iter()
            .filter(|t| t.effect == Some(Effect::PreferNoSchedule))
            .filter(|t| !tolerated(&s.tolerations_prefer_no_schedule, t)))
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
        let taints = &node.node.taints;
        let status = match first_untolerated_do_not_schedule(taints, &cx.pod.tolerations) {
            None => return Status::success(),
            Some(_) if self.reason_without_taint => Status::unresolvable(UNTOLERATED),
            Some(t) => Status::unresolvable(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                t.key, t.value
            )),
        };
        // The reason names one taint at most; every one the pod would have to tolerate.
        cx.with_facts(status, || {
            untolerated_do_not_schedule(taints, &cx.pod.tolerations)
                .map(|t| Fact::of(Detail::Taint(t.clone())))
                .collect()
        })
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
        Ok(self.counted(state, node)?.count() as i64)
    }

    fn score_inputs(&self, _cx: &Cx, state: &CycleState, node: &NodeInfo) -> Vec<ScoreInput> {
        self.counted(state, node)
            .map(|taints| taints.map(|t| ScoreInput::Taint(t.clone())).collect())
            .unwrap_or_default()
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
