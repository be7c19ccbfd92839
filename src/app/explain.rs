//! `explain pod/NAME`: the same explanation for a pod in the cluster — pending, or bound (then
//! as if it were being scheduled now, with itself removed from its node). For a pending pod the
//! real scheduler's latest FailedScheduling message is shown beside the computed one.
//! `explain --all-pending`: every pending pod, one line each.

use super::profiles::{frameworks, load_options, profile_for, release};
use super::render::{print_structured, print_text, table_options};
use super::source::Source;
use super::whatif::render;
use super::{EXIT_FITS, EXIT_UNSCHEDULABLE, Failure, Outcome};
use crate::cli::{ExplainArgs, GlobalArgs, Output};
use crate::explain::{self, Explanation};
use crate::framework::snapshot::Snapshot;
use crate::model::cluster::Cluster;
use crate::model::intern::Str;
use crate::model::pod::Pod;
use crate::release::ReleaseChoice;
use crate::source::events;
use crate::source::live::Plan;
use crate::term::{Column, Fit, Style, Table, TableOptions};
use anyhow::anyhow;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use std::fmt::Write;

/// Splits `NAME`, `pod/NAME`, `pods/NAME` or `NAMESPACE/NAME`; `namespace` is the default.
pub fn parse_pod_ref(s: &str, namespace: &str) -> Result<(String, String), String> {
    let default_ns = namespace.to_string();
    match s.split_once('/') {
        None if !s.is_empty() => Ok((default_ns, s.to_string())),
        Some(("pod" | "pods" | "po", name)) if !name.is_empty() && !name.contains('/') => {
            Ok((default_ns, name.to_string()))
        }
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns.to_string(), name.to_string()))
        }
        _ => Err(format!(
            "{s:?} is not a pod reference: use NAME, pod/NAME or NAMESPACE/NAME"
        )),
    }
}

/// The real scheduler's latest FailedScheduling event, and whether it says what we compute.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerEvent {
    pub message: String,
    /// How many times the event was reported.
    pub count: i32,
    pub last_seen: Option<Timestamp>,
    /// The computed message, cut as kube-scheduler cuts event messages, is the same.
    pub matches: bool,
}

/// Event notes are limited to 1024 bytes; kube-scheduler cuts longer messages and ends them
/// with " ...".
const NOTE_LENGTH_LIMIT: usize = 1024;

fn truncate_message(message: &str) -> String {
    if message.len() <= NOTE_LENGTH_LIMIT {
        return message.to_string();
    }
    const SUFFIX: &str = " ...";
    let mut end = NOTE_LENGTH_LIMIT - SUFFIX.len();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{SUFFIX}", &message[..end])
}

