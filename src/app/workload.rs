//! What `whatif -f` accepts: a Pod, a workload whose pod template is placed `replicas` times, or
//! a DaemonSet, whose template the plan places once per node the DaemonSet controller picks.
//! The manifest is decoded strictly, as `kubectl --validate=strict` sends it: a field the type
//! does not have is an error, not a silently different answer. Workload pods get the owner a real
//! controller would give them, so default topology spreading treats them as it would treat the
//! real replicas, and a preempted one is recreated. Its pod is then defaulted, validated and
//! admitted as the API server would (`load_pod`).

use super::Failure;
use super::render::warn;
use crate::model::cluster::Cluster;
use crate::model::field::{Errors, quoted};
use crate::model::intern::{Interner, Str};
use crate::model::labels::{Labels, Requirement, Selector};
use crate::model::pod::Pod;
use crate::model::{defaults, validate};
use crate::source::decode;
use anyhow::anyhow;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job, JobSpec};
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use serde_json::Value;
use std::collections::BTreeMap;

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
    /// `Deployment shop/web`: the object messages about the pod name, when it is a template.
    pub object: Option<String>,
    /// The controller the pods would have, to register so default spreading finds it.
    owner: Option<(OwnerKind, Str, Option<Selector>, Option<Labels>)>,
    /// The cluster's pod of the same namespace and name, which a Pod manifest replaces.
    pub replaces: Option<std::sync::Arc<crate::model::pod::Pod>>,
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

/// The kind of the manifest: `Pod` when it says none.
fn kind_of<'a>(display: &str, value: &'a Value) -> Result<&'a str, Failure> {
    match value.get("kind") {
        None | Some(Value::Null) => Ok("Pod"),
        Some(Value::String(kind)) => Ok(kind),
        Some(_) => Err(Failure::bad_input(anyhow!(
            "{display}: kind: expected a string"
        ))),
    }
}

/// Decodes the manifest as `T`, strictly: its apiVersion must be T's, and every field must be one
/// T has. `object` names it in messages.
fn strict<T: k8s_openapi::Resource + serde::de::DeserializeOwned>(
    display: &str,
    object: &str,
    value: &Value,
) -> Result<T, Failure> {
    let failure = |what: String| Failure::bad_input(anyhow!("{display}: {object}: {what}"));
    match value.get("apiVersion") {
        None | Some(Value::Null) => {}
        Some(Value::String(v)) if v.is_empty() || v == T::API_VERSION => {}
        Some(other) => {
            return Err(failure(format!(
                "apiVersion: unsupported value {other} for kind {} (expected {})",
                T::KIND,
                T::API_VERSION
            )));
        }
    }
    let decoded = decode::decode::<T>(value).map_err(|e| failure(e.to_string()))?;
    if !decoded.unknown.is_empty() {
        let unknown: Vec<String> = decoded.unknown.iter().map(ToString::to_string).collect();
        return Err(failure(format!(
            "strict decoding error: {}",
            unknown.join(", ")
        )));
    }
    Ok(decoded.value)
}

/// The pod template and replica count of a workload, validated as its API validation checks
/// what the scheduler relies on.
struct Template {
    meta: ObjectMeta,
    template: Option<k8s::PodTemplateSpec>,
    replicas: Option<i32>,
    selector: Option<LabelSelector>,
    daemon_set: Option<UpdateStrategy>,
    errors: Errors,
}

fn replicas_field(errors: &mut Errors, field: &str, n: Option<i32>) {
    if let Some(n) = n.filter(|n| *n < 0) {
        errors.push(
            field,
            format!("Invalid value: {n}: must be greater than or equal to 0"),
        );
    }
}

/// `ValidatePodTemplateSpecForReplicaSet` and its like: a template's restart policy.
/// `spec` is where the workload's spec is (`spec`, or a CronJob's `spec.jobTemplate.spec`).
fn restart_policy(
    errors: &mut Errors,
    spec: &str,
    template: Option<&k8s::PodTemplateSpec>,
    allowed: &[&str],
) {
    let policy = template
        .and_then(|t| t.spec.as_ref())
        .and_then(|s| s.restart_policy.as_deref());
    let field = &format!("{spec}.template.spec.restartPolicy");
    match policy {
        Some(p) => errors.one_of(field, p, allowed),
        // Workloads of replicas default to Always; a Job has no default.
        None if allowed.contains(&"Always") => {}
        None => errors.push(
            field,
            format!("Required value: valid values: {}", quoted(allowed)),
        ),
    }
}

fn template_labels(t: &Template) -> BTreeMap<String, String> {
    t.template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default()
}

