//! InterPodAffinity (PreFilter, Filter, PreScore, Score): the pod's required and preferred
//! (anti-)affinity to other pods, and existing pods' anti-affinity against it.

use crate::framework::MAX_NODE_SCORE;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::{
    AffinityKind, AffinityMiss, Detail, Fact, PodRef, ScoreInput, sorted_pods,
};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes};
use crate::framework::status::Status;
use crate::model::affinity::{AffinityTerm, WeightedAffinityTerm};
use crate::model::cluster::Cluster;
use crate::model::intern::Str;
use crate::model::labels::Labels;
use crate::model::node::Node;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::sync::Arc;

pub const NAME: &str = "InterPodAffinity";
pub const ERR_REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
pub const ERR_REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub const ERR_REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";

/// Below this many nodes, walking them on one thread is cheaper than spreading the work.
const PARALLEL_MIN_NODES: usize = 256;

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

/// (topology key, value) → matched terms: upstream's `topologyToMatchedTermCount`.
type Counts = FxHashMap<(Str, Str), i64>;

fn update(counts: &mut Counts, node: &Node, key: Str, by: i64) {
    if let Some(value) = node.labels.get(key) {
        let c = counts.entry((key, value)).or_insert(0);
        *c += by;
        if *c == 0 {
            counts.remove(&(key, value));
        }
    }
}

/// `podMatchesAllAffinityTerms` (namespace labels unknown: only listed namespaces or an
/// everything-selector count).
fn matches_all(terms: &[AffinityTerm], pod: &Pod) -> bool {
    !terms.is_empty()
        && terms
            .iter()
            .all(|t| t.matches(pod.namespace, &pod.labels, &Labels::default()))
}

/// The incoming pod's terms, with the namespaces their `namespaceSelector`s select added
/// (`mergeAffinityTermNamespacesIfNotEmpty`). Upstream takes the term by value, so its attempt to
/// clear the selector afterwards is lost and the selector stays: later matched against no labels,
/// a `NotIn` or `DoesNotExist` selector then selects every namespace. That is reproduced.
fn merged(terms: &[AffinityTerm], cluster: &Cluster) -> Vec<AffinityTerm> {
    terms
        .iter()
        .map(|t| {
            let mut t = t.clone();
            if !t.namespace_selector.is_empty() {
                let mut extra: Vec<Str> = cluster
                    .namespaces
                    .iter()
                    .filter(|(_, l)| t.namespace_selector.matches(l))
                    .map(|(&n, _)| n)
                    .collect();
                extra.sort();
                for n in extra {
                    if !t.namespaces.contains(&n) {
                        t.namespaces.push(n);
                    }
                }
            }
            t
        })
        .collect()
}

fn merged_weighted(terms: &[WeightedAffinityTerm], cluster: &Cluster) -> Vec<WeightedAffinityTerm> {
    let plain: Vec<AffinityTerm> = terms.iter().map(|w| w.term.clone()).collect();
    merged(&plain, cluster)
        .into_iter()
        .zip(terms)
        .map(|(term, w)| WeightedAffinityTerm {
            term,
            weight: w.weight,
        })
        .collect()
}

/// The namespaces the incoming pod's required terms can match pods in, or `None` when a term's
/// namespace selector matches a namespace without labels, i.e. any (then every pod is looked at).
fn term_namespaces(incoming: &IncomingTerms) -> Option<Vec<Str>> {
    let mut namespaces = Vec::new();
    for t in incoming.affinity.iter().chain(&incoming.anti_affinity) {
        if t.namespace_selector.matches(&Labels::default()) {
            return None;
        }
        namespaces.extend(t.namespaces.iter().copied());
    }
    namespaces.sort();
    namespaces.dedup();
    Some(namespaces)
}

#[derive(Clone, Debug)]
struct IncomingTerms {
    affinity: Vec<AffinityTerm>,
    anti_affinity: Vec<AffinityTerm>,
    /// The selectors of `affinity` and `anti_affinity` as written, when the cycle explains.
    affinity_selectors: Vec<Str>,
    anti_affinity_selectors: Vec<Str>,
    namespace_labels: Labels,
    /// The pod matches all its own affinity terms (the first pod of a group may schedule).
    self_match: bool,
}

