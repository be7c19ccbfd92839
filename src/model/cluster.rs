//! The whole cluster state, defaulted, validated and parsed once: what every scheduling cycle
//! reads. Built from a `Dump`, whichever source produced it.

use super::defaults;
use super::dump::{Dump, Object, SnapshotMeta};
use super::error::{ObjectError, ObjectErrors};
use super::field;
use super::intern::{Interner, Str};
use super::labels::{Labels, Selector};
use super::node::Node;
use super::parse::{LoadOptions, Parse};
use super::pod::Pod;
use super::validate::{self, dump};
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriorityClassInfo {
    pub name: Str,
    pub value: i32,
    pub global_default: bool,
    pub preemption_never: bool,
}

/// A PodDisruptionBudget as preemption reads it.
#[derive(Clone, Debug)]
pub struct Pdb {
    pub namespace: Str,
    pub name: Str,
    /// `None` when the selector does not parse; such a PDB protects nothing, as upstream.
    pub selector: Option<Selector>,
    pub disruptions_allowed: i32,
    /// `status.disruptedPods`: pods already being evicted.
    pub disrupted_pods: Vec<Str>,
    /// `status.currentHealthy` and `status.desiredHealthy`: the eviction API lets an unready pod
    /// go when the budget is met.
    pub current_healthy: i32,
    pub desired_healthy: i32,
    /// `spec.unhealthyPodEvictionPolicy: AlwaysAllow`: unready pods may always be evicted.
    pub unhealthy_always_allow: bool,
}

/// A VolumeAttachment as NodeVolumeLimits reads it: which driver attached which PV.
#[derive(Clone, Debug)]
pub struct VolumeAttachment {
    pub attacher: Str,
    pub persistent_volume: Option<Str>,
}

/// Selectors of the objects that drive the system default topology spreading.
#[derive(Clone, Debug, Default)]
pub struct Workloads {
    /// Per namespace: each Service's selector (`None` for a Service without one).
    pub services: HashMap<Str, Vec<Option<Labels>>>,
    pub replication_controllers: HashMap<(Str, Str), Option<Labels>>,
    pub replica_sets: HashMap<(Str, Str), Option<Selector>>,
    pub stateful_sets: HashMap<(Str, Str), Option<Selector>>,
    /// Every controller object read (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs,
    /// CronJobs, ReplicationControllers), with the controller that owns it: how `explain
    /// deploy/NAME` finds a Deployment's pods through its ReplicaSets.
    pub controllers: HashMap<Controller, Option<(Str, Str)>>,
}

/// A controller object by kind, namespace and name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Controller {
    pub kind: Str,
    pub namespace: Str,
    pub name: Str,
}

impl Controller {
    fn of(kind: &str, meta: &ObjectMeta, strings: &Interner) -> (Controller, Option<(Str, Str)>) {
        let (namespace, name) = ns_name(meta, strings);
        let owner = meta
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| (strings.intern(&o.kind), strings.intern(&o.name)));
        (
            Controller {
                kind: strings.intern(kind),
                namespace,
                name,
            },
            owner,
        )
    }
}

#[derive(Clone, Debug, Default)]
pub struct Cluster {
    pub nodes: Vec<Arc<Node>>,
    /// Every pod of the dump that is not Succeeded or Failed.
    pub pods: Vec<Arc<Pod>>,
    /// Succeeded/Failed pods, kept only so `explain` can say why they are ignored.
    pub terminated_pods: Vec<Arc<Pod>>,
    pub namespaces: HashMap<Str, Labels>,
    pub priority_classes: Vec<PriorityClassInfo>,
    pub pdbs: Vec<Pdb>,
    pub pvcs: HashMap<(Str, Str), Arc<k8s::PersistentVolumeClaim>>,
    pub pvs: HashMap<Str, Arc<k8s::PersistentVolume>>,
    pub storage_classes: HashMap<Str, Arc<StorageClass>>,
    pub csi_nodes: HashMap<Str, Arc<CSINode>>,
    pub csi_drivers: HashMap<Str, Arc<CSIDriver>>,
    pub csi_storage_capacities: Vec<Arc<CSIStorageCapacity>>,
    /// VolumeAttachments by node name.
    pub volume_attachments: HashMap<Str, Vec<VolumeAttachment>>,
    pub workloads: Workloads,
    /// RuntimeClasses by name: what RuntimeClass admission adds to a pod naming one.
    pub runtime_classes: HashMap<Str, Arc<RuntimeClass>>,
    pub leases: Vec<k8s_openapi::api::coordination::v1::Lease>,
    pub lease_candidates: Vec<serde_json::Value>,
    pub events: Vec<k8s::Event>,
    /// DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates.
    pub dra: Arc<super::dra::objects::Dra>,
    pub meta: SnapshotMeta,
    pub warnings: Vec<String>,
    /// The strings of the load: what reads more objects into the cluster interns through, and
    /// where a name from outside is looked up.
    pub strings: Arc<Interner>,
    /// How the load parsed objects, for objects read later (`parse`).
    pub load_options: LoadOptions,
}

