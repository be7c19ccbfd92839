//! Command-line flags, defined once (clap derive). The binaries only call `crate::app::main`.

use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub const EXIT_CODES: &str = "Exit codes:
  0  the pod fits (or the command succeeded)
  1  the pod fits no node; with changes, the plan is not safe: a pod stays
     pending, is lost or cannot be evicted
  2  bad input (files, flags, configuration, feature gates)
  3  cluster or API error
  With --compare-to: 0 when the decisions are the same under both releases
  (scores may differ), 1 when they differ";

/// The lease command's exit codes: it answers no yes-or-no question.
const LEASE_EXIT_CODES: &str = "Exit codes:
  0  success
  2  bad input (files, flags)
  3  cluster or API error";

#[derive(Parser, Debug)]
#[command(
    name = "kubectl-sched",
    version,
    about = "Explain kube-scheduler decisions (v1.34 to v1.37): why a pod fits, how it scores, what it would evict",
    after_help = EXIT_CODES,
    propagate_version = true,
    override_usage = "kubectl-sched COMMAND [flags]"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Where would this pod go, and what would it evict? (kubectl sched-whatif)
    Whatif(WhatifArgs),
    /// Why is this pod pending, or why did it land where it did? (kubectl sched-explain)
    Explain(ExplainArgs),
    /// Who holds each leader-election lease, and is it fresh? (kubectl sched-lease)
    Lease(LeaseArgs),
    /// Save the cluster state this tool reads, for offline analysis
    Snapshot(SnapshotArgs),
    /// Print shell completions
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Where `--help` lists the shared flags, after each command's own (as kubectl groups them).
const CLUSTER: &str = "Cluster and connection";
const OUTPUT: &str = "Output";

/// Flags every command shares: where the cluster state comes from and how output looks.
#[derive(Args, Debug, Clone)]
pub struct GlobalArgs {
    /// Read the cluster from a file, a directory of files, or - for stdin (YAML or JSON, .gz
    /// accepted) instead of the API server
    #[arg(help_heading = CLUSTER, long, global = true, value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub snapshot: Option<String>,
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
    #[arg(help_heading = CLUSTER, long, global = true, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use
    #[arg(help_heading = CLUSTER, long, global = true)]
    pub context: Option<String>,
    /// The kubeconfig cluster to use
    #[arg(help_heading = CLUSTER, long, global = true)]
    pub cluster: Option<String>,
    /// The kubeconfig user to use
    #[arg(help_heading = CLUSTER, long, global = true)]
    pub user: Option<String>,
    /// Namespace (default: the context's namespace, else "default")
    #[arg(help_heading = CLUSTER, short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// How long to wait for each API request (e.g. 10s, 1m; 0 waits forever)
    #[arg(help_heading = CLUSTER, long, global = true, value_name = "DURATION")]
    pub request_timeout: Option<String>,
    /// Read with a consistent (quorum) list from etcd instead of the API server's watch cache
    #[arg(help_heading = CLUSTER, long, global = true)]
    pub consistent_read: bool,
    /// Output format
    #[arg(help_heading = OUTPUT, short = 'o', long, global = true, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Print tables without their column-header line (as kubectl get --no-headers)
    #[arg(help_heading = OUTPUT, long, global = true)]
    pub no_headers: bool,
    /// When to use colours (NO_COLOR in the environment also turns them off)
    #[arg(help_heading = OUTPUT, long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// The most one input (--snapshot, -f) may hold once decompressed, e.g. 4Gi; the default
    /// is about 8 times the snapshot of a 5,000-node, 150,000-pod cluster
    #[arg(help_heading = CLUSTER, long, global = true, value_name = "SIZE", default_value = "1Gi", value_parser = parse_size)]
    pub max_input_size: u64,
    /// More detail on errors and warnings
    #[arg(help_heading = OUTPUT, short = 'v', long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// A size in bytes written as a quantity (`1Gi`, `500M`, `1073741824`).
fn parse_size(s: &str) -> Result<u64, String> {
    let q = crate::model::quantity::Quantity::parse(s).map_err(|e| format!("{s:?}: {e}"))?;
    u64::try_from(q.value())
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{s:?}: expected a positive size such as 1Gi"))
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A table readable at 80 columns
    Table,
    /// The table with a column per score plugin
    Wide,
    Json,
    Yaml,
    /// One TYPE/NAME line per object (as kubectl get -o name): the chosen node of a pod, each
    /// pending pod, each lease
    Name,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Args, Debug, Clone)]
