//! `--compare-to RELEASE`: runs what a command computes under the release modelled and under the
//! other one, and prints the comparison. Exit 0 when the decisions are the same, 1 when they
//! differ.

use super::profiles::{frameworks_of, profile_for};
use super::render::{print_structured, print_text, refuse_names, table_options};
use super::{EXIT_FITS, EXIT_UNSCHEDULABLE, Failure, Outcome};
use crate::cli::{GlobalArgs, Output, SchedulerArgs};
use crate::compare::pod::PodComparison;
use crate::compare::{
    self, Brief, PendingComparison, PendingPod, PlacementComparison, PlanComparison, PodReportPair,
};
use crate::explain::placement::PlacementReport;
use crate::explain::{self, Explanation};
use crate::framework::runner::Framework;
use crate::framework::snapshot::Snapshot;
use crate::model::intern::Str;
use crate::model::pod::Pod;
use crate::plan::report::PlanReport;
use crate::release::{Release, ReleaseChoice, ReleaseSource};
use anyhow::anyhow;
use serde::Serialize;

/// The other release's profiles (the same configuration and gates), when `--compare-to` asks.
pub fn other(
    global: &GlobalArgs,
    args: &SchedulerArgs,
    base: ReleaseChoice,
) -> Result<Option<Vec<Framework>>, Failure> {
    let Some(text) = &args.compare_to else {
        return Ok(None);
    };
    refuse_names(global, "--compare-to (a comparison of two releases)")?;
    let release = Release::parse(text)
        .map_err(|e| Failure::bad_input(anyhow!("--compare-to {text:?}: {e}")))?;
    if release == base.release {
        return Err(Failure::bad_input(anyhow!(
            "--compare-to {text}: that is the release modelled ({}); name another, or choose the one modelled with --scheduler-version",
            base.release
        )));
    }
    let choice = base
        .with_release(release, ReleaseSource::CompareTo)
        .map_err(|e| {
            Failure::bad_input(anyhow!(
                "--compare-to {release} with --feature-gates {:?}: {e}",
                args.feature_gates.join(",")
            ))
        })?;
    frameworks_of(global, args, choice)
        .map(Some)
        .map_err(|f| Failure {
            error: anyhow!("--compare-to {release}: {}", f.error),
            ..f
        })
}

fn exit(same: bool) -> i32 {
    if same { EXIT_FITS } else { EXIT_UNSCHEDULABLE }
}

fn print<T: Serialize>(
    global: &GlobalArgs,
    value: &T,
    text: impl FnOnce() -> String,
) -> Result<(), Failure> {
    match global.output {
        Output::Json | Output::Yaml => print_structured(value, global.output),
        Output::Table | Output::Wide | Output::Name => {
            print_text(global, &text());
            Ok(())
        }
    }
}

/// A pod's explanation under another release's profile of the same name.
fn explain_with(
    others: &[Framework],
    snapshot: &Snapshot,
    pod: &Pod,
) -> Result<Explanation, Failure> {
    let fw = profile_for(others, &pod.scheduler_name)?;
    let result = fw.schedule(snapshot, pod);
    Ok(explain::build(fw, snapshot, pod, &result))
}

/// One pod: `whatif -f POD` and `explain pod/NAME`.
pub fn pod(
    global: &GlobalArgs,
    others: &[Framework],
    snapshot: &Snapshot,
    pod: &Pod,
    base: &Explanation,
) -> Outcome {
    let other = explain_with(others, snapshot, pod)?;
    let report = PodReportPair {
        base,
        other: &other,
        comparison: PodComparison::new(base, &other),
    };
    print(global, &report, || {
        compare::table::pod(
            &report.comparison,
            (&base.scheduler, &other.scheduler),
            (&Brief::of(base), &Brief::of(&other)),
            table_options(global),
        )
    })?;
    Ok(exit(report.comparison.same))
}

/// `whatif --replicas N` / `--max`: both placements, and the first replica that moves explained
/// on the cluster as the replicas before it leave it.
pub fn placements(
    global: &GlobalArgs,
    others: &[Framework],
    place: &dyn Fn(&Framework, usize) -> (PlacementReport, Snapshot),
    (base_fw, template, limit): (&Framework, &Pod, usize),
) -> Outcome {
    let other_fw = profile_for(others, &template.scheduler_name)?;
    let (base, _) = place(base_fw, limit);
    let (other, _) = place(other_fw, limit);
    let mut c = PlacementComparison::new(&base, &other);
    if let Some(before) = c.first_difference() {
        let (_, mut snapshot) = place(base_fw, before);
        let mut replica = template.clone();
        replica.name = Str::new(format!("{}-{}", template.name, before + 1));
        replica.uid = Str::new(format!(
            "kubectl-sched-whatif/{}/{}",
            template.namespace, replica.name
        ));
        snapshot.generate_template_claims(&mut replica);
        let explained = |fw: &Framework| {
            let result = fw.schedule(&snapshot, &replica);
            explain::build(fw, &snapshot, &replica, &result)
        };
        c.first_move = Some(PodComparison::new(
            &explained(base_fw),
            &explained(other_fw),
        ));
    }
    let same = c.same;
    print(global, &c, || {
        compare::table::placements(&c, table_options(global))
    })?;
    Ok(exit(same))
}

/// The pending pods (`explain --all-pending`, a workload's): each under both releases.
pub fn pending(
    global: &GlobalArgs,
    (fws, others): (&[Framework], &[Framework]),
    snapshot: &Snapshot,
    pods: &[&Pod],
    scope: String,
) -> Outcome {
    let mut compared = Vec::new();
    let mut not_predicted = Vec::new();
    for pod in pods {
        let (Some(a), Some(b)) = (
            fws.iter()
                .find(|f| f.profile == pod.scheduler_name.as_str()),
            others
                .iter()
                .find(|f| f.profile == pod.scheduler_name.as_str()),
        ) else {
            not_predicted.push(pod.key());
            continue;
        };
        let explained = |fw: &Framework| {
            let result = fw.schedule(snapshot, pod);
            explain::build(fw, snapshot, pod, &result)
        };
        compared.push(PendingPod::new(&explained(a), &explained(b)));
    }
    let c = PendingComparison::new(
        (fws[0].release, others[0].release),
        scope,
        compared,
        not_predicted,
    );
    let same = c.same;
    print(global, &c, || {
        compare::table::pending(&c, table_options(global))
    })?;
    Ok(exit(same))
}

/// A change plan under both releases.
pub fn plan(global: &GlobalArgs, base: &PlanReport, other: &PlanReport) -> Outcome {
    let c = PlanComparison::new(base, other);
    let same = c.same;
    print(global, &c, || {
        compare::table::plan(&c, table_options(global))
    })?;
    Ok(exit(same))
}
