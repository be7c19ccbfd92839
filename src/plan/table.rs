//! The human view of a plan: the verdict first, then the changes in order, each drain, every pod
//! the plan handled (where it came from, where it goes or why not), what each `-f` DaemonSet
//! does per node, and the nodes and zones it touched. Readable at 80 columns; `-o wide` adds
//! priorities and ties and lists every pod that stays and every DaemonSet node.

use super::report::{DaemonSetReport, DrainReport, OriginKind, OutcomeKind, PlanReport, PodReport};
use crate::explain::table::{Style, TableOptions};
use comfy_table::{Cell, CellAlignment, ColumnConstraint, ContentArrangement, Table, presets};
use std::fmt::Write;

fn table(opts: TableOptions, header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(opts.width);
    t.set_header(header.iter().copied());
    // The first column names a pod or node: cut in the middle it could not be copied.
    if let Some(c) = t.column_mut(0) {
        c.set_constraint(ColumnConstraint::ContentWidth);
    }
    t
}

fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

/// Where a pod comes from, in a few words.
fn from(p: &PodReport) -> String {
    let node = p.from.as_deref().unwrap_or("");
    match p.origin {
        OriginKind::Drained => node.to_string(),
        OriginKind::Displaced => format!("{node} (change {})", p.edit.map_or(0, |e| e + 1)),
        OriginKind::Preempted => format!(
            "{node} (preempted by {})",
            p.preempted_by.as_deref().unwrap_or("")
        ),
        OriginKind::Workload => format!("-f document {}", p.document.map_or(0, |d| d + 1)),
        OriginKind::DaemonSet => format!("DaemonSet {}", p.daemon_set.as_deref().unwrap_or("")),
        OriginKind::Pending => "pending".to_string(),
    }
}

/// Where it goes, or why not.
fn outcome(p: &PodReport, style: Style) -> String {
    let message = p.message.as_deref().unwrap_or("");
    match p.outcome {
        OutcomeKind::Scheduled => {
            let node = p.node.as_deref().unwrap_or("");
            let mut detail = vec![match p.score {
                Some(score) => format!("score {score}"),
                None => "the only feasible node".to_string(),
            }];
            if p.tied > 1 {
                detail.push(format!("tied with {}", p.tied - 1));
            }
            let mut out = format!("{} ({})", style.good(&format!("→ {node}")), detail.join(", "));
            if !p.preempts.is_empty() {
                let _ = write!(
                    out,
                    "\n{} {}",
                    style.warn("preempting"),
                    p.preempts.join(", ")
                );
            }
            out
        }
        OutcomeKind::Pending => format!("{} {message}", style.bad("pending:")),
        OutcomeKind::Lost => format!("{} {message}", style.bad("lost:")),
        OutcomeKind::Blocked => format!("{} {message}", style.bad("not evicted:")),
        OutcomeKind::Removed => format!("{} {message}", style.dim("gone:")),
        OutcomeKind::NotPredicted => format!("{} {message}", style.warn("not predicted:")),
    }
}

fn drain_lines(d: &DrainReport, wide: bool, style: Style, out: &mut String) {
    let mut stays: Vec<(&str, usize)> = Vec::new();
    for s in &d.stays {
        match stays.iter_mut().find(|(r, _)| *r == s.reason) {
            Some((_, n)) => *n += 1,
            None => stays.push((&s.reason, 1)),
        }
    }
    let state = if d.completed {
        style.good("drained")
    } else {
        style.bad("not drained")
    };
    let _ = writeln!(
        out,
        "{} {}: {state}, {} pod(s) evicted, {} stay",
        style.bold("Drain"),
        d.node,
        d.evicted.len(),
        d.stays.len()
    );
    if let Some(why) = &d.refused {
        let _ = writeln!(out, "  {} {why}", style.bad("kubectl refuses:"));
    }
    if let Some(on) = &d.waiting_on {
        let _ = writeln!(
            out,
            "  {} kubectl is still waiting on {on}'s evictions",
            style.bad("never started:")
        );
    }
    if wide {
        for s in &d.stays {
            let _ = writeln!(out, "  stays: {} ({})", s.pod, s.reason);
        }
    } else {
        for (reason, n) in stays {
            let _ = writeln!(out, "  stays: {n} pod(s): {reason}");
        }
    }
    for b in &d.blocked {
        let pdb = match &b.pdb {
            Some(pdb) => format!(
                "; PodDisruptionBudget {pdb} protects {}",
                if b.protects.is_empty() {
                    "no running pod".to_string()
                } else {
                    b.protects.join(", ")
                }
            ),
            None => String::new(),
        };
        let retried = if b.retried {
            " (kubectl retries until --timeout)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {} {}: {}{retried}{pdb}",
            style.bad("cannot evict"),
            b.pod,
            b.message
        );
    }
}

