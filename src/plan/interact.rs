//! Which pods of a plan can change each other's placement, and how. The exploration of orders
//! (`race`) tries other orders only between pods that interact, and the report says why an
//! outcome depends on the order from the same relation.
//!
//! Two kinds of interaction:
//! - through labels and shared objects, read from the pods: a topology spread constraint (the
//!   pod's own, or the cluster default one from its Services and controller) that counts the other
//!   pod, a pod (anti-)affinity term of either that selects the other, a PersistentVolumeClaim both
//!   use, device claims of both;
//! - through room on nodes, learnt from the scheduling cycles run: a pod contends with another when
//!   a node the other may take was among its best, close enough to its best that the other's
//!   requests could reverse the order, or unfeasible for it while the other was there.

use super::edit::UNSCHEDULABLE_TAINT;
use crate::framework::runner::Framework;
use crate::framework::schedule_one::CycleResult;
use crate::framework::snapshot::Snapshot;
use crate::model::cluster::Cluster;
use crate::model::intern::Str;
use crate::model::labels::{Labels, Selector};
use crate::model::node::Node;
use crate::model::pod::Pod;
use crate::model::taints::{Effect, Taint, tolerated};
use crate::plugins::pod_topology_spread::default_selector;
use std::collections::{BTreeSet, HashMap, HashSet};

/// How two pods `a` and `b` see each other through labels and shared objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Labelled {
    /// `a`'s topology spread constraints count `b`: whether `b` runs or terminates matters.
    pub a_counts_b: bool,
    pub b_counts_a: bool,
    /// A pod affinity or anti-affinity term of one selects the other: a terminating pod still
    /// counts until it is gone.
    pub affinity: bool,
    /// The same PersistentVolumeClaim, or device claims on both sides.
    pub shared: bool,
}

impl Labelled {
    pub fn any(self) -> bool {
        self.a_counts_b || self.b_counts_a || self.affinity || self.shared
    }

    /// Whether `b` being there (running or terminating) or gone matters to `a`'s placement.
    pub fn presence(self) -> bool {
        self.affinity || self.shared
    }

    fn swapped(self) -> Labelled {
        Labelled {
            a_counts_b: self.b_counts_a,
            b_counts_a: self.a_counts_b,
            ..self
        }
    }
}

/// The pods a spread constraint of `pod` counts: its own constraints' selectors, or, without
/// any, the selector the default constraints take from its Services and controller.
fn spread_selectors(pod: &Pod, cluster: &Cluster) -> Vec<Selector> {
    if pod.topology_spread_constraints.is_empty() {
        let s = default_selector(pod, &cluster.workloads);
        return if s.is_empty() { Vec::new() } else { vec![s] };
    }
    pod.topology_spread_constraints
        .iter()
        // A selector that does not parse counts everything here: this relation over-approximates.
        .map(|c| {
            Selector::from_label_selector(c.label_selector.as_ref(), &cluster.strings)
                .unwrap_or_else(|_| Selector::everything())
        })
        .collect()
}

/// Whether a pod (anti-)affinity term of `a`, required or preferred, selects `b`.
fn affinity_selects(a: &Pod, b: &Pod, cluster: &Cluster) -> bool {
    let aff = &a.affinity;
    let empty = Labels::default();
    let ns_labels = cluster.namespaces.get(&b.namespace).unwrap_or(&empty);
    aff.required_affinity
        .iter()
        .chain(&aff.required_anti_affinity)
        .chain(aff.preferred_affinity.iter().map(|w| &w.term))
        .chain(aff.preferred_anti_affinity.iter().map(|w| &w.term))
        .any(|t| t.matches(b.namespace, &b.labels, ns_labels))
}

fn shares(a: &Pod, b: &Pod) -> bool {
    (!a.resource_claims.is_empty() && !b.resource_claims.is_empty())
        || (a.namespace == b.namespace && a.claim_names().any(|c| b.claim_names().any(|d| c == d)))
}

