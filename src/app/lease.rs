//! `kubectl sched-lease`: leader-election leases and node heartbeats, from the API server (with
//! its clock) or a snapshot (with the time it was taken), once or as a `--watch` timeline.

use super::render::{print_names, print_structured, print_text, style, table_options, warn};
use super::source::Source;
use super::{EXIT_BAD_INPUT, EXIT_FITS, Failure, Outcome};
use crate::cli::{GlobalArgs, LeaseArgs, Output};
use crate::lease::heartbeat::heartbeats;
use crate::lease::timeline::{Change, Kind, Tracker};
use crate::lease::{
    self, Clock, ClockSource, Inventory, NODE_LEASE_NAMESPACE, NodeRef, PodRef, Selection, Timings,
    table,
};
use crate::model::parse::LoadOptions;
use crate::source::live::{self, LeasePlan, LeaseWatcher, Update};
use crate::source::{Dump, file};
use anyhow::anyhow;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use std::io::{IsTerminal, Write};

/// `NAME`, `lease/NAME`, `leases/NAME`, `lease.coordination.k8s.io/NAME` or `NAMESPACE/NAME`:
/// the namespace it names, if any, and the name.
pub fn parse_lease_ref(s: &str) -> Result<(Option<String>, String), String> {
    let parts: Vec<&str> = s.split('/').collect();
    let is_kind = |k: &str| {
        matches!(
            k.to_ascii_lowercase().as_str(),
            "lease" | "leases" | "lease.coordination.k8s.io" | "leases.coordination.k8s.io"
        )
    };
    match parts.as_slice() {
        [name] if !name.is_empty() => Ok((None, name.to_string())),
        [kind, name] if is_kind(kind) && !name.is_empty() => Ok((None, name.to_string())),
        [ns, name] if !ns.is_empty() && !name.is_empty() => {
            Ok((Some(ns.to_string()), name.to_string()))
        }
        _ => Err(format!(
            "invalid lease {s:?}: use NAME, lease/NAME or NAMESPACE/NAME"
        )),
    }
}

/// Leader-election and node timings are seconds to minutes; a day is already absurd.
const LONGEST_TIMING: SignedDuration = SignedDuration::from_hours(24);

fn duration_flag(flag: &str, value: &str) -> Result<SignedDuration, Failure> {
    live::parse_duration(value)
        .ok()
        .flatten()
        .and_then(|d| SignedDuration::try_from(d).ok())
        .filter(|d| *d <= LONGEST_TIMING)
        .ok_or_else(|| {
            Failure::bad_input(anyhow!(
                "invalid --{flag} {value:?}: use a positive duration up to 24h, such as 10s or 1m"
            ))
        })
}

/// What to list: `--nodes` is the heartbeat namespace; a name is looked up everywhere unless
/// `-n` names a namespace.
fn selection(global: &GlobalArgs, args: &LeaseArgs) -> Result<Selection, Failure> {
    let named = args
        .lease
        .as_deref()
        .map(parse_lease_ref)
        .transpose()
        .map_err(|e| Failure::bad_input(anyhow!(e)))?;
    let explicit_ns = if args.all_namespaces {
        None
    } else {
        global.namespace.clone()
    };
    let (namespace, name) = match named {
        Some((ns, name)) => (ns.or(explicit_ns), Some(name)),
        None => (explicit_ns, None),
    };
    let namespace = if args.nodes {
        if namespace
            .as_deref()
            .is_some_and(|ns| ns != NODE_LEASE_NAMESPACE)
        {
            return Err(Failure::bad_input(anyhow!(
                "--nodes reads the heartbeat leases of namespace {NODE_LEASE_NAMESPACE}: drop -n"
            )));
        }
        Some(NODE_LEASE_NAMESPACE.to_string())
    } else {
        namespace
    };
    Ok(Selection { namespace, name })
}

