//! Where a cluster's state comes from: files (`input` reads their bytes, `file` their objects),
//! the live API (`live`), and how a snapshot is written back (`write`). Sources only produce API
//! objects; everything after is pure.

mod block_yaml;
pub mod decode;
pub mod events;
pub mod file;
pub mod input;
pub mod live;
pub mod load_error;
pub mod protobuf;
mod split;
pub mod write;

// Sources produce the model's `Dump` of API objects.
pub use crate::model::dump::{Dump, Object, SnapshotMeta};
use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::StorageClass;

/// The API version of the DRA kinds the tool reads (GA since v1.34).
pub const RESOURCE_API_VERSION: &str = "resource.k8s.io/v1";

/// The apiVersion/kind of the record `snapshot` adds to the files it writes.
pub const SNAPSHOT_INFO_API_VERSION: &str = "kubectl-sched.io/v1";
pub const SNAPSHOT_INFO_KIND: &str = "SnapshotInfo";

fn typed<'de, T: serde::Deserialize<'de>, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Box<T>, D::Error> {
    T::deserialize(d).map(Box::new)
}

/// The apiVersion the tool reads a kind in; `None` for a kind it does not read.
fn read_version(kind: &str) -> Option<&'static str> {
    use k8s_openapi::Resource;
    Some(match kind {
        "Node"
        | "Pod"
        | "Namespace"
        | "PersistentVolumeClaim"
        | "PersistentVolume"
        | "Service"
        | "ReplicationController"
        | "Event" => Node::API_VERSION,
        "PriorityClass" => PriorityClass::API_VERSION,
        "PodDisruptionBudget" => PodDisruptionBudget::API_VERSION,
        "StorageClass" | "CSINode" | "CSIDriver" | "CSIStorageCapacity" | "VolumeAttachment" => {
            StorageClass::API_VERSION
        }
        "ReplicaSet" | "StatefulSet" | "Deployment" | "DaemonSet" => ReplicaSet::API_VERSION,
        "Job" | "CronJob" => Job::API_VERSION,
        "RuntimeClass" => RuntimeClass::API_VERSION,
        "Lease" => Lease::API_VERSION,
        // Read in whichever version the server offers: only a few fields are used.
        "LeaseCandidate" => "coordination.k8s.io/",
        "DeviceClass" | "ResourceSlice" | "ResourceClaim" | "ResourceClaimTemplate" => {
            RESOURCE_API_VERSION
        }
        SNAPSHOT_INFO_KIND => SNAPSHOT_INFO_API_VERSION,
        _ => return None,
    })
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Kinds Kubernetes serves under a name the tool reads, in another group: different types.
const SAME_NAME_ELSEWHERE: &[(&str, &str)] = &[("events.k8s.io", "Event")];

