//! A node as the scheduler sees it.

use super::api_object::{self, ApiObject};
use super::declared_features::FeatureSet;
use super::error::ObjectError;
use super::intern::Str;
use super::labels::Labels;
use super::parse::Parse;
use super::pod::resource_list;
use super::resource::Resource;
use super::taints::{Effect, Taint};
use k8s_openapi::api::core::v1 as k8s;

/// The well-known zone label, for grouping placements by zone.
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
/// The label the kubelet sets to its hostname: the usual per-node topology key.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";

#[derive(Clone, Debug)]
pub struct Image {
    pub names: Vec<Str>,
    pub size_bytes: i64,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: Str,
    pub labels: Labels,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    pub allocatable: Resource,
    pub images: Vec<Image>,
    /// The Ready condition's status, for display only: the scheduler does not read
    /// conditions, only the taints the node lifecycle controller derives from them.
    pub ready: Option<bool>,
    /// `status.declaredFeatures`, as NodeDeclaredFeatures reads it.
    pub declared_features: FeatureSet,
    /// `status.nodeInfo.kubeletVersion`: what a dump says of the cluster's release.
    pub kubelet_version: Option<Str>,
    /// The API object, when extenders will be sent it (`api_object::keep`).
    pub api_object: Option<ApiObject>,
}

impl Node {
    /// The zone the node is in, if it carries the label.
    pub fn zone(&self) -> Option<Str> {
        self.labels.get_str(LABEL_ZONE)
    }

    pub fn from_k8s(n: &k8s::Node, parse: &Parse) -> Result<Node, ObjectError> {
        let strings = parse.strings;
        let name = n.metadata.name.as_deref().unwrap_or("");
        if name.is_empty() {
            return Err(ObjectError::new(
                "Node",
                "",
                "metadata.name",
                "required field is missing",
            ));
        }
        let spec = n.spec.as_ref();
        let status = n.status.as_ref();
        let mut taints = Vec::new();
        for (i, t) in spec
            .and_then(|s| s.taints.as_ref())
            .into_iter()
            .flatten()
            .enumerate()
        {
            let effect = Effect::parse(&t.effect);
            if effect.is_none() {
                return Err(ObjectError::new(
                    "Node",
                    name,
                    format!("spec.taints[{i}].effect"),
                    format!(
                        "Unsupported value: {:?}: supported values: \"NoExecute\", \"NoSchedule\", \"PreferNoSchedule\"",
                        t.effect
                    ),
                ));
            }
            taints.push(Taint {
                key: strings.intern(&t.key),
                value: strings.intern(t.value.as_deref().unwrap_or("")),
                effect,
            });
        }
        // API defaulting: a node status without allocatable reports its capacity as allocatable.
        let (alloc_map, field) = match status.and_then(|s| s.allocatable.as_ref()) {
            Some(a) => (Some(a), "status.allocatable"),
            None => (status.and_then(|s| s.capacity.as_ref()), "status.capacity"),
        };
        let allocatable =
            Resource::from_list(&resource_list(alloc_map, "Node", name, field, strings)?);
        Ok(Node {
            name: strings.intern(name),
            labels: n
                .metadata
                .labels
                .as_ref()
                .map(|l| Labels::from_map(l, strings))
                .unwrap_or_default(),
            taints,
            unschedulable: spec.and_then(|s| s.unschedulable) == Some(true),
            allocatable,
            images: status
                .and_then(|s| s.images.as_ref())
                .into_iter()
                .flatten()
                .map(|img| Image {
                    names: img
                        .names
                        .iter()
                        .flatten()
                        .map(|n| strings.intern(n))
                        .collect(),
                    size_bytes: img.size_bytes.unwrap_or(0),
                })
                .collect(),
            ready: status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .find(|c| c.type_ == "Ready")
                .map(|c| c.status == "True"),
            declared_features: FeatureSet::declared(
                status
                    .and_then(|s| s.declared_features.as_deref())
                    .unwrap_or_default(),
            ),
            kubelet_version: status
                .and_then(|s| s.node_info.as_ref())
                .map(|i| i.kubelet_version.as_str())
                .filter(|v| !v.is_empty())
                .map(|v| strings.intern(v)),
            api_object: api_object::kept(n, parse),
        })
    }
}