/// The server-side narrowing of the same selection, so a big cluster's thousands of node
/// heartbeats are not listed (or watched) just to be dropped.
fn field_selector(selection: &Selection) -> Option<String> {
    match (&selection.name, &selection.namespace) {
        (Some(name), _) => Some(format!("metadata.name={name}")),
        (None, None) => Some(format!("metadata.namespace!={NODE_LEASE_NAMESPACE}")),
        (None, Some(_)) => None,
    }
}

fn inventory_of_dump(dump: &Dump) -> Inventory {
    Inventory {
        pods: dump
            .pods
            .iter()
            .map(|p| {
                let spec = p.spec.as_ref();
                PodRef {
                    namespace: p.metadata.namespace.clone().unwrap_or_default(),
                    name: p.metadata.name.clone().unwrap_or_default(),
                    node: spec.and_then(|s| s.node_name.clone()),
                    host_network: spec.and_then(|s| s.host_network).unwrap_or(false),
                }
            })
            .collect(),
        nodes: dump
            .nodes
            .iter()
            .map(|n| NodeRef {
                name: n.metadata.name.clone().unwrap_or_default(),
                ready: n
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                    .map(|c| c.status == "True"),
            })
            .collect(),
    }
}

/// Leases with what is needed to show them.
struct Read {
    leases: Vec<Lease>,
    candidates: Vec<serde_json::Value>,
    inventory: Inventory,
    clock: Clock,
    /// Where a watch resumes (live only).
    resource_version: Option<String>,
}

fn read_file(path: &str, limits: file::Limits) -> Result<Read, Failure> {
    let cluster =
        file::load_with(path, limits, LoadOptions::default()).map_err(Failure::bad_input)?;
    for w in &cluster.warnings {
        warn(w);
    }
    let clock = match cluster.meta.taken_at {
        Some(t) => Clock {
            now: t,
            source: ClockSource::Snapshot,
            skew: None,
        },
        None => {
            warn(&format!(
                "{path} does not record when it was taken (kubectl-sched snapshot records it): ages are measured against the local clock"
            ));
            Clock::local()
        }
    };
    Ok(Read {
        inventory: Inventory {
            pods: cluster
                .pods
                .iter()
                .map(|p| PodRef {
                    namespace: p.namespace.as_str().to_string(),
                    name: p.name.as_str().to_string(),
                    node: p.node_name.map(|n| n.as_str().to_string()),
                    host_network: p.host_network,
                })
                .collect(),
            nodes: cluster
                .nodes
                .iter()
                .map(|n| NodeRef {
                    name: n.name.as_str().to_string(),
                    ready: n.ready,
                })
                .collect(),
        },
        leases: cluster.leases.clone(),
        candidates: cluster.lease_candidates.clone(),
        clock,
        resource_version: None,
    })
}

fn read_live(live: &super::source::Live, plan: &LeasePlan) -> Result<Read, Failure> {
    let read = live
        .block_on(live::read_leases(live.target(), plan))
        .map_err(Failure::live)?;
    for w in &read.dump.warnings {
        warn(w);
    }
    let clock = match read.server_date {
        // The clock was read while the leases were listed: "now" is when the answer is shown.
        Some((date, local)) => {
            Clock::from_server_date(date, local).advanced_to_local(Timestamp::now())
        }
        None => {
            warn(
                "the API server's clock could not be read (GET /version failed or had no Date header): ages are measured against the local clock",
            );
            Clock::local()
        }
    };
    Ok(Read {
        inventory: inventory_of_dump(&read.dump),
        leases: read.dump.leases,
        candidates: read.dump.lease_candidates,
        clock,
        resource_version: Some(read.resource_version),
    })
}

