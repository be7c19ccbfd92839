//! The scheduler's view for one cycle: a `NodeInfo` per node plus the cluster's other objects
//! (`nodeInfoSnapshot` and the listers upstream plugins read).

use crate::dra::assumed::{AssumedClaims, ClaimAllocation};
use crate::model::affinity::AffinityTerm;
use crate::model::cluster::Cluster;
use crate::model::dra::objects::{AllocatedState, Claim};
use crate::model::intern::Str;
use crate::model::labels::Selector;
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
    /// Bound pods with required anti-affinity, by the namespaces their terms can select.
    anti_affinity_terms: TermIndex,
    /// Bound pods whose affinity terms score other pods (required affinity, preferred terms).
    scoring_terms: TermIndex,
    /// ResourceClaims that pods placed in this snapshot allocated, over the cluster's.
    assumed_claims: AssumedClaims,
    /// The cluster's pods by UID, built when an explanation first names a claim's pod.
    pods_by_uid: std::sync::OnceLock<HashMap<Str, Arc<Pod>>>,
}

/// Bound pods with a kind of pod-affinity term, filed under every namespace their terms list;
/// terms that select namespaces by label may concern any namespace and are kept apart. Walking
/// the pods of one namespace's entry touches a fraction of the cluster's pods.
#[derive(Clone, Debug, Default)]
struct TermIndex {
    by_namespace: HashMap<Str, Vec<(usize, Arc<Pod>)>>,
    any_namespace: Vec<(usize, Arc<Pod>)>,
}

impl TermIndex {
    fn add<'a>(
        &mut self,
        node: usize,
        pod: &Arc<Pod>,
        terms: impl Iterator<Item = &'a AffinityTerm>,
    ) {
        let mut namespaces: Vec<Str> = Vec::new();
        for t in terms {
            if !matches!(t.namespace_selector, Selector::Nothing) {
                self.any_namespace.push((node, pod.clone()));
                return;
            }
            namespaces.extend(t.namespaces.iter().copied());
        }
        namespaces.sort();
        namespaces.dedup();
        for ns in namespaces {
            self.by_namespace
                .entry(ns)
                .or_default()
                .push((node, pod.clone()));
        }
    }

    /// Forgets the pod with this UID wherever it is filed.
    fn remove(&mut self, uid: Str) {
        let mut forget = |v: &mut Vec<(usize, Arc<Pod>)>| {
            if let Some(i) = v.iter().position(|(_, p)| p.uid == uid) {
                v.swap_remove(i);
            }
        };
        self.by_namespace.values_mut().for_each(&mut forget);
        forget(&mut self.any_namespace);
    }

    fn concerning(&self, namespace: Str) -> impl Iterator<Item = &(usize, Arc<Pod>)> {
        self.by_namespace
            .get(&namespace)
            .into_iter()
            .flatten()
            .chain(&self.any_namespace)
    }
}

