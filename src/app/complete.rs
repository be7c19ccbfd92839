//! Shell completion: node, namespace, pod, workload and lease names from the live cluster or from
//! the `--snapshot` given on the line, releases for `--scheduler-version` and `--compare-to`, the values of `-o` and
//! `--color`, kubeconfig contexts, and file names only for the flags that take files. Two front
//! ends share it: the scripts of `completions/` (clap's dynamic completion: the shell runs
//! `KUBECTL_SCHED_COMPLETE=<shell> kubectl-sched -- WORDS…`), and kubectl's plugin completion,
//! which runs `kubectl_complete-sched_<command> WORDS…` and reads cobra's `__complete` format.

use super::resource;
use crate::model::cluster::Cluster;
use crate::release::Release;
use crate::source::{file, live};
use clap::ValueHint;
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate, ValueCompleter};
use std::ffi::{OsStr, OsString};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// The variable that makes `kubectl-sched` complete instead of run (set by the scripts).
pub const ENV_VAR: &str = "KUBECTL_SCHED_COMPLETE";

/// How long completion waits for the API server unless `--request-timeout` says otherwise: a
/// shell waiting on <TAB> is worse than no names.
const LIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// cobra's ShellCompDirective bits, as kubectl reads them.
const NO_SPACE: u8 = 2;
const NO_FILE_COMP: u8 = 4;

/// What the words on the line say about where names come from.
#[derive(Default)]
struct Line {
    snapshot: Option<String>,
    kubeconfig: Option<String>,
    context: Option<String>,
    cluster: Option<String>,
    user: Option<String>,
    namespace: Option<String>,
    request_timeout: Option<String>,
    /// `lease --nodes`: its argument is a node.
    nodes: bool,
}

impl Line {
    /// Reads `--flag VALUE`, `--flag=VALUE` and, for `-n`, `-n VALUE`, `-nVALUE`, `-n=VALUE`; the
    /// last word (the one being completed) is left out.
    fn of(words: &[OsString]) -> Line {
        let words: Vec<&str> = words.iter().filter_map(|w| w.to_str()).collect();
        let done = &words[..words.len().saturating_sub(1)];
        let mut line = Line::default();
        let mut i = 0;
        while i < done.len() {
            let word = done[i];
            let (flag, inline) = match word.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ if word.starts_with("-n") && word.len() > 2 && !word.starts_with("--") => {
                    ("-n", Some(word[2..].trim_start_matches('=').to_string()))
                }
                _ => (word, None),
            };
            line.nodes |= flag == "--nodes";
            let slot = match flag {
                "--snapshot" => &mut line.snapshot,
                "--kubeconfig" => &mut line.kubeconfig,
                "--context" => &mut line.context,
                "--cluster" => &mut line.cluster,
                "--user" => &mut line.user,
                "-n" | "--namespace" => &mut line.namespace,
                "--request-timeout" => &mut line.request_timeout,
                _ => {
                    i += 1;
                    continue;
                }
            };
            match inline {
                Some(v) => *slot = Some(v),
                None => {
                    *slot = done.get(i + 1).map(|v| v.to_string());
                    i += 1;
                }
            }
            i += 1;
        }
        line
    }

    fn connect_options(&self) -> live::ConnectOptions {
        let timeout = self
            .request_timeout
            .as_deref()
            .and_then(|t| live::parse_duration(t).ok().flatten())
            .unwrap_or(LIVE_TIMEOUT);
        live::ConnectOptions {
            kubeconfig: self.kubeconfig.clone().map(Into::into),
            context: self.context.clone(),
            cluster: self.cluster.clone(),
            user: self.user.clone(),
            namespace: self.namespace.clone(),
            request_timeout: Some(timeout),
            consistent_read: false,
        }
    }
}

/// A live cluster to ask, once connected.
struct Live {
    runtime: tokio::runtime::Runtime,
    target: live::Target,
}