/// The label relation of two pods, each named by a key that outlives orders (`Track::key`).
#[derive(Default)]
pub struct Relations {
    spread: HashMap<Str, Vec<Selector>>,
    pairs: HashMap<(Str, Str), Labelled>,
}

impl Relations {
    pub fn labelled(&mut self, cluster: &Cluster, a: (Str, &Pod), b: (Str, &Pod)) -> Labelled {
        if let Some(l) = self.pairs.get(&(a.0, b.0)) {
            return *l;
        }
        let mut counts = |(key, pod): (Str, &Pod), other: &Pod| {
            pod.namespace == other.namespace
                && self
                    .spread
                    .entry(key)
                    .or_insert_with(|| spread_selectors(pod, cluster))
                    .iter()
                    .any(|s| s.matches(&other.labels))
        };
        let l = Labelled {
            a_counts_b: counts(a, b.1),
            b_counts_a: counts(b, a.1),
            affinity: affinity_selects(a.1, b.1, cluster) || affinity_selects(b.1, a.1, cluster),
            shared: shares(a.1, b.1),
        };
        self.pairs.insert((a.0, b.0), l);
        self.pairs.insert((b.0, a.0), l.swapped());
        l
    }
}

/// Whether `pod` may be placed on `node` as far as cordoning goes: a pod gone from a cordoned
/// node frees room only for pods that tolerate the cordon.
pub fn may_use(pod: &Pod, node: &Node) -> bool {
    !node.unschedulable
        || tolerated(
            &pod.tolerations,
            &Taint {
                key: Str::new(UNSCHEDULABLE_TAINT),
                value: Str::empty(),
                effect: Some(Effect::NoSchedule),
            },
        )
}

/// Whether the node's labels, taints and cordon admit the pod: what no pod there changes.
fn admits(node: &Node, pod: &Pod) -> bool {
    may_use(pod, node)
        && pod.required_node_affinity.matches(&node.labels, node.name)
        && node.taints.iter().all(|t| {
            !matches!(t.effect, Some(Effect::NoSchedule | Effect::NoExecute))
                || tolerated(&pod.tolerations, t)
        })
}

/// What the cycles of one pod showed of the nodes it could take.
#[derive(Clone, Debug, Default)]
pub struct Contest {
    /// Nodes it was placed on or tied for, by index.
    pub possible: BTreeSet<usize>,
    /// Nodes a cycle selected.
    selected: HashSet<usize>,
    /// Feasible nodes within reach of a cycle's best: the smallest gap (best minus its total).
    gap: HashMap<usize, i64>,
    /// Nodes it could not take while a pod the plan placed was there.
    crowded: HashSet<usize>,
    /// A cycle of it preempted, or would have.
    pub preempts: bool,
}

impl Contest {
    /// Whether a pod on node `n`, whose requests move a score by up to `swing`, may change what
    /// this pod chooses.
    fn reached_by(&self, n: usize, swing: i64) -> bool {
        self.selected.contains(&n)
            || self.crowded.contains(&n)
            || self.gap.get(&n).is_some_and(|&g| g <= swing)
    }
}

/// How much one pod's requests can move a node's score: the resource scorers (NodeResourcesFit's
/// strategy and NodeResourcesBalancedAllocation) change by at most their weight times the share
/// of the node's cpu or memory the pod takes, in points of 100. Normalised scorers that do not
/// read the node's pods are not moved; a rounding point is added.
#[derive(Clone, Copy, Debug, Default)]
pub struct Swing {
    weight: i64,
}

impl Swing {
    pub fn of(fws: &[Framework]) -> Swing {
        let weight = fws
            .iter()
            .map(|fw| {
                fw.score
                    .iter()
                    .filter(|(p, _)| {
                        matches!(
                            fw.plugin(*p).name(),
                            "NodeResourcesFit" | "NodeResourcesBalancedAllocation"
                        )
                    })
                    .map(|(_, w)| *w)
                    .sum::<i64>()
            })
            .max()
            .unwrap_or(0);
        Swing { weight }
    }