/// A pod's affinity terms that score other pods: required affinity and the preferred terms.
fn scoring_terms(pod: &Pod) -> impl Iterator<Item = &AffinityTerm> {
    let a = &pod.affinity;
    a.required_affinity
        .iter()
        .chain(a.preferred_affinity.iter().map(|w| &w.term))
        .chain(a.preferred_anti_affinity.iter().map(|w| &w.term))
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
        let mut snapshot = Snapshot {
            cluster: cluster.clone(),
            nodes,
            index,
            nominated: Vec::new(),
            namespace_pods: HashMap::new(),
            anti_affinity_terms: TermIndex::default(),
            scoring_terms: TermIndex::default(),
            assumed_claims: AssumedClaims::default(),
            pods_by_uid: std::sync::OnceLock::new(),
        };
        for pod in &cluster.pods {
            if Some(pod.uid) == exclude {
                continue;
            }
            match pod.node_name {
                Some(name) => {
                    if let Some(i) = snapshot.node_index(name) {
                        snapshot.bind(i, pod.clone());
                    }
                }
                None => {
                    if pod.nominated_node_name.is_some() {
                        snapshot.nominated.push(pod.clone());
                    }
                }
            }
        }
        snapshot
    }

    /// Adds a pod to its node and to the indexes.
    fn bind(&mut self, i: usize, pod: Arc<Pod>) {
        self.namespace_pods
            .entry(pod.namespace)
            .or_default()
            .push((i, pod.clone()));
        let a = &pod.affinity;
        if !a.required_anti_affinity.is_empty() {
            self.anti_affinity_terms
                .add(i, &pod, a.required_anti_affinity.iter());
        }
        if scoring_terms(&pod).next().is_some() {
            self.scoring_terms.add(i, &pod, scoring_terms(&pod));
        }
        self.nodes[i].add_pod(pod);
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
                self.bind(i, pod);
                true
            }
            None => false,
        }
    }

    /// Takes a bound pod off its node and out of the indexes (an eviction, a preemption victim);
    /// returns it, or `None` when no node holds a pod with this UID there.
    pub fn remove(&mut self, node: Str, uid: Str) -> Option<Arc<Pod>> {
        let i = self.node_index(node)?;
        let pod = self.nodes[i].pods.iter().find(|p| p.uid == uid)?.clone();
        self.nodes[i].remove_pod(uid);
        if let Some(pods) = self.namespace_pods.get_mut(&pod.namespace)
            && let Some(k) = pods.iter().position(|(_, p)| p.uid == uid)
        {
            pods.swap_remove(k);
        }
        if !pod.affinity.required_anti_affinity.is_empty() {
            self.anti_affinity_terms.remove(uid);
        }
        if scoring_terms(&pod).next().is_some() {
            self.scoring_terms.remove(uid);
        }
        Some(pod)
    }

    /// Bound pods with required anti-affinity whose terms may select pods of `namespace`.
    pub fn anti_affinity_concerning(
        &self,
        namespace: Str,
    ) -> impl Iterator<Item = &(usize, Arc<Pod>)> {
        self.anti_affinity_terms.concerning(namespace)
    }

    /// Bound pods with scoring affinity terms (required affinity, preferred terms) that may
    /// select pods of `namespace`.
    pub fn scoring_terms_concerning(
        &self,
        namespace: Str,
    ) -> impl Iterator<Item = &(usize, Arc<Pod>)> {
        self.scoring_terms.concerning(namespace)
    }

    /// The bound pods of a namespace, each with its node's index.
    pub fn pods_in_namespace(&self, namespace: Str) -> &[(usize, Arc<Pod>)] {
        self.namespace_pods
            .get(&namespace)
            .map_or(&[], Vec::as_slice)
    }

    /// A pod of the cluster by UID.
    pub fn pod_by_uid(&self, uid: Str) -> Option<&Arc<Pod>> {
        self.pods_by_uid
            .get_or_init(|| {
                self.cluster
                    .pods
                    .iter()
                    .map(|p| (p.uid, p.clone()))
                    .collect()
            })
            .get(&uid)
    }

    /// A ResourceClaim of the namespace, as allocated so far.
    pub fn claim(&self, namespace: Str, name: Str) -> Option<&Arc<Claim>> {
        self.assumed_claims
            .claim(&self.cluster.dra, namespace, name)
    }

    /// The devices claims have taken, those of pods placed in this snapshot included.
    pub fn allocated_devices(&self, consumable_capacity: bool) -> &AllocatedState {
        self.assumed_claims
            .allocated_devices(&self.cluster.dra, consumable_capacity)
    }

    /// Records what Reserve allocated for `pod` on `node`: the claims become allocated there,
    /// reserved for the pod, and their devices taken.
    pub fn allocate_claims(&mut self, pod: &Pod, node: Str, allocations: &[ClaimAllocation]) {
        let cluster = &self.cluster;
        self.assumed_claims
            .allocate(&cluster.dra, &cluster.strings, pod, node, allocations);
    }

    /// What the resourceclaim controller does for a pod being created: a claim from each
    /// ResourceClaimTemplate the pod names (`AssumedClaims::generate_template_claims`).
    pub fn generate_template_claims(&mut self, pod: &mut Pod) {
        self.assumed_claims
            .generate_template_claims(&self.cluster.dra, pod);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    use crate::plugins::registry::default_framework;
    use crate::release::Release;
    use crate::testing::{cluster, node, pod};
    use serde_json::json;

    /// Taking a pod off its node leaves the snapshot as if it had never been there: every
    /// plugin (resources, ports, spreading, both kinds of affinity terms) answers the same.
    #[test]
    fn removing_a_pod_equals_building_without_it() {
        let mut anti = pod("ns/anti", Some("a"), "1", 0, json!({"app": "db"}));
        anti["spec"]["affinity"] = json!({
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}]},
            "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}}]}});
        anti["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 80}]);
        let c = cluster(vec![
            node("a", "4", json!({"zone": "z1"})),
            node("b", "4", json!({"zone": "z2"})),
            anti,
            pod("ns/web-1", Some("b"), "1", 0, json!({"app": "web"})),
        ]);
        let mut new = pod("ns/new", None, "3", 0, json!({"app": "web"}));
        new["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 80}]);
        new["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": "zone",
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}]);
        let new = crate::model::cluster::convert_pod(
            serde_json::from_value(new).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod();
        let fw = default_framework(Release::OLDEST.into());
        let explain = |s: &Snapshot| {
            serde_json::to_value(crate::explain::build(&fw, s, &new, &fw.schedule(s, &new)))
                .unwrap()
        };
        let mut removed = Snapshot::new(c.clone(), None);
        let before = explain(&removed);
        let uid = Str::new("ns/anti");
        assert_eq!(removed.remove(Str::new("a"), uid).unwrap().uid, uid);
        assert!(removed.remove(Str::new("a"), uid).is_none());
        let without = explain(&Snapshot::new(c, Some(uid)));
        assert_eq!(explain(&removed), without);
        assert_ne!(before, without);
        assert!(
            removed
                .anti_affinity_concerning(Str::new("ns"))
                .next()
                .is_none()
        );
        assert!(
            removed
                .scoring_terms_concerning(Str::new("ns"))
                .next()
                .is_none()
        );
    }
}