pub struct SchedulerArgs {
    /// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1); default: the v1 defaults
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub config: Option<PathBuf>,
    /// The kube-scheduler release to model: 1.34, 1.35, 1.36, 1.37 or a patch release such as
    /// v1.36.2 (default: the API server's version, or the one the snapshot recorded, else the
    /// newest modelled)
    #[arg(long, value_name = "VERSION")]
    pub scheduler_version: Option<String>,
    /// kube-scheduler's --feature-gates, read as it reads them (Name=true,Other=false; repeatable):
    /// its errors for unknown, locked and missing gates; a gate whose effect kubectl-sched does not
    /// model is an error
    #[arg(long, value_name = "NAME=BOOL,...", action = ArgAction::Append)]
    pub feature_gates: Vec<String>,
    /// Also run everything under this other release (e.g. 1.36 when the cluster runs 1.35) and
    /// show what differs and why; exit 0 when the decisions are the same, 1 when they differ
    #[arg(long, value_name = "VERSION")]
    pub compare_to: Option<String>,
    /// Call the scheduler extenders of --config (their filter, prioritize and preempt verbs,
    /// never bind), sending them the pod and the nodes; without it they are listed but not called,
    /// and kube-scheduler's answer may differ
    #[arg(long)]
    pub call_extenders: bool,
    /// Filter and score nodes on one thread (results are identical; for comparison)
    #[arg(long, hide = true)]
    pub serial: bool,
}

/// Which nodes the table shows (JSON and YAML always have every node).
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Nodes in the table")]
pub struct NodesArgs {
    /// Show this node in full: every failing plugin with the facts behind its reasons, every
    /// score with its inputs
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Which nodes the table lists: grouped (the best feasible ones, the rejected ones grouped
    /// by reason) or all (a row per node, as -o wide)
    #[arg(long, value_enum, value_name = "WHICH", default_value_t = NodesShown::Grouped)]
    pub nodes: NodesShown,
}

#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NodesShown {
    #[default]
    Grouped,
    All,
}

#[derive(Args, Debug, Clone)]
pub struct WhatifArgs {
    /// The pod to place, or a Deployment, ReplicaSet, StatefulSet, ReplicationController, Job,
    /// CronJob or DaemonSet whose pods to place; several documents are placed in order (YAML or
    /// JSON; - for stdin). Optional with a change such as --drain
    #[arg(short = 'f', long = "filename", value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub file: Option<String>,
    /// Place this many replicas one after another (default: a workload's own replica count)
    #[arg(long, value_name = "N", conflicts_with = "max")]
    pub replicas: Option<usize>,
    /// Place replicas until one fits nowhere: how many more fit?
    #[arg(long)]
    pub max: bool,
    /// The most replicas --max or --replicas places: a node that takes any number of pods of
    /// this shape would otherwise be filled one by one
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub limit: usize,
    #[command(flatten)]
    pub scheduler: SchedulerArgs,
    #[command(flatten)]
    pub nodes: NodesArgs,
    #[command(flatten)]
    pub suggest: SuggestArgs,
    #[command(flatten)]
    pub plan: PlanArgs,
}

