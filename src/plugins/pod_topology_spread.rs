//! PodTopologySpread (PreFilter, Filter, PreScore, Score): spreads pods matching the pod's
//! topology spread constraints (or the profile's default constraints) across topology domains.
//!
//! PreFilter counts the matching pods of every domain once (DoNotSchedule constraints) and keeps
//! the two smallest domains per constraint, so Filter is a lookup per constraint; AddPod/RemovePod
//! adjust those counts for preemption and nominated pods. PreScore counts the domains of the
//! feasible nodes for the ScheduleAnyway constraints; Score reads them.

use crate::framework::MAX_NODE_SCORE;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes};
use crate::framework::snapshot::Snapshot;
use crate::framework::status::Status;
use crate::model::cluster::{Cluster, Workloads};
use crate::model::intern::{Interner, Str};
use crate::model::labels::{Labels, Selector};
use crate::model::node::{LABEL_HOSTNAME, LABEL_ZONE, Node};
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use crate::model::taints::first_untolerated_do_not_schedule;
use k8s_openapi::api::core::v1 as k8s;
use rayon::prelude::*;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

pub const NAME: &str = "PodTopologySpread";
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

const HONOR: &str = "Honor";

/// Below this many nodes, counting on several threads costs more than it saves.
const PARALLEL_MIN_NODES: usize = 256;
/// A per-node count slot for a constraint that does not count on that node.
const EXCLUDED: i64 = -1;
/// The "no domain yet" value of a critical path (upstream's `math.MaxInt32`).
const NO_DOMAIN: i64 = i32::MAX as i64;

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

/// The constraints `DefaultingType::System` applies to pods without their own.
pub fn system_default_constraints() -> Vec<k8s::TopologySpreadConstraint> {
    [(LABEL_HOSTNAME, 3), (LABEL_ZONE, 5)]
        .into_iter()
        .map(|(key, max_skew)| k8s::TopologySpreadConstraint {
            topology_key: key.to_string(),
            when_unsatisfiable: Action::ScheduleAnyway.as_str().to_string(),
            max_skew,
            ..Default::default()
        })
        .collect()
}

/// `whenUnsatisfiable`: which constraints a phase reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    DoNotSchedule,
    ScheduleAnyway,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::DoNotSchedule => "DoNotSchedule",
            Action::ScheduleAnyway => "ScheduleAnyway",
        }
    }

    /// How upstream's error messages call the constraints of this action.
    fn hardness(self) -> &'static str {
        match self {
            Action::DoNotSchedule => "hard",
            Action::ScheduleAnyway => "soft",
        }
    }
}

/// A constraint with its selector parsed and its defaults applied (`topologySpreadConstraint`).
#[derive(Clone, Debug)]
struct Constraint {
    max_skew: i32,
    topology_key: Str,
    /// Hostname domains are one node each: scoring counts them per node instead of per domain.
    hostname: bool,
    selector: Selector,
    min_domains: i32,
    honor_node_affinity: bool,
    honor_node_taints: bool,
}

/// Whether a node is part of a constraint's domains (`matchNodeInclusionPolicies`), with the
/// pod's node affinity and the node's taints evaluated at most once per node.
struct Inclusion<'a> {
    pod: &'a Pod,
    node: &'a Node,
    affinity: Option<bool>,
    tolerated: Option<bool>,
}

impl<'a> Inclusion<'a> {
    fn new(pod: &'a Pod, node: &'a Node) -> Self {
        Inclusion {
            pod,
            node,
            affinity: None,
            tolerated: None,
        }
    }

