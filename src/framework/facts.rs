//! The facts behind a verdict: what a plugin saw when it rejected a node (the resource it was
//! short of and by how much, the taint, the label the node lacks, the pod holding a port, …) and
//! the inputs behind a raw score. Plugins attach them while they decide, only when the cycle
//! explains (`Cx::explain`): compact typed values — interned strings and integers — formatted
//! only when shown. Serialised as the `facts` and `scoreInputs` of the explanation's nodes, the
//! field names documented in docs/json.md.

use crate::model::declared_features::FeatureSet;
use crate::model::intern::Str;
use crate::model::node_selector::Miss;
use crate::model::pod::{HostPort, Pod};
use crate::model::resource;
use crate::model::taints::Taint;
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::fmt;

/// A pod by namespace and name; shown as `namespace/name`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodRef {
    pub namespace: Str,
    pub name: Str,
}

impl PodRef {
    pub fn of(pod: &Pod) -> PodRef {
        PodRef {
            namespace: pod.namespace,
            name: pod.name,
        }
    }
}

impl fmt::Display for PodRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl Serialize for PodRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Pods sorted by namespace and name, as facts list them whatever order they were found in.
pub fn sorted_pods(mut pods: Vec<PodRef>) -> Vec<PodRef> {
    pods.sort_by(|a, b| {
        (a.namespace.as_str(), a.name.as_str()).cmp(&(b.namespace.as_str(), b.name.as_str()))
    });
    pods.dedup();
    pods
}

/// One fact behind a rejection: `reason` is the index of the status reason it explains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    pub reason: u16,
    pub detail: Detail,
}

impl Fact {
    /// A fact behind the status's first (often only) reason.
    pub fn of(detail: Detail) -> Fact {
        Fact { reason: 0, detail }
    }
}

/// A shortfall of one resource: the pod's request (as upstream counts it: init containers,
/// overhead, pod-level resources), the node's allocatable and what its pods already request.
/// cpu in millicores, everything else in units; `pods` is one more pod against the node's limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shortfall {
    pub resource: Str,
    pub requested: i64,
    pub allocatable: i64,
    pub used: i64,
}

impl Shortfall {
    pub fn free(&self) -> i64 {
        self.allocatable - self.used
    }

    /// How much more the pod asks for than is free.
    pub fn short(&self) -> i64 {
        self.requested - self.free()
    }
}

/// Where a node-affinity requirement comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LabelSource {
    /// The pod's `nodeSelector`.
    NodeSelector,
    /// Term `i` of the pod's required node affinity.
    NodeAffinity(u16),
    /// Term `i` of the profile's `addedAffinity`.
    AddedAffinity(u16),
}

/// Which pod-affinity rule a node breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AffinityKind {
    /// A required affinity term of the pod: no matching pod in the node's domain.
    Affinity,
    /// A required anti-affinity term of the pod: matching pods in the node's domain.
    AntiAffinity,
    /// An existing pod's required anti-affinity term matches the pod.
    ExistingAntiAffinity,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffinityMiss {
    pub kind: AffinityKind,
    /// The index of the pod's term (for `ExistingAntiAffinity`, of the existing pod's term).
    pub term: u16,
    pub topology_key: Str,
    /// The term's label selector, as written.
    pub selector: Str,
    /// The node's value of the topology key; `None` when it has no such label.
    pub domain: Option<Str>,
    /// The pods behind the conflict (for `Affinity`, none: no pod matches there).
    pub pods: Vec<PodRef>,
}

/// A topology spread constraint a node would break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpreadMiss {
    /// The constraint's index among the pod's DoNotSchedule constraints.
    pub constraint: u16,
    pub topology_key: Str,
    /// `None`: the node lacks the topology key.
    pub domain: Option<Str>,
    /// Matching pods in the node's domain (before the pod).
    pub matching: i64,
    /// The global minimum (0 while fewer domains than `minDomains`).
    pub minimum: i64,
    pub max_skew: i32,
    /// The skew placing the pod here would make.
    pub skew: i64,
}

