//! The whole cluster state, defaulted, validated and parsed once: what every scheduling cycle
//! reads. Built from a `source::Dump`, whichever source produced it.

use super::defaults;
use super::error::{ObjectError, ObjectErrors};
use super::intern::Str;
use super::labels::{Labels, Selector};
use super::node::Node;
use super::pod::Pod;
use crate::source::{Dump, Object, SnapshotMeta};
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
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
    pub leases: Vec<k8s_openapi::api::coordination::v1::Lease>,
    pub lease_candidates: Vec<serde_json::Value>,
    pub events: Vec<k8s::Event>,
    pub meta: SnapshotMeta,
    pub warnings: Vec<String>,
}

fn ns_name(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (Str, Str) {
    (
        Str::new(meta.namespace.as_deref().unwrap_or("default")),
        Str::new(meta.name.as_deref().unwrap_or("")),
    )
}

fn label_selector(
    kind: &'static str,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    sel: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    errors: &mut Vec<ObjectError>,
) -> Option<Selector> {
    match Selector::from_label_selector(sel) {
        Ok(s) => Some(s),
        Err(e) => {
            let (ns, name) = ns_name(meta);
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
    pod: Pod,
    needs_admission: Option<(Option<Str>, bool)>,
}

impl ConvertedPod {
    /// The pod, for callers that set its priority themselves.
    pub fn into_pod(self) -> Pod {
        self.pod
    }
}

/// API defaulting and parsing of one pod. Pure, so sources can run it in parallel while they read;
/// Priority admission waits for `ClusterBuilder::finish`, when every PriorityClass is known.
pub fn convert_pod(mut p: k8s::Pod) -> Result<ConvertedPod, ObjectError> {
    defaults::pod(&mut p, "default");
    let spec = p.spec.as_ref();
    let needs_admission = match spec {
        Some(s) if s.priority.is_none() => Some((
            s.priority_class_name
                .as_deref()
                .filter(|n| !n.is_empty())
                .map(Str::new),
            s.preemption_policy.is_some(),
        )),
        _ => None,
    };
    Ok(ConvertedPod {
        pod: Pod::from_k8s(&p)?,
        needs_admission,
    })
}

/// Builds a `Cluster` object by object, so a source never has to hold every API object at once.
#[derive(Default)]
pub struct ClusterBuilder {
    cluster: Cluster,
    pods: Vec<Pod>,
    pending: Vec<PendingAdmission>,
    errors: Vec<ObjectError>,
    seen_nodes: std::collections::HashSet<Str>,
}

impl ClusterBuilder {
    pub fn new() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    pub fn warn(&mut self, warning: String) {
        self.cluster.warnings.push(warning);
    }

    pub fn add_pod(&mut self, converted: Result<ConvertedPod, ObjectError>) {
        match converted {
            Ok(c) => {
                if let Some((class, policy_set)) = c.needs_admission {
                    self.pending.push(PendingAdmission {
                        pod: self.pods.len(),
                        class,
                        policy_set,
                    });
                }
                self.pods.push(c.pod);
            }
            Err(e) => self.errors.push(e),
        }
    }

    pub fn add(&mut self, object: Object) {
        let c = &mut self.cluster;
        match object {
            Object::Pod(p) => self.add_pod(convert_pod(*p)),
            Object::Node(n) => match Node::from_k8s(&n) {
                Ok(node) => {
                    if self.seen_nodes.insert(node.name) {
                        c.nodes.push(Arc::new(node));
                    } else {
                        self.errors.push(ObjectError::new(
                            "Node",
                            node.name.as_str(),
                            "metadata.name",
                            "appears more than once",
                        ));
                    }
                }
                Err(e) => self.errors.push(e),
            },
            Object::PriorityClass(pc) => c.priority_classes.push(PriorityClassInfo {
                name: Str::new(pc.metadata.name.as_deref().unwrap_or("")),
                value: pc.value.unwrap_or(0),
                global_default: pc.global_default == Some(true),
                preemption_never: pc.preemption_policy.as_deref() == Some("Never"),
            }),
            Object::Namespace(mut ns) => {
                defaults::namespace(&mut ns);
                let name = Str::new(ns.metadata.name.as_deref().unwrap_or(""));
                c.namespaces.insert(
                    name,
                    ns.metadata
                        .labels
                        .as_ref()
                        .map(Labels::from_map)
                        .unwrap_or_default(),
                );
            }
            Object::Pdb(pdb) => {
                let (namespace, name) = ns_name(&pdb.metadata);
                let selector = label_selector(
                    "PodDisruptionBudget",
                    &pdb.metadata,
                    pdb.spec.as_ref().and_then(|s| s.selector.as_ref()),
                    &mut self.errors,
                );
                let status = pdb.status.as_ref();
                c.pdbs.push(Pdb {
                    namespace,
                    name,
                    selector,
                    disruptions_allowed: status.and_then(|s| s.disruptions_allowed).unwrap_or(0),
                    disrupted_pods: status
                        .and_then(|s| s.disrupted_pods.as_ref())
                        .map(|m| m.keys().map(Str::new).collect())
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
                c.pvcs.insert(ns_name(&pvc.metadata), Arc::new(*pvc));
            }
            Object::Pv(pv) => {
                c.pvs.insert(
                    Str::new(pv.metadata.name.as_deref().unwrap_or("")),
                    Arc::new(*pv),
                );
            }
            Object::StorageClass(mut sc) => {
                defaults::storage_class(&mut sc);
                c.storage_classes.insert(
                    Str::new(sc.metadata.name.as_deref().unwrap_or("")),
                    Arc::new(*sc),
                );
            }
            Object::CsiNode(n) => {
                c.csi_nodes.insert(
                    Str::new(n.metadata.name.as_deref().unwrap_or("")),
                    Arc::new(*n),
                );
            }
            Object::CsiDriver(d) => {
                c.csi_drivers.insert(
                    Str::new(d.metadata.name.as_deref().unwrap_or("")),
                    Arc::new(*d),
                );
            }
            Object::CsiStorageCapacity(cap) => c.csi_storage_capacities.push(Arc::new(*cap)),
            Object::VolumeAttachment(va) => {
                let spec = &va.spec;
                c.volume_attachments
                    .entry(Str::new(&spec.node_name))
                    .or_default()
                    .push(VolumeAttachment {
                        attacher: Str::new(&spec.attacher),
                        persistent_volume: spec
                            .source
                            .persistent_volume_name
                            .as_deref()
                            .map(Str::new),
                    });
            }
            Object::Service(svc) => {
                let (ns, _) = ns_name(&svc.metadata);
                let selector = svc
                    .spec
                    .as_ref()
                    .and_then(|s| s.selector.as_ref())
                    .map(Labels::from_map);
                c.workloads.services.entry(ns).or_default().push(selector);
            }
            Object::ReplicationController(rc) => {
                let selector = rc
                    .spec
                    .as_ref()
                    .and_then(|s| s.selector.as_ref())
                    .map(Labels::from_map);
                c.workloads
                    .replication_controllers
                    .insert(ns_name(&rc.metadata), selector);
            }
            Object::ReplicaSet(rs) => {
                let sel = label_selector(
                    "ReplicaSet",
                    &rs.metadata,
                    Some(&rs.spec.selector),
                    &mut self.errors,
                );
                c.workloads.replica_sets.insert(ns_name(&rs.metadata), sel);
            }
            Object::StatefulSet(ss) => {
                let sel = label_selector(
                    "StatefulSet",
                    &ss.metadata,
                    Some(&ss.spec.selector),
                    &mut self.errors,
                );
                c.workloads.stateful_sets.insert(ns_name(&ss.metadata), sel);
            }
            Object::Lease(l) => c.leases.push(*l),
            Object::LeaseCandidate(l) => c.lease_candidates.push(*l),
            Object::Event(e) => c.events.push(*e),
            Object::SnapshotInfo(meta) => c.meta = *meta,
        }
    }

    /// Applies Priority admission to the pods that need it and reports every broken object.
    pub fn finish(mut self) -> Result<Cluster, ObjectErrors> {
        for p in std::mem::take(&mut self.pending) {
            let pod = &mut self.pods[p.pod];
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
        if !self.errors.is_empty() {
            return Err(ObjectErrors(self.errors));
        }
        let mut cluster = self.cluster;
        for pod in self.pods {
            let pod = Arc::new(pod);
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
    /// Defaults, admits and parses every object; reports every broken object, not just the first.
    pub fn from_dump(dump: Dump) -> Result<Cluster, ObjectErrors> {
        let mut b = ClusterBuilder::new();
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

    pub fn namespace_labels(&self, ns: Str) -> Labels {
        self.namespaces.get(&ns).cloned().unwrap_or_default()
    }
}
