//! What would make it fit: the smallest changes to the cluster or to the pod after which the
//! pod fits, each proved by running the whole pipeline again with the change applied — the same
//! release, profiles and configuration — and kept only if the pod then fits without preemption.
//!
//! A candidate is a list of change-planning edits (the `whatif` flags: `--uncordon`,
//! `--untaint`, `--label`, `--clone-node`, `--delete-pod`) and of edits to the pod (an RFC 6902
//! JSON Patch on its manifest). Candidates come from the rejections (`candidates`), are ranked by
//! disruption — nothing to do, then cluster changes that evict nothing, then pod edits, then
//! evictions —, then by how many changes, then by how much; pairs are tried only when no single
//! candidate works. Verification follows what `whatif` does with the same flags: a candidate
//! with edits runs as a change plan (`plan::run`, the pod queued after what the edits displace),
//! one without as a single cycle on the unchanged cluster; so a script that re-runs `whatif` with
//! a suggestion's `edits` and `podPatch` sees the pod land on `fitsOn`.

pub mod candidates;
pub mod pending;
pub mod pod_change;
pub mod table;

use crate::explain::Explanation;
use crate::framework::runner::Framework;
use crate::framework::snapshot::Snapshot;
use crate::model::cluster::Cluster;
use crate::model::intern::Str;
use crate::model::pod::Pod;
use crate::plan::{self, Origin, Outcome, edit::Edit};
use pod_change::PodChange;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

/// How disruptive a change is, least first: the order suggestions are ranked in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    /// Nothing to do: the pod fits once pods already terminating are gone.
    Wait,
    /// A change to nodes that evicts nothing (uncordon, a taint, a label, more nodes).
    Cluster,
    /// An edit to the pod.
    Pod,
    /// Pods deleted to make room, beyond what preemption would do.
    Evict,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Wait => "wait",
            Kind::Cluster => "cluster",
            Kind::Pod => "pod",
            Kind::Evict => "evict",
        }
    }
}

/// A change to try.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub kind: Kind,
    pub edits: Vec<Edit>,
    pub pod: Vec<PodChange>,
    /// How much it changes, within its kind (smaller first): a request lowered by this many
    /// thousandths, this many nodes added, this many pods evicted.
    pub amount: i64,
    pub description: String,
}

impl Candidate {
    pub fn changes(&self) -> usize {
        self.edits.len() + self.pod.len()
    }

    /// The edits as `whatif` arguments: `["--untaint", "gpu-b1=dedicated:NoSchedule"]`.
    pub fn arguments(&self) -> Vec<String> {
        self.edits
            .iter()
            .flat_map(|e| e.flag().split(' ').map(str::to_string).collect::<Vec<_>>())
            .collect()
    }

    /// What identifies the change, whatever its description.
    fn identity(&self) -> (Vec<String>, String) {
        (self.arguments(), format!("{:?}", self.pod))
    }

    /// The change with the nodes it touches left out: the same taint removed, label set or node
    /// shape added on any node, or pods deleted anywhere.
    fn family(&self) -> (Kind, Vec<String>, String) {
        let edits = self
            .edits
            .iter()
            .map(|e| match e {
                Edit::Uncordon(_) => "--uncordon".to_string(),
                Edit::Untaint { key, effect, .. } => {
                    format!("--untaint {key}:{}", effect.map_or("", |e| e.as_str()))
                }
                Edit::Label { key, value, .. } => format!("--label {key}={value:?}"),
                Edit::CloneNode { .. } => "--clone-node".to_string(),
                Edit::DeletePod { .. } => "--delete-pod".to_string(),
                other => other.flag(),
            })
            .collect();
        (self.kind, edits, format!("{:?}", self.pod))
    }

    /// Both changes at once.
    fn and(&self, other: &Candidate) -> Candidate {
        Candidate {
            kind: self.kind.max(other.kind),
            edits: self.edits.iter().chain(&other.edits).cloned().collect(),
            pod: self.pod.iter().chain(&other.pod).cloned().collect(),
            amount: self.amount + other.amount,
            description: format!("{}, and {}", self.description, other.description),
        }
    }
}

/// Least disruption, then fewest changes, then smallest amount; then by description, so the
/// order is the same on every run.
fn rank(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    (a.kind, a.changes(), a.amount, &a.description).cmp(&(
        b.kind,
        b.changes(),
        b.amount,
        &b.description,
    ))
}