/// How an object of a kind and apiVersion is read.
#[derive(Debug, PartialEq, Eq)]
pub enum Reading {
    /// A kind the tool reads, in a version it reads.
    Read,
    /// Another kind (from another API group too), skipped: its name for the warning.
    Skip(String),
    /// A kind the tool reads in a version Kubernetes no longer serves whose fields map one to
    /// one onto the version read: read as that version (`converted`).
    Removed(&'static RemovedVersion),
    /// A kind the tool reads in a version Kubernetes does not serve it in: what to say.
    Unsupported(String),
}

/// A version of a kind that Kubernetes has stopped serving, whose objects mean what the same
/// fields mean in the version the tool reads.
#[derive(Debug, PartialEq, Eq)]
pub struct RemovedVersion {
    pub kind: &'static str,
    pub api_version: &'static str,
    /// The release that stopped serving it.
    pub removed_in: &'static str,
}

/// The label policy/v1beta1's conversion uses to keep an empty PodDisruptionBudget selector
/// selecting nothing (in policy/v1 `{}` selects every pod).
const PDB_V1BETA1_LABEL: &str = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match";

/// Removed versions read as the current one. Left out, because their fields do not map one to
/// one: `extensions/v1beta1` and `apps/v1beta1` workloads (their selector defaulted from the
/// template's labels), `node.k8s.io/v1alpha1` RuntimeClasses (`spec.runtimeHandler`).
const REMOVED_VERSIONS: &[RemovedVersion] = &[
    RemovedVersion {
        kind: "PodDisruptionBudget",
        api_version: "policy/v1beta1",
        removed_in: "1.25",
    },
    RemovedVersion {
        kind: "CronJob",
        api_version: "batch/v1beta1",
        removed_in: "1.25",
    },
    RemovedVersion {
        kind: "RuntimeClass",
        api_version: "node.k8s.io/v1beta1",
        removed_in: "1.25",
    },
    RemovedVersion {
        kind: "CSIStorageCapacity",
        api_version: "storage.k8s.io/v1beta1",
        removed_in: "1.27",
    },
    RemovedVersion {
        kind: "CSIStorageCapacity",
        api_version: "storage.k8s.io/v1alpha1",
        removed_in: "1.24",
    },
    RemovedVersion {
        kind: "PriorityClass",
        api_version: "scheduling.k8s.io/v1beta1",
        removed_in: "1.22",
    },
    RemovedVersion {
        kind: "PriorityClass",
        api_version: "scheduling.k8s.io/v1alpha1",
        removed_in: "1.22",
    },
    RemovedVersion {
        kind: "StorageClass",
        api_version: "storage.k8s.io/v1beta1",
        removed_in: "1.22",
    },
    RemovedVersion {
        kind: "CSIDriver",
        api_version: "storage.k8s.io/v1beta1",
        removed_in: "1.22",
    },
    RemovedVersion {
        kind: "CSINode",
        api_version: "storage.k8s.io/v1beta1",
        removed_in: "1.22",
    },
    RemovedVersion {
        kind: "VolumeAttachment",
        api_version: "storage.k8s.io/v1beta1",
        removed_in: "1.22",
    },
    RemovedVersion {
        kind: "Lease",
        api_version: "coordination.k8s.io/v1beta1",
        removed_in: "1.22",
    },
    RemovedVersion {
        kind: "Deployment",
        api_version: "apps/v1beta2",
        removed_in: "1.16",
    },
    RemovedVersion {
        kind: "DaemonSet",
        api_version: "apps/v1beta2",
        removed_in: "1.16",
    },
    RemovedVersion {
        kind: "ReplicaSet",
        api_version: "apps/v1beta2",
        removed_in: "1.16",
    },
    RemovedVersion {
        kind: "StatefulSet",
        api_version: "apps/v1beta2",
        removed_in: "1.16",
    },
];

impl RemovedVersion {
    /// The version the object is read as.
    pub fn reads_as(&self) -> &'static str {
        read_version(self.kind).expect("removed versions are of kinds the tool reads")
    }

    /// The one warning for every object of this kind and version.
    pub fn warning(&self, count: usize) -> String {
        let pdb = if self.kind == "PodDisruptionBudget" {
            " (an empty selector keeps its policy/v1beta1 meaning: it selects no pod)"
        } else {
            ""
        };
        format!(
            "read {count} {} object(s) of {}, which Kubernetes {} stopped serving, as {}: the fields mean the same{pdb}",
            self.kind,
            self.api_version,
            self.removed_in,
            self.reads_as()
        )
    }

    /// The object as the version it is read as, converted as the API server converted it.
    pub fn convert(&self, object: &serde_json::Value) -> serde_json::Value {
        let mut v = object.clone();
        v["apiVersion"] = self.reads_as().into();
        if self.kind == "PodDisruptionBudget"
            && let Some(selector) = v.pointer_mut("/spec/selector")
        {
            convert_v1beta1_pdb_selector(selector);
        }
        v
    }
}

/// policy/v1beta1's `Convert_v1beta1_PodDisruptionBudget_To_policy_PodDisruptionBudget`: an
/// empty selector selects nothing, the v1beta1 "match all" selector selects everything, and the
/// label those use never mixes with a user's requirements.
fn convert_v1beta1_pdb_selector(selector: &mut serde_json::Value) {
    use serde_json::{Value, json};
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    };
    let Value::Object(map) = selector else { return };
    let requirement = |op: &str| json!([{"key": PDB_V1BETA1_LABEL, "operator": op}]);
    if empty(map.get("matchLabels")) && empty(map.get("matchExpressions")) {
        *selector = json!({"matchExpressions": requirement("Exists")});
        return;
    }
    if empty(map.get("matchLabels"))
        && map.get("matchExpressions") == Some(&requirement("DoesNotExist"))
    {
        *selector = json!({});
        return;
    }
    if let Some(Value::Array(exprs)) = map.get_mut("matchExpressions") {
        exprs.retain(|e| e.get("key").and_then(Value::as_str) != Some(PDB_V1BETA1_LABEL));
    }
}