fn daemon_set_lines(ds: &DaemonSetReport, opts: TableOptions, out: &mut String) {
    let _ = writeln!(
        out,
        "{} {}: {} node(s) get a pod, {} skipped, {} pending{}",
        opts.style.bold("DaemonSet"),
        ds.daemon_set,
        ds.scheduled,
        ds.skipped,
        ds.pending,
        if ds.kept > 0 {
            format!(", {} kept (OnDelete)", ds.kept)
        } else {
            String::new()
        }
    );
    if !ds.replaced.is_empty() {
        let _ = writeln!(out, "  replaces {}", ds.replaced.join(", "));
    }
    // Nodes that get their pod need no explanation unless asked for.
    let shown: Vec<_> = ds
        .nodes
        .iter()
        .filter(|n| opts.wide || n.outcome != "Scheduled")
        .collect();
    if shown.is_empty() {
        return;
    }
    let mut t = table(opts, &["NODE", "DAEMON POD", "WHY"]);
    for n in shown {
        let outcome = match n.outcome.as_str() {
            "Scheduled" => opts.style.good("scheduled"),
            "Skipped" => opts.style.dim("skipped"),
            "Kept" => "kept".to_string(),
            other => opts.style.bad(&other.to_lowercase()),
        };
        t.add_row(vec![
            Cell::new(&n.node),
            Cell::new(outcome),
            Cell::new(n.reason.as_deref().unwrap_or("")),
        ]);
    }
    let _ = writeln!(out, "{}", t.trim_fmt());
}

pub fn render(r: &PlanReport, opts: TableOptions) -> String {
    let style = opts.style;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} on {} node(s)\n{}\n",
        style.bold("Change plan"),
        r.num_nodes,
        style.dim(&r.scheduler.describe())
    );
    let verdict = if r.verdict.safe {
        style.good(&r.verdict.summary)
    } else {
        style.bad(&r.verdict.summary)
    };
    let _ = writeln!(out, "{}\n", style.bold(&verdict));
    if !r.edits.is_empty() {
        let _ = writeln!(out, "{}", style.bold("Changes, in order:"));
        for (i, e) in r.edits.iter().enumerate() {
            let _ = writeln!(out, "  {}. {}", i + 1, e.summary);
        }
        out.push('\n');
    }
    for d in &r.drains {
        drain_lines(d, opts.wide, style, &mut out);
    }
    if !r.drains.is_empty() {
        out.push('\n');
    }
    // A DaemonSet pod that lands on its node says nothing the DaemonSet's lines do not.
    let (listed, daemon_pods): (Vec<&PodReport>, Vec<&PodReport>) = r.pods.iter().partition(|p| {
        opts.wide
            || p.origin != OriginKind::DaemonSet
            || p.outcome != OutcomeKind::Scheduled
            || !p.preempts.is_empty()
    });
    if !listed.is_empty() {
        let mut head = vec!["POD", "FROM", "OUTCOME"];
        if opts.wide {
            head.insert(1, "PRIORITY");
        }
        let mut t = table(opts, &head);
        for p in listed {
            let mut row = vec![Cell::new(&p.pod), Cell::new(from(p)), Cell::new(outcome(p, style))];
            if opts.wide {
                row.insert(1, right(p.priority.to_string()));
            }
            t.add_row(row);
        }
        let _ = writeln!(out, "{}\n", t.trim_fmt());
    }
    if !daemon_pods.is_empty() {
        let _ = writeln!(
            out,
            "{} DaemonSet pod(s) scheduled on their nodes (-o wide lists them)\n",
            daemon_pods.len()
        );
    }
    for ds in &r.daemon_sets {
        daemon_set_lines(ds, opts, &mut out);
        out.push('\n');
    }
    if !r.per_node.is_empty() {
        let mut t = table(
            opts,
            &["NODE", "ZONE", "BEFORE", "AFTER", "IN", "OUT", "CPU", "MEMORY", ""],
        );
        let count = |c: Option<usize>| c.map_or("-".to_string(), |c| c.to_string());
        let percent = |p: Option<i64>| p.map_or("-".to_string(), |p| format!("{p}%"));
        for n in &r.per_node {
            let state = match (n.pods_before, n.pods_after) {
                (None, _) => "added",
                (_, None) => "deleted",
                _ if n.unschedulable => "cordoned",
                _ => "",
            };
            t.add_row(vec![
                Cell::new(&n.node),
                Cell::new(n.zone.as_deref().unwrap_or("")),
                right(count(n.pods_before)),
                right(count(n.pods_after)),
                right(n.added.to_string()),
                right(n.removed.to_string()),
                right(percent(n.cpu_percent)),
                right(percent(n.memory_percent)),
                Cell::new(state),
            ]);
        }
        let _ = writeln!(out, "{}", t.trim_fmt());
    }
    if !r.per_zone.is_empty() {
        let zones: Vec<String> = r
            .per_zone
            .iter()
            .map(|z| format!("{} +{} -{}", z.zone, z.added, z.removed))
            .collect();
        let _ = writeln!(out, "\nBy zone (pods in, out): {}", zones.join(", "));
    }
    let ties = r.pods.iter().filter(|p| p.tied > 1).count();
    if ties > 0 {
        let how = match r.seed {
            Some(seed) => format!("this plan picked at random with --seed {seed}"),
            None => "this plan takes the first by name (--seed N picks at random)".to_string(),
        };
        let _ = writeln!(
            out,
            "\n{} {ties} placement(s) had tied nodes; kube-scheduler picks among them at random, {how}",
            style.dim("Note:")
        );
    }
    out
}
