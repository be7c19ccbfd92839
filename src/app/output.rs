//! What every command shares: reading the cluster, choosing the profile, colours, and printing.

use super::Failure;
use crate::cli::{ColorChoice, GlobalArgs, Output, SchedulerArgs};
use crate::explain::table::{Style, TableOptions};
use crate::framework::runner::Framework;
use crate::model::cluster::{Cluster, ClusterBuilder, convert_pod};
use crate::release::{ReleaseChoice, ReleaseError};
use crate::source::live::{self, Plan};
use crate::source::{Dump, file};
use anyhow::{Context, anyhow};
use serde::Serialize;
use std::io::IsTerminal;
use std::sync::Arc;

/// Where the cluster state comes from: `--snapshot`, or the API server the kubeconfig names.
pub enum Source {
    File(String),
    Live(Box<Live>),
}

/// A resolved connection and the runtime its requests run on; the only async part of the tool.
pub struct Live {
    runtime: tokio::runtime::Runtime,
    target: live::Target,
}

impl Live {
    pub fn target(&self) -> &live::Target {
        &self.target
    }

    /// Runs a live request (or a watch) to completion on the I/O runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }
}

impl Source {
    /// Chooses the source; for a live cluster resolves the kubeconfig (no request is sent yet).
    pub fn open(global: &GlobalArgs) -> Result<Source, Failure> {
        if let Some(path) = &global.snapshot {
            return Ok(Source::File(path.clone()));
        }
        let request_timeout = match &global.request_timeout {
            Some(s) => live::parse_duration(s).map_err(|e| Failure::bad_input(anyhow!(e)))?,
            None => None,
        };
        let options = live::ConnectOptions {
            kubeconfig: global.kubeconfig.clone(),
            context: global.context.clone(),
            cluster: global.cluster.clone(),
            user: global.user.clone(),
            namespace: global.namespace.clone(),
            request_timeout,
            consistent_read: global.consistent_read,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::cluster(anyhow!("cannot start the I/O runtime: {e}")))?;
        let target = runtime
            .block_on(live::resolve(&options, &live::Env::from_process()))
            .map_err(Failure::live)?;
        Ok(Source::Live(Box::new(Live { runtime, target })))
    }

    /// The namespace of a name given without one: `-n`, else the context's, else "default".
    pub fn namespace(&self, global: &GlobalArgs) -> String {
        match self {
            Source::Live(l) => l.target.namespace.clone(),
            Source::File(_) => global.namespace.clone().unwrap_or_else(|| "default".into()),
        }
    }

    /// Reads a live cluster's API objects, drawing progress on a terminal; `None` for a file
    /// source, which is parsed straight into a cluster.
    pub fn read_live(&self, plan: &Plan) -> Option<Result<Dump, Failure>> {
        let Source::Live(l) = self else { return None };
        let plan = Plan {
            progress: std::io::stderr().is_terminal(),
            ..plan.clone()
        };
        Some(
            l.runtime
                .block_on(live::read(&l.target, &plan))
                .map_err(Failure::live),
        )
    }

    /// Reads and parses the cluster, printing one warning line per skipped or unreadable kind.
    pub fn load(&self, plan: &Plan) -> Result<Arc<Cluster>, Failure> {
        let cluster = match self {
            Source::File(path) => {
                let cluster = file::load(path).map_err(Failure::bad_input)?;
                // What the snapshot's own read could not see.
                for w in &cluster.meta.incomplete {
                    eprintln!("warning: {path} is incomplete: {w}");
                }
                cluster
            }
            Source::Live(l) => {
                let dump = self.read_live(plan).expect("a live source")?;
                from_dump(dump).map_err(|e| {
                    Failure::cluster(anyhow!(
                        "the cluster at {} holds objects kubectl-sched cannot read:\n{e}",
                        l.target.server()
                    ))
                })?
            }
        };
        for w in &cluster.warnings {
            eprintln!("warning: {w}");
        }
        Ok(Arc::new(cluster))
    }
}

/// Builds the cluster of a live read, converting pods in parallel as the file source does.
fn from_dump(mut dump: Dump) -> Result<Cluster, crate::model::error::ObjectErrors> {
    use rayon::prelude::*;
    let mut builder = ClusterBuilder::new();
    for w in std::mem::take(&mut dump.warnings) {
        builder.warn(w);
    }
    let pods = std::mem::take(&mut dump.pods);
    for o in dump.into_objects() {
        builder.add(o);
    }
    let converted: Vec<_> = pods.into_par_iter().map(convert_pod).collect();
    for pod in converted {
        builder.add_pod(pod);
    }
    builder.finish()
}

