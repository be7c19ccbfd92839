//! `CycleState`, typed: one field per stateful plugin instead of upstream's map keyed by string,
//! written by PreFilter/PreScore and read by Filter/Score. Cloning it is how preemption and the
//! nominated-pods pass try "what if" without disturbing the cycle.

use crate::plugins::{
    dynamic_resources, inter_pod_affinity, node_affinity, node_ports,
    node_resources_balanced_allocation, node_resources_fit, node_volume_limits,
    pod_topology_spread, taint_toleration, volume_binding, volume_restrictions, volume_zone,
};

#[derive(Clone, Debug, Default)]
pub struct CycleState {
    /// Plugins whose PreFilter returned Skip: their Filter is not run.
    pub skip_filter: Vec<&'static str>,
    /// Plugins whose PreScore returned Skip: their Score is not run.
    pub skip_score: Vec<&'static str>,

    pub node_affinity: Option<node_affinity::PreFilterState>,
    pub node_affinity_score: Option<node_affinity::PreScoreState>,
    pub node_ports: Option<node_ports::PreFilterState>,
    pub node_resources_fit: Option<node_resources_fit::PreFilterState>,
    pub node_resources_fit_score: Option<node_resources_fit::PreScoreState>,
    pub balanced_allocation: Option<node_resources_balanced_allocation::PreScoreState>,
    pub taint_toleration_score: Option<taint_toleration::PreScoreState>,
    pub pod_topology_spread: Option<pod_topology_spread::PreFilterState>,
    pub pod_topology_spread_score: Option<pod_topology_spread::PreScoreState>,
    pub inter_pod_affinity: Option<inter_pod_affinity::PreFilterState>,
    pub inter_pod_affinity_score: Option<inter_pod_affinity::PreScoreState>,
    pub volume_restrictions: Option<volume_restrictions::PreFilterState>,
    pub volume_binding: Option<volume_binding::PreFilterState>,
    pub volume_zone: Option<volume_zone::PreFilterState>,
    pub node_volume_limits: Option<node_volume_limits::PreFilterState>,
    /// Set when DynamicResources' PreFilter ran (its PostFilter fails without it).
    pub dynamic_resources: Option<dynamic_resources::PreFilterState>,
}

impl CycleState {
    pub fn skips_filter(&self, plugin: &str) -> bool {
        self.skip_filter.contains(&plugin)
    }

    pub fn skips_score(&self, plugin: &str) -> bool {
        self.skip_score.contains(&plugin)
    }
}