/// A verified change.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Suggestion {
    pub kind: Kind,
    pub description: String,
    /// The `whatif` arguments that apply the cluster changes.
    pub edits: Vec<String>,
    /// RFC 6902 operations on the pod's manifest; empty when the pod is unchanged.
    pub pod_patch: Vec<Value>,
    /// Where the pod lands with the change: the node a plan places it on, or the best-scoring
    /// nodes of a single cycle.
    pub fits_on: Vec<String>,
    /// Pods the change deletes or evicts, `namespace/name`.
    pub evicts: Vec<String>,
    /// Other pending pods that fit after the change (each on its own) and did not before.
    pub also_places: Vec<String>,
    /// Other pending pods that fitted before and do not after.
    pub stops_placing: Vec<String>,
}

/// The section: the suggestions, best first, and how many candidates were tried.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Suggestions {
    pub suggestions: Vec<Suggestion>,
    /// Candidates run through the pipeline.
    #[serde(rename = "suggestionsTried")]
    pub tried: usize,
    /// Why there is no suggestion, when there is none.
    #[serde(rename = "noSuggestion")]
    pub none_because: Option<String>,
}

/// Candidates verified at most, singles and pairs together: enough for every case seen, and a
/// bound on the time on a large cluster (each candidate with edits is a plan).
pub const MAX_TRIED: usize = 24;
/// Candidates verified as whole change plans at most: each copies the cluster and builds a
/// snapshot, a tenth of a second on 5,000 nodes.
pub const MAX_PLANS: usize = 4;
/// Other pending pods whose fit is compared before and after a suggestion.
pub const MAX_OTHERS: usize = 32;
/// Singles combined into pairs when no single candidate works.
const PAIR_SINGLES: usize = 8;

/// A pending pod that fits nowhere (or only by preemption), with what it is scheduled against.
pub struct Problem<'a> {
    /// Every profile: a plan queues other pods too.
    pub fws: &'a [Framework],
    /// The pod's profile.
    pub fw: &'a Framework,
    /// The cluster without the pod.
    pub cluster: &'a Arc<Cluster>,
    /// A snapshot of `cluster`.
    pub snapshot: &'a Snapshot,
    pub pod: &'a Pod,
    pub explanation: &'a Explanation,
    /// The pod comes as a Pod manifest, which a patch can edit (not a workload's template).
    pub pod_edits: bool,
}

/// The suggestions for `p`, at most `limit`.
pub fn suggest(p: &Problem, limit: usize) -> Suggestions {
    if p.fws.iter().any(|f| !f.extender_clients.is_empty()) {
        return Suggestions {
            none_because: Some("not looked for with --call-extenders: extenders keep their own view of the cluster, which would not include the changes".into()),
            ..Suggestions::default()
        };
    }
    let rejections = candidates::Rejections::from_explanation(p.explanation, p.snapshot);
    let mut singles = candidates::generate(p, &rejections);
    singles.sort_by(rank);
    let mut seen = BTreeSet::new();
    singles.retain(|c| seen.insert(c.identity()));
    let mut verifier = Verifier::new(p);
    let mut out = Suggestions::default();
    verify_in_order(&mut verifier, &singles, limit, &mut out);
    if out.suggestions.is_empty() && out.tried < MAX_TRIED {
        let firsts: Vec<&Candidate> = singles
            .iter()
            .filter(|c| c.changes() == 1)
            .take(PAIR_SINGLES)
            .collect();
        let mut pairs: Vec<Candidate> = Vec::new();
        for (i, a) in firsts.iter().enumerate() {
            for b in &firsts[i + 1..] {
                pairs.push(a.and(b));
            }
        }
        pairs.sort_by(rank);
        verify_in_order(&mut verifier, &pairs, limit, &mut out);
    }
    if out.suggestions.is_empty() {
        out.none_because = Some(if singles.is_empty() {
            format!(
                "no change to try: {}",
                rejections.unaddressed(p.explanation)
            )
        } else {
            format!(
                "none of the {} change(s) tried made the pod fit without preemption",
                out.tried
            )
        });
    }
    out
}

/// Verifies candidates in rank order, one family at a time (`one_family_at_a_time`).
fn verify_in_order(
    v: &mut Verifier,
    candidates: &[Candidate],
    limit: usize,
    out: &mut Suggestions,
) {
    one_family_at_a_time(candidates, |c| *c, |c| verify_one(v, c, limit, out));
}

