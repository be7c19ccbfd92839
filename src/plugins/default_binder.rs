//! DefaultBinder (Bind): writes the Binding. kubectl-sched never writes to a cluster, so this only
//! exists so a configuration that names it validates as upstream.

use crate::framework::plugin::{Plugin, Points};

pub const NAME: &str = "DefaultBinder";

pub struct DefaultBinder;

impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::BIND
    }
}