/// The workload's selector must select its own template (`selector` does not match template
/// `labels`), and may not be empty.
fn selects_template(t: &mut Template, kind: &str, strings: &Interner) {
    let labels = template_labels(t);
    let Some(sel) = &t.selector else {
        t.errors.push("spec.selector", "Required value");
        return;
    };
    if sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && sel.match_expressions.as_ref().is_none_or(Vec::is_empty)
    {
        t.errors.push(
            "spec.selector",
            format!(
                "Invalid value: {{}}: empty selector is invalid for {}",
                kind.to_lowercase()
            ),
        );
        return;
    }
    match Selector::from_label_selector(Some(sel), strings) {
        Err(e) => t.errors.push("spec.selector", e),
        Ok(s) if !s.matches(&Labels::from_map(&labels, strings)) => t.errors.push(
            "spec.template.metadata.labels",
            format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                serde_json::to_string(&labels).unwrap_or_default()
            ),
        ),
        Ok(_) => {}
    }
}

fn decode_template(
    display: &str,
    object: &str,
    kind: &str,
    value: &Value,
    strings: &Interner,
) -> Result<Template, Failure> {
    let mut t = match kind {
        "Deployment" => {
            let d: Deployment = strict(display, object, value)?;
            let spec = d.spec;
            Template {
                meta: d.metadata,
                template: Some(spec.template),
                replicas: spec.replicas,
                selector: Some(spec.selector),
                daemon_set: None,
                errors: Errors::default(),
            }
        }
        "ReplicaSet" => {
            let rs: ReplicaSet = strict(display, object, value)?;
            let spec = rs.spec;
            Template {
                meta: rs.metadata,
                template: spec.template,
                replicas: spec.replicas,
                selector: Some(spec.selector),
                daemon_set: None,
                errors: Errors::default(),
            }
        }
        "StatefulSet" => {
            let ss: StatefulSet = strict(display, object, value)?;
            let spec = ss.spec;
            Template {
                meta: ss.metadata,
                template: Some(spec.template),
                replicas: spec.replicas,
                selector: Some(spec.selector),
                daemon_set: None,
                errors: Errors::default(),
            }
        }
        "ReplicationController" => {
            let rc: k8s::ReplicationController = strict(display, object, value)?;
            let spec = rc.spec.unwrap_or_default();
            Template {
                meta: rc.metadata,
                // A ReplicationController without a selector selects its template's labels.
                selector: Some(LabelSelector {
                    match_labels: spec.selector.filter(|s| !s.is_empty()).or_else(|| {
                        spec.template
                            .as_ref()
                            .and_then(|t| t.metadata.as_ref())
                            .and_then(|m| m.labels.clone())
                    }),
                    match_expressions: None,
                }),
                template: spec.template,
                replicas: spec.replicas,
                daemon_set: None,
                errors: Errors::default(),
            }
        }
        "Job" => {
            let job: Job = strict(display, object, value)?;
            job_template(job.metadata, job.spec.unwrap_or_default(), "spec")
        }
        // A CronJob's pods are those of the Job it creates from its jobTemplate.
        "CronJob" => {
            let cron: CronJob = strict(display, object, value)?;
            let spec = cron.spec.job_template.spec;
            job_template(
                cron.metadata,
                spec.unwrap_or_default(),
                "spec.jobTemplate.spec",
            )
        }
        "DaemonSet" => {
            let ds: DaemonSet = strict(display, object, value)?;
            let spec = ds.spec;
            let mut errors = Errors::default();
            let strategy = spec.update_strategy.and_then(|u| u.type_);
            let daemon_set = match strategy.as_deref() {
                None | Some("RollingUpdate") => UpdateStrategy::RollingUpdate,
                Some("OnDelete") => UpdateStrategy::OnDelete,
                Some(other) => {
                    errors.one_of(
                        "spec.updateStrategy.type",
                        other,
                        &["OnDelete", "RollingUpdate"],
                    );
                    UpdateStrategy::OnDelete
                }
            };
            Template {
                meta: ds.metadata,
                template: Some(spec.template),
                replicas: None,
                selector: Some(spec.selector),
                daemon_set: Some(daemon_set),
                errors,
            }
        }
        other => {
            return Err(Failure::bad_input(anyhow!(
                "{display}: expected a Pod or a workload (Deployment, ReplicaSet, StatefulSet, ReplicationController, Job, CronJob, DaemonSet), found a {other}"
            )));
        }
    };
    if !matches!(kind, "Job" | "CronJob") {
        replicas_field(&mut t.errors, "spec.replicas", t.replicas);
        let template = t.template.clone();
        restart_policy(&mut t.errors, "spec", template.as_ref(), &["Always"]);
        selects_template(&mut t, kind, strings);
    }
    if t.template.as_ref().is_none_or(|t| t.spec.is_none()) {
        let at = if kind == "CronJob" {
            "spec.jobTemplate.spec.template.spec"
        } else {
            "spec.template.spec"
        };
        t.errors.push(at, "Required value");
    }
    Ok(t)
}

