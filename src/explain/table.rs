//! The human view of an explanation, verdict first: what the real scheduler would do or say,
//! the best feasible nodes, the rejected nodes grouped by reason with the facts behind it, then
//! preemption and notes; short at any cluster size. `--nodes all` gives a row per node (with
//! each node's facts), `-o wide` adds a column per Score plugin (short headers, a legend), and
//! `--node NAME` one node in full. Readable at 80 columns.

use super::{Explanation, NodeExplanation, Stage, list_names};
use crate::term::{Column, Fit, Style, Table, TableOptions, prose};
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
    let facts: Vec<String> = n
        .facts
        .iter()
        .filter(|f| Some(f.plugin) == n.plugin)
        .map(|f| super::facts::phrase(&f.detail))
        .collect();
    if !facts.is_empty() {
        let _ = write!(out, " — {}", facts.join("; "));
    }
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

fn header(e: &Explanation, opts: TableOptions) -> String {
    let style = opts.style;
    let pod = format!(
        "{} {} (priority {}, profile {}) on {} node(s)",
        style.bold("Pod"),
        style.bold(&e.pod),
        e.priority,
        e.profile,
        e.num_nodes,
    );
    format!(
        "{}\n{}\n",
        prose(&pod, opts.width, 2),
        e.scheduler.header(style, opts.width)
    )
}

/// `text` wrapped to `width` columns, every line indented by `indent` but the first (which the
/// caller places there).
fn paragraph(text: &str, width: u16, indent: usize) -> String {
    hanging(text, width, indent, indent).split_off(indent)
}

/// `text` wrapped to `width` columns, its first line indented by `first` and the others by `rest`.
fn hanging(text: &str, width: u16, first: usize, rest: usize) -> String {
    let pad = " ".repeat(first);
    let width = width.saturating_sub(u16::try_from(first).unwrap_or(u16::MAX));
    let text = prose(text, width, rest.saturating_sub(first));
    format!("{pad}{}", text.replace('\n', &format!("\n{pad}")))
}

/// What the table shows of the nodes: by default the verdict, the best feasible nodes and the
/// rejected ones grouped by reason; `all_nodes` a row per node; `node` one node in full.
#[derive(Clone, Copy, Debug, Default)]
pub struct View<'a> {
    pub node: Option<&'a str>,
    pub all_nodes: bool,
}

/// How many feasible nodes the default view lists, best first.
const BEST_SHOWN: usize = 5;
/// How many groups of rejected nodes the default view lists, largest first.
const GROUPS_SHOWN: usize = 8;

/// A short header for a Score plugin in `-o wide`: its capitals (`NodeResourcesFit` → `NRF`).
fn abbreviation(plugin: &str) -> String {
    let caps: String = plugin.chars().filter(char::is_ascii_uppercase).collect();
    if caps.is_empty() {
        plugin.to_string()
    } else {
        caps
    }
}

pub fn render(e: &Explanation, opts: TableOptions, view: View) -> String {
    let style = opts.style;
    let mut out = header(e, opts);
    if e.prefilter.plugin == "SchedulingGates" {
        let _ = writeln!(
            out,
            "\n{} the pod is held back by scheduling gates and is never tried (SchedulingGates): {}",
            style.warn("Not scheduled:"),
            e.prefilter.reasons.join("; ")
        );
        return out;
    }
    if let Some(name) = view.node {
        node_detail(e, name, opts, &mut out);
        return out;
    }
    verdict_line(e, opts, &mut out);
    out.push('\n');
    if view.all_nodes || opts.wide {
        every_node(e, opts, &mut out);
    } else {
        grouped(e, opts, &mut out);
    }
    summary(e, opts, &mut out);
    out
}

/// Every node, one row each, best first, with the facts behind the first failing plugin.
fn every_node(e: &Explanation, opts: TableOptions, out: &mut String) {
    let style = opts.style;
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
                .map(|p| Column::new(&abbreviation(p), Fit::Keep).right()),
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
    out.push_str(&table.render(opts));
    if opts.wide && !score_plugins.is_empty() {
        let legend: Vec<String> = score_plugins
            .iter()
            .map(|p| format!("{} {p}", abbreviation(p)))
            .collect();
        let _ = writeln!(
            out,
            " {}",
            style.dim(&paragraph(&legend.join(", "), opts.width, 1))
        );
    }
    out.push('\n');
}

