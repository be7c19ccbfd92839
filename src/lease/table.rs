//! The human views of leases: the listing, one lease in detail with client-go's rules spelled
//! out, node heartbeats, and timeline lines. Readable at 80 columns.

use super::duration::human;
use super::heartbeat::Heartbeats;
use super::timeline::Change;
use super::{Clock, ClockSource, LeaseReport, Listing, Status, Timings};
use crate::term::{Column, Fit, Style, Table, TableOptions, prose};
use k8s_openapi::jiff::{SignedDuration, Timestamp, Unit};
use std::fmt::Write;

/// A time in UTC as the API shows it, to the millisecond when it has a fraction (renewals are
/// recorded in microseconds, and a second's rounding would misplace them).
pub fn when(t: Timestamp) -> String {
    t.round(Unit::Millisecond)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| t.to_string())
}

fn status_cell(s: Status, style: Style) -> String {
    match s {
        Status::Healthy => style.good(s.as_str()),
        Status::RenewingLate | Status::Released => style.warn(s.as_str()),
        Status::Expired => style.bad(s.as_str()),
        Status::Unknown => style.dim(s.as_str()),
    }
}

/// The first line of every view: which clock "now" is, and the skew when it matters.
pub fn clock_line(what: &str, clock: &Clock, width: u16) -> String {
    let source = match clock.source {
        ClockSource::Server => "by the API server's clock",
        ClockSource::Snapshot => "when the snapshot was taken",
        ClockSource::Local => "by the local clock (the API server's was not available)",
    };
    let mut line = format!(
        "{}\n",
        prose(&format!("{what} at {} {source}", when(clock.now)), width, 2)
    );
    if let Some(skew) = clock.skew {
        let (dir, by) = if skew.is_negative() {
            ("ahead of", skew.abs())
        } else {
            ("behind", skew)
        };
        let note = format!(
            "note: the local clock is {} {dir} the API server's; every age here is by the server's clock",
            // The Date header has whole seconds: finer would be noise.
            human(by.round(Unit::Second).unwrap_or(by))
        );
        let _ = writeln!(line, "{}", prose(&note, width, 2));
    }
    line
}

fn ago(d: Option<SignedDuration>) -> String {
    match d {
        Some(d) if !d.is_negative() => format!("{} ago", human(d)),
        _ => age(d),
    }
}

/// An age for a RENEWED column (kubectl's AGE style: no "ago").
fn age(d: Option<SignedDuration>) -> String {
    match d {
        Some(d) if d.is_negative() => format!("in {}", human(d.abs())),
        Some(d) => human(d),
        None => "-".into(),
    }
}

fn takeover(r: &LeaseReport) -> String {
    match (r.status, r.takeover_in_seconds) {
        (Status::Released, _) => "now".into(),
        (Status::Expired, _) => "overdue".into(),
        (_, Some(d)) => format!("in {}", human(d)),
        _ => "-".into(),
    }
}

/// The holder by its hostname: the node for static control-plane pods, else the pod's name;
/// the full identity is in the wide view and the detail.
fn holder_cell(r: &LeaseReport) -> String {
    r.holder_identity
        .as_deref()
        .map_or("-".into(), |id| super::identity_host(id).to_string())
}

