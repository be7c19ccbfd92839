//! The human view of a comparison: the verdict in a line (identical answers say only that),
//! then the decisions that differ side by side, the per-node verdicts and scores that differ,
//! and the switches that explain them. Readable at 80 columns.

use super::pod::PodComparison;
use super::switches::Cause;
use super::{Brief, Change, PendingComparison, PlacementComparison, PlanComparison};
use crate::explain::list_names;
use crate::explain::placement::PlacementEntry;
use crate::release::{Release, ReleaseChoice};
use crate::term::{self, Column, Fit, Table, TableOptions};
use serde_json::Value;
use std::fmt::Write;

/// A line of prose, wrapped with a hanging indent.
fn say(out: &mut String, text: &str, opts: TableOptions) {
    let _ = writeln!(out, "{}", term::prose(text, opts.width, 2));
}

/// A section's heading, after a blank line.
fn heading(out: &mut String, text: &str, opts: TableOptions) {
    let _ = writeln!(out, "\n{}", opts.style.bold(text));
}

/// The two releases in a line, under the header of the one modelled.
fn releases(base: &ReleaseChoice, other: &ReleaseChoice, opts: TableOptions) -> String {
    format!(
        "{}\n{}\n",
        base.header(opts.style, opts.width),
        opts.style.dim(&term::prose(
            &format!(
                "compared with kube-scheduler {} (--compare-to)",
                other.release
            ),
            opts.width,
            2
        ))
    )
}

fn two_columns(first: &str, base: Release, other: Release) -> Table {
    Table::new(vec![
        Column::new(first, Fit::Keep),
        Column::new(&base.to_string(), Fit::Wrap { min: 16 }),
        Column::new(&other.to_string(), Fit::Wrap { min: 16 }),
    ])
}

/// A value of the answer for a cell: names joined, `-` for none.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) if s.is_empty() => "-".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "-".into(),
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join(", "),
        Value::Object(m) if m.contains_key("plugin") && m.contains_key("reasons") => format!(
            "{}: {}",
            cell(&m["plugin"]),
            cell(&m["reasons"]).replace(", ", "; ")
        ),
        Value::Object(m) if m.contains_key("nominatedNodes") => {
            let mut s = format!("nominate {}", cell(&m["nominatedNodes"]));
            if let Some(v) = m.get("victims").filter(|v| !v.is_null()) {
                let _ = write!(s, ", evict {}", cell(v));
            }
            if let Some(msg) = m
                .get("message")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
            {
                let _ = write!(s, " ({msg})");
            }
            s
        }
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}: {}", cell(v)))
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

/// What was decided, in a few words.
fn decision(b: &Brief) -> String {
    if b.fits {
        return match b.selected.as_slice() {
            [one] => format!("→ {one}"),
            many => format!("→ one of {}", list_names(many)),
        };
    }
    match &b.nominated_node {
        Some(n) => format!("pending; preempts {} on {n}", list_names(&b.victims)),
        None => format!("pending: {}", b.message),
    }
}

/// Why, a line each: a switch, its plugin and the release it is on in; the plugins no switch
/// explains.
fn why_lines(
    because: &[Cause],
    unattributed: &[&str],
    releases: (Release, Release),
    opts: TableOptions,
) -> Vec<String> {
    let mut lines: Vec<String> = because
        .iter()
        .map(|c| {
            let on = if c.other { releases.1 } else { releases.0 };
            let gate = c
                .gate
                .map(|g| format!(", feature gate {g}"))
                .unwrap_or_default();
            format!(
                "{}: {}: in {on} only ({}{gate})",
                c.plugin, c.what, c.switch
            )
        })
        .collect();
    if !unattributed.is_empty() {
        lines.push(format!(
            "{}: no switch of theirs differs; they see what the differences above changed",
            unattributed.join(", ")
        ));
    }
    lines
        .iter()
        .map(|l| format!("  {}\n", term::prose(l, opts.width.saturating_sub(2), 4)))
        .collect()
}

/// `Why:` and its lines, when there are any.
fn why(
    out: &mut String,
    because: &[Cause],
    unattributed: &[&str],
    releases: (Release, Release),
    opts: TableOptions,
) {
    let lines = why_lines(because, unattributed, releases, opts);
    if !lines.is_empty() {
        heading(out, "Why:", opts);
        out.extend(lines);
    }
}

