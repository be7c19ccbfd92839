//! Change planning: the change flags and the `-f` documents become a `plan::Request`, the plan
//! runs on the cluster as read (live or `--snapshot`; only ever read), and its report is printed.
//! `whatif` plans when a change, `--seed`, a DaemonSet or several documents are given;
//! `explain --all-pending` when a change or `--seed` is.

use super::profiles::{frameworks, profile_for, release};
use super::render::{print_structured, print_text, table_options};
use super::source::Source;
use super::workload::{UpdateStrategy, load_pod};
use super::{EXIT_FITS, EXIT_UNSCHEDULABLE, Failure, Outcome};
use crate::cli::{self, GlobalArgs, Output, PlanArgs};
use crate::framework::runner::Framework;
use crate::model::cluster::Cluster;
use crate::model::intern::Interner;
use crate::model::intern::Str;
use crate::model::node::{LABEL_HOSTNAME, Node};
use crate::model::parse::{LoadOptions, Parse};
use crate::plan::{self, daemonset, edit::Edit};
use crate::source::{file, live};
use anyhow::anyhow;
use serde_json::Value;
use std::sync::Arc;

/// The `-f` file: its name for messages and its documents, in order.
pub type Documents = (String, Vec<Value>);

/// Whether a document is a DaemonSet, which only a plan places.
pub fn is_daemon_set(doc: &Value) -> bool {
    doc.get("kind").and_then(Value::as_str) == Some("DaemonSet")
}

/// The change flags, parsed and checked on their own (before the cluster is read); `--add-node`
/// manifests are read here.
pub fn edits(args: &PlanArgs) -> Result<Vec<Edit>, Failure> {
    args.edits
        .0
        .iter()
        .map(|e| {
            Ok(match e {
                cli::Edit::Cordon(n) => Edit::Cordon(Str::new(n)),
                cli::Edit::Uncordon(n) => Edit::Uncordon(Str::new(n)),
                cli::Edit::DeleteNode(n) => Edit::DeleteNode(Str::new(n)),
                cli::Edit::Taint(v) => Edit::taint(v).map_err(Failure::bad_input)?,
                cli::Edit::Untaint(v) => Edit::untaint(v).map_err(Failure::bad_input)?,
                cli::Edit::Label(n, change) => {
                    Edit::label(n, change).map_err(Failure::bad_input)?
                }
                cli::Edit::AddNode(path) => Edit::AddNode {
                    node: Box::new(node_manifest(path)?),
                    file: path.clone(),
                },
                cli::Edit::CloneNode(v) => Edit::clone_node(v).map_err(Failure::bad_input)?,
                cli::Edit::DeletePod(v) => Edit::delete_pod(v).map_err(Failure::bad_input)?,
                cli::Edit::Drain(n) => Edit::Drain(Str::new(n)),
                cli::Edit::Selected {
                    flag,
                    selector,
                    taint,
                } => {
                    Edit::selected(flag, selector, taint.as_deref()).map_err(Failure::bad_input)?
                }
            })
        })
        .collect()
}

/// The Node of an `--add-node` manifest, read as the snapshot reads nodes. A node reports its
/// capacity, and the kubelet labels it with its hostname: without them it would fit nothing, or
/// escape every hostname topology.
fn node_manifest(path: &str) -> Result<Node, Failure> {
    let bad = |message: String| Failure::bad_input(anyhow!("--add-node {path}: {message}"));
    let (display, mut docs) =
        file::load_documents(path, file::Limits::default()).map_err(Failure::bad_input)?;
    let doc = match docs.len() {
        1 => docs.remove(0),
        n => return Err(bad(format!("expected one Node, found {n} objects"))),
    };
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != "Node" {
        return Err(bad(format!("expected a Node, found a {kind:?}")));
    }
    let k8s: k8s_openapi::api::core::v1::Node =
        file::typed(&display, "Node", doc).map_err(Failure::bad_input)?;
    let status = k8s.status.as_ref();
    if status
        .and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref()))
        .is_none_or(|r| r.is_empty())
    {
        return Err(bad(format!(
            "Node {:?}: status.capacity: required: a node that reports no capacity fits no pod",
            k8s.metadata.name.as_deref().unwrap_or("")
        )));
    }
    let strings = Interner::new();
    let parse = Parse {
        strings: &strings,
        keep_api_objects: false,
    };
    let mut node = Node::from_k8s(&k8s, &parse).map_err(|e| bad(e.to_string()))?;
    if node.labels.get_str(LABEL_HOSTNAME).is_none() {
        node.labels.insert(Str::new(LABEL_HOSTNAME), node.name);
    }
    Ok(node)
}

