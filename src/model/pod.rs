//! A pod as the scheduler sees it, parsed once from the API object: requests, ports, tolerations,
//! affinity, priority. Plugins read these fields and never the API object's generic form, except
//! for the few rarely-hot parts kept as API types (topology spread constraints, in-tree disk
//! volumes).

use super::affinity::{HeldAffinity, PodAffinity};
use super::api_object::{self, ApiObject};
use super::declared_features::FeatureSet;
use super::error::ObjectError;
use super::intern::{Interner, Str};
use super::labels::Labels;
use super::labels::Selector;
use super::node_selector::{NodeSelector, PreferredSchedulingTerms, RequiredNodeAffinity};
use super::parse::Parse;
use super::quantity::Quantity;
use super::resource::{ContainerResources, PodResources, RequestOptions, Resource, ResourceList};
use super::taints::Toleration;
use super::volume::Volume;
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::jiff::Timestamp;
use std::collections::BTreeMap;
use std::fmt;

pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
/// `corev1.MirrorPodAnnotationKey`.
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        }
    }
}

/// A host port a container asks for; the IP is sanitised (`""` is `0.0.0.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HostPort {
    pub ip: Str,
    pub protocol: Protocol,
    pub port: i32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: Str,
    pub kind: Str,
    pub name: Str,
    pub controller: bool,
}

/// Where a pod's resource claim comes from (`resourceclaim.Name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimSource {
    /// `resourceClaimName`.
    Claim(Str),
    /// `resourceClaimTemplateName`, and what `status.resourceClaimStatuses` says the claim
    /// controller did: `None` not yet, `Some(None)` deliberately no claim.
    Template {
        template: Str,
        generated: Option<Option<Str>>,
    },
    /// Neither is set.
    Unsupported,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodResourceClaim {
    pub name: Str,
    pub source: ClaimSource,
}

#[derive(Clone, Debug)]
pub struct Pod {
    pub namespace: Str,
    pub name: Str,
    pub uid: Str,
    pub labels: Labels,
    pub owner_refs: Vec<OwnerRef>,
    pub creation_timestamp: Option<Timestamp>,
    pub deletion_timestamp: Option<Timestamp>,
    /// A DisruptionTarget condition says the scheduler preempted this pod.
    pub disruption_target_by_preemption: bool,
    /// The kubelet's mirror of a static pod (`kubernetes.io/config.mirror`): no controller
    /// replaces it and no eviction removes it; the kubelet owns it.
    pub mirror: bool,
    /// The Ready condition is True: PodDisruptionBudgets count the pod as healthy.
    pub ready: bool,

    pub node_name: Option<Str>,
    pub nominated_node_name: Option<Str>,
    pub scheduler_name: Str,
    pub priority: i32,
    pub priority_class_name: Option<Str>,
    /// `preemptionPolicy: Never`.
    pub preemption_never: bool,
    pub phase: Phase,
    pub start_time: Option<Timestamp>,

    pub resources: PodResources,
    /// What the pod takes from its node (`PodInfo.CalculateResource`).
    pub requests: Resource,
    pub non_zero_cpu: i64,
    pub non_zero_memory: i64,
    /// Sidecar init containers first, then app containers, as `GetHostPorts` lists them.
    pub host_ports: Vec<HostPort>,
    pub host_network: bool,
    /// What the pod needs its node to declare (NodeDeclaredFeatures).
    pub required_features: FeatureSet,

    pub tolerations: Vec<Toleration>,
    /// `spec.nodeSelector`, kept apart from affinity because the message and the plugin treat
    /// them together but a user wants to see which one failed.
    pub node_selector: Option<Labels>,
    pub required_node_affinity: RequiredNodeAffinity,
    /// The required node-selector terms as written: NodeAffinity's PreFilter reads `matchFields`.
    pub required_node_affinity_terms: Option<Vec<k8s::NodeSelectorTerm>>,
    /// `Err` when the preferred terms do not parse (upstream fails PreScore with the error).
    pub preferred_node_affinity: Result<Option<PreferredSchedulingTerms>, String>,
    pub affinity: HeldAffinity,
    pub topology_spread_constraints: Vec<k8s::TopologySpreadConstraint>,
    pub volumes: Vec<Volume>,
    pub scheduling_gates: Vec<Str>,
    /// `spec.resourceClaims`, with the claim each one names.
    pub resource_claims: Vec<PodResourceClaim>,
    /// Init and app container images, normalised (`:latest` added when untagged).
    pub images: Vec<Str>,
    /// The images of image volumes, normalised likewise.
    pub volume_images: Vec<Str>,
    pub num_containers: usize,
    /// The API object, when extenders will be sent it (`api_object::keep`).
    pub api_object: Option<ApiObject>,
}

