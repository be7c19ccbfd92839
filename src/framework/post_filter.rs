//! What PostFilter plugins report: their status and, from preemption, the candidates it found
//! and the node it chose.

use super::extender;
use super::status::Status;
use super::victims::Candidate;
use crate::model::intern::Str;

/// What a PostFilter plugin did.
#[derive(Clone, Debug)]
pub struct PostFilterOutcome {
    pub status: Status,
    /// What preemption found (DefaultPreemption).
    pub preemption: Option<Preemption>,
}

#[derive(Clone, Debug, Default)]
pub struct Preemption {
    /// Why the pod may not preempt at all (`PodEligibleToPreemptOthers`).
    pub not_eligible: Option<String>,
    /// Nodes whose filter failure is not UnschedulableAndUnresolvable.
    pub potential_nodes: Vec<Str>,
    /// Every node where evicting pods makes room, sorted by node name.
    pub candidates: Vec<Candidate>,
    /// Candidates still tied after every criterion; the real scheduler picks one arbitrarily.
    pub tied: Vec<Str>,
    /// The alphabetically first of `tied`.
    pub nominated_node: Option<Str>,
    /// Why preemption fails on each potential node that is not a candidate.
    pub failures: Vec<(Str, Status)>,
    /// How many candidates the real scheduler would gather before choosing.
    pub sampled_candidates: usize,
    /// Candidates an extender's preempt verb left out: (node, extender).
    pub dropped_by_extenders: Vec<(Str, &'static str)>,
    /// The requests made to extenders' preempt verbs, in order.
    pub extender_calls: Vec<extender::Call>,
    /// The PostFilter message (empty when a node is nominated).
    pub message: String,
}