fn ns_name(meta: &ObjectMeta, strings: &Interner) -> (Str, Str) {
    (
        strings.intern(meta.namespace.as_deref().unwrap_or("default")),
        strings.intern(meta.name.as_deref().unwrap_or("")),
    )
}

fn label_selector(
    kind: &'static str,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    sel: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    errors: &mut Vec<ObjectError>,
    strings: &Interner,
) -> Option<Selector> {
    match Selector::from_label_selector(sel, strings) {
        Ok(s) => Some(s),
        Err(e) => {
            let (ns, name) = ns_name(meta, strings);
            errors.push(ObjectError::new(
                kind,
                format!("{ns}/{name}"),
                "spec.selector",
                e,
            ));
            None
        }
    }
}

/// A pod converted before the PriorityClasses were known: Priority admission still to apply.
struct PendingAdmission {
    pod: usize,
    class: Option<Str>,
    /// `spec.preemptionPolicy` was set on the pod itself.
    policy_set: bool,
}

/// A pod parsed from its API object, with what Priority admission still has to decide.
pub struct ConvertedPod {
    pod: HeldPod,
    needs_admission: Option<(Option<Str>, bool)>,
    /// What the API server would have refused in it.
    invalid: Option<field::Errors>,
}

/// A converted pod as it waits for the builder. Put behind its `Arc` on the thread that keeps
/// it, not on the worker that converted it: there it would sit among the typed objects freed
/// after it, in pages that stay half used for the rest of the run (14 MiB at 5,000 nodes).
enum HeldPod {
    /// Added to the builder at once (a file's batch).
    Owned(Box<Pod>),
    /// Held until the cluster is built (a live read's pods, `ConvertedPod::shared`): moved into
    /// its `Arc` then, all of them would be in memory twice.
    Shared(Arc<Pod>),
}

impl ConvertedPod {
    /// The pod, for callers that set its priority themselves.
    pub fn into_pod(self) -> Pod {
        match self.pod {
            HeldPod::Owned(p) => *p,
            HeldPod::Shared(p) => Arc::unwrap_or_clone(p),
        }
    }

    /// The pod behind its `Arc` now, on the calling thread: for a source that holds converted
    /// pods until it builds the cluster.
    pub fn shared(self) -> ConvertedPod {
        ConvertedPod {
            pod: HeldPod::Shared(self.pod.into_arc()),
            ..self
        }
    }
}

impl HeldPod {
    fn get(&self) -> &Pod {
        match self {
            HeldPod::Owned(p) => p,
            HeldPod::Shared(p) => p,
        }
    }

    fn into_arc(self) -> Arc<Pod> {
        match self {
            HeldPod::Owned(p) => Arc::new(*p),
            HeldPod::Shared(p) => p,
        }
    }
}

/// API defaulting and parsing of one pod. Pure, so sources can run it in parallel while they read;
/// Priority admission waits for `ClusterBuilder::finish`, when every PriorityClass is known.
pub fn convert_pod(mut p: k8s::Pod, parse: &Parse) -> Result<ConvertedPod, ObjectError> {
    defaults::pod(&mut p, "default");
    let spec = p.spec.as_ref();
    let needs_admission = match spec {
        Some(s) if s.priority.is_none() => Some((
            s.priority_class_name
                .as_deref()
                .filter(|n| !n.is_empty())
                .map(|n| parse.strings.intern(n)),
            s.preemption_policy.is_some(),
        )),
        _ => None,
    };
    Ok(ConvertedPod {
        invalid: validate::pod(&p).err(),
        pod: HeldPod::Owned(Box::new(Pod::from_k8s(&p, parse)?)),
        needs_admission,
    })
}