/// The sections of one pod's comparison after its verdict line.
fn pod_sections(c: &PodComparison, releases: (Release, Release), opts: TableOptions) -> String {
    let mut out = String::new();
    let d = &c.differences;
    let mut decisions = two_columns("DECISION", releases.0, releases.1);
    for (key, label) in [
        ("selected", "chosen"),
        ("feasible", "feasible"),
        ("message", "message"),
        ("preemption", "preemption"),
        ("error", "error"),
    ] {
        if let Some(v) = d.get(key) {
            decisions.row(vec![label.into(), cell(&v["base"]), cell(&v["other"])]);
        }
    }
    if super::pod::DECISIONS.iter().any(|k| d.contains_key(*k)) {
        out.push('\n');
        out.push_str(&decisions.render(opts));
    }
    if let Some(Value::Object(nodes)) = d.get("filter") {
        heading(
            &mut out,
            "Filters that differ (the first failing plugin):",
            opts,
        );
        let mut t = two_columns("NODE", releases.0, releases.1);
        for (node, v) in nodes {
            let verdict = |v: &Value| {
                if v.is_null() {
                    "passes".to_string()
                } else {
                    cell(v)
                }
            };
            t.row(vec![
                node.clone(),
                verdict(&v["base"]),
                verdict(&v["other"]),
            ]);
        }
        out.push_str(&t.render(opts));
    }
    if let Some(Value::Object(nodes)) = d.get("scores") {
        heading(&mut out, "Scores that differ (normalised, weighted):", opts);
        let mut t = Table::new(vec![
            Column::new("NODE", Fit::Keep),
            Column::new("PLUGIN", Fit::Keep),
            Column::new(&releases.0.to_string(), Fit::Keep).right(),
            Column::new(&releases.1.to_string(), Fit::Keep).right(),
        ]);
        for (node, plugins) in nodes {
            for (i, (plugin, v)) in plugins.as_object().into_iter().flatten().enumerate() {
                let name = if i == 0 { node.clone() } else { String::new() };
                t.row(vec![
                    name,
                    plugin.clone(),
                    cell(&v["base"]),
                    cell(&v["other"]),
                ]);
            }
        }
        out.push_str(&t.render(opts));
    }
    why(&mut out, &c.because, &c.unattributed, releases, opts);
    out
}

/// `whatif -f POD --compare-to` / `explain pod/NAME --compare-to`.
pub fn pod(
    c: &PodComparison,
    (base, other): (&ReleaseChoice, &ReleaseChoice),
    (a, b): (&Brief, &Brief),
    opts: TableOptions,
) -> String {
    let style = opts.style;
    let mut out = releases(base, other, opts);
    let rs = (base.release, other.release);
    let verdict = if c.identical() {
        style.good(&format!("the same answer under both: {}", decision(a)))
    } else if c.same {
        style.good(&format!(
            "the same decisions under both ({}); scores differ",
            decision(a)
        ))
    } else if decision(a) == decision(b) {
        let what: Vec<&str> = [
            ("feasible", "feasible nodes"),
            ("selected", "tie"),
            ("message", "FailedScheduling message"),
            ("preemption", "preemption"),
            ("error", "error"),
        ]
        .iter()
        .filter(|(k, _)| c.differences.contains_key(*k))
        .map(|(_, w)| *w)
        .collect();
        let verb = if what.len() == 1 { "differs" } else { "differ" };
        style.warn(&format!(
            "{} under both, but the {} {verb}",
            decision(a),
            what.join(", ")
        ))
    } else {
        style.warn(&format!(
            "the decisions differ: {} under {}, {} under {}",
            decision(a),
            rs.0,
            decision(b),
            rs.1
        ))
    };
    say(
        &mut out,
        &format!("{} {}: {verdict}", style.bold("Pod"), c.pod),
        opts,
    );
    out.push_str(&pod_sections(c, rs, opts));
    out
}

fn placement(p: Option<&PlacementEntry>) -> String {
    match p {
        None => "not placed".into(),
        Some(p) if p.tied_count > 1 => format!("{} (1 of {} tied)", p.node, p.tied_count),
        Some(p) => p.node.clone(),
    }
}

/// `whatif --replicas N --compare-to`.
pub fn placements(c: &PlacementComparison, opts: TableOptions) -> String {
    let style = opts.style;
    let (base, other) = (&c.base.scheduler, &c.other.scheduler);
    let rs = (base.release, other.release);
    let mut out = releases(base, other, opts);
    let head = format!("{} {}", style.bold("Placing"), c.base.pod);
    if c.same {
        say(
            &mut out,
            &format!(
                "{head}: {}",
                style.good(&format!(
                    "the same placements under both: {} replica(s) placed",
                    c.base.placed
                ))
            ),
            opts,
        );
        return out;
    }
    say(
        &mut out,
        &format!(
            "{head}: {}",
            style.warn(&format!(
                "{} replica(s) placed differently; {} placed under {}, {} under {}",
                c.moves.len(),
                c.base.placed,
                rs.0,
                c.other.placed,
                rs.1
            ))
        ),
        opts,
    );
    out.push('\n');
    let mut t = two_columns("REPLICA", rs.0, rs.1);
    for m in &c.moves {
        t.row(vec![
            m.replica.to_string(),
            placement(m.base.as_ref()),
            placement(m.other.as_ref()),
        ]);
    }
    if c.base.stopped != c.other.stopped {
        let stop = |s: &Option<String>| s.clone().unwrap_or_else(|| "-".into());
        t.row(vec![
            "stopped".into(),
            stop(&c.base.stopped),
            stop(&c.other.stopped),
        ]);
    }
    out.push_str(&t.render(opts));
    if let (Some(first), Some(i)) = (&c.first_move, c.first_difference()) {
        heading(
            &mut out,
            &format!(
                "Replica {}, on the cluster as the {i} before it left it (the same under both):",
                i + 1
            ),
            opts,
        );
        out.push_str(&pod_sections(first, rs, opts));
    }
    out
}