/// A volume claim behind a rejection, with what the plugin found of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaimFact {
    /// The claim's name (in the pod's namespace).
    pub claim: Str,
    pub volume: Option<Str>,
    pub storage_class: Option<Str>,
    /// `volume.kubernetes.io/selected-node`: provisioning started for that node.
    pub selected_node: Option<Str>,
    /// The storage the claim requests, in bytes.
    pub requested: Option<i64>,
    /// Pods using the claim (ReadWriteOncePod) or the disk (a conflicting volume).
    pub pods: Vec<PodRef>,
}

/// A zone or region label a bound PV needs of the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneMiss {
    pub volume: Str,
    pub key: Str,
    pub values: Vec<Str>,
    pub node_value: Option<Str>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Detail {
    /// NodeResourcesFit.
    Resource(Shortfall),
    /// TaintToleration: a taint the pod does not tolerate; NodeUnschedulable: the cordon.
    Taint(Taint),
    /// NodeName: the node the pod names.
    NodeName(Str),
    /// NodeAffinity: a requirement the node fails (for `matchFields`, key `metadata.name`).
    Label(Box<(LabelSource, Miss)>),
    /// NodeAffinity's PreFilter: the `matchFields` node names of the terms have nothing in common.
    ConflictingNodeNames,
    /// SchedulingGates.
    Gates(Vec<Str>),
    /// NodeDeclaredFeatures: the features the pod needs that the node does not declare.
    MissingFeatures(FeatureSet),
    /// NodePorts: a port the pod wants and the pods on the node holding it.
    Port(Box<(HostPort, Vec<PodRef>)>),
    /// InterPodAffinity.
    Affinity(Box<AffinityMiss>),
    /// PodTopologySpread.
    Spread(SpreadMiss),
    /// VolumeBinding, VolumeRestrictions, NodeVolumeLimits, VolumeZone: a claim.
    Claim(Box<ClaimFact>),
    /// VolumeRestrictions: a volume another pod on the node mounts in a conflicting way.
    Disk(Box<(Str, Vec<PodRef>)>),
    /// VolumeZone.
    Zone(Box<ZoneMiss>),
    /// NodeVolumeLimits: the driver's volumes already on the node, the pod's new ones, the limit.
    VolumeLimit {
        driver: Str,
        attached: i64,
        adding: i64,
        limit: i64,
    },
    /// NodeVolumeLimits (VolumeLimitScaling): the CSI driver the pod's volume needs is missing.
    MissingDriver(Str),
    /// DynamicResources: the pod's claims that need devices here (the devices are in
    /// `devices`).
    Devices(Vec<Str>),
    /// A filter extender rejected the node, or left it out of its answer.
    Extender(&'static str),
    /// PreFilter's node set (of these plugins) leaves the node out.
    Restricted(Vec<&'static str>),
}

/// Keys of a serialised fact, in one place: scripts rely on them (docs/json.md).
impl Detail {
    /// Writes the typed fields into a map that also holds `plugin` and `reason`.
    pub fn serialize_fields<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        match self {
            Detail::Resource(s) => {
                let q = |v: i64| resource::canonical_amount(&s.resource, v);
                m.serialize_entry("resource", &s.resource)?;
                m.serialize_entry("requested", &q(s.requested))?;
                m.serialize_entry("allocatable", &q(s.allocatable))?;
                m.serialize_entry("used", &q(s.used))?;
                m.serialize_entry("free", &q(s.free()))?;
                m.serialize_entry("short", &q(s.short()))
            }
            Detail::Taint(t) => m.serialize_entry("taint", &TaintView(t)),
            Detail::NodeName(n) => m.serialize_entry("nodeName", n),
            Detail::Label(l) => {
                let (source, l) = &**l;
                let (source, term) = match *source {
                    LabelSource::NodeSelector => ("nodeSelector", None),
                    LabelSource::NodeAffinity(i) => ("nodeAffinity", Some(i)),
                    LabelSource::AddedAffinity(i) => ("addedAffinity", Some(i)),
                };
                m.serialize_entry("source", source)?;
                if let Some(term) = term {
                    m.serialize_entry("term", &term)?;
                }
                m.serialize_entry("key", &l.key)?;
                m.serialize_entry("operator", l.operator.as_str())?;
                m.serialize_entry("values", &l.values)?;
                if let Some(v) = l.node_value {
                    m.serialize_entry("nodeValue", &v)?;
                }
                Ok(())
            }
            Detail::ConflictingNodeNames => m.serialize_entry("key", "metadata.name"),
            Detail::Gates(g) => m.serialize_entry("gates", g),
            Detail::MissingFeatures(f) => m.serialize_entry("missingFeatures", &f.names()),
            Detail::Port(p) => {
                let (port, pods) = &**p;
                m.serialize_entry("port", &port.port)?;
                m.serialize_entry("protocol", port.protocol.as_str())?;
                m.serialize_entry("hostIP", &port.ip)?;
                m.serialize_entry("pods", pods)
            }
            Detail::Affinity(a) => {
                let kind = match a.kind {
                    AffinityKind::Affinity => "affinity",
                    AffinityKind::AntiAffinity => "antiAffinity",
                    AffinityKind::ExistingAntiAffinity => "existingAntiAffinity",
                };
                m.serialize_entry("rule", kind)?;
                m.serialize_entry("term", &a.term)?;
                m.serialize_entry("topologyKey", &a.topology_key)?;
                m.serialize_entry("selector", &a.selector)?;
                if let Some(d) = a.domain {
                    m.serialize_entry("domain", &d)?;
                }
                m.serialize_entry("pods", &a.pods)
            }
            Detail::Spread(s) => {
                m.serialize_entry("constraint", &s.constraint)?;
                m.serialize_entry("topologyKey", &s.topology_key)?;
                if let Some(d) = s.domain {
                    m.serialize_entry("domain", &d)?;
                    m.serialize_entry("matching", &s.matching)?;
                    m.serialize_entry("minimum", &s.minimum)?;
                    m.serialize_entry("skew", &s.skew)?;
                }
                m.serialize_entry("maxSkew", &s.max_skew)
            }
            Detail::Claim(c) => {
                m.serialize_entry("claim", &c.claim)?;
                if let Some(v) = c.volume {
                    m.serialize_entry("volume", &v)?;
                }
                if let Some(v) = c.storage_class {
                    m.serialize_entry("storageClass", &v)?;
                }
                if let Some(v) = c.selected_node {
                    m.serialize_entry("selectedNode", &v)?;
                }
                if let Some(v) = c.requested {
                    m.serialize_entry("requested", &resource::canonical_amount("storage", v))?;
                }
                if !c.pods.is_empty() {
                    m.serialize_entry("pods", &c.pods)?;
                }
                Ok(())
            }
            Detail::Disk(d) => {
                m.serialize_entry("volume", &d.0)?;
                m.serialize_entry("pods", &d.1)
            }
            Detail::Zone(z) => {
                m.serialize_entry("volume", &z.volume)?;
                m.serialize_entry("key", &z.key)?;
                m.serialize_entry("values", &z.values)?;
                if let Some(v) = z.node_value {
                    m.serialize_entry("nodeValue", &v)?;
                }
                Ok(())
            }
            Detail::VolumeLimit {
                driver,
                attached,
                adding,
                limit,
            } => {
                m.serialize_entry("driver", driver)?;
                m.serialize_entry("attached", attached)?;
                m.serialize_entry("adding", adding)?;
                m.serialize_entry("limit", limit)
            }
            Detail::MissingDriver(d) => m.serialize_entry("driver", d),
            Detail::Devices(claims) => m.serialize_entry("claims", claims),
            Detail::Extender(e) => m.serialize_entry("extender", e),
            Detail::Restricted(plugins) => m.serialize_entry("restrictedBy", plugins),
        }
    }
}

/// A taint as `{key, value, effect}`.
pub struct TaintView<'a>(pub &'a Taint);

