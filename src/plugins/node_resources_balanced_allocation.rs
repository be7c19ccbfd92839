//! NodeResourcesBalancedAllocation (PreScore, Score): favours nodes whose resource fractions stay
//! close to each other once the pod is placed.

use super::resource_allocation::{self, ResourceSpec, Usage};
use crate::framework::MAX_NODE_SCORE;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::ScoreInput;
use crate::framework::plugin::{Cx, Plugin, Points, Reuse};
use crate::framework::status::Status;
use crate::model::node_info::NodeInfo;

pub const NAME: &str = "NodeResourcesBalancedAllocation";

/// `NodeResourcesBalancedAllocationArgs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    pub resources: Vec<ResourceSpec>,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            resources: super::node_resources_fit::default_resources(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct PreScoreState {
    pod_requests: Vec<i64>,
}

pub struct BalancedAllocation {
    pub args: Args,
    /// Score the change in balance the pod brings rather than the balance with it (1.36).
    pub scores_improvement: bool,
    pre_score: StateKey<PreScoreState>,
}

impl BalancedAllocation {
    pub fn new(slots: &mut StateSlots, args: Args, scores_improvement: bool) -> BalancedAllocation {
        BalancedAllocation {
            args,
            scores_improvement,
            pre_score: slots.register("PreScoreNodeResourcesBalancedAllocation"),
        }
    }
}

/// `balancedResourceScorer`: the balance with the pod, or (1.36) how much the pod improves it:
/// both balances lie in [50, 100], so their difference, halved and shifted, stays there too.
fn balanced_scorer(usage: &Usage, scores_improvement: bool) -> i64 {
    let with_pod = balanced_score(&usage.requested, &usage.allocatable);
    if !scores_improvement {
        return with_pod;
    }
    let without_pod = balanced_score(&usage.allocated, &usage.allocatable);
    MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + with_pod - without_pod) / 2
}

/// `balancedResourceScore`: 100 × (1 − standard deviation of the fractions).
fn balanced_score(requested: &[i64], allocatable: &[i64]) -> i64 {
    let fractions: Vec<f64> = requested
        .iter()
        .zip(allocatable)
        .filter(|(_, a)| **a != 0)
        .map(|(&r, &a)| (r as f64 / a as f64).min(1.0))
        .collect();
    let std = match fractions.len() {
        0 | 1 => 0.0,
        2 => ((fractions[0] - fractions[1]) / 2.0).abs(),
        n => {
            let mean = fractions.iter().sum::<f64>() / n as f64;
            let sum: f64 = fractions.iter().map(|f| (f - mean) * (f - mean)).sum();
            (sum / n as f64).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

impl BalancedAllocation {
    /// The node's usage with the pod, which the score is computed from; `None` for a pod that
    /// requests none of the resources (scored 0).
    fn usage(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Option<Usage> {
        let computed;
        let requests = match state.read(self.pre_score) {
            Some(s) => &s.pod_requests,
            None => {
                computed = resource_allocation::pod_requests(cx.pod, &self.args.resources, true);
                if computed.iter().all(|&r| r == 0) {
                    return None;
                }
                &computed
            }
        };
        Some(resource_allocation::usage(
            node,
            &self.args.resources,
            requests,
            true,
        ))
    }
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_SCORE | Points::SCORE
    }

    fn pre_score(&self, cx: &Cx, state: &mut CycleState, _nodes: &[&NodeInfo]) -> Status {
        let pod_requests = resource_allocation::pod_requests(cx.pod, &self.args.resources, true);
        if pod_requests.iter().all(|&r| r == 0) {
            return Status::skip();
        }
        state.write(self.pre_score, PreScoreState { pod_requests });
        Status::success()
    }

    fn score(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        Ok(self
            .usage(cx, state, node)
            .map_or(0, |u| balanced_scorer(&u, self.scores_improvement)))
    }

    fn score_inputs(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Vec<ScoreInput> {
        self.usage(cx, state, node)
            .map(|u| u.inputs(&self.args.resources))
            .unwrap_or_default()
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_resources() {
        assert_eq!(balanced_score(&[50, 50], &[100, 100]), 100);
        assert_eq!(balanced_score(&[100, 0], &[100, 100]), 50);
        assert_eq!(balanced_score(&[0, 0], &[0, 0]), 100);
    }
}