/// `explain --all-pending --compare-to` / `explain deploy/NAME --compare-to`.
pub fn pending(c: &PendingComparison, opts: TableOptions) -> String {
    let style = opts.style;
    let rs = (c.base_release.release, c.other_release.release);
    let mut out = releases(&c.base_release, &c.other_release, opts);
    if c.same {
        say(
            &mut out,
            &format!(
                "{}: {}",
                c.scope,
                style.good(&format!(
                    "the same decisions for all {} pending pod(s)",
                    c.pods.len()
                ))
            ),
            opts,
        );
        return out;
    }
    let counts: Vec<String> = [
        (Change::StartsFitting, "start fitting"),
        (Change::StopsFitting, "stop fitting"),
        (Change::Moves, "go elsewhere"),
        (Change::MessageChanges, "stay pending with another message"),
        (Change::Same, "the same"),
    ]
    .iter()
    .filter(|(k, _)| c.count(*k) > 0)
    .map(|(k, what)| format!("{} {what}", c.count(*k)))
    .collect();
    say(
        &mut out,
        &format!(
            "{}: {} of {} pending pod(s) decided differently: {}",
            c.scope,
            style.warn(&(c.pods.len() - c.count(Change::Same)).to_string()),
            c.pods.len(),
            counts.join(", ")
        ),
        opts,
    );
    out.push('\n');
    let mut t = two_columns("POD", rs.0, rs.1);
    for p in c.pods.iter().filter(|p| p.change != Change::Same) {
        t.row(vec![
            p.comparison.pod.clone(),
            decision(&p.base),
            decision(&p.other),
        ]);
    }
    out.push_str(&t.render(opts));
    let mut said = false;
    for p in c.pods.iter().filter(|p| p.change != Change::Same) {
        let cmp = &p.comparison;
        let lines = why_lines(&cmp.because, &cmp.unattributed, rs, opts);
        if lines.is_empty() {
            continue;
        }
        if !said {
            heading(&mut out, "Why:", opts);
            said = true;
        }
        let _ = writeln!(out, "{}:", cmp.pod);
        out.extend(lines);
    }
    out
}

fn planned(v: Option<&Value>) -> String {
    let Some(v) = v else {
        return "not in this plan".into();
    };
    match v["node"].as_str() {
        Some(node) => {
            let mut s = format!("→ {node}");
            if v["tied"].as_u64().is_some_and(|t| t > 1) {
                let _ = write!(s, " (1 of {} tied)", v["tied"]);
            }
            if let Some(p) = v["preempts"].as_array().filter(|p| !p.is_empty()) {
                let _ = write!(s, ", preempting {}", cell(&Value::Array(p.clone())));
            }
            s
        }
        None => format!(
            "{}: {}",
            cell(&v["outcome"]).to_lowercase(),
            cell(&v["message"])
        ),
    }
}

/// A change plan with `--compare-to`.
pub fn plan(c: &PlanComparison, opts: TableOptions) -> String {
    let style = opts.style;
    let (base, other) = (&c.base.scheduler, &c.other.scheduler);
    let rs = (base.release, other.release);
    let mut out = releases(base, other, opts);
    let verdict = |safe: bool| if safe { "safe" } else { "NOT SAFE" };
    if c.same {
        say(
            &mut out,
            &format!(
                "{} {}",
                style.bold("Change plan:"),
                style.good(&format!(
                    "the same outcome under both ({}): {}",
                    verdict(c.base.verdict.safe),
                    c.base.verdict.summary
                ))
            ),
            opts,
        );
        return out;
    }
    say(
        &mut out,
        &format!(
            "{} {}",
            style.bold("Change plan:"),
            style.warn(&format!(
                "{} under {}, {} under {}; {} pod(s) fare differently",
                verdict(c.base.verdict.safe),
                rs.0,
                verdict(c.other.verdict.safe),
                rs.1,
                c.pods.len()
            ))
        ),
        opts,
    );
    out.push('\n');
    let mut t = two_columns("POD", rs.0, rs.1);
    for m in &c.pods {
        t.row(vec![
            m.pod.clone(),
            planned(m.base.as_ref()),
            planned(m.other.as_ref()),
        ]);
    }
    out.push_str(&t.render(opts));
    if !c.candidates.is_empty() {
        heading(
            &mut out,
            "The releases differ in (a plan's differences come from these):",
            opts,
        );
        out.extend(why_lines(&c.candidates, &[], rs, opts));
    }
    out
}