/// "What would make it fit": verified changes after which a pending pod fits.
#[derive(Args, Debug, Clone, Copy)]
#[command(next_help_heading = "What would make it fit")]
pub struct SuggestArgs {
    /// For a pod that fits nowhere (or only by preemption): show up to N changes that make it
    /// fit, each verified by running the scheduler again with the change
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        conflicts_with = "no_suggest"
    )]
    pub suggest: usize,
    /// Skip "What would make it fit"
    #[arg(long)]
    pub no_suggest: bool,
}

impl SuggestArgs {
    /// How many suggestions to look for; 0 for none.
    pub fn limit(&self) -> usize {
        if self.no_suggest { 0 } else { self.suggest }
    }
}

#[derive(Args, Debug, Clone)]
pub struct ExplainArgs {
    /// The pod: NAME, pod/NAME or NAMESPACE/NAME; or a workload, whose pending pods are
    /// explained: deploy/NAME, sts/NAME, rs/NAME, ds/NAME, rc/NAME, job/NAME, cj/NAME
    #[arg(value_name = "POD|TYPE/NAME")]
    pub pod: Option<String>,
    /// Explain every pending pod in every namespace, one line each
    #[arg(short = 'A', long, conflicts_with = "pod")]
    pub all_namespaces: bool,
    /// Explain every pending pod (in -n's namespace if given, else in all), one line each
    #[arg(long, conflicts_with = "pod")]
    pub all_pending: bool,
    /// Only the pending pods with these labels (kubectl's syntax: app=web, tier!=cache,
    /// 'env in (prod,staging)', gpu, '!spot'); implies --all-pending
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Only the pending pods whose fields match (metadata.name, metadata.namespace,
    /// spec.nodeName, spec.schedulerName, status.phase, …; =, ==, !=); implies --all-pending
    #[arg(long, value_name = "SELECTOR")]
    pub field_selector: Option<String>,
    #[command(flatten)]
    pub scheduler: SchedulerArgs,
    #[command(flatten)]
    pub nodes: NodesArgs,
    #[command(flatten)]
    pub suggest: SuggestArgs,
    /// With --all-pending: the pending pods are scheduled one after another on the changed
    /// cluster
    #[command(flatten)]
    pub plan: PlanArgs,
}

/// Change planning: changes to the cluster state read (never to the cluster), then every pod
/// they leave without a node, and every pod to place, through kube-scheduler's queue.
#[derive(Args, Debug, Clone, Default)]
#[command(
    next_help_heading = "Changes, applied in command-line order (the cluster itself is never changed)"
)]
pub struct PlanArgs {
    #[command(flatten)]
    pub edits: Edits,
    /// With --drain: delete pods that declare no controller (kubectl drain --force); nothing
    /// recreates them
    #[arg(long, requires = DRAINS)]
    pub force: bool,
    /// With --drain: evict pods with emptyDir volumes (their data is lost)
    #[arg(long, requires = DRAINS)]
    pub delete_emptydir_data: bool,
    /// With --drain: give up on a node whose evictions a PodDisruptionBudget keeps refusing after
    /// this long, report it and go on with the next node (kubectl drain --timeout; 0, the
    /// default, retries for ever)
    #[arg(long, requires = DRAINS, value_name = "DURATION")]
    pub drain_timeout: Option<String>,
    /// Break ties between equally good nodes at random, seeded, as kube-scheduler does (default:
    /// the first by name)
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

impl PlanArgs {
    /// Whether anything asks for change planning.
    pub fn any(&self) -> bool {
        !self.edits.0.is_empty() || self.seed.is_some()
    }
}

/// One change flag and its value(s), as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Edit {
    Cordon(String),
    Uncordon(String),
    DeleteNode(String),
    Taint(String),
    Untaint(String),
    Label(String, String),
    AddNode(String),
    CloneNode(String),
    DeletePod(String),
    Drain(String),
    /// `--cordon`, `--uncordon`, `--drain` or `--taint` (the flag's name) with `-l SELECTOR`:
    /// every node the selector selects; `--taint`'s KEY[=VALUE]:EFFECT.
    Selected {
        flag: &'static str,
        selector: String,
        taint: Option<String>,
    },
}