/// Where names come from, loaded on first use: the snapshot on the line, else the cluster the
/// kubeconfig names. Any failure means no names, never an error on the terminal.
struct Names {
    line: Line,
    snapshot: OnceLock<Option<Cluster>>,
    live: OnceLock<Option<Live>>,
}

impl Names {
    fn new(line: Line) -> Names {
        Names {
            line,
            snapshot: OnceLock::new(),
            live: OnceLock::new(),
        }
    }

    fn snapshot(&self) -> Option<&Cluster> {
        let path = self.line.snapshot.as_deref().filter(|p| *p != "-")?;
        self.snapshot
            .get_or_init(|| file::load_with(path, file::Limits::default(), Default::default()).ok())
            .as_ref()
    }

    fn live(&self) -> Option<&Live> {
        self.live
            .get_or_init(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .ok()?;
                let target = runtime
                    .block_on(live::resolve(
                        &self.line.connect_options(),
                        &live::Env::from_process(),
                    ))
                    .ok()?;
                Some(Live { runtime, target })
            })
            .as_ref()
    }

    /// `(namespace, name)` of a resource's objects (by plural name), in one namespace or all.
    fn objects(&self, plural: &str, namespace: Option<&str>) -> Vec<(String, String)> {
        if self.line.snapshot.is_some() {
            let Some(c) = self.snapshot() else {
                return Vec::new();
            };
            let in_ns = |ns: &str| namespace.is_none_or(|n| n == ns);
            let mut found: Vec<(String, String)> = match plural {
                "nodes" => c
                    .nodes
                    .iter()
                    .map(|n| (String::new(), n.name.to_string()))
                    .collect(),
                "namespaces" => {
                    let mut all: Vec<String> = c.namespaces.keys().map(|n| n.to_string()).collect();
                    all.extend(c.pods.iter().map(|p| p.namespace.to_string()));
                    all.into_iter().map(|n| (String::new(), n)).collect()
                }
                "pods" => c
                    .pods
                    .iter()
                    .filter(|p| in_ns(p.namespace.as_str()))
                    .map(|p| (p.namespace.to_string(), p.name.to_string()))
                    .collect(),
                "leases" => c
                    .leases
                    .iter()
                    .map(|l| {
                        (
                            l.metadata.namespace.clone().unwrap_or_default(),
                            l.metadata.name.clone().unwrap_or_default(),
                        )
                    })
                    .filter(|(ns, _)| in_ns(ns))
                    .collect(),
                plural => {
                    let Some(kind) = resource::TYPES.iter().find(|t| t.plural() == plural) else {
                        return Vec::new();
                    };
                    c.workloads
                        .controllers
                        .keys()
                        .filter(|k| k.kind.as_str() == kind.kind && in_ns(k.namespace.as_str()))
                        .map(|k| (k.namespace.to_string(), k.name.to_string()))
                        .collect()
                }
            };
            found.sort();
            found.dedup();
            return found;
        }
        let Some(l) = self.live() else {
            return Vec::new();
        };
        l.runtime
            .block_on(live::names(&l.target, plural, namespace, None))
            .unwrap_or_default()
    }

    fn names(&self, plural: &str, namespace: Option<&str>) -> Vec<String> {
        let mut names: Vec<String> = self
            .objects(plural, namespace)
            .into_iter()
            .map(|(_, n)| n)
            .collect();
        names.dedup();
        names
    }

    /// The namespace of a name given without one: `-n`, else the context's, else "default".
    fn namespace(&self) -> String {
        if let Some(ns) = &self.line.namespace {
            return ns.clone();
        }
        match self.line.snapshot {
            Some(_) => "default".to_string(),
            None => self
                .live()
                .map_or_else(|| "default".to_string(), |l| l.target.namespace.clone()),
        }
    }
}

