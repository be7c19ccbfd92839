//! The human view of a plan: the verdict first, then the changes in order, each drain, every pod
//! the plan handled (where it came from, where it goes or why not), what each `-f` DaemonSet
//! does per node, and the nodes and zones it touched. Readable at 80 columns; `-o wide` adds
//! priorities and ties and lists every pod that stays and every DaemonSet node.

use super::report::{DaemonSetReport, DrainReport, OriginKind, OutcomeKind, PlanReport, PodReport};
use crate::term::{Column, Fit, Style, Table, TableOptions, width as visible_width};
use std::fmt::Write;

/// Wrapping columns give way before the first, which names a pod or node: cut in the middle it
/// could not be copied.
fn table(header: &[&str]) -> Table {
    Table::new(
        header
            .iter()
            .enumerate()
            .map(|(i, h)| match (i, *h) {
                (0, _) => Column::new(h, Fit::Keep),
                (_, "BEFORE" | "AFTER" | "PODS" | "IN" | "OUT" | "CPU" | "MEM" | "PRIORITY") => {
                    Column::new(h, Fit::Keep).right()
                }
                _ => Column::new(h, Fit::Wrap { min: 12 }),
            })
            .collect(),
    )
}

/// Appends `text` as lines of at most `width` columns, cut at spaces; lines after the first are
/// indented by `hang`. A word longer than a line stays whole.
fn push_wrapped(out: &mut String, width: u16, hang: usize, text: &str) {
    let width = usize::from(width).max(hang + 20);
    let mut line = String::new();
    let (mut used, mut words) = (0, 0);
    for word in text.split(' ') {
        let w = visible_width(word);
        if words > 0 && used + 1 + w > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(hang);
            (used, words) = (hang, 0);
        }
        if words > 0 {
            line.push(' ');
            used += 1;
        }
        line.push_str(word);
        used += w;
        words += 1;
    }
    out.push_str(line.trim_end());
    out.push('\n');
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

/// Names, at most `shown` of them, then how many more.
fn some_names(names: &[&str], shown: usize) -> String {
    match names.len().checked_sub(shown) {
        Some(more) if more > 0 => format!("{} and {more} more", names[..shown].join(", ")),
        _ => names.join(", "),
    }
}

/// The longest reason an order-dependent outcome gives in the default view.
const SHORT_REASON: usize = 80;

/// Where it goes, or why not; and, when other orders end elsewhere, where and why: in the
/// default view the first reason and the first tied node only, as a drain of a large cluster
/// lists many pods whose reasons name many more (`-o wide` has them all).
fn outcome(p: &PodReport, style: Style, wide: bool) -> String {
    let shown = if wide { 3 } else { 1 };
    let message = p.message.as_deref().unwrap_or("");
    let mut out = match p.outcome {
        OutcomeKind::Scheduled => {
            let node = p.node.as_deref().unwrap_or("");
            let mut detail = vec![match p.score {
                Some(score) => format!("score {score}"),
                None => "the only feasible node".to_string(),
            }];
            let others: Vec<&str> = p
                .tied_nodes
                .iter()
                .map(String::as_str)
                .filter(|n| *n != node)
                .collect();
            if !others.is_empty() {
                detail.push(format!("tied with {}", some_names(&others, shown)));
            }
            let mut out = format!(
                "{} ({})",
                style.good(&format!("→ {node}")),
                detail.join(", ")
            );
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
        OutcomeKind::Stays => format!(
            "{} {}",
            style.dim("stays on"),
            p.node.as_deref().unwrap_or("")
        ),
    };
    if p.order_dependent {
        let mut elsewhere: Vec<&str> = p
            .possible_nodes
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|n| Some(*n) != p.node.as_deref() && !p.tied_nodes.iter().any(|t| t == n))
            .collect();
        elsewhere.dedup();
        let mut alternatives = Vec::new();
        if !elsewhere.is_empty() {
            alternatives.push(format!("end on {}", some_names(&elsewhere, shown + 1)));
        }
        if p.possible_nodes.contains(&None) && p.outcome != OutcomeKind::Pending {
            alternatives.push("stay pending".to_string());
        }
        let mut clauses = Vec::new();
        if !alternatives.is_empty() {
            clauses.push(format!("may also {}", alternatives.join(" or ")));
        }
        if wide {
            clauses.extend(p.why.iter().cloned());
        } else if let Some(first) = p.why.first() {
            // On a large cluster one reason names pods and nodes of 40 characters each: the
            // default view keeps a reason a couple of lines long and points to the rest.
            let more = p.why.len() - 1;
            if visible_width(first) <= SHORT_REASON {
                clauses.push(first.clone());
                if more > 0 {
                    clauses.push(format!("{more} more reason(s): -o wide"));
                }
            } else {
                clauses.push(format!("{} reason(s): -o wide", more + 1));
            }
        }
        let line = format!("{} {}", style.warn("order-dependent:"), clauses.join("; "));
        let _ = write!(out, "\n{line}");
    } else if let Some(waited) = p.why.iter().find(|w| w.starts_with("waited for")) {
        let _ = write!(out, "\n{waited}");
    }
    out
}