/// A change flag: its id (and long name), value names, help, and how its values make an edit.
struct EditFlag {
    id: &'static str,
    values: &'static [&'static str],
    help: &'static str,
    make: fn(&[String]) -> Edit,
    /// Which values the shell completes: file names for `--add-node`, else none by itself.
    hint: clap::ValueHint,
    /// The `-l` form of a flag (`--drain -l pool=blue`): its own hidden flag once parsed, see
    /// `node_selector_args`.
    hidden: bool,
}

/// The change flags, in one table so the flags, their parsing and the completions cannot drift
/// apart.
const EDIT_FLAGS: [EditFlag; 14] = [
    EditFlag {
        id: "cordon",
        values: &["NODE|-l SELECTOR"],
        help: "Cordon a node, or every node -l selects (spec.unschedulable and its NoSchedule taint)",
        make: |v| Edit::Cordon(v[0].clone()),
        hint: clap::ValueHint::Other,
        hidden: false,
    },
    EditFlag {
        id: "uncordon",
        values: &["NODE|-l SELECTOR"],
        help: "Uncordon a node, or every node -l selects",
        make: |v| Edit::Uncordon(v[0].clone()),
        hint: clap::ValueHint::Other,
        hidden: false,
    },
    EditFlag {
        id: "delete-node",
        values: &["NODE"],
        help: "Delete a node: controllers recreate its pods elsewhere (no PodDisruptionBudget is asked), bare pods are lost",
        make: |v| Edit::DeleteNode(v[0].clone()),
        hint: clap::ValueHint::Other,
        hidden: false,
    },
    EditFlag {
        id: "taint",
        values: &["NODE=KEY[=VALUE]:EFFECT|-l SELECTOR KEY[=VALUE]:EFFECT"],
        help: "Taint a node, or every node -l selects (kubectl taint syntax); a NoExecute taint evicts the pods that do not tolerate it",
        make: |v| Edit::Taint(v[0].clone()),
        hint: clap::ValueHint::Other,
        hidden: false,
    },
    EditFlag {
        id: "untaint",
        values: &["NODE=KEY[:EFFECT]"],
        help: "Remove a taint (every effect of the key without :EFFECT)",
        make: |v| Edit::Untaint(v[0].clone()),
        hint: clap::ValueHint::Other,
        hidden: false,
    },
    EditFlag {
        id: "label",
        values: &["NODE", "KEY=VALUE"],
        help: "Label a node (KEY- removes the label)",
        make: |v| Edit::Label(v[0].clone(), v[1].clone()),
        hint: clap::ValueHint::Other,
        hidden: false,
    },
    EditFlag {
        id: "add-node",
        values: &["FILE"],
        help: "Add the Node of a manifest, with the pods of the cluster's DaemonSets that would run there",
        make: |v| Edit::AddNode(v[0].clone()),
        hint: clap::ValueHint::FilePath,
        hidden: false,
    },
    EditFlag {
        id: "clone-node",
        values: &["NODE=COUNT"],
        help: "Add COUNT nodes like NODE (capacity, labels, taints, DaemonSet and static pods), named NODE-clone-1…",
        make: |v| Edit::CloneNode(v[0].clone()),
        hint: clap::ValueHint::Other,
        hidden: false,
    },
    EditFlag {
        id: "delete-pod",
        values: &["NAMESPACE/NAME"],
        help: "Delete a pod: its controller recreates it",
        make: |v| Edit::DeletePod(v[0].clone()),
        hint: clap::ValueHint::Other,
        hidden: false,
    },
    EditFlag {
        id: "drain",
        values: &["NODE|-l SELECTOR"],
        help: "Drain a node, or every node -l selects in name order, as kubectl drain --ignore-daemonsets would, after every other change: is it safe?",
        make: |v| Edit::Drain(v[0].clone()),
        hint: clap::ValueHint::Other,
        hidden: false,
    },
    EditFlag {
        id: "cordon-selector",
        values: &["SELECTOR"],
        help: "--cordon -l SELECTOR",
        make: |v| Edit::Selected {
            flag: "cordon",
            selector: v[0].clone(),
            taint: None,
        },
        hint: clap::ValueHint::Other,
        hidden: true,
    },
    EditFlag {
        id: "uncordon-selector",
        values: &["SELECTOR"],
        help: "--uncordon -l SELECTOR",
        make: |v| Edit::Selected {
            flag: "uncordon",
            selector: v[0].clone(),
            taint: None,
        },
        hint: clap::ValueHint::Other,
        hidden: true,
    },
    EditFlag {
        id: "drain-selector",
        values: &["SELECTOR"],
        help: "--drain -l SELECTOR",
        make: |v| Edit::Selected {
            flag: "drain",
            selector: v[0].clone(),
            taint: None,
        },
        hint: clap::ValueHint::Other,
        hidden: true,
    },
    EditFlag {
        id: "taint-selector",
        values: &["SELECTOR", "KEY[=VALUE]:EFFECT"],
        help: "--taint -l SELECTOR KEY[=VALUE]:EFFECT",
        make: |v| Edit::Selected {
            flag: "taint",
            selector: v[0].clone(),
            taint: Some(v[1].clone()),
        },
        hint: clap::ValueHint::Other,
        hidden: true,
    },
];

