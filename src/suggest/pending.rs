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
use crate::plan::{self, Origin, Outcome, PodFilter};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Change plans run at most (each queues every pending pod).
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
    #[serde(rename = "suggestionsTried")]
    pub tried: usize,
}

/// The pending pods placed (without preemption) by a plan of `edits` queuing every pod `select`
/// chooses; `None` when the edits do not apply.
fn placed(
    fws: &[Framework],
    cluster: &Cluster,
    edits: &[crate::plan::edit::Edit],
    select: impl Fn(&Pod) -> bool + 'static,
) -> Option<(BTreeSet<String>, Vec<String>)> {
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
    // Each candidate with how many pending pods proposed it: the most asked for first.
    let mut proposed: BTreeMap<(Vec<String>, String), (usize, Candidate)> = BTreeMap::new();
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
                .and_modify(|(n, _)| *n += 1)
                .or_insert((1, c));
        }
    }
    let mut order: Vec<(usize, Candidate)> = proposed.into_values().collect();
    order.sort_by(|(n, a), (m, b)| m.cmp(n).then_with(|| super::rank(a, b)));
    let uids: BTreeSet<_> = pending.iter().map(|(p, _)| p.uid).collect();
    let select = move |p: &Pod| uids.contains(&p.uid);
    let Some((before, _)) = placed(fws, cluster, &[], select.clone()) else {
        return out;
    };
    for (_, c) in order.into_iter().take(MAX_PLANS) {
        out.tried += 1;
        let Some((after, evicts)) = placed(fws, cluster, &c.edits, select.clone()) else {
            continue;
        };
        let places: Vec<String> = after.difference(&before).cloned().collect();
        if places.is_empty() {
            continue;
        }
        out.suggestions.push(Placing {
            kind: c.kind,
            description: c.description.clone(),
            edits: c.arguments(),
            places,
            of: stuck.len(),
            evicts,
        });
    }
    // Most placed first; equal counts keep the order they were tried in (most proposed, then
    // least disruptive).
    out.suggestions
        .sort_by_key(|s| std::cmp::Reverse(s.places.len()));
    out.suggestions.truncate(limit);
    out
}
