//! Plugin arguments (`pluginConfig[].args`): the v1 `<Plugin>Args` kinds, decoded strictly
//! (`decode`), defaulted (`defaults`, as `apis/config/v1/defaults.go`) and validated
//! (`validation`, as `apis/config/validation/validation_pluginargs.go`).

mod decode;
mod defaults;
mod validation;

pub use decode::{DecodeError, decode};
pub use validation::node_resources_fit_error;

use super::node::Node;
use k8s_openapi::api::core::v1 as k8s;

/// `config.MaxCustomPriorityScore`: shape scores go up to 10 and are scaled to `MaxNodeScore`.
pub const MAX_CUSTOM_PRIORITY_SCORE: i32 = 10;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceSpec {
    pub name: String,
    pub weight: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Shape {
    #[serde(rename = "Utilization")]
    pub utilization: i32,
    #[serde(rename = "Score")]
    pub score: i32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScoringStrategy {
    pub kind: String,
    pub resources: Vec<ResourceSpec>,
    /// `requestedToCapacityRatio.shape`, when `requestedToCapacityRatio` is given.
    pub shape: Option<Vec<Shape>>,
}

/// The arguments of one `pluginConfig` entry.
#[derive(Clone, Debug, PartialEq)]
pub enum Args {
    NodeResourcesFit {
        ignored_resources: Vec<String>,
        ignored_resource_groups: Vec<String>,
        scoring_strategy: Option<ScoringStrategy>,
    },
    BalancedAllocation {
        resources: Vec<ResourceSpec>,
    },
    PodTopologySpread {
        default_constraints: Vec<k8s::TopologySpreadConstraint>,
        defaulting_type: String,
    },
    InterPodAffinity {
        hard_pod_affinity_weight: Option<i32>,
        ignore_preferred_terms_of_existing_pods: bool,
    },
    NodeAffinity {
        added_affinity: Option<k8s::NodeAffinity>,
    },
    DefaultPreemption {
        min_candidate_nodes_percentage: Option<i32>,
        min_candidate_nodes_absolute: Option<i32>,
    },
    VolumeBinding {
        bind_timeout_seconds: Option<i64>,
        shape: Option<Vec<Shape>>,
    },
    DynamicResources {
        filter_timeout: Option<i64>,
        /// Nanoseconds; a field since 1.35.
        binding_timeout: Option<i64>,
    },
    /// A plugin without an args kind: kept as written, never looked at.
    Raw(Option<Node>),
}

/// The v1 kinds of plugin arguments, by plugin name.
pub(super) const KINDS: [&str; 8] = [
    "DefaultPreemption",
    "InterPodAffinity",
    "NodeResourcesBalancedAllocation",
    "NodeResourcesFit",
    "PodTopologySpread",
    "VolumeBinding",
    "NodeAffinity",
    "DynamicResources",
];

/// Whether `<kind>` is registered in kubescheduler.config.k8s.io/v1.
pub fn is_args_kind(kind: &str) -> bool {
    kind.strip_suffix("Args")
        .is_some_and(|p| KINDS.contains(&p))
}
