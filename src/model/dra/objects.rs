//! The resource.k8s.io/v1 objects the scheduler reads, parsed once with the API server's
//! defaulting: DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates, plus
//! what every cycle needs from them — which slices a node can see, which devices are already
//! allocated (and to which claim), and a cache of selector results per distinct device.

use super::cel::{Attribute, DeviceInput, Selector};
use crate::model::error::ObjectError;
use crate::model::intern::{Interner, Str};
use crate::model::node_selector::NodeSelector;
use crate::model::quantity::Quantity;
use k8s_openapi::api::resource::v1 as api;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

/// `resourceapi.AllocationResultsMaxSize`: devices one claim may get.
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;
/// `resourceapi.FirstAvailableDeviceRequestMaxSize`: subrequests of one request.
pub const FIRST_AVAILABLE_MAX_SIZE: i64 = 8;

/// A device, by the names an allocation result uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    pub driver: Str,
    pub pool: Str,
    pub device: Str,
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

/// A compiled selector: its index in the cluster's selector table, so its results can be cached
/// per distinct device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SelectorId(pub u32);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceToleration {
    pub key: String,
    /// `Equal` (the default) or `Exists`.
    pub operator: String,
    pub value: String,
    pub effect: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceTaint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

impl DeviceToleration {
    /// `resourceclaim.ToleratesTaint`.
    pub fn tolerates(&self, taint: &DeviceTaint) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator.as_str() {
            "" | "Equal" => self.value == taint.value,
            "Exists" => true,
            _ => false,
        }
    }
}

#[derive(Clone, Debug)]
pub struct DeviceClass {
    pub name: Str,
    pub selectors: Vec<SelectorId>,
    /// `spec.extendedResourceName`.
    pub extended_resource_name: Option<Str>,
    pub created: Option<k8s_openapi::jiff::Timestamp>,
}

/// Consumed counters of one counter set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterConsumption {
    pub counter_set: Str,
    pub counters: BTreeMap<Str, Quantity>,
}

/// Where a device can be used, for slices with `perDeviceNodeSelection`.
#[derive(Clone, Debug)]
pub enum NodeScope {
    Name(Str),
    All,
    Selector(NodeSelector),
    /// Nothing set: a future extension, usable nowhere.
    Unknown,
}

