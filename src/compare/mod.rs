//! `--compare-to RELEASE`: the same input under the release modelled and another, what differs
//! and why. Above the pipeline: it reads the answers of both (explanations, placement and plan
//! reports) and the release switches (`Features`) that tell them apart. Renderers in `table`.

pub mod pod;
pub mod switches;
pub mod table;

use crate::explain::Explanation;
use crate::explain::placement::{PlacementEntry, PlacementReport};
use crate::plan::report::{PlanReport, PodReport};
use pod::PodComparison;
use serde::Serialize;
use serde_json::{Value, json};
use switches::Cause;

/// `whatif -f POD` and `explain pod/NAME`: both answers, and what differs.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodReportPair<'a> {
    pub base: &'a Explanation,
    pub other: &'a Explanation,
    #[serde(flatten)]
    pub comparison: PodComparison,
}

/// A replica placed elsewhere, or only under one release.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Move {
    /// From 1.
    pub replica: usize,
    pub base: Option<PlacementEntry>,
    pub other: Option<PlacementEntry>,
}

/// `whatif --replicas N` / `--max`: both placement reports, the replicas that move, and why the
/// first one does.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementComparison<'a> {
    pub base: &'a PlacementReport,
    pub other: &'a PlacementReport,
    /// The same replicas land on the same nodes (tie sets included), as many are placed, and
    /// the one that fits nowhere has the same message.
    pub same: bool,
    pub moves: Vec<Move>,
    /// The first replica that moves, explained under both releases on the cluster as the
    /// replicas before it left it (the same in both): what differs and why.
    pub first_move: Option<PodComparison>,
}

impl<'a> PlacementComparison<'a> {
    pub fn new(base: &'a PlacementReport, other: &'a PlacementReport) -> Self {
        let same_spot = |a: &PlacementEntry, b: &PlacementEntry| {
            (&a.node, &a.tied, a.tied_count) == (&b.node, &b.tied, b.tied_count)
        };
        let n = base.placements.len().max(other.placements.len());
        let moves: Vec<Move> = (0..n)
            .filter_map(|i| {
                let (a, b) = (base.placements.get(i), other.placements.get(i));
                let moved = match (a, b) {
                    (Some(a), Some(b)) => !same_spot(a, b),
                    _ => true,
                };
                moved.then(|| Move {
                    replica: i + 1,
                    base: a.cloned(),
                    other: b.cloned(),
                })
            })
            .collect();
        PlacementComparison {
            base,
            other,
            same: moves.is_empty() && base.stopped == other.stopped,
            moves,
            first_move: None,
        }
    }

    /// The replica to explain under both releases: the first that moves, or the one that fits
    /// nowhere when only the messages differ (from 0: the replicas placed before it).
    pub fn first_difference(&self) -> Option<usize> {
        match self.moves.first() {
            Some(m) => Some(m.replica - 1),
            None if !self.same => Some(self.base.placements.len()),
            None => None,
        }
    }
}

/// A pending pod in brief: what a person compares first.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Brief {
    pub fits: bool,
    pub selected: Vec<String>,
    pub message: String,
    pub nominated_node: Option<String>,
    pub victims: Vec<String>,
}

impl Brief {
    pub fn of(e: &Explanation) -> Brief {
        let nominated = e
            .preemption
            .as_ref()
            .filter(|p| !p.nominated_node.is_empty());
        Brief {
            fits: e.fits(),
            selected: e.selected.iter().map(|s| s.to_string()).collect(),
            message: e.message.clone(),
            nominated_node: nominated.map(|p| p.nominated_node.clone()),
            victims: nominated.map(|p| p.victims.clone()).unwrap_or_default(),
        }
    }
}

/// How a pending pod's decision changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Change {
    /// It fits under the other release only.
    StartsFitting,
    /// It fits under the base release only.
    StopsFitting,
    /// It fits under both, on other nodes.
    Moves,
    /// It fits nowhere under both, with another message or preemption.
    MessageChanges,
    /// The decisions are the same (scores may differ).
    Same,
}