pub fn listing(l: &Listing, opts: TableOptions) -> String {
    let style = opts.style;
    let mut out = clock_line("Leader-election leases", &l.clock, opts.width);
    if l.leases.is_empty() {
        out.push_str("No leader-election leases found.\n");
        return out;
    }
    out.push('\n');
    // The holder gives way, cut (its whole identity is in -o wide and the detail view), and a
    // status of two words wraps: a lease's name broken over lines is harder to read than either.
    let mut columns = vec![
        Column::new("NAMESPACE", Fit::Keep),
        Column::new("NAME", Fit::Keep),
        Column::new("HOLDER", Fit::Cut { min: 6 }),
        Column::new("STATUS", Fit::Wrap { min: 8 }),
        Column::new("RENEWED", Fit::Keep),
        Column::new("TAKEOVER", Fit::Keep),
    ];
    if opts.wide {
        columns.extend(
            [
                "TRANSITIONS",
                "IDENTITY",
                "POD",
                "NODE",
                "ACQUIRED",
                "DURATION",
            ]
            .map(|h| Column::new(h, Fit::Keep)),
        );
    }
    let mut t = Table::new(columns);
    for r in &l.leases {
        let mut row = vec![
            r.namespace.clone(),
            r.name.clone(),
            holder_cell(r),
            status_cell(r.status, style),
            age(r.since_renewal_seconds),
            takeover(r),
        ];
        if opts.wide {
            row.extend([
                r.lease_transitions.map_or("-".into(), |n| n.to_string()),
                r.holder_identity.clone().unwrap_or_else(|| "-".into()),
                r.holder_pod.clone().unwrap_or_else(|| "-".into()),
                r.holder_node.clone().unwrap_or_else(|| "-".into()),
                r.acquire_time.map_or("-".into(), when),
                r.lease_duration_seconds
                    .map_or("-".into(), |s| format!("{s}s")),
            ]);
        }
        t.row(row);
    }
    out.push_str(&t.render(opts));
    let troubled: Vec<&LeaseReport> = l
        .leases
        .iter()
        .filter(|r| r.status != Status::Healthy)
        .collect();
    if !troubled.is_empty() {
        out.push('\n');
        for r in troubled {
            let line = format!(
                "{}/{}: {} — {}",
                r.namespace,
                r.name,
                status_cell(r.status, style),
                r.reason
            );
            let _ = writeln!(out, "{}", prose(&line, opts.width, 2));
        }
    }
    let elections: Vec<&LeaseReport> = l.leases.iter().filter(|r| r.election.is_some()).collect();
    if !elections.is_empty() {
        out.push('\n');
        for r in elections {
            let e = r.election.as_ref().expect("filtered");
            let line = format!(
                "{}/{}: coordinated election ({} candidate(s)): {}",
                r.namespace,
                r.name,
                e.candidates.len(),
                e.note
            );
            let _ = writeln!(out, "{}", prose(&line, opts.width, 2));
        }
    }
    out
}

/// Where a field's value starts in the detail view: after two spaces and the name's column.
const FIELD_VALUE_AT: usize = 19;

/// `text` wrapped to the terminal, every line indented by `indent` and the lines after the
/// first by `hang` more.
fn block(text: &str, opts: TableOptions, indent: usize, hang: usize) -> String {
    let body = prose(
        text,
        opts.width
            .saturating_sub(u16::try_from(indent).unwrap_or(0)),
        hang,
    );
    let pad = " ".repeat(indent);
    format!("{pad}{}", body.replace('\n', &format!("\n{pad}")))
}

fn field(out: &mut String, opts: TableOptions, name: &str, value: impl AsRef<str>) {
    let label = format!("{name}:");
    let pad = " ".repeat((FIELD_VALUE_AT - 2).saturating_sub(label.chars().count()));
    let line = format!("{}{pad}{}", opts.style.bold(&label), value.as_ref());
    let _ = writeln!(out, "{}", block(&line, opts, 2, FIELD_VALUE_AT - 2));
}

/// A paragraph of the detail view, indented by two (a bullet's lines after the first by two
/// more, under its text).
fn paragraph(out: &mut String, opts: TableOptions, text: &str) {
    let hang = if text.starts_with("- ") { 2 } else { 0 };
    let _ = writeln!(out, "{}", block(text, opts, 2, hang));
}