impl Serialize for TaintView<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("key", &t.key)?;
        m.serialize_entry("value", &t.value)?;
        m.serialize_entry("effect", t.effect.map_or("", |e| e.as_str()))?;
        m.end()
    }
}

/// One input behind a plugin's raw score on a node.
#[derive(Clone, Debug, PartialEq)]
pub enum ScoreInput {
    /// NodeResourcesFit, NodeResourcesBalancedAllocation: a resource the node has, what it
    /// would have requested with the pod, and its allocatable (cpu in millicores).
    Resource {
        resource: Str,
        requested: i64,
        allocatable: i64,
    },
    /// ImageLocality: an image of the pod the node has, its size, and on how many of the
    /// cluster's nodes it is (its size counts in that proportion).
    Image {
        image: Str,
        size: i64,
        nodes: usize,
        total_nodes: usize,
    },
    /// NodeAffinity: a preferred term the node matches, with its weight.
    PreferredTerm { source: LabelSource, weight: i32 },
    /// TaintToleration: a PreferNoSchedule taint the pod does not tolerate (each counts one).
    Taint(Taint),
    /// PodTopologySpread: the pods a ScheduleAnyway constraint counts in the node's domain,
    /// weighted by the domain count; fewer is better.
    Spread {
        topology_key: Str,
        domain: Str,
        matching: i64,
        weight: f64,
    },
    /// InterPodAffinity: what the pods of the node's domain add for a topology key (preferred
    /// terms, existing pods' terms, weights).
    AffinityDomain {
        topology_key: Str,
        domain: Str,
        score: i64,
    },
    /// VolumeBinding (StorageCapacityScoring): a storage class's request and capacity here.
    Storage {
        class: Str,
        requested: i64,
        capacity: i64,
    },
    /// DynamicResources: the `firstAvailable` subrequest a request gets here (0 is the first).
    Subrequest { request: Str, index: usize },
}