    fn includes(&mut self, c: &Constraint) -> bool {
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
fn has_all_keys(labels: &Labels, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| labels.contains_key(c.topology_key))
}

/// `filterTopologySpreadConstraints` with MatchLabelKeysInPodTopologySpread and
/// NodeInclusionPolicyInPodTopologySpread on, as in v1.34: the pod's values of `matchLabelKeys`
/// join the selector (a nil selector stays one that selects nothing).
fn parse_constraints(
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
fn parse_group_version(api_version: &str) -> Option<(&str, &str)> {
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
fn counted(pod: &Pod, namespace: Str, selector: &Selector) -> bool {
    pod.namespace == namespace
        && pod.deletion_timestamp.is_none()
        && !selector.is_empty()
        && selector.matches(&pod.labels)
}

/// Counts, per node and constraint, the pods on the node that `counted` accepts, going through
/// each node's pods once. `include` marks the slots of constraints that do not count on a node
/// as `EXCLUDED`. Returns `nodes.len() * constraints.len()` slots, node by node.
fn count_matching_pods(
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

/// Matching pods per domain of one constraint: the counts PreFilter found, shared by every copy
/// of the state, plus what AddPod/RemovePod changed in this copy.
#[derive(Clone, Debug)]
struct DomainCounts {
    base: Arc<HashMap<Str, i64>>,
    changed: Vec<(Str, i64)>,
}

impl DomainCounts {
    fn get(&self, domain: Str) -> i64 {
        match self.changed.iter().find(|(d, _)| *d == domain) {
            Some(&(_, n)) => n,
            None => self.base.get(&domain).copied().unwrap_or(0),
        }
    }

    /// Adds `delta` to a domain, creating it as upstream's map does; returns the new count.
    fn add(&mut self, domain: Str, delta: i64) -> i64 {
        if let Some((_, n)) = self.changed.iter_mut().find(|(d, _)| *d == domain) {
            *n += delta;
            return *n;
        }
        let n = self.base.get(&domain).copied().unwrap_or(0) + delta;
        self.changed.push((domain, n));
        n
    }

    /// How many domains there are.
    fn len(&self) -> usize {
        self.base.len()
            + self
                .changed
                .iter()
                .filter(|(d, _)| !self.base.contains_key(d))
                .count()
    }
}

/// The two domains with the fewest matching pods (`criticalPaths`): `[0]` always holds the
/// minimum, `[1]` a count at least as large. Exact as long as only one domain changes, which is
/// all preemption and the nominated-pods pass do to one copy of the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CriticalPaths([(Str, i64); 2]);

impl CriticalPaths {
    fn new() -> Self {
        CriticalPaths([(Str::empty(), NO_DOMAIN); 2])
    }

    fn update(&mut self, domain: Str, num: i64) {
        let p = &mut self.0;
        let existing = if domain == p[0].0 {
            Some(0)
        } else if domain == p[1].0 {
            Some(1)
        } else {
            None
        };
        match existing {
            Some(i) => {
                p[i].1 = num;
                if p[0].1 > p[1].1 {
                    p.swap(0, 1);
                }
            }
            None if num < p[0].1 => {
                p[1] = p[0];
                p[0] = (domain, num);
            }
            None if num < p[1].1 => p[1] = (domain, num),
            None => {}
        }
    }
}

/// What Filter reads: the DoNotSchedule constraints and their domain counts.
#[derive(Clone, Debug)]
pub struct PreFilterState {
    constraints: Arc<[Constraint]>,
    /// Per constraint: the incoming pod matches its selector, so it adds itself to a domain.
    self_match: Arc<[bool]>,
    counts: Vec<DomainCounts>,
    critical_paths: Vec<CriticalPaths>,
}

impl PreFilterState {
    /// `minMatchNum`: the global minimum, 0 while there are fewer domains than `minDomains`.
    fn min_match_num(&self, i: usize, min_domains: i32) -> i64 {
        if self.counts[i].len() < usize::try_from(min_domains).unwrap_or(0) {
            0
        } else {
            self.critical_paths[i].0[0].1
        }
    }

    /// `updateWithPod`: a pod of the incoming pod's namespace added to (+1) or removed from (-1)
    /// a node. Unlike PreFilter's count, a terminating pod and an empty selector still count.
    fn update_with_pod(&mut self, updated: &Pod, incoming: &Pod, node: &Node, delta: i64) {
        if updated.namespace != incoming.namespace || !has_all_keys(&node.labels, &self.constraints)
        {
            return;
        }
        let mut inclusion = Inclusion::new(incoming, node);
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(&updated.labels) || !inclusion.includes(c) {
                continue;
            }
            let domain = node.labels.get(c.topology_key).unwrap_or_default();
            let n = self.counts[i].add(domain, delta);
            self.critical_paths[i].update(domain, n);
        }
    }
}

#[derive(Debug)]
struct PreScoreData {
    constraints: Vec<Constraint>,
    /// Nodes missing a topology key when every key is required: scored 0.
    ignored: HashSet<Str>,
    /// The nodes PreScore was given, in the order NormalizeScore receives their scores.
    nodes: Vec<Str>,
    /// Per constraint (hostname ones stay empty): matching pods per domain of the feasible nodes.
    counts: Vec<HashMap<Str, i64>>,
    /// Per constraint: `ln(domains + 2)`, so that small topologies weigh more per pod.
    weights: Vec<f64>,
}

/// What Score reads; shared, not copied, by copies of the cycle state, as upstream.
#[derive(Clone, Debug)]
pub struct PreScoreState(Arc<PreScoreData>);

pub struct PodTopologySpread {
    default_constraints: Vec<k8s::TopologySpreadConstraint>,
    system_defaulted: bool,
    pre_filter: StateKey<PreFilterState>,
    pre_score: StateKey<PreScoreState>,
}

impl PodTopologySpread {
    pub fn new(slots: &mut StateSlots, args: &Args) -> PodTopologySpread {
        let (default_constraints, system_defaulted) = match args.defaulting_type {
            DefaultingType::System => (system_default_constraints(), true),
            DefaultingType::List => (args.default_constraints.clone(), false),
        };
        PodTopologySpread {
            default_constraints,
            system_defaulted,
            pre_filter: slots.register("PreFilterPodTopologySpread"),
            pre_score: slots.register("PreScorePodTopologySpread"),
        }
    }

    /// `getConstraints` for one action: the pod's own, or else the defaults with the selector
    /// of the workloads selecting the pod (none when nothing selects it).
    fn constraints(
        &self,
        pod: &Pod,
        cluster: &Cluster,
        action: Action,
    ) -> Result<Vec<Constraint>, String> {
        let strings = &cluster.strings;
        if !pod.topology_spread_constraints.is_empty() {
            return parse_constraints(
                &pod.topology_spread_constraints,
                &pod.labels,
                action,
                strings,
            )
            .map_err(|e| {
                format!(
                    "obtaining pod's {} topology spread constraints: {e}",
                    action.hardness()
                )
            });
        }
        let mut constraints =
            parse_constraints(&self.default_constraints, &pod.labels, action, strings).map_err(
                |e| {
                    format!(
                        "setting default {} topology spread constraints: {e}",
                        action.hardness()
                    )
                },
            )?;
        if constraints.is_empty() {
            return Ok(constraints);
        }
        let selector = default_selector(pod, &cluster.workloads);
        if selector.is_empty() {
            return Ok(Vec::new());
        }
        for c in &mut constraints {
            c.selector = selector.clone();
        }
        Ok(constraints)
    }
}

fn pre_filter_state_missing() -> Status {
    Status::error(format!(
        "reading \"PreFilter{NAME}\" from cycleState: not found"
    ))
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::PRE_SCORE | Points::SCORE
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        let pod = cx.pod;
        let constraints = match self.constraints(pod, &cx.snapshot.cluster, Action::DoNotSchedule) {
            Ok(c) if c.is_empty() => return (Status::skip(), None),
            Ok(c) => c,
            Err(e) => {
                return (
                    Status::error(format!("get constraints from pod: {e}")),
                    None,
                );
            }
        };
        let nodes = &cx.snapshot.nodes;
        let per_node =
            count_matching_pods(cx.snapshot, &constraints, pod.namespace, |node, slots| {
                if !has_all_keys(&node.node.labels, &constraints) {
                    slots.fill(EXCLUDED);
                    return;
                }
                let mut inclusion = Inclusion::new(pod, &node.node);
                for (slot, c) in slots.iter_mut().zip(&constraints) {
                    if !inclusion.includes(c) {
                        *slot = EXCLUDED;
                    }
                }
            });
        // Summed in node order, remembering the order domains first appear in, so the critical
        // paths (which keep one of several tied domains) are the same on every run.
        let mut counts: Vec<HashMap<Str, i64>> = vec![HashMap::new(); constraints.len()];
        let mut domains: Vec<Vec<Str>> = vec![Vec::new(); constraints.len()];
        for (node, slots) in nodes.iter().zip(per_node.chunks(constraints.len())) {
            for (i, (&n, c)) in slots.iter().zip(constraints.iter()).enumerate() {
                if n == EXCLUDED {
                    continue;
                }
                let domain = node.node.labels.get(c.topology_key).unwrap_or_default();
                match counts[i].entry(domain) {
                    Entry::Occupied(mut e) => *e.get_mut() += n,
                    Entry::Vacant(e) => {
                        e.insert(n);
                        domains[i].push(domain);
                    }
                }
            }
        }
        let critical_paths = counts
            .iter()
            .zip(&domains)
            .map(|(counts, domains)| {
                let mut paths = CriticalPaths::new();
                for &d in domains {
                    paths.update(d, counts[&d]);
                }
                paths
            })
            .collect();
        let self_match = constraints
            .iter()
            .map(|c| c.selector.matches(&pod.labels))
            .collect();
        state.write(
            self.pre_filter,
            PreFilterState {
                constraints: constraints.into(),
                self_match,
                counts: counts
                    .into_iter()
                    .map(|base| DomainCounts {
                        base: Arc::new(base),
                        changed: Vec::new(),
                    })
                    .collect(),
                critical_paths,
            },
        );
        (Status::success(), None)
    }

    fn has_pre_filter_extensions(&self) -> bool {
        true
    }

    fn add_pod(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pod_to_add: &Arc<Pod>,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read_mut(self.pre_filter) else {
            return pre_filter_state_missing();
        };
        s.update_with_pod(pod_to_add, cx.pod, &node.node, 1);
        Status::success()
    }

    fn remove_pod(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        pod_to_remove: &Pod,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read_mut(self.pre_filter) else {
            return pre_filter_state_missing();
        };
        s.update_with_pod(pod_to_remove, cx.pod, &node.node, -1);
        Status::success()
    }

    fn filter(&self, _cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        let Some(s) = state.read(self.pre_filter) else {
            return pre_filter_state_missing();
        };
        let labels = &node.node.labels;
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(domain) = labels.get(c.topology_key) else {
                return Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
            };
            let skew = s.counts[i].get(domain) + i64::from(s.self_match[i])
                - s.min_match_num(i, c.min_domains);
            if skew > i64::from(c.max_skew) {
                return Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }

    fn pre_score(&self, cx: &Cx, state: &mut CycleState, nodes: &[&NodeInfo]) -> Status {
        let all = &cx.snapshot.nodes;
        if all.is_empty() {
            return Status::skip();
        }
        let pod = cx.pod;
        // Only the system defaults let nodes without every key count (hostname spreading still
        // works on nodes without a zone label).
        let require_all = !pod.topology_spread_constraints.is_empty() || !self.system_defaulted;
        let constraints = match self.constraints(pod, &cx.snapshot.cluster, Action::ScheduleAnyway)
        {
            Ok(c) if c.is_empty() => return Status::skip(),
            Ok(c) => c,
            Err(e) => return Status::error(format!("calculating preScoreState: {e}")),
        };
        let mut ignored = HashSet::new();
        let mut counts: Vec<HashMap<Str, i64>> = vec![HashMap::new(); constraints.len()];
        for node in nodes {
            let labels = &node.node.labels;
            if require_all && !has_all_keys(labels, &constraints) {
                ignored.insert(node.name());
                continue;
            }
            for (c, counts) in constraints.iter().zip(counts.iter_mut()) {
                if !c.hostname {
                    counts
                        .entry(labels.get(c.topology_key).unwrap_or_default())
                        .or_insert(0);
                }
            }
        }
        let weights = constraints
            .iter()
            .zip(&counts)
            .map(|(c, counts)| {
                let size = if c.hostname {
                    nodes.len() - ignored.len()
                } else {
                    counts.len()
                };
                go_log((size + 2) as f64)
            })
            .collect();
        // Hostname domains are never in `counts`: Score counts those on the node itself.
        let per_node =
            count_matching_pods(cx.snapshot, &constraints, pod.namespace, |node, slots| {
                let labels = &node.node.labels;
                if require_all && !has_all_keys(labels, &constraints) {
                    slots.fill(EXCLUDED);
                    return;
                }
                let mut inclusion = Inclusion::new(pod, &node.node);
                for ((slot, c), counts) in slots.iter_mut().zip(&constraints).zip(&counts) {
                    let domain = labels.get(c.topology_key).unwrap_or_default();
                    if !counts.contains_key(&domain) || !inclusion.includes(c) {
                        *slot = EXCLUDED;
                    }
                }
            });
        for (node, slots) in all.iter().zip(per_node.chunks(constraints.len())) {
            for ((&n, c), counts) in slots.iter().zip(&constraints).zip(counts.iter_mut()) {
                if n != EXCLUDED
                    && let Some(total) =
                        counts.get_mut(&node.node.labels.get(c.topology_key).unwrap_or_default())
                {
                    *total += n;
                }
            }
        }
        state.write(
            self.pre_score,
            PreScoreState(Arc::new(PreScoreData {
                constraints,
                ignored,
                nodes: nodes.iter().map(|n| n.name()).collect(),
                counts,
                weights,
            })),
        );
        Status::success()
    }

    fn score(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        let Some(PreScoreState(s)) = state.read(self.pre_score) else {
            return Err(Status::error(format!(
                "error reading \"PreScore{NAME}\" from cycleState: not found"
            )));
        };
        if s.ignored.contains(&node.name()) {
            return Ok(0);
        }
        let labels = &node.node.labels;
        let mut score = 0.0f64;
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(domain) = labels.get(c.topology_key) else {
                continue;
            };
            let count = if c.hostname {
                node.pods
                    .iter()
                    .filter(|p| counted(p, cx.pod.namespace, &c.selector))
                    .count() as i64
            } else {
                s.counts[i].get(&domain).copied().unwrap_or(0)
            };
            score += count as f64 * s.weights[i] + f64::from(c.max_skew - 1);
        }
        Ok(score.round() as i64)
    }

    fn has_score_extensions(&self) -> bool {
        true
    }

    fn normalize_score(&self, _cx: &Cx, state: &CycleState, scores: &mut [i64]) -> Status {
        let Some(PreScoreState(s)) = state.read(self.pre_score) else {
            return Status::error(format!(
                "error reading \"PreScore{NAME}\" from cycleState: not found"
            ));
        };
        let ignored = |i: usize| s.nodes.get(i).is_some_and(|name| s.ignored.contains(name));
        let mut min = i64::MAX;
        let mut max = 0;
        for (i, &score) in scores.iter().enumerate() {
            if !ignored(i) {
                min = min.min(score);
                max = max.max(score);
            }
        }
        for (i, score) in scores.iter_mut().enumerate() {
            *score = if ignored(i) {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *score) / max
            };
        }
        Status::success()
    }
}

/// `math.Log` as Go computes it on amd64 (the fdlibm reduction and polynomial, operation by
/// operation, without fused multiply-adds), so the normalizing weight, and through it every
/// rounded score, is bit for bit upstream's. Only called with finite numbers >= 2.
fn go_log(x: f64) -> f64 {
    let ln2_hi = f64::from_bits(0x3fe6_2e42_fee0_0000);
    let ln2_lo = f64::from_bits(0x3dea_39ef_3579_3c76);
    let l = [
        0x3FE5_5555_5555_5593u64,
        0x3FD9_9999_9997_FA04,
        0x3FD2_4924_9422_9359,
        0x3FCC_71C5_1D8E_78AF,
        0x3FC7_4664_96CB_03DE,
        0x3FC3_9A09_D078_C69F,
        0x3FC2_F112_DF3E_5244,
    ]
    .map(f64::from_bits);
    let bits = x.to_bits();
    // frexp: x = f1 * 2^k with f1 in [0.5, 1).
    let mut f1 = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FE0_0000_0000_0000);
    let mut k = (((bits >> 52) & 0x7FF) as i64 - 0x3FE) as f64;
    if f1 <= std::f64::consts::FRAC_1_SQRT_2 {
        k -= 1.0;
        f1 *= 2.0;
    }
    let f = f1 - 1.0;
    let s = f / (2.0 + f);
    let s2 = s * s;
    let s4 = s2 * s2;
    let t1 = s2 * (l[0] + s4 * (l[2] + s4 * (l[4] + s4 * l[6])));
    let t2 = s4 * (l[1] + s4 * (l[3] + s4 * l[5]));
    let r = t1 + t2;
    let hfsq = 0.5 * f * f;
    k * ln2_hi - ((hfsq - (s * (hfsq + r) + k * ln2_lo)) - f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::snapshot::Snapshot;
    use crate::framework::status::Code;
    use crate::model::cluster::Cluster;
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    use crate::source::Dump;
    use serde_json::{Value, json};

    fn cluster(objects: Vec<Value>) -> Arc<Cluster> {
        let mut dump = Dump::default();
        for o in objects {
            match o["kind"].as_str().unwrap() {
                "Node" => dump.nodes.push(serde_json::from_value(o).unwrap()),
                "Pod" => dump.pods.push(serde_json::from_value(o).unwrap()),
                "Service" => dump.services.push(serde_json::from_value(o).unwrap()),
                "ReplicaSet" => dump.replica_sets.push(serde_json::from_value(o).unwrap()),
                "ReplicationController" => dump
                    .replication_controllers
                    .push(serde_json::from_value(o).unwrap()),
                other => panic!("unexpected kind {other}"),
            }
        }
        Arc::new(Cluster::from_dump(dump, LoadOptions::default()).unwrap())
    }

    fn node(name: &str, labels: Value) -> Value {
        let mut labels = labels;
        labels["kubernetes.io/hostname"] = json!(name);
        json!({"kind": "Node", "metadata": {"name": name, "labels": labels}})
    }

    fn zoned(name: &str, zone: &str) -> Value {
        node(name, json!({"topology.kubernetes.io/zone": zone}))
    }

    /// A bound pod in `default` labelled `app=web` plus `labels`.
    fn web(name: &str, node: &str, labels: Value) -> Value {
        let mut all = json!({"app": "web"});
        all.as_object_mut()
            .unwrap()
            .extend(labels.as_object().unwrap().clone());
        json!({"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name, "labels": all},
               "spec": {"nodeName": node, "containers": [{"name": "c"}]}})
    }

    fn incoming(spec: Value, labels: Value) -> Pod {
        let mut spec = spec;
        spec["containers"] = json!([{"name": "c"}]);
        let mut p: k8s::Pod = serde_json::from_value(
            json!({"metadata": {"name": "new", "namespace": "default", "uid": "new", "labels": labels}, "spec": spec}),
        )
        .unwrap();
        crate::model::defaults::pod(&mut p, "default");
        Pod::from_k8s(&p, &Parse::new(&Interner::new())).unwrap()
    }

    fn spread(key: &str, action: &str, max_skew: i32, extra: Value) -> Value {
        let mut c = json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action,
                           "labelSelector": {"matchLabels": {"app": "web"}}});
        c.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        c
    }

    fn zone_spread(max_skew: i32, extra: Value) -> Value {
        json!({"topologySpreadConstraints": [spread(LABEL_ZONE, "DoNotSchedule", max_skew, extra)]})
    }

    fn system() -> PodTopologySpread {
        PodTopologySpread::new(&mut StateSlots::default(), &Args::default())
    }

    /// The PreFilter state in `state` (every instance built on fresh slots has the same keys).
    fn filtered(state: &CycleState) -> &PreFilterState {
        state.read(system().pre_filter).unwrap()
    }

    /// PreFilter, then Filter on every node: (node, code, reasons) of the nodes that fail.
    fn filter_all(
        pl: &PodTopologySpread,
        snapshot: &Snapshot,
        pod: &Pod,
    ) -> (Status, CycleState, Vec<(String, Code, String)>) {
        let cx = Cx { pod, snapshot };
        let mut state = CycleState::default();
        let (status, _) = pl.pre_filter(&cx, &mut state);
        let mut failed = Vec::new();
        if status.is_success() {
            for n in &snapshot.nodes {
                let s = pl.filter(&cx, &state, n);
                if !s.is_success() {
                    failed.push((n.name().to_string(), s.code, s.message()));
                }
            }
        }
        (status, state, failed)
    }

    fn failing_nodes(failed: &[(String, Code, String)]) -> Vec<&str> {
        failed.iter().map(|(n, _, _)| n.as_str()).collect()
    }

    /// PreScore, Score and NormalizeScore over every node, as the runner runs them.
    fn scores(pl: &PodTopologySpread, snapshot: &Snapshot, pod: &Pod) -> Option<Vec<i64>> {
        let cx = Cx { pod, snapshot };
        let mut state = CycleState::default();
        let nodes: Vec<&NodeInfo> = snapshot.nodes.iter().collect();
        if pl.pre_score(&cx, &mut state, &nodes).is_skip() {
            return None;
        }
        let mut scores: Vec<i64> = nodes
            .iter()
            .map(|n| pl.score(&cx, &state, n).unwrap())
            .collect();
        assert!(pl.normalize_score(&cx, &state, &mut scores).is_success());
        Some(scores)
    }

    #[test]
    fn filter_counts_matching_pods_per_domain() {
        let mut terminating = web("p-term", "b1", json!({}));
        terminating["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
        let mut other_ns = web("p-other", "b1", json!({}));
        other_ns["metadata"]["namespace"] = json!("other");
        let c = cluster(vec![
            zoned("a1", "a"),
            zoned("a2", "a"),
            zoned("b1", "b"),
            node("nozone", json!({})),
            web("p1", "a1", json!({})),
            web("p2", "a2", json!({})),
            web("p3", "b1", json!({})),
            json!({"kind": "Pod", "metadata": {"name": "db", "namespace": "default", "labels": {"app": "db"}},
                   "spec": {"nodeName": "b1", "containers": [{"name": "c"}]}}),
            terminating,
            other_ns,
        ]);
        let snapshot = Snapshot::new(c, None);
        let pod = incoming(zone_spread(1, json!({})), json!({"app": "web"}));
        let (status, state, failed) = filter_all(&system(), &snapshot, &pod);
        assert!(status.is_success());
        let s = filtered(&state);
        assert_eq!(s.counts[0].get(Str::new("a")), 2);
        assert_eq!(s.counts[0].get(Str::new("b")), 1);
        assert_eq!(s.counts[0].len(), 2, "a node without the key is no domain");
        assert_eq!(
            failed,
            [
                (
                    "a1".to_string(),
                    Code::Unschedulable,
                    ERR_REASON_CONSTRAINTS_NOT_MATCH.to_string()
                ),
                (
                    "a2".to_string(),
                    Code::Unschedulable,
                    ERR_REASON_CONSTRAINTS_NOT_MATCH.to_string()
                ),
                (
                    "nozone".to_string(),
                    Code::UnschedulableAndUnresolvable,
                    ERR_REASON_NODE_LABEL_NOT_MATCH.to_string()
                ),
            ]
        );
        // A pod its own selector does not match does not add itself to the domain.
        let other = incoming(zone_spread(1, json!({})), json!({"app": "other"}));
        let (_, _, failed) = filter_all(&system(), &snapshot, &other);
        assert_eq!(failing_nodes(&failed), ["nozone"]);
    }

    #[test]
    fn pods_without_hard_constraints_skip_prefilter() {
        let snapshot = Snapshot::new(cluster(vec![zoned("a1", "a")]), None);
        let soft = json!({"topologySpreadConstraints": [spread(LABEL_ZONE, "ScheduleAnyway", 1, json!({}))]});
        for spec in [json!({}), soft] {
            let (status, state, _) =
                filter_all(&system(), &snapshot, &incoming(spec, json!({"app": "web"})));
            assert!(status.is_skip());
            assert!(state.read(system().pre_filter).is_none());
        }
    }

    #[test]
    fn min_domains_treats_the_global_minimum_as_zero() {
        let snapshot = Snapshot::new(
            cluster(vec![
                zoned("a1", "a"),
                zoned("b1", "b"),
                web("p1", "a1", json!({})),
                web("p2", "b1", json!({})),
            ]),
            None,
        );
        let three = incoming(
            zone_spread(1, json!({"minDomains": 3})),
            json!({"app": "web"}),
        );
        let (_, _, failed) = filter_all(&system(), &snapshot, &three);
        assert_eq!(failing_nodes(&failed), ["a1", "b1"]);
        let two = incoming(
            zone_spread(1, json!({"minDomains": 2})),
            json!({"app": "web"}),
        );
        let (_, _, failed) = filter_all(&system(), &snapshot, &two);
        assert!(failed.is_empty());
    }

    #[test]
    fn node_inclusion_policies_decide_which_nodes_are_domains() {
        let tainted = {
            let mut n = node("c1", json!({"topology.kubernetes.io/zone": "c"}));
            n["spec"] =
                json!({"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]});
            n
        };
        let snapshot = Snapshot::new(
            cluster(vec![
                node(
                    "a1",
                    json!({"topology.kubernetes.io/zone": "a", "pool": "general"}),
                ),
                node(
                    "b1",
                    json!({"topology.kubernetes.io/zone": "b", "pool": "general"}),
                ),
                tainted,
                web("p1", "a1", json!({})),
                web("p2", "b1", json!({})),
            ]),
            None,
        );
        let with_selector = |extra: Value| {
            let mut spec = zone_spread(1, extra);
            spec["nodeSelector"] = json!({"pool": "general"});
            incoming(spec, json!({"app": "web"}))
        };
        // Honor (default): c1 does not match the node selector, so zone c is no domain.
        let (_, state, failed) = filter_all(&system(), &snapshot, &with_selector(json!({})));
        assert_eq!(filtered(&state).counts[0].len(), 2);
        assert!(
            failed.is_empty(),
            "c1 is NodeAffinity's to reject: an unknown domain counts 0"
        );
        let (_, _, failed) = filter_all(
            &system(),
            &snapshot,
            &with_selector(json!({"nodeAffinityPolicy": "Ignore"})),
        );
        assert_eq!(failing_nodes(&failed), ["a1", "b1"]);
        // Taints are ignored unless the constraint honors them.
        let plain = |extra: Value| incoming(zone_spread(1, extra), json!({"app": "web"}));
        let (_, _, failed) = filter_all(&system(), &snapshot, &plain(json!({})));
        assert_eq!(failing_nodes(&failed), ["a1", "b1"]);
        let (_, _, failed) = filter_all(
            &system(),
            &snapshot,
            &plain(json!({"nodeTaintsPolicy": "Honor"})),
        );
        assert!(failed.is_empty());
    }

    #[test]
    fn match_label_keys_add_the_pods_values_to_the_selector() {
        let snapshot = Snapshot::new(
            cluster(vec![
                zoned("a1", "a"),
                zoned("b1", "b"),
                web("old-1", "a1", json!({"pod-template-hash": "old"})),
                web("old-2", "a1", json!({"pod-template-hash": "old"})),
                web("new-1", "b1", json!({"pod-template-hash": "new"})),
            ]),
            None,
        );
        let labels = json!({"app": "web", "pod-template-hash": "new"});
        let pod = incoming(
            zone_spread(1, json!({"matchLabelKeys": ["pod-template-hash"]})),
            labels.clone(),
        );
        let (_, state, failed) = filter_all(&system(), &snapshot, &pod);
        let s = filtered(&state);
        assert_eq!(
            (
                s.counts[0].get(Str::new("a")),
                s.counts[0].get(Str::new("b"))
            ),
            (0, 1)
        );
        assert_eq!(failing_nodes(&failed), ["b1"]);
        // Keys the pod does not carry add nothing; a nil selector still selects nothing.
        let mut nil_selector = zone_spread(
            1,
            json!({"matchLabelKeys": ["pod-template-hash", "absent"]}),
        );
        nil_selector["topologySpreadConstraints"][0]
            .as_object_mut()
            .unwrap()
            .remove("labelSelector");
        let (_, state, failed) = filter_all(&system(), &snapshot, &incoming(nil_selector, labels));
        let s = filtered(&state);
        assert_eq!(s.counts[0].get(Str::new("b")), 0);
        assert_eq!(*s.self_match, [false]);
        assert!(failed.is_empty());
    }

    #[test]
    fn an_empty_selector_counts_no_existing_pod_but_the_pod_itself() {
        let snapshot = Snapshot::new(
            cluster(vec![
                zoned("a1", "a"),
                zoned("b1", "b"),
                web("p1", "a1", json!({})),
                web("p2", "a1", json!({})),
            ]),
            None,
        );
        let pod = incoming(
            zone_spread(1, json!({"labelSelector": {}})),
            json!({"app": "web"}),
        );
        let (_, mut state, failed) = filter_all(&system(), &snapshot, &pod);
        assert!(failed.is_empty());
        assert_eq!(*filtered(&state).self_match, [true]);
        // AddPod has no such exception: upstream counts the added pod.
        let cx = Cx {
            pod: &pod,
            snapshot: &snapshot,
        };
        let added = Arc::new(incoming(json!({}), json!({"app": "web"})));
        let b1 = snapshot.get(Str::new("b1")).unwrap();
        assert!(system().add_pod(&cx, &mut state, &added, b1).is_success());
        assert_eq!(filtered(&state).counts[0].get(Str::new("b")), 1);
    }

    #[test]
    fn add_and_remove_pod_move_the_counts_of_one_copy() {
        let snapshot = Snapshot::new(
            cluster(vec![
                zoned("a1", "a"),
                zoned("b1", "b"),
                zoned("c1", "c"),
                web("p1", "a1", json!({})),
                web("p2", "b1", json!({})),
                web("p3", "b1", json!({})),
                web("p4", "c1", json!({})),
            ]),
            None,
        );
        let pl = system();
        let pod = incoming(zone_spread(1, json!({})), json!({"app": "web"}));
        let (_, state, failed) = filter_all(&pl, &snapshot, &pod);
        assert_eq!(failing_nodes(&failed), ["b1"]);
        let cx = Cx {
            pod: &pod,
            snapshot: &snapshot,
        };
        let (a1, b1) = (
            snapshot.get(Str::new("a1")).unwrap(),
            snapshot.get(Str::new("b1")).unwrap(),
        );

        // Preemption on b1: removing one victim makes b1 fit.
        let mut removed = state.clone();
        let victim = b1.pods[0].clone();
        assert!(pl.remove_pod(&cx, &mut removed, &victim, b1).is_success());
        assert!(pl.filter(&cx, &removed, b1).is_success());
        assert!(
            !pl.filter(&cx, &state, b1).is_success(),
            "the original state is untouched"
        );

        // A nominated pod on a1 raises its domain; one in another namespace does not.
        let mut added = state.clone();
        let nominated = Arc::new(incoming(json!({}), json!({"app": "web"})));
        assert!(pl.add_pod(&cx, &mut added, &nominated, a1).is_success());
        let s = filtered(&added);
        assert_eq!(
            (s.counts[0].get(Str::new("a")), s.min_match_num(0, 1)),
            (2, 1)
        );
        assert!(!pl.filter(&cx, &added, a1).is_success());
        let mut foreign = (*nominated).clone();
        foreign.namespace = Str::new("other");
        let mut other = state.clone();
        assert!(
            pl.add_pod(&cx, &mut other, &Arc::new(foreign), a1)
                .is_success()
        );
        assert_eq!(filtered(&other).counts[0].get(Str::new("a")), 1);

        // Removing from the minimum domain lowers the global minimum.
        let mut lower = state.clone();
        assert!(pl.remove_pod(&cx, &mut lower, &a1.pods[0], a1).is_success());
        assert_eq!(filtered(&lower).min_match_num(0, 1), 0);
        assert!(
            !pl.filter(&cx, &lower, snapshot.get(Str::new("c1")).unwrap())
                .is_success()
        );
    }

    #[test]
    fn critical_paths_keep_the_two_smallest_domains() {
        let (a, b, c) = (Str::new("a"), Str::new("b"), Str::new("c"));
        let mut p = CriticalPaths::new();
        for (d, n) in [(c, 3), (a, 1), (b, 2)] {
            p.update(d, n);
        }
        assert_eq!(p.0, [(a, 1), (b, 2)]);
        p.update(a, 4);
        assert_eq!(p.0, [(b, 2), (a, 4)]);
        p.update(c, 0);
        assert_eq!(p.0, [(c, 0), (b, 2)]);
        p.update(b, 1);
        assert_eq!(p.0, [(c, 0), (b, 1)]);
    }

    #[test]
    fn default_selector_follows_services_and_the_controller() {
        let owner = |api_version: &str, kind: &str, controller: bool| {
            let mut p = web("w", "n1", json!({"tier": "fe"}));
            p["metadata"]["ownerReferences"] = json!([{"apiVersion": api_version, "kind": kind, "name": "w", "uid": "u", "controller": controller}]);
            p
        };
        let c = cluster(vec![
            json!({"kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}),
            json!({"kind": "Service", "metadata": {"name": "nosel", "namespace": "default"}, "spec": {}}),
            json!({"kind": "Service", "metadata": {"name": "x", "namespace": "default"}, "spec": {"selector": {"app": "x"}}}),
            json!({"kind": "ReplicaSet", "metadata": {"name": "w", "namespace": "default"},
                   "spec": {"selector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}}}),
            json!({"kind": "ReplicationController", "metadata": {"name": "w", "namespace": "default"},
                   "spec": {"selector": {"rc": "w"}}}),
        ]);
        let sel = |p: Value| {
            let p: k8s::Pod = serde_json::from_value(p).unwrap();
            default_selector(
                &Pod::from_k8s(&p, &Parse::new(&Interner::new())).unwrap(),
                &c.workloads,
            )
        };
        let text = |s: Selector| {
            s.requirements()
                .iter()
                .map(|r| format!("{} {}", r.key, r.op.as_str()))
                .collect::<Vec<_>>()
                .join(",")
        };
        assert_eq!(
            text(sel(owner("apps/v1", "ReplicaSet", true))),
            "app In,tier Exists"
        );
        assert_eq!(
            text(sel(owner("v1", "ReplicationController", true))),
            "app In,rc In"
        );
        assert_eq!(
            text(sel(owner("apps/v1", "ReplicaSet", false))),
            "app In",
            "not the controller"
        );
        assert_eq!(
            text(sel(owner("apps/v1beta2", "ReplicaSet", true))),
            "app In"
        );
        assert_eq!(text(sel(owner("a/b/c", "ReplicaSet", true))), "app In");
        let mut lonely = web("w", "n1", json!({}));
        lonely["metadata"]["labels"] = json!({"app": "other"});
        assert!(sel(lonely).is_empty());
    }

    #[test]
    fn system_defaults_apply_to_selected_pods_only() {
        let service = json!({"kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}});
        let snapshot = Snapshot::new(
            cluster(vec![
                zoned("n1", "a"),
                node("n2", json!({})),
                service,
                web("p1", "n1", json!({})),
            ]),
            None,
        );
        let pl = system();
        let (status, _, _) =
            filter_all(&pl, &snapshot, &incoming(json!({}), json!({"app": "web"})));
        assert!(
            status.is_skip(),
            "the system defaults are all ScheduleAnyway"
        );
        // n1: host 1*ln4+2, zone a 1*ln4+4 → 9; n2 has no zone: host 0+2 → 2. Normalized with
        // min 2, max 9.
        assert_eq!(
            scores(&pl, &snapshot, &incoming(json!({}), json!({"app": "web"}))),
            Some(vec![22, 100])
        );
        assert_eq!(
            scores(&pl, &snapshot, &incoming(json!({}), json!({"app": "db"}))),
            None
        );
        // With a listed default (not the system one), every key is required.
        let listed = PodTopologySpread::new(
            &mut StateSlots::default(),
            &Args {
                default_constraints: system_default_constraints(),
                defaulting_type: DefaultingType::List,
            },
        );
        assert_eq!(
            scores(
                &listed,
                &snapshot,
                &incoming(json!({}), json!({"app": "web"}))
            ),
            Some(vec![100, 0])
        );
    }

    #[test]
    fn scores_weigh_domains_by_the_log_of_their_number() {
        let snapshot = Snapshot::new(
            cluster(vec![
                zoned("n1", "a"),
                zoned("n2", "a"),
                zoned("n3", "b"),
                node("n4", json!({})),
                web("p1", "n1", json!({})),
                web("p2", "n1", json!({})),
                web("p3", "n3", json!({})),
            ]),
            None,
        );
        let spec = json!({"topologySpreadConstraints": [
            spread(LABEL_ZONE, "ScheduleAnyway", 1, json!({})),
            spread(LABEL_HOSTNAME, "ScheduleAnyway", 2, json!({})),
        ]});
        // Zones a, b: weight ln 4; hosts n1..n3 (n4 lacks the zone key): ln 5.
        // n1: 2*ln4 + 0 + 2*ln5 + 1 = 6.99 → 7; n2: 2*ln4 + 0 + 1 = 3.77 → 4;
        // n3: ln4 + ln5 + 1 = 3.996 → 4; n4 ignored.
        let got = scores(&system(), &snapshot, &incoming(spec, json!({"app": "web"})));
        assert_eq!(got, Some(vec![100 * 4 / 7, 100, 100, 0]));
    }

    #[test]
    fn go_log_is_the_natural_logarithm() {
        assert_eq!(go_log(4.0), 4f64.ln());
        for n in 2..20_000 {
            let (x, want) = (f64::from(n), f64::from(n).ln());
            assert!((go_log(x) - want).abs() <= want * f64::EPSILON, "log({n})");
        }
    }

    #[test]
    fn configured_default_constraints_filter_controller_owned_pods() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/conformance/config-pts-default-constraints"
        );
        let cluster = Arc::new(crate::source::file::load(&format!("{dir}/cluster.yaml")).unwrap());
        let (path, mut docs) =
            crate::source::file::load_documents(&format!("{dir}/pod.yaml"), Default::default())
                .unwrap();
        let mut pod: k8s::Pod = crate::source::file::typed(&path, "Pod", docs.remove(0)).unwrap();
        crate::model::defaults::pod(&mut pod, "default");
        let pod = Pod::from_k8s(&pod, &Parse::new(&Interner::new())).unwrap();
        let snapshot = Snapshot::new(cluster, None);
        let zone = k8s::TopologySpreadConstraint {
            max_skew: 1,
            topology_key: LABEL_ZONE.into(),
            when_unsatisfiable: "DoNotSchedule".into(),
            ..Default::default()
        };
        let pl = PodTopologySpread::new(
            &mut StateSlots::default(),
            &Args {
                default_constraints: vec![zone],
                defaulting_type: DefaultingType::List,
            },
        );
        let (status, _, failed) = filter_all(&pl, &snapshot, &pod);
        assert!(status.is_success());
        assert_eq!(failing_nodes(&failed), ["node-1", "node-4"]);
        assert_eq!(
            scores(&pl, &snapshot, &pod),
            None,
            "no ScheduleAnyway default: PreScore skips"
        );
    }
}