fn drain_lines(d: &DrainReport, opts: TableOptions, out: &mut String) {
    let (style, width) = (opts.style, opts.width);
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
    let header = format!(
        "{} {}: {state}, {} pod(s) evicted, {} stay",
        style.bold("Drain"),
        d.node,
        d.evicted.len(),
        d.stays.len()
    );
    push_wrapped(out, width, 2, &header);
    if let Some(why) = &d.refused {
        push_wrapped(
            out,
            width,
            4,
            &format!("  {} {why}", style.bad("kubectl refuses:")),
        );
    }
    if let Some(on) = &d.waiting_on {
        let line = format!(
            "  {} kubectl is still waiting on {on}'s evictions",
            style.bad("never started:")
        );
        push_wrapped(out, width, 4, &line);
    }
    if d.timed_out {
        let line = format!(
            "  {} kubectl gives up at --drain-timeout, reports the error and goes on with the next node",
            style.bad("timed out:")
        );
        push_wrapped(out, width, 4, &line);
    }
    if opts.wide {
        for s in &d.stays {
            push_wrapped(out, width, 4, &format!("  stays: {} ({})", s.pod, s.reason));
        }
    } else {
        for (reason, n) in stays {
            push_wrapped(out, width, 4, &format!("  {n} stay: {reason}"));
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
            " (kubectl retries until --drain-timeout)"
        } else {
            ""
        };
        let line = format!(
            "  {} {}: {}{retried}{pdb}",
            style.bad("cannot evict"),
            b.pod,
            b.message
        );
        push_wrapped(out, width, 4, &line);
    }
}

