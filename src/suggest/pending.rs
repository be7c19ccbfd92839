//! `explain --all-pending`: cluster changes that place pending pods, ranked by how many they
//! place. The candidates are the cluster changes (no pod edit) found for each pending pod that
//! fits nowhere; each is verified as `explain --all-pending` with the change runs it — a change
//! plan queuing every pending pod — and counted against the same plan without the change.

use super::candidates::{self, Rejections};
use super::{Candidate, Kind, Problem};
use crate::explain::Explanation;
use crate::framework::runner::Framework;
use crate::framework::snapshot::Snapshot;
use crate::model::cluster::Cluster;
use crate::model::pod::Pod;
use crate::plan::edit::{Edit, MAX_CLONES};
use crate::plan::{self, Origin, Outcome, PodFilter};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Changes tried at most, each a plan queuing every pending pod (growing new-node changes runs
/// up to `MAX_GROWTH_PLANS` more).
pub const MAX_PLANS: usize = 8;

/// A verified cluster change and the pending pods it places.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Placing {
    pub kind: super::Kind,
    pub description: String,
    /// The arguments of `explain --all-pending` (or `whatif`) that apply it.
    pub edits: Vec<String>,
    /// Pending pods placed with the change that stay pending without it.
    pub places: Vec<String>,
    /// Of the pending pods considered.
    pub of: usize,
    /// Pods the change deletes or evicts.
    pub evicts: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSuggestions {
    pub suggestions: Vec<Placing>,
    /// Changes tried; the counts a new-node change was grown through are not counted apart.
    #[serde(rename = "suggestionsTried")]
    pub tried: usize,
}

/// Plans run at most, over all the `--clone-node` changes, to find how many nodes each adds.
const MAX_GROWTH_PLANS: usize = 8;

/// The pending pods a plan places, and the pods its edits delete or evict.
type Placed = (BTreeSet<String>, Vec<String>);

/// The pending pods placed (without preemption) by a plan of `edits` queuing every pod `select`
/// chooses; `None` when the edits do not apply.
fn placed(
    fws: &[Framework],
    cluster: &Cluster,
    edits: &[Edit],
    select: impl Fn(&Pod) -> bool + 'static,
) -> Option<Placed> {
    let pending: PodFilter = Box::new(select);
    let done = plan::run(
        fws,
        cluster.clone(),
        plan::Request {
            edits: edits.to_vec(),
            drain: Default::default(),
            workloads: Vec::new(),
            pending: Some(pending),
            seed: None,
        },
    )
    .ok()?;
    let places = done
        .pods
        .iter()
        .filter(|r| {
            r.origin == Origin::Pending
                && matches!(&r.outcome, Outcome::Scheduled { preempted, .. } if preempted.is_empty())
        })
        .map(|r| r.pod.key())
        .collect();
    let evicts = done
        .edits
        .iter()
        .flat_map(|a| a.displaced.iter().map(|(p, _)| p.key()))
        .collect();
    Some((places, evicts))
}

/// The cluster changes that place the most of `pending` (each with its explanation), at most
/// `limit`.
pub fn suggest(
    fws: &[Framework],
    cluster: &Arc<Cluster>,
    snapshot: &Snapshot,
    pending: &[(&Arc<Pod>, &Explanation)],
    limit: usize,
) -> PendingSuggestions {
    let mut out = PendingSuggestions::default();
    let stuck: Vec<&(&Arc<Pod>, &Explanation)> =
        pending.iter().filter(|(_, e)| !e.fits()).collect();
    if limit == 0 || stuck.is_empty() {
        return out;
    }
    // Each candidate with the pending pods that proposed it: the most asked for first.
    let mut proposed: BTreeMap<(Vec<String>, String), (Vec<String>, Candidate)> = BTreeMap::new();
    for (pod, e) in &stuck {
        let Some(fw) = fws
            .iter()
            .find(|f| f.profile == pod.scheduler_name.as_str())
        else {
            continue;
        };
        let p = Problem {
            fws,
            fw,
            cluster,
            snapshot,
            pod,
            explanation: e,
            pod_edits: false,
        };
        for c in candidates::generate(&p, &Rejections::from_explanation(e, snapshot)) {
            if c.kind == Kind::Pod {
                continue;
            }
            proposed
                .entry(c.identity())
                .or_insert_with(|| (Vec::new(), c))
                .0
                .push(pod.key());
        }
    }
    let mut order: Vec<(Vec<String>, Candidate)> = proposed.into_values().collect();
    order.sort_by(|(n, a), (m, b)| m.len().cmp(&n.len()).then_with(|| super::rank(a, b)));
    let uids: BTreeSet<_> = pending.iter().map(|(p, _)| p.uid).collect();
    let select = move |p: &Pod| uids.contains(&p.uid);
    let Some((before, _)) = placed(fws, cluster, &[], select.clone()) else {
        return out;
    };
    let mut growth_plans = MAX_GROWTH_PLANS;
    let growth = Growth {
        fws,
        cluster,
        before: &before,
    };
    let mut try_one = |proposed_by: Vec<String>, c: Candidate| {
        let after = placed(fws, cluster, &c.edits, select.clone())?;
        let (c, (after, evicts)) = growth.grown(c, after, &proposed_by, &select, &mut growth_plans);
        let places: Vec<String> = after.difference(&before).cloned().collect();
        (!places.is_empty()).then(|| Placing {
            kind: c.kind,
            description: c.description.clone(),
            edits: c.arguments(),
            places,
            of: stuck.len(),
            evicts,
        })
    };
    super::one_family_at_a_time(
        order,
        |(_, c)| c,
        |(proposed_by, c)| {
            if out.tried >= MAX_PLANS {
                return false;
            }
            out.tried += 1;
            let placing = try_one(proposed_by, c);
            let placed_some = placing.is_some();
            out.suggestions.extend(placing);
            placed_some
        },
    );
    // Most placed first; equal counts keep the order they were tried in: most proposed, then
    // least disruptive, a change of a kind already placing pods after every other kind.
    out.suggestions
        .sort_by_key(|s| std::cmp::Reverse(s.places.len()));
    out.suggestions.truncate(limit);
    out
}

/// What growing a `--clone-node` change needs: the plans to run and what they are measured
/// against.
struct Growth<'a> {
    fws: &'a [Framework],
    cluster: &'a Cluster,
    /// The pending pods the plan without any change places.
    before: &'a BTreeSet<String>,
}