/// The verdict and the message first: what the real scheduler would do or say.
fn verdict_line(e: &Explanation, opts: TableOptions, out: &mut String) {
    let style = opts.style;
    if let Some(err) = &e.error {
        let _ = writeln!(out, "\n{} {err}", style.bad("Error:"));
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
                "\n{} {} (score {best})",
                style.good("Would be scheduled on"),
                style.bold(&e.selected[0])
            );
        } else {
            let _ = writeln!(
                out,
                "\n{} one of {} (tied at score {best})",
                style.good("Would be scheduled on"),
                style.bold(&paragraph(&list_names(&e.selected), opts.width, 2))
            );
        }
    } else {
        let _ = writeln!(
            out,
            "\n{}\n  {}",
            style.bad("Unschedulable:"),
            paragraph(&e.message, opts.width, 2)
        );
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
}

/// A group of rejected nodes: the first failing plugin (none for PreFilter) and one reason.
type GroupKey<'a> = (Option<&'a str>, &'a str);

/// The best feasible nodes, then the rejected ones grouped by first failing plugin and reason
/// with their facts aggregated.
fn grouped(e: &Explanation, opts: TableOptions, out: &mut String) {
    let style = opts.style;
    let feasible: Vec<&NodeExplanation> = e.nodes.iter().filter(|n| n.feasible).collect();
    if !feasible.is_empty() {
        let mut t = Table::new(vec![
            Column::new("FEASIBLE NODE", Fit::Keep),
            Column::new("SCORE", Fit::Keep).right(),
        ]);
        for n in feasible.iter().take(BEST_SHOWN) {
            let mark = if e.selected.contains(&n.name) {
                " *"
            } else {
                ""
            };
            t.row(vec![
                format!("{}{mark}", n.name),
                n.total.map(|t| t.to_string()).unwrap_or_default(),
            ]);
        }
        out.push_str(&t.render(opts.narrow()));
        if feasible.len() > BEST_SHOWN {
            let _ = writeln!(
                out,
                " {}",
                style.dim(&format!(
                    "… and {} more feasible node(s)",
                    feasible.len() - BEST_SHOWN
                ))
            );
        }
        out.push('\n');
    }
    // Groups in order of first appearance (nodes by name), each with the nodes' indices.
    let mut groups: Vec<(GroupKey, Vec<usize>)> = Vec::new();
    let mut not_tried = 0;
    for (i, n) in e.nodes.iter().enumerate().filter(|(_, n)| !n.feasible) {
        if n.reasons.is_empty() {
            not_tried += 1;
            continue;
        }
        for r in &n.reasons {
            let key = (n.plugin, r.as_str());
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, nodes)) => nodes.push(i),
                None => groups.push((key, vec![i])),
            }
        }
    }
    if !groups.is_empty() {
        groups.sort_by_key(|g| std::cmp::Reverse(g.1.len()));
        let mut t = Table::new(vec![
            Column::new("NODES", Fit::Keep).right(),
            Column::new("REJECTED BY: REASON, WITH THE FACTS", Fit::Wrap { min: 30 }),
        ]);
        for ((plugin, reason), nodes) in groups.iter().take(GROUPS_SHOWN) {
            let facts = nodes.iter().flat_map(|&i| {
                e.nodes[i]
                    .facts
                    .iter()
                    .filter(|f| Some(f.plugin) == *plugin && f.reason == *reason)
            });
            let aggregated = super::facts::aggregate(facts);
            let mut cell = format!("{}: {reason}", plugin.unwrap_or("PreFilter"));
            if !aggregated.is_empty() {
                let _ = write!(cell, "\n{aggregated}");
            }
            t.row(vec![nodes.len().to_string(), cell]);
        }
        out.push_str(&t.render(opts.narrow()));
        if groups.len() > GROUPS_SHOWN {
            let _ = writeln!(
                out,
                " {}",
                style.dim(&format!(
                    "… and {} more reason(s)",
                    groups.len() - GROUPS_SHOWN
                ))
            );
        }
    }
    if not_tried > 0 {
        let _ = writeln!(
            out,
            " {}",
            style.dim(&format!(
                "{not_tried} node(s) not evaluated by kube-scheduler"
            ))
        );
    }
    let _ = writeln!(
        out,
        " {}",
        style.dim("--node NAME: one node in full; --nodes all or -o wide: every node")
    );
    out.push('\n');
}