/// A Job's pods (a CronJob's Job's too): as many at once as the Job controller runs, `parallelism`
/// (default 1) but never more than the completions still to go. `at` is where the spec is.
fn job_template(meta: ObjectMeta, spec: JobSpec, at: &str) -> Template {
    let mut errors = Errors::default();
    replicas_field(&mut errors, &format!("{at}.parallelism"), spec.parallelism);
    replicas_field(&mut errors, &format!("{at}.completions"), spec.completions);
    restart_policy(
        &mut errors,
        at,
        Some(&spec.template),
        &["OnFailure", "Never"],
    );
    let parallelism = spec.parallelism.unwrap_or(1);
    Template {
        meta,
        template: Some(spec.template),
        replicas: Some(spec.completions.map_or(parallelism, |c| c.min(parallelism))),
        selector: None,
        daemon_set: None,
        errors,
    }
}

/// Reads a Pod or a workload's pod template; `namespace` is where an object without one goes.
pub fn from_value(
    display: &str,
    value: Value,
    namespace: &str,
    strings: &Interner,
) -> Result<Workload, Failure> {
    let kind = kind_of(display, &value)?.to_string();
    let meta = value.get("metadata");
    let field = |key: &str| {
        meta.and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let object = format!(
        "{kind} {}/{}",
        field("namespace").unwrap_or(namespace),
        field("name").or(field("generateName")).unwrap_or("")
    );
    if kind == "Pod" {
        return Ok(Workload {
            pod: strict(display, &object, &value)?,
            replicas: None,
            daemon_set: None,
            description: None,
            object: None,
            owner: None,
            replaces: None,
        });
    }
    let t = decode_template(display, &object, &kind, &value, strings)?;
    if !t.errors.0.is_empty() {
        return Err(Failure::bad_input(anyhow!(
            "{display}: {object} is invalid:\n  {}",
            t.errors.to_string().replace('\n', "\n  ")
        )));
    }
    let name = t.meta.name.clone().unwrap_or_default();
    let template = t.template.unwrap_or_default();
    let mut compiled = match (&t.selector, kind.as_str()) {
        (_, "ReplicationController" | "Job" | "CronJob" | "DaemonSet") | (None, _) => None,
        (Some(sel), _) => Selector::from_label_selector(Some(sel), strings).ok(),
    };
    let mut pod_meta = template.metadata.unwrap_or_default();
    pod_meta.namespace = t.meta.namespace.clone();
    pod_meta.name = Some(name.clone());
    let rc_selector = t.selector.as_ref().and_then(|s| s.match_labels.as_ref());
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
            rc_selector.map(|l| Labels::from_map(l, strings)),
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
        // Validated non-negative above.
        replicas: t
            .daemon_set
            .is_none()
            .then(|| usize::try_from(t.replicas.unwrap_or(1)).unwrap_or(0)),
        daemon_set: t.daemon_set,
        description: Some(format!("{kind} {name}")),
        object: Some(object),
        owner,
        replaces: None,
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

/// Defaults, validates and admits the pod of the `-f` object as the API server would: a pod
/// without a namespace goes to `namespace` (the context's), and one in another namespace than
/// `-n` is refused as kubectl refuses it.
pub fn load_pod(
    (display, value): (String, serde_json::Value),
    namespace_flag: Option<&str>,
    namespace: &str,
    cluster: &Cluster,
) -> Result<(Pod, Workload), Failure> {
    let mut w = from_value(&display, value, namespace, &cluster.strings)?;
    let exported = if w.object.is_none() {
        as_new(&mut w.pod)
    } else {
        Vec::new()
    };
    let pod = &mut w.pod;
    if pod.metadata.name.as_deref().is_none_or(str::is_empty)
        && let Some(prefix) = pod.metadata.generate_name.clone()
    {
        pod.metadata.name = Some(format!("{prefix}whatif"));
    }
    if let (Some(flag), Some(own)) = (namespace_flag, pod.metadata.namespace.as_deref())
        && flag != own
    {
        return Err(Failure::bad_input(anyhow!(
            "{display}: the namespace from the provided object {own:?} does not match the namespace {flag:?}. You must pass '--namespace={own}' to perform this operation."
        )));
    }
    defaults::pod(pod, namespace);
    if w.object.is_none() {
        let (ns, name) = (
            pod.metadata.namespace.as_deref().unwrap_or(namespace),
            pod.metadata.name.as_deref().unwrap_or(""),
        );
        w.replaces = cluster.find_pod(ns, name).cloned();
        if let Some(note) = new_pod_note(&exported, w.replaces.as_deref()) {
            warn(&format!("{display}: Pod {ns}/{name} {note}"));
        }
    }
    let pod = &mut w.pod;
    let object = w.object.clone().unwrap_or_else(|| {
        format!(
            "Pod {}/{}",
            pod.metadata.namespace.as_deref().unwrap_or(""),
            pod.metadata.name.as_deref().unwrap_or("")
        )
    });
    let refused =
        |reason: String| Failure::bad_input(anyhow!("{display}: {object} is forbidden: {reason}",));
    validate::pod(pod).map_err(|errors| {
        // A template's errors are the workload's, at the template's place in it; its name and
        // namespace are the workload's own.
        let errors = match &w.object {
            None => errors,
            Some(_) => Errors(
                errors
                    .0
                    .into_iter()
                    .map(|e| match e.field.as_str() {
                        "metadata.name" | "metadata.namespace" => e,
                        _ => Errors(vec![e]).within("spec.template").0.remove(0),
                    })
                    .collect(),
            ),
        };
        Failure::bad_input(anyhow!(
            "{display}: {object} is invalid:\n  {}",
            errors.to_string().replace('\n', "\n  ")
        ))
    })?;
    let classes: Vec<_> = cluster
        .priority_classes
        .iter()
        .map(|c| k8s_openapi::api::scheduling::v1::PriorityClass {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(c.name.to_string()),
                ..Default::default()
            },
            value: Some(c.value),
            global_default: Some(c.global_default),
            preemption_policy: Some(
                if c.preemption_never {
                    "Never"
                } else {
                    "PreemptLowerPriority"
                }
                .to_string(),
            ),
            ..Default::default()
        })
        .collect();
    defaults::admit_priority(pod, &classes).map_err(|defaults::Refused(r)| refused(r))?;
    if let Some(warning) = defaults::admit_runtime_class(pod, &cluster.runtime_classes)
        .map_err(|defaults::Refused(r)| refused(r))?
    {
        warn(&format!("{display}: {warning}"));
    }
    let parsed = Pod::from_k8s(pod, &cluster.parse())
        .map_err(|e| Failure::bad_input(anyhow!("{display}: {e}")))?;
    Ok((parsed, w))
}

/// Clears what a bound pod read back from a cluster carries (`kubectl get pod -o yaml`): its
/// node, status and identity, so it is scheduled as a new pod rather than pinned to its old
/// node. A `spec.nodeName` without the marks of an exported object (uid, resourceVersion,
/// creationTimestamp, managedFields) is a manifest's own and stays: the NodeName plugin reads it.
/// Returns the fields that were set.
fn as_new(pod: &mut k8s_openapi::api::core::v1::Pod) -> Vec<&'static str> {
    let m = &pod.metadata;
    let exported = m.uid.is_some()
        || m.resource_version.is_some()
        || m.creation_timestamp.is_some()
        || m.managed_fields.is_some();
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if !(exported && bound) {
        return Vec::new();
    }
    let mut dropped = vec!["spec.nodeName"];
    let mut drop = |set: bool, field: &'static str| {
        if set {
            dropped.push(field);
        }
    };
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = None;
    }
    drop(pod.status.take().is_some(), "status");
    let m = &mut pod.metadata;
    drop(m.uid.take().is_some(), "metadata.uid");
    drop(
        m.resource_version.take().is_some(),
        "metadata.resourceVersion",
    );
    drop(
        m.creation_timestamp.take().is_some(),
        "metadata.creationTimestamp",
    );
    drop(m.managed_fields.take().is_some(), "metadata.managedFields");
    drop(
        m.deletion_timestamp.take().is_some(),
        "metadata.deletionTimestamp",
    );
    drop(m.generation.take().is_some(), "metadata.generation");
    dropped
}

/// The one line that says a pod is placed as new: what was dropped from it, and the bound pod
/// of the cluster it replaces (replacing a pending one changes nothing worth a line).
fn new_pod_note(dropped: &[&str], replaces: Option<&Pod>) -> Option<String> {
    let replaced = replaces
        .and_then(|p| p.node_name)
        .map(|node| format!("it replaces the cluster's pod of that name, taken off {node} first"));
    match (dropped, replaced) {
        ([], None) => None,
        ([], Some(r)) => Some(format!("is placed as a new pod: {r}")),
        (d, r) => Some(format!(
            "is placed as a new pod, without its {}{}",
            d.join(", "),
            r.map(|r| format!("; {r}")).unwrap_or_default()
        )),
    }
}
