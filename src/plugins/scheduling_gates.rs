//! SchedulingGates (PreEnqueue): a pod with scheduling gates is never tried.

use crate::framework::plugin::{Plugin, Points};
use crate::framework::status::Status;
use crate::model::pod::Pod;

pub const NAME: &str = "SchedulingGates";

pub struct SchedulingGates;

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_ENQUEUE
    }

    fn pre_enqueue(&self, pod: &Pod) -> Status {
        if pod.scheduling_gates.is_empty() {
            return Status::success();
        }
        // Go's %v of a []string: "[a b]".
        let gates: Vec<&str> = pod.scheduling_gates.iter().map(|g| g.as_str()).collect();
        Status::unresolvable(format!(
            "waiting for scheduling gates: [{}]",
            gates.join(" ")
        ))
    }
}