pub fn run(global: &GlobalArgs, args: &LeaseArgs) -> Outcome {
    let timings = Timings {
        renew_deadline: duration_flag("renew-deadline", &args.renew_deadline)?,
        retry_period: duration_flag("retry-period", &args.retry_period)?,
    };
    let grace = duration_flag("node-grace-period", &args.node_grace_period)?;
    if global.output == Output::Name && (args.nodes || args.watch) {
        return Err(Failure::bad_input(anyhow!(
            "-o name lists the leases shown; --nodes and --watch take -o table, -o wide, -o json or -o yaml"
        )));
    }
    let selection = selection(global, args)?;
    let source = Source::open(global)?;
    let read = match &source {
        Source::File { path, limits } => {
            if args.watch {
                return Err(Failure::bad_input(anyhow!(
                    "--watch needs a live cluster: a snapshot does not change (drop --snapshot)"
                )));
            }
            read_file(path, *limits)?
        }
        Source::Live(live) => read_live(
            live,
            &LeasePlan {
                namespace: selection.namespace.clone(),
                field_selector: field_selector(&selection),
                nodes: args.nodes,
                progress: std::io::stderr().is_terminal(),
            },
        )?,
    };
    let opts = table_options(global);
    let structured = matches!(global.output, Output::Json | Output::Yaml);

    if let Some(name) = &selection.name
        && !read.leases.iter().any(|l| selection.matches(l))
    {
        let place = selection
            .namespace
            .as_deref()
            .map_or("in any namespace".to_string(), |ns| {
                format!("in namespace {ns:?}")
            });
        return Err(Failure {
            code: EXIT_BAD_INPUT,
            error: anyhow!("leases {name:?} not found {place}"),
            detail: None,
        });
    }

    if !(args.watch && structured) {
        if args.nodes {
            let h = heartbeats(
                &read.leases,
                &read.inventory,
                selection.name.as_deref(),
                read.clock,
                grace,
            );
            if structured {
                print_structured(&h, global.output)?;
            } else {
                print_text(global, &table::heartbeats(&h, opts));
            }
        } else {
            let listing = lease::listing(
                &read.leases,
                &read.candidates,
                &read.inventory,
                &selection,
                read.clock,
                timings,
            );
            if structured {
                print_structured(&listing, global.output)?;
            } else if global.output == Output::Name {
                print_names(
                    "lease.coordination.k8s.io",
                    listing.leases.iter().map(|l| l.name.as_str()),
                );
            } else if selection.name.is_some() {
                let details: Vec<String> = listing
                    .leases
                    .iter()
                    .map(|r| table::detail(r, &listing.clock, &timings, opts))
                    .collect();
                print_text(global, &details.join("\n"));
            } else {
                print_text(global, &table::listing(&listing, opts));
            }
        }
    }
    if !args.watch {
        return Ok(EXIT_FITS);
    }
    let Source::Live(live) = &source else {
        unreachable!("--watch with a snapshot was refused above")
    };
    watch(live, global, args, selection, read, grace)
}

/// Writes one timeline line; `false` once stdout is gone (`--watch | head`), which ends the watch.
fn print_change(c: &Change, output: Output, style: crate::term::Style) -> bool {
    let line = match output {
        Output::Json => serde_json::to_string(c).map(|l| format!("{l}\n")).ok(),
        Output::Yaml => serde_saphyr::to_string(c).map(|y| format!("---\n{y}")).ok(),
        _ => Some(format!(
            "{}\n",
            crate::term::finish(&table::change_line(c, style), style.color)
        )),
    };
    let mut out = std::io::stdout().lock();
    line.is_some_and(|l| {
        out.write_all(l.as_bytes())
            .and_then(|()| out.flush())
            .is_ok()
    })
}