/// Invalid objects reported one by one, up to this many; the rest are counted.
const INVALID_SHOWN: usize = 50;

/// Builds a `Cluster` object by object, so a source never has to hold every API object at once.
pub struct ClusterBuilder {
    cluster: Cluster,
    pods: Vec<Arc<Pod>>,
    pending: Vec<PendingAdmission>,
    errors: Vec<ObjectError>,
    /// Every object by kind, namespace and name: the API server holds one of each.
    seen: rustc_hash::FxHashSet<(&'static str, Str, Str)>,
    /// Field errors of objects the API server would have refused, and how many there are.
    invalid: (Vec<String>, usize),
    dra: super::dra::objects::DraBuilder,
}

/// `namespace/name`, or `name` for a cluster-scoped object.
fn object_key(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

impl ClusterBuilder {
    /// A builder with its own interner.
    pub fn new(options: LoadOptions) -> ClusterBuilder {
        ClusterBuilder {
            cluster: Cluster {
                load_options: options,
                ..Cluster::default()
            },
            pods: Vec::new(),
            pending: Vec::new(),
            errors: Vec::new(),
            seen: Default::default(),
            invalid: Default::default(),
            dra: Default::default(),
        }
    }

    /// How this load parses objects; pods may be converted on other threads with it
    /// (`convert_pod`) before they are added.
    pub fn parse(&self) -> Parse<'_> {
        self.cluster.parse()
    }

    pub fn warn(&mut self, warning: String) {
        self.cluster.warnings.push(warning);
    }

    /// Refuses a second object of the same kind and name: which copy is the cluster's is
    /// unknowable, and keeping both would count one pod twice.
    fn first(&mut self, kind: &'static str, namespace: Option<&str>, name: &str) -> bool {
        let strings = &self.cluster.strings;
        let (ns, name) = (
            strings.intern(namespace.unwrap_or("")),
            strings.intern(name),
        );
        self.first_of(kind, namespace.is_some(), ns, name)
    }

    /// `first` for a namespace and name already interned.
    fn first_of(
        &mut self,
        kind: &'static str,
        namespaced: bool,
        namespace: Str,
        name: Str,
    ) -> bool {
        if self.seen.insert((kind, namespace, name)) {
            return true;
        }
        self.errors.push(ObjectError::new(
            kind,
            object_key(namespaced.then_some(namespace.as_str()), &name),
            "metadata.name",
            "appears more than once",
        ));
        false
    }

    /// Notes what the API server would have refused in an object; it is read all the same.
    fn check(
        &mut self,
        kind: &'static str,
        meta: &ObjectMeta,
        namespaced: bool,
        result: Result<(), field::Errors>,
    ) {
        let Err(errors) = result else { return };
        let object = object_key(
            namespaced.then(|| meta.namespace.as_deref().unwrap_or("default")),
            meta.name.as_deref().unwrap_or(""),
        );
        self.invalid(kind, &object, errors);
    }

    fn invalid(&mut self, kind: &str, object: &str, errors: field::Errors) {
        let (shown, total) = &mut self.invalid;
        for e in errors.0 {
            *total += 1;
            if shown.len() < INVALID_SHOWN {
                shown.push(format!("{kind} {object}: {e}"));
            }
        }
    }

    /// Quantities that must parse for the answer to mean anything: their errors are the load's.
    fn amounts(
        &mut self,
        kind: &'static str,
        meta: &ObjectMeta,
        result: Result<(), field::Errors>,
    ) {
        let Err(errors) = result else { return };
        let (ns, name) = ns_name(meta, &self.cluster.strings);
        let object = match kind {
            "PersistentVolume" => name.to_string(),
            _ => format!("{ns}/{name}"),
        };
        self.errors.extend(
            errors
                .0
                .into_iter()
                .map(|e| ObjectError::of(kind, object.clone(), e)),
        );
    }

    pub fn add_pod(&mut self, converted: Result<ConvertedPod, ObjectError>) {
        match converted {
            Ok(c) => {
                let pod = c.pod.get();
                if !self.first_of("Pod", true, pod.namespace, pod.name) {
                    return;
                }
                if let Some(errors) = c.invalid {
                    self.invalid("Pod", &pod.key(), errors);
                }
                if let Some((class, policy_set)) = c.needs_admission {
                    self.pending.push(PendingAdmission {
                        pod: self.pods.len(),
                        class,
                        policy_set,
                    });
                }
                self.pods.push(c.pod.into_arc());
            }
            Err(e) => self.errors.push(e),
        }
    }

    /// Whether an object is the first of its kind and name; notes what the API server would have
    /// refused in it.
    fn admit(&mut self, object: &Object) -> bool {
        let (kind, meta, namespaced): (&'static str, &ObjectMeta, bool) = match object {
            Object::Node(x) => ("Node", &x.metadata, false),
            Object::Namespace(x) => ("Namespace", &x.metadata, false),
            Object::PriorityClass(x) => ("PriorityClass", &x.metadata, false),
            Object::Pdb(x) => ("PodDisruptionBudget", &x.metadata, true),
            Object::Pvc(x) => ("PersistentVolumeClaim", &x.metadata, true),
            Object::Pv(x) => ("PersistentVolume", &x.metadata, false),
            Object::StorageClass(x) => ("StorageClass", &x.metadata, false),
            Object::CsiNode(x) => ("CSINode", &x.metadata, false),
            Object::CsiDriver(x) => ("CSIDriver", &x.metadata, false),
            Object::CsiStorageCapacity(x) => ("CSIStorageCapacity", &x.metadata, true),
            Object::VolumeAttachment(x) => ("VolumeAttachment", &x.metadata, false),
            Object::Service(x) => ("Service", &x.metadata, true),
            Object::ReplicationController(x) => ("ReplicationController", &x.metadata, true),
            Object::ReplicaSet(x) => ("ReplicaSet", &x.metadata, true),
            Object::StatefulSet(x) => ("StatefulSet", &x.metadata, true),
            Object::Deployment(x) => ("Deployment", &x.metadata, true),
            Object::DaemonSet(x) => ("DaemonSet", &x.metadata, true),
            Object::Job(x) => ("Job", &x.metadata, true),
            Object::CronJob(x) => ("CronJob", &x.metadata, true),
            Object::RuntimeClass(x) => ("RuntimeClass", &x.metadata, false),
            Object::Lease(x) => ("Lease", &x.metadata, true),
            Object::Event(x) => ("Event", &x.metadata, true),
            Object::DeviceClass(x) => ("DeviceClass", &x.metadata, false),
            Object::ResourceSlice(x) => ("ResourceSlice", &x.metadata, false),
            Object::ResourceClaim(x) => ("ResourceClaim", &x.metadata, true),
            Object::ResourceClaimTemplate(x) => ("ResourceClaimTemplate", &x.metadata, true),
            Object::Pod(_) | Object::LeaseCandidate(_) | Object::SnapshotInfo(_) => return true,
        };
        let namespace = namespaced.then(|| meta.namespace.as_deref().unwrap_or("default"));
        if !self.first(kind, namespace, meta.name.as_deref().unwrap_or("")) {
            return false;
        }
        let result = match object {
            Object::Node(x) => dump::node(x),
            Object::Namespace(x) => dump::namespace(x),
            Object::PriorityClass(x) => dump::priority_class(x),
            Object::Pdb(x) => dump::pdb(x),
            Object::Pvc(x) => {
                let requests = x
                    .spec
                    .as_ref()
                    .and_then(|s| s.resources.as_ref())
                    .and_then(|r| r.requests.as_ref());
                self.amounts(
                    kind,
                    meta,
                    dump::amounts("spec.resources.requests", requests),
                );
                dump::pvc(x)
            }
            Object::Pv(x) => {
                let capacity = x.spec.as_ref().and_then(|s| s.capacity.as_ref());
                self.amounts(kind, meta, dump::amounts("spec.capacity", capacity));
                dump::pv(x)
            }
            Object::StorageClass(x) => dump::storage_class(x),
            _ => Ok(()),
        };
        self.check(kind, meta, namespaced, result);
        true
    }

    pub fn add(&mut self, object: Object) {
        if !self.admit(&object) {
            return;
        }
        let strings = self.cluster.strings.clone();
        let parse = Parse {
            strings: &strings,
            keep_api_objects: self.cluster.load_options.keep_api_objects,
        };
        let c = &mut self.cluster;
        match object {
            Object::Pod(p) => self.add_pod(convert_pod(*p, &parse)),
            Object::Node(n) => match Node::from_k8s(&n, &parse) {
                Ok(node) => c.nodes.push(Arc::new(node)),
                Err(e) => self.errors.push(e),
            },
            Object::PriorityClass(pc) => c.priority_classes.push(PriorityClassInfo {
                name: strings.intern(pc.metadata.name.as_deref().unwrap_or("")),
                value: pc.value.unwrap_or(0),
                global_default: pc.global_default == Some(true),
                preemption_never: pc.preemption_policy.as_deref() == Some("Never"),
            }),
            Object::Namespace(mut ns) => {
                defaults::namespace(&mut ns);
                let name = strings.intern(ns.metadata.name.as_deref().unwrap_or(""));
                c.namespaces.insert(
                    name,
                    ns.metadata
                        .labels
                        .as_ref()
                        .map(|l| Labels::from_map(l, &strings))
                        .unwrap_or_default(),
                );
            }
            Object::Pdb(pdb) => {
                let (namespace, name) = ns_name(&pdb.metadata, &strings);
                let selector = label_selector(
                    "PodDisruptionBudget",
                    &pdb.metadata,
                    pdb.spec.as_ref().and_then(|s| s.selector.as_ref()),
                    &mut self.errors,
                    &strings,
                );
                let status = pdb.status.as_ref();
                c.pdbs.push(Pdb {
                    namespace,
                    name,
                    selector,
                    disruptions_allowed: status.and_then(|s| s.disruptions_allowed).unwrap_or(0),
                    disrupted_pods: status
                        .and_then(|s| s.disrupted_pods.as_ref())
                        .map(|m| m.keys().map(|x| strings.intern(x)).collect())
                        .unwrap_or_default(),
                    current_healthy: status.and_then(|s| s.current_healthy).unwrap_or(0),
                    desired_healthy: status.and_then(|s| s.desired_healthy).unwrap_or(0),
                    unhealthy_always_allow: pdb
                        .spec
                        .as_ref()
                        .and_then(|s| s.unhealthy_pod_eviction_policy.as_deref())
                        == Some("AlwaysAllow"),
                });
            }
            Object::Pvc(pvc) => {
                c.pvcs
                    .insert(ns_name(&pvc.metadata, &strings), Arc::new(*pvc));
            }
            Object::Pv(pv) => {
                c.pvs.insert(
                    strings.intern(pv.metadata.name.as_deref().unwrap_or("")),
                    Arc::new(*pv),
                );
            }
            Object::StorageClass(mut sc) => {
                defaults::storage_class(&mut sc);
                c.storage_classes.insert(
                    strings.intern(sc.metadata.name.as_deref().unwrap_or("")),
                    Arc::new(*sc),
                );
            }
            Object::CsiNode(n) => {
                c.csi_nodes.insert(
                    strings.intern(n.metadata.name.as_deref().unwrap_or("")),
                    Arc::new(*n),
                );
            }
            Object::CsiDriver(d) => {
                c.csi_drivers.insert(
                    strings.intern(d.metadata.name.as_deref().unwrap_or("")),
                    Arc::new(*d),
                );
            }
            Object::CsiStorageCapacity(cap) => c.csi_storage_capacities.push(Arc::new(*cap)),
            Object::VolumeAttachment(va) => {
                let spec = &va.spec;
                c.volume_attachments
                    .entry(strings.intern(&spec.node_name))
                    .or_default()
                    .push(VolumeAttachment {
                        attacher: strings.intern(&spec.attacher),
                        persistent_volume: spec
                            .source
                            .persistent_volume_name
                            .as_deref()
                            .map(|x| strings.intern(x)),
                    });
            }
            Object::Service(svc) => {
                let (ns, _) = ns_name(&svc.metadata, &strings);
                let selector = svc
                    .spec
                    .as_ref()
                    .and_then(|s| s.selector.as_ref())
                    .map(|l| Labels::from_map(l, &strings));
                c.workloads.services.entry(ns).or_default().push(selector);
            }
            Object::ReplicationController(rc) => {
                c.controller("ReplicationController", &rc.metadata);
                let selector = rc
                    .spec
                    .as_ref()
                    .and_then(|s| s.selector.as_ref())
                    .map(|l| Labels::from_map(l, &strings));
                c.workloads
                    .replication_controllers
                    .insert(ns_name(&rc.metadata, &strings), selector);
            }
            Object::ReplicaSet(rs) => {
                c.controller("ReplicaSet", &rs.metadata);
                let sel = label_selector(
                    "ReplicaSet",
                    &rs.metadata,
                    Some(&rs.spec.selector),
                    &mut self.errors,
                    &strings,
                );
                c.workloads
                    .replica_sets
                    .insert(ns_name(&rs.metadata, &strings), sel);
            }
            Object::StatefulSet(ss) => {
                c.controller("StatefulSet", &ss.metadata);
                let sel = label_selector(
                    "StatefulSet",
                    &ss.metadata,
                    Some(&ss.spec.selector),
                    &mut self.errors,
                    &strings,
                );
                c.workloads
                    .stateful_sets
                    .insert(ns_name(&ss.metadata, &strings), sel);
            }
            Object::Deployment(x) => c.controller("Deployment", &x.metadata),
            Object::DaemonSet(x) => c.controller("DaemonSet", &x.metadata),
            Object::Job(x) => c.controller("Job", &x.metadata),
            Object::CronJob(x) => c.controller("CronJob", &x.metadata),
            Object::RuntimeClass(rc) => {
                c.runtime_classes.insert(
                    strings.intern(rc.metadata.name.as_deref().unwrap_or("")),
                    Arc::new(*rc),
                );
            }
            Object::Lease(l) => c.leases.push(*l),
            Object::LeaseCandidate(l) => c.lease_candidates.push(*l),
            Object::Event(e) => c.events.push(*e),
            Object::DeviceClass(x) => self.dra.add_class(*x),
            Object::ResourceSlice(x) => self.dra.add_slice(*x),
            Object::ResourceClaim(x) => self.dra.add_claim(*x),
            Object::ResourceClaimTemplate(x) => self.dra.add_template(*x),
            Object::SnapshotInfo(meta) => c.meta = *meta,
        }
    }

    /// Applies Priority admission to the pods that need it and reports every broken object.
    pub fn finish(mut self) -> Result<Cluster, ObjectErrors> {
        let (shown, total) = std::mem::take(&mut self.invalid);
        for line in &shown {
            self.cluster.warnings.push(format!(
                "{line} (the API server refuses this; read the way kube-scheduler reads it)"
            ));
        }
        if total > shown.len() {
            self.cluster.warnings.push(format!(
                "and {} more fields of objects the API server would refuse",
                total - shown.len()
            ));
        }
        for p in std::mem::take(&mut self.pending) {
            // Only the builder holds its pods: nothing is copied.
            let pod = Arc::make_mut(&mut self.pods[p.pod]);
            let class = match p.class {
                Some(name) => match self
                    .cluster
                    .priority_classes
                    .iter()
                    .find(|c| c.name == name)
                {
                    Some(c) => Some((c.value, c.preemption_never)),
                    None => match [
                        defaults::SYSTEM_CLUSTER_CRITICAL,
                        defaults::SYSTEM_NODE_CRITICAL,
                    ]
                    .iter()
                    .find(|(n, _)| *n == name.as_str())
                    {
                        Some((_, v)) => Some((*v, false)),
                        None => {
                            // A pod that exists was admitted once; its class has since been deleted.
                            self.cluster.warnings.push(format!(
                                "pod {}: PriorityClass {:?} not found, priority taken as 0",
                                pod.key(),
                                name.as_str()
                            ));
                            None
                        }
                    },
                },
                None => self
                    .cluster
                    .priority_classes
                    .iter()
                    .filter(|c| c.global_default)
                    .min_by_key(|c| c.value)
                    .map(|c| {
                        pod.priority_class_name = Some(c.name);
                        (c.value, c.preemption_never)
                    }),
            };
            let (value, never) = class.unwrap_or((0, false));
            pod.priority = value;
            if !p.policy_set {
                pod.preemption_never = never;
            }
        }
        self.cluster.dra = Arc::new(self.dra.finish(&mut self.errors, &self.cluster.strings));
        if !self.errors.is_empty() {
            return Err(ObjectErrors(self.errors));
        }
        let mut cluster = self.cluster;
        for pod in self.pods {
            if pod.is_terminated() {
                cluster.terminated_pods.push(pod);
            } else {
                cluster.pods.push(pod);
            }
        }
        Ok(cluster)
    }
}

impl Cluster {
    fn controller(&mut self, kind: &str, meta: &ObjectMeta) {
        let (key, owner) = Controller::of(kind, meta, &self.strings);
        self.workloads.controllers.insert(key, owner);
    }