#[derive(Clone, Debug)]
pub struct Device {
    pub name: Str,
    /// Its selector-visible content, shared with identical devices.
    pub profile: u32,
    pub attributes: BTreeMap<String, Attribute>,
    pub capacity: BTreeMap<Str, CapacityEntry>,
    pub consumes_counters: Vec<CounterConsumption>,
    pub taints: Vec<DeviceTaint>,
    pub binding_conditions: Vec<String>,
    pub binds_to_node: bool,
    pub allow_multiple_allocations: bool,
    /// Set in slices with `perDeviceNodeSelection`.
    pub node_scope: Option<NodeScope>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapacityEntry {
    pub value: Quantity,
    pub policy: Option<CapacityPolicy>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapacityPolicy {
    pub default: Option<Quantity>,
    pub valid_values: Vec<Quantity>,
    pub valid_range: Option<(Quantity, Option<Quantity>, Option<Quantity>)>,
}

#[derive(Clone, Debug)]
pub struct Slice {
    pub name: Str,
    pub driver: Str,
    pub pool: Str,
    pub generation: i64,
    pub slice_count: i64,
    pub node_name: Option<Str>,
    pub node_selector: Option<NodeSelector>,
    pub all_nodes: bool,
    pub per_device_node_selection: Option<bool>,
    pub devices: Vec<Device>,
    pub shared_counters: BTreeMap<Str, BTreeMap<Str, Quantity>>,
}

impl Slice {
    pub fn device_id(&self, device: &Device) -> DeviceId {
        DeviceId {
            driver: self.driver,
            pool: self.pool,
            device: device.name,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocationMode {
    ExactCount(i64),
    All,
    /// A mode this release does not know.
    Other,
}

/// An `exactly` request or one `firstAvailable` subrequest: what the allocator needs.
#[derive(Clone, Debug)]
pub struct ExactRequest {
    pub name: Str,
    pub class: Str,
    pub selectors: Vec<SelectorId>,
    pub mode: AllocationMode,
    pub mode_name: String,
    /// `adminAccess` as written (a subrequest never has it).
    pub admin_access: Option<bool>,
    pub tolerations: Vec<DeviceToleration>,
    /// `capacity.requests` (DRAConsumableCapacity).
    pub capacity: Option<BTreeMap<Str, Quantity>>,
}

impl ExactRequest {
    pub fn admin(&self) -> bool {
        self.admin_access == Some(true)
    }
}

#[derive(Clone, Debug)]
pub enum RequestKind {
    Exactly(ExactRequest),
    FirstAvailable(Vec<ExactRequest>),
    /// Neither set: a request type this release does not know.
    Unknown,
}

#[derive(Clone, Debug)]
pub struct Request {
    pub name: Str,
    pub kind: RequestKind,
}

#[derive(Clone, Debug)]
pub enum Constraint {
    MatchAttribute {
        requests: Vec<Str>,
        attribute: String,
    },
    DistinctAttribute {
        requests: Vec<Str>,
        attribute: String,
    },
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocatedDevice {
    pub request: Str,
    pub id: DeviceId,
    pub admin_access: bool,
    pub share_id: Option<Str>,
    pub consumed_capacity: BTreeMap<Str, Quantity>,
    pub binding_conditions: Vec<String>,
    pub binding_failure_conditions: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Allocation {
    pub devices: Vec<AllocatedDevice>,
    /// Where the allocation is usable: on nodes matching all of them (none: everywhere).
    pub node_selectors: Vec<NodeSelector>,
    pub node_selector_errors: Vec<String>,
    pub timestamp: Option<k8s_openapi::jiff::Timestamp>,
}

impl Allocation {
    /// The allocation's node selector matches the node (`availableOnNodes`).
    pub fn available_on(&self, labels: &crate::model::labels::Labels, node: Str) -> bool {
        self.node_selectors.iter().all(|s| s.matches(labels, node))
    }
}

/// A node selector that matches one node by name, as the allocator pins node-local devices.
pub fn node_name_selector(node: Str, strings: &Interner) -> NodeSelector {
    use k8s_openapi::api::core::v1 as core;
    NodeSelector::parse(
        &core::NodeSelector {
            node_selector_terms: vec![core::NodeSelectorTerm {
                match_fields: Some(vec![core::NodeSelectorRequirement {
                    key: "metadata.name".into(),
                    operator: "In".into(),
                    values: Some(vec![node.to_string()]),
                }]),
                match_expressions: None,
            }],
        },
        strings,
    )
}

#[derive(Clone, Debug)]
pub struct ClaimSpec {
    pub requests: Vec<Request>,
    pub constraints: Vec<Constraint>,
}

#[derive(Clone, Debug)]
pub struct Claim {
    pub namespace: Str,
    pub name: Str,
    pub uid: Str,
    /// The UID of the controlling owner.
    pub controller_uid: Option<Str>,
    pub deleting: bool,
    /// `resource.kubernetes.io/extended-resource-claim: "true"`.
    pub extended_resource_claim: bool,
    pub owner_uids: Vec<(Str, bool)>,
    pub spec: ClaimSpec,
    pub allocation: Option<Allocation>,
    /// UIDs in `status.reservedFor`.
    pub reserved_for: Vec<Str>,
    /// Per allocated device, the conditions of `status.devices`.
    pub device_conditions: HashMap<DeviceId, Vec<(String, bool)>>,
}

impl Claim {
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[derive(Clone, Debug)]
pub struct ClaimTemplate {
    pub namespace: Str,
    pub name: Str,
    pub spec: ClaimSpec,
}

/// Which claim holds an allocated device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Holder {
    pub namespace: Str,
    pub claim: Str,
}

/// Devices already allocated, as the scheduler's claim tracker sees them.
#[derive(Clone, Debug, Default)]
pub struct AllocatedState {
    /// Exclusively allocated devices and the claim holding each.
    pub devices: HashMap<DeviceId, Holder>,
    /// Devices shared through consumable capacity (a result with a share ID).
    pub shared: HashMap<DeviceId, Vec<Holder>>,
    /// The capacity consumed on shared devices.
    pub consumed: HashMap<DeviceId, BTreeMap<Str, Quantity>>,
}

/// The DRA objects of a cluster and what is derived from them once.
#[derive(Debug, Default)]
pub struct Dra {
    pub classes: HashMap<Str, Arc<DeviceClass>>,
    pub slices: Vec<Slice>,
    pub claims: HashMap<(Str, Str), Arc<Claim>>,
    pub templates: HashMap<(Str, Str), Arc<ClaimTemplate>>,
    /// Extended resource names DeviceClasses back (the implicit
    /// `deviceclass.resource.kubernetes.io/<class>` and `spec.extendedResourceName`), to the class.
    pub extended_resources: HashMap<Str, Str>,
    /// Slices with a `nodeName`, by node.
    pub node_slices: HashMap<Str, Vec<u32>>,
    /// Slices any node might see (`allNodes`, `nodeSelector`, per-device selection).
    pub shared_slices: Vec<u32>,
    /// Compiled selectors, each expression once.
    pub selectors: Vec<(String, Arc<Selector>)>,
    /// Distinct selector-visible devices.
    pub profiles: Vec<DeviceInput>,
    /// Selector results by `selector * profiles + profile`, filled as the allocator asks.
    results: Vec<OnceLock<Result<bool, Arc<str>>>>,
    /// Without and with DRAConsumableCapacity.
    allocated: [OnceLock<AllocatedState>; 2],
}

/// Collects the objects while a source reads them, then parses them all at once.
#[derive(Default)]
pub struct DraBuilder {
    classes: Vec<api::DeviceClass>,
    slices: Vec<api::ResourceSlice>,
    claims: Vec<api::ResourceClaim>,
    templates: Vec<api::ResourceClaimTemplate>,
}

fn name_of(meta: &ObjectMeta) -> String {
    match &meta.namespace {
        Some(ns) => format!("{ns}/{}", meta.name.as_deref().unwrap_or("")),
        None => meta.name.clone().unwrap_or_default(),
    }
}

fn quantity(
    kind: &'static str,
    object: &str,
    field: &str,
    q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity,
) -> Result<Quantity, ObjectError> {
    Quantity::parse(&q.0).map_err(|e| {
        ObjectError::new(
            kind,
            object,
            field,
            format!("invalid quantity {:?}: {e}", q.0),
        )
    })
}

fn quantities(
    strings: &Interner,
    kind: &'static str,
    object: &str,
    field: &str,
    map: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> Result<BTreeMap<Str, Quantity>, ObjectError> {
    map.into_iter()
        .flatten()
        .map(|(k, q)| {
            Ok((
                strings.intern(k),
                quantity(kind, object, &format!("{field}.{k}"), q)?,
            ))
        })
        .collect()
}

fn node_selector(
    strings: &Interner,
    kind: &'static str,
    object: &str,
    field: &str,
    ns: &k8s_openapi::api::core::v1::NodeSelector,
) -> Result<NodeSelector, ObjectError> {
    let parsed = NodeSelector::parse(ns, strings);
    match parsed.parse_errors().first() {
        Some(e) => Err(ObjectError::new(kind, object, field, e.clone())),
        None => Ok(parsed),
    }
}

fn attribute(a: &api::DeviceAttribute) -> Attribute {
    match a {
        api::DeviceAttribute { int: Some(i), .. } => Attribute::Int(*i),
        api::DeviceAttribute { bool: Some(b), .. } => Attribute::Bool(*b),
        api::DeviceAttribute {
            string: Some(s), ..
        } => Attribute::String(s.clone()),
        api::DeviceAttribute {
            version: Some(v), ..
        } => Attribute::Version(v.clone()),
        _ => Attribute::Unsupported,
    }
}

fn tolerations(ts: Option<&Vec<api::DeviceToleration>>) -> Vec<DeviceToleration> {
    ts.into_iter()
        .flatten()
        .map(|t| DeviceToleration {
            key: t.key.clone().unwrap_or_default(),
            operator: t.operator.clone().unwrap_or_else(|| "Equal".into()),
            value: t.value.clone().unwrap_or_default(),
            effect: t.effect.clone().unwrap_or_default(),
        })
        .collect()
}

/// The fields an `exactly` request and a `firstAvailable` subrequest share, as written.
struct RawRequest<'r> {
    name: &'r str,
    class: &'r str,
    mode: Option<&'r str>,
    count: Option<i64>,
    selectors: Option<&'r Vec<api::DeviceSelector>>,
    admin_access: Option<bool>,
    tolerations: Option<&'r Vec<api::DeviceToleration>>,
    capacity: Option<&'r api::CapacityRequirements>,
}

/// Interns compiled selectors and device profiles while objects are parsed.
struct Tables<'s> {
    strings: &'s Interner,
    selectors: Vec<(String, Arc<Selector>)>,
    by_expression: HashMap<String, u32>,
    profiles: Vec<DeviceInput>,
    by_profile: HashMap<DeviceInput, u32>,
}

impl Tables<'_> {
    fn selector(
        &mut self,
        kind: &'static str,
        object: &str,
        field: &str,
        s: &api::DeviceSelector,
    ) -> Result<SelectorId, ObjectError> {
        let Some(cel) = &s.cel else {
            return Err(ObjectError::new(
                kind,
                object,
                field,
                "no supported selector type is set (expected cel)",
            ));
        };
        if let Some(&id) = self.by_expression.get(&cel.expression) {
            return Ok(SelectorId(id));
        }
        // Compiled with every field a release may declare; a release without consumable
        // capacity never sees objects that use `allowMultipleAllocations`, the API server
        // having refused them.
        let compiled = Selector::compile(&cel.expression, true).map_err(|e| {
            ObjectError::new(
                kind,
                object,
                format!("{field}.cel.expression"),
                format!("{e} (expression {:?})", cel.expression),
            )
        })?;
        let id = self.selectors.len() as u32;
        self.selectors
            .push((cel.expression.clone(), Arc::new(compiled)));
        self.by_expression.insert(cel.expression.clone(), id);
        Ok(SelectorId(id))
    }

    fn selectors(
        &mut self,
        kind: &'static str,
        object: &str,
        field: &str,
        list: Option<&Vec<api::DeviceSelector>>,
    ) -> Result<Vec<SelectorId>, ObjectError> {
        list.into_iter()
            .flatten()
            .enumerate()
            .map(|(i, s)| self.selector(kind, object, &format!("{field}[{i}]"), s))
            .collect()
    }

    fn profile(&mut self, input: DeviceInput) -> u32 {
        if let Some(&id) = self.by_profile.get(&input) {
            return id;
        }
        let id = self.profiles.len() as u32;
        self.profiles.push(input.clone());
        self.by_profile.insert(input, id);
        id
    }

    fn exact_request(
        &mut self,
        kind: &'static str,
        object: &str,
        field: &str,
        r: RawRequest,
    ) -> Result<ExactRequest, ObjectError> {
        let strings = self.strings;
        // API defaulting: ExactCount, and a count of one for it.
        let mode_name = r.mode.unwrap_or("ExactCount").to_string();
        let mode = match mode_name.as_str() {
            "ExactCount" => AllocationMode::ExactCount(r.count.unwrap_or(1)),
            "All" => AllocationMode::All,
            _ => AllocationMode::Other,
        };
        Ok(ExactRequest {
            name: strings.intern(r.name),
            class: strings.intern(r.class),
            selectors: self.selectors(kind, object, &format!("{field}.selectors"), r.selectors)?,
            mode,
            mode_name,
            admin_access: r.admin_access,
            tolerations: tolerations(r.tolerations),
            capacity: r
                .capacity
                .map(|c| {
                    quantities(
                        strings,
                        kind,
                        object,
                        &format!("{field}.capacity.requests"),
                        c.requests.as_ref(),
                    )
                })
                .transpose()?,
        })
    }

    fn claim_spec(
        &mut self,
        kind: &'static str,
        object: &str,
        field: &str,
        spec: &api::ResourceClaimSpec,
    ) -> Result<ClaimSpec, ObjectError> {
        let strings = self.strings;
        let devices = spec.devices.as_ref();
        let mut requests = Vec::new();
        for (i, r) in devices
            .and_then(|d| d.requests.as_ref())
            .into_iter()
            .flatten()
            .enumerate()
        {
            let f = format!("{field}.devices.requests[{i}]");
            let kind_ = if let Some(e) = &r.exactly {
                RequestKind::Exactly(self.exact_request(
                    kind,
                    object,
                    &format!("{f}.exactly"),
                    RawRequest {
                        name: &r.name,
                        class: &e.device_class_name,
                        mode: e.allocation_mode.as_deref(),
                        count: e.count,
                        selectors: e.selectors.as_ref(),
                        admin_access: e.admin_access,
                        tolerations: e.tolerations.as_ref(),
                        capacity: e.capacity.as_ref(),
                    },
                )?)
            } else if let Some(subs) = r.first_available.as_ref().filter(|s| !s.is_empty()) {
                let mut out = Vec::new();
                for (j, s) in subs.iter().enumerate() {
                    out.push(self.exact_request(
                        kind,
                        object,
                        &format!("{f}.firstAvailable[{j}]"),
                        RawRequest {
                            name: &s.name,
                            class: &s.device_class_name,
                            mode: s.allocation_mode.as_deref(),
                            count: s.count,
                            selectors: s.selectors.as_ref(),
                            admin_access: None,
                            tolerations: s.tolerations.as_ref(),
                            capacity: s.capacity.as_ref(),
                        },
                    )?);
                }
                RequestKind::FirstAvailable(out)
            } else {
                RequestKind::Unknown
            };
            requests.push(Request {
                name: strings.intern(&r.name),
                kind: kind_,
            });
        }
        let constraints = devices
            .and_then(|d| d.constraints.as_ref())
            .into_iter()
            .flatten()
            .map(|c| {
                let requests = c
                    .requests
                    .iter()
                    .flatten()
                    .map(|x| strings.intern(x))
                    .collect::<Vec<_>>();
                match (&c.match_attribute, &c.distinct_attribute) {
                    (Some(a), _) => Constraint::MatchAttribute {
                        requests,
                        attribute: a.clone(),
                    },
                    (None, Some(a)) => Constraint::DistinctAttribute {
                        requests,
                        attribute: a.clone(),
                    },
                    (None, None) => Constraint::Unknown,
                }
            })
            .collect();
        Ok(ClaimSpec {
            requests,
            constraints,
        })
    }
}

fn device(
    tables: &mut Tables,
    object: &str,
    field: &str,
    driver: &str,
    d: &api::Device,
    per_device: bool,
) -> Result<Device, ObjectError> {
    let strings = tables.strings;
    const KIND: &str = "ResourceSlice";
    let attributes: BTreeMap<String, Attribute> = d
        .attributes
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), attribute(v)))
        .collect();
    let mut capacity = BTreeMap::new();
    for (k, c) in d.capacity.iter().flatten() {
        let f = format!("{field}.capacity.{k}");
        let policy = match &c.request_policy {
            None => None,
            Some(p) => Some(CapacityPolicy {
                default: p
                    .default
                    .as_ref()
                    .map(|q| quantity(KIND, object, &format!("{f}.requestPolicy.default"), q))
                    .transpose()?,
                valid_values: p
                    .valid_values
                    .iter()
                    .flatten()
                    .map(|q| quantity(KIND, object, &format!("{f}.requestPolicy.validValues"), q))
                    .collect::<Result<_, _>>()?,
                valid_range: match &p.valid_range {
                    None => None,
                    Some(r) => {
                        let q = |x: &Option<_>, n: &str| {
                            x.as_ref()
                                .map(|q| {
                                    quantity(
                                        KIND,
                                        object,
                                        &format!("{f}.requestPolicy.validRange.{n}"),
                                        q,
                                    )
                                })
                                .transpose()
                        };
                        Some((
                            quantity(
                                KIND,
                                object,
                                &format!("{f}.requestPolicy.validRange.min"),
                                &r.min,
                            )?,
                            q(&r.max, "max")?,
                            q(&r.step, "step")?,
                        ))
                    }
                },
            }),
        };
        capacity.insert(
            strings.intern(k),
            CapacityEntry {
                value: quantity(KIND, object, &format!("{f}.value"), &c.value)?,
                policy,
            },
        );
    }
    let consumes_counters = d
        .consumes_counters
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| {
            Ok(CounterConsumption {
                counter_set: strings.intern(&c.counter_set),
                counters: c
                    .counters
                    .iter()
                    .map(|(n, v)| {
                        Ok((
                            strings.intern(n),
                            quantity(
                                KIND,
                                object,
                                &format!("{field}.consumesCounters[{i}].counters.{n}.value"),
                                &v.value,
                            )?,
                        ))
                    })
                    .collect::<Result<_, ObjectError>>()?,
            })
        })
        .collect::<Result<Vec<_>, ObjectError>>()?;
    let node_scope = if per_device {
        Some(match (&d.node_name, d.all_nodes, &d.node_selector) {
            (Some(n), _, _) if !n.is_empty() => NodeScope::Name(strings.intern(n)),
            (_, Some(true), _) => NodeScope::All,
            (_, _, Some(ns)) => NodeScope::Selector(node_selector(
                strings,
                KIND,
                object,
                &format!("{field}.nodeSelector"),
                ns,
            )?),
            _ => NodeScope::Unknown,
        })
    } else {
        None
    };
    let allow_multiple_allocations = d.allow_multiple_allocations == Some(true);
    let profile = tables.profile(DeviceInput {
        driver: driver.to_string(),
        attributes: attributes
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        capacity: capacity
            .iter()
            .map(|(k, c)| (k.to_string(), c.value))
            .collect(),
        allow_multiple_allocations,
    });
    Ok(Device {
        name: strings.intern(&d.name),
        profile,
        attributes,
        capacity,
        consumes_counters,
        taints: d
            .taints
            .iter()
            .flatten()
            .map(|t| DeviceTaint {
                key: t.key.clone(),
                value: t.value.clone().unwrap_or_default(),
                effect: t.effect.clone(),
            })
            .collect(),
        binding_conditions: d.binding_conditions.clone().unwrap_or_default(),
        binds_to_node: d.binds_to_node == Some(true),
        allow_multiple_allocations,
        node_scope,
    })
}

fn slice(tables: &mut Tables, s: &api::ResourceSlice) -> Result<Slice, ObjectError> {
    let strings = tables.strings;
    const KIND: &str = "ResourceSlice";
    let object = name_of(&s.metadata);
    let spec = &s.spec;
    let per_device = spec.per_device_node_selection == Some(true);
    let devices = spec
        .devices
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, d)| {
            device(
                tables,
                &object,
                &format!("spec.devices[{i}]"),
                &spec.driver,
                d,
                per_device,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The API server refuses a slice that names a device twice, so the allocator only looks
    // for duplicates across the slices of a pool.
    let mut names = std::collections::HashSet::new();
    if let Some(i) = devices.iter().position(|d| !names.insert(d.name)) {
        return Err(ObjectError::new(
            KIND,
            &object,
            format!("spec.devices[{i}].name"),
            format!("Duplicate value: {:?}", devices[i].name.as_str()),
        ));
    }
    let mut shared_counters = BTreeMap::new();
    for (i, cs) in spec.shared_counters.iter().flatten().enumerate() {
        let mut counters = BTreeMap::new();
        for (n, c) in &cs.counters {
            counters.insert(
                strings.intern(n),
                quantity(
                    KIND,
                    &object,
                    &format!("spec.sharedCounters[{i}].counters.{n}.value"),
                    &c.value,
                )?,
            );
        }
        shared_counters.insert(strings.intern(&cs.name), counters);
    }
    Ok(Slice {
        name: strings.intern(s.metadata.name.as_deref().unwrap_or("")),
        driver: strings.intern(&spec.driver),
        pool: strings.intern(&spec.pool.name),
        generation: spec.pool.generation,
        slice_count: spec.pool.resource_slice_count,
        node_name: spec
            .node_name
            .as_deref()
            .filter(|n| !n.is_empty())
            .map(|x| strings.intern(x)),
        node_selector: spec
            .node_selector
            .as_ref()
            .map(|ns| node_selector(strings, KIND, &object, "spec.nodeSelector", ns))
            .transpose()?,
        all_nodes: spec.all_nodes == Some(true),
        per_device_node_selection: spec.per_device_node_selection,
        devices,
        shared_counters,
    })
}

fn claim(tables: &mut Tables, c: &api::ResourceClaim) -> Result<Claim, ObjectError> {
    let strings = tables.strings;
    const KIND: &str = "ResourceClaim";
    let object = name_of(&c.metadata);
    let spec = tables.claim_spec(KIND, &object, "spec", &c.spec.clone().unwrap_or_default())?;
    let status = c.status.as_ref();
    let allocation = status
        .and_then(|s| s.allocation.as_ref())
        .map(|a| -> Result<Allocation, ObjectError> {
            let mut devices = Vec::new();
            for (i, r) in a
                .devices
                .as_ref()
                .and_then(|d| d.results.as_ref())
                .into_iter()
                .flatten()
                .enumerate()
            {
                devices.push(AllocatedDevice {
                    request: strings.intern(&r.request),
                    id: DeviceId {
                        driver: strings.intern(&r.driver),
                        pool: strings.intern(&r.pool),
                        device: strings.intern(&r.device),
                    },
                    admin_access: r.admin_access == Some(true),
                    share_id: r.share_id.as_deref().map(|x| strings.intern(x)),
                    consumed_capacity: quantities(
                        strings,
                        KIND,
                        &object,
                        &format!("status.allocation.devices.results[{i}].consumedCapacity"),
                        r.consumed_capacity.as_ref(),
                    )?,
                    binding_conditions: r.binding_conditions.clone().unwrap_or_default(),
                    binding_failure_conditions: r
                        .binding_failure_conditions
                        .clone()
                        .unwrap_or_default(),
                });
            }
            let parsed: Vec<NodeSelector> = a
                .node_selector
                .iter()
                .map(|ns| NodeSelector::parse(ns, strings))
                .collect();
            Ok(Allocation {
                devices,
                node_selector_errors: parsed.iter().flat_map(NodeSelector::parse_errors).collect(),
                node_selectors: parsed,
                timestamp: a.allocation_timestamp.as_ref().map(|t| t.0),
            })
        })
        .transpose()?;
    let owners = c.metadata.owner_references.iter().flatten();
    let device_conditions = status
        .and_then(|s| s.devices.as_ref())
        .into_iter()
        .flatten()
        .map(|d| {
            (
                DeviceId {
                    driver: strings.intern(&d.driver),
                    pool: strings.intern(&d.pool),
                    device: strings.intern(&d.device),
                },
                d.conditions
                    .iter()
                    .flatten()
                    .map(|c| (c.type_.clone(), c.status == "True"))
                    .collect(),
            )
        })
        .collect();
    Ok(Claim {
        namespace: strings.intern(c.metadata.namespace.as_deref().unwrap_or("default")),
        name: strings.intern(c.metadata.name.as_deref().unwrap_or("")),
        uid: strings.intern(c.metadata.uid.as_deref().unwrap_or("")),
        controller_uid: owners
            .clone()
            .find(|o| o.controller == Some(true))
            .map(|o| strings.intern(&o.uid)),
        owner_uids: owners
            .map(|o| (strings.intern(&o.uid), o.controller == Some(true)))
            .collect(),
        deleting: c.metadata.deletion_timestamp.is_some(),
        extended_resource_claim: c
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("resource.kubernetes.io/extended-resource-claim"))
            .is_some_and(|v| v == "true"),
        spec,
        allocation,
        reserved_for: status
            .and_then(|s| s.reserved_for.as_ref())
            .into_iter()
            .flatten()
            .map(|r| strings.intern(&r.uid))
            .collect(),
        device_conditions,
    })
}

impl DraBuilder {
    pub fn add_class(&mut self, c: api::DeviceClass) {
        self.classes.push(c);
    }
    pub fn add_slice(&mut self, s: api::ResourceSlice) {
        self.slices.push(s);
    }
    pub fn add_claim(&mut self, c: api::ResourceClaim) {
        self.claims.push(c);
    }
    pub fn add_template(&mut self, t: api::ResourceClaimTemplate) {
        self.templates.push(t);
    }