/// Streams the timeline until interrupted, or until `--request-timeout` has passed (as
/// `kubectl get -w` does).
fn watch(
    live: &super::source::Live,
    global: &GlobalArgs,
    args: &LeaseArgs,
    selection: Selection,
    read: Read,
    grace: SignedDuration,
) -> Outcome {
    let style = style(global);
    let structured = matches!(global.output, Output::Json | Output::Yaml);
    let clock = read.clock;
    let server_now = move || clock.advanced_to_local(Timestamp::now()).now;
    let mut tracker = Tracker::new(selection.clone(), &read.leases, server_now(), grace);
    if !structured {
        print_text(
            global,
            &format!(
                "\nWatching {} lease(s); times are the API server's (Ctrl-C to stop):\n",
                tracker.len()
            ),
        );
    }
    let until = live.target().request_timeout;
    live.block_on(async {
        // The client's connection pool lives on this runtime: made inside it.
        let watcher = LeaseWatcher::new(
            live.target(),
            selection.namespace.as_deref(),
            field_selector(&selection),
            read.resource_version.unwrap_or_default(),
        )
        .map_err(Failure::live)?;
        let lister = watcher.lister();
        // The watcher lives inside the stream, so a timer firing while it is reconnecting or
        // relisting does not abort that work: the stream resumes it on the next poll.
        let updates = futures::stream::unfold(watcher, |mut w| async move {
            let update = w.next().await;
            Some((update, w))
        });
        tokio::pin!(updates);
        let stop = async {
            match until {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(stop);
        let interrupted = tokio::signal::ctrl_c();
        tokio::pin!(interrupted);
        let mut lost = false;
        loop {
            let wait = tracker.next_deadline().map(|d| {
                let left = d.duration_since(server_now());
                // Just past the threshold, so the check finds it crossed.
                std::time::Duration::try_from(left).unwrap_or_default()
                    + std::time::Duration::from_millis(1)
            });
            let silence = async {
                match wait {
                    Some(w) => tokio::time::sleep(w).await,
                    None => std::future::pending().await,
                }
            };
            let mut changes = Vec::new();
            tokio::select! {
                Some(update) = updates.next() => match update {
                    Ok(update) => {
                        if std::mem::take(&mut lost) {
                            changes.push(Change::watch(server_now(), Kind::WatchResumed, "watch resumed".into()));
                        }
                        changes.extend(match update {
                            Update::Applied(l) => tracker.observe(l, server_now(), false),
                            Update::Deleted(l) => tracker.deleted(&l, server_now(), false),
                            Update::Relisted(ls) => tracker.resync(ls, server_now()),
                        });
                    }
                    Err(e) if !lost => {
                        lost = true;
                        changes.push(Change::watch(server_now(), Kind::WatchLost, format!("watch lost, retrying: {}", e.message)));
                    }
                    Err(_) => {}
                },
                _ = silence => {
                    // A quiet watch is not proof of a quiet lease: confirm with a list first.
                    if tracker.silence_due(server_now()) && !lost
                        && let Ok((leases, _)) = lister.list().await
                    {
                        changes.extend(tracker.resync(leases, server_now()));
                    }
                    changes.extend(tracker.tick(server_now()));
                },
                _ = &mut interrupted => return Ok(EXIT_FITS),
                _ = &mut stop => return Ok(EXIT_FITS),
            }
            for c in changes.iter().filter(|c| args.renewals || !c.routine) {
                if !print_change(c, global.output, style) {
                    return Ok(EXIT_FITS);
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_references() {
        assert_eq!(
            parse_lease_ref("kube-scheduler"),
            Ok((None, "kube-scheduler".into()))
        );
        assert_eq!(parse_lease_ref("lease/x"), Ok((None, "x".into())));
        assert_eq!(
            parse_lease_ref("leases.coordination.k8s.io/x"),
            Ok((None, "x".into()))
        );
        assert_eq!(
            parse_lease_ref("kube-system/x"),
            Ok((Some("kube-system".into()), "x".into()))
        );
        assert!(parse_lease_ref("a/b/c").is_err());
        assert!(parse_lease_ref("lease/").is_err());
    }

    #[test]
    fn the_server_is_asked_only_for_what_is_shown() {
        let sel = |ns: Option<&str>, name: Option<&str>| Selection {
            namespace: ns.map(Into::into),
            name: name.map(Into::into),
        };
        assert_eq!(
            field_selector(&sel(None, None)).as_deref(),
            Some("metadata.namespace!=kube-node-lease")
        );
        assert_eq!(
            field_selector(&sel(None, Some("kube-scheduler"))).as_deref(),
            Some("metadata.name=kube-scheduler")
        );
        assert_eq!(field_selector(&sel(Some("kube-system"), None)), None);
    }
}
