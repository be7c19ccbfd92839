//! Where a cluster's state comes from: files (`file`), the live API (`live`), and how a snapshot
//! is written back (`write`). Sources only produce API objects; everything after is pure.

pub mod file;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Event, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{CSIDriver, CSINode, StorageClass};
use k8s_openapi::jiff::Timestamp;

/// What a snapshot records about when and where it was taken.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotMeta {
    /// When the snapshot was taken, by the API server's clock when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The API server's clock minus the local clock when the snapshot was taken, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_skew_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// The API objects of a cluster, as read from a file or the API server.
#[derive(Clone, Debug, Default)]
pub struct Dump {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub namespaces: Vec<Namespace>,
    pub priority_classes: Vec<PriorityClass>,
    pub pdbs: Vec<PodDisruptionBudget>,
    pub pvcs: Vec<PersistentVolumeClaim>,
    pub pvs: Vec<PersistentVolume>,
    pub storage_classes: Vec<StorageClass>,
    pub csi_nodes: Vec<CSINode>,
    pub csi_drivers: Vec<CSIDriver>,
    pub services: Vec<Service>,
    pub replication_controllers: Vec<ReplicationController>,
    pub replica_sets: Vec<ReplicaSet>,
    pub stateful_sets: Vec<StatefulSet>,
    pub leases: Vec<Lease>,
    pub lease_candidates: Vec<serde_json::Value>,
    pub events: Vec<Event>,
    pub meta: SnapshotMeta,
    /// One line per kind the tool does not read, with how many objects were skipped.
    pub warnings: Vec<String>,
}
