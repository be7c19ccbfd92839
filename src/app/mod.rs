//! The commands: glue from flags to sources, the pipeline and renderers. Errors carry the exit
//! code a script can rely on.

mod explain;
mod lease;
mod plan;
mod profiles;
mod render;
mod snapshot;
mod source;
mod whatif;
mod workload;

use crate::cli::{Cli, Command, EXIT_CODES};
use clap::{CommandFactory, Parser};
use std::fmt;

pub const EXIT_FITS: i32 = 0;
pub const EXIT_UNSCHEDULABLE: i32 = 1;
pub const EXIT_BAD_INPUT: i32 = 2;
pub const EXIT_CLUSTER: i32 = 3;

/// An error with its exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub error: anyhow::Error,
    /// What `-v` adds below the one-sentence message.
    pub detail: Option<String>,
}

impl Failure {
    pub fn bad_input(error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code: EXIT_BAD_INPUT,
            error: error.into(),
            detail: None,
        }
    }

    pub fn cluster(error: impl Into<anyhow::Error>) -> Failure {
        Failure {
            code: EXIT_CLUSTER,
            error: error.into(),
            detail: None,
        }
    }

    /// A live read that failed: its sentence, with the underlying errors kept for `-v`.
    pub fn live(e: crate::source::live::LiveError) -> Failure {
        Failure {
            code: EXIT_CLUSTER,
            error: anyhow::anyhow!(e.message),
            detail: e.detail,
        }
    }
}

impl fmt::Display for Failure {
    /// The error and its causes on one line, each said once: an error that already quotes its
    /// cause (`nope.yaml: No such file or directory`) is not followed by it again.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut said = self.error.to_string();
        for cause in self.error.chain().skip(1) {
            let cause = cause.to_string();
            if !said.ends_with(&cause) {
                said = format!("{said}: {cause}");
            }
        }
        f.write_str(&said)
    }
}

pub type Outcome = Result<i32, Failure>;

/// Entry point of every binary. `plugin` is the subcommand a `kubectl-sched_<plugin>` binary
/// stands for, so `kubectl sched-whatif -f pod.yaml` means `kubectl-sched whatif -f pod.yaml`.
pub fn main(plugin: Option<&str>) -> i32 {
    // Like other Unix filters, end quietly when the reader goes away (`| head`, a watch piped
    // to `grep -m1`) instead of panicking on the failed write.
    #[cfg(unix)]
    // SAFETY: restores the default disposition before any thread exists; no handler is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(sub) = plugin {
        args.insert(1.min(args.len()), sub.into());
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_BAD_INPUT } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let verbose = cli.global.verbose;
    match run(cli) {
        Ok(code) => code,
        Err(f) => {
            if verbose > 0 {
                eprintln!("error: {}", crate::term::escape(&format!("{:?}", f.error)));
                if let Some(detail) = &f.detail {
                    eprintln!("\ndetail:\n{}", crate::term::escape(detail));
                }
            } else {
                eprintln!("error: {}", crate::term::escape(&f.to_string()));
            }
            f.code
        }
    }
}

fn run(cli: Cli) -> Outcome {
    match &cli.command {
        Command::Whatif(args) => whatif::run(&cli.global, args),
        Command::Explain(args) => explain::run(&cli.global, args),
        Command::Snapshot(args) => snapshot::run(&cli.global, args),
        Command::Lease(args) => lease::run(&cli.global, args),
        Command::Completions { shell } => {
            print!("{}", completions(*shell));
            Ok(EXIT_FITS)
        }
    }
}

/// The completion script for a shell, generated from the flag definitions.
pub fn completions(shell: clap_complete::Shell) -> String {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut cmd, "kubectl-sched", &mut buf);
    String::from_utf8(buf).expect("completion scripts are UTF-8")
}

#[doc(hidden)]
pub fn exit_codes_help() -> &'static str {
    EXIT_CODES
}