/// The change flags that take `-l SELECTOR` in place of a node, as kubectl's drain, cordon,
/// uncordon and taint do.
pub const NODE_SELECTOR_FLAGS: [&str; 4] = ["cordon", "uncordon", "drain", "taint"];

/// kubectl's `--drain -l SELECTOR` (also `-lSELECTOR`, `-l=SELECTOR`, `--selector[=]SELECTOR`,
/// and for `--cordon`, `--uncordon`, `--taint`): clap cannot take a flag as a flag's value, so
/// each such pair becomes its hidden flag (`--drain-selector SELECTOR`) before parsing.
pub fn node_selector_args(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter().peekable();
    while let Some(arg) = it.next() {
        let flag = arg
            .to_str()
            .and_then(|a| a.strip_prefix("--"))
            .filter(|f| NODE_SELECTOR_FLAGS.contains(f))
            .map(str::to_string);
        let selector = flag.as_ref().and_then(|_| {
            let next = it.peek()?.to_str()?;
            match next {
                "-l" | "--selector" => Some(None),
                _ => next
                    .strip_prefix("--selector=")
                    .or_else(|| next.strip_prefix("-l="))
                    .or_else(|| next.strip_prefix("-l"))
                    .map(|s| Some(s.to_string())),
            }
        });
        match (flag, selector) {
            (Some(flag), Some(inline)) => {
                it.next();
                out.push(format!("--{flag}-selector").into());
                if let Some(value) = inline {
                    out.push(value.into());
                }
            }
            _ => out.push(arg),
        }
    }
    out
}

/// Every change flag given, in command-line order (clap keeps each flag's values apart; their
/// indices put them back in order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Edits(pub Vec<Edit>);

