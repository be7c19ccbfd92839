//! `framework.NodeInfo`: a node with the pods on it and what they add up to. Adding or removing
//! one pod is cheap (preemption and replica placement do it constantly).

use super::intern::{Entry, Str};
use super::node::Node;
use super::pod::{HostPort, Pod};
use super::resource::Resource;
use std::collections::HashMap;
use std::sync::Arc;

/// `ImageStateSummary`: an image's size and on how many nodes of the cluster it is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageState {
    pub size: i64,
    pub num_nodes: usize,
}

#[derive(Clone, Debug)]
pub struct NodeInfo {
    pub node: Arc<Node>,
    pub pods: Vec<Arc<Pod>>,
    pub pods_with_affinity: Vec<Arc<Pod>>,
    pub pods_with_required_anti_affinity: Vec<Arc<Pod>>,
    pub requested: Resource,
    /// Only cpu and memory: requests with the 100m / 200Mi defaults for scoring.
    pub non_zero_requested: Resource,
    /// `HostPortInfo` as a set: one entry per (ip, protocol, port).
    pub used_ports: Vec<HostPort>,
    pub image_states: Arc<HashMap<Str, ImageState>>,
    /// `PVCRefCounts`: pods on this node using each `namespace/claim`.
    pub pvc_ref_counts: HashMap<(Str, Str), i32>,
    /// Counts the changes made to this node's pods: what was computed of a node at one
    /// generation still holds at the same generation (`framework::cache`).
    pub generation: u64,
}

/// Two host ports conflict on the same protocol and port when their IPs are equal or either is
/// `0.0.0.0`.
fn ports_conflict(used: &HostPort, want: &HostPort) -> bool {
    static ANY: Entry = Entry::constant("0.0.0.0");
    let any = Str::from_static(&ANY);
    used.protocol == want.protocol
        && used.port == want.port
        && (want.ip == any || used.ip == any || used.ip == want.ip)
}

impl NodeInfo {
    pub fn new(node: Arc<Node>, image_states: Arc<HashMap<Str, ImageState>>) -> NodeInfo {
        NodeInfo {
            node,
            pods: Vec::new(),
            pods_with_affinity: Vec::new(),
            pods_with_required_anti_affinity: Vec::new(),
            requested: Resource::default(),
            non_zero_requested: Resource::default(),
            used_ports: Vec::new(),
            image_states,
            pvc_ref_counts: HashMap::new(),
            generation: 0,
        }
    }

    pub fn name(&self) -> Str {
        self.node.name
    }

    pub fn allocatable(&self) -> &Resource {
        &self.node.allocatable
    }

    pub fn add_pod(&mut self, pod: Arc<Pod>) {
        if pod.affinity.has_affinity {
            self.pods_with_affinity.push(pod.clone());
        }
        if pod.affinity.has_required_anti_affinity() {
            self.pods_with_required_anti_affinity.push(pod.clone());
        }
        self.update(&pod, 1);
        self.pods.push(pod);
        self.generation += 1;
    }

    /// Removes the pod with this UID; false if it is not on the node.
    pub fn remove_pod(&mut self, uid: Str) -> bool {
        fn take(v: &mut Vec<Arc<Pod>>, uid: Str) -> Option<Arc<Pod>> {
            let i = v.iter().position(|p| p.uid == uid)?;
            Some(v.swap_remove(i))
        }
        take(&mut self.pods_with_affinity, uid);
        take(&mut self.pods_with_required_anti_affinity, uid);
        match take(&mut self.pods, uid) {
            Some(pod) => {
                self.update(&pod, -1);
                self.generation += 1;
                true
            }
            None => false,
        }
    }

    fn update(&mut self, pod: &Pod, sign: i64) {
        self.requested.accumulate(&pod.requests, sign);
        self.non_zero_requested.milli_cpu += sign * pod.non_zero_cpu;
        self.non_zero_requested.memory += sign * pod.non_zero_memory;
        for hp in &pod.host_ports {
            if sign > 0 {
                if !self.used_ports.contains(hp) {
                    self.used_ports.push(*hp);
                }
            } else {
                self.used_ports.retain(|p| p != hp);
            }
        }
        for claim in pod.claim_names() {
            let key = (pod.namespace, claim);
            let count = self.pvc_ref_counts.entry(key).or_insert(0);
            *count += sign as i32;
            if *count <= 0 {
                self.pvc_ref_counts.remove(&key);
            }
        }
    }

    /// `HostPortInfo.CheckConflict`.
    pub fn port_conflicts(&self, want: &HostPort) -> bool {
        self.used_ports
            .iter()
            .any(|used| ports_conflict(used, want))
    }

    /// The pods on the node holding a port that conflicts with `want`.
    pub fn port_holders<'a>(&'a self, want: &'a HostPort) -> impl Iterator<Item = &'a Arc<Pod>> {
        self.pods
            .iter()
            .filter(|p| p.host_ports.iter().any(|used| ports_conflict(used, want)))
    }
}
