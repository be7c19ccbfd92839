//! The API objects of a cluster as a source read them, before the model parses them: one
//! `Object` per object of a kind the tool reads, gathered by kind in a `Dump`.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Event, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController,
    Service,
};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
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
    /// Env values, large annotations and managedFields were left out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    /// What the snapshot lacks and which checks that makes incomplete (the warnings of the read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<String>,
}

/// One API object of a kind the tool reads.
#[derive(Clone, Debug)]
pub enum Object {
    Node(Box<Node>),
    Pod(Box<Pod>),
    Namespace(Box<Namespace>),
    PriorityClass(Box<PriorityClass>),
    Pdb(Box<PodDisruptionBudget>),
    Pvc(Box<PersistentVolumeClaim>),
    Pv(Box<PersistentVolume>),
    StorageClass(Box<StorageClass>),
    CsiNode(Box<CSINode>),
    CsiDriver(Box<CSIDriver>),
    CsiStorageCapacity(Box<CSIStorageCapacity>),
    VolumeAttachment(Box<VolumeAttachment>),
    Service(Box<Service>),
    ReplicationController(Box<ReplicationController>),
    ReplicaSet(Box<ReplicaSet>),
    StatefulSet(Box<StatefulSet>),
    Deployment(Box<Deployment>),
    DaemonSet(Box<DaemonSet>),
    Job(Box<Job>),
    CronJob(Box<CronJob>),
    RuntimeClass(Box<RuntimeClass>),
    Lease(Box<Lease>),
    LeaseCandidate(Box<serde_json::Value>),
    Event(Box<Event>),
    DeviceClass(Box<DeviceClass>),
    ResourceSlice(Box<ResourceSlice>),
    ResourceClaim(Box<ResourceClaim>),
    ResourceClaimTemplate(Box<ResourceClaimTemplate>),
    SnapshotInfo(Box<SnapshotMeta>),
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
    pub csi_storage_capacities: Vec<CSIStorageCapacity>,
    pub volume_attachments: Vec<VolumeAttachment>,
    pub services: Vec<Service>,
    pub replication_controllers: Vec<ReplicationController>,
    pub replica_sets: Vec<ReplicaSet>,
    pub stateful_sets: Vec<StatefulSet>,
    /// Read for their ownership only: which pods `explain deploy/NAME` and the like name.
    pub deployments: Vec<Deployment>,
    pub daemon_sets: Vec<DaemonSet>,
    pub jobs: Vec<Job>,
    pub cron_jobs: Vec<CronJob>,
    pub runtime_classes: Vec<RuntimeClass>,
    pub leases: Vec<Lease>,
    pub lease_candidates: Vec<serde_json::Value>,
    pub events: Vec<Event>,
    pub device_classes: Vec<DeviceClass>,
    pub resource_slices: Vec<ResourceSlice>,
    pub resource_claims: Vec<ResourceClaim>,
    pub resource_claim_templates: Vec<ResourceClaimTemplate>,
    pub meta: SnapshotMeta,
    /// One line per kind the tool does not read, with how many objects were skipped.
    pub warnings: Vec<String>,
}

impl Dump {
    pub fn push(&mut self, o: Object) {
        match o {
            Object::Node(x) => self.nodes.push(*x),
            Object::Pod(x) => self.pods.push(*x),
            Object::Namespace(x) => self.namespaces.push(*x),
            Object::PriorityClass(x) => self.priority_classes.push(*x),
            Object::Pdb(x) => self.pdbs.push(*x),
            Object::Pvc(x) => self.pvcs.push(*x),
            Object::Pv(x) => self.pvs.push(*x),
            Object::StorageClass(x) => self.storage_classes.push(*x),
            Object::CsiNode(x) => self.csi_nodes.push(*x),
            Object::CsiDriver(x) => self.csi_drivers.push(*x),
            Object::CsiStorageCapacity(x) => self.csi_storage_capacities.push(*x),
            Object::VolumeAttachment(x) => self.volume_attachments.push(*x),
            Object::Service(x) => self.services.push(*x),
            Object::ReplicationController(x) => self.replication_controllers.push(*x),
            Object::ReplicaSet(x) => self.replica_sets.push(*x),
            Object::StatefulSet(x) => self.stateful_sets.push(*x),
            Object::Deployment(x) => self.deployments.push(*x),
            Object::DaemonSet(x) => self.daemon_sets.push(*x),
            Object::Job(x) => self.jobs.push(*x),
            Object::CronJob(x) => self.cron_jobs.push(*x),
            Object::RuntimeClass(x) => self.runtime_classes.push(*x),
            Object::Lease(x) => self.leases.push(*x),
            Object::LeaseCandidate(x) => self.lease_candidates.push(*x),
            Object::Event(x) => self.events.push(*x),
            Object::DeviceClass(x) => self.device_classes.push(*x),
            Object::ResourceSlice(x) => self.resource_slices.push(*x),
            Object::ResourceClaim(x) => self.resource_claims.push(*x),
            Object::ResourceClaimTemplate(x) => self.resource_claim_templates.push(*x),
            Object::SnapshotInfo(x) => self.meta = *x,
        }
    }