impl FromArgMatches for Edits {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut found: Vec<(usize, Edit)> = Vec::new();
        for flag in &EDIT_FLAGS {
            let (Some(values), Some(indices)) =
                (m.get_many::<String>(flag.id), m.indices_of(flag.id))
            else {
                continue;
            };
            let values: Vec<String> = values.cloned().collect();
            let n = flag.values.len();
            // Each occurrence has `n` values and `n` indices; the first index places it.
            for (chunk, at) in values.chunks(n).zip(indices.step_by(n)) {
                found.push((at, (flag.make)(chunk)));
            }
        }
        found.sort_by_key(|(at, _)| *at);
        Ok(Edits(found.into_iter().map(|(_, e)| e).collect()))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// `--drain NODE` and `--drain -l SELECTOR`, for the flags that only go with a drain.
const DRAINS: &str = "drains";

impl Args for Edits {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let cmd = cmd.group(
            clap::ArgGroup::new(DRAINS)
                .args(["drain", "drain-selector"])
                .multiple(true),
        );
        EDIT_FLAGS.iter().fold(cmd, |cmd, flag| {
            cmd.arg(
                Arg::new(flag.id)
                    .long(flag.id)
                    .value_names(flag.values)
                    .num_args(flag.values.len())
                    .action(ArgAction::Append)
                    .help(flag.help)
                    .value_hint(flag.hint)
                    .hide(flag.hidden),
            )
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

#[derive(Args, Debug, Clone)]
pub struct LeaseArgs {
    /// One lease: NAME, lease/NAME or NAMESPACE/NAME, looked up in every namespace unless -n is
    /// given (default: every leader-election lease)
    #[arg(value_name = "LEASE")]
    pub lease: Option<String>,
    /// Every namespace (the default unless -n is given)
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Node heartbeat leases: kubelets that stopped renewing, stalest first
    #[arg(long)]
    pub nodes: bool,
    /// Stream changes as an incident timeline until interrupted
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// With --watch, also print every renewal
    #[arg(long, requires = "watch")]
    pub renewals: bool,
    /// The components' renewDeadline: how long a leader keeps trying to renew before it gives up
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub renew_deadline: String,
    /// The components' retryPeriod: how often leaders renew and standbys try to acquire
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub retry_period: String,
    /// kube-controller-manager's --node-monitor-grace-period, for --nodes
    #[arg(long, value_name = "DURATION", default_value = "50s")]
    pub node_grace_period: String,
}

#[derive(Args, Debug, Clone)]
pub struct SnapshotArgs {
    /// Where to write: .json or .yaml by extension, .gz to compress
    #[arg(short = 'f', long = "file", value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub file: String,
    /// Keep env values, large annotations and managedFields
    #[arg(long)]
    pub no_redact: bool,
}

/// How a command is typed, per binary: `kubectl sched-whatif` for the kubectl plugin
/// `kubectl-sched_whatif`, `kubectl-sched whatif` for the multi-command binary.
pub fn program(plugin: Option<&str>, command: &str) -> String {
    match plugin {
        Some(p) => format!("kubectl sched-{p}"),
        None => format!("kubectl-sched {command}"),
    }
}

/// Each command's usage lines, after its program.
fn usage(command: &str) -> &'static [&'static str] {
    match command {
        "whatif" => &[
            "-f FILE [flags]",
            "--drain NODE|-l SELECTOR [-f FILE] [flags]",
        ],
        "explain" => &[
            "POD|TYPE/NAME [flags]",
            "-A|--all-pending|-l SELECTOR [flags]",
        ],
        "lease" => &["[LEASE] [flags]", "--nodes [NODE] [flags]"],
        "snapshot" => &["-f FILE [flags]"],
        _ => &["SHELL"],
    }
}

/// Examples, kubectl style: a comment, then the command line. `{p}` is the program; the
/// fixtures are in a checkout of kubectl-sched (the tests run every example that names one).
/// The pages of docs/ that describe a command in full.
fn reference(command: &str) -> &'static str {
    match command {
        "whatif" => "docs/usage.md, docs/suggestions.md, docs/plans.md, docs/json.md",
        "explain" => "docs/usage.md, docs/suggestions.md, docs/json.md, docs/releases.md",
        "lease" => "docs/lease.md",
        "snapshot" => "docs/live.md",
        "completions" => "docs/install.md",
        _ => "README.md",
    }
}

fn examples(command: &str) -> &'static str {
    match command {
        "whatif" => {
            "  # Where would this pod go on the cluster kubectl points at, and what would it evict?
  {p} -f pod.yaml

  # The same on a saved cluster state (a snapshot, or kubectl get -o yaml of its objects)
  {p} -f fixtures/pods/checkout-critical.yaml --snapshot fixtures/clusters/demo.yaml

  # Where would 20 replicas of a Deployment go? How many more pods of this shape fit?
  {p} -f fixtures/pods/web.yaml --replicas 20 --snapshot fixtures/clusters/demo.yaml
  {p} -f fixtures/pods/web.yaml --max --snapshot fixtures/clusters/demo.yaml

  # Is it safe to drain a node? Every node of a zone, in name order?
  {p} --drain a1 --snapshot fixtures/clusters/plan.yaml
  {p} --drain -l topology.kubernetes.io/zone=zone-b --force --delete-emptydir-data --snapshot fixtures/clusters/plan.yaml

  # With the cluster's kube-scheduler --feature-gates
  {p} -f fixtures/pods/restart-all.yaml --snapshot fixtures/clusters/upgrade.yaml --feature-gates NodeDeclaredFeatures=true

  # What changes for this pod when the scheduler goes from 1.35 to 1.36?
  {p} -f fixtures/conformance/fit-memory/pod.yaml --snapshot fixtures/conformance/fit-memory/cluster.yaml --scheduler-version 1.35 --compare-to 1.36

  # A running pod, exported and placed again as new (it replaces itself)
  kubectl get pod web-7f9c-k2x8p -n shop -o yaml | {p} -f -"
        }
        "explain" => {
            "  # Why is this pod pending (or why did it land where it did)?
  {p} search-indexer-7c9d5 -n shop
  {p} pod/search-indexer-7c9d5 -n shop --snapshot fixtures/clusters/demo.yaml

  # A workload's pending pods, grouped by what holds them back (deploy, sts, rs, ds, rc, job, cj)
  {p} deploy/web -n shop --snapshot fixtures/clusters/workloads.yaml

  # Every pending pod, in every namespace; only those a selector selects
  {p} -A --snapshot fixtures/clusters/workloads.yaml
  {p} -l app=web,pod-template-hash!=7b9c2 --snapshot fixtures/clusters/workloads.yaml
  {p} --field-selector metadata.namespace=batch --snapshot fixtures/clusters/workloads.yaml

  # Would two more nodes like a2 schedule the pending pods?
  {p} --all-pending --clone-node a2=2 --snapshot fixtures/clusters/plan.yaml

  # Which pending pods start or stop fitting, or go elsewhere, under 1.36?
  {p} -A --snapshot fixtures/clusters/upgrade.yaml --compare-to 1.36"
        }
        "lease" => {
            "  # Who leads each leader-election lease, is it fresh, when could someone else take over?
  {p} --snapshot fixtures/clusters/leases.yaml

  # One lease in detail, with client-go's rules spelled out
  {p} lease/kube-scheduler -n kube-system --snapshot fixtures/clusters/leases.yaml

  # Kubelets that stopped renewing their heartbeat, stalest first
  {p} --nodes --snapshot fixtures/clusters/leases.yaml

  # An incident timeline, until Ctrl-C
  {p} --watch"
        }
        "snapshot" => {
            "  # Save what the scheduler reads, for offline analysis (redacted, compressed)
  {p} -f incident.json.gz

  # Then, anywhere
  kubectl sched-explain -A --snapshot incident.json.gz"
        }
        _ => {
            "  # bash (in ~/.bashrc); zsh, fish and PowerShell likewise
  source <({p} bash)"
        }
    }
}

/// The command-line definition as a binary presents it: usage lines as the user types them
/// (`kubectl sched-whatif [flags]` for the plugin binary, `kubectl-sched whatif` for the
/// multi-command one), each command's examples and exit codes.
pub fn command(plugin: Option<&str>) -> clap::Command {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    // Leases live in a few system namespaces: the lease command looks in all of them unless
    // told one, where the other commands default to the context's. Its own copy of the global
    // flag says so (clap does not propagate a global flag where one of the same id exists).
    let lease_namespace = cmd
        .get_arguments()
        .find(|a| a.get_id() == "namespace")
        .cloned()
        .map(|a| a.help("Only this namespace's leases (default: every namespace)"));
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        let p = program(plugin, &name);
        let lines: Vec<String> = usage(&name).iter().map(|u| format!("{p} {u}")).collect();
        let exit_codes = if name == "lease" {
            LEASE_EXIT_CODES
        } else {
            EXIT_CODES
        };
        // In the template's own text, not after_help, so that clap does not wrap the example
        // lines to the terminal: a wrapped command line cannot be copied.
        let template = format!(
            "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{{all-args}}\n\nExamples:\n{}\n\n{exit_codes}\n\nReference (in kubectl-sched's repository): {}\n",
            examples(&name).replace("{p}", &p),
            reference(&name)
        );
        let namespace = lease_namespace.clone().filter(|_| name == "lease");
        cmd = cmd.mut_subcommand(&name, |s| {
            let s = s
                .override_usage(lines.join("\n       "))
                .help_template(template);
            match namespace {
                Some(arg) => s.arg(arg),
                None => s,
            }
        });
    }
    cmd
}

