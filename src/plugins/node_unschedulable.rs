//! NodeUnschedulable (Filter): cordoned nodes reject pods that do not tolerate the
//! `node.kubernetes.io/unschedulable:NoSchedule` taint.

use crate::framework::cycle_state::CycleState;
use crate::framework::facts::Detail;
use crate::framework::plugin::{Cx, Plugin, Points, Reuse};
use crate::framework::status::Status;
use crate::model::intern::{Entry, Str};
use crate::model::node_info::NodeInfo;
use crate::model::taints::{Effect, Taint, tolerated};

pub const NAME: &str = "NodeUnschedulable";
pub const ERR_REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";

pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::FILTER
    }

    fn filter(&self, cx: &Cx, _state: &CycleState, node: &NodeInfo) -> Status {
        if !node.node.unschedulable {
            return Status::success();
        }
        static KEY: Entry = Entry::constant("node.kubernetes.io/unschedulable");
        let taint = Taint {
            key: Str::from_static(&KEY),
            value: Str::empty(),
            effect: Some(Effect::NoSchedule),
        };
        if tolerated(&cx.pod.tolerations, &taint) {
            return Status::success();
        }
        // The cordon: spec.unschedulable, which the pod would tolerate as this taint.
        cx.with_fact(Status::unresolvable(ERR_REASON_UNSCHEDULABLE), || {
            Detail::Taint(taint)
        })
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}
