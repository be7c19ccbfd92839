//! The whole cluster state, defaulted, validated and parsed once: what every scheduling cycle
//! reads. Built from a `source::Dump`, whichever source produced it.

use super::defaults;
use super::error::{ObjectError, ObjectErrors};
use super::intern::Str;
use super::labels::{Labels, Selector};
use super::node::Node;
use super::pod::Pod;
use crate::source::{Dump, SnapshotMeta};
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, StorageClass};
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
            errors.push(ObjectError::new(kind, format!("{ns}/{name}"), "spec.selector", e));
            None
        }
    }
}

impl Cluster {
    /// Defaults, admits and parses every object; reports every broken object, not just the first.
    pub fn from_dump(dump: Dump) -> Result<Cluster, ObjectErrors> {
        let mut errors = Vec::new();
        let mut cluster = Cluster {
            meta: dump.meta,
            warnings: dump.warnings,
            leases: dump.leases,
            lease_candidates: dump.lease_candidates,
            events: dump.events,
            ..Default::default()
        };
        cluster.priority_classes = dump
            .priority_classes
            .iter()
            .map(|c| PriorityClassInfo {
                name: Str::new(c.metadata.name.as_deref().unwrap_or("")),
                value: c.value.unwrap_or(0),
                global_default: c.global_default == Some(true),
                preemption_never: c.preemption_policy.as_deref() == Some("Never"),
            })
            .collect();

        for n in &dump.nodes {
            match Node::from_k8s(n) {
                Ok(node) => cluster.nodes.push(Arc::new(node)),
                Err(e) => errors.push(e),
            }
        }
        let mut seen_nodes = std::collections::HashSet::new();
        for n in &cluster.nodes {
            if !seen_nodes.insert(n.name) {
                errors.push(ObjectError::new("Node", n.name.as_str(), "metadata.name", "appears more than once"));
            }
        }

        for mut p in dump.pods {
            defaults::pod(&mut p, "default");
            if let Err(defaults::UnknownPriorityClass(class)) = defaults::admit_priority(&mut p, &dump.priority_classes) {
                // A pod that exists was admitted once; its class has since been deleted.
                cluster.warnings.push(format!(
                    "pod {}/{}: PriorityClass {class:?} not found, priority taken as 0",
                    p.metadata.namespace.as_deref().unwrap_or(""),
                    p.metadata.name.as_deref().unwrap_or("")
                ));
                if let Some(spec) = p.spec.as_mut() {
                    spec.priority = Some(0);
                }
            }
            match Pod::from_k8s(&p) {
                Ok(pod) if pod.is_terminated() => cluster.terminated_pods.push(Arc::new(pod)),
                Ok(pod) => cluster.pods.push(Arc::new(pod)),
                Err(e) => errors.push(e),
            }
        }

        for mut ns in dump.namespaces {
            defaults::namespace(&mut ns);
            let name = Str::new(ns.metadata.name.as_deref().unwrap_or(""));
            cluster.namespaces.insert(name, ns.metadata.labels.as_ref().map(Labels::from_map).unwrap_or_default());
        }

        for pdb in &dump.pdbs {
            let (namespace, name) = ns_name(&pdb.metadata);
            let selector = label_selector("PodDisruptionBudget", &pdb.metadata, pdb.spec.as_ref().and_then(|s| s.selector.as_ref()), &mut errors);
            let status = pdb.status.as_ref();
            cluster.pdbs.push(Pdb {
                namespace,
                name,
                selector,
                disruptions_allowed: status.and_then(|s| s.disruptions_allowed).unwrap_or(0),
                disrupted_pods: status
                    .and_then(|s| s.disrupted_pods.as_ref())
                    .map(|m| m.keys().map(Str::new).collect())
                    .unwrap_or_default(),
            });
        }

        for pvc in dump.pvcs {
            cluster.pvcs.insert(ns_name(&pvc.metadata), Arc::new(pvc));
        }
        for pv in dump.pvs {
            cluster.pvs.insert(Str::new(pv.metadata.name.as_deref().unwrap_or("")), Arc::new(pv));
        }
        for mut sc in dump.storage_classes {
            defaults::storage_class(&mut sc);
            cluster.storage_classes.insert(Str::new(sc.metadata.name.as_deref().unwrap_or("")), Arc::new(sc));
        }
        for c in dump.csi_nodes {
            cluster.csi_nodes.insert(Str::new(c.metadata.name.as_deref().unwrap_or("")), Arc::new(c));
        }
        for d in dump.csi_drivers {
            cluster.csi_drivers.insert(Str::new(d.metadata.name.as_deref().unwrap_or("")), Arc::new(d));
        }

        let w = &mut cluster.workloads;
        for s in &dump.services {
            let (ns, _) = ns_name(&s.metadata);
            let selector = s.spec.as_ref().and_then(|s| s.selector.as_ref()).map(Labels::from_map);
            w.services.entry(ns).or_default().push(selector);
        }
        for rc in &dump.replication_controllers {
            let selector = rc.spec.as_ref().and_then(|s| s.selector.as_ref()).map(Labels::from_map);
            w.replication_controllers.insert(ns_name(&rc.metadata), selector);
        }
        for rs in &dump.replica_sets {
            let sel = label_selector("ReplicaSet", &rs.metadata, Some(&rs.spec.selector), &mut errors);
            w.replica_sets.insert(ns_name(&rs.metadata), sel);
        }
        for ss in &dump.stateful_sets {
            let sel = label_selector("StatefulSet", &ss.metadata, Some(&ss.spec.selector), &mut errors);
            w.stateful_sets.insert(ns_name(&ss.metadata), sel);
        }

        if errors.is_empty() {
            Ok(cluster)
        } else {
            Err(ObjectErrors(errors))
        }
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