/// A pod behind a count, for the explanation: the index of the term concerned (the incoming
/// pod's, or for existing pods' anti-affinity the existing pod's) and that term's selector.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Holder {
    term: u16,
    pod: PodRef,
    selector: Str,
}

/// The pods behind the anti-affinity counts, per (topology key, value); kept only when the
/// cycle explains.
#[derive(Clone, Debug, Default)]
struct Holders {
    /// Pods matching one of the incoming pod's anti-affinity terms.
    anti_affinity: FxHashMap<(Str, Str), Vec<Holder>>,
    /// Existing pods whose anti-affinity term matches the incoming pod.
    existing: FxHashMap<(Str, Str), Vec<Holder>>,
}

fn hold(map: &mut FxHashMap<(Str, Str), Vec<Holder>>, key: (Str, Str), h: Holder, by: i64) {
    let list = map.entry(key).or_default();
    if by > 0 {
        list.push(h);
    } else if let Some(i) = list.iter().position(|x| *x == h) {
        list.swap_remove(i);
    }
}

#[derive(Clone, Debug)]
pub struct PreFilterState {
    existing_anti_affinity: Counts,
    affinity: Counts,
    anti_affinity: Counts,
    incoming: Arc<IncomingTerms>,
    holders: Option<Arc<Holders>>,
}

impl PreFilterState {
    /// `updateWithPod`: the counts with `pod` on `node` added (+1) or removed (-1), and the
    /// pods behind them when the cycle explains.
    fn update_with_pod(&mut self, cx: &Cx, pod: &Pod, node: &Node, by: i64) {
        let incoming_pod = cx.pod;
        let inc = self.incoming.clone();
        let mut holders = self
            .holders
            .as_mut()
            .filter(|_| cx.explain)
            .map(Arc::make_mut);
        for (i, t) in pod.affinity.required_anti_affinity.iter().enumerate() {
            if t.matches(
                incoming_pod.namespace,
                &incoming_pod.labels,
                &inc.namespace_labels,
            ) {
                update(&mut self.existing_anti_affinity, node, t.topology_key, by);
                if let (Some(h), Some(v)) =
                    (holders.as_deref_mut(), node.labels.get(t.topology_key))
                {
                    let holder = existing_holder(cx, i, t, pod);
                    hold(&mut h.existing, (t.topology_key, v), holder, by);
                }
            }
        }
        if matches_all(&inc.affinity, pod) {
            for t in &inc.affinity {
                update(&mut self.affinity, node, t.topology_key, by);
            }
        }
        for (i, t) in inc.anti_affinity.iter().enumerate() {
            if t.matches(pod.namespace, &pod.labels, &Labels::default()) {
                update(&mut self.anti_affinity, node, t.topology_key, by);
                if let (Some(h), Some(v)) =
                    (holders.as_deref_mut(), node.labels.get(t.topology_key))
                {
                    let holder = Holder {
                        term: term_index(i),
                        pod: PodRef::of(pod),
                        selector: inc.anti_affinity_selectors[i],
                    };
                    hold(&mut h.anti_affinity, (t.topology_key, v), holder, by);
                }
            }
        }
    }