    /// The swing of requests of `cpu` millicores and `memory` bytes on `node`.
    pub fn on(self, cpu: i64, memory: i64, node: &Node) -> i64 {
        let alloc = &node.allocatable;
        let share = |want: i64, have: i64| {
            if have <= 0 {
                1.0
            } else {
                (want as f64 / have as f64).min(1.0)
            }
        };
        let share = share(cpu, alloc.milli_cpu).max(share(memory, alloc.memory));
        (self.weight as f64 * 100.0 * share).ceil() as i64 + 1
    }
}

/// What every pod's cycles showed, by pod key.
#[derive(Clone, Debug, Default)]
pub struct Capacity {
    pub swing: Swing,
    pub contests: HashMap<Str, Contest>,
    /// The largest requests of any pod the plan schedules: how far from its best a node is
    /// kept in view.
    widest: (i64, i64),
}

impl Capacity {
    pub fn new(swing: Swing) -> Capacity {
        Capacity {
            swing,
            ..Default::default()
        }
    }

    /// Notes a pod the plan schedules, so that nodes its requests could reach stay in view.
    pub fn meet(&mut self, pod: &Pod) {
        self.widest.0 = self.widest.0.max(pod.non_zero_cpu);
        self.widest.1 = self.widest.1.max(pod.non_zero_memory);
    }

    /// Learns from one cycle of `pod` (by `key`); `placed` are the nodes holding pods the plan
    /// placed at the time, with the cpu and memory those pods request there.
    pub fn observe(
        &mut self,
        (key, pod): (Str, &Pod),
        result: &CycleResult,
        snapshot: &Snapshot,
        placed: &[(usize, i64, i64)],
    ) {
        let (widest, swing) = (self.widest, self.swing);
        let c = self.contests.entry(key).or_default();
        c.selected.extend(result.selected.iter().copied());
        if result.post_filter.as_ref().is_some_and(|o| {
            o.preemption
                .as_ref()
                .is_some_and(|p| !p.candidates.is_empty())
        }) {
            c.preempts = true;
        }
        if result.scores.len() == result.feasible.len() && !result.scores.is_empty() {
            let best = result.scores.iter().map(|s| s.total).max().unwrap_or(0);
            for (&n, s) in result.feasible.iter().zip(&result.scores) {
                let gap = best - s.total;
                if gap <= swing.on(widest.0, widest.1, &snapshot.nodes[n].node) {
                    let e = c.gap.entry(n).or_insert(gap);
                    *e = (*e).min(gap);
                }
            }
        }
        // A node the pod could not take, that would admit it, with the room it would have had
        // without the plan's pods there.
        for &(n, cpu, memory) in placed {
            let node = &snapshot.nodes[n];
            let (alloc, used) = (node.allocatable(), &node.requested);
            let roomy = alloc.milli_cpu - (used.milli_cpu - cpu) >= pod.requests.milli_cpu
                && alloc.memory - (used.memory - memory) >= pod.requests.memory;
            if roomy && admits(&node.node, pod) && result.feasible.binary_search(&n).is_err() {
                c.crowded.insert(n);
            }
        }
    }

    /// The pod was placed on `node`, or may be on any of `tied`.
    pub fn placed(&mut self, key: Str, tied: &[usize]) {
        self.contests
            .entry(key)
            .or_default()
            .possible
            .extend(tied.iter().copied());
    }