/// kubectl flags people type by habit, and what to say instead of clap's "unexpected argument":
/// which command takes it, or what to do instead. `command` is the command given.
pub fn kubectl_flag_tip(command: &str, arg: &str, plugin: Option<&str>) -> Option<String> {
    let flag = arg.split_once('=').map_or(arg, |(f, _)| f);
    let me = match plugin {
        Some(p) => format!("sched-{p}"),
        None => format!("kubectl-sched {command}"),
    };
    let sibling = |c: &str| match plugin {
        Some(_) => format!("sched-{c}"),
        None => format!("kubectl-sched {c}"),
    };
    Some(match flag {
        "-w" | "--watch" => format!(
            "-w/--watch is not supported by {me}; {} takes --watch (an incident timeline of leases)",
            sibling("lease")
        ),
        "-l" | "--selector" => match command {
            "whatif" => format!(
                "-l/--selector is not supported by {me} on its own: --drain, --cordon, --uncordon and --taint take -l SELECTOR for the nodes it selects (--drain -l pool=blue), and {} -l SELECTOR explains the pending pods it selects",
                sibling("explain")
            ),
            _ => format!(
                "-l/--selector is not supported by {me}; {} -l SELECTOR explains the pending pods it selects, and whatif's --drain -l SELECTOR changes the nodes it selects",
                sibling("explain")
            ),
        },
        "--field-selector" => format!(
            "--field-selector is not supported by {me}; {} --field-selector explains the pending pods it selects",
            sibling("explain")
        ),
        "-A" | "--all-namespaces" => format!(
            "-A/--all-namespaces is not supported by {me}: it reads every namespace already; {} -A explains every pending pod",
            sibling("explain")
        ),
        "-f" | "--filename" => format!(
            "-f is not supported by {me}: it explains pods in the cluster; {} -f FILE places the pod or workload of a manifest",
            sibling("whatif")
        ),
        "--show-labels"
        | "-L"
        | "--label-columns"
        | "--sort-by"
        | "--template"
        | "--show-kind"
        | "--show-managed-fields" => format!(
            "{flag} is a kubectl get flag {me} does not take; -o json or -o yaml give every field, for scripts"
        ),
        "--dry-run" => format!("{me} never changes the cluster: every answer is a dry run"),
        "-s"
        | "--server"
        | "--token"
        | "--as"
        | "--as-group"
        | "--as-uid"
        | "--username"
        | "--password"
        | "--certificate-authority"
        | "--client-certificate"
        | "--client-key"
        | "--insecure-skip-tls-verify"
        | "--tls-server-name"
        | "--cache-dir"
        | "--match-server-version"
        | "--disable-compression" => format!(
            "{flag} is a kubectl flag {me} does not take (kubectl passes no flags to plugins): it connects as kubectl does, with --kubeconfig, --context, --cluster, --user and -n"
        ),
        _ => return None,
    })
}