/// Candidates in rank order, one family at a time: a candidate whose family already has a
/// suggestion waits until every other family has had its turn, so that removing the same taint
/// from twenty GPU nodes does not fill every slot ahead of a different kind of change.
/// `suggest` tries one and says whether it became a suggestion.
fn one_family_at_a_time<T>(
    candidates: impl IntoIterator<Item = T>,
    candidate: impl Fn(&T) -> &Candidate,
    mut suggest: impl FnMut(T) -> bool,
) {
    let mut suggested = BTreeSet::new();
    let mut deferred = Vec::new();
    for c in candidates {
        let family = candidate(&c).family();
        if suggested.contains(&family) {
            deferred.push(c);
        } else if suggest(c) {
            suggested.insert(family);
        }
    }
    for c in deferred {
        suggest(c);
    }
}

/// Whether the candidate, verified within the budgets, became a suggestion.
fn verify_one(v: &mut Verifier, c: &Candidate, limit: usize, out: &mut Suggestions) -> bool {
    if out.suggestions.len() >= limit || out.tried >= MAX_TRIED {
        return false;
    }
    if c.edits.iter().any(|e| node_only(e).is_none()) {
        if v.plans >= MAX_PLANS {
            return false;
        }
        v.plans += 1;
    }
    out.tried += 1;
    match v.verify(c) {
        Some(s) => {
            out.suggestions.push(s);
            true
        }
        None => false,
    }
}

/// The pod with the candidate's edits, and their patch.
fn edited_pod(pod: &Pod, changes: &[PodChange]) -> (Pod, Vec<Value>) {
    let mut pod = pod.clone();
    let mut patch = Vec::new();
    for c in changes {
        patch.extend(c.patch(&pod));
        c.apply(&mut pod);
    }
    (pod, patch)
}

/// The node an edit changes when it changes nothing else: no pod leaves or is added, no node
/// comes or goes. A plan of such edits and the one pod is one cycle on the cluster with those
/// nodes replaced.
fn node_only(e: &Edit) -> Option<Str> {
    match e {
        Edit::Uncordon(n) | Edit::Untaint { node: n, .. } | Edit::Label { node: n, .. } => Some(*n),
        _ => None,
    }
}

/// Where a verified pod lands, the pods evicted on the way, and the other pending pods that
/// start and stop fitting.
type Landing = (Vec<String>, Vec<String>, (Vec<String>, Vec<String>));

/// Runs candidates through the pipeline.
pub struct Verifier<'p, 'a> {
    p: &'p Problem<'a>,
    others: Others,
    /// A copy of the problem's snapshot that node-only edits and placements change for one
    /// verification and put back: cloned once, not per candidate.
    scratch: Option<Snapshot>,
    /// Candidates verified as whole change plans (each copies the cluster and builds a snapshot).
    plans: usize,
}

impl<'p, 'a> Verifier<'p, 'a> {
    pub fn new(p: &'p Problem<'a>) -> Verifier<'p, 'a> {
        Verifier {
            p,
            others: Others::new(p),
            scratch: None,
            plans: 0,
        }
    }

    /// A suggestion if the pod fits without preemption once the candidate is applied.
    pub fn verify(&mut self, c: &Candidate) -> Option<Suggestion> {
        let (pod, pod_patch) = edited_pod(self.p.pod, &c.pod);
        let (fits_on, evicts, also) = if c.edits.iter().all(|e| node_only(e).is_some()) {
            self.in_scratch(&c.edits, pod)?
        } else {
            self.as_plan(&c.edits, pod)?
        };
        let (also_places, stops_placing) = also;
        Some(Suggestion {
            kind: c.kind,
            description: c.description.clone(),
            edits: c.arguments(),
            pod_patch,
            fits_on,
            evicts,
            also_places,
            stops_placing,
        })
    }

