//! What `whatif -f` accepts: a Pod, a workload whose pod template is placed `replicas` times, or
//! a DaemonSet, whose template the plan places once per node the DaemonSet controller picks.
//! Workload pods get the owner a real controller would give them, so default topology spreading
//! treats them as it would treat the real replicas, and a preempted one is recreated.

use super::Failure;
use crate::model::cluster::Cluster;
use crate::model::intern::Str;
use crate::model::labels::{Labels, Requirement, Selector};
use anyhow::anyhow;
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use serde_json::Value;

/// The label a Deployment's ReplicaSet adds so its selector only matches its own pods.
const POD_TEMPLATE_HASH: &str = "pod-template-hash";
const WHATIF_HASH: &str = "whatif";

pub struct Workload {
    pub pod: k8s::Pod,
    /// `spec.replicas` (a Job's or CronJob's pods at once); `None` for a bare Pod or a DaemonSet.
    pub replicas: Option<usize>,
    /// A DaemonSet's update strategy: one pod per node, not a count.
    pub daemon_set: Option<UpdateStrategy>,
    /// "Deployment web" and the like, for messages.
    pub description: Option<String>,
    /// The controller the pods would have, to register so default spreading finds it.
    owner: Option<(OwnerKind, Str, Option<Selector>, Option<Labels>)>,
}

/// `spec.updateStrategy.type` of a DaemonSet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateStrategy {
    RollingUpdate,
    /// Pods already running stay until deleted by hand.
    OnDelete,
}

#[derive(Clone, Copy)]
enum OwnerKind {
    ReplicaSet,
    StatefulSet,
    ReplicationController,
}

fn field<T: serde::de::DeserializeOwned>(
    display: &str,
    kind: &str,
    v: &Value,
    pointer: &str,
) -> Result<Option<T>, Failure> {
    match v.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => serde_json::from_value(x.clone()).map(Some).map_err(|e| {
            Failure::bad_input(anyhow!(
                "{display}: {kind}: {}: {e}",
                pointer.trim_start_matches('/').replace('/', ".")
            ))
        }),
    }
}