/// One lease in full: its record, what its timing means by client-go's rules, and its candidates.
pub fn detail(r: &LeaseReport, clock: &Clock, timings: &Timings, opts: TableOptions) -> String {
    let style = opts.style;
    let mut out = clock_line(
        &format!("Lease {}/{}", r.namespace, r.name),
        clock,
        opts.width,
    );
    out.push('\n');
    let holder = match (&r.holder_identity, &r.holder_pod, &r.holder_node) {
        (None, _, _) => "none".to_string(),
        (Some(id), Some(pod), Some(node)) => format!("{id} (pod {pod} on node {node})"),
        (Some(id), Some(pod), None) => format!("{id} (pod {pod})"),
        (Some(id), None, Some(node)) => format!("{id} (node {node}; no pod matched)"),
        (Some(id), None, None) => format!("{id} (no pod or node matched)"),
    };
    field(&mut out, opts, "Holder", holder);
    field(
        &mut out,
        opts,
        "Status",
        format!("{} — {}", status_cell(r.status, style), r.reason),
    );
    let at = |t: Option<Timestamp>| {
        t.map_or("-".into(), |t| {
            format!("{} ({})", when(t), ago(Some(clock.now.duration_since(t))))
        })
    };
    if r.status == Status::Released {
        // client-go stamps both times when it releases the lease.
        field(&mut out, opts, "Released", at(r.renew_time));
    } else {
        field(&mut out, opts, "Acquired", at(r.acquire_time));
        field(&mut out, opts, "Renewed", at(r.renew_time));
    }
    field(
        &mut out,
        opts,
        "Lease duration",
        r.lease_duration_seconds
            .map_or("-".into(), |s| format!("{s}s")),
    );
    field(
        &mut out,
        opts,
        "Transitions",
        r.lease_transitions.map_or("-".into(), |n| n.to_string()),
    );
    if let Some(s) = &r.strategy {
        field(&mut out, opts, "Strategy", s);
    }
    if let Some(p) = &r.preferred_holder {
        field(&mut out, opts, "Preferred holder", p);
    }

    out.push('\n');
    let _ = writeln!(out, "{}", style.bold("When could someone else take over?"));
    let retry = human(timings.retry_period);
    let deadline = human(timings.renew_deadline);
    let duration = r
        .lease_duration_seconds
        .map_or("leaseDuration".to_string(), |s| format!("{s}s"));
    let coordinated = r.strategy.is_some();
    let next = if coordinated {
        "the API server's leader-election controller elects a new holder among the candidates (it pings them and waits up to 5s)"
    } else {
        "the first standby to retry acquires it"
    };
    let line = match r.status {
        Status::Released => format!("Now: the lease has no holder, so {next}."),
        Status::Unknown if r.lease_duration_seconds.is_none() => format!(
            "Now: without leaseDurationSeconds client-go never considers the record valid, so {next}."
        ),
        Status::Unknown => format!(
            "Not before {}: without renewTime a standby treats the record as new and waits a full {duration} from when it first sees it.",
            r.takeover_at.map_or("-".into(), when)
        ),
        Status::Expired => format!(
            "Overdue: the lease expired {} ago, so {next}; that this has not happened is the problem.",
            r.expired_for_seconds.map_or("-".into(), human)
        ),
        Status::Healthy | Status::RenewingLate => format!(
            "Earliest {} ({}), if {} stops renewing now.",
            r.takeover_at.map_or("-".into(), when),
            r.takeover_in_seconds
                .map_or("-".into(), |d| format!("in {}", human(d))),
            r.holder_identity.as_deref().unwrap_or("the holder")
        ),
    };
    paragraph(&mut out, opts, &line);
    if let Some(t) = r.holder_gives_up_at {
        let rule =
            format!("renewTime + retryPeriod {retry} + renewDeadline {deadline}, by its own clock");
        let text = if t < clock.now {
            format!(
                "The holder has probably stopped leading already: unless it renewed since, it gave up at {} ({rule}).",
                when(t)
            )
        } else {
            format!(
                "The holder itself stops leading at {} if it cannot renew by then ({rule}).",
                when(t)
            )
        };
        paragraph(&mut out, opts, &text);
    }
    let (title, rules) = if coordinated {
        (
            format!(
                "Coordinated leader election (strategy {}):",
                r.strategy.as_deref().unwrap_or_default()
            ),
            vec![
                format!(
                    "- The holder renews every {retry} (retryPeriod); if it cannot renew within {deadline} (renewDeadline) it gives up leadership."
                ),
                "- Standbys never acquire a coordinated lease themselves. When it expires, or when the holder sees spec.preferredHolder name someone else and stops renewing, the API server's leader-election controller pings the LeaseCandidates, waits up to 5s for their answers, and writes the elected one as holder (leaseDurationSeconds 5).".to_string(),
            ],
        )
    } else {
        (
            "client-go's rules (renewDeadline and retryPeriod are the components' settings; kube-scheduler and kube-controller-manager default to 15s/10s/2s):".to_string(),
            vec![
                format!(
                    "- The leader renews every {retry} (retryPeriod); if it cannot renew within {deadline} (renewDeadline) it gives up leadership."
                ),
                format!(
                    "- A standby takes over only after it has seen the same record, unchanged, for {duration} (leaseDurationSeconds) by its own clock, then tries every {retry}, with jitter up to {}.",
                    human(timings.max_retry_wait())
                ),
                format!(
                    "- Standbys time the record from when they saw it, not from renewTime, so clock skew between machines does not move takeover; the earliest takeover is renewTime + {duration}, and it usually happens within a retry or two after."
                ),
            ],
        )
    };
    let _ = writeln!(out, "\n{}", style.bold(&prose(&title, opts.width, 0)));
    for rule in rules {
        paragraph(&mut out, opts, &rule);
    }

    if let Some(e) = &r.election {
        out.push('\n');
        let _ = writeln!(
            out,
            "{} (strategy {}):",
            style.bold("Candidates"),
            e.strategy.as_deref().unwrap_or("undecided")
        );
        // An identity is never broken over lines: cut, it is whole in -o wide and the note.
        let mut t = Table::new(vec![
            Column::new("CANDIDATE", Fit::Cut { min: 16 }),
            Column::new("EMULATION", Fit::Keep),
            Column::new("BINARY", Fit::Keep),
            Column::new("RENEWED", Fit::Keep),
            Column::new("PINGED", Fit::Keep),
            Column::new("STATE", Fit::Wrap { min: 9 }),
        ]);
        for c in &e.candidates {
            let state = match c.state {
                super::candidates::CandidateState::Preferred => style.good("preferred"),
                super::candidates::CandidateState::Eligible => "eligible".into(),
                super::candidates::CandidateState::Expired => {
                    style.dim("expired (not renewed for 30m)")
                }
                super::candidates::CandidateState::InvalidVersion => style.bad("invalid version"),
            };
            let c = &c.candidate;
            t.row(vec![
                c.name.clone(),
                c.emulation_version.clone().unwrap_or_else(|| "-".into()),
                c.binary_version.clone().unwrap_or_else(|| "-".into()),
                age(c.renew_time.map(|t| clock.now.duration_since(t))),
                age(c.ping_time.map(|t| clock.now.duration_since(t))),
                state,
            ]);
        }
        out.push_str(&t.render(opts));
        paragraph(&mut out, opts, &e.note);
    }
    out
}