/// `normalizedImageName` of ImageLocality.
pub fn normalized_image_name(name: &str) -> std::borrow::Cow<'_, str> {
    if name.rfind(':').map_or(-1, |i| i as i64) <= name.rfind('/').map_or(-1, |i| i as i64) {
        format!("{name}:latest").into()
    } else {
        name.into()
    }
}

/// `object` and `field` name the list in an error, and are written out only then.
pub(crate) fn resource_list(
    map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
    kind: &'static str,
    object: impl fmt::Display,
    field: impl fmt::Display,
    strings: &Interner,
) -> Result<ResourceList, ObjectError> {
    let mut list = ResourceList::with_capacity(map.map_or(0, BTreeMap::len));
    for (name, q) in map.into_iter().flatten() {
        let parsed = Quantity::parse(&q.0).map_err(|e| {
            ObjectError::new(
                kind,
                object.to_string(),
                format!("{field}.{name}"),
                format!("invalid quantity {:?}: {e}", q.0),
            )
        })?;
        list.set(strings.intern(name), parsed);
    }
    Ok(list)
}

/// Names pod-level `resources` may set (`IsSupportedPodLevelResource`).
fn supported_pod_level(name: &str) -> bool {
    name == "cpu" || name == "memory" || name.starts_with("hugepages-")
}

