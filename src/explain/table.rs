//! The human view of an explanation: one row per node, best first, with the first failing plugin
//! and its reasons, the scores and the total; then what the real scheduler would say and do.
//! Readable at 80 columns; `wide` adds a column per Score plugin.

use super::{Explanation, NodeExplanation, Stage};
use crate::term::{Column, Fit, Style, Table, TableOptions};
use std::collections::BTreeSet;
use std::fmt::Write;

fn verdict(n: &NodeExplanation, selected: bool, style: Style) -> String {
    if n.feasible {
        if selected {
            style.good("fits *")
        } else {
            style.good("fits")
        }
    } else {
        match n.stage {
            Some(Stage::PreEnqueue | Stage::NotEvaluated) => style.dim("not tried"),
            _ => style.bad("no"),
        }
    }
}

fn why(n: &NodeExplanation) -> String {
    if n.feasible {
        return String::new();
    }
    let mut out = String::new();
    if n.stage == Some(Stage::NotEvaluated) {
        out.push_str("not evaluated by kube-scheduler");
    } else if let Some(p) = &n.plugin {
        let _ = write!(out, "{p}: ");
    } else if n.stage == Some(Stage::PreFilter) {
        out.push_str("PreFilter: ");
    }
    out.push_str(&n.reasons.join("; "));
    // Other filters that fail too, which the real scheduler never ran on this node.
    let others: Vec<String> = n
        .all_reasons
        .iter()
        .filter(|(p, _)| Some(**p) != n.plugin)
        .map(|(p, s)| format!("{p}: {}", s.reasons.join("; ")))
        .collect();
    if !others.is_empty() {
        let also = if n.stage == Some(Stage::NotEvaluated) {
            "would fail"
        } else {
            "also"
        };
        let _ = write!(out, "\n({also} {})", others.join("; "));
    }
    out
}

fn header(e: &Explanation, style: Style, width: u16) -> String {
    format!(
        "{} {} (priority {}, profile {}) on {} node(s)\n{}\n",
        style.bold("Pod"),
        style.bold(&e.pod),
        e.priority,
        e.profile,
        e.num_nodes,
        e.scheduler.header(style, width)
    )
}