    /// Defaults, admits and parses every object; reports every broken object, not just the first.
    pub fn from_dump(dump: Dump, options: LoadOptions) -> Result<Cluster, ObjectErrors> {
        let mut b = ClusterBuilder::new(options);
        for w in &dump.warnings {
            b.warn(w.clone());
        }
        for o in dump.into_objects() {
            b.add(o);
        }
        b.finish()
    }

    pub fn node(&self, name: &str) -> Option<&Arc<Node>> {
        self.nodes.iter().find(|n| n.name.as_str() == name)
    }

    pub fn find_pod(&self, namespace: &str, name: &str) -> Option<&Arc<Pod>> {
        self.pods
            .iter()
            .chain(self.terminated_pods.iter())
            .find(|p| p.namespace.as_str() == namespace && p.name.as_str() == name)
    }

    /// How to parse more objects as this cluster's were parsed (the pod of `-f`).
    pub fn parse(&self) -> Parse<'_> {
        Parse {
            strings: &self.strings,
            keep_api_objects: self.load_options.keep_api_objects,
        }
    }

    pub fn namespace_labels(&self, ns: Str) -> Labels {
        self.namespaces.get(&ns).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: &str, v: serde_json::Value) -> Object {
        Object::deserialize(kind, v).unwrap().unwrap()
    }