/// What to say of a kind the tool reads written with an apiVersion Kubernetes does not serve it
/// in; `None` for a kind the tool does not read.
pub fn unsupported_version(kind: &str, api_version: &str) -> Option<String> {
    read_version(kind).map(|expected| unsupported(kind, api_version, expected))
}

fn unsupported(kind: &str, api_version: &str, expected: &str) -> String {
    let expected = match expected.strip_suffix('/') {
        Some(group) => format!("{group}/<version>"),
        None => expected.to_string(),
    };
    format!("unsupported value {api_version:?} for kind {kind} (expected {expected})")
}

/// Whether the tool reads an object: by kind and API group, so a CRD named like a built-in kind
/// (Knative's `Service`) is skipped, not misread; a missing apiVersion is taken as the kind's.
pub fn reading(kind: &str, api_version: &str) -> Reading {
    let Some(expected) = read_version(kind) else {
        return Reading::Skip(kind.to_string());
    };
    let group = group_of(api_version);
    let (expected_group, any_version) = match expected.strip_suffix('/') {
        Some(g) => (g, true),
        None => (group_of(expected), false),
    };
    if api_version.is_empty() || api_version == expected || (any_version && group == expected_group)
    {
        return Reading::Read;
    }
    if let Some(removed) = REMOVED_VERSIONS
        .iter()
        .find(|r| r.kind == kind && r.api_version == api_version)
    {
        return Reading::Removed(removed);
    }
    // Groups without a dot and `*.k8s.io` are Kubernetes' own: a kind it does not serve there
    // is a mistake, not another API.
    let kubernetes = !group.contains('.') || group.ends_with(".k8s.io");
    if group == expected_group || (kubernetes && !SAME_NAME_ELSEWHERE.contains(&(group, kind))) {
        Reading::Unsupported(unsupported(kind, api_version, expected))
    } else {
        Reading::Skip(format!("{kind}.{group}"))
    }
}