/// Reads a Pod or a workload's pod template.
pub fn from_value(display: &str, value: Value) -> Result<Workload, Failure> {
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Pod")
        .to_string();
    if kind == "Pod" {
        let pod = crate::source::file::typed(display, "Pod", value).map_err(Failure::bad_input)?;
        return Ok(Workload {
            pod,
            replicas: None,
            daemon_set: None,
            description: None,
            owner: None,
        });
    }
    let meta: ObjectMeta = field(display, &kind, &value, "/metadata")?.unwrap_or_default();
    let name = meta.name.clone().unwrap_or_default();
    // A CronJob's pods are those of the Job it creates from its jobTemplate.
    let job_spec = match kind.as_str() {
        "CronJob" => "/spec/jobTemplate/spec",
        _ => "/spec",
    };
    let template: k8s::PodTemplateSpec = match kind.as_str() {
        "Deployment"
        | "ReplicaSet"
        | "StatefulSet"
        | "ReplicationController"
        | "Job"
        | "CronJob"
        | "DaemonSet" => field(display, &kind, &value, &format!("{job_spec}/template"))?
            .ok_or_else(|| {
                Failure::bad_input(anyhow!(
                    "{display}: {kind} {name}: {}.template: required field is missing",
                    job_spec.trim_start_matches('/').replace('/', ".")
                ))
            })?,
        other => {
            return Err(Failure::bad_input(anyhow!(
                "{display}: expected a Pod or a workload (Deployment, ReplicaSet, StatefulSet, ReplicationController, Job, CronJob, DaemonSet), found a {other}"
            )));
        }
    };
    let count =
        |pointer: &str| -> Result<Option<i64>, Failure> { field(display, &kind, &value, pointer) };
    let replicas: Option<i64> = match kind.as_str() {
        // The Job controller runs `parallelism` pods at once (default 1), never more than the
        // completions still to go.
        "Job" | "CronJob" => {
            let parallelism = count(&format!("{job_spec}/parallelism"))?.unwrap_or(1);
            let completions = count(&format!("{job_spec}/completions"))?;
            Some(completions.map_or(parallelism, |c| c.min(parallelism)))
        }
        "DaemonSet" => None,
        _ => count("/spec/replicas")?,
    };
    let daemon_set = match kind.as_str() {
        "DaemonSet" => Some(
            match field::<String>(display, &kind, &value, "/spec/updateStrategy/type")?.as_deref() {
                None | Some("RollingUpdate") => UpdateStrategy::RollingUpdate,
                Some("OnDelete") => UpdateStrategy::OnDelete,
                Some(other) => {
                    return Err(Failure::bad_input(anyhow!(
                        "{display}: DaemonSet {name}: spec.updateStrategy.type: Unsupported value: {other:?}: supported values: \"OnDelete\", \"RollingUpdate\""
                    )));
                }
            },
        ),
        _ => None,
    };
    let selector: Option<LabelSelector> = if kind == "ReplicationController" {
        None
    } else {
        field(display, &kind, &value, "/spec/selector")?
    };
    let rc_selector: Option<std::collections::BTreeMap<String, String>> =
        if kind == "ReplicationController" {
            field(display, &kind, &value, "/spec/selector")?
        } else {
            None
        };
    let mut pod_meta = template.metadata.unwrap_or_default();
    pod_meta.namespace = meta.namespace.clone();
    pod_meta.name = Some(name.clone());
    let mut compiled = match &selector {
        Some(sel) => Some(Selector::from_label_selector(Some(sel)).map_err(|e| {
            Failure::bad_input(anyhow!("{display}: {kind} {name}: spec.selector: {e}"))
        })?),
        None => None,
    };
    let owner = match kind.as_str() {
        "Deployment" => {
            pod_meta
                .labels
                .get_or_insert_with(Default::default)
                .insert(POD_TEMPLATE_HASH.into(), WHATIF_HASH.into());
            if let Some(sel) = compiled.as_mut() {
                sel.add([Requirement::equals(
                    Str::new(POD_TEMPLATE_HASH),
                    Str::new(WHATIF_HASH),
                )]);
            }
            Some((
                OwnerKind::ReplicaSet,
                Str::new(format!("{name}-{WHATIF_HASH}")),
                compiled,
                None,
            ))
        }
        "ReplicaSet" => Some((OwnerKind::ReplicaSet, Str::new(&name), compiled, None)),
        "StatefulSet" => Some((OwnerKind::StatefulSet, Str::new(&name), compiled, None)),
        "ReplicationController" => Some((
            OwnerKind::ReplicationController,
            Str::new(&name),
            None,
            rc_selector.as_ref().map(Labels::from_map),
        )),
        _ => None,
    };
    // The controller that creates the pods: a ReplicaSet, StatefulSet or ReplicationController
    // is also registered with the cluster for default spreading (`register_owner`); a Job (a
    // CronJob's too) or a DaemonSet is only named as the pods' owner.
    let controller = match (&owner, kind.as_str()) {
        (Some((kind, owner_name, _, _)), _) => Some(match kind {
            OwnerKind::ReplicaSet => ("apps/v1", "ReplicaSet", *owner_name),
            OwnerKind::StatefulSet => ("apps/v1", "StatefulSet", *owner_name),
            OwnerKind::ReplicationController => ("v1", "ReplicationController", *owner_name),
        }),
        (None, "Job") => Some(("batch/v1", "Job", Str::new(&name))),
        (None, "CronJob") => Some(("batch/v1", "Job", Str::new(format!("{name}-{WHATIF_HASH}")))),
        (None, "DaemonSet") => Some(("apps/v1", "DaemonSet", Str::new(&name))),
        _ => None,
    };
    if let Some((api_version, kind, owner_name)) = controller {
        pod_meta.owner_references = Some(vec![OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: owner_name.to_string(),
            uid: format!("kubectl-sched-whatif-{owner_name}"),
            controller: Some(true),
            ..Default::default()
        }]);
    }
    Ok(Workload {
        pod: k8s::Pod {
            metadata: pod_meta,
            spec: template.spec,
            status: None,
        },
        replicas: replicas.map(|r| r.max(0) as usize),
        daemon_set,
        description: Some(format!("{kind} {name}")),
        owner,
    })
}

impl Workload {
    /// Registers the pods' controller with the cluster, as the real one would exist by then.
    pub fn register_owner(&self, cluster: &mut Cluster, namespace: Str) {
        let Some((kind, name, selector, rc_selector)) = &self.owner else {
            return;
        };
        let w = &mut cluster.workloads;
        let key = (namespace, *name);
        match kind {
            OwnerKind::ReplicaSet => {
                w.replica_sets
                    .entry(key)
                    .or_insert_with(|| selector.clone());
            }
            OwnerKind::StatefulSet => {
                w.stateful_sets
                    .entry(key)
                    .or_insert_with(|| selector.clone());
            }
            OwnerKind::ReplicationController => {
                w.replication_controllers
                    .entry(key)
                    .or_insert_with(|| rc_selector.clone());
            }
        }
    }
}
