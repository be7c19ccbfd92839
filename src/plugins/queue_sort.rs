//! PrioritySort (QueueSort): orders the scheduling queue by priority, then arrival. A what-if
//! schedules one pod at a time, so the plugin only matters for configuration validation.

use crate::framework::plugin::{Plugin, Points};

pub const NAME: &str = "PrioritySort";

pub struct PrioritySort;

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::QUEUE_SORT
    }
}