fn daemon_set_lines(ds: &DaemonSetReport, opts: TableOptions, out: &mut String) {
    let header = format!(
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
    push_wrapped(out, opts.width, 2, &header);
    if !ds.replaced.is_empty() {
        let line = format!("  replaces {}", ds.replaced.join(", "));
        push_wrapped(out, opts.width, 4, &line);
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
    let mut t = table(&["NODE", "DAEMON POD", "WHY"]);
    for n in shown {
        let outcome = match n.outcome.as_str() {
            "Scheduled" => opts.style.good("scheduled"),
            "Skipped" => opts.style.dim("skipped"),
            "Kept" => "kept".to_string(),
            other => opts.style.bad(&other.to_lowercase()),
        };
        t.row(vec![
            n.node.clone(),
            outcome,
            n.reason.clone().unwrap_or_default(),
        ]);
    }
    let _ = write!(out, "{}", t.render(opts));
}

pub fn render(r: &PlanReport, opts: TableOptions) -> String {
    let style = opts.style;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} on {} node(s)\n{}\n",
        style.bold("Change plan"),
        r.num_nodes,
        r.scheduler.header(style, opts.width)
    );
    let verdict = if r.verdict.safe {
        style.good(&r.verdict.summary)
    } else {
        style.bad(&r.verdict.summary)
    };
    push_wrapped(&mut out, opts.width, 2, &style.bold(&verdict));
    out.push('\n');
    if !r.edits.is_empty() {
        let _ = writeln!(out, "{}", style.bold("Changes, in order:"));
        for (i, e) in r.edits.iter().enumerate() {
            push_wrapped(
                &mut out,
                opts.width,
                5,
                &format!("  {}. {}", i + 1, e.summary),
            );
        }
        out.push('\n');
    }
    for d in &r.drains {
        drain_lines(d, opts, &mut out);
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
        // Pods that all come from the one node drained: its heading above says where from.
        let one_source = listed.windows(2).all(|w| from(w[0]) == from(w[1]))
            && listed.iter().all(|p| p.origin == OriginKind::Drained);
        let with_from = opts.wide || !one_source;
        let mut head = vec!["POD", "FROM", "OUTCOME"];
        if !with_from {
            head.remove(1);
        }
        if opts.wide {
            head.insert(1, "PRIORITY");
        }
        let mut t = table(&head);
        for p in listed {
            let mut row = vec![p.pod.clone(), outcome(p, style, opts.wide)];
            if with_from {
                row.insert(1, from(p));
            }
            if opts.wide {
                row.insert(1, p.priority.to_string());
            }
            t.row(row);
        }
        let _ = writeln!(out, "{}", t.render(opts));
    }
    if !daemon_pods.is_empty() {
        let line = format!(
            "{} DaemonSet pod(s) scheduled on their nodes (-o wide lists them)",
            daemon_pods.len()
        );
        push_wrapped(&mut out, opts.width, 2, &line);
        out.push('\n');
    }
    for ds in &r.daemon_sets {
        daemon_set_lines(ds, opts, &mut out);
        out.push('\n');
    }
    if !r.per_node.is_empty() {
        // Node names run to 40 characters and more: the default view shows the pods a node holds
        // before and after in one column, and leaves zones (summed on their own line below) to
        // -o wide, so that a row fits 80 columns.
        let wide = opts.wide;
        let with_zone = wide && r.per_node.iter().any(|n| n.zone.is_some());
        let head: Vec<&str> = [
            ("NODE", true),
            ("ZONE", with_zone),
            ("BEFORE", wide),
            ("AFTER", wide),
            ("PODS", !wide),
            ("IN", true),
            ("OUT", true),
            ("CPU", true),
            ("MEM", true),
            ("", true),
        ]
        .into_iter()
        .filter_map(|(h, shown)| shown.then_some(h))
        .collect();
        let mut t = table(&head);
        let count = |c: Option<usize>| c.map_or("-".to_string(), |c| c.to_string());
        let percent = |p: Option<i64>| p.map_or("-".to_string(), |p| format!("{p}%"));
        for n in &r.per_node {
            let state = match (n.pods_before, n.pods_after) {
                (None, _) => "added",
                (_, None) => "deleted",
                _ if n.unschedulable => "cordoned",
                _ => "",
            };
            let mut row = vec![n.node.clone()];
            if with_zone {
                row.push(n.zone.clone().unwrap_or_default());
            }
            if wide {
                row.extend([count(n.pods_before), count(n.pods_after)]);
            } else {
                row.push(format!(
                    "{} → {}",
                    count(n.pods_before),
                    count(n.pods_after)
                ));
            }
            row.extend([
                n.added.to_string(),
                n.removed.to_string(),
                percent(n.cpu_percent),
                percent(n.memory_percent),
                state.to_string(),
            ]);
            t.row(row);
        }
        let _ = write!(out, "{}", t.render(opts));
    }
    if !r.per_zone.is_empty() {
        let zones: Vec<String> = r
            .per_zone
            .iter()
            .map(|z| format!("{} +{} -{}", z.zone, z.added, z.removed))
            .collect();
        out.push('\n');
        let line = format!("By zone (pods in, out): {}", zones.join(", "));
        push_wrapped(&mut out, opts.width, 2, &line);
    }
    let ties = r.pods.iter().filter(|p| p.tied > 1).count();
    if ties > 0 {
        let how = match r.seed {
            Some(seed) => format!("this plan picked at random with --seed {seed}"),
            None => "this plan takes the first by name (--seed N picks at random)".to_string(),
        };
        let line = format!(
            "{} {ties} placement(s) had tied nodes; kube-scheduler picks among them at random, {how}",
            style.dim("Note:")
        );
        out.push('\n');
        push_wrapped(&mut out, opts.width, 2, &line);
    }
    if !r.drains.is_empty() {
        let e = &r.exploration;
        let varying = r.verdict.order_dependent;
        let explored = format!(
            "{} end state(s) explored{}",
            e.end_states,
            if e.capped {
                "; the search stopped early, other orders may end elsewhere"
            } else {
                ""
            }
        );
        let line = if varying == 0 {
            format!(
                "{} every outcome above is the same whatever order the evictions land in and kube-scheduler takes the replacements ({explored})",
                style.dim("Order:")
            )
        } else {
            format!(
                "{} kubectl evicts a node's pods at once and kube-scheduler takes the replacements as they arrive: {varying} outcome(s) above depend on that order, the other {} do not ({explored})",
                style.dim("Order:"),
                r.pods.len() - varying
            )
        };
        out.push('\n');
        push_wrapped(&mut out, opts.width, 2, &line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wrap_at_spaces_with_a_hanging_indent_and_colours_take_no_room() {
        let mut out = String::new();
        push_wrapped(&mut out, 24, 4, "  one two three four five six seven");
        assert_eq!(out, "  one two three four\n    five six seven\n");
        // A word longer than the line stays whole; no line ends in a space.
        let mut out = String::new();
        push_wrapped(
            &mut out,
            24,
            2,
            "a very-long-word-that-cannot-be-cut-at-all b",
        );
        assert_eq!(out, "a\n  very-long-word-that-cannot-be-cut-at-all\n  b\n");
        let red = Style { color: true }.bad("refused");
        assert_eq!(visible_width(&red), "refused".len());
        let mut out = String::new();
        push_wrapped(&mut out, 24, 2, &format!("{red} 1234567890 abcdefgh"));
        assert_eq!(out.lines().count(), 2, "{out:?}");
    }
}
