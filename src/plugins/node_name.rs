//! NodeName (Filter): a pod that names a node fits only that node.

use crate::framework::cycle_state::CycleState;
use crate::framework::facts::Detail;
use crate::framework::plugin::{Cx, Plugin, Points, Reuse};
use crate::framework::status::Status;
use crate::model::node_info::NodeInfo;

pub const NAME: &str = "NodeName";
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::FILTER
    }

    fn filter(&self, cx: &Cx, _state: &CycleState, node: &NodeInfo) -> Status {
        match cx.pod.node_name {
            Some(name) if name != node.name() => {
                cx.with_fact(Status::unresolvable(ERR_REASON), || Detail::NodeName(name))
            }
            _ => Status::success(),
        }
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}
