//! What filtering and scoring share (`common.go`): the constraints of a pod or of the defaults,
//! with their selectors, which nodes are domains of a constraint, and the counting of the pods
//! a constraint matches per node.

use super::*;

/// `whenUnsatisfiable`: which constraints a phase reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Action {
    DoNotSchedule,
    ScheduleAnyway,
}

impl Action {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Action::DoNotSchedule => "DoNotSchedule",
            Action::ScheduleAnyway => "ScheduleAnyway",
        }
    }

    /// How upstream's error messages call the constraints of this action.
    pub(super) fn hardness(self) -> &'static str {
        match self {
            Action::DoNotSchedule => "hard",
            Action::ScheduleAnyway => "soft",
        }
    }
}

/// A constraint with its selector parsed and its defaults applied (`topologySpreadConstraint`).
#[derive(Clone, Debug)]
pub(super) struct Constraint {
    pub(super) max_skew: i32,
    pub(super) topology_key: Str,
    /// Hostname domains are one node each: scoring counts them per node instead of per domain.
    pub(super) hostname: bool,
    pub(super) selector: Selector,
    pub(super) min_domains: i32,
    pub(super) honor_node_affinity: bool,
    pub(super) honor_node_taints: bool,
}

/// Whether a node is part of a constraint's domains (`matchNodeInclusionPolicies`), with the
/// pod's node affinity and the node's taints evaluated at most once per node.
pub(super) struct Inclusion<'a> {
    pub(super) pod: &'a Pod,
    pub(super) node: &'a Node,
    pub(super) affinity: Option<bool>,
    pub(super) tolerated: Option<bool>,
}

impl<'a> Inclusion<'a> {
    pub(super) fn new(pod: &'a Pod, node: &'a Node) -> Self {
        Inclusion {
            pod,
            node,
            affinity: None,
            tolerated: None,
        }
    }

    pub(super) fn includes(&mut self, c: &Constraint) -> bool {
        let (pod, node) = (self.pod, self.node);
        if c.honor_node_affinity
            && !*self
                .affinity
                .get_or_insert_with(|| pod.required_node_affinity.matches(&node.labels, node.name))
        {
            return false;
        }
        if c.honor_node_taints
            && !*self.tolerated.get_or_insert_with(|| {
                first_untolerated_do_not_schedule(&node.taints, &pod.tolerations).is_none()
            })
        {
            return false;
        }
        true
    }
}

/// `nodeLabelsMatchSpreadConstraints`: the node has every constraint's topology key.
pub(super) fn has_all_keys(labels: &Labels, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| labels.contains_key(c.topology_key))
}

/// `filterTopologySpreadConstraints` with MatchLabelKeysInPodTopologySpread and
/// NodeInclusionPolicyInPodTopologySpread on, as in v1.34: the pod's values of `matchLabelKeys`
/// join the selector (a nil selector stays one that selects nothing).
pub(super) fn parse_constraints(
    list: &[k8s::TopologySpreadConstraint],
    pod_labels: &Labels,
    action: Action,
    strings: &Interner,
) -> Result<Vec<Constraint>, String> {
    let mut out = Vec::new();
    for c in list
        .iter()
        .filter(|c| c.when_unsatisfiable == action.as_str())
    {
        let mut selector = Selector::from_label_selector(c.label_selector.as_ref(), strings)?;
        let pairs: Vec<(Str, Str)> = c
            .match_label_keys
            .iter()
            .flatten()
            .filter_map(|key| {
                pod_labels
                    .get_str(key)
                    .map(|value| (strings.intern(key), value))
            })
            .collect();
        if !pairs.is_empty()
            && let Selector::Requirements(reqs) = &selector
        {
            let mut merged = Selector::from_set(&Labels::from_pairs(pairs));
            merged.add(reqs.iter().cloned());
            selector = merged;
        }
        out.push(Constraint {
            max_skew: c.max_skew,
            topology_key: strings.intern(&c.topology_key),
            hostname: c.topology_key == LABEL_HOSTNAME,
            selector,
            min_domains: c.min_domains.unwrap_or(1),
            honor_node_affinity: c.node_affinity_policy.as_deref().is_none_or(|p| p == HONOR),
            honor_node_taints: c.node_taints_policy.as_deref() == Some(HONOR),
        });
    }
    Ok(out)
}