impl Object {
    /// Types an object of a kind `reading` says is read, from any serde deserializer; `Ok(None)`
    /// for any other kind.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        kind: &str,
        d: D,
    ) -> Result<Option<Object>, D::Error> {
        Ok(Some(match kind {
            "Node" => Object::Node(typed(d)?),
            "Pod" => Object::Pod(typed(d)?),
            "Namespace" => Object::Namespace(typed(d)?),
            "PriorityClass" => Object::PriorityClass(typed(d)?),
            "PodDisruptionBudget" => Object::Pdb(typed(d)?),
            "PersistentVolumeClaim" => Object::Pvc(typed(d)?),
            "PersistentVolume" => Object::Pv(typed(d)?),
            "StorageClass" => Object::StorageClass(typed(d)?),
            "CSINode" => Object::CsiNode(typed(d)?),
            "CSIDriver" => Object::CsiDriver(typed(d)?),
            "CSIStorageCapacity" => Object::CsiStorageCapacity(typed(d)?),
            "VolumeAttachment" => Object::VolumeAttachment(typed(d)?),
            "Service" => Object::Service(typed(d)?),
            "ReplicationController" => Object::ReplicationController(typed(d)?),
            "ReplicaSet" => Object::ReplicaSet(typed(d)?),
            "StatefulSet" => Object::StatefulSet(typed(d)?),
            "Deployment" => Object::Deployment(typed(d)?),
            "DaemonSet" => Object::DaemonSet(typed(d)?),
            "Job" => Object::Job(typed(d)?),
            "CronJob" => Object::CronJob(typed(d)?),
            "RuntimeClass" => Object::RuntimeClass(typed(d)?),
            "Lease" => Object::Lease(typed(d)?),
            "LeaseCandidate" => Object::LeaseCandidate(typed(d)?),
            "Event" => Object::Event(typed(d)?),
            "DeviceClass" => Object::DeviceClass(typed(d)?),
            "ResourceSlice" => Object::ResourceSlice(typed(d)?),
            "ResourceClaim" => Object::ResourceClaim(typed(d)?),
            "ResourceClaimTemplate" => Object::ResourceClaimTemplate(typed(d)?),
            SNAPSHOT_INFO_KIND => {
                #[derive(serde::Deserialize)]
                struct Info {
                    #[serde(default)]
                    spec: SnapshotMeta,
                    // Named so that they are known fields, not reported as unknown ones.
                    #[serde(default, rename = "apiVersion")]
                    _api_version: Option<String>,
                    #[serde(default, rename = "kind")]
                    _kind: Option<String>,
                    #[serde(default, rename = "metadata")]
                    _metadata: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
                }
                let info: Box<Info> = typed(d)?;
                Object::SnapshotInfo(Box::new(info.spec))
            }
            _ => {
                // Read through all the same: a deserializer that parses as it goes would
                // otherwise let a malformed object of a skipped kind pass.
                typed::<serde::de::IgnoredAny, _>(d)?;
                return Ok(None);
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_read_by_api_group() {
        assert_eq!(reading("Node", "v1"), Reading::Read);
        assert_eq!(reading("Node", ""), Reading::Read);
        assert_eq!(
            reading("LeaseCandidate", "coordination.k8s.io/v1beta1"),
            Reading::Read
        );
        assert_eq!(reading("Deployment", "apps/v1"), Reading::Read);
        assert_eq!(
            reading("HorizontalPodAutoscaler", "autoscaling/v2"),
            Reading::Skip("HorizontalPodAutoscaler".into())
        );
        assert_eq!(
            reading("Service", "serving.knative.dev/v1"),
            Reading::Skip("Service.serving.knative.dev".into())
        );
        assert_eq!(
            reading("Event", "events.k8s.io/v1"),
            Reading::Skip("Event.events.k8s.io".into())
        );
        assert_eq!(
            reading("Node", "apps/v1"),
            Reading::Unsupported(
                "unsupported value \"apps/v1\" for kind Node (expected v1)".into()
            )
        );
        assert!(matches!(
            reading("PodDisruptionBudget", "policy/v1beta1"),
            Reading::Removed(r) if r.reads_as() == "policy/v1"
        ));
        assert_eq!(
            reading("PodDisruptionBudget", "policy/v2"),
            Reading::Unsupported(
                "unsupported value \"policy/v2\" for kind PodDisruptionBudget (expected policy/v1)"
                    .into()
            )
        );
        // Not one to one: their selector defaulted from the template's labels.
        assert!(matches!(
            reading("Deployment", "extensions/v1beta1"),
            Reading::Unsupported(_)
        ));
        assert!(matches!(
            reading("LeaseCandidate", "v1"),
            Reading::Unsupported(m) if m.ends_with("(expected coordination.k8s.io/<version>)")
        ));
    }

    fn converted_selector(selector: serde_json::Value) -> serde_json::Value {
        let Reading::Removed(r) = reading("PodDisruptionBudget", "policy/v1beta1") else {
            panic!("policy/v1beta1 is read as policy/v1");
        };
        let pdb = serde_json::json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "db"}, "spec": {"minAvailable": 1, "selector": selector}});
        let v = r.convert(&pdb);
        assert_eq!(v["apiVersion"], "policy/v1");
        v["spec"]["selector"].clone()
    }

    #[test]
    fn a_v1beta1_pdb_keeps_its_meaning_as_v1() {
        use serde_json::json;
        // Empty selects nothing in v1beta1, everything in v1: the conversion's label keeps it.
        assert_eq!(
            converted_selector(json!({})),
            json!({"matchExpressions": [{"key": PDB_V1BETA1_LABEL, "operator": "Exists"}]})
        );
        assert_eq!(
            converted_selector(json!({"matchLabels": {}, "matchExpressions": []})),
            json!({"matchExpressions": [{"key": PDB_V1BETA1_LABEL, "operator": "Exists"}]})
        );
        assert_eq!(
            converted_selector(
                json!({"matchExpressions": [{"key": PDB_V1BETA1_LABEL, "operator": "DoesNotExist"}]})
            ),
            json!({})
        );
        assert_eq!(
            converted_selector(json!({"matchLabels": {"app": "db"}, "matchExpressions": [
                {"key": PDB_V1BETA1_LABEL, "operator": "DoesNotExist"}]})),
            json!({"matchLabels": {"app": "db"}, "matchExpressions": []})
        );
    }
}