    /// The facts behind a rejection: the terms the node breaks, with their domain and pods.
    fn facts(&self, labels: &Labels) -> Vec<Fact> {
        let inc = &self.incoming;
        let fact = |kind, term: u16, key: Str, selector: Str, domain, pods| {
            Fact::of(Detail::Affinity(Box::new(AffinityMiss {
                kind,
                term,
                topology_key: key,
                selector,
                domain,
                pods,
            })))
        };
        let mut out = Vec::new();
        for (i, t) in inc.affinity.iter().enumerate() {
            let domain = labels.get(t.topology_key);
            let empty = domain.is_none_or(|v| {
                self.affinity
                    .get(&(t.topology_key, v))
                    .copied()
                    .unwrap_or(0)
                    <= 0
            });
            if empty {
                let selector = inc.affinity_selectors[i];
                let f = fact(
                    AffinityKind::Affinity,
                    term_index(i),
                    t.topology_key,
                    selector,
                    domain,
                    Vec::new(),
                );
                out.push(f);
            }
        }
        let holders = self.holders.as_deref();
        fn pods_of(map: Option<&FxHashMap<(Str, Str), Vec<Holder>>>, key: (Str, Str)) -> &[Holder] {
            map.and_then(|m| m.get(&key)).map_or(&[][..], Vec::as_slice)
        }
        // Terms sharing a topology key share its counts: a term is behind the rejection where
        // pods match it; when none is known to (holders are kept only when explaining), all are.
        let mut anti = Vec::new();
        for (i, t) in inc.anti_affinity.iter().enumerate() {
            let Some(v) = labels.get(t.topology_key) else {
                continue;
            };
            if self
                .anti_affinity
                .get(&(t.topology_key, v))
                .copied()
                .unwrap_or(0)
                > 0
            {
                let pods = pods_of(holders.map(|h| &h.anti_affinity), (t.topology_key, v))
                    .iter()
                    .filter(|h| usize::from(h.term) == i)
                    .map(|h| h.pod)
                    .collect();
                let selector = inc.anti_affinity_selectors[i];
                let kind = AffinityKind::AntiAffinity;
                let pods = sorted_pods(pods);
                let held = !pods.is_empty();
                let f = fact(kind, term_index(i), t.topology_key, selector, Some(v), pods);
                anti.push((held, f));
            }
        }
        let any_held = anti.iter().any(|(held, _)| *held);
        out.extend(
            anti.into_iter()
                .filter(|(held, _)| *held || !any_held)
                .map(|(_, f)| f),
        );
        for (k, v) in labels.iter() {
            if self
                .existing_anti_affinity
                .get(&(k, v))
                .copied()
                .unwrap_or(0)
                <= 0
            {
                continue;
            }
            // One fact per existing term (by its index and selector), with the pods that have it.
            let mut by_term: Vec<(u16, Str, Vec<PodRef>)> = Vec::new();
            for h in pods_of(holders.map(|h| &h.existing), (k, v)) {
                match by_term
                    .iter_mut()
                    .find(|(t, s, _)| (*t, *s) == (h.term, h.selector))
                {
                    Some((_, _, pods)) => pods.push(h.pod),
                    None => by_term.push((h.term, h.selector, vec![h.pod])),
                }
            }
            by_term.sort_by(|a, b| (a.0, a.1.as_str()).cmp(&(b.0, b.1.as_str())));
            for (term, selector, pods) in by_term {
                let kind = AffinityKind::ExistingAntiAffinity;
                out.push(fact(kind, term, k, selector, Some(v), sorted_pods(pods)));
            }
        }
        out
    }
}

fn term_index(i: usize) -> u16 {
    u16::try_from(i).unwrap_or(u16::MAX)
}

/// A selector as facts show it, stored once in the cluster's strings.
fn selector_text(cx: &Cx, t: &AffinityTerm) -> Str {
    cx.snapshot.cluster.strings.intern(t.selector.to_string())
}

/// An existing pod whose anti-affinity term `i` matches the incoming pod.
fn existing_holder(cx: &Cx, i: usize, t: &AffinityTerm, pod: &Pod) -> Holder {
    Holder {
        term: term_index(i),
        pod: PodRef::of(pod),
        selector: selector_text(cx, t),
    }
}

/// (topology key → value → score): upstream's `scoreMap`.
type ScoreMap = FxHashMap<Str, FxHashMap<Str, i64>>;

#[derive(Clone, Debug)]
pub struct PreScoreState {
    topology_score: ScoreMap,
    preferred_affinity: Arc<Vec<WeightedAffinityTerm>>,
    preferred_anti_affinity: Arc<Vec<WeightedAffinityTerm>>,
    namespace_labels: Labels,
    /// The pod has preferred terms of its own, so every pod counts, not only pods with affinity.
    has_constraints: bool,
}

pub struct InterPodAffinity {
    pub args: Args,
    pre_filter: StateKey<PreFilterState>,
    pre_score: StateKey<PreScoreState>,
}

fn process_term(
    map: &mut ScoreMap,
    term: &AffinityTerm,
    weight: i32,
    pod: &Pod,
    ns_labels: &Labels,
    node: &Node,
    multiplier: i32,
) {
    if term.matches(pod.namespace, &pod.labels, ns_labels)
        && let Some(value) = node.labels.get(term.topology_key)
    {
        // Upstream multiplies as int32.
        *map.entry(term.topology_key)
            .or_default()
            .entry(value)
            .or_insert(0) += i64::from(weight.wrapping_mul(multiplier));
    }
}