    #[test]
    fn a_second_object_of_a_kind_and_name_is_refused() {
        use serde_json::json;
        let mut b = ClusterBuilder::new(LoadOptions::default());
        for _ in 0..2 {
            b.add(object(
                "PriorityClass",
                json!({"metadata": {"name": "high"}, "value": 1}),
            ));
            b.add(object(
                "PersistentVolumeClaim",
                json!({"metadata": {"name": "c", "namespace": "ns"}}),
            ));
            b.add(object("Namespace", json!({"metadata": {"name": "ns"}})));
        }
        // The same name in another namespace is another object.
        b.add(object(
            "PersistentVolumeClaim",
            json!({"metadata": {"name": "c", "namespace": "other"}}),
        ));
        let errors = b.finish().unwrap_err().to_string();
        assert_eq!(
            errors,
            "PriorityClass high: metadata.name: appears more than once\nPersistentVolumeClaim ns/c: metadata.name: appears more than once\nNamespace ns: metadata.name: appears more than once"
        );
    }

    #[test]
    fn invalid_objects_are_warnings_counted_past_a_few() {
        use serde_json::json;
        let mut b = ClusterBuilder::new(LoadOptions::default());
        for i in 0..INVALID_SHOWN + 5 {
            b.add(object(
                "Namespace",
                json!({"metadata": {"name": format!("Bad_{i}")}}),
            ));
        }
        let c = b.finish().unwrap();
        assert_eq!(c.warnings.len(), INVALID_SHOWN + 1);
        assert!(
            c.warnings[0].starts_with("Namespace Bad_0: metadata.name: Invalid value: \"Bad_0\"")
        );
        assert_eq!(
            c.warnings[INVALID_SHOWN],
            "and 5 more fields of objects the API server would refuse"
        );
    }
}
