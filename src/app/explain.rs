//! `explain pod/NAME`: the same explanation for a pod in the cluster — pending, or bound (then
//! as if it were being scheduled now, with itself removed from its node). For a pending pod the
//! real scheduler's latest FailedScheduling message is shown beside the computed one.
//! `explain deploy/NAME` (and the other workloads): its pending pods, grouped by cause.
//! `explain --all-pending`, `-A`, `-l`: every pending pod, or those selected, one line each.

use super::compare;
use super::profiles::{frameworks, load_options, profile_for, release};
use super::reads_like::OtherReleases;
use super::render::{print_names, print_structured, print_text, table_options};
use super::resource;
use super::source::Source;
use super::whatif::{explanation, print_chosen_node, render, suggestions, without_replaced};
use super::{EXIT_FITS, EXIT_UNSCHEDULABLE, Failure, Outcome};
use crate::cli::{ExplainArgs, GlobalArgs, Output};
use crate::explain::{self, Explanation};
use crate::framework::runner::Framework;
use crate::framework::snapshot::Snapshot;
use crate::model::cluster::Cluster;
use crate::model::intern::{Interner, Str};
use crate::model::labels::Selector;
use crate::model::pod::Pod;
use crate::model::selection::{self, FieldSelector};
use crate::plan::PodFilter;
use crate::release::{Release, ReleaseChoice};
use crate::source::events;
use crate::source::live::{self, Plan};
use crate::term::{self, Column, Fit, Style, Table, TableOptions};
use anyhow::anyhow;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use std::collections::HashSet;
use std::fmt::Write;
use std::sync::Arc;

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
    /// When it is not: the other releases whose message it is.
    pub reads_like: Vec<Release>,
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