impl InterPodAffinity {
    pub fn new(slots: &mut StateSlots, args: Args) -> InterPodAffinity {
        InterPodAffinity {
            args,
            pre_filter: slots.register("PreFilterInterPodAffinity"),
            pre_score: slots.register("PreScoreInterPodAffinity"),
        }
    }

    /// `processExistingPod`: what one existing pod adds to the topology scores.
    fn process_existing_pod(
        &self,
        state: &PreScoreState,
        existing: &Pod,
        node: &Node,
        incoming: &Pod,
        map: &mut ScoreMap,
    ) {
        if node.labels.is_empty() {
            return;
        }
        let none = Labels::default();
        for t in state.preferred_affinity.iter() {
            process_term(map, &t.term, t.weight, existing, &none, node, 1);
        }
        for t in state.preferred_anti_affinity.iter() {
            process_term(map, &t.term, t.weight, existing, &none, node, -1);
        }
        if self.args.hard_pod_affinity_weight > 0 {
            for t in &existing.affinity.required_affinity {
                process_term(
                    map,
                    t,
                    self.args.hard_pod_affinity_weight,
                    incoming,
                    &state.namespace_labels,
                    node,
                    1,
                );
            }
        }
        for t in &existing.affinity.preferred_affinity {
            process_term(
                map,
                &t.term,
                t.weight,
                incoming,
                &state.namespace_labels,
                node,
                1,
            );
        }
        for t in &existing.affinity.preferred_anti_affinity {
            process_term(
                map,
                &t.term,
                t.weight,
                incoming,
                &state.namespace_labels,
                node,
                -1,
            );
        }
    }
}

/// Filter's verdict on a node with these labels.
fn verdict(s: &PreFilterState, labels: &Labels) -> Status {
    // satisfyPodAffinity: every term's topology must hold a matching pod, unless no pod in the
    // cluster matches and the pod matches its own terms.
    let mut pods_exist = true;
    for t in &s.incoming.affinity {
        match labels.get(t.topology_key) {
            Some(v) => {
                if s.affinity.get(&(t.topology_key, v)).copied().unwrap_or(0) <= 0 {
                    pods_exist = false;
                }
            }
            None => return Status::unresolvable(ERR_REASON_AFFINITY),
        }
    }
    if !pods_exist && (!s.affinity.is_empty() || !s.incoming.self_match) {
        return Status::unresolvable(ERR_REASON_AFFINITY);
    }
    if !s.anti_affinity.is_empty() {
        for t in &s.incoming.anti_affinity {
            if let Some(v) = labels.get(t.topology_key)
                && s.anti_affinity
                    .get(&(t.topology_key, v))
                    .copied()
                    .unwrap_or(0)
                    > 0
            {
                return Status::unschedulable(ERR_REASON_ANTI_AFFINITY);
            }
        }
    }
    if !s.existing_anti_affinity.is_empty()
        && labels
            .iter()
            .any(|(k, v)| s.existing_anti_affinity.get(&(k, v)).copied().unwrap_or(0) > 0)
    {
        return Status::unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY);
    }
    Status::success()
}

fn merge_scores(into: &mut ScoreMap, from: ScoreMap) {
    for (key, values) in from {
        let target = into.entry(key).or_default();
        for (v, s) in values {
            *target.entry(v).or_insert(0) += s;
        }
    }
}

/// The (topology key, value, count) entries one node contributes.
type Found = Vec<(Str, Str, i64)>;

/// What a walk over pods found for the incoming pod's terms.
#[derive(Default)]
struct Walked {
    affinity: Found,
    anti_affinity: Found,
    /// The pods behind `anti_affinity`, when the cycle explains.
    anti_holders: Vec<((Str, Str), Holder)>,
}

/// Per node, the entries a walk found, merged in node order.
fn merge_counts(per_node: Vec<Found>) -> Counts {
    let mut counts = Counts::default();
    for (k, v, n) in per_node.into_iter().flatten() {
        *counts.entry((k, v)).or_insert(0) += n;
    }
    counts.retain(|_, n| *n != 0);
    counts
}

fn walk<T: Send>(nodes: &[NodeInfo], f: impl Fn(&NodeInfo) -> T + Sync + Send) -> Vec<T> {
    if nodes.len() >= PARALLEL_MIN_NODES {
        nodes.par_iter().map(f).collect()
    } else {
        nodes.iter().map(f).collect()
    }
}