/// What a flag's or argument's values are.
#[derive(Clone, Copy)]
enum Values {
    Nodes,
    /// `NODE=…`: the node, then what follows the `=`.
    NodesThen,
    Namespaces,
    /// `NAMESPACE/NAME` of every pod.
    PodKeys,
    /// `explain`'s argument: pods, `TYPE/NAME` of workloads, `NAMESPACE/NAME`.
    Resources,
    Leases,
    Releases,
    Contexts,
    Clusters,
    Users,
    /// `--label NODE KEY=VALUE`: a node first.
    NodeThenLabel,
}

struct Completer {
    names: Arc<Names>,
    values: Values,
}

fn matching(
    current: &str,
    candidates: impl IntoIterator<Item = String>,
) -> Vec<CompletionCandidate> {
    candidates
        .into_iter()
        .filter(|c| c.starts_with(current))
        .map(CompletionCandidate::new)
        .collect()
}

impl Completer {
    fn candidates(&self, index: usize, current: &str) -> Vec<String> {
        let names = &self.names;
        match self.values {
            Values::Nodes => names.names("nodes", None),
            Values::NodeThenLabel if index == 0 => names.names("nodes", None),
            Values::NodeThenLabel => Vec::new(),
            Values::NodesThen => names
                .names("nodes", None)
                .into_iter()
                .map(|n| format!("{n}="))
                .collect(),
            Values::Namespaces => names.names("namespaces", None),
            Values::PodKeys => names
                .objects("pods", None)
                .into_iter()
                .map(|(ns, n)| format!("{ns}/{n}"))
                .collect(),
            Values::Leases if names.line.nodes => names.names("nodes", None),
            Values::Leases => {
                // Node heartbeats are `--nodes`' business, as in the listing.
                let ns = names.line.namespace.as_deref();
                let mut leases: Vec<String> = names
                    .objects("leases", ns)
                    .into_iter()
                    .filter(|(lease_ns, _)| {
                        ns.is_some() || lease_ns != crate::lease::NODE_LEASE_NAMESPACE
                    })
                    .map(|(_, n)| n)
                    .collect();
                leases.sort();
                leases.dedup();
                leases
            }
            Values::Releases => Release::all_modelled()
                .flat_map(|r| [format!("1.{}", r.minor), r.to_string()])
                .collect(),
            Values::Contexts | Values::Clusters | Values::Users => {
                let [contexts, clusters, users] = live::kubeconfig_names(
                    &names.line.connect_options(),
                    &live::Env::from_process(),
                );
                match self.values {
                    Values::Contexts => contexts,
                    Values::Clusters => clusters,
                    _ => users,
                }
            }
            Values::Resources => resources(names, current),
        }
    }
}

/// `explain`'s argument: after `TYPE/` the names of that type, after `NAMESPACE/` that
/// namespace's pods; else the namespace's pods and the types (`deploy/`, `sts/`, …).
fn resources(names: &Names, current: &str) -> Vec<String> {
    if let Some((prefix, _)) = current.split_once('/') {
        let kind = resource::TYPES.iter().find(|t| t.names.contains(&prefix));
        return match kind {
            Some(t) => names
                .names(t.plural(), Some(&names.namespace()))
                .into_iter()
                .map(|n| format!("{prefix}/{n}"))
                .collect(),
            None => names
                .names("pods", Some(prefix))
                .into_iter()
                .map(|n| format!("{prefix}/{n}"))
                .collect(),
        };
    }
    let mut all = names.names("pods", Some(&names.namespace()));
    if !current.is_empty() {
        all.extend(
            resource::TYPES
                .iter()
                .map(|t| format!("{}/", t.names.get(2).unwrap_or(&t.names[0]))),
        );
    }
    all
}

impl ValueCompleter for Completer {
    fn complete(&self, current: &OsStr) -> Vec<CompletionCandidate> {
        self.complete_at(0, current)
    }

    fn complete_at(&self, index: usize, current: &OsStr) -> Vec<CompletionCandidate> {
        let current = current.to_string_lossy();
        matching(&current, self.candidates(index, &current))
    }
}

