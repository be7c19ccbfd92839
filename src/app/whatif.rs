//! `whatif -f FILE`: where would this pod go — or these replicas, one after another?

use super::compare;
use super::plan;
use super::profiles::{frameworks, keep_objects_for_extenders, profile_for, release};
use super::render::{print_structured, print_text, table_options, warn};
use super::source::{Source, limits};
use super::workload::{self, Workload};
use super::{EXIT_FITS, EXIT_UNSCHEDULABLE, Failure, Outcome};
use crate::cli::{GlobalArgs, Output, WhatifArgs};
use crate::explain;
use crate::framework::runner::Framework;
use crate::framework::sequence;
use crate::framework::snapshot::Snapshot;
use crate::model::cluster::Cluster;
use crate::model::{defaults, pod::Pod, validate};
use crate::source::file;
use anyhow::anyhow;
use std::io::IsTerminal;
use std::sync::Arc;

/// Defaults, validates and admits the pod of the `-f` object as the API server would: a pod
/// without a namespace goes to `namespace` (the context's), and one in another namespace than
/// `-n` is refused as kubectl refuses it.
pub fn load_pod(
    (display, value): (String, serde_json::Value),
    namespace_flag: Option<&str>,
    namespace: &str,
    cluster: &Cluster,
) -> Result<(Pod, Workload), Failure> {
    let mut w = workload::from_value(&display, value, namespace)?;
    let exported = if w.object.is_none() {
        as_new(&mut w.pod)
    } else {
        Vec::new()
    };
    let pod = &mut w.pod;
    if pod.metadata.name.as_deref().is_none_or(str::is_empty)
        && let Some(prefix) = pod.metadata.generate_name.clone()
    {
        pod.metadata.name = Some(format!("{prefix}whatif"));
    }
    if let (Some(flag), Some(own)) = (namespace_flag, pod.metadata.namespace.as_deref())
        && flag != own
    {
        return Err(Failure::bad_input(anyhow!(
            "{display}: the namespace from the provided object {own:?} does not match the namespace {flag:?}. You must pass '--namespace={own}' to perform this operation."
        )));
    }
    defaults::pod(pod, namespace);
    if w.object.is_none() {
        let (ns, name) = (
            pod.metadata.namespace.as_deref().unwrap_or(namespace),
            pod.metadata.name.as_deref().unwrap_or(""),
        );
        w.replaces = cluster.find_pod(ns, name).cloned();
        if let Some(note) = new_pod_note(&exported, w.replaces.as_deref()) {
            warn(&format!("{display}: Pod {ns}/{name} {note}"));
        }
    }
    let pod = &mut w.pod;
    let object = w.object.clone().unwrap_or_else(|| {
        format!(
            "Pod {}/{}",
            pod.metadata.namespace.as_deref().unwrap_or(""),
            pod.metadata.name.as_deref().unwrap_or("")
        )
    });
    let refused =
        |reason: String| Failure::bad_input(anyhow!("{display}: {object} is forbidden: {reason}",));
    validate::pod(pod).map_err(|errors| {
        // A template's errors are the workload's, at the template's place in it; its name and
        // namespace are the workload's own.
        let errors = match &w.object {
            None => errors,
            Some(_) => validate::Errors(
                errors
                    .0
                    .into_iter()
                    .map(|e| match e.field.as_str() {
                        "metadata.name" | "metadata.namespace" => e,
                        _ => validate::Errors(vec![e])
                            .within("spec.template")
                            .0
                            .remove(0),
                    })
                    .collect(),
            ),
        };
        Failure::bad_input(anyhow!(
            "{display}: {object} is invalid:\n  {}",
            errors.to_string().replace('\n', "\n  ")
        ))
    })?;
    let classes: Vec<_> = cluster
        .priority_classes
        .iter()
        .map(|c| k8s_openapi::api::scheduling::v1::PriorityClass {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(c.name.to_string()),
                ..Default::default()
            },
            value: Some(c.value),
            global_default: Some(c.global_default),
            preemption_policy: Some(
                if c.preemption_never {
                    "Never"
                } else {
                    "PreemptLowerPriority"
                }
                .to_string(),
            ),
            ..Default::default()
        })
        .collect();
    defaults::admit_priority(pod, &classes).map_err(|defaults::Refused(r)| refused(r))?;
    if let Some(warning) = defaults::admit_runtime_class(pod, &cluster.runtime_classes)
        .map_err(|defaults::Refused(r)| refused(r))?
    {
        warn(&format!("{display}: {warning}"));
    }
    let parsed = Pod::from_k8s(pod).map_err(|e| Failure::bad_input(anyhow!("{display}: {e}")))?;
    Ok((parsed, w))
}

