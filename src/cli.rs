//! Command-line flags, defined once (clap derive). The binaries only call `crate::app::main`.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub const EXIT_CODES: &str = "Exit codes: 0 the pod fits (or the command succeeded), 1 the pod fits no node, \
2 bad input (files, flags, configuration), 3 cluster or API error.";

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
    /// The pod to place, or a Deployment, ReplicaSet, StatefulSet, ReplicationController or Job
    /// whose pods to place (YAML or JSON; - for stdin)
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub file: String,
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