pub fn heartbeats(h: &Heartbeats, opts: TableOptions) -> String {
    let style = opts.style;
    let mut out = clock_line("Node heartbeats (kube-node-lease)", &h.clock, opts.width);
    if h.nodes.is_empty() {
        out.push_str("No node heartbeat leases or nodes found.\n");
        return out;
    }
    let stale: Vec<_> = h
        .nodes
        .iter()
        .filter(|n| n.status != Status::Healthy)
        .collect();
    let summary = format!(
        "{} of {} kubelets are renewing; the node controller marks a node NotReady {} after its last heartbeat (node-monitor-grace-period).",
        h.renewing,
        h.nodes.len(),
        human(h.grace_period)
    );
    let _ = writeln!(out, "{}", prose(&summary, opts.width, 2));
    if stale.is_empty() {
        return out;
    }
    out.push('\n');
    let mut t = Table::new(
        ["NODE", "STATUS", "RENEWED", "NOT READY", "NODE READY"]
            .map(|h| Column::new(h, Fit::Keep))
            .into(),
    );
    for n in stale {
        let not_ready = match n.not_ready_in_seconds {
            None => "-".into(),
            Some(d) if d.is_negative() => style.bad(&format!("due {} ago", human(d.abs()))),
            Some(d) => style.warn(&format!("in {}", human(d))),
        };
        let ready = match (n.node_exists, n.node_ready) {
            (Some(false), _) => style.dim("no such node"),
            (_, Some(true)) => style.good("True"),
            (_, Some(false)) => style.bad("False/Unknown"),
            (_, None) => "-".into(),
        };
        let status = if n.renew_time.is_none() {
            style.dim("no lease")
        } else {
            status_cell(n.status, style)
        };
        t.row(vec![
            n.node.clone(),
            status,
            age(n.since_renewal_seconds),
            not_ready,
            ready,
        ]);
    }
    out.push_str(&t.render(opts));
    out
}

/// One timeline line.
pub fn change_line(c: &Change, style: Style) -> String {
    use super::timeline::Kind;
    let message = match c.event {
        Kind::Expired | Kind::NodeNotReady | Kind::WatchLost => style.bad(&c.message),
        Kind::MissedRenewal | Kind::Released | Kind::Deleted => style.warn(&c.message),
        Kind::HolderChanged | Kind::Acquired => style.bold(&c.message),
        _ => c.message.clone(),
    };
    let subject = if c.name.is_empty() {
        "(watch)".to_string()
    } else {
        format!("{}/{}", c.namespace, c.name)
    };
    format!(
        "{}  {subject}  {message}{}",
        when(c.time),
        if c.from_relist {
            style.dim(" (seen on relist)")
        } else {
            String::new()
        }
    )
}