/// The flags whose values are names, and which names.
const COMPLETED: [(&str, Values); 15] = [
    ("namespace", Values::Namespaces),
    ("context", Values::Contexts),
    ("cluster", Values::Clusters),
    ("user", Values::Users),
    ("scheduler_version", Values::Releases),
    ("compare_to", Values::Releases),
    ("cordon", Values::Nodes),
    ("uncordon", Values::Nodes),
    ("delete-node", Values::Nodes),
    ("drain", Values::Nodes),
    ("taint", Values::NodesThen),
    ("untaint", Values::NodesThen),
    ("clone-node", Values::NodesThen),
    ("label", Values::NodeThenLabel),
    ("delete-pod", Values::PodKeys),
];

/// The command line of a binary with the completers attached, names drawn from what `words`
/// (the line, its last word the one being completed) says.
fn completing(plugin: Option<&str>, words: &[OsString]) -> clap::Command {
    let names = Arc::new(Names::new(Line::of(words)));
    let completer = |values: Values| {
        ArgValueCompleter::new(Completer {
            names: names.clone(),
            values,
        })
    };
    let mut cmd = crate::cli::command(plugin);
    let ids = |c: &clap::Command| -> Vec<String> {
        c.get_arguments().map(|a| a.get_id().to_string()).collect()
    };
    let attach = |c: clap::Command, ids: Vec<String>| {
        ids.into_iter().fold(c, |c, id| {
            let values = COMPLETED
                .iter()
                .find(|(i, _)| *i == id)
                .map(|(_, v)| *v)
                .or(match (c.get_name(), id.as_str()) {
                    ("explain", "pod") => Some(Values::Resources),
                    ("lease", "lease") => Some(Values::Leases),
                    _ => None,
                });
            match values {
                Some(v) => c.mut_arg(id, |a| a.add(completer(v))),
                None => c,
            }
        })
    };
    let root_ids = ids(&cmd);
    cmd = attach(cmd, root_ids);
    let subcommands: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in subcommands {
        cmd = cmd.mut_subcommand(name, |s| {
            let sub_ids = ids(&s);
            attach(s, sub_ids)
        });
    }
    cmd
}

/// For `kubectl-sched` itself: completes and exits when the completion scripts ask it to.
pub fn complete_if_asked() {
    clap_complete::CompleteEnv::with_factory(|| {
        // The scripts run `kubectl-sched -- WORDS…`.
        let words: Vec<OsString> = std::env::args_os()
            .skip_while(|a| a != "--")
            .skip(2)
            .collect();
        completing(None, &words)
    })
    .var(ENV_VAR)
    .completer("kubectl-sched")
    .complete();
}

/// The completion script of a shell, for `kubectl-sched completions SHELL`: it asks
/// `kubectl-sched` on the PATH for the candidates of every <TAB>.
pub fn script(shell: clap_complete::Shell) -> String {
    let mut buf = Vec::new();
    let name = shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let completer = shells
        .completer(&name)
        .expect("every clap_complete shell has a dynamic completer");
    completer
        .write_registration(
            ENV_VAR,
            "kubectl-sched",
            "kubectl-sched",
            "kubectl-sched",
            &mut buf,
        )
        .expect("writing to memory");
    let script = String::from_utf8(buf).expect("completion scripts are UTF-8");
    // bash's default completion would offer file names wherever kubectl-sched offers nothing
    // (a node name that matches no node): the file flags' names come from kubectl-sched itself.
    script.replace(" -o bashdefault", "")
}

/// Whether a flag takes a file (or directory) name.
fn takes_a_path(arg: &clap::Arg) -> bool {
    matches!(
        arg.get_value_hint(),
        ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath
    ) && arg.get_num_args().is_some_and(|n| n.takes_values())
}