/// What makes a `whatif` a plan, for messages: the -f file's content is named with the file.
fn why_a_plan(args: &cli::WhatifArgs, documents: Option<&Documents>) -> String {
    match documents {
        Some((display, docs)) if docs.len() > 1 => {
            format!("{display} holds {} documents", docs.len())
        }
        Some((display, docs)) if docs.iter().any(is_daemon_set) => {
            format!("{display} holds a DaemonSet")
        }
        _ if args.plan.seed.is_some() => "--seed".to_string(),
        _ => "changes to the cluster".to_string(),
    }
}

/// `whatif` with changes, `--seed`, a DaemonSet or several documents.
pub fn whatif(
    global: &GlobalArgs,
    args: &cli::WhatifArgs,
    documents: Option<Documents>,
    edits: Vec<Edit>,
) -> Outcome {
    if args.max {
        return Err(Failure::bad_input(anyhow!(
            "--max counts the replicas that fit on the cluster as it is; it does not combine with a plan ({})",
            why_a_plan(args, documents.as_ref())
        )));
    }
    if args.scheduler.call_extenders {
        return Err(Failure::bad_input(anyhow!(
            "--call-extenders places one pod: extenders keep their own view of the cluster, which would not include the changes and the pods placed before; drop --call-extenders to plan ({})",
            why_a_plan(args, documents.as_ref())
        )));
    }
    if let (Some(_), Some((display, docs))) = (args.replicas, &documents)
        && (docs.len() > 1 || docs.iter().any(is_daemon_set))
    {
        return Err(Failure::bad_input(anyhow!(
            "--replicas: {display} holds {}; --replicas sets the count of a single Pod or workload",
            if docs.len() > 1 {
                format!("{} documents", docs.len())
            } else {
                "a DaemonSet, which runs one pod per node".to_string()
            }
        )));
    }
    if args.replicas.is_some() && documents.is_none() {
        return Err(Failure::bad_input(anyhow!(
            "--replicas sets how many pods of -f to place: pass -f FILE"
        )));
    }
    let drain = drain_options(&args.plan)?;
    let source = Source::open(global)?;
    let cluster = source.load(&Default::default(), LoadOptions::default())?;
    let fws = frameworks(
        global,
        &args.scheduler,
        release(&args.scheduler, &source, &cluster)?,
    )?;
    let mut workloads = Vec::new();
    let mut owners = Vec::new();
    let mut replaced = Vec::new();
    if let Some((display, docs)) = documents {
        let several = docs.len() > 1;
        for (i, doc) in docs.into_iter().enumerate() {
            let name = if several {
                format!("{display} (document {})", i + 1)
            } else {
                display.clone()
            };
            let (pod, w) = load_pod(
                (name, doc),
                global.namespace.as_deref(),
                &source.namespace(global),
                &cluster,
            )?;
            profile_for(&fws, &pod.scheduler_name)?;
            replaced.extend(w.replaces.clone());
            workloads.push(match w.daemon_set {
                Some(strategy) => {
                    let mut template = pod;
                    daemonset::add_controller_tolerations(&mut template);
                    plan::Workload::DaemonSet(daemonset::DaemonSet {
                        namespace: template.namespace,
                        name: template.name,
                        template,
                        on_delete: strategy == UpdateStrategy::OnDelete,
                    })
                }
                None => {
                    let count = args.replicas.or(w.replicas).unwrap_or(1);
                    owners.push((w, pod.namespace));
                    plan::Workload::Replicas {
                        template: pod,
                        count,
                    }
                }
            });
        }
    }
    let mut cluster = Arc::try_unwrap(cluster).unwrap_or_else(|shared| (*shared).clone());
    cluster
        .pods
        .retain(|p| !replaced.iter().any(|r: &Arc<_>| r.uid == p.uid));
    for (w, namespace) in &owners {
        w.register_owner(&mut cluster, *namespace);
    }
    let request = || plan::Request {
        edits: edits.clone(),
        drain,
        workloads: workloads.clone(),
        pending: None,
        seed: args.plan.seed,
    };
    report(global, &fws, &args.scheduler, cluster, &request)
}

