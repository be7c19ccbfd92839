//! NodePorts (PreFilter, Filter): host ports the pod asks for must be free on the node.

use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::{Detail, Fact, PodRef, sorted_pods};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes, Reuse};
use crate::framework::status::Status;
use crate::model::node_info::NodeInfo;
use crate::model::pod::HostPort;

pub const NAME: &str = "NodePorts";
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

#[derive(Clone, Debug)]
pub struct PreFilterState {
    want: Vec<HostPort>,
}

pub struct NodePorts {
    pre_filter: StateKey<PreFilterState>,
}

impl NodePorts {
    pub fn new(slots: &mut StateSlots) -> NodePorts {
        NodePorts {
            pre_filter: slots.register("PreFilterNodePorts"),
        }
    }
}

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        if cx.pod.host_ports.is_empty() {
            return (Status::skip(), None);
        }
        state.write(
            self.pre_filter,
            PreFilterState {
                want: cx.pod.host_ports.clone(),
            },
        );
        (Status::success(), None)
    }

    fn filter(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        let Some(s) = state.read(self.pre_filter) else {
            return Status::error("reading \"PreFilterNodePorts\" from cycleState: not found");
        };
        if !s.want.iter().any(|p| node.port_conflicts(p)) {
            return Status::success();
        }
        cx.with_facts(Status::unschedulable(ERR_REASON), || {
            s.want
                .iter()
                .filter(|p| node.port_conflicts(p))
                .map(|p| {
                    let holders = node.port_holders(p).map(|h| PodRef::of(h)).collect();
                    Fact::of(Detail::Port(Box::new((*p, sorted_pods(holders)))))
                })
                .collect()
        })
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}
