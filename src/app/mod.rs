//! The commands: glue from flags to sources, the pipeline and renderers. Errors carry the exit
//! code a script can rely on.

mod compare;
mod complete;
mod explain;
mod lease;
mod plan;
mod profiles;
mod reads_like;
mod render;
mod resource;
mod snapshot;
mod source;
mod whatif;
mod workload;

use crate::cli::{Cli, Command};
use clap::FromArgMatches;
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
    // A load allocates millions of small objects; with transparent huge pages the kernel zeroes
    // 2 MiB at each first touch, which cost a 5,000-node load about a second of system time for
    // no gain (BENCHMARKS.md, issue 27).
    #[cfg(target_os = "linux")]
    // SAFETY: a flag of this process's memory map; no pointer is passed.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    match plugin {
        None => complete::complete_if_asked(),
        Some(p) if complete::answer_kubectl(p) => return 0,
        Some(_) => {}
    }
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(sub) = plugin {
        args.insert(1.min(args.len()), sub.into());
    }
    let args = crate::cli::node_selector_args(args);
    let cmd = crate::cli::command(plugin);
    // The command given: the plugin's, or the first word that names one.
    let command = plugin
        .map(str::to_string)
        .or_else(|| {
            args.iter()
                .skip(1)
                .filter_map(|a| a.to_str())
                .find_map(|a| cmd.find_subcommand(a).map(|s| s.get_name().to_string()))
        })
        .unwrap_or_default();
    let parsed = cmd
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_BAD_INPUT } else { 0 };
            let _ = kubectl_minded(e, &command, plugin).print();
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
                render::say("error", &f.to_string());
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

/// The completion script for a shell: it asks `kubectl-sched` for the candidates of each <TAB>.
pub fn completions(shell: clap_complete::Shell) -> String {
    complete::script(shell)
}

pub use complete::delegate_to_plugin;

/// A parse error as a kubectl user needs it: a kubectl flag the command does not take says
/// which command takes it (not clap's `use '-- -l'`, which would pass it as a pod's name), and
/// `-l` after a change flag reads as written (`--drain -l`), not as the hidden flag it became.
fn kubectl_minded(e: clap::Error, command: &str, plugin: Option<&str>) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let spelled = |s: &str| {
        crate::cli::NODE_SELECTOR_FLAGS
            .iter()
            .fold(s.to_string(), |s, f| {
                s.replace(&format!("--{f}-selector"), &format!("--{f} -l"))
            })
    };
    let arg = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg.clone(),
        _ => return e,
    };
    let mut cmd = crate::cli::command(plugin);
    cmd.build();
    let cmd = cmd.find_subcommand(command).unwrap_or(&cmd);
    // Context cannot be taken out of an error: a new one gets what is kept.
    let mut fresh = clap::Error::new(e.kind()).with_cmd(cmd);
    for (kind, value) in e.context() {
        let value = match (kind, value) {
            (ContextKind::InvalidArg, _) => ContextValue::String(spelled(&arg)),
            (ContextKind::SuggestedArg, _) | (ContextKind::Suggested, _)
                if e.kind() == ErrorKind::UnknownArgument =>
            {
                continue;
            }
            (_, v) => v.clone(),
        };
        fresh.insert(kind, value);
    }
    if e.kind() != ErrorKind::UnknownArgument {
        return fresh;
    }
    let tips: Vec<clap::builder::StyledStr> =
        match crate::cli::kubectl_flag_tip(command, &arg, plugin) {
            Some(tip) => vec![tip.into()],
            None => {
                if let Some(v) = e.get(ContextKind::SuggestedArg) {
                    fresh.insert(ContextKind::SuggestedArg, v.clone());
                }
                match e.get(ContextKind::Suggested) {
                    Some(ContextValue::StyledStrs(tips)) => tips
                        .iter()
                        .filter(|t| !t.to_string().contains("as a value, use"))
                        .cloned()
                        .collect(),
                    _ => Vec::new(),
                }
            }
        };
    if !tips.is_empty() {
        fresh.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    }
    fresh
}