/// The comparison for a pending pod; `None` for a bound pod or when no event is known.
fn scheduler_event(cluster: &Cluster, pod: &Pod, e: &Explanation) -> Option<SchedulerEvent> {
    if pod.node_name.is_some() {
        return None;
    }
    let uid = pod.uid.as_str();
    // A pod read without a UID gets `namespace/name` as its UID; that matches any event.
    let uid = (uid != format!("{}/{}", pod.namespace, pod.name)).then_some(uid);
    let event = events::latest(&cluster.events, &pod.namespace, &pod.name, uid)?;
    let message = event.message.clone().unwrap_or_default();
    Some(SchedulerEvent {
        matches: truncate_message(&e.message) == message,
        message,
        count: events::count(event),
        last_seen: events::last_seen(event),
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Explained<'a> {
    #[serde(flatten)]
    explanation: &'a Explanation,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduler_event: Option<SchedulerEvent>,
}

fn event_lines(event: Option<&SchedulerEvent>, expected: bool, style: Style) -> String {
    let mut out = String::new();
    let Some(ev) = event else {
        if expected {
            let _ = writeln!(
                out,
                "\n{}",
                style.dim("kube-scheduler: no FailedScheduling event for this pod (events expire after an hour by default)")
            );
        }
        return out;
    };
    let when = ev
        .last_seen
        .map(|t| format!(", last at {t}"))
        .unwrap_or_default();
    let times = if ev.count > 1 {
        format!(", {} times", ev.count)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "\n{} (FailedScheduling{times}{when}):",
        style.bold("kube-scheduler said")
    );
    let _ = writeln!(out, "  {}", ev.message);
    if ev.matches {
        let _ = writeln!(
            out,
            "  {}",
            style.good("= the same as the message computed here")
        );
    } else {
        let _ = writeln!(
            out,
            "  {} the cluster may have changed since that attempt (kube-scheduler retries when it does), or kubectl-sched disagrees",
            style.warn("≠ differs from the message computed here:")
        );
    }
    out
}

pub fn run(global: &GlobalArgs, args: &ExplainArgs) -> Outcome {
    if args.plan.any() && !args.all_pending {
        return Err(Failure::bad_input(anyhow!(
            "changes (--drain, --cordon, …) and --seed go with --all-pending; to place one pod on a changed cluster, use whatif -f POD with the changes"
        )));
    }
    if args.all_pending && args.plan.any() {
        // The changes first: a typo should not wait for a cluster read.
        let edits = super::plan::edits(&args.plan)?;
        let source = Source::open(global)?;
        return super::plan::all_pending(global, args, &source, edits);
    }
    let source = Source::open(global)?;
    if args.all_pending || args.all_namespaces {
        return all_pending(global, args, &source);
    }
    let Some(pod_ref) = &args.pod else {
        return Err(Failure::bad_input(anyhow!(
            "name a pod (NAME, pod/NAME or NAMESPACE/NAME), or pass -A (every pending pod)"
        )));
    };
    let (ns, name) = parse_pod_ref(pod_ref, &source.namespace(global))
        .map_err(|e| Failure::bad_input(anyhow!(e)))?;
    let cluster = source.load(
        &Plan {
            pod: Some((ns.clone(), name.clone())),
            ..Default::default()
        },
        load_options(&args.scheduler),
    )?;
    let fws = frameworks(
        global,
        &args.scheduler,
        release(&args.scheduler, &source, &cluster)?,
    )?;
    let Some(pod) = cluster.find_pod(&ns, &name).cloned() else {
        return Err(Failure::bad_input(anyhow!(
            "pods {name:?} not found in namespace {ns:?}"
        )));
    };
    if pod.is_terminated() {
        return Err(Failure::bad_input(anyhow!(
            "pod {ns}/{name} has finished ({:?}): the scheduler no longer considers it",
            pod.phase
        )));
    }
    let fw = profile_for(&fws, &pod.scheduler_name)?;
    let snapshot = Snapshot::new(cluster.clone(), Some(pod.uid));
    // A bound pod is explained as a fresh scheduling attempt, so its nodeName is not a constraint.
    let mut candidate = (*pod).clone();
    candidate.node_name = None;
    let result = fw.schedule(&snapshot, &candidate);
    let explanation = explain::build(fw, &snapshot, &candidate, &result);
    let event = scheduler_event(&cluster, &pod, &explanation);
    match global.output {
        Output::Json | Output::Yaml => print_structured(
            &Explained {
                explanation: &explanation,
                scheduler_event: event,
            },
            global.output,
        )?,
        Output::Table | Output::Wide => {
            render(global, &args.nodes, &explanation)?;
            // Events are expected from a live cluster and from snapshots this tool wrote.
            let expected = pod.node_name.is_none()
                && (matches!(source, Source::Live(_)) || cluster.meta.taken_at.is_some());
            print_text(
                global,
                &event_lines(event.as_ref(), expected, table_options(global).style),
            );
        }
    }
    Ok(if explanation.fits() {
        EXIT_FITS
    } else {
        EXIT_UNSCHEDULABLE
    })
}

/// `explain --all-pending -o json|yaml`: the release modelled, and a row per pending pod.
#[derive(Serialize)]
struct PendingReport {
    #[serde(flatten)]
    release: ReleaseChoice,
    pods: Vec<PendingRow>,
}

/// One pending pod in brief.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PendingRow {
    pod: String,
    /// `None` when no profile serves the pod's schedulerName (another scheduler's pod).
    fits: Option<bool>,
    selected: Vec<Str>,
    /// Where preemption would make room, and whom it would evict there.
    #[serde(skip_serializing_if = "Option::is_none")]
    nominated_node: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    victims: Vec<String>,
    reason: String,
    /// The FailedScheduling message as computed (empty when the pod fits).
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduler_event: Option<SchedulerEvent>,
}

/// How many of a pod's reasons the brief cause names; the rest are counted.
const REASONS_SHOWN: usize = 2;

/// The cause in a line: where the pod goes, what holds it back, or the reasons that reject the
/// most nodes with their counts (the FailedScheduling message has them all).
fn brief(e: &Explanation) -> String {
    if e.prefilter.plugin == crate::plugins::scheduling_gates::NAME
        && e.nodes
            .iter()
            .all(|n| n.stage == Some(explain::Stage::PreEnqueue))
    {
        return format!(
            "held back by scheduling gates: {}",
            e.prefilter.reasons.join("; ")
        );
    }
    if let Some(err) = &e.error {
        return format!("error: {err}");
    }
    if e.fits() {
        return match e.selected.as_slice() {
            [one] => format!("would be scheduled on {one}"),
            many => format!("would be scheduled on one of {}", explain::list_names(many)),
        };
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for n in e.nodes.iter().filter(|n| !n.feasible) {
        for r in &n.reasons {
            match counts.iter_mut().find(|(reason, _)| reason == r) {
                Some((_, c)) => *c += 1,
                None => counts.push((r, 1)),
            }
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut cause = match counts.as_slice() {
        [] if e.nodes.is_empty() => "no nodes available".to_string(),
        [] => e.prefilter.reasons.join("; "),
        _ => {
            let shown: Vec<String> = counts
                .iter()
                .take(REASONS_SHOWN)
                .map(|(r, c)| format!("{c} {r}"))
                .collect();
            let mut cause = shown.join(", ");
            if counts.len() > REASONS_SHOWN {
                let _ = write!(cause, " (+{} more)", counts.len() - REASONS_SHOWN);
            }
            cause
        }
    };
    if let Some(p) = e
        .preemption
        .as_ref()
        .filter(|p| !p.nominated_node.is_empty())
    {
        let _ = write!(
            cause,
            "; preemption would evict {} on {}",
            explain::list_names(&p.victims),
            p.nominated_node
        );
    }
    cause
}

fn all_pending(global: &GlobalArgs, args: &ExplainArgs, source: &Source) -> Outcome {
    // `-A` is every namespace, as in kubectl; `--all-pending` honours `-n`.
    let namespace = global.namespace.as_deref().filter(|_| !args.all_namespaces);
    let cluster = source.load(
        &Plan {
            pending_events: true,
            ..Default::default()
        },
        load_options(&args.scheduler),
    )?;
    let fws = frameworks(
        global,
        &args.scheduler,
        release(&args.scheduler, source, &cluster)?,
    )?;
    // Pending pods are on no node, so one snapshot serves them all.
    let snapshot = Snapshot::new(cluster.clone(), None);
    let mut pending: Vec<&std::sync::Arc<Pod>> = cluster
        .pods
        .iter()
        .filter(|p| p.node_name.is_none())
        .filter(|p| namespace.is_none_or(|ns| p.namespace.as_str() == ns))
        .collect();
    pending.sort_by(|a, b| {
        (a.namespace.as_str(), a.name.as_str()).cmp(&(b.namespace.as_str(), b.name.as_str()))
    });

    let rows: Vec<PendingRow> = pending
        .iter()
        .map(|pod| {
            match fws
                .iter()
                .find(|f| f.profile == pod.scheduler_name.as_str())
            {
                None => PendingRow {
                    pod: pod.key(),
                    fits: None,
                    selected: Vec::new(),
                    nominated_node: None,
                    victims: Vec::new(),
                    reason: format!(
                        "schedulerName {:?} matches no profile: another scheduler handles it",
                        pod.scheduler_name.as_str()
                    ),
                    message: String::new(),
                    scheduler_event: None,
                },
                Some(fw) => {
                    let result = fw.schedule(&snapshot, pod);
                    let e = explain::build(fw, &snapshot, pod, &result);
                    let nominated = e
                        .preemption
                        .as_ref()
                        .filter(|p| !p.nominated_node.is_empty());
                    PendingRow {
                        pod: pod.key(),
                        fits: Some(e.fits()),
                        selected: e.selected.clone(),
                        nominated_node: nominated.map(|p| p.nominated_node.clone()),
                        victims: nominated.map(|p| p.victims.clone()).unwrap_or_default(),
                        reason: brief(&e),
                        scheduler_event: scheduler_event(&cluster, pod, &e),
                        message: e.message,
                    }
                }
            }
        })
        .collect();
    let unschedulable = rows.iter().any(|r| r.fits == Some(false));

    let release = fws[0].release;
    match global.output {
        Output::Json | Output::Yaml => print_structured(
            &PendingReport {
                release,
                pods: rows,
            },
            global.output,
        )?,
        Output::Table | Output::Wide => {
            let opts = table_options(global);
            let header = opts.style.dim(&release.describe());
            print_text(global, &format!("{header}\n{}", pending_table(&rows, opts)));
        }
    }
    Ok(if unschedulable {
        EXIT_UNSCHEDULABLE
    } else {
        EXIT_FITS
    })
}

/// One row per pending pod, pods held back by the same cause together, the largest group first;
/// under the table, each cause shared by several pods once. `-o wide` gives each row its full
/// FailedScheduling message.
fn pending_table(rows: &[PendingRow], opts: TableOptions) -> String {
    let style = opts.style;
    if rows.is_empty() {
        return "No pending pods.\n".into();
    }
    let mut groups: Vec<(&str, Vec<&PendingRow>)> = Vec::new();
    for r in rows {
        match groups.iter_mut().find(|(cause, _)| *cause == r.reason) {
            Some((_, members)) => members.push(r),
            None => groups.push((&r.reason, vec![r])),
        }
    }
    // Stable: within a size, causes keep the order of their first pod.
    groups.sort_by_key(|(_, members)| std::cmp::Reverse(members.len()));
    let reason = if opts.wide {
        Column::new("REASON", Fit::Wrap { min: 30 })
    } else {
        Column::new("REASON", Fit::Cut { min: 30 })
    };
    let mut table = Table::new(vec![
        Column::new("POD", Fit::Keep),
        Column::new("FITS", Fit::Keep),
        reason,
        Column::new("KUBE-SCHEDULER", Fit::Keep),
    ]);
    for r in groups.iter().flat_map(|(_, members)| members) {
        let fits = match r.fits {
            Some(true) => style.good("yes"),
            Some(false) => style.bad("no"),
            None => style.dim("-"),
        };
        let said = match &r.scheduler_event {
            Some(ev) if ev.matches => style.good("same"),
            Some(_) => style.warn("differs"),
            None => style.dim("-"),
        };
        let reason = if opts.wide && !r.message.is_empty() {
            r.message.clone()
        } else {
            r.reason.clone()
        };
        table.row(vec![r.pod.clone(), fits, reason, said]);
    }
    let mut out = table.render(opts.width, opts.wide);
    let shared: Vec<_> = groups.iter().filter(|(_, m)| m.len() > 1).collect();
    if !shared.is_empty() {
        out.push('\n');
        for (cause, members) in shared {
            let _ = writeln!(out, "{} pods: {cause}", members.len());
        }
    }
    let fitting = rows.iter().filter(|r| r.fits == Some(true)).count();
    let stuck = rows.iter().filter(|r| r.fits == Some(false)).count();
    let _ = writeln!(
        out,
        "\n{} pending pod(s): {fitting} would be scheduled now, {stuck} fit no node{}",
        rows.len(),
        if rows
            .iter()
            .any(|r| r.scheduler_event.as_ref().is_some_and(|e| !e.matches))
        {
            "; KUBE-SCHEDULER \"differs\": its last FailedScheduling message is not the one computed here (explain the pod for both)"
        } else {
            ""
        }
    );
    if !opts.wide {
        let _ = writeln!(
            out,
            "{}",
            style.dim("-o wide gives each pod's whole message")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_references() {
        assert_eq!(
            parse_pod_ref("web", "team").unwrap(),
            ("team".into(), "web".into())
        );
        assert_eq!(
            parse_pod_ref("pod/web", "team").unwrap(),
            ("team".into(), "web".into())
        );
        assert_eq!(
            parse_pod_ref("pods/web", "team").unwrap(),
            ("team".into(), "web".into())
        );
        assert_eq!(
            parse_pod_ref("prod/web", "team").unwrap(),
            ("prod".into(), "web".into())
        );
        for bad in ["", "pod/", "/web", "a/b/c", "pod/a/b"] {
            assert!(parse_pod_ref(bad, "team").is_err(), "{bad}");
        }
    }

    #[test]
    fn messages_are_cut_as_kube_scheduler_cuts_them() {
        assert_eq!(truncate_message("short"), "short");
        let long = "x".repeat(2000);
        let cut = truncate_message(&long);
        assert_eq!(cut.len(), NOTE_LENGTH_LIMIT);
        assert!(cut.ends_with("x ..."));
        let exact = "y".repeat(NOTE_LENGTH_LIMIT);
        assert_eq!(truncate_message(&exact), exact);
        // Never inside a UTF-8 character.
        let wide = "é".repeat(1000);
        assert!(truncate_message(&wide).ends_with(" ..."));
    }
}
