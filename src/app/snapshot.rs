//! `snapshot -f FILE`: saves what the tool reads, in the format `--snapshot` reads back, so an
//! incident can be analysed offline. Redacted unless `--no-redact`; Secrets are never read.
//! The pods are written as their list streams in: the cluster is never held whole.

use super::source::Source;
use super::{EXIT_FITS, Failure, Outcome};
use crate::cli::{GlobalArgs, SnapshotArgs};
use crate::source::live::{self, Plan, PodBatch, Wire};
use crate::source::{events, protobuf, write};
use anyhow::anyhow;
use k8s_openapi::api::core::v1::Pod;
use rayon::prelude::*;

pub fn run(global: &GlobalArgs, args: &SnapshotArgs) -> Outcome {
    let source = Source::open(global)?;
    let Source::Live(l) = &source else {
        return Err(Failure::bad_input(anyhow!(
            "snapshot saves what it reads from a cluster; with --snapshot there is no cluster to read"
        )));
    };
    let written = |e: String| Failure::bad_input(anyhow!(e));
    let mut out = write::SnapshotFile::create(&args.file).map_err(written)?;
    // The pending pods, whose FailedScheduling events the snapshot keeps: (namespace, name, uid).
    let mut pending: Vec<(String, String, String)> = Vec::new();
    let mut streamed = 0;
    let read = source.read_live(
        &Plan {
            snapshot: true,
            ..Default::default()
        },
        &mut |batch| {
            let (items, wire) = match batch {
                PodBatch::Restart => {
                    pending.clear();
                    streamed = 0;
                    return out.rewind().map_err(written);
                }
                PodBatch::Items(items, wire) => (items, wire),
            };
            let mut pods: Vec<Pod> = items
                .into_par_iter()
                .map(|mut item| match wire {
                    Wire::Json => {
                        // Redaction drops them anyway: spare typing them.
                        if !args.no_redact {
                            live::drop_managed_fields(&mut item);
                        }
                        serde_json::from_slice(&item)
                    }
                    Wire::Protobuf => protobuf::decode_pod(&item, args.no_redact)
                        .map_err(serde::de::Error::custom),
                })
                .collect::<Result<_, _>>()
                .map_err(|e| Failure::live(live::pod_decode_error(l.target(), e)))?;
            pending.extend(
                events::pending_of(&pods)
                    .map(|(ns, name, uid)| (ns.to_string(), name.to_string(), uid.to_string())),
            );
            if !args.no_redact {
                pods.par_iter_mut().for_each(write::redact_pod);
            }
            streamed += pods.len();
            out.pods(&pods).map_err(written)
        },
    );
    let mut dump = read.expect("a live source")?;
    for w in &dump.warnings {
        super::render::warn(w);
    }
    // A live read's warnings say what the snapshot lacks; they travel with it.
    dump.meta
        .incomplete
        .extend(std::mem::take(&mut dump.warnings));
    let unlisted = events::pending_of(&dump.pods);
    let pending = pending
        .iter()
        .map(|(ns, name, uid)| (ns.as_str(), name.as_str(), uid.as_str()))
        .chain(unlisted);
    dump.events = events::latest_of_pending(std::mem::take(&mut dump.events), pending);
    if !args.no_redact {
        write::redact(&mut dump);
    }
    out.finish(&dump).map_err(written)?;
    if args.file != "-" {
        let counts: Vec<String> = write::counts(&dump)
            .into_iter()
            .map(|(kind, n)| (kind, n + if kind == "pods" { streamed } else { 0 }))
            .filter(|&(_, n)| n > 0)
            .map(|(kind, n)| format!("{n} {kind}"))
            .collect();
        let redacted = if dump.meta.redacted {
            " (redacted)"
        } else {
            ""
        };
        super::render::print_text(
            global,
            &format!("wrote {}{redacted}: {}\n", args.file, counts.join(", ")),
        );
    }
    Ok(EXIT_FITS)
}