/// The release to model: `--scheduler-version`, else the version the live server or the
/// snapshot reports, else the newest modelled.
pub fn release(
    args: &SchedulerArgs,
    source: &Source,
    cluster: &Cluster,
) -> Result<ReleaseChoice, Failure> {
    ReleaseChoice::choose(
        args.scheduler_version.as_deref(),
        cluster.meta.server_version.as_deref(),
        matches!(source, Source::Live(_)),
    )
    .map_err(|e| match e {
        ReleaseError::Unsupported(_) if args.scheduler_version.is_none() => {
            Failure::bad_input(anyhow!(
                "the cluster reports {}: {e}",
                cluster.meta.server_version.as_deref().unwrap_or_default()
            ))
        }
        e => Failure::bad_input(e),
    })
}

/// With `--call-extenders`, nodes and pods keep their API objects, which extenders are sent:
/// called before anything is read.
pub fn keep_objects_for_extenders(args: &SchedulerArgs) {
    if args.call_extenders {
        crate::model::api_object::keep();
    }
}

/// The profiles: from `--config`, or the release's default; with `--call-extenders`, each with
/// the clients of the configuration's extenders.
pub fn frameworks(
    global: &GlobalArgs,
    args: &SchedulerArgs,
    release: ReleaseChoice,
) -> Result<Vec<Framework>, Failure> {
    let mut fws = match &args.config {
        None => vec![crate::framework::profile::default_framework(release)],
        Some(path) => {
            crate::config::load(path, release)
                .map_err(Failure::bad_input)?
                .frameworks
        }
    };
    // Every profile has the configuration's extenders.
    let extenders = fws.first().map(|f| f.extenders.clone()).unwrap_or_default();
    let clients = if !args.call_extenders {
        if !extenders.is_empty() {
            eprintln!(
                "warning: the configuration has {} scheduler extender(s), not called without --call-extenders: kube-scheduler's answer may differ",
                extenders.len()
            );
        }
        Vec::new()
    } else {
        let request_timeout = match &global.request_timeout {
            Some(s) => live::parse_duration(s).map_err(|e| Failure::bad_input(anyhow!(e)))?,
            None => None,
        };
        let path = args.config.as_deref().unwrap_or(std::path::Path::new(""));
        crate::extender::clients(&extenders, request_timeout)
            .map_err(|e| Failure::bad_input(anyhow!("{}: {e}", path.display())))?
    };
    for fw in &mut fws {
        fw.parallel = !args.serial;
        fw.extender_clients = clients.clone();
    }
    Ok(fws)
}

/// The profile that serves `scheduler_name`, as kube-scheduler picks it.
pub fn profile_for<'a>(
    fws: &'a [Framework],
    scheduler_name: &str,
) -> Result<&'a Framework, Failure> {
    fws.iter().find(|f| f.profile == scheduler_name).ok_or_else(|| {
        let names: Vec<&str> = fws.iter().map(|f| f.profile.as_str()).collect();
        Failure::bad_input(anyhow!(
            "the pod's schedulerName {scheduler_name:?} matches no profile ({}): kube-scheduler would ignore this pod",
            names.join(", ")
        ))
    })
}

pub fn style(global: &GlobalArgs) -> Style {
    let color = match global.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::env::var("TERM").map_or(true, |t| t != "dumb")
        }
    };
    Style { color }
}

/// The width tables wrap to: $COLUMNS, else the terminal's, else 80 (wide: no limit).
pub fn table_options(global: &GlobalArgs) -> TableOptions {
    let wide = global.output == Output::Wide;
    let from_env = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<u16>().ok());
    let from_tty = if std::io::stdout().is_terminal() {
        comfy_table::Table::new().width()
    } else {
        None
    };
    let width = from_env.or(from_tty).unwrap_or(if wide { 400 } else { 80 });
    TableOptions {
        wide,
        width,
        style: style(global),
    }
}

/// Prints a serialisable value as JSON or YAML.
pub fn print_structured<T: Serialize>(value: &T, output: Output) -> Result<(), Failure> {
    let text = match output {
        Output::Yaml => serde_saphyr::to_string(value)
            .context("rendering YAML")
            .map_err(Failure::bad_input)?,
        _ => {
            let mut s = serde_json::to_string_pretty(value)
                .context("rendering JSON")
                .map_err(Failure::bad_input)?;
            s.push('\n');
            s
        }
    };
    print!("{text}");
    Ok(())
}