    /// One cycle on the snapshot with the edited nodes swapped in, then put back.
    fn in_scratch(&mut self, edits: &[Edit], pod: Pod) -> Option<Landing> {
        let (fw, fws) = (self.p.fw, self.p.fws);
        // Each edit on a cluster of its node alone, as a plan applies it.
        let mut edited: Vec<(usize, Arc<crate::model::node::Node>)> = Vec::new();
        for e in edits {
            let name = node_only(e)?;
            let i = self.p.snapshot.node_index(name)?;
            let node = match edited.iter().position(|(k, _)| *k == i) {
                Some(k) => edited.remove(k).1,
                None => self.p.snapshot.nodes[i].node.clone(),
            };
            let mut alone = Cluster {
                nodes: vec![node],
                ..Cluster::default()
            };
            e.apply(&mut alone).ok()?;
            edited.push((i, alone.nodes.remove(0)));
        }
        let p = self.p;
        let others = &self.others;
        let scratch = self.scratch.get_or_insert_with(|| p.snapshot.clone());
        let originals: Vec<(usize, Arc<crate::model::node::Node>)> = edited
            .into_iter()
            .map(|(i, n)| (i, std::mem::replace(&mut scratch.nodes[i].node, n)))
            .collect();
        let r = fw.decide(scratch, &pod);
        let result = match r.chosen {
            Some(chosen) if r.error.is_none() => {
                let fits_on: Vec<String> = if originals.is_empty() {
                    r.selected
                        .iter()
                        .map(|&i| scratch.nodes[i].name().to_string())
                        .collect()
                } else {
                    // A plan takes the first of the best nodes, as `whatif` with edits does.
                    vec![scratch.nodes[chosen].name().to_string()]
                };
                let also = if others.pods.is_empty() {
                    (Vec::new(), Vec::new())
                } else {
                    let (node, uid) = (scratch.nodes[chosen].name(), pod.uid);
                    scratch.assume(Arc::new(pod), node);
                    let also = others.compare(fws, scratch);
                    scratch.remove(node, uid);
                    also
                };
                Some((fits_on, Vec::new(), also))
            }
            _ => None,
        };
        let scratch = self.scratch.as_mut()?;
        for (i, n) in originals {
            scratch.nodes[i].node = n;
        }
        result
    }

    /// The change plan `whatif` runs with the edits and the pod.
    fn as_plan(&mut self, edits: &[Edit], pod: Pod) -> Option<Landing> {
        let request = plan::Request {
            edits: edits.to_vec(),
            drain: Default::default(),
            workloads: vec![plan::Workload::Replicas {
                template: pod,
                count: 1,
            }],
            pending: None,
            seed: None,
        };
        let done = plan::run(self.p.fws, (**self.p.cluster).clone(), request).ok()?;
        let node = done
            .pods
            .iter()
            .find_map(|r| match (&r.origin, &r.outcome) {
                (
                    Origin::Workload { .. },
                    Outcome::Scheduled {
                        node, preempted, ..
                    },
                ) if preempted.is_empty() => Some(node.to_string()),
                _ => None,
            })?;
        let mut evicts: Vec<String> = done
            .edits
            .iter()
            .flat_map(|a| a.displaced.iter().map(|(pod, _)| pod.key()))
            .chain(done.pods.iter().flat_map(|r| match &r.outcome {
                Outcome::Scheduled { preempted, .. } => preempted.clone(),
                _ => Vec::new(),
            }))
            .collect();
        evicts.sort();
        evicts.dedup();
        let also = self.others.compare(self.p.fws, &done.snapshot);
        Some((vec![node], evicts, also))
    }
}

/// The other pending pods (the first `MAX_OTHERS` by name) and whether each fits now.
pub struct Others {
    pods: Vec<(Arc<Pod>, bool)>,
}

impl Others {
    fn new(p: &Problem) -> Others {
        let mut pending: Vec<&Arc<Pod>> = p
            .cluster
            .pods
            .iter()
            .filter(|o| o.node_name.is_none() && !o.is_terminated() && o.uid != p.pod.uid)
            .filter(|o| o.deletion_timestamp.is_none())
            .collect();
        pending.sort_by(|a, b| {
            (a.namespace.as_str(), a.name.as_str()).cmp(&(b.namespace.as_str(), b.name.as_str()))
        });
        let pods = pending
            .into_iter()
            .filter_map(|o| {
                let fits = fits(p.fws, p.snapshot, o)?;
                Some((o.clone(), fits))
            })
            .take(MAX_OTHERS)
            .collect();
        Others { pods }
    }

    /// The pods that fit on `after` and did not before, and the reverse.
    fn compare(&self, fws: &[Framework], after: &Snapshot) -> (Vec<String>, Vec<String>) {
        let (mut places, mut stops) = (Vec::new(), Vec::new());
        for (o, before) in &self.pods {
            let now = fits(fws, after, o).unwrap_or(*before);
            match (before, now) {
                (false, true) => places.push(o.key()),
                (true, false) => stops.push(o.key()),
                _ => {}
            }
        }
        (places, stops)
    }
}

/// Whether `pod` fits on `snapshot` without preemption; `None` when no profile serves it.
fn fits(fws: &[Framework], snapshot: &Snapshot, pod: &Pod) -> Option<bool> {
    let fw = fws
        .iter()
        .find(|f| f.profile == pod.scheduler_name.as_str())?;
    Some(!fw.decide(snapshot, pod).selected.is_empty())
}

#[cfg(test)]
mod tests;