    /// Every object, in kind order (priority classes first: pods are admitted against them).
    pub fn into_objects(self) -> impl Iterator<Item = Object> {
        std::iter::once(Object::SnapshotInfo(Box::new(self.meta)))
            .chain(
                self.priority_classes
                    .into_iter()
                    .map(|x| Object::PriorityClass(Box::new(x))),
            )
            .chain(self.nodes.into_iter().map(|x| Object::Node(Box::new(x))))
            .chain(
                self.namespaces
                    .into_iter()
                    .map(|x| Object::Namespace(Box::new(x))),
            )
            .chain(self.pods.into_iter().map(|x| Object::Pod(Box::new(x))))
            .chain(self.pdbs.into_iter().map(|x| Object::Pdb(Box::new(x))))
            .chain(self.pvcs.into_iter().map(|x| Object::Pvc(Box::new(x))))
            .chain(self.pvs.into_iter().map(|x| Object::Pv(Box::new(x))))
            .chain(
                self.storage_classes
                    .into_iter()
                    .map(|x| Object::StorageClass(Box::new(x))),
            )
            .chain(
                self.csi_nodes
                    .into_iter()
                    .map(|x| Object::CsiNode(Box::new(x))),
            )
            .chain(
                self.csi_drivers
                    .into_iter()
                    .map(|x| Object::CsiDriver(Box::new(x))),
            )
            .chain(
                self.csi_storage_capacities
                    .into_iter()
                    .map(|x| Object::CsiStorageCapacity(Box::new(x))),
            )
            .chain(
                self.volume_attachments
                    .into_iter()
                    .map(|x| Object::VolumeAttachment(Box::new(x))),
            )
            .chain(
                self.services
                    .into_iter()
                    .map(|x| Object::Service(Box::new(x))),
            )
            .chain(
                self.replication_controllers
                    .into_iter()
                    .map(|x| Object::ReplicationController(Box::new(x))),
            )
            .chain(
                self.replica_sets
                    .into_iter()
                    .map(|x| Object::ReplicaSet(Box::new(x))),
            )
            .chain(
                self.stateful_sets
                    .into_iter()
                    .map(|x| Object::StatefulSet(Box::new(x))),
            )
            .chain(
                self.deployments
                    .into_iter()
                    .map(|x| Object::Deployment(Box::new(x))),
            )
            .chain(
                self.daemon_sets
                    .into_iter()
                    .map(|x| Object::DaemonSet(Box::new(x))),
            )
            .chain(self.jobs.into_iter().map(|x| Object::Job(Box::new(x))))
            .chain(
                self.cron_jobs
                    .into_iter()
                    .map(|x| Object::CronJob(Box::new(x))),
            )
            .chain(
                self.runtime_classes
                    .into_iter()
                    .map(|x| Object::RuntimeClass(Box::new(x))),
            )
            .chain(self.leases.into_iter().map(|x| Object::Lease(Box::new(x))))
            .chain(
                self.lease_candidates
                    .into_iter()
                    .map(|x| Object::LeaseCandidate(Box::new(x))),
            )
            .chain(self.events.into_iter().map(|x| Object::Event(Box::new(x))))
            .chain(
                self.device_classes
                    .into_iter()
                    .map(|x| Object::DeviceClass(Box::new(x))),
            )
            .chain(
                self.resource_slices
                    .into_iter()
                    .map(|x| Object::ResourceSlice(Box::new(x))),
            )
            .chain(
                self.resource_claims
                    .into_iter()
                    .map(|x| Object::ResourceClaim(Box::new(x))),
            )
            .chain(
                self.resource_claim_templates
                    .into_iter()
                    .map(|x| Object::ResourceClaimTemplate(Box::new(x))),
            )
    }
}
