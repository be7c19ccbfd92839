//! SchedulingGates (PreEnqueue): a pod with scheduling gates is never tried.

use crate::framework::facts::Detail;
use crate::framework::plugin::{Cx, Plugin, Points};
use crate::framework::status::Status;

pub const NAME: &str = "SchedulingGates";

pub struct SchedulingGates;

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_ENQUEUE
    }

    fn pre_enqueue(&self, cx: &Cx) -> Status {
        let pod = cx.pod;
        if pod.scheduling_gates.is_empty() {
            return Status::success();
        }
        // Go's %v of a []string: "[a b]".
        let gates: Vec<&str> = pod.scheduling_gates.iter().map(|g| g.as_str()).collect();
        cx.with_fact(
            Status::unresolvable(format!(
                "waiting for scheduling gates: [{}]",
                gates.join(" ")
            )),
            || Detail::Gates(pod.scheduling_gates.clone()),
        )
    }
}