/// Clears what a bound pod read back from a cluster carries (`kubectl get pod -o yaml`): its
/// node, status and identity, so it is scheduled as a new pod rather than pinned to its old
/// node. A `spec.nodeName` without the marks of an exported object (uid, resourceVersion,
/// creationTimestamp, managedFields) is a manifest's own and stays: the NodeName plugin reads it.
/// Returns the fields that were set.
fn as_new(pod: &mut k8s_openapi::api::core::v1::Pod) -> Vec<&'static str> {
    let m = &pod.metadata;
    let exported = m.uid.is_some()
        || m.resource_version.is_some()
        || m.creation_timestamp.is_some()
        || m.managed_fields.is_some();
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if !(exported && bound) {
        return Vec::new();
    }
    let mut dropped = vec!["spec.nodeName"];
    let mut drop = |set: bool, field: &'static str| {
        if set {
            dropped.push(field);
        }
    };
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = None;
    }
    drop(pod.status.take().is_some(), "status");
    let m = &mut pod.metadata;
    drop(m.uid.take().is_some(), "metadata.uid");
    drop(
        m.resource_version.take().is_some(),
        "metadata.resourceVersion",
    );
    drop(
        m.creation_timestamp.take().is_some(),
        "metadata.creationTimestamp",
    );
    drop(m.managed_fields.take().is_some(), "metadata.managedFields");
    drop(
        m.deletion_timestamp.take().is_some(),
        "metadata.deletionTimestamp",
    );
    drop(m.generation.take().is_some(), "metadata.generation");
    dropped
}

/// The one line that says a pod is placed as new: what was dropped from it, and the bound pod
/// of the cluster it replaces (replacing a pending one changes nothing worth a line).
fn new_pod_note(dropped: &[&str], replaces: Option<&Pod>) -> Option<String> {
    let replaced = replaces
        .and_then(|p| p.node_name)
        .map(|node| format!("it replaces the cluster's pod of that name, taken off {node} first"));
    match (dropped, replaced) {
        ([], None) => None,
        ([], Some(r)) => Some(format!("is placed as a new pod: {r}")),
        (d, r) => Some(format!(
            "is placed as a new pod, without its {}{}",
            d.join(", "),
            r.map(|r| format!("; {r}")).unwrap_or_default()
        )),
    }
}

/// The cluster without the pod a Pod manifest replaces.
pub fn without_replaced(cluster: Arc<Cluster>, replaced: Option<&Pod>) -> Arc<Cluster> {
    let Some(gone) = replaced else {
        return cluster;
    };
    let mut c = Arc::unwrap_or_clone(cluster);
    c.pods.retain(|p| p.uid != gone.uid);
    Arc::new(c)
}

