//! Reading the cluster: from `--snapshot` files, or from the API server the kubeconfig names.

use super::Failure;
use crate::cli::GlobalArgs;
use crate::model::cluster::{Cluster, ClusterBuilder, convert_pod};
use crate::model::parse::LoadOptions;
use crate::source::live::{self, Plan};
use crate::source::{Dump, file};
use anyhow::anyhow;
use std::io::IsTerminal;
use std::sync::Arc;

/// Where the cluster state comes from: `--snapshot`, or the API server the kubeconfig names.
pub enum Source {
    File { path: String, limits: file::Limits },
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
            return Ok(Source::File {
                path: path.clone(),
                limits: limits(global),
            });
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
            Source::File { .. } => global.namespace.clone().unwrap_or_else(|| "default".into()),
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
    pub fn load(&self, plan: &Plan, options: LoadOptions) -> Result<Arc<Cluster>, Failure> {
        let cluster = match self {
            Source::File { path, limits } => {
                let cluster =
                    file::load_with(path, *limits, options).map_err(Failure::bad_input)?;
                // What the snapshot's own read could not see.
                for w in &cluster.meta.incomplete {
                    super::render::warn(&format!("{path} is incomplete: {w}"));
                }
                cluster
            }
            Source::Live(l) => {
                let dump = self.read_live(plan).expect("a live source")?;
                from_dump(dump, options).map_err(|e| {
                    Failure::cluster(anyhow!(
                        "the cluster at {} holds objects kubectl-sched cannot read:\n{e}",
                        l.target.server()
                    ))
                })?
            }
        };
        for w in &cluster.warnings {
            super::render::warn(w);
        }
        if cluster.nodes.is_empty() {
            let what = match self {
                Source::File { path, .. } => path.clone(),
                Source::Live(l) => format!("the cluster at {}", l.target.server()),
            };
            super::render::warn(&format!("{what} holds no Node: no pod can be placed"));
        }
        let cluster = Arc::new(cluster);
        // A command reads the cluster once and exits when it is done: freeing 150,000 pods one
        // by one on the way out cost 6 % of a 5,000-node run, for memory the process hands back
        // whole at exit anyway. Only the one-shot commands load (lease --watch does not).
        std::mem::forget(Arc::clone(&cluster));
        Ok(cluster)
    }
}

/// What reading one input may cost, from the flags.
pub fn limits(global: &GlobalArgs) -> file::Limits {
    file::Limits {
        max_input: global.max_input_size,
    }
}

/// Builds the cluster of a live read, converting pods in parallel as the file source does.
fn from_dump(
    mut dump: Dump,
    options: LoadOptions,
) -> Result<Cluster, crate::model::error::ObjectErrors> {
    use rayon::prelude::*;
    let mut builder = ClusterBuilder::new(options);
    for w in std::mem::take(&mut dump.warnings) {
        builder.warn(w);
    }
    let pods = std::mem::take(&mut dump.pods);
    for o in dump.into_objects() {
        builder.add(o);
    }
    let parse = builder.parse();
    let converted: Vec<_> = pods
        .into_par_iter()
        .map(|p| convert_pod(p, &parse))
        .collect();
    for pod in converted {
        builder.add_pod(pod);
    }
    builder.finish()
}
