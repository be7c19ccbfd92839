//! `snapshot -f FILE`: saves what the tool reads, in the format `--snapshot` reads back, so an
//! incident can be analysed offline. Redacted unless `--no-redact`; Secrets are never read.

use super::source::Source;
use super::{EXIT_FITS, Failure, Outcome};
use crate::cli::{GlobalArgs, SnapshotArgs};
use crate::source::live::Plan;
use crate::source::write;
use anyhow::anyhow;

pub fn run(global: &GlobalArgs, args: &SnapshotArgs) -> Outcome {
    let source = Source::open(global)?;
    let Some(read) = source.read_live(&Plan {
        snapshot: true,
        ..Default::default()
    }) else {
        return Err(Failure::bad_input(anyhow!(
            "snapshot saves what it reads from a cluster; with --snapshot there is no cluster to read"
        )));
    };
    let mut dump = read?;
    for w in &dump.warnings {
        super::render::warn(w);
    }
    // A live read's warnings say what the snapshot lacks; they travel with it. (A snapshot read
    // from files already carries its own.)
    if matches!(source, Source::Live(_)) {
        dump.meta
            .incomplete
            .extend(std::mem::take(&mut dump.warnings));
    }
    if !args.no_redact {
        write::redact(&mut dump);
    }
    write::write_path(&dump, &args.file).map_err(|e| Failure::bad_input(anyhow!(e)))?;
    if args.file != "-" {
        let counts: Vec<String> = write::counts(&dump)
            .into_iter()
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