    /// Parses everything, compiles every selector and evaluates on every device those of the
    /// classes and of the claims waiting for an allocation.
    pub fn finish(self, errors: &mut Vec<ObjectError>, strings: &Interner) -> Dra {
        let mut t = Tables {
            strings,
            selectors: Vec::new(),
            by_expression: HashMap::new(),
            profiles: Vec::new(),
            by_profile: HashMap::new(),
        };
        let mut dra = Dra::default();
        for c in &self.classes {
            let name = strings.intern(c.metadata.name.as_deref().unwrap_or(""));
            let spec = c.spec.clone().unwrap_or_default();
            match t.selectors(
                "DeviceClass",
                &name,
                "spec.selectors",
                spec.selectors.as_ref(),
            ) {
                Ok(selectors) => {
                    dra.classes.insert(
                        name,
                        Arc::new(DeviceClass {
                            name,
                            selectors,
                            extended_resource_name: spec
                                .extended_resource_name
                                .as_deref()
                                .map(|x| strings.intern(x)),
                            created: c.metadata.creation_timestamp.as_ref().map(|t| t.0),
                        }),
                    );
                }
                Err(e) => errors.push(e),
            }
        }
        for s in &self.slices {
            match slice(&mut t, s) {
                Ok(s) => dra.slices.push(s),
                Err(e) => errors.push(e),
            }
        }
        for c in &self.claims {
            match claim(&mut t, c) {
                Ok(c) => {
                    dra.claims.insert((c.namespace, c.name), Arc::new(c));
                }
                Err(e) => errors.push(e),
            }
        }
        for tpl in &self.templates {
            let object = name_of(&tpl.metadata);
            match t.claim_spec(
                "ResourceClaimTemplate",
                &object,
                "spec.spec",
                &tpl.spec.clone().and_then(|s| s.spec).unwrap_or_default(),
            ) {
                Ok(spec) => {
                    let namespace =
                        strings.intern(tpl.metadata.namespace.as_deref().unwrap_or("default"));
                    let name = strings.intern(tpl.metadata.name.as_deref().unwrap_or(""));
                    dra.templates.insert(
                        (namespace, name),
                        Arc::new(ClaimTemplate {
                            namespace,
                            name,
                            spec,
                        }),
                    );
                }
                Err(e) => errors.push(e),
            }
        }
        dra.extended_resources = extended_resources(&dra.classes, strings);
        for (i, s) in dra.slices.iter().enumerate() {
            match s.node_name {
                Some(n) if s.shared_counters.is_empty() => {
                    dra.node_slices.entry(n).or_default().push(i as u32)
                }
                _ => dra.shared_slices.push(i as u32),
            }
        }
        dra.results = (0..t.selectors.len() * t.profiles.len())
            .map(|_| OnceLock::new())
            .collect();
        dra.selectors = t.selectors;
        dra.profiles = t.profiles;
        // The selectors a scheduling cycle is about to run: those of the classes and of the
        // claims still waiting for an allocation. Evaluated here, in parallel, so explaining a
        // pod only looks results up.
        let mut eager: Vec<SelectorId> = dra
            .classes
            .values()
            .flat_map(|c| c.selectors.iter().copied())
            .chain(
                dra.claims
                    .values()
                    .filter(|c| c.allocation.is_none())
                    .flat_map(|c| &c.spec.requests)
                    .flat_map(|r| match &r.kind {
                        RequestKind::Exactly(e) => std::slice::from_ref(e),
                        RequestKind::FirstAvailable(subs) => subs.as_slice(),
                        RequestKind::Unknown => &[],
                    })
                    .flat_map(|e| e.selectors.iter().copied()),
            )
            .collect();
        eager.sort_by_key(|s| s.0);
        eager.dedup();
        let pairs: Vec<(SelectorId, u32)> = eager
            .iter()
            .flat_map(|&s| (0..dra.profiles.len() as u32).map(move |p| (s, p)))
            .collect();
        // Both ways of counting taken devices, so a cycle starts with them ready.
        let _ = dra.allocated(false);
        let _ = dra.allocated(true);
        pairs.par_iter().for_each(|&(s, p)| {
            // Only the allocator reports an outcome, and only for the devices it reaches.
            let _ = dra.selector_result(s, p);
        });
        dra
    }
}

/// `resourceapi.ResourceDeviceClassPrefix`.
pub const DEVICE_CLASS_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// The extended resource cache: every class backs its implicit name; when several classes name
/// the same `extendedResourceName`, the newest wins, the lower name on a tie.
fn extended_resources(
    classes: &HashMap<Str, Arc<DeviceClass>>,
    strings: &Interner,
) -> HashMap<Str, Str> {
    let mut out = HashMap::new();
    let mut explicit: HashMap<Str, &DeviceClass> = HashMap::new();
    for c in classes.values() {
        out.insert(
            strings.intern(format!("{DEVICE_CLASS_RESOURCE_PREFIX}{}", c.name)),
            c.name,
        );
        if let Some(name) = c.extended_resource_name {
            let better = match explicit.get(&name) {
                None => true,
                Some(other) => {
                    (c.created, std::cmp::Reverse(c.name))
                        > (other.created, std::cmp::Reverse(other.name))
                }
            };
            if better {
                explicit.insert(name, c);
            }
        }
    }
    out.extend(explicit.into_iter().map(|(n, c)| (n, c.name)));
    out
}

impl Dra {
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty() && self.slices.is_empty() && self.claims.is_empty()
    }

