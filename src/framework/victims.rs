//! The victims preemption would evict on a candidate node, as preemption finds them and the
//! extenders' preempt verb reviews them (upstream's `Victims`).

use crate::model::intern::Str;
use crate::model::pod::Pod;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct Victim {
    pub pod: Arc<Pod>,
    /// PodDisruptionBudgets (`namespace/name`) whose budget this eviction would exceed.
    pub violates: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Candidate {
    pub node: Str,
    /// Most important first, as upstream orders them.
    pub victims: Vec<Victim>,
    pub num_pdb_violations: usize,
}