impl Growth<'_> {
    fn gained(&self, placed: &Placed) -> usize {
        placed.0.difference(self.before).count()
    }

    /// A change adding one node like another, grown to the fewest such nodes that place the
    /// most pending pods: one node is often not what a deployment's pending replicas need.
    /// `proposed_by` are the pods that proposed the change (each would fit such a node empty);
    /// those the plan without it places anyway need no node. The count goes first to what the
    /// others would need if every node took as many as the first, then doubles while that
    /// places more and some are still left; then it comes down to the smallest count that
    /// places as many: one less first (right when the pods are alike), then by halves. Each
    /// count is a plan of its own, `plans` at most. Any other change is returned as it is.
    fn grown(
        &self,
        one: Candidate,
        placed_by_one: Placed,
        proposed_by: &[String],
        select: &(impl Fn(&Pod) -> bool + Clone + 'static),
        plans: &mut usize,
    ) -> (Candidate, Placed) {
        let by_one = self.gained(&placed_by_one);
        let &[Edit::CloneNode { node, count: 1 }] = one.edits.as_slice() else {
            return (one, placed_by_one);
        };
        if by_one == 0 {
            return (one, placed_by_one);
        }
        let wanted = proposed_by
            .iter()
            .filter(|p| !self.before.contains(*p))
            .count();
        // More nodes than pods to place cannot place more.
        let most_nodes = wanted.min(MAX_CLONES);
        let mut run = |count: usize| {
            (*plans > 0).then(|| {
                *plans -= 1;
                placed(
                    self.fws,
                    self.cluster,
                    &[Edit::CloneNode { node, count }],
                    select.clone(),
                )
            })
        };
        let mut best = (1, placed_by_one);
        // A count known to place fewer than `best` does (none below one node).
        let mut fewer = 0;
        let mut more = wanted.div_ceil(by_one).min(most_nodes);
        while self.gained(&best.1) < wanted && more > best.0 {
            match run(more) {
                Some(Some(p)) if self.gained(&p) > self.gained(&best.1) => {
                    fewer = best.0;
                    best = (more, p);
                    more = (more * 2).min(most_nodes);
                }
                _ => break,
            }
        }
        let most = self.gained(&best.1);
        let mut below = best.0 - 1;
        while below > fewer {
            match run(below) {
                Some(Some(p)) if self.gained(&p) >= most => best = (below, p),
                // Fewer placed, or a plan that does not apply: not an answer either way.
                Some(_) => fewer = below,
                None => break,
            }
            below = (fewer + best.0) / 2;
        }
        (
            super::candidates::clone_node(node, best.0, one.amount),
            best.1,
        )
    }
}
