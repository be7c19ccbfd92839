//! Where a cluster's state comes from: files (`file`), the live API (`live`), and how a snapshot
//! is written back (`write`). Sources only produce API objects; everything after is pure.

pub mod events;
pub mod file;
pub mod live;
pub mod write;

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Event, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController,
    Service,
};
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
    Lease(Box<Lease>),
    LeaseCandidate(Box<serde_json::Value>),
    Event(Box<Event>),
    DeviceClass(Box<DeviceClass>),
    ResourceSlice(Box<ResourceSlice>),
    ResourceClaim(Box<ResourceClaim>),
    ResourceClaimTemplate(Box<ResourceClaimTemplate>),
    SnapshotInfo(Box<SnapshotMeta>),
}

/// The API version of the DRA kinds the tool reads (GA since v1.34).
pub const RESOURCE_API_VERSION: &str = "resource.k8s.io/v1";

/// The apiVersion/kind of the record `snapshot` adds to the files it writes.
pub const SNAPSHOT_INFO_API_VERSION: &str = "kubectl-sched.io/v1";
pub const SNAPSHOT_INFO_KIND: &str = "SnapshotInfo";

/// Why an object could not be typed: the field path and the problem.
pub struct TypeError {
    pub field: String,
    pub message: String,
}

/// Whether a typing error names the field at fault: tracking it costs an allocation per mapping
/// key, wasted when a failure is retried another way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fields {
    Named,
    Unnamed,
}

fn typed<'de, T: serde::Deserialize<'de>, D: serde::Deserializer<'de>>(
    d: D,
    fields: Fields,
) -> Result<Box<T>, TypeError>
where
    D::Error: std::fmt::Display,
{
    match fields {
        Fields::Named => serde_path_to_error::deserialize(d).map_err(|e| TypeError {
            field: e.path().to_string(),
            message: e.inner().to_string(),
        }),
        Fields::Unnamed => T::deserialize(d).map_err(|e| TypeError {
            field: String::new(),
            message: e.to_string(),
        }),
    }
    .map(Box::new)
}

impl Object {
    /// Types an object of the given kind/apiVersion from any serde deserializer; `Ok(None)` for a
    /// kind the tool does not read.
    pub fn deserialize<'de, D>(
        kind: &str,
        api_version: &str,
        d: D,
        fields: Fields,
    ) -> Result<Option<Object>, TypeError>
    where
        D: serde::Deserializer<'de>,
        D::Error: std::fmt::Display,
    {
        Ok(Some(match kind {
            "Node" => Object::Node(typed(d, fields)?),
            "Pod" => Object::Pod(typed(d, fields)?),
            "Namespace" => Object::Namespace(typed(d, fields)?),
            "PriorityClass" => Object::PriorityClass(typed(d, fields)?),
            "PodDisruptionBudget" => Object::Pdb(typed(d, fields)?),
            "PersistentVolumeClaim" => Object::Pvc(typed(d, fields)?),
            "PersistentVolume" => Object::Pv(typed(d, fields)?),
            "StorageClass" => Object::StorageClass(typed(d, fields)?),
            "CSINode" => Object::CsiNode(typed(d, fields)?),
            "CSIDriver" => Object::CsiDriver(typed(d, fields)?),
            "CSIStorageCapacity" => Object::CsiStorageCapacity(typed(d, fields)?),
            "VolumeAttachment" => Object::VolumeAttachment(typed(d, fields)?),
            "Service" => Object::Service(typed(d, fields)?),
            "ReplicationController" => Object::ReplicationController(typed(d, fields)?),
            "ReplicaSet" => Object::ReplicaSet(typed(d, fields)?),
            "StatefulSet" => Object::StatefulSet(typed(d, fields)?),
            "Lease" => Object::Lease(typed(d, fields)?),
            "LeaseCandidate" => Object::LeaseCandidate(typed(d, fields)?),
            "Event" => Object::Event(typed(d, fields)?),
            "DeviceClass" if api_version == RESOURCE_API_VERSION => {
                Object::DeviceClass(typed(d, fields)?)
            }
            "ResourceSlice" if api_version == RESOURCE_API_VERSION => {
                Object::ResourceSlice(typed(d, fields)?)
            }
            "ResourceClaim" if api_version == RESOURCE_API_VERSION => {
                Object::ResourceClaim(typed(d, fields)?)
            }
            "ResourceClaimTemplate" if api_version == RESOURCE_API_VERSION => {
                Object::ResourceClaimTemplate(typed(d, fields)?)
            }
            SNAPSHOT_INFO_KIND if api_version == SNAPSHOT_INFO_API_VERSION => {
                #[derive(serde::Deserialize)]
                struct Info {
                    #[serde(default)]
                    spec: SnapshotMeta,
                }
                let info: Box<Info> = typed(d, fields)?;
                Object::SnapshotInfo(Box::new(info.spec))
            }
            _ => {
                // Read through all the same: a deserializer that parses as it goes would otherwise
                // let a malformed object of a skipped kind pass.
                typed::<serde::de::IgnoredAny, _>(d, fields)?;
                return Ok(None);
            }
        }))
    }
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