/// `ParseGroupVersion`: `None` for a string with more than one `/`.
pub(super) fn parse_group_version(api_version: &str) -> Option<(&str, &str)> {
    if api_version.is_empty() || api_version == "/" {
        return Some(("", ""));
    }
    match api_version.matches('/').count() {
        0 => Some(("", api_version)),
        1 => api_version.split_once('/'),
        _ => None,
    }
}

/// `helper.DefaultSelector`: the selectors of the pod's Services merged, then its controller's
/// (a ReplicationController's merged into the same set, a ReplicaSet's or StatefulSet's
/// requirements added).
pub fn default_selector(pod: &Pod, workloads: &Workloads) -> Selector {
    let mut set = Labels::default();
    let services = workloads
        .services
        .get(&pod.namespace)
        .into_iter()
        .flatten()
        .flatten();
    for service in services {
        // A Service with an empty selector selects every pod; one without a selector, none.
        if service.iter().all(|(k, v)| pod.labels.get(k) == Some(v)) {
            for (k, v) in service.iter() {
                set.insert(k, v);
            }
        }
    }
    let mut selector = Selector::from_set(&set);
    let Some(owner) = pod.controller() else {
        return selector;
    };
    let Some(group_version) = parse_group_version(&owner.api_version) else {
        return selector;
    };
    let key = (pod.namespace, owner.name);
    let workload_selector = match (group_version, owner.kind.as_str()) {
        (("", "v1"), "ReplicationController") => {
            if let Some(rc) = workloads.replication_controllers.get(&key) {
                for (k, v) in rc.iter().flat_map(Labels::iter) {
                    set.insert(k, v);
                }
                selector = Selector::from_set(&set);
            }
            None
        }
        (("apps", "v1"), "ReplicaSet") => workloads.replica_sets.get(&key),
        (("apps", "v1"), "StatefulSet") => workloads.stateful_sets.get(&key),
        _ => None,
    };
    if let Some(Some(other)) = workload_selector {
        selector.add(other.requirements().iter().cloned());
    }
    selector
}

/// Whether `countPodsMatchSelector` counts this pod of a node's: terminating pods and pods of
/// other namespaces never count, and an empty selector counts nothing.
pub(super) fn counted(pod: &Pod, namespace: Str, selector: &Selector) -> bool {
    pod.namespace == namespace
        && pod.deletion_timestamp.is_none()
        && !selector.is_empty()
        && selector.matches(&pod.labels)
}

/// Counts, per node and constraint, the pods on the node that `counted` accepts, going through
/// each node's pods once. `include` marks the slots of constraints that do not count on a node
/// as `EXCLUDED`. Returns `nodes.len() * constraints.len()` slots, node by node.
pub(super) fn count_matching_pods(
    snapshot: &Snapshot,
    constraints: &[Constraint],
    namespace: Str,
    include: impl Fn(&NodeInfo, &mut [i64]) + Sync,
) -> Vec<i64> {
    let nodes = &snapshot.nodes;
    let width = constraints.len();
    let mut slots = vec![0; nodes.len() * width];
    if width == 0 {
        return slots;
    }
    if nodes.len() >= PARALLEL_MIN_NODES {
        nodes
            .par_iter()
            .zip(slots.par_chunks_mut(width))
            .for_each(|(n, s)| include(n, s));
    } else {
        nodes
            .iter()
            .zip(slots.chunks_mut(width))
            .for_each(|(n, s)| include(n, s));
    }
    // Only pods of the incoming pod's namespace ever count.
    for (node, p) in snapshot.pods_in_namespace(namespace) {
        if p.deletion_timestamp.is_some() {
            continue;
        }
        let node_slots = &mut slots[node * width..(node + 1) * width];
        for (slot, c) in node_slots.iter_mut().zip(constraints) {
            if *slot != EXCLUDED && !c.selector.is_empty() && c.selector.matches(&p.labels) {
                *slot += 1;
            }
        }
    }
    slots
}
