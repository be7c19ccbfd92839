//! PodTopologySpread (PreFilter, Filter, PreScore, Score): spreads pods matching the pod's
//! topology spread constraints (or the profile's default constraints) across topology domains.

use k8s_openapi::api::core::v1 as k8s;

pub const NAME: &str = "PodTopologySpread";

/// `PodTopologySpreadArgs.defaultingType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DefaultingType {
    /// The built-in defaults: zone (maxSkew 5) and hostname (maxSkew 3), both ScheduleAnyway.
    #[default]
    System,
    /// `defaultConstraints` as configured.
    List,
}

/// `PodTopologySpreadArgs`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Args {
    pub default_constraints: Vec<k8s::TopologySpreadConstraint>,
    pub defaulting_type: DefaultingType,
}
