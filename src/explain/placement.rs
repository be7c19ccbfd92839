//! The report of a replica placement (`whatif --replicas N` / `--max`), its schema and table.

use crate::framework::sequence::{Preemption, Sequence};
use crate::framework::snapshot::Snapshot;
use crate::model::pod::Pod;
use crate::release::ReleaseChoice;
use crate::term::{Column, Fit, Table, TableOptions};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementEntry {
    pub pod: String,
    pub node: String,
    /// The winning total score; null when only one node was feasible (not scored).
    pub score: Option<i64>,
    /// The first nodes (by name, at most three) of those tied for the best score, when several
    /// tied: the real scheduler picks one of them at random.
    pub tied: Vec<String>,
    /// How many nodes tied for the best score (1: none but `node`).
    pub tied_count: usize,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacementReport {
    /// `namespace/name` of the pod template.
    pub pod: String,
    /// The workload the pods come from ("Deployment web"), when one was given.
    pub workload: Option<String>,
    pub priority: i32,
    /// The kube-scheduler release modelled and why.
    #[serde(flatten)]
    pub scheduler: ReleaseChoice,
    pub num_nodes: usize,
    /// How many replicas were asked for; null for `--max`.
    pub requested: Option<usize>,
    pub placed: usize,
    pub placements: Vec<PlacementEntry>,
    pub per_node: BTreeMap<String, usize>,
    /// Replicas per `topology.kubernetes.io/zone` (nodes without the label are left out).
    pub per_zone: BTreeMap<String, usize>,
    /// Why the next replica fits nowhere: its FailedScheduling message.
    pub stopped: Option<String>,
    /// What DefaultPreemption would do next for that replica: evict `victims` pods on `node`
    /// and nominate the node. Null when it makes no room, or does not run.
    pub preemption: Option<NextPreemption>,
    /// `--max` stopped at this bound (`--limit`) while replicas still fit.
    pub limit: Option<usize>,
    /// Placements where several nodes tied: another run of the real scheduler may differ there.
    pub ties: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct NextPreemption {
    pub node: String,
    pub victims: usize,
}

pub fn build(
    scheduler: ReleaseChoice,
    snapshot: &Snapshot,
    template: &Pod,
    workload: Option<&str>,
    requested: Option<usize>,
    limit: Option<usize>,
    seq: &Sequence,
) -> PlacementReport {
    let mut per_node = BTreeMap::new();
    let mut per_zone = BTreeMap::new();
    for p in &seq.placements {
        *per_node.entry(p.node.to_string()).or_insert(0) += 1;
        if let Some(z) = snapshot.get(p.node).and_then(|n| n.node.zone()) {
            *per_zone.entry(z.to_string()).or_insert(0) += 1;
        }
    }
    PlacementReport {
        pod: template.key(),
        workload: workload.map(str::to_string),
        priority: template.priority,
        scheduler,
        num_nodes: snapshot.num_nodes(),
        requested,
        placed: seq.placements.len(),
        placements: seq
            .placements
            .iter()
            .map(|p| PlacementEntry {
                pod: p.pod.clone(),
                node: p.node.to_string(),
                score: p.score,
                tied: if p.ties > 1 {
                    p.tied.iter().map(|t| t.to_string()).collect()
                } else {
                    Vec::new()
                },
                tied_count: p.ties,
            })
            .collect(),
        per_node,
        per_zone,
        stopped: seq.stopped.clone(),
        preemption: match &seq.preemption {
            Some(Preemption::Nominates { node, victims }) => Some(NextPreemption {
                node: node.to_string(),
                victims: *victims,
            }),
            Some(Preemption::NoRoom) | None => None,
        },
        limit: limit.filter(|&l| seq.stopped.is_none() && seq.placements.len() == l),
        ties: seq.placements.iter().filter(|p| p.ties > 1).count(),
    }
}

/// The widest list of tied nodes the default view names.
const TIED_SHOWN: usize = 24;

pub fn render(r: &PlacementReport, opts: TableOptions) -> String {
    let style = opts.style;
    let mut out = String::new();
    // Node names as clouds write them run to 40 characters: every line below the table wraps.
    let say = |out: &mut String, line: String| {
        let _ = writeln!(out, "{}", crate::term::prose(&line, opts.width, 2));
    };
    let what = r
        .workload
        .as_deref()
        .map(|w| format!(" ({w})"))
        .unwrap_or_default();
    let count = r
        .requested
        .map_or("as many replicas as fit".to_string(), |n| {
            format!("{n} replica(s)")
        });
    let _ = writeln!(
        out,
        "{} {count} of {}{what}, priority {}, on {} node(s)\n{}",
        style.bold("Placing"),
        style.bold(&r.pod),
        r.priority,
        r.num_nodes,
        r.scheduler.header(style, opts.width)
    );
    let mut t = Table::new(vec![
        Column::new("REPLICA", Fit::Keep),
        Column::new("NODE", Fit::Keep),
        Column::new("SCORE", Fit::Keep).right(),
        Column::new("TIED WITH", Fit::Wrap { min: 16 }),
    ]);
    for p in &r.placements {
        let others: Vec<&str> = p
            .tied
            .iter()
            .map(String::as_str)
            .filter(|t| *t != p.node)
            .collect();
        let unnamed = p.tied_count.saturating_sub(p.tied.len());
        let named = match unnamed {
            _ if p.tied_count <= 1 => String::new(),
            0 => others.join(", "),
            n => format!("{} and {n} more", others.join(", ")),
        };
        // Cloud node names would wrap over several lines of the column: the default view counts
        // them instead (-o wide names them).
        let tied = if opts.wide || named.chars().count() <= TIED_SHOWN {
            named
        } else {
            format!("{} node(s)", p.tied_count - 1)
        };
        t.row(vec![
            p.pod.clone(),
            p.node.clone(),
            p.score.map_or("-".to_string(), |s| s.to_string()),
            tied,
        ]);
    }
    if !t.is_empty() {
        out.push_str(&t.render(opts));
    }
    if r.placements.iter().any(|p| p.score.is_none()) {
        say(
            &mut out,
            format!(
                "{} SCORE -: not scored, only one node was feasible (kube-scheduler skips scoring then)",
                style.dim("Note:")
            ),
        );
    }
    out.push('\n');
    let per_node: Vec<String> = r.per_node.iter().map(|(n, c)| format!("{n} {c}")).collect();
    // Where they went, when any were placed.
    let placed_on = if per_node.is_empty() {
        String::new()
    } else {
        format!(": {}", per_node.join(", "))
    };
    match (r.requested, r.limit) {
        (Some(n), _) if r.placed == n => {
            say(
                &mut out,
                format!("{} {}/{n}{placed_on}", style.good("Placed"), r.placed),
            );
        }
        (Some(n), _) => {
            say(
                &mut out,
                format!("{} {}/{n}{placed_on}", style.bad("Placed only"), r.placed),
            );
        }
        (None, Some(limit)) => {
            let last = r.placements.last().map_or("", |p| p.node.as_str());
            say(
                &mut out,
                format!(
                    "{} {} more replica(s) fit without evicting anything{placed_on}",
                    style.good("At least"),
                    r.placed
                ),
            );
            say(
                &mut out,
                format!(
                    "{} after {limit} replicas, the --limit, while more still fit (the last went to {last}); raise --limit to count further",
                    style.warn("Stopped")
                ),
            );
        }
        (None, None) => {
            say(
                &mut out,
                format!(
                    "{} {} more replica(s) fit without evicting anything{placed_on}",
                    style.good("At most"),
                    r.placed
                ),
            );
        }
    }
    if !r.per_zone.is_empty() {
        let zones: Vec<String> = r.per_zone.iter().map(|(z, c)| format!("{z} {c}")).collect();
        say(&mut out, format!("By zone: {}", zones.join(", ")));
    }
    if let Some(msg) = &r.stopped {
        let next = r.placed + 1;
        // kube-scheduler's message may say that preemption found a placement (1.37 does): the
        // replica fits nowhere as the cluster stands, and preempting is what would come next.
        match &r.preemption {
            Some(p) => {
                say(
                    &mut out,
                    format!(
                        "{} {msg}",
                        style.bad(&format!(
                            "Replica {next} fits on no node without evicting pods:"
                        ))
                    ),
                );
                say(
                    &mut out,
                    format!(
                        "{} DefaultPreemption would evict {} pod(s) on {} and nominate that node for replica {next}",
                        style.warn("Next:"),
                        p.victims,
                        p.node
                    ),
                );
            }
            None => {
                say(
                    &mut out,
                    format!(
                        "{} {msg}",
                        style.bad(&format!("Replica {next} fits nowhere:"))
                    ),
                );
            }
        }
    }
    if r.ties > 0 {
        say(
            &mut out,
            format!(
                "{} {} placement(s) had tied nodes; kube-scheduler picks among them at random, this tool takes the first by name",
                style.dim("Note:"),
                r.ties
            ),
        );
    }
    out
}