pub fn run(global: &GlobalArgs, args: &WhatifArgs) -> Outcome {
    // The file and the changes first: a typo should not wait for a cluster read.
    if args.file.as_deref() == Some("-") && global.snapshot.as_deref() == Some("-") {
        return Err(Failure::bad_input(anyhow!(
            "--snapshot - and -f - cannot both read stdin: give one of them a file"
        )));
    }
    let documents = match &args.file {
        Some(path) => Some(file::load_documents(path, limits(global)).map_err(Failure::bad_input)?),
        None => None,
    };
    let edits = plan::edits(&args.plan)?;
    let planning = args.plan.any()
        || documents
            .as_ref()
            .is_some_and(|(_, docs)| docs.len() > 1 || docs.iter().any(plan::is_daemon_set));
    if planning {
        return plan::whatif(global, args, documents, edits);
    }
    let Some((display, mut docs)) = documents else {
        return Err(Failure::bad_input(anyhow!(
            "nothing to place: pass -f FILE (a pod or workload), or a change such as --drain NODE"
        )));
    };
    let document = (display, docs.remove(0));
    keep_objects_for_extenders(&args.scheduler);
    let source = Source::open(global)?;
    let cluster = source.load(&Default::default())?;
    let display = document.0.clone();
    let (pod, workload) = load_pod(
        document,
        global.namespace.as_deref(),
        &source.namespace(global),
        &cluster,
    )?;
    let cluster = without_replaced(cluster, workload.replaces.as_deref());
    let fws = frameworks(
        global,
        &args.scheduler,
        release(&args.scheduler, &source, &cluster)?,
    )?;
    let fw = profile_for(&fws, &pod.scheduler_name)
        .map_err(|f| Failure::bad_input(anyhow!("{display}: {}", f.error)))?;
    let others = compare::other(global, &args.scheduler, fw.release)?;
    let replicas = if args.max {
        Some(args.limit)
    } else {
        args.replicas.or(workload.replicas)
    };
    if replicas.is_some() && args.scheduler.call_extenders {
        return Err(Failure::bad_input(anyhow!(
            "--call-extenders places one pod, not replicas: extenders keep their own view of the cluster, which would not include the replicas placed before; pass a Pod without --replicas or --max"
        )));
    }
    if let Some(n) = replicas.filter(|&n| n > args.limit) {
        return Err(Failure::bad_input(anyhow!(
            "{display}: {n} replicas is more than --limit {}: raise --limit to place that many",
            args.limit
        )));
    }
    let Some(replicas) = replicas else {
        let snapshot = Snapshot::new(cluster, None);
        let result = fw.schedule(&snapshot, &pod);
        let explanation = explain::build(fw, &snapshot, &pod, &result);
        if let Some(others) = &others {
            return compare::pod(global, others, &snapshot, &pod, &explanation);
        }
        render(global, &explanation)?;
        return Ok(if explanation.fits() {
            EXIT_FITS
        } else {
            EXIT_UNSCHEDULABLE
        });
    };
    let mut cluster = Arc::try_unwrap(cluster).unwrap_or_else(|shared| (*shared).clone());
    workload.register_owner(&mut cluster, pod.namespace);
    let cluster = Arc::new(cluster);
    // `--max` stops at the first replica that fits nowhere, or at `--limit`: a node that takes
    // a billion pods of this shape would otherwise be filled one by one.
    let limit = if args.max {
        replicas.min(max_replicas(&Snapshot::new(cluster.clone(), None)))
    } else {
        replicas
    };
    // Up to `limit` replicas placed by `fw`: the report, and the cluster they leave.
    let place = |fw: &Framework, limit: usize| {
        let mut snapshot = Snapshot::new(cluster.clone(), None);
        let mut progress = Progress::new();
        let seq =
            sequence::place_reporting(fw, &mut snapshot, &pod, limit, &mut |n| progress.placed(n));
        progress.done();
        let report = explain::placement::build(
            fw.release,
            &snapshot,
            &pod,
            workload.description.as_deref(),
            (!args.max).then_some(replicas),
            args.max.then_some(args.limit),
            &seq,
        );
        (report, snapshot)
    };
    if let Some(others) = &others {
        return compare::placements(global, others, &place, (fw, &pod, limit));
    }
    let (report, _) = place(fw, limit);
    match global.output {
        Output::Json | Output::Yaml => print_structured(&report, global.output)?,
        Output::Table | Output::Wide => print_text(
            global,
            &explain::placement::render(&report, table_options(global)),
        ),
    }
    Ok(if args.max || report.placed == replicas {
        EXIT_FITS
    } else {
        EXIT_UNSCHEDULABLE
    })
}

/// A count of replicas placed, redrawn on stderr while a long placement runs on a terminal.
struct Progress {
    started: std::time::Instant,
    drawn: Option<std::time::Instant>,
    terminal: bool,
}

impl Progress {
    /// Quiet for the first second: most placements are over by then.
    const QUIET: std::time::Duration = std::time::Duration::from_secs(1);
    const EVERY: std::time::Duration = std::time::Duration::from_millis(200);

    fn new() -> Progress {
        Progress {
            started: std::time::Instant::now(),
            drawn: None,
            terminal: std::io::stderr().is_terminal(),
        }
    }

    fn placed(&mut self, n: usize) {
        if !self.terminal || n % 64 != 0 {
            return;
        }
        let now = std::time::Instant::now();
        let due = match self.drawn {
            None => now - self.started >= Self::QUIET,
            Some(t) => now - t >= Self::EVERY,
        };
        if due {
            eprint!("\rplacing replicas: {n} placed…");
            self.drawn = Some(now);
        }
    }

    fn done(&self) {
        if self.drawn.is_some() {
            eprint!("\r\x1b[K");
        }
    }
}

/// Every node's pod capacity: no sequence of placements can go beyond it.
fn max_replicas(snapshot: &Snapshot) -> usize {
    snapshot
        .nodes
        .iter()
        .map(|n| n.allocatable().allowed_pods.max(0) as usize)
        .sum::<usize>()
        + 1
}

pub fn render(global: &GlobalArgs, e: &explain::Explanation) -> Result<(), Failure> {
    match global.output {
        Output::Json | Output::Yaml => print_structured(e, global.output),
        Output::Table | Output::Wide => {
            print_text(global, &explain::table::render(e, table_options(global)));
            Ok(())
        }
    }
}