    pub fn selector_expression(&self, s: SelectorId) -> &str {
        &self.selectors[s.0 as usize].0
    }

    /// The selector's verdict on a device profile, evaluated once.
    pub fn selector_result(&self, s: SelectorId, profile: u32) -> Result<bool, Arc<str>> {
        let cell = &self.results[s.0 as usize * self.profiles.len() + profile as usize];
        cell.get_or_init(|| {
            self.selectors[s.0 as usize]
                .1
                .matches(&self.profiles[profile as usize])
                .map_err(Arc::from)
        })
        .clone()
    }

    /// The claims' allocations as the claim tracker counts them; with consumable capacity on,
    /// results with a share ID share their device instead of taking it.
    pub fn allocated(&self, consumable_capacity: bool) -> &AllocatedState {
        self.allocated[usize::from(consumable_capacity)].get_or_init(|| {
            let mut state = AllocatedState::default();
            let mut claims: Vec<&Arc<Claim>> = self.claims.values().collect();
            claims.sort_by_key(|c| (c.namespace, c.name));
            for c in claims {
                state.add(c, consumable_capacity);
            }
            state
        })
    }
}

impl AllocatedState {
    /// Counts a claim's allocation (`foreachAllocatedDevice`): admin-access results take
    /// nothing, shared results only consume capacity.
    pub fn add(&mut self, c: &Claim, consumable_capacity: bool) {
        let holder = Holder {
            namespace: c.namespace,
            claim: c.name,
        };
        for d in c.allocation.iter().flat_map(|a| &a.devices) {
            if d.admin_access {
                continue;
            }
            if consumable_capacity && d.share_id.is_some() {
                self.shared.entry(d.id).or_default().push(holder);
                let consumed = self.consumed.entry(d.id).or_default();
                for (k, q) in &d.consumed_capacity {
                    let e = consumed.entry(*k).or_insert(Quantity::ZERO);
                    *e = *e + *q;
                }
                continue;
            }
            self.devices.insert(d.id, holder);
        }
    }
}