    /// Whether pods `a` and `b` (with their requests) may take room the other wanted; unknown
    /// pods (never scheduled yet) may.
    pub fn contend(&self, snapshot: &Snapshot, a: (Str, &Pod), b: (Str, &Pod)) -> bool {
        let (Some(ca), Some(cb)) = (self.contests.get(&a.0), self.contests.get(&b.0)) else {
            return true;
        };
        let reaches = |by: &Contest, pod: &Pod, of: &Contest| {
            by.possible.iter().any(|&n| {
                let swing = self.swing.on(
                    pod.non_zero_cpu,
                    pod.non_zero_memory,
                    &snapshot.nodes[n].node,
                );
                of.reached_by(n, swing)
            })
        };
        reaches(cb, b.1, ca) || reaches(ca, a.1, cb)
    }

    /// The nodes `b` may take that `a` wanted: what they compete for.
    pub fn contested(&self, snapshot: &Snapshot, a: Str, b: (Str, &Pod)) -> Vec<usize> {
        let (Some(ca), Some(cb)) = (self.contests.get(&a), self.contests.get(&b.0)) else {
            return Vec::new();
        };
        cb.possible
            .iter()
            .copied()
            .filter(|&n| {
                let swing = self.swing.on(
                    b.1.non_zero_cpu,
                    b.1.non_zero_memory,
                    &snapshot.nodes[n].node,
                );
                ca.reached_by(n, swing)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::intern::Interner;
    use crate::model::parse::Parse;
    use crate::testing::{cluster, node, parsed_pod, pod};
    use serde_json::json;

    #[test]
    fn spread_affinity_and_claims_relate_pods() {
        let c = cluster(vec![node("n", "4", json!({}))]);
        let mut spread = pod("ns/s", None, "1", 0, json!({"app": "web"}));
        spread["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]);
        let mut anti = pod("ns/a", None, "1", 0, json!({"app": "db"}));
        anti["spec"]["affinity"] = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}}]}});
        let mut claim = pod("ns/c", None, "1", 0, json!({}));
        claim["spec"]["volumes"] =
            json!([{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]);
        let (spread, anti, claim) = (parsed_pod(spread), parsed_pod(anti), parsed_pod(claim));
        let web = parsed_pod(pod("ns/w", None, "1", 0, json!({"app": "web"})));
        let other_ns = parsed_pod(pod("other/w", None, "1", 0, json!({"app": "web"})));
        let mut r = Relations::default();
        let k = |p: &Pod| p.uid;
        let l = r.labelled(&c, (k(&spread), &spread), (k(&web), &web));
        assert!(l.a_counts_b && !l.b_counts_a && !l.presence());
        // Asked the other way round, the same relation turned.
        let back = r.labelled(&c, (k(&web), &web), (k(&spread), &spread));
        assert!(back.b_counts_a && !back.a_counts_b);
        assert!(
            !r.labelled(&c, (k(&spread), &spread), (k(&other_ns), &other_ns))
                .any()
        );
        // A preferred anti-affinity term relates the pods both ways: the other pod's presence.
        let l = r.labelled(&c, (k(&web), &web), (k(&anti), &anti));
        assert!(l.affinity && l.presence());
        assert!(!r.labelled(&c, (k(&web), &web), (k(&claim), &claim)).any());
        let mut twin = pod("ns/c2", None, "1", 0, json!({}));
        twin["spec"]["volumes"] =
            json!([{"name": "x", "persistentVolumeClaim": {"claimName": "data"}}]);
        let twin = parsed_pod(twin);
        assert!(
            r.labelled(&c, (k(&claim), &claim), (k(&twin), &twin))
                .shared
        );
    }

    #[test]
    fn a_swing_is_the_weighted_share_of_the_node_the_pod_takes() {
        let n = crate::model::node::Node::from_k8s(
            &serde_json::from_value(node("n", "4", json!({}))).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap();
        let swing = Swing { weight: 2 };
        // 1 of 4 cpu: a quarter of 200 points, and the rounding point.
        assert_eq!(swing.on(1000, 0, &n), 51);
        assert_eq!(Swing { weight: 0 }.on(1000, 0, &n), 1);
    }
}
