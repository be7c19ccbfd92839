//! InterPodAffinity (PreFilter, Filter, PreScore, Score): the pod's required and preferred
//! (anti-)affinity to other pods, and existing pods' anti-affinity against it.

pub const NAME: &str = "InterPodAffinity";

/// `InterPodAffinityArgs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    pub hard_pod_affinity_weight: i32,
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}