impl Pod {
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The claims of its `persistentVolumeClaim` volumes, in volume order.
    pub fn claim_names(&self) -> impl Iterator<Item = Str> + '_ {
        self.volumes.iter().filter_map(Volume::claim)
    }

    /// `metav1.GetControllerOf`: the owner that manages the pod, if any.
    pub fn controller(&self) -> Option<&OwnerRef> {
        self.owner_refs.iter().find(|o| o.controller)
    }

    /// Succeeded and Failed pods hold no resources and are invisible to the scheduler.
    pub fn is_terminated(&self) -> bool {
        matches!(self.phase, Phase::Succeeded | Phase::Failed)
    }

    /// The pod's requests for the given options, read by the scorers.
    pub fn requests_with(&self, opts: &RequestOptions) -> ResourceList {
        self.resources.requests(opts)
    }

    pub fn from_k8s(p: &k8s::Pod, parse: &Parse) -> Result<Pod, ObjectError> {
        let strings = parse.strings;
        let meta = &p.metadata;
        let namespace = strings.intern(meta.namespace.as_deref().unwrap_or("default"));
        let name_str = meta.name.as_deref().unwrap_or("");
        // Written out only for an error (and a pod without a uid): 150,000 pods at 5,000 nodes.
        let object = format_args!("{namespace}/{name_str}");
        if name_str.is_empty() {
            return Err(ObjectError::new(
                "Pod",
                object.to_string(),
                "metadata.name",
                "required field is missing",
            ));
        }
        // Unique in its namespace, as the uid is: an interner would only store it once more.
        let name = Str::new(name_str);
        let Some(spec) = &p.spec else {
            return Err(ObjectError::new(
                "Pod",
                object.to_string(),
                "spec",
                "required field is missing",
            ));
        };
        let status = p.status.as_ref();
        let err =
            |field: String, msg: String| ObjectError::new("Pod", object.to_string(), field, msg);

        let statuses: BTreeMap<&str, &k8s::ContainerStatus> = status
            .into_iter()
            .flat_map(|s| {
                s.container_statuses
                    .iter()
                    .flatten()
                    .chain(s.init_container_statuses.iter().flatten())
            })
            .map(|cs| (cs.name.as_str(), cs))
            .collect();
        // `list` and `i` say which container, in an error.
        let container_resources = |c: &k8s::Container,
                                   list: &str,
                                   i: usize,
                                   sidecar: bool|
         -> Result<ContainerResources, ObjectError> {
            let requests = resource_list(
                c.resources.as_ref().and_then(|r| r.requests.as_ref()),
                "Pod",
                object,
                format_args!("spec.{list}[{i}].resources.requests"),
                strings,
            )?;
            let cs = statuses.get(c.name.as_str());
            let status_requests = match cs.and_then(|cs| cs.resources.as_ref()) {
                Some(r) => Some(resource_list(
                    r.requests.as_ref(),
                    "Pod",
                    object,
                    "status.containerStatuses.resources.requests",
                    strings,
                )?),
                None => None,
            };
            let allocated = match cs.and_then(|cs| cs.allocated_resources.as_ref()) {
                Some(a) => Some(resource_list(
                    Some(a),
                    "Pod",
                    object,
                    "status.containerStatuses.allocatedResources",
                    strings,
                )?),
                None => None,
            };
            Ok(ContainerResources {
                requests,
                status_requests,
                allocated,
                sidecar,
            })
        };
        let init_containers = spec.init_containers.as_deref().unwrap_or(&[]);
        let is_sidecar = |c: &k8s::Container| c.restart_policy.as_deref() == Some("Always");

        // Sized exactly: kept for the whole run, 150,000 times at 5,000 nodes.
        let mut resources = PodResources {
            containers: Vec::with_capacity(spec.containers.len()),
            init_containers: Vec::with_capacity(init_containers.len()),
            ..PodResources::default()
        };
        for (i, c) in spec.containers.iter().enumerate() {
            resources
                .containers
                .push(container_resources(c, "containers", i, false)?);
        }
        for (i, c) in init_containers.iter().enumerate() {
            resources.init_containers.push(container_resources(
                c,
                "initContainers",
                i,
                is_sidecar(c),
            )?);
        }
        if let Some(o) = &spec.overhead {
            resources.overhead = Some(resource_list(
                Some(o),
                "Pod",
                object,
                "spec.overhead",
                strings,
            )?);
        }
        if let Some(r) = spec.resources.as_ref().and_then(|r| r.requests.as_ref())
            && r.keys().any(|k| supported_pod_level(k))
        {
            let all = resource_list(Some(r), "Pod", object, "spec.resources.requests", strings)?;
            let mut supported = ResourceList::new();
            for (n, q) in all.iter().filter(|(n, _)| supported_pod_level(n)) {
                supported.set(n, q);
            }
            resources.pod_level_requests = Some(supported);
        }
        resources.resize_infeasible = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .find(|c| c.type_ == "PodResizePending")
            .is_some_and(|c| c.reason.as_deref() == Some("Infeasible"));
        let (requests, non_zero_cpu, non_zero_memory) = resources.calculate();

        let mut host_ports = Vec::new();
        let port_containers = init_containers
            .iter()
            .enumerate()
            .filter(|(_, c)| is_sidecar(c))
            .map(|(i, c)| ("initContainers", i, c))
            .chain(
                spec.containers
                    .iter()
                    .enumerate()
                    .map(|(i, c)| ("containers", i, c)),
            );
        for (list, i, c) in port_containers {
            for (j, port) in c.ports.iter().flatten().enumerate() {
                let Some(hp) = port.host_port.filter(|&hp| hp > 0) else {
                    continue;
                };
                let protocol = match port.protocol.as_deref().unwrap_or("TCP") {
                    "TCP" | "" => Protocol::Tcp,
                    "UDP" => Protocol::Udp,
                    "SCTP" => Protocol::Sctp,
                    other => {
                        return Err(err(
                            format!("spec.{list}[{i}].ports[{j}].protocol"),
                            format!(
                                "Unsupported value: {other:?}: supported values: \"SCTP\", \"TCP\", \"UDP\""
                            ),
                        ));
                    }
                };
                let ip = match port.host_ip.as_deref() {
                    None | Some("") => "0.0.0.0",
                    Some(ip) => ip,
                };
                host_ports.push(HostPort {
                    ip: strings.intern(ip),
                    protocol,
                    port: hp,
                });
            }
        }

        let node_affinity = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref());
        let node_selector = spec
            .node_selector
            .as_ref()
            .filter(|m| !m.is_empty())
            .map(|l| Labels::from_map(l, strings));
        let required_node_affinity = RequiredNodeAffinity {
            node_selector: node_selector.as_ref().map(Selector::from_set),
            affinity: node_affinity
                .and_then(|na| {
                    na.required_during_scheduling_ignored_during_execution
                        .as_ref()
                })
                .map(|ns| NodeSelector::parse(ns, strings)),
        };
        let preferred_node_affinity = match node_affinity.and_then(|na| {
            na.preferred_during_scheduling_ignored_during_execution
                .as_ref()
        }) {
            Some(terms) => PreferredSchedulingTerms::parse(terms, strings).map(Some),
            None => Ok(None),
        };

        let phase = match status.and_then(|s| s.phase.as_deref()) {
            Some("Running") => Phase::Running,
            Some("Succeeded") => Phase::Succeeded,
            Some("Failed") => Phase::Failed,
            Some("Unknown") => Phase::Unknown,
            _ => Phase::Pending,
        };

        let images = init_containers
            .iter()
            .chain(spec.containers.iter())
            .map(|c| strings.intern(normalized_image_name(c.image.as_deref().unwrap_or(""))))
            .collect();

        Ok(Pod {
            namespace,
            name,
            // Unique to the pod: an interner would only store it once more.
            uid: match meta.uid.as_deref().filter(|u| !u.is_empty()) {
                Some(uid) => Str::new(uid),
                None => Str::new(object.to_string()),
            },
            labels: meta
                .labels
                .as_ref()
                .map(|l| Labels::from_map(l, strings))
                .unwrap_or_default(),
            // From slices, not flattened options: collected at their exact length, not grown.
            owner_refs: meta
                .owner_references
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|o| OwnerRef {
                    api_version: strings.intern(&o.api_version),
                    kind: strings.intern(&o.kind),
                    name: strings.intern(&o.name),
                    controller: o.controller == Some(true),
                })
                .collect(),
            creation_timestamp: meta.creation_timestamp.as_ref().map(|t| t.0),
            deletion_timestamp: meta.deletion_timestamp.as_ref().map(|t| t.0),
            disruption_target_by_preemption: status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .find(|c| c.type_ == "DisruptionTarget")
                .is_some_and(|c| {
                    c.status == "True" && c.reason.as_deref() == Some("PreemptionByScheduler")
                }),
            mirror: meta
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION)),
            ready: status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True"),
            node_name: spec
                .node_name
                .as_deref()
                .filter(|n| !n.is_empty())
                .map(|x| strings.intern(x)),
            nominated_node_name: status
                .and_then(|s| s.nominated_node_name.as_deref())
                .filter(|n| !n.is_empty())
                .map(|x| strings.intern(x)),
            scheduler_name: strings.intern(
                spec.scheduler_name
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .unwrap_or(DEFAULT_SCHEDULER_NAME),
            ),
            priority: spec.priority.unwrap_or(0),
            priority_class_name: spec
                .priority_class_name
                .as_deref()
                .filter(|s| !s.is_empty())
                .map(|x| strings.intern(x)),
            preemption_never: spec.preemption_policy.as_deref() == Some("Never"),
            phase,
            start_time: status.and_then(|s| s.start_time.as_ref()).map(|t| t.0),
            resources,
            requests,
            non_zero_cpu,
            non_zero_memory,
            host_ports,
            host_network: spec.host_network == Some(true),
            required_features: FeatureSet::required_by(spec),
            tolerations: spec
                .tolerations
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|t| Toleration::from_k8s(t, strings))
                .collect(),
            node_selector,
            required_node_affinity,
            required_node_affinity_terms: node_affinity
                .and_then(|na| {
                    na.required_during_scheduling_ignored_during_execution
                        .as_ref()
                })
                .map(|r| r.node_selector_terms.clone()),
            preferred_node_affinity,
            affinity: HeldAffinity::new(PodAffinity::parse(
                namespace,
                spec.affinity.as_ref(),
                strings,
            )),
            topology_spread_constraints: spec
                .topology_spread_constraints
                .clone()
                .unwrap_or_default(),
            volumes: spec
                .volumes
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|v| Volume::from_k8s(v, strings))
                .collect(),
            scheduling_gates: spec
                .scheduling_gates
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|g| strings.intern(&g.name))
                .collect(),
            resource_claims: spec
                .resource_claims
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|c| PodResourceClaim {
                    name: strings.intern(&c.name),
                    source: match (&c.resource_claim_name, &c.resource_claim_template_name) {
                        (Some(n), _) => ClaimSource::Claim(strings.intern(n)),
                        (None, Some(t)) => ClaimSource::Template {
                            template: strings.intern(t),
                            generated: p
                                .status
                                .as_ref()
                                .and_then(|s| s.resource_claim_statuses.as_ref())
                                .and_then(|st| st.iter().find(|s| s.name == c.name))
                                .map(|s| {
                                    s.resource_claim_name.as_deref().map(|x| strings.intern(x))
                                }),
                        },
                        (None, None) => ClaimSource::Unsupported,
                    },
                })
                .collect(),
            images,
            volume_images: spec
                .volumes
                .iter()
                .flatten()
                .filter_map(|v| v.image.as_ref())
                .map(|i| {
                    strings.intern(normalized_image_name(i.reference.as_deref().unwrap_or("")))
                })
                .collect(),
            num_containers: init_containers.len() + spec.containers.len(),
            api_object: api_object::kept(p, parse),
        })
    }
}