/// kubectl's plugin completion: the candidates for the last of `words` (the words after the
/// plugin's name), one per line (flags with their help after a tab), then `:<directive>`.
fn plugin_candidates(plugin: &str, mut words: Vec<OsString>) -> String {
    if words.is_empty() {
        words.push(OsString::new());
    }
    let current = words
        .last()
        .and_then(|w| w.to_str())
        .unwrap_or("")
        .to_string();
    let mut cmd = completing(Some(plugin), &words);
    cmd.build();
    let previous = words.len().checked_sub(2).and_then(|i| words[i].to_str());
    if let (Some(sub), Some(prev)) = (cmd.find_subcommand(plugin), previous)
        && !current.starts_with('-')
        && sub.get_arguments().any(|a| {
            takes_a_path(a)
                && (a.get_long().is_some_and(|l| prev == format!("--{l}"))
                    || a.get_short().is_some_and(|s| prev == format!("-{s}")))
        })
    {
        // No candidates and the default directive: the shell completes file names.
        return ":0\n".to_string();
    }
    let mut args: Vec<OsString> = vec!["kubectl-sched".into(), plugin.into()];
    let index = args.len() + words.len() - 1;
    args.extend(words);
    let current_dir = std::env::current_dir().ok();
    let candidates = clap_complete::engine::complete(&mut cmd, args, index, current_dir.as_deref())
        .unwrap_or_default();
    let mut out = String::new();
    let mut directive = NO_FILE_COMP;
    for c in &candidates {
        let value = c.get_value().to_string_lossy();
        // Flags only for a word that starts like one, as cobra offers them.
        if value.starts_with('-') && !current.starts_with('-') {
            continue;
        }
        if value.ends_with('/') || value.ends_with('=') {
            directive |= NO_SPACE;
        }
        out.push_str(&value);
        if let Some(help) = c.get_help() {
            let help = help.to_string();
            let first = help.lines().next().unwrap_or("").replace('\t', " ");
            if !first.is_empty() {
                out.push('\t');
                out.push_str(&first);
            }
        }
        out.push('\n');
    }
    out.push_str(&format!(":{directive}\n"));
    out
}

/// What `ENV_VAR` is set to when the plugin binary answers for kubectl.
const FOR_KUBECTL: &str = "kubectl";

/// Entry point of the `kubectl_complete-sched_<plugin>` binaries: the plugin binary installed
/// beside them (else the one on the PATH) answers, so these stay small programs that link none
/// of the tool.
pub fn delegate_to_plugin(plugin: &str) -> i32 {
    let name = format!("kubectl-sched_{plugin}{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(&name)))
        .filter(|p| p.is_file());
    let program = beside.map_or_else(|| OsString::from(&name), |p| p.into_os_string());
    std::process::Command::new(program)
        .args(std::env::args_os().skip(1))
        .env(ENV_VAR, FOR_KUBECTL)
        .status()
        .ok()
        .and_then(|s| s.code())
        .unwrap_or(1)
}

/// In a plugin binary run by `delegate_to_plugin`: prints kubectl's candidates for the words
/// given and returns true.
pub fn answer_kubectl(plugin: &str) -> bool {
    if std::env::var_os(ENV_VAR).is_none_or(|v| v != FOR_KUBECTL) {
        return false;
    }
    let words: Vec<OsString> = std::env::args_os().skip(1).collect();
    print!("{}", plugin_candidates(plugin, words));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &[&str]) -> Line {
        let words: Vec<OsString> = words.iter().map(OsString::from).collect();
        Line::of(&words)
    }

    #[test]
    fn the_line_says_where_names_come_from() {
        let l = line(&[
            "-n",
            "shop",
            "--snapshot=demo.yaml",
            "--context",
            "prod",
            "",
        ]);
        assert_eq!(l.namespace.as_deref(), Some("shop"));
        assert_eq!(l.snapshot.as_deref(), Some("demo.yaml"));
        assert_eq!(l.context.as_deref(), Some("prod"));
        assert_eq!(line(&["-nteam", "x"]).namespace.as_deref(), Some("team"));
        // The word being completed is not a value yet.
        assert_eq!(line(&["--snapshot", "dem"]).snapshot, None);
    }
}