/// `explain --all-pending` with changes: the pending pods (of `-n`'s namespace when given, those
/// `-l` and `--field-selector` select) go through the queue on the changed cluster.
pub fn all_pending(
    global: &GlobalArgs,
    args: &cli::ExplainArgs,
    source: &Source,
    edits: Vec<Edit>,
    selected: plan::PodFilter,
) -> Outcome {
    let drain = drain_options(&args.plan)?;
    let cluster = source.load(&Default::default(), LoadOptions::default())?;
    let fws = frameworks(
        global,
        &args.scheduler,
        release(&args.scheduler, source, &cluster)?,
    )?;
    let cluster = Arc::try_unwrap(cluster).unwrap_or_else(|shared| (*shared).clone());
    // The selection is asked once per run (twice with --compare-to).
    let selected = std::rc::Rc::new(selected);
    let request = || plan::Request {
        edits: edits.clone(),
        drain,
        workloads: Vec::new(),
        pending: Some(Box::new({
            let selected = selected.clone();
            move |p: &crate::model::pod::Pod| selected(p)
        })),
        seed: args.plan.seed,
    };
    report(global, &fws, &args.scheduler, cluster, &request)
}

fn drain_options(args: &PlanArgs) -> Result<plan::drain::Options, Failure> {
    let timeout = match &args.drain_timeout {
        Some(value) => live::parse_duration(value).map_err(|_| {
            Failure::bad_input(anyhow!(
                "invalid --drain-timeout {value:?}: use a duration such as 90s, 5m or 1h (0 retries for ever)"
            ))
        })?,
        None => None,
    };
    Ok(plan::drain::Options {
        force: args.force,
        delete_emptydir_data: args.delete_emptydir_data,
        timeout,
    })
}

/// Runs the plan and prints its report; exit 1 unless it is safe. With `--compare-to`, runs it
/// under both releases and prints what differs.
fn report(
    global: &GlobalArgs,
    fws: &[Framework],
    args: &cli::SchedulerArgs,
    cluster: Cluster,
    request: &dyn Fn() -> plan::Request,
) -> Outcome {
    let seed = request().seed;
    if let Some(others) = super::compare::other(global, args, fws[0].release)? {
        let base = plan::run(fws, cluster.clone(), request()).map_err(Failure::bad_input)?;
        let other = plan::run(&others, cluster, request()).map_err(Failure::bad_input)?;
        return super::compare::plan(
            global,
            &plan::report::build(fws[0].release, seed, &base),
            &plan::report::build(others[0].release, seed, &other),
        );
    }
    let plan = plan::run(fws, cluster, request()).map_err(Failure::bad_input)?;
    let report = plan::report::build(fws[0].release, seed, &plan);
    match global.output {
        Output::Json | Output::Yaml => print_structured(&report, global.output)?,
        Output::Table | Output::Wide => {
            print_text(global, &plan::table::render(&report, table_options(global)))
        }
    }
    Ok(if report.verdict.safe {
        EXIT_FITS
    } else {
        EXIT_UNSCHEDULABLE
    })
}