impl InterPodAffinity {
    /// The topology scores of the node's domains: (key, value, score), summed by Score.
    fn domains<'a>(
        &self,
        state: &'a CycleState,
        node: &'a NodeInfo,
    ) -> Result<impl Iterator<Item = (Str, Str, i64)> + 'a, Status> {
        let s = state.read(self.pre_score).ok_or_else(|| {
            Status::error("failed to read \"PreScoreInterPodAffinity\" from cycleState: not found")
        })?;
        Ok(s.topology_score.iter().filter_map(|(&key, values)| {
            let v = node.node.labels.get(key)?;
            values.get(&v).map(|&score| (key, v, score))
        }))
    }
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::PRE_SCORE | Points::SCORE
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        let pod = cx.pod;
        let cluster = &cx.snapshot.cluster;
        if !pod.affinity.parse_errors.is_empty() {
            return (
                Status::unresolvable(format!(
                    "parsing pod: {}",
                    pod.affinity.parse_errors.join(", ")
                )),
                None,
            );
        }
        let affinity = merged(&pod.affinity.required_affinity, cluster);
        let anti_affinity = merged(&pod.affinity.required_anti_affinity, cluster);
        let selectors = |terms: &[AffinityTerm]| -> Vec<Str> {
            if cx.explain {
                terms.iter().map(|t| selector_text(cx, t)).collect()
            } else {
                Vec::new()
            }
        };
        let incoming = Arc::new(IncomingTerms {
            affinity_selectors: selectors(&affinity),
            anti_affinity_selectors: selectors(&anti_affinity),
            affinity,
            anti_affinity,
            namespace_labels: cluster.namespace_labels(pod.namespace),
            self_match: false,
        });
        let nodes = &cx.snapshot.nodes;
        let mut holders = cx.explain.then(Holders::default);
        // Existing pods' anti-affinity against this pod: only pods whose terms can select its
        // namespace (the snapshot files them so).
        let mut found = Found::new();
        for (node, existing) in cx.snapshot.anti_affinity_concerning(pod.namespace) {
            for (i, t) in existing.affinity.required_anti_affinity.iter().enumerate() {
                if t.matches(pod.namespace, &pod.labels, &incoming.namespace_labels)
                    && let Some(v) = nodes[*node].node.labels.get(t.topology_key)
                {
                    found.push((t.topology_key, v, 1));
                    if let Some(h) = &mut holders {
                        let holder = existing_holder(cx, i, t, existing);
                        hold(&mut h.existing, (t.topology_key, v), holder, 1);
                    }
                }
            }
        }
        let existing = merge_counts(vec![found]);
        let (affinity, anti_affinity) =
            if incoming.affinity.is_empty() && incoming.anti_affinity.is_empty() {
                (Counts::default(), Counts::default())
            } else {
                let none = Labels::default();
                let count = |node: &NodeInfo, p: &Arc<Pod>, w: &mut Walked| {
                    if matches_all(&incoming.affinity, p) {
                        for t in &incoming.affinity {
                            if let Some(v) = node.node.labels.get(t.topology_key) {
                                w.affinity.push((t.topology_key, v, 1));
                            }
                        }
                    }
                    for (i, t) in incoming.anti_affinity.iter().enumerate() {
                        if t.matches(p.namespace, &p.labels, &none)
                            && let Some(v) = node.node.labels.get(t.topology_key)
                        {
                            w.anti_affinity.push((t.topology_key, v, 1));
                            if cx.explain {
                                let holder = Holder {
                                    term: term_index(i),
                                    pod: PodRef::of(p),
                                    selector: incoming.anti_affinity_selectors[i],
                                };
                                w.anti_holders.push(((t.topology_key, v), holder));
                            }
                        }
                    }
                };
                let mut walked = Walked::default();
                match term_namespaces(&incoming) {
                    // Only pods of the terms' namespaces can match: walk those.
                    Some(namespaces) => {
                        for ns in namespaces {
                            for (node, p) in cx.snapshot.pods_in_namespace(ns) {
                                count(&nodes[*node], p, &mut walked);
                            }
                        }
                    }
                    None => {
                        let per_node: Vec<Walked> = walk(nodes, |ni| {
                            let mut w = Walked::default();
                            for p in &ni.pods {
                                count(ni, p, &mut w);
                            }
                            w
                        });
                        for w in per_node {
                            walked.affinity.extend(w.affinity);
                            walked.anti_affinity.extend(w.anti_affinity);
                            walked.anti_holders.extend(w.anti_holders);
                        }
                    }
                }
                if let Some(h) = &mut holders {
                    for (key, holder) in walked.anti_holders {
                        hold(&mut h.anti_affinity, key, holder, 1);
                    }
                }
                (
                    merge_counts(vec![walked.affinity]),
                    merge_counts(vec![walked.anti_affinity]),
                )
            };
        if existing.is_empty() && incoming.affinity.is_empty() && incoming.anti_affinity.is_empty()
        {
            return (Status::skip(), None);
        }
        let self_match = matches_all(&incoming.affinity, pod);
        state.write(
            self.pre_filter,
            PreFilterState {
                existing_anti_affinity: existing,
                affinity,
                anti_affinity,
                incoming: Arc::new(IncomingTerms {
                    self_match,
                    ..(*incoming).clone()
                }),
                holders: holders.map(Arc::new),
            },
        );
        (Status::success(), None)
    }

    fn has_pre_filter_extensions(&self) -> bool {
        true
    }

    fn add_pod(&self, cx: &Cx, state: &mut CycleState, pod: &Arc<Pod>, node: &NodeInfo) -> Status {
        match state.read_mut(self.pre_filter) {
            Some(s) => {
                s.update_with_pod(cx, pod, &node.node, 1);
                Status::success()
            }
            None => Status::error(
                "error reading \"PreFilterInterPodAffinity\" from cycleState: not found",
            ),
        }
    }

    fn remove_pod(&self, cx: &Cx, state: &mut CycleState, pod: &Pod, node: &NodeInfo) -> Status {
        match state.read_mut(self.pre_filter) {
            Some(s) => {
                s.update_with_pod(cx, pod, &node.node, -1);
                Status::success()
            }
            None => Status::error(
                "error reading \"PreFilterInterPodAffinity\" from cycleState: not found",
            ),
        }
    }

    fn filter(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> Status {
        let Some(s) = state.read(self.pre_filter) else {
            return Status::error(
                "error reading \"PreFilterInterPodAffinity\" from cycleState: not found",
            );
        };
        let labels = &node.node.labels;
        let status = verdict(s, labels);
        if status.is_success() {
            return status;
        }
        cx.with_facts(status, || s.facts(labels))
    }

    fn pre_score(&self, cx: &Cx, state: &mut CycleState, nodes: &[&NodeInfo]) -> Status {
        let pod = cx.pod;
        if nodes.is_empty() {
            return Status::skip();
        }
        let has_constraints = !pod.affinity.preferred_affinity.is_empty()
            || !pod.affinity.preferred_anti_affinity.is_empty();
        if self.args.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return Status::skip();
        }
        let cluster = &cx.snapshot.cluster;
        let s = PreScoreState {
            topology_score: ScoreMap::default(),
            preferred_affinity: Arc::new(merged_weighted(
                &pod.affinity.preferred_affinity,
                cluster,
            )),
            preferred_anti_affinity: Arc::new(merged_weighted(
                &pod.affinity.preferred_anti_affinity,
                cluster,
            )),
            namespace_labels: cluster.namespace_labels(pod.namespace),
            has_constraints,
        };
        let nodes = &cx.snapshot.nodes;
        let per_node: Vec<ScoreMap> = if has_constraints {
            walk(nodes, |ni| {
                let mut map = ScoreMap::default();
                for existing in &ni.pods {
                    self.process_existing_pod(&s, existing, &ni.node, pod, &mut map);
                }
                map
            })
        } else {
            // Without terms of its own, only existing pods' terms that can select this pod's
            // namespace add anything.
            let mut map = ScoreMap::default();
            for (node, existing) in cx.snapshot.scoring_terms_concerning(pod.namespace) {
                self.process_existing_pod(&s, existing, &nodes[*node].node, pod, &mut map);
            }
            vec![map]
        };
        if per_node.iter().all(FxHashMap::is_empty) {
            return Status::skip();
        }
        let mut s = s;
        for map in per_node {
            merge_scores(&mut s.topology_score, map);
        }
        state.write(self.pre_score, s);
        Status::success()
    }

    fn score(&self, _cx: &Cx, state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        Ok(self.domains(state, node)?.map(|(_, _, score)| score).sum())
    }

    fn score_inputs(&self, _cx: &Cx, state: &CycleState, node: &NodeInfo) -> Vec<ScoreInput> {
        let Ok(domains) = self.domains(state, node) else {
            return Vec::new();
        };
        let mut inputs: Vec<ScoreInput> = domains
            .map(|(topology_key, domain, score)| ScoreInput::AffinityDomain {
                topology_key,
                domain,
                score,
            })
            .collect();
        inputs.sort_by_key(|i| match i {
            ScoreInput::AffinityDomain { topology_key, .. } => topology_key.as_str(),
            _ => "",
        });
        inputs
    }

    fn has_score_extensions(&self) -> bool {
        true
    }

    fn normalize_score(&self, _cx: &Cx, state: &CycleState, scores: &mut [i64]) -> Status {
        let Some(s) = state.read(self.pre_score) else {
            return Status::error(
                "failed to read \"PreScoreInterPodAffinity\" from cycleState: not found",
            );
        };
        if s.topology_score.is_empty() {
            return Status::success();
        }
        let min = scores.iter().copied().min().unwrap_or(0);
        let max = scores.iter().copied().max().unwrap_or(0);
        let diff = max - min;
        for score in scores.iter_mut() {
            let f = if diff > 0 {
                MAX_NODE_SCORE as f64 * ((*score - min) as f64 / diff as f64)
            } else {
                0.0
            };
            *score = f as i64;
        }
        Status::success()
    }

    /// The topology scores are a sum over existing pods: a placed replica adds its own part,
    /// counted where a fresh PreScore would count it (every pod when the pod has preferred terms,
    /// else only pods with affinity).
    fn pre_score_add_pod(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        placed: &Pod,
        node: &NodeInfo,
    ) -> bool {
        let skipped = state.skips_score(NAME);
        match state.read_mut(self.pre_score) {
            Some(s) if !skipped => {
                if s.has_constraints || placed.affinity.has_affinity {
                    let mut map = ScoreMap::default();
                    self.process_existing_pod(s, placed, &node.node, cx.pod, &mut map);
                    merge_scores(&mut s.topology_score, map);
                }
                true
            }
            // Skipped: it stays skipped unless the new pod brings scores, which a fresh PreScore
            // must then compute.
            _ => {
                let has_constraints = !cx.pod.affinity.preferred_affinity.is_empty()
                    || !cx.pod.affinity.preferred_anti_affinity.is_empty();
                !has_constraints
                    && (self.args.ignore_preferred_terms_of_existing_pods
                        || !placed.affinity.has_affinity)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{cluster, explain, node, pod};
    use serde_json::{Value, json};

    fn with_affinity(mut p: Value, kind: &str, required: Value, preferred: Value) -> Value {
        p["spec"]["affinity"] = json!({kind: {"requiredDuringSchedulingIgnoredDuringExecution": required,
                                              "preferredDuringSchedulingIgnoredDuringExecution": preferred}});
        p
    }

    fn term(app: &str, key: &str) -> Value {
        json!({"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key})
    }

    fn reasons_of(e: &crate::explain::Explanation, node: &str) -> Vec<String> {
        e.nodes
            .iter()
            .find(|n| n.name.as_str() == node)
            .unwrap()
            .reasons
            .clone()
    }

    #[test]
    fn required_anti_affinity_keeps_apart_by_hostname() {
        let c = cluster(vec![
            node("a", "4", json!({})),
            node("b", "4", json!({})),
            pod("ns/web-1", Some("a"), "1", 0, json!({"app": "web"})),
        ]);
        let p = with_affinity(
            pod("ns/web-2", None, "1", 0, json!({"app": "web"})),
            "podAntiAffinity",
            json!([term("web", "kubernetes.io/hostname")]),
            json!([]),
        );
        let e = explain(c, p);
        assert_eq!(e.selected, ["b"]);
        assert_eq!(reasons_of(&e, "a"), [super::ERR_REASON_ANTI_AFFINITY]);
    }

    #[test]
    fn existing_pods_anti_affinity_applies_to_the_newcomer() {
        let loner = with_affinity(
            pod("ns/loner", Some("a"), "1", 0, json!({"app": "loner"})),
            "podAntiAffinity",
            json!([term("web", "kubernetes.io/hostname")]),
            json!([]),
        );
        let c = cluster(vec![
            node("a", "4", json!({})),
            node("b", "4", json!({})),
            loner,
        ]);
        let e = explain(c, pod("ns/web", None, "1", 0, json!({"app": "web"})));
        assert_eq!(
            reasons_of(&e, "a"),
            [super::ERR_REASON_EXISTING_ANTI_AFFINITY]
        );
        assert_eq!(e.selected, ["b"]);
    }

    #[test]
    fn the_first_pod_of_a_group_may_follow_its_own_affinity() {
        let c = cluster(vec![
            node("a", "4", json!({"zone": "z1"})),
            node("b", "4", json!({})),
        ]);
        let p = with_affinity(
            pod("ns/db-0", None, "1", 0, json!({"app": "db"})),
            "podAffinity",
            json!([term("db", "zone")]),
            json!([]),
        );
        let e = explain(c, p);
        // Node b lacks the topology key: no pod could ever be there with it.
        assert_eq!(e.selected, ["a"]);
        assert_eq!(reasons_of(&e, "b"), [super::ERR_REASON_AFFINITY]);
        let c = cluster(vec![node("a", "4", json!({"zone": "z1"}))]);
        let p = with_affinity(
            pod("ns/x", None, "1", 0, json!({"app": "other"})),
            "podAffinity",
            json!([term("db", "zone")]),
            json!([]),
        );
        assert!(
            explain(c, p).selected.is_empty(),
            "a pod not matching its own terms needs a peer"
        );
    }

    #[test]
    fn namespace_selector_picks_namespaces_by_label() {
        let ns = |name: &str, team: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"team": team}}});
        let c = cluster(vec![
            ns("blue", "b"),
            ns("red", "r"),
            node("a", "4", json!({})),
            node("b", "4", json!({})),
            pod("blue/web", Some("a"), "1", 0, json!({"app": "web"})),
            pod("red/web", Some("b"), "1", 0, json!({"app": "web"})),
        ]);
        let mut t = term("web", "kubernetes.io/hostname");
        t["namespaceSelector"] = json!({"matchLabels": {"team": "b"}});
        let p = with_affinity(
            pod("ns/x", None, "1", 0, json!({})),
            "podAntiAffinity",
            json!([t]),
            json!([]),
        );
        let e = explain(c, p);
        assert_eq!(e.selected, ["b"], "only the blue team's pod repels");
    }

    #[test]
    fn a_not_in_namespace_selector_selects_every_namespace_as_upstream_does() {
        // Upstream resolves the selector to namespaces but keeps it, then matches it against no
        // labels: `team NotIn [r]` holds there, so the red pod repels too.
        let ns = |name: &str, team: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"team": team}}});
        let c = cluster(vec![
            ns("blue", "b"),
            ns("red", "r"),
            node("a", "4", json!({})),
            node("b", "4", json!({})),
            pod("red/web", Some("a"), "1", 0, json!({"app": "web"})),
        ]);
        let mut t = term("web", "kubernetes.io/hostname");
        t["namespaceSelector"] =
            json!({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["r"]}]});
        let p = with_affinity(
            pod("blue/x", None, "1", 0, json!({})),
            "podAntiAffinity",
            json!([t]),
            json!([]),
        );
        let e = explain(c, p);
        assert_eq!(e.selected, ["b"]);
        assert_eq!(reasons_of(&e, "a"), [super::ERR_REASON_ANTI_AFFINITY]);
    }

    #[test]
    fn preferred_terms_and_hard_affinity_weight_score() {
        let friend = with_affinity(
            pod("ns/friend", Some("b"), "1", 0, json!({"app": "friend"})),
            "podAffinity",
            json!([term("web", "kubernetes.io/hostname")]),
            json!([]),
        );
        let c = cluster(vec![
            node("a", "4", json!({})),
            node("b", "4", json!({})),
            friend,
        ]);
        let e = explain(c, pod("ns/web", None, "1", 0, json!({"app": "web"})));
        let score = |n: &str| {
            e.nodes
                .iter()
                .find(|x| x.name.as_str() == n)
                .unwrap()
                .scores[super::NAME]
        };
        // The existing pod's required affinity counts with hardPodAffinityWeight 1, normalised.
        assert_eq!((score("a"), score("b")), (0, 200));
    }
}
