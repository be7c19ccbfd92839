//! The scheduler's view for one cycle: a `NodeInfo` per node plus the cluster's other objects
//! (`nodeInfoSnapshot` and the listers upstream plugins read).

use crate::model::cluster::Cluster;
use crate::model::intern::Str;
use crate::model::node_info::{ImageState, NodeInfo};
use crate::model::pod::Pod;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct Snapshot {
    pub cluster: Arc<Cluster>,
    pub nodes: Vec<NodeInfo>,
    index: HashMap<Str, usize>,
    /// Pods that preemption nominated to a node but that are not bound yet (the nominator).
    pub nominated: Vec<Arc<Pod>>,
    /// The bound pods of each namespace with their node's index: plugins that count pods
    /// matching a selector in one namespace walk these instead of every pod of every node.
    namespace_pods: HashMap<Str, Vec<(usize, Arc<Pod>)>>,
}

impl Snapshot {
    /// Builds the node infos; `exclude` names a pod (by UID) to leave out, so a bound pod can be
    /// explained as if it were being scheduled now.
    pub fn new(cluster: Arc<Cluster>, exclude: Option<Str>) -> Snapshot {
        // Image states: an image's size as first reported and on how many nodes it is.
        let mut images: HashMap<Str, ImageState> = HashMap::new();
        for node in &cluster.nodes {
            let mut seen = std::collections::HashSet::new();
            for img in &node.images {
                for &name in &img.names {
                    if !seen.insert(name) {
                        continue;
                    }
                    images
                        .entry(name)
                        .and_modify(|s| s.num_nodes += 1)
                        .or_insert(ImageState {
                            size: img.size_bytes,
                            num_nodes: 1,
                        });
                }
            }
        }
        let mut nodes = Vec::with_capacity(cluster.nodes.len());
        let mut index = HashMap::with_capacity(cluster.nodes.len());
        for node in &cluster.nodes {
            let states: HashMap<Str, ImageState> = node
                .images
                .iter()
                .flat_map(|img| img.names.iter())
                .map(|&name| (name, images[&name]))
                .collect();
            index.insert(node.name, nodes.len());
            nodes.push(NodeInfo::new(node.clone(), Arc::new(states)));
        }
        let mut nominated = Vec::new();
        let mut namespace_pods: HashMap<Str, Vec<(usize, Arc<Pod>)>> = HashMap::new();
        for pod in &cluster.pods {
            if Some(pod.uid) == exclude {
                continue;
            }
            match pod.node_name {
                Some(name) => {
                    if let Some(&i) = index.get(&name) {
                        nodes[i].add_pod(pod.clone());
                        namespace_pods
                            .entry(pod.namespace)
                            .or_default()
                            .push((i, pod.clone()));
                    }
                }
                None => {
                    if pod.nominated_node_name.is_some() {
                        nominated.push(pod.clone());
                    }
                }
            }
        }
        Snapshot {
            cluster,
            nodes,
            index,
            nominated,
            namespace_pods,
        }
    }

    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }

    pub fn node_index(&self, name: Str) -> Option<usize> {
        self.index.get(&name).copied()
    }

    pub fn get(&self, name: Str) -> Option<&NodeInfo> {
        self.node_index(name).map(|i| &self.nodes[i])
    }

    /// Nominated pods on a node, other than `pod` itself.
    pub fn nominated_on<'a>(
        &'a self,
        node: Str,
        pod: &'a Pod,
    ) -> impl Iterator<Item = &'a Arc<Pod>> + 'a {
        self.nominated
            .iter()
            .filter(move |p| p.nominated_node_name == Some(node) && p.uid != pod.uid)
    }

    /// Places a pod on a node (replica placement); returns false for an unknown node.
    pub fn assume(&mut self, pod: Arc<Pod>, node: Str) -> bool {
        match self.node_index(node) {
            Some(i) => {
                self.namespace_pods
                    .entry(pod.namespace)
                    .or_default()
                    .push((i, pod.clone()));
                self.nodes[i].add_pod(pod);
                true
            }
            None => false,
        }
    }

    /// The bound pods of a namespace, each with its node's index.
    pub fn pods_in_namespace(&self, namespace: Str) -> &[(usize, Arc<Pod>)] {
        self.namespace_pods
            .get(&namespace)
            .map_or(&[], Vec::as_slice)
    }
}