/// The comparison for a pending pod; `None` for a bound pod or when no event is known. An event
/// the computed message differs from is tried against the other releases.
fn scheduler_event(
    cluster: &Cluster,
    pod: &Pod,
    e: &Explanation,
    (others, snapshot): (&OtherReleases, &Snapshot),
) -> Option<SchedulerEvent> {
    if pod.node_name.is_some() {
        return None;
    }
    let uid = pod.uid.as_str();
    // A pod read without a UID gets `namespace/name` as its UID; that matches any event.
    let uid = (uid != format!("{}/{}", pod.namespace, pod.name)).then_some(uid);
    let event = events::latest(&cluster.events, &pod.namespace, &pod.name, uid)?;
    let message = event.message.clone().unwrap_or_default();
    let matches = truncate_message(&e.message) == message;
    let reads_like = if matches {
        Vec::new()
    } else {
        others.reading(snapshot, pod, &message, truncate_message)
    };
    Some(SchedulerEvent {
        matches,
        reads_like,
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
    #[serde(flatten)]
    suggestions: Option<&'a crate::suggest::Suggestions>,
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
    } else if !ev.reads_like.is_empty() {
        let names: Vec<String> = ev.reads_like.iter().map(Release::to_string).collect();
        let _ = writeln!(
            out,
            "  {} the event reads like {}: pass --scheduler-version {}",
            style.warn("≠ differs from the message computed here:"),
            names.join(", "),
            names[0]
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
    let selection = Selection::parse(args)?;
    if args.pod.is_some() && !selection.is_empty() {
        return Err(Failure::bad_input(anyhow!(
            "name cannot be provided when a selector is specified: -l and --field-selector select among the pending pods"
        )));
    }
    let all_pending = args.all_pending || !selection.is_empty();
    if args.plan.any() && !all_pending {
        return Err(Failure::bad_input(anyhow!(
            "changes (--drain, --cordon, …) and --seed go with --all-pending; to place one pod on a changed cluster, use whatif -f POD with the changes"
        )));
    }
    if all_pending && args.plan.any() {
        // The changes first: a typo should not wait for a cluster read.
        let edits = super::plan::edits(&args.plan)?;
        let source = Source::open(global)?;
        let select = selection.resolve(global, args, &source)?;
        return super::plan::all_pending(global, args, &source, edits, select);
    }
    let source = Source::open(global)?;
    if all_pending || args.all_namespaces {
        return all_pending_pods(global, args, &source, &selection);
    }
    let Some(arg) = &args.pod else {
        return Err(Failure::bad_input(anyhow!(
            "name a pod (NAME, pod/NAME or NAMESPACE/NAME) or a workload (deploy/NAME, sts/NAME, job/NAME, …), or pass -A (every pending pod) or -l SELECTOR"
        )));
    };
    let target = resource::parse(arg, &source.namespace(global))
        .map_err(|e| Failure::bad_input(anyhow!(e)))?;
    if !target.kind.is_pod() {
        return workload(global, args, &source, &target);
    }
    let (ns, name) = (target.namespace.clone(), target.name.clone());
    let cluster = source.load(
        &Plan {
            pod: Some((ns.clone(), name.clone())),
            ..Default::default()
        },
        load_options(&args.scheduler),
    )?;
    let fws = profiles(global, args, &source, &cluster)?;
    let Some(pod) = cluster.find_pod(&ns, &name).cloned() else {
        return Err(not_found(&source, &cluster, &target));
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
    let explanation = explanation(global, &args.nodes, fw, &snapshot, &candidate, &result);
    if let Some(others) = compare::other(global, &args.scheduler, fw.release)? {
        return compare::pod(global, &others, &snapshot, &candidate, &explanation);
    }
    let others = OtherReleases::new(global, &args.scheduler, fw.release);
    let event = scheduler_event(&cluster, &pod, &explanation, (&others, &snapshot));
    let suggestions = if args.suggest.limit() > 0 && !explanation.fits() {
        // The pod as `whatif -f` places its manifest: off the cluster, nominated nowhere.
        let rest = without_replaced(cluster.clone(), Some(&pod));
        let snapshot = Snapshot::new(rest.clone(), None);
        suggestions(
            &crate::suggest::Problem {
                fws: &fws,
                fw,
                cluster: &rest,
                snapshot: &snapshot,
                pod: &candidate,
                explanation: &explanation,
                pod_edits: true,
            },
            args.suggest,
        )
    } else {
        None
    };
    match global.output {
        Output::Json | Output::Yaml => print_structured(
            &Explained {
                explanation: &explanation,
                suggestions: suggestions.as_ref(),
                scheduler_event: event,
            },
            global.output,
        )?,
        Output::Name => print_chosen_node(&explanation),
        Output::Table | Output::Wide => {
            render(global, &args.nodes, &explanation, suggestions.as_ref())?;
            // Events are expected from a live cluster and from snapshots this tool wrote.
            let expected = pod.node_name.is_none() && events_expected(&source, &cluster);
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

/// The profiles of the release modelled for this cluster.
fn profiles(
    global: &GlobalArgs,
    args: &ExplainArgs,
    source: &Source,
    cluster: &Cluster,
) -> Result<Vec<Framework>, Failure> {
    frameworks(
        global,
        &args.scheduler,
        release(&args.scheduler, source, cluster)?,
    )
}

/// FailedScheduling events are read from a live cluster and saved by `kubectl-sched snapshot`:
/// their absence then means something.
fn events_expected(source: &Source, cluster: &Cluster) -> bool {
    matches!(source, Source::Live(_)) || cluster.meta.taken_at.is_some()
}

/// "Not found", with where an object of that type and name is: from the snapshot, or from one
/// list across namespaces on a live cluster.
fn not_found(source: &Source, cluster: &Cluster, target: &resource::Target) -> Failure {
    let elsewhere = match source {
        Source::File { .. } => resource::namespaces_holding(cluster, target),
        Source::Live(live) => {
            match live.block_on(live::namespaces_holding(
                live.target(),
                target.kind.plural(),
                &target.name,
            )) {
                Ok(mut found) => {
                    found.retain(|ns| *ns != target.namespace);
                    found
                }
                Err(e) => return Failure::live(e),
            }
        }
    };
    let mut message = resource::not_found(target, &elsewhere);
    if !target.kind.is_pod()
        && elsewhere.is_empty()
        && matches!(source, Source::File { .. })
        && !cluster
            .workloads
            .controllers
            .keys()
            .any(|c| c.kind.as_str() == target.kind.kind)
    {
        message.push_str(&format!(
            " (the snapshot holds no {0}: kubectl-sched snapshot saves them, or add {1} to kubectl get, e.g. kubectl get nodes,pods,{1} -A -o yaml)",
            target.kind.plural(),
            target.kind.names[1]
        ));
    }
    Failure::bad_input(anyhow!(message))
}

/// `-l` and `--field-selector`, parsed before anything is read.
struct Selection {
    labels: Option<(String, Selector)>,
    fields: Option<(String, FieldSelector)>,
}

impl Selection {
    fn parse(args: &ExplainArgs) -> Result<Selection, Failure> {
        /// The flag's text with what it parses to; a parse error names the flag.
        fn parsed<T>(
            flag: &str,
            text: &Option<String>,
            parse: fn(&str) -> Result<T, String>,
        ) -> Result<Option<(String, T)>, Failure> {
            text.as_ref()
                .map(|s| {
                    parse(s)
                        .map(|v| (s.clone(), v))
                        .map_err(|e| Failure::bad_input(anyhow!("{flag} {s:?}: {e}")))
                })
                .transpose()
        }
        Ok(Selection {
            labels: parsed("-l", &args.selector, |s| {
                selection::parse_label_selector(s, &Interner::new())
            })?,
            fields: parsed(
                "--field-selector",
                &args.field_selector,
                FieldSelector::parse_for_pods,
            )?,
        })
    }

    fn is_empty(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    /// What selects the pending pods to explain: on a live cluster the API server, asked with
    /// the selectors as kubectl asks; on a snapshot the same semantics, locally.
    fn resolve(
        &self,
        global: &GlobalArgs,
        args: &ExplainArgs,
        source: &Source,
    ) -> Result<PodFilter, Failure> {
        let namespace = global
            .namespace
            .clone()
            .filter(|_| !args.all_namespaces)
            .map(|ns| Str::new(&ns));
        let in_namespace = move |p: &Pod| namespace.is_none_or(|ns| p.namespace == ns);
        if self.is_empty() {
            return Ok(Box::new(in_namespace));
        }
        match source {
            Source::Live(live) => {
                let selected = live
                    .block_on(live::select_pods(
                        live.target(),
                        &live::PodSelection {
                            namespace: global.namespace.clone().filter(|_| !args.all_namespaces),
                            labels: self.labels.as_ref().map(|(s, _)| s.clone()),
                            fields: self.fields.as_ref().map(|(s, _)| s.clone()),
                        },
                    ))
                    .map_err(Failure::live)?;
                let keys: HashSet<(Str, Str)> = selected
                    .iter()
                    .map(|(ns, name)| (Str::new(ns), Str::new(name)))
                    .collect();
                Ok(Box::new(move |p: &Pod| {
                    in_namespace(p) && keys.contains(&(p.namespace, p.name))
                }))
            }
            Source::File { .. } => {
                if let Some((text, fields)) = &self.fields
                    && let Some(field) = fields.unmodelled_field()
                {
                    return Err(Failure::bad_input(anyhow!(
                        "--field-selector {text:?}: {field} is selected by the API server only; on a snapshot select by {}",
                        selection::MODELLED_POD_FIELDS.join(", ")
                    )));
                }
                let labels = self.labels.clone().map(|(_, s)| s);
                let fields = self.fields.clone().map(|(_, s)| s);
                Ok(Box::new(move |p: &Pod| {
                    in_namespace(p)
                        && labels.as_ref().is_none_or(|s| s.matches(&p.labels))
                        && fields.as_ref().is_none_or(|s| s.matches(p))
                }))
            }
        }
    }
}

/// `explain --all-pending -o json|yaml`: the release modelled, a row per pending pod, and the
/// pods grouped by what holds them back.
#[derive(Serialize)]
struct PendingReport<'a> {
    #[serde(flatten)]
    release: ReleaseChoice,
    pods: &'a [PendingRow],
    groups: Vec<PendingGroup<'a>>,
    /// Cluster changes ranked by how many of the pending pods they place.
    #[serde(flatten)]
    suggestions: crate::suggest::pending::PendingSuggestions,
}

/// Pending pods held back alike: the same verdict and brief cause.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PendingGroup<'a> {
    fits: Option<bool>,
    reason: &'a str,
    /// Their controllers (`ReplicaSet web-7f9c`), in the order of their first pod.
    owners: Vec<&'a str>,
    /// `namespace/name`, in name order.
    pods: Vec<&'a str>,
}

/// The rows grouped by verdict and cause, the largest group first (within a size, the order of
/// their first pod).
fn pending_groups(rows: &[PendingRow]) -> Vec<PendingGroup<'_>> {
    let mut groups: Vec<PendingGroup> = Vec::new();
    for r in rows {
        let group = match groups
            .iter_mut()
            .find(|g| (g.fits, g.reason) == (r.fits, r.reason.as_str()))
        {
            Some(g) => g,
            None => {
                groups.push(PendingGroup {
                    fits: r.fits,
                    reason: &r.reason,
                    owners: Vec::new(),
                    pods: Vec::new(),
                });
                groups.last_mut().expect("just pushed")
            }
        };
        group.pods.push(&r.pod);
        if let Some(o) = r.owner.as_deref()
            && !group.owners.contains(&o)
        {
            group.owners.push(o);
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.pods.len()));
    groups
}

/// One pending pod in brief.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PendingRow {
    pod: String,
    /// Its controller: `ReplicaSet web-7f9c`.
    owner: Option<String>,
    /// `None` when no profile serves the pod's schedulerName (another scheduler's pod).
    fits: Option<bool>,
    selected: Vec<Str>,
    /// Where preemption would make room, and whom it would evict there.
    nominated_node: Option<String>,
    victims: Vec<String>,
    reason: String,
    /// The FailedScheduling message as computed (empty when the pod fits).
    message: String,
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

/// A pending pod in brief, with its whole explanation when a profile serves it.
struct Assessed {
    row: PendingRow,
    explanation: Option<Explanation>,
}

/// A pod's controller as `Kind name`.
fn owner(pod: &Pod) -> Option<String> {
    pod.controller().map(|o| format!("{} {}", o.kind, o.name))
}

/// Schedules a pending pod with the profile that serves it.
fn assess(
    fws: &[Framework],
    snapshot: &Snapshot,
    cluster: &Cluster,
    pod: &Pod,
    others: &OtherReleases,
) -> Assessed {
    let Some(fw) = fws
        .iter()
        .find(|f| f.profile == pod.scheduler_name.as_str())
    else {
        return Assessed {
            row: PendingRow {
                pod: pod.key(),
                owner: owner(pod),
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
            explanation: None,
        };
    };
    let result = fw.schedule(snapshot, pod);
    let e = explain::build(fw, snapshot, pod, &result);
    let nominated = e
        .preemption
        .as_ref()
        .filter(|p| !p.nominated_node.is_empty());
    Assessed {
        row: PendingRow {
            pod: pod.key(),
            owner: owner(pod),
            fits: Some(e.fits()),
            selected: e.selected.clone(),
            nominated_node: nominated.map(|p| p.nominated_node.clone()),
            victims: nominated.map(|p| p.victims.clone()).unwrap_or_default(),
            reason: brief(&e),
            scheduler_event: scheduler_event(cluster, pod, &e, (others, snapshot)),
            message: e.message.clone(),
        },
        explanation: Some(e),
    }
}

fn all_pending_pods(
    global: &GlobalArgs,
    args: &ExplainArgs,
    source: &Source,
    selection: &Selection,
) -> Outcome {
    let cluster = source.load(
        &Plan {
            pending_events: true,
            ..Default::default()
        },
        load_options(&args.scheduler),
    )?;
    let selected = selection.resolve(global, args, source)?;
    let fws = profiles(global, args, source, &cluster)?;
    let others = OtherReleases::new(global, &args.scheduler, fws[0].release);
    // Pending pods are on no node, so one snapshot serves them all.
    let snapshot = Snapshot::new(cluster.clone(), None);
    let mut pending: Vec<&Arc<Pod>> = cluster
        .pods
        .iter()
        .filter(|p| p.node_name.is_none() && selected(p))
        .collect();
    pending.sort_by(|a, b| {
        (a.namespace.as_str(), a.name.as_str()).cmp(&(b.namespace.as_str(), b.name.as_str()))
    });
    if let Some(other) = compare::other(global, &args.scheduler, fws[0].release)? {
        let pods: Vec<&Pod> = pending.iter().map(|p| p.as_ref()).collect();
        return compare::pending(
            global,
            (&fws, &other),
            &snapshot,
            &pods,
            "Pending pods".into(),
        );
    }

    let assessed: Vec<Assessed> = pending
        .iter()
        .map(|pod| assess(&fws, &snapshot, &cluster, pod, &others))
        .collect();
    let explained: Vec<(&Arc<Pod>, &Explanation)> = pending
        .iter()
        .zip(&assessed)
        .filter_map(|(pod, a)| Some((*pod, a.explanation.as_ref()?)))
        .collect();
    let suggestions = crate::suggest::pending::suggest(
        &fws,
        &cluster,
        &snapshot,
        &explained,
        args.suggest.limit(),
    );
    let rows: Vec<PendingRow> = assessed.into_iter().map(|a| a.row).collect();
    let unschedulable = rows.iter().any(|r| r.fits == Some(false));

    let release = fws[0].release;
    match global.output {
        Output::Json | Output::Yaml => print_structured(
            &PendingReport {
                release,
                groups: pending_groups(&rows),
                pods: &rows,
                suggestions,
            },
            global.output,
        )?,
        Output::Name => print_pod_names(
            pending_groups(&rows)
                .iter()
                .flat_map(|g| g.pods.iter().copied()),
        ),
        Output::Table | Output::Wide => {
            let opts = table_options(global);
            let header = release.header(opts.style, opts.width);
            print_text(
                global,
                &format!(
                    "{header}\n{}{}",
                    pending_table(&rows, opts),
                    crate::suggest::table::render_pending(&suggestions, opts)
                ),
            );
        }
    }
    Ok(if unschedulable {
        EXIT_UNSCHEDULABLE
    } else {
        EXIT_FITS
    })
}

/// `explain deploy/web -o json|yaml`: the workload, its pods, and its pending pods grouped by
/// what holds them back, each group explained once.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkloadReport<'a> {
    workload: WorkloadRef,
    #[serde(flatten)]
    release: ReleaseChoice,
    /// Its pods that have not finished, bound or not.
    pods: usize,
    /// Of those, the pending ones.
    pending: usize,
    groups: Vec<Group<'a>>,
}

#[derive(Serialize)]
struct WorkloadRef {
    kind: &'static str,
    namespace: String,
    name: String,
}

/// Pending pods held back by the same cause.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Group<'a> {
    /// `namespace/name`, in name order.
    pods: Vec<String>,
    /// Their controllers: `ReplicaSet web-7f9c`.
    owners: Vec<String>,
    /// `None` when no profile serves their schedulerName.
    fits: Option<bool>,
    reason: String,
    /// The first pod's explanation, with its scheduler event; `None` for another scheduler's
    /// pods.
    explanation: Option<Explained<'a>>,
}

/// `explain deploy/web` (and sts/, rs/, ds/, rc/, job/, cj/): the workload's pending pods,
/// grouped by cause, each group explained once.
fn workload(
    global: &GlobalArgs,
    args: &ExplainArgs,
    source: &Source,
    target: &resource::Target,
) -> Outcome {
    let cluster = source.load(
        &Plan {
            pending_events: true,
            controllers_of: Some(target.namespace.clone()),
            ..Default::default()
        },
        load_options(&args.scheduler),
    )?;
    let found = resource::workload_pods(&cluster, target);
    if !found.found {
        return Err(not_found(source, &cluster, target));
    }
    let fws = profiles(global, args, source, &cluster)?;
    let others = OtherReleases::new(global, &args.scheduler, fws[0].release);
    let snapshot = Snapshot::new(cluster.clone(), None);
    if let Some(other) = compare::other(global, &args.scheduler, fws[0].release)? {
        let pods: Vec<&Pod> = found
            .pods
            .iter()
            .filter(|p| p.node_name.is_none())
            .map(|p| p.as_ref())
            .collect();
        return compare::pending(
            global,
            (&fws, &other),
            &snapshot,
            &pods,
            format!("{} {}/{}", target.kind.kind, target.namespace, target.name),
        );
    }
    let pending: Vec<(&Arc<Pod>, Assessed)> = found
        .pods
        .iter()
        .filter(|p| p.node_name.is_none())
        .map(|p| (p, assess(&fws, &snapshot, &cluster, p, &others)))
        .collect();
    let mut groups: Vec<Vec<&(&Arc<Pod>, Assessed)>> = Vec::new();
    for member in &pending {
        let same = |g: &&mut Vec<&(&Arc<Pod>, Assessed)>| {
            let first = &g[0].1.row;
            let row = &member.1.row;
            (first.fits, &first.reason, &first.message) == (row.fits, &row.reason, &row.message)
        };
        match groups.iter_mut().find(same) {
            Some(g) => g.push(member),
            None => groups.push(vec![member]),
        }
    }
    // The largest group first; within a size, the order of their first pod.
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    let report = WorkloadReport {
        workload: WorkloadRef {
            kind: target.kind.kind,
            namespace: target.namespace.clone(),
            name: target.name.clone(),
        },
        release: fws[0].release,
        pods: found.pods.len(),
        pending: pending.len(),
        groups: groups
            .iter()
            .map(|g| {
                let mut owners: Vec<String> = g
                    .iter()
                    .filter_map(|(p, _)| p.controller())
                    .map(|o| format!("{} {}", o.kind, o.name))
                    .collect();
                owners.dedup();
                let (_, first) = g[0];
                Group {
                    pods: g.iter().map(|(_, a)| a.row.pod.clone()).collect(),
                    owners,
                    fits: first.row.fits,
                    reason: first.row.reason.clone(),
                    explanation: first.explanation.as_ref().map(|e| Explained {
                        explanation: e,
                        suggestions: None,
                        scheduler_event: first.row.scheduler_event.clone(),
                    }),
                }
            })
            .collect(),
    };
    let stuck = report.groups.iter().any(|g| g.fits == Some(false));
    match global.output {
        Output::Json | Output::Yaml => print_structured(&report, global.output)?,
        Output::Name => print_pod_names(
            report
                .groups
                .iter()
                .flat_map(|g| g.pods.iter().map(String::as_str)),
        ),
        Output::Table | Output::Wide => {
            print_text(
                global,
                &workload_text(
                    &report,
                    events_expected(source, &cluster),
                    table_options(global),
                ),
            );
        }
    }
    Ok(if stuck { EXIT_UNSCHEDULABLE } else { EXIT_FITS })
}

/// `-o name` for pending pods, given as `namespace/name`: `pod/NAME`, without the namespace as
/// kubectl get -A -o name prints them.
fn print_pod_names<'a>(keys: impl Iterator<Item = &'a str>) {
    print_names(
        "pod",
        keys.map(|k| k.split_once('/').map_or(k, |(_, name)| name)),
    );
}

/// The workload's pending pods for a person: a line for the workload, then per group the pods
/// it holds and the explanation of its first pod.
fn workload_text(report: &WorkloadReport, events: bool, opts: TableOptions) -> String {
    let style = opts.style;
    let w = &report.workload;
    let mut out = String::new();
    let summary = match (report.pending, report.pods) {
        (0, 0) => "no pods".to_string(),
        (0, n) => format!("no pending pod ({n} pod(s), all on nodes)"),
        (p, n) => format!(
            "{p} pending pod(s) of {n}, in {} group(s) by cause",
            report.groups.len()
        ),
    };
    let _ = writeln!(
        out,
        "{}",
        term::prose(
            &format!("{} {}/{}: {summary}", w.kind, w.namespace, w.name),
            opts.width,
            0
        )
    );
    if report.groups.is_empty() {
        let _ = writeln!(out, "{}", report.release.header(style, opts.width));
    }
    for g in &report.groups {
        out.push('\n');
        let owners = if g.owners.is_empty() {
            String::new()
        } else {
            format!(" of {}", g.owners.join(", "))
        };
        // The namespace is the workload's, said in the first line.
        let names: Vec<&str> = g
            .pods
            .iter()
            .map(|p| p.split_once('/').map_or(p.as_str(), |(_, n)| n))
            .collect();
        let heading = match names.as_slice() {
            [one] => format!("{one}{owners}:"),
            many => format!(
                "{} pods{owners} held back alike: {}; the first explained:",
                many.len(),
                many.join(", ")
            ),
        };
        let _ = writeln!(out, "{}", style.bold(&term::prose(&heading, opts.width, 2)));
        match &g.explanation {
            Some(e) => {
                out.push_str(&explain::table::render(
                    e.explanation,
                    opts,
                    explain::table::View::default(),
                ));
                out.push_str(&event_lines(e.scheduler_event.as_ref(), events, style));
            }
            None => {
                let _ = writeln!(out, "  {}", g.reason);
            }
        }
    }
    out
}

/// One row per pending pod, pods held back by the same cause together, the largest group first;
/// under the table, each cause shared by several pods once. `-o wide` gives each row its full
/// FailedScheduling message.
fn pending_table(rows: &[PendingRow], opts: TableOptions) -> String {
    let style = opts.style;
    if rows.is_empty() {
        return "No pending pods.\n".into();
    }
    let groups = pending_groups(rows);
    let fits = |f: Option<bool>| match f {
        Some(true) => style.good("yes"),
        Some(false) => style.bad("no"),
        None => style.dim("-"),
    };
    let mut out = if opts.wide {
        // Every pod with its whole message, pods held back alike together.
        let mut table = Table::new(vec![
            Column::new("POD", Fit::Keep),
            Column::new("OWNER", Fit::Keep),
            Column::new("FITS", Fit::Keep),
            Column::new("MESSAGE", Fit::Wrap { min: 30 }),
            Column::new("KUBE-SCHEDULER", Fit::Keep),
        ]);
        for g in &groups {
            for r in rows.iter().filter(|r| g.pods.contains(&r.pod.as_str())) {
                let said = match &r.scheduler_event {
                    Some(ev) if ev.matches => style.good("same"),
                    Some(ev) => match ev.reads_like.first() {
                        Some(r) => style.warn(&format!("reads like {r}")),
                        None => style.warn("differs"),
                    },
                    None => style.dim("-"),
                };
                let message = if r.message.is_empty() {
                    r.reason.clone()
                } else {
                    r.message.clone()
                };
                let owner = r.owner.clone().unwrap_or_default();
                table.row(vec![r.pod.clone(), owner, fits(r.fits), message, said]);
            }
        }
        table.render(opts)
    } else {
        // A row per group: how many pods, their verdict and cause, and who they are. A name one
        // copies into the next command is not broken while the reason can give way instead.
        const REASON_MIN: usize = 20;
        let longest_name = groups
            .iter()
            .flat_map(|g| g.owners.iter().chain(&g.pods))
            .map(|n| crate::term::width(n) + 1)
            .max()
            .unwrap_or(0);
        // PODS, FITS and KUBE-SCHEDULER (4, 4, 14), the gaps between five columns and the margin.
        let room = usize::from(opts.width).saturating_sub(4 + 4 + 14 + 2 * 4 + 1 + REASON_MIN);
        let mut table = Table::new(vec![
            Column::new("PODS", Fit::Keep).right(),
            Column::new("FITS", Fit::Keep),
            Column::new("REASON", Fit::Wrap { min: REASON_MIN }),
            Column::new(
                "OWNERS / PODS",
                Fit::Wrap {
                    min: longest_name.min(room).max(24),
                },
            ),
            Column::new("KUBE-SCHEDULER", Fit::Keep),
        ]);
        for g in &groups {
            let events: Vec<&SchedulerEvent> = rows
                .iter()
                .filter(|r| g.pods.contains(&r.pod.as_str()))
                .filter_map(|r| r.scheduler_event.as_ref())
                .collect();
            let differing: Vec<&SchedulerEvent> =
                events.iter().copied().filter(|e| !e.matches).collect();
            // Differing events that all read like one other release name it, as a pod's row does.
            let reads_like = differing
                .first()
                .and_then(|e| e.reads_like.first())
                .filter(|r| differing.iter().all(|e| e.reads_like.first() == Some(*r)));
            let count = match differing.len() {
                1 => String::new(),
                n => format!(" ({n})"),
            };
            let said = match reads_like {
                _ if differing.is_empty() && !events.is_empty() => style.good("same"),
                _ if differing.is_empty() => style.dim("-"),
                Some(r) => style.warn(&format!("reads like {r}{count}")),
                None => style.warn(&format!("differs{count}")),
            };
            let who = if g.owners.is_empty() || g.pods.len() == 1 {
                explain::list_names(&g.pods)
            } else {
                format!(
                    "{} ({})",
                    explain::list_names(&g.owners),
                    explain::list_names(&g.pods)
                )
            };
            table.row(vec![
                g.pods.len().to_string(),
                fits(g.fits),
                g.reason.to_string(),
                who,
                said,
            ]);
        }
        table.render(opts.narrow())
    };
    let fitting = rows.iter().filter(|r| r.fits == Some(true)).count();
    let stuck = rows.iter().filter(|r| r.fits == Some(false)).count();
    let summary = format!(
        "{} pending pod(s): {fitting} would be scheduled now, {stuck} fit no node{}",
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
    let width = if opts.wide { u16::MAX } else { opts.width };
    let _ = writeln!(out, "\n{}", crate::term::prose(&summary, width, 2));
    if !opts.wide {
        let _ = writeln!(
            out,
            "{}",
            style.dim("-o wide lists each pod with its owner and whole message")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