/// One node in full: its verdict, every failing plugin with every fact, every score with the
/// inputs behind it.
fn node_detail(e: &Explanation, name: &str, opts: TableOptions, out: &mut String) {
    let style = opts.style;
    let Some(n) = e.nodes.iter().find(|n| n.name.as_str() == name) else {
        let _ = writeln!(
            out,
            "\n{} no node {name} in the cluster",
            style.bad("Unknown node:")
        );
        return;
    };
    let selected = e.selected.contains(&n.name);
    let _ = writeln!(
        out,
        "\n{} {}: {}",
        style.bold("Node"),
        style.bold(&n.name),
        verdict(n, selected, style)
    );
    let line = |out: &mut String, indent: usize, text: &str| {
        let _ = writeln!(
            out,
            "{}{}",
            " ".repeat(indent),
            paragraph(text, opts.width, indent)
        );
    };
    if !n.feasible {
        if n.stage == Some(Stage::NotEvaluated) {
            line(out, 2, "not evaluated by kube-scheduler");
        }
        // The plugin kube-scheduler stops at first, then the others that fail too.
        let mut plugins: Vec<(&str, Vec<&String>)> = Vec::new();
        if let Some(p) = n.plugin {
            plugins.push((p, n.reasons.iter().collect()));
        } else if !n.reasons.is_empty() {
            plugins.push(("", n.reasons.iter().collect()));
        }
        for (p, s) in &n.all_reasons {
            if Some(*p) != n.plugin {
                plugins.push((p, s.reasons.iter().collect()));
            }
        }
        for (i, (plugin, reasons)) in plugins.iter().enumerate() {
            let label = if plugin.is_empty() {
                "PreFilter"
            } else {
                plugin
            };
            let also = if i > 0 { " (also)" } else { "" };
            let _ = writeln!(out, "  {}{also}", style.bold(label));
            for r in reasons {
                line(out, 4, r);
                for f in n
                    .facts
                    .iter()
                    .filter(|f| f.plugin == *plugin && &f.reason == *r)
                {
                    line(out, 6, &super::facts::phrase(&f.detail));
                }
            }
        }
    }
    if !n.scores.is_empty() {
        let _ = writeln!(
            out,
            "  {} {}",
            style.bold("Score"),
            n.total.map(|t| t.to_string()).unwrap_or_default()
        );
        for (plugin, score) in &n.scores {
            let raw = n
                .score_inputs
                .get(plugin)
                .map(|s| format!(" (raw {})", s.raw))
                .unwrap_or_default();
            let _ = writeln!(out, "    {plugin} {score}{raw}");
            for input in n
                .score_inputs
                .get(plugin)
                .into_iter()
                .flat_map(|s| &s.inputs)
            {
                line(out, 6, &super::facts::input_phrase(input));
            }
        }
    }
    out.push('\n');
    summary(e, opts, out);
}