/// One pending pod under both releases.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPod {
    pub change: Change,
    pub base: Brief,
    pub other: Brief,
    #[serde(flatten)]
    pub comparison: PodComparison,
}

impl PendingPod {
    pub fn new(base: &Explanation, other: &Explanation) -> PendingPod {
        let comparison = PodComparison::new(base, other);
        let (a, b) = (Brief::of(base), Brief::of(other));
        let change = match (a.fits, b.fits) {
            _ if comparison.same => Change::Same,
            (false, true) => Change::StartsFitting,
            (true, false) => Change::StopsFitting,
            (true, true) => Change::Moves,
            (false, false) => Change::MessageChanges,
        };
        PendingPod {
            change,
            base: a,
            other: b,
            comparison,
        }
    }
}

/// `explain --all-pending` and `explain deploy/NAME`: every pending pod under both releases.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingComparison {
    #[serde(rename = "base")]
    pub base_release: crate::release::ReleaseChoice,
    #[serde(rename = "other")]
    pub other_release: crate::release::ReleaseChoice,
    /// What was explained: `--all-pending`, or `Deployment shop/web`.
    pub scope: String,
    pub same: bool,
    pub pods: Vec<PendingPod>,
    /// Pods no profile serves (another scheduler's): not compared.
    pub not_predicted: Vec<String>,
}

impl PendingComparison {
    pub fn new(
        (base_release, other_release): (
            crate::release::ReleaseChoice,
            crate::release::ReleaseChoice,
        ),
        scope: String,
        pods: Vec<PendingPod>,
        not_predicted: Vec<String>,
    ) -> Self {
        PendingComparison {
            base_release,
            other_release,
            scope,
            same: pods.iter().all(|p| p.change == Change::Same),
            pods,
            not_predicted,
        }
    }

    pub fn count(&self, change: Change) -> usize {
        self.pods.iter().filter(|p| p.change == change).count()
    }
}

/// A planned pod whose outcome differs.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedMove {
    pub pod: String,
    pub base: Option<Value>,
    pub other: Option<Value>,
}

/// A plan's outcome for a pod, as compared: where it goes (tie count included), what it
/// preempts, or why it does not get a node.
fn outcome(p: &PodReport) -> Value {
    json!({
        "outcome": p.outcome,
        "node": p.node,
        "tied": p.tied,
        "preempts": p.preempts,
        "message": p.message,
    })
}

/// A change plan under both releases.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanComparison<'a> {
    pub base: &'a PlanReport,
    pub other: &'a PlanReport,
    /// The verdict and every pod's outcome are the same.
    pub same: bool,
    pub pods: Vec<PlannedMove>,
    /// The switches set differently in the two releases: a plan's differences are put down to
    /// them as a whole (one pod's can be, with `whatif -f POD --compare-to` on the cluster as
    /// the plan leaves it).
    pub candidates: Vec<Cause>,
}

impl<'a> PlanComparison<'a> {
    pub fn new(base: &'a PlanReport, other: &'a PlanReport) -> Self {
        let key = |p: &PodReport| (p.pod.clone(), p.origin, p.document, p.daemon_set.clone());
        let mut pods = Vec::new();
        for a in &base.pods {
            let b = other.pods.iter().find(|b| key(b) == key(a));
            let (oa, ob) = (outcome(a), b.map(outcome));
            if Some(&oa) != ob.as_ref() {
                pods.push(PlannedMove {
                    pod: a.pod.clone(),
                    base: Some(oa),
                    other: ob,
                });
            }
        }
        for b in &other.pods {
            if !base.pods.iter().any(|a| key(a) == key(b)) {
                pods.push(PlannedMove {
                    pod: b.pod.clone(),
                    base: None,
                    other: Some(outcome(b)),
                });
            }
        }
        let candidates =
            switches::differing(&base.scheduler.features(), &other.scheduler.features());
        PlanComparison {
            base,
            other,
            same: pods.is_empty() && base.verdict.safe == other.verdict.safe,
            pods,
            candidates,
        }
    }
}