pub fn render(e: &Explanation, opts: TableOptions) -> String {
    let style = opts.style;
    let mut out = header(e, style, opts.width);
    if e.prefilter.plugin == "SchedulingGates" {
        let _ = writeln!(
            out,
            "\n{} the pod is held back by scheduling gates and is never tried (SchedulingGates): {}",
            style.warn("Not scheduled:"),
            e.prefilter.reasons.join("; ")
        );
        return out;
    }
    let score_plugins: Vec<&str> = {
        let mut v: Vec<&str> = e
            .nodes
            .iter()
            .flat_map(|n| n.scores.keys().copied())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let mut columns = vec![
        Column::new("NODE", Fit::Keep),
        Column::new("FITS", Fit::Keep),
        Column::new("FIRST FAILING PLUGIN: REASONS", Fit::Wrap { min: 24 }),
    ];
    if opts.wide {
        columns.extend(
            score_plugins
                .iter()
                .map(|p| Column::new(p, Fit::Keep).right()),
        );
    }
    columns.push(Column::new("SCORE", Fit::Keep).right());
    let mut table = Table::new(columns);
    for n in &e.nodes {
        let selected = e.selected.contains(&n.name);
        let mut row = vec![n.name.to_string(), verdict(n, selected, style), why(n)];
        if opts.wide {
            row.extend(
                score_plugins
                    .iter()
                    .map(|p| n.scores.get(*p).map(|s| s.to_string()).unwrap_or_default()),
            );
        }
        row.push(n.total.map(|t| t.to_string()).unwrap_or_default());
        table.row(row);
    }
    out.push_str(&table.render(opts.width, opts.wide));
    out.push('\n');
    summary(e, opts, &mut out);
    out
}

fn summary(e: &Explanation, opts: TableOptions, out: &mut String) {
    let style = opts.style;
    if let Some(err) = &e.error {
        let _ = writeln!(out, "{} {err}", style.bad("Error:"));
        return;
    }
    if e.fits() {
        let best = e
            .nodes
            .iter()
            .find(|n| n.name == e.selected[0])
            .and_then(|n| n.total)
            .unwrap_or(0);
        if e.selected.len() == 1 {
            let _ = writeln!(
                out,
                "{} {} (score {best})",
                style.good("Would be scheduled on"),
                style.bold(&e.selected[0])
            );
        } else {
            let _ = writeln!(
                out,
                "{} one of {} (tied at score {best})",
                style.good("Would be scheduled on"),
                style.bold(
                    &e.selected
                        .iter()
                        .map(|n| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            );
        }
    } else {
        let _ = writeln!(out, "{} {}", style.bad("Unschedulable:"), e.message);
        if e.prefilter.code != crate::framework::status::Code::Success
            && !e.prefilter.plugin.is_empty()
        {
            let _ = writeln!(
                out,
                "  rejected before any node was tried, by {} (PreFilter)",
                e.prefilter.plugin
            );
        }
    }
    if let Some(p) = &e.preemption {
        preemption(e, p, opts, out);
    }
    super::extenders::render(e, style, out);
    for b in &e.binding {
        let _ = writeln!(out, "{} {b}", style.dim("VolumeBinding:"));
    }
    devices(e, style, out);
    for note in &e.notes {
        let _ = writeln!(out, "{} {note}", style.dim("Note:"));
    }
}

/// How many rejected nodes the table details; `-o json` has them all.
const DEVICE_NODES_SHOWN: usize = 5;

/// DynamicResources: what the chosen nodes would allocate, and on nodes it rejected, what each
/// request finds there.
fn devices(e: &Explanation, style: Style, out: &mut String) {
    let label = style.dim("DynamicResources:");
    for (node, claims) in &e.dra_allocation {
        for (claim, devices) in claims {
            let list: Vec<String> = devices
                .iter()
                .map(|d| {
                    let admin = if d.admin_access {
                        " (admin access)"
                    } else {
                        ""
                    };
                    format!(
                        "{} → {}/{}/{}{admin}",
                        d.request, d.driver, d.pool, d.device
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "{label} on {node}, claim {claim} gets {}",
                list.join(", ")
            );
        }
    }
    let rejected: Vec<&NodeExplanation> =
        e.nodes.iter().filter(|n| !n.devices.is_empty()).collect();
    for n in rejected.iter().take(DEVICE_NODES_SHOWN) {
        let mut all_served = true;
        for r in &n.devices {
            let enough = r
                .wants
                .parse::<usize>()
                .map_or(!r.usable.is_empty(), |w| r.usable.len() >= w);
            all_served &= enough;
            let usable = if r.usable.is_empty() {
                "none usable".to_string()
            } else {
                format!("usable {}", r.usable.join(", "))
            };
            let _ = writeln!(
                out,
                "{label} {}: claim {} request {} wants {} of class {}: {usable}",
                n.name, r.claim, r.request, r.wants, r.device_class
            );
            for x in &r.excluded {
                let _ = writeln!(out, "    {}: {}", x.device, x.reason);
            }
        }
        let constraints: BTreeSet<&String> =
            n.devices.iter().flat_map(|r| &r.constraints).collect();
        if let Some(fixed) = n.allocator_fixed_in {
            let _ = writeln!(
                out,
                "    the allocator of {} keeps the shared counters and constraint entries of devices it tried and gave up; from {fixed} on it gives them back and allocates here",
                e.scheduler.release
            );
        } else if all_served && !constraints.is_empty() {
            let list: Vec<&str> = constraints.iter().map(|c| c.as_str()).collect();
            let _ = writeln!(
                out,
                "    every request finds devices, but no combination of them keeps {}",
                list.join(", ")
            );
        }
    }
    if rejected.len() > DEVICE_NODES_SHOWN {
        let _ = writeln!(
            out,
            "{label} {} more node(s) rejected; -o json lists their devices",
            rejected.len() - DEVICE_NODES_SHOWN
        );
    }
}

fn preemption(
    e: &Explanation,
    p: &super::PreemptionExplanation,
    opts: TableOptions,
    out: &mut String,
) {
    let style = opts.style;
    out.push('\n');
    if p.message == crate::plugins::dynamic_resources::ERR_NOT_FOUND {
        let _ = writeln!(
            out,
            "{} the message ends in \"not found\": a PreFilter plugin rejected the pod before DynamicResources' PreFilter ran, so its PostFilter finds no state and fails with that text; preemption is never attempted.",
            style.bold("Preemption:")
        );
        return;
    }
    if let Some(reason) = &p.not_eligible {
        let _ = writeln!(
            out,
            "{} the pod may not preempt: {reason}",
            style.bold("Preemption:")
        );
        return;
    }
    if !p.nominated_node.is_empty() {
        let _ = writeln!(
            out,
            "{} would nominate {} and evict {}",
            style.bold("Preemption:"),
            style.bold(&p.nominated_node),
            p.victims.join(", ")
        );
        if p.tied_nodes.len() > 1 {
            let _ = writeln!(
                out,
                "  {} candidates are equally good ({}): kube-scheduler picks one arbitrarily",
                p.tied_nodes.len(),
                p.tied_nodes.join(", ")
            );
        }
        let mut t = Table::new(vec![
            Column::new("CANDIDATE", Fit::Keep),
            Column::new("VICTIM", Fit::Wrap { min: 16 }),
            Column::new("PRIORITY", Fit::Keep),
            Column::new("VIOLATES PDB", Fit::Wrap { min: 12 }),
            Column::new("PDB VIOLATIONS", Fit::Keep),
        ]);
        for c in &p.candidates {
            for (i, v) in c.victims.iter().enumerate() {
                let node = if i == 0 {
                    if c.node == p.nominated_node {
                        format!("{} *", c.node)
                    } else {
                        c.node.clone()
                    }
                } else {
                    String::new()
                };
                let count = if i == 0 {
                    c.num_pdb_violations.to_string()
                } else {
                    String::new()
                };
                t.row(vec![
                    node,
                    v.pod.clone(),
                    v.priority.to_string(),
                    v.violates.join(", "),
                    count,
                ]);
            }
        }
        out.push_str(&t.render(opts.width, opts.wide));
        if p.potential_nodes.len() > p.sampled_candidates {
            let _ = writeln!(
                out,
                "  kube-scheduler evaluates candidates from a random node until it has {} of them, so its choice may differ",
                p.sampled_candidates
            );
        }
        return;
    }
    let _ = writeln!(
        out,
        "{} will not help: {}",
        style.bold("Preemption"),
        plain_reason(e, p)
    );
    if p.message
        .starts_with(crate::plugins::dynamic_resources::NO_NEW_CLAIMS)
    {
        out.push_str("  (the message starts with \"no new claims to deallocate\": the DynamicResources PostFilter runs first in the default profile and has nothing to free for a pod without resource claims)\n");
    }
}

/// Why preemption cannot help, in words: which filters block which nodes.
fn plain_reason(e: &Explanation, p: &super::PreemptionExplanation) -> String {
    use std::collections::BTreeMap;
    let mut unresolvable: BTreeMap<&str, usize> = BTreeMap::new();
    for n in &e.nodes {
        if !p
            .potential_nodes
            .iter()
            .any(|pn| pn.as_str() == n.name.as_str())
        {
            let key = n.plugin.unwrap_or("PreFilter");
            *unresolvable.entry(key).or_default() += 1;
        }
    }
    let mut parts: Vec<String> = unresolvable
        .iter()
        .map(|(plugin, count)| {
            if *plugin == crate::plugins::node_resources_fit::NAME {
                format!(
                    "on {count} node(s) the pod requests more than the node's allocatable ({plugin}), which evicting pods cannot fix"
                )
            } else {
                format!("{count} node(s) fail {plugin}, which evicting pods cannot fix")
            }
        })
        .collect();
    for (node, s) in &p.failures {
        parts.push(format!("on {node}: {}", s.reasons.join("; ")));
    }
    parts.join("; ")
}
