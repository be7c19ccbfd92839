//! Command-line flags, defined once (clap derive). The binaries only call `crate::app::main`.

use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub const EXIT_CODES: &str = "Exit codes: 0 the pod fits (or the command succeeded), 1 the pod fits no node \
(with changes: a pod stays pending, is lost or cannot be evicted), 2 bad input (files, flags, configuration), \
3 cluster or API error.";

#[derive(Parser, Debug)]
#[command(
    name = "kubectl-sched",
    version,
    about = "Explain kube-scheduler decisions (v1.34 to v1.37): why a pod fits, how it scores, what it would evict",
    after_help = EXIT_CODES,
    propagate_version = true
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
    #[arg(help_heading = CLUSTER, long, global = true, value_name = "PATH")]
    pub snapshot: Option<String>,
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
    #[arg(help_heading = CLUSTER, long, global = true, value_name = "FILE")]
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
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The kube-scheduler release to model: 1.34, 1.35, 1.36, 1.37 or a patch release such as
    /// v1.36.2 (default: the API server's version, or the one the snapshot recorded, else the
    /// newest modelled)
    #[arg(long, value_name = "VERSION")]
    pub scheduler_version: Option<String>,
    /// Call the scheduler extenders of --config (their filter, prioritize and preempt verbs,
    /// never bind), sending them the pod and the nodes; without it they are listed but not called,
    /// and kube-scheduler's answer may differ
    #[arg(long)]
    pub call_extenders: bool,
    /// Filter and score nodes on one thread (results are identical; for comparison)
    #[arg(long, hide = true)]
    pub serial: bool,
}

#[derive(Args, Debug, Clone)]
pub struct WhatifArgs {
    /// The pod to place, or a Deployment, ReplicaSet, StatefulSet, ReplicationController, Job,
    /// CronJob or DaemonSet whose pods to place; several documents are placed in order (YAML or
    /// JSON; - for stdin). Optional with a change such as --drain
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
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
    pub plan: PlanArgs,
}

#[derive(Args, Debug, Clone)]
pub struct ExplainArgs {
    /// The pod: NAME, pod/NAME, pods/NAME or NAMESPACE/NAME
    #[arg(value_name = "POD")]
    pub pod: Option<String>,
    /// Explain every pending pod in every namespace, one line each
    #[arg(short = 'A', long, conflicts_with = "pod")]
    pub all_namespaces: bool,
    /// Explain every pending pod (in -n's namespace if given, else in all), one line each
    #[arg(long, conflicts_with = "pod")]
    pub all_pending: bool,
    #[command(flatten)]
    pub scheduler: SchedulerArgs,
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
    #[arg(long, requires = "drain")]
    pub force: bool,
    /// With --drain: evict pods with emptyDir volumes (their data is lost)
    #[arg(long, requires = "drain")]
    pub delete_emptydir_data: bool,
    /// With --drain: give up on a node whose evictions a PodDisruptionBudget keeps refusing after
    /// this long, report it and go on with the next node (kubectl drain --timeout; 0, the
    /// default, retries for ever)
    #[arg(long, requires = "drain", value_name = "DURATION")]
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
}

/// A change flag: its id (and long name), value names, help, and how its values make an edit.
struct EditFlag {
    id: &'static str,
    values: &'static [&'static str],
    help: &'static str,
    make: fn(&[String]) -> Edit,
}

/// The change flags, in one table so the flags, their parsing and the completions cannot drift
/// apart.
const EDIT_FLAGS: [EditFlag; 10] = [
    EditFlag {
        id: "cordon",
        values: &["NODE"],
        help: "Cordon a node (spec.unschedulable and its NoSchedule taint)",
        make: |v| Edit::Cordon(v[0].clone()),
    },
    EditFlag {
        id: "uncordon",
        values: &["NODE"],
        help: "Uncordon a node",
        make: |v| Edit::Uncordon(v[0].clone()),
    },
    EditFlag {
        id: "delete-node",
        values: &["NODE"],
        help: "Delete a node: controllers recreate its pods elsewhere (no PodDisruptionBudget is asked), bare pods are lost",
        make: |v| Edit::DeleteNode(v[0].clone()),
    },
    EditFlag {
        id: "taint",
        values: &["NODE=KEY[=VALUE]:EFFECT"],
        help: "Taint a node (kubectl taint syntax); a NoExecute taint evicts the pods that do not tolerate it",
        make: |v| Edit::Taint(v[0].clone()),
    },
    EditFlag {
        id: "untaint",
        values: &["NODE=KEY[:EFFECT]"],
        help: "Remove a taint (every effect of the key without :EFFECT)",
        make: |v| Edit::Untaint(v[0].clone()),
    },
    EditFlag {
        id: "label",
        values: &["NODE", "KEY=VALUE"],
        help: "Label a node (KEY- removes the label)",
        make: |v| Edit::Label(v[0].clone(), v[1].clone()),
    },
    EditFlag {
        id: "add-node",
        values: &["FILE"],
        help: "Add the Node of a manifest, with the pods of the cluster's DaemonSets that would run there",
        make: |v| Edit::AddNode(v[0].clone()),
    },
    EditFlag {
        id: "clone-node",
        values: &["NODE=COUNT"],
        help: "Add COUNT nodes like NODE (capacity, labels, taints, DaemonSet and static pods), named NODE-clone-1…",
        make: |v| Edit::CloneNode(v[0].clone()),
    },
    EditFlag {
        id: "delete-pod",
        values: &["NAMESPACE/NAME"],
        help: "Delete a pod: its controller recreates it",
        make: |v| Edit::DeletePod(v[0].clone()),
    },
    EditFlag {
        id: "drain",
        values: &["NODE"],
        help: "Drain a node as kubectl drain --ignore-daemonsets would, after every other change: is it safe?",
        make: |v| Edit::Drain(v[0].clone()),
    },
];

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

impl Args for Edits {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        EDIT_FLAGS.iter().fold(cmd, |cmd, flag| {
            cmd.arg(
                Arg::new(flag.id)
                    .long(flag.id)
                    .value_names(flag.values)
                    .num_args(flag.values.len())
                    .action(ArgAction::Append)
                    .help(flag.help),
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
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub file: String,
    /// Keep env values, large annotations and managedFields
    #[arg(long)]
    pub no_redact: bool,
}