impl Serialize for ScoreInput {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self {
            ScoreInput::Resource {
                resource: r,
                requested,
                allocatable,
            } => {
                m.serialize_entry("resource", r)?;
                m.serialize_entry("requested", &resource::canonical_amount(r, *requested))?;
                m.serialize_entry("allocatable", &resource::canonical_amount(r, *allocatable))?;
            }
            ScoreInput::Image {
                image,
                size,
                nodes,
                total_nodes,
            } => {
                m.serialize_entry("image", image)?;
                m.serialize_entry("size", &resource::canonical_amount("storage", *size))?;
                m.serialize_entry("nodes", nodes)?;
                m.serialize_entry("totalNodes", total_nodes)?;
            }
            ScoreInput::PreferredTerm { source, weight } => {
                let (source, term) = match source {
                    LabelSource::NodeSelector => ("nodeSelector", 0),
                    LabelSource::NodeAffinity(i) => ("nodeAffinity", *i),
                    LabelSource::AddedAffinity(i) => ("addedAffinity", *i),
                };
                m.serialize_entry("source", source)?;
                m.serialize_entry("term", &term)?;
                m.serialize_entry("weight", weight)?;
            }
            ScoreInput::Taint(t) => m.serialize_entry("taint", &TaintView(t))?,
            ScoreInput::Spread {
                topology_key,
                domain,
                matching,
                weight,
            } => {
                m.serialize_entry("topologyKey", topology_key)?;
                m.serialize_entry("domain", domain)?;
                m.serialize_entry("matching", matching)?;
                m.serialize_entry("weight", weight)?;
            }
            ScoreInput::AffinityDomain {
                topology_key,
                domain,
                score,
            } => {
                m.serialize_entry("topologyKey", topology_key)?;
                m.serialize_entry("domain", domain)?;
                m.serialize_entry("score", score)?;
            }
            ScoreInput::Storage {
                class,
                requested,
                capacity,
            } => {
                m.serialize_entry("storageClass", class)?;
                m.serialize_entry(
                    "requested",
                    &resource::canonical_amount("storage", *requested),
                )?;
                m.serialize_entry(
                    "capacity",
                    &resource::canonical_amount("storage", *capacity),
                )?;
            }
            ScoreInput::Subrequest { request, index } => {
                m.serialize_entry("request", request)?;
                m.serialize_entry("subrequest", index)?;
            }
        }
        m.end()
    }
}
