//! Reading the cluster: from `--snapshot` files, or from the API server the kubeconfig names.

use super::Failure;
use crate::cli::GlobalArgs;
use crate::model::cluster::{Cluster, ClusterBuilder, ConvertedPod, convert_pod};
use crate::model::error::ObjectError;
use crate::model::parse::{LoadOptions, Parse};
use crate::source::live::{self, Plan, PodBatch, Wire};
use crate::source::{Dump, Object, events, file, protobuf};
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
    /// source, which is parsed straight into a cluster. The pods that hold resources go to
    /// `pods`, on this thread, batch by batch as their list streams in while the read goes on;
    /// the dump holds the rest.
    pub fn read_live(
        &self,
        plan: &Plan,
        pods: &mut dyn FnMut(PodBatch) -> Result<(), Failure>,
    ) -> Option<Result<Dump, Failure>> {
        let Source::Live(l) = self else { return None };
        let plan = Plan {
            progress: std::io::stderr().is_terminal(),
            ..plan.clone()
        };
        // Few batches in flight: a slow reader slows the list rather than piling it up.
        let (feed, mut batches) = tokio::sync::mpsc::channel(2);
        Some(std::thread::scope(|s| {
            let reading = s.spawn(|| l.runtime.block_on(live::read(&l.target, &plan, feed)));
            let mut failed = None;
            while let Some(batch) = batches.blocking_recv() {
                if let Err(e) = pods(batch) {
                    failed = Some(e);
                    break;
                }
            }
            // The read ends at its next batch.
            drop(batches);
            let read = reading
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            match failed {
                Some(e) => Err(e),
                None => read.map_err(Failure::live),
            }
        }))
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
                // Extenders are sent pods whole: with fields only JSON is sure to carry.
                let plan = Plan {
                    pods_as_protobuf: !options.keep_api_objects,
                    ..plan.clone()
                };
                let builder = ClusterBuilder::new(options);
                let mut pods = Vec::new();
                let parse = builder.parse();
                let dump = self
                    .read_live(&plan, &mut |batch| {
                        match batch {
                            PodBatch::Restart => pods.clear(),
                            // Shared here, on the thread that keeps them until the build.
                            PodBatch::Items(items, wire) => pods.extend(
                                convert(items, wire, &parse, l)?
                                    .into_iter()
                                    .map(|p| p.map(ConvertedPod::shared)),
                            ),
                        }
                        Ok(())
                    })
                    .expect("a live source")?;
                build(builder, dump, pods).map_err(|e| {
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

/// Pods of a live list, typed and converted in parallel as the file source does, without their
/// managedFields, as kube-scheduler's informer drops them.
fn convert(
    items: Vec<Vec<u8>>,
    wire: Wire,
    parse: &Parse,
    live: &Live,
) -> Result<Vec<Result<ConvertedPod, ObjectError>>, Failure> {
    use rayon::prelude::*;
    let failure = |e| Failure::live(live::pod_decode_error(&live.target, e));
    items
        .into_par_iter()
        .map(|mut item| match wire {
            Wire::Json => {
                live::drop_managed_fields(&mut item);
                file::list_pod(&item, parse).ok_or_else(|| {
                    failure(
                        serde_json::from_slice::<k8s_openapi::api::core::v1::Pod>(&item)
                            .err()
                            .unwrap_or_else(|| serde::de::Error::custom("not a Pod")),
                    )
                })
            }
            Wire::Protobuf => protobuf::decode_pod(&item, false)
                .map(|pod| convert_pod(pod, parse))
                .map_err(|e| failure(serde::de::Error::custom(e))),
        })
        .collect()
}

/// Builds the cluster of a live read: its pods (converted as they streamed in) after the other
/// objects, as the file source adds them; then the FailedScheduling events of its pending pods.
fn build(
    mut builder: ClusterBuilder,
    mut dump: Dump,
    pods: Vec<Result<ConvertedPod, ObjectError>>,
) -> Result<Cluster, crate::model::error::ObjectErrors> {
    for w in std::mem::take(&mut dump.warnings) {
        builder.warn(w);
    }
    // The pod explain names, when the list did not hold it: after the listed ones.
    let unlisted = std::mem::take(&mut dump.pods);
    let events = std::mem::take(&mut dump.events);
    for o in dump.into_objects() {
        builder.add(o);
    }
    for pod in pods {
        builder.add_pod(pod);
    }
    for pod in unlisted {
        builder.add(Object::Pod(Box::new(pod)));
    }
    let mut cluster = builder.finish()?;
    let pending = cluster
        .pods
        .iter()
        .chain(&cluster.terminated_pods)
        .filter(|p| p.node_name.as_ref().is_none_or(|n| n.is_empty()))
        .map(|p| (p.namespace.as_str(), p.name.as_str(), p.uid.as_str()));
    cluster.events = events::latest_of_pending(events, pending);
    Ok(cluster)
}
