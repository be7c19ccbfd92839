//! The report of a replica placement (`whatif --replicas N` / `--max`), its schema and table.

use super::table::TableOptions;
use crate::framework::sequence::Sequence;
use crate::framework::snapshot::Snapshot;
use crate::model::pod::Pod;
use crate::release::ReleaseChoice;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table, presets};
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
    /// Nodes tied for the best score (the real scheduler picks one of them at random).
    pub tied: Vec<String>,
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
    /// Placements where several nodes tied: another run of the real scheduler may differ there.
    pub ties: usize,
}

pub fn build(
    scheduler: ReleaseChoice,
    snapshot: &Snapshot,
    template: &Pod,
    workload: Option<&str>,
    requested: Option<usize>,
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
                tied: if p.tied.len() > 1 {
                    p.tied.iter().map(|t| t.to_string()).collect()
                } else {
                    Vec::new()
                },
            })
            .collect(),
        per_node,
        per_zone,
        stopped: seq.stopped.clone(),
        ties: seq.placements.iter().filter(|p| p.tied.len() > 1).count(),
    }
}

pub fn render(r: &PlacementReport, opts: TableOptions) -> String {
    let style = opts.style;
    let mut out = String::new();
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
        style.dim(&r.scheduler.describe())
    );
    let mut t = Table::new();
    t.load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(opts.width);
    t.set_header(vec!["REPLICA", "NODE", "SCORE", "TIED WITH"]);
    for p in &r.placements {
        let tied: Vec<&str> = p
            .tied
            .iter()
            .map(String::as_str)
            .filter(|t| *t != p.node)
            .collect();
        t.add_row(vec![
            Cell::new(&p.pod),
            Cell::new(&p.node),
            Cell::new(p.score.map_or("-".to_string(), |s| s.to_string()))
                .set_alignment(CellAlignment::Right),
            Cell::new(tied.join(", ")),
        ]);
    }
    if !r.placements.is_empty() {
        let _ = writeln!(out, "{}", t.trim_fmt());
    }
    out.push('\n');
    let per_node: Vec<String> = r.per_node.iter().map(|(n, c)| format!("{n} {c}")).collect();
    match r.requested {
        Some(n) if r.placed == n => {
            let _ = writeln!(
                out,
                "{} {}/{n}: {}",
                style.good("Placed"),
                r.placed,
                per_node.join(", ")
            );
        }
        Some(n) => {
            let _ = writeln!(
                out,
                "{} {}/{n}: {}",
                style.bad("Placed only"),
                r.placed,
                per_node.join(", ")
            );
        }
        None => {
            let _ = writeln!(
                out,
                "{} {} more replica(s) fit: {}",
                style.good("At most"),
                r.placed,
                per_node.join(", ")
            );
        }
    }
    if !r.per_zone.is_empty() {
        let zones: Vec<String> = r.per_zone.iter().map(|(z, c)| format!("{z} {c}")).collect();
        let _ = writeln!(out, "By zone: {}", zones.join(", "));
    }
    if let Some(msg) = &r.stopped {
        let _ = writeln!(
            out,
            "{} {msg}",
            style.bad(&format!("Replica {} fits nowhere:", r.placed + 1))
        );
    }
    if r.ties > 0 {
        let _ = writeln!(
            out,
            "{} {} placement(s) had tied nodes; kube-scheduler picks among them at random, this tool takes the first by name",
            style.dim("Note:"),
            r.ties
        );
    }
    out
}