fn summary(e: &Explanation, opts: TableOptions, out: &mut String) {
    let style = opts.style;
    if e.error.is_some() {
        return;
    }
    if let Some(p) = &e.preemption {
        preemption(e, p, opts, out);
    }
    super::extenders::render(e, style, out);
    for b in &e.binding {
        let line = format!("{} {b}", style.dim("VolumeBinding:"));
        let _ = writeln!(out, "{}", prose(&line, opts.width, 2));
    }
    devices(e, style, out);
    for note in &e.notes {
        let line = format!("{} {note}", style.dim("Note:"));
        let _ = writeln!(out, "{}", prose(&line, opts.width, 2));
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
    if p.message == crate::plugins::dynamic_resources::ERR_NOT_FOUND {
        let line = format!(
            "{} the message ends in \"not found\": a PreFilter plugin rejected the pod before DynamicResources' PreFilter ran, so its PostFilter finds no state and fails with that text; preemption is never attempted.",
            style.bold("Preemption:")
        );
        let _ = writeln!(out, "{}", hanging(&line, opts.width, 0, 2));
        return;
    }
    if let Some(reason) = &p.not_eligible {
        let line = format!(
            "{} the pod may not preempt: {reason}",
            style.bold("Preemption:")
        );
        let _ = writeln!(out, "{}", hanging(&line, opts.width, 0, 2));
        return;
    }
    if !p.nominated_node.is_empty() {
        let line = format!(
            "{} would nominate {} and evict {}",
            style.bold("Preemption:"),
            style.bold(&p.nominated_node),
            // The nominated candidate's victims are listed in full beneath.
            list_names(&p.victims)
        );
        let _ = writeln!(out, "{}", prose(&line, opts.width, 2));
        if p.tied_nodes.len() > 1 {
            let line = format!(
                "{} candidates are equally good ({}): kube-scheduler picks one arbitrarily",
                p.tied_nodes.len(),
                p.tied_nodes.join(", ")
            );
            let _ = writeln!(out, "{}", hanging(&line, opts.width, 2, 4));
        }
        candidates(p, opts, out);
        if p.potential_nodes.len() > p.sampled_candidates {
            let line = format!(
                "kube-scheduler evaluates candidates from a random node until it has {} of them, so its choice may differ",
                p.sampled_candidates
            );
            let _ = writeln!(out, "{}", hanging(&line, opts.width, 2, 4));
        }
        return;
    }
    let _ = writeln!(out, "{} will not help:", style.bold("Preemption"));
    for line in plain_reason(e, p) {
        let _ = writeln!(out, "{}", hanging(&format!("- {line}"), opts.width, 2, 4));
    }
    if p.message
        .starts_with(crate::plugins::dynamic_resources::NO_NEW_CLAIMS)
    {
        let note = "(the message starts with \"no new claims to deallocate\": the DynamicResources PostFilter runs first in the default profile and has nothing to free for a pod without resource claims)";
        let _ = writeln!(out, "{}", hanging(note, opts.width, 2, 3));
    }
}

/// Each candidate node on a line of its own (node names run to 40 characters and more), its
/// victims in a table beneath, so that neither is broken mid-name at 80 columns.
fn candidates(p: &super::PreemptionExplanation, opts: TableOptions, out: &mut String) {
    let style = opts.style;
    for (i, c) in p.candidates.iter().enumerate() {
        let chosen = if c.node == p.nominated_node {
            format!(" {}", style.bold("(nominated)"))
        } else {
            String::new()
        };
        let line = format!(
            "{} {}{chosen}: {} victim(s), {} PDB violation(s)",
            style.dim("candidate"),
            c.node,
            c.victims.len(),
            c.num_pdb_violations
        );
        let _ = writeln!(out, "{}", hanging(&line, opts.width, 1, 3));
        let mut t = Table::new(vec![
            Column::new("  VICTIM", Fit::Keep),
            Column::new("PRIORITY", Fit::Keep),
            Column::new("VIOLATES PDB", Fit::Wrap { min: 12 }),
        ]);
        for v in &c.victims {
            t.row(vec![
                format!("  {}", v.pod),
                v.priority.to_string(),
                v.violates.join(", "),
            ]);
        }
        out.push_str(&t.render(TableOptions {
            headers: opts.headers && i == 0,
            ..opts
        }));
    }
}

/// Why preemption cannot help, one line per cause: which filters block which nodes, then the
/// nodes whose search for victims failed, alike together (thousands of nodes give a few lines).
fn plain_reason(e: &Explanation, p: &super::PreemptionExplanation) -> Vec<String> {
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
    let mut lines: Vec<String> = unresolvable
        .iter()
        .map(|(plugin, count)| {
            if *plugin == crate::plugins::node_resources_fit::NAME {
                format!(
                    "{count} node(s): the pod requests more than the node's allocatable ({plugin}), which evicting pods cannot fix"
                )
            } else {
                format!("{count} node(s) fail {plugin}, which evicting pods cannot fix")
            }
        })
        .collect();
    let mut failed: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (node, s) in &p.failures {
        failed
            .entry(s.reasons.join("; "))
            .or_default()
            .push(node.as_str());
    }
    for (reason, nodes) in &failed {
        let example = match nodes.as_slice() {
            [first, _, _, ..] => format!("{first} and {} more", nodes.len() - 1),
            few => few.join(", "),
        };
        lines.push(format!(
            "{} node(s) where evicting every lower-priority pod is not enough: {reason} ({example})",
            nodes.len()
        ));
    }
    lines
}
