//! `whatif -f FILE`: where would this pod go — or these replicas, one after another?

use super::compare;
use super::plan;
use super::profiles::{frameworks, load_options, profile_for, release};
use super::render::{print_structured, print_text, table_options};
use super::source::{Source, limits};
use super::workload::load_pod;
use super::{EXIT_FITS, EXIT_UNSCHEDULABLE, Failure, Outcome};
use crate::cli::{GlobalArgs, NodesArgs, NodesShown, Output, SuggestArgs, WhatifArgs};
use crate::explain;
use crate::framework::runner::Framework;
use crate::framework::schedule_one::CycleResult;
use crate::framework::sequence;
use crate::framework::snapshot::Snapshot;
use crate::model::cluster::Cluster;
use crate::model::pod::Pod;
use crate::source::file;
use crate::suggest::{self, Suggestions};
use anyhow::anyhow;
use serde::Serialize;
use std::io::IsTerminal;
use std::sync::Arc;

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
    let source = Source::open(global)?;
    let cluster = source.load(&Default::default(), load_options(&args.scheduler))?;
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
        let snapshot = Snapshot::new(cluster.clone(), None);
        let result = fw.schedule(&snapshot, &pod);
        let explanation = explanation(global, &args.nodes, fw, &snapshot, &pod, &result);
        if let Some(others) = &others {
            return compare::pod(global, others, &snapshot, &pod, &explanation);
        }
        let suggestions = suggestions(
            &suggest::Problem {
                fws: &fws,
                fw,
                cluster: &cluster,
                snapshot: &snapshot,
                pod: &pod,
                explanation: &explanation,
                pod_edits: workload.object.is_none(),
            },
            args.suggest,
        );
        render(global, &args.nodes, &explanation, suggestions.as_ref())?;
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

/// A pod's explanation with the inputs behind the scores it will show: every feasible node's in
/// JSON and YAML, the `--node` one's in a table, none otherwise.
pub fn explanation(
    global: &GlobalArgs,
    nodes: &NodesArgs,
    fw: &Framework,
    snapshot: &Snapshot,
    pod: &Pod,
    result: &CycleResult,
) -> explain::Explanation {
    let mut e = explain::build(fw, snapshot, pod, result);
    let only = match global.output {
        Output::Json | Output::Yaml => None,
        Output::Table | Output::Wide => match nodes.node.as_deref() {
            Some(name) => Some(name),
            None => return e,
        },
    };
    explain::add_score_inputs(&mut e, fw, snapshot, pod, result, only);
    e
}

/// "What would make it fit", for a pod that fits nowhere or only by preemption, unless
/// `--no-suggest`.
pub fn suggestions(p: &suggest::Problem, args: SuggestArgs) -> Option<Suggestions> {
    let limit = args.limit();
    (limit > 0 && !p.explanation.fits()).then(|| suggest::suggest(p, limit))
}

/// An explanation, and the suggestions when there are any: JSON and YAML carry both.
#[derive(Serialize)]
struct Suggested<'a> {
    #[serde(flatten)]
    explanation: &'a explain::Explanation,
    #[serde(flatten)]
    suggestions: Option<&'a Suggestions>,
}

pub fn render(
    global: &GlobalArgs,
    nodes: &NodesArgs,
    e: &explain::Explanation,
    suggestions: Option<&Suggestions>,
) -> Result<(), Failure> {
    match global.output {
        Output::Json | Output::Yaml => print_structured(
            &Suggested {
                explanation: e,
                suggestions,
            },
            global.output,
        ),
        Output::Table | Output::Wide => {
            if let Some(name) = nodes.node.as_deref()
                && !e.nodes.iter().any(|n| n.name.as_str() == name)
            {
                return Err(Failure::bad_input(anyhow!(
                    "--node {name}: the cluster has no such node"
                )));
            }
            let view = explain::table::View {
                node: nodes.node.as_deref(),
                all_nodes: nodes.nodes == NodesShown::All,
            };
            let opts = table_options(global);
            let mut text = explain::table::render(e, opts, view);
            if let Some(s) = suggestions {
                text.push_str(&suggest::table::render(s, opts));
            }
            print_text(global, &text);
            Ok(())
        }
    }
}
