//! DefaultPreemption (PostFilter): when no node fits, find a node where evicting lower-priority
//! pods makes room. The evaluation itself lives in `crate::preemption`.

use crate::framework::cycle_state::CycleState;
use crate::framework::plugin::{Cx, Plugin, Points};
use crate::framework::post_filter::PostFilterOutcome;
use crate::framework::runner::Framework;
use crate::framework::status::NodeToStatus;
use crate::preemption;

pub const NAME: &str = "DefaultPreemption";

pub struct DefaultPreemption {
    pub args: preemption::Args,
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_ENQUEUE | Points::POST_FILTER
    }

    fn post_filter(
        &self,
        fw: &Framework,
        cx: &Cx,
        state: &CycleState,
        statuses: &NodeToStatus,
    ) -> PostFilterOutcome {
        let (status, outcome) = preemption::preempt(fw, &self.args, cx, state, statuses);
        PostFilterOutcome {
            status,
            preemption: Some(outcome),
        }
    }
}
