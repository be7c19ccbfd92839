//! The structured allocator (`k8s.io/dynamic-resource-allocation/structured`): for one node,
//! the first way to give every pending claim of a pod its devices. Claims in order, requests in
//! claim order, devices one after the other from the pools the node can see; a device must be
//! free, pass its class's selectors and then the request's, tolerate its taints, fit its shared
//! counters and consumable capacity, and keep the claim's constraints. A dead end backtracks.
//!
//! Upstream ships three variants and picks the oldest that supports the enabled feature gates:
//! with v1.34's defaults the "experimental" one, from v1.35 on the "incubating" one. Where
//! they decide differently (incomplete and invalid pools) `AllocatorFeatures` says which way;
//! pools and slices are taken in name order, which v1.36 does and earlier releases leave to Go
//! map order.

use crate::model::dra::cel::Attribute;
use crate::model::dra::objects::{
    ALLOCATION_RESULTS_MAX_SIZE, AllocatedState, AllocationMode, CapacityEntry, ClaimSpec,
    Constraint, Device, DeviceClass, DeviceId, Dra, ExactRequest, NodeScope, RequestKind, Slice,
};
use crate::model::intern::Str;
use crate::model::labels::Labels;
use crate::model::node_selector::NodeSelector;
use crate::model::quantity::Quantity;
use std::collections::{BTreeMap, HashMap};

/// What the allocator may do, from the release's feature gates and code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocatorFeatures {
    pub admin_access: bool,
    pub prioritized_list: bool,
    pub partitionable_devices: bool,
    pub device_taints: bool,
    /// DRADeviceBindingConditions and DRAResourceClaimDeviceStatus together.
    pub binding_and_status: bool,
    pub consumable_capacity: bool,
    /// The incubating allocator (1.35+): incomplete and invalid pools are skipped, not used or
    /// fatal, and a pool's completeness counts its slices for other nodes too.
    pub skips_unusable_pools: bool,
    /// A rejected or backtracked device gives back the counters and constraint entries it took
    /// (1.36.3+). Before, they leaked for the rest of the search.
    pub rolls_back_rejected_devices: bool,
    /// Counter caches are keyed by driver and pool (1.36.4+), not by pool name alone.
    pub counters_by_pool_id: bool,
    /// Counters consumed by devices shared through consumable capacity count (1.36.2+).
    pub counters_count_shared_devices: bool,
}

/// The node being allocated for.
#[derive(Clone, Copy)]
pub struct NodeRef<'a> {
    pub name: Str,
    pub labels: &'a Labels,
}

/// A claim the pod needs allocated.
#[derive(Clone, Copy)]
pub struct ClaimInput<'a> {
    pub namespace: Str,
    pub name: Str,
    pub spec: &'a ClaimSpec,
}

/// Where an allocated device can be used, which pins the claim's allocation
/// (`createNodeSelector`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceLocation {
    /// On the node it was allocated for (a node-local device, or one that binds to its node).
    Node,
    Selector(NodeSelector),
    Everywhere,
}

/// One allocated device of a claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceResult {
    /// `<request>` or `<request>/<subrequest>`.
    pub request: String,
    pub id: DeviceId,
    pub admin_access: bool,
    /// Allocated as one share of a device that allows multiple allocations.
    pub shared: bool,
    pub consumed_capacity: BTreeMap<Str, Quantity>,
    pub location: DeviceLocation,
}

fn location(slice: &Slice, device: &Device) -> DeviceLocation {
    if device.binds_to_node {
        return DeviceLocation::Node;
    }
    match &device.node_scope {
        Some(NodeScope::Name(_)) => DeviceLocation::Node,
        Some(NodeScope::Selector(s)) => DeviceLocation::Selector(s.clone()),
        Some(NodeScope::All | NodeScope::Unknown) => DeviceLocation::Everywhere,
        None => match (&slice.node_name, &slice.node_selector) {
            (Some(_), _) => DeviceLocation::Node,
            (None, Some(s)) => DeviceLocation::Selector(s.clone()),
            (None, None) => DeviceLocation::Everywhere,
        },
    }
}

/// Why allocation stopped without an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// Bad input (a CEL error, an unusable request): the cycle aborts with this text.
    Fatal(String),
    /// Nothing fits on this node and some pool was invalid (`ErrFailedAllocationOnNode`): the
    /// node is rejected with this text.
    Node(String),
}

fn kobj(c: &ClaimInput) -> String {
    format!("{}/{}", c.namespace, c.name)
}

/// A resource pool as seen from one node.
struct Pool<'a> {
    driver: Str,
    name: Str,
    incomplete: bool,
    invalid: Option<String>,
    /// Slices with devices for this node, in name order.
    slices: Vec<&'a Slice>,
    /// The pool's other device slices (they consume its counters too).
    other_slices: Vec<&'a Slice>,
    counter_sets: BTreeMap<Str, BTreeMap<Str, Quantity>>,
}

impl Pool<'_> {
    fn has_binding_conditions(&self) -> bool {
        self.slices
            .iter()
            .any(|s| s.devices.iter().any(|d| !d.binding_conditions.is_empty()))
    }
}

fn scope_matches(scope: &NodeScope, node: NodeRef) -> bool {
    match scope {
        NodeScope::Name(n) => *n == node.name,
        NodeScope::All => true,
        NodeScope::Selector(s) => s.matches(node.labels, node.name),
        NodeScope::Unknown => false,
    }
}

/// `nodeMatches` for a slice: `None` when the slice sets none of the node fields.
fn slice_matches(s: &Slice, node: NodeRef) -> Option<bool> {
    if let Some(n) = s.node_name {
        Some(n == node.name)
    } else if s.all_nodes {
        Some(true)
    } else {
        s.node_selector
            .as_ref()
            .map(|sel| sel.matches(node.labels, node.name))
    }
}

fn per_device_match(s: &Slice, node: NodeRef) -> bool {
    s.devices.iter().any(|d| {
        d.node_scope
            .as_ref()
            .is_some_and(|sc| scope_matches(sc, node))
    })
}

fn duplicate_device(slices: &[&Slice]) -> Option<String> {
    // Loading refuses a slice that names a device twice, as the API server does.
    if slices.len() < 2 {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    slices
        .iter()
        .flat_map(|s| &s.devices)
        .find(|d| !seen.insert(d.name))
        .map(|d| format!("duplicate device name {}", d.name))
}

/// The slices of the newest generation, per pool, among `slices`, pools by driver and name.
fn by_pool<'a>(slices: impl Iterator<Item = &'a Slice>) -> Vec<((Str, Str), Vec<&'a Slice>)> {
    // A node sees a few pools: a list is cheaper than a map.
    let mut pools: Vec<((Str, Str), Vec<&Slice>)> = Vec::new();
    for s in slices {
        let key = (s.driver, s.pool);
        let e = match pools.iter().position(|(k, _)| *k == key) {
            Some(i) => &mut pools[i].1,
            None => {
                pools.push((key, Vec::new()));
                &mut pools.last_mut().expect("just pushed").1
            }
        };
        match e.first().map(|f| f.generation) {
            Some(g) if s.generation < g => {}
            Some(g) if s.generation > g => *e = vec![s],
            _ => e.push(s),
        }
    }
    for (_, v) in &mut pools {
        v.sort_by_key(|s| s.name);
    }
    pools.sort_by_key(|(k, _)| *k);
    pools
}

/// `GatherPools`: the pools with devices the node can use, binding-condition pools last.
fn gather_pools<'a>(dra: &'a Dra, node: NodeRef, f: &AllocatorFeatures) -> Vec<Pool<'a>> {
    let candidates = dra
        .node_slices
        .get(&node.name)
        .into_iter()
        .flatten()
        .chain(&dra.shared_slices)
        .map(|&i| &dra.slices[i as usize]);
    let relevant = candidates.filter(|s| {
        if !f.partitionable_devices
            && (s.per_device_node_selection.is_some()
                || (f.skips_unusable_pools && !s.shared_counters.is_empty()))
        {
            return false;
        }
        if f.skips_unusable_pools && !s.shared_counters.is_empty() {
            return true;
        }
        match slice_matches(s, node) {
            Some(m) => m,
            None => s.per_device_node_selection == Some(true) && per_device_match(s, node),
        }
    });
    let mut pools = Vec::new();
    for ((driver, name), slices) in by_pool(relevant) {
        let generation = slices[0].generation;
        let count = slices[0].slice_count;
        let mut complete = slices.len() as i64 == count;
        // The pool's slices of this generation the node does not see.
        let mut others: Vec<&Slice> = Vec::new();
        if f.skips_unusable_pools && !complete {
            // Slices for other nodes may complete the pool, or show that a newer generation
            // is being published.
            let same_pool: Vec<&Slice> = dra
                .slices
                .iter()
                .filter(|s| s.driver == driver && s.pool == name)
                .collect();
            if same_pool.iter().any(|s| s.generation > generation) {
                continue;
            }
            let all: Vec<&Slice> = same_pool
                .into_iter()
                .filter(|s| s.generation == generation)
                .collect();
            complete = all.len() as i64 == count;
            others = all
                .into_iter()
                .filter(|s| !slices.iter().any(|t| t.name == s.name))
                .collect();
        }
        let mut pool = Pool {
            driver,
            name,
            incomplete: !complete,
            invalid: None,
            slices: Vec::new(),
            other_slices: Vec::new(),
            counter_sets: BTreeMap::new(),
        };
        if f.skips_unusable_pools && !complete {
            pools.push(pool);
            continue;
        }
        // Split only when the pool has counter slices: `split` then keeps them all.
        let (counter_slices, device_slices, split) = if f.partitionable_devices
            && f.skips_unusable_pools
            && slices.iter().any(|s| !s.shared_counters.is_empty())
        {
            let (c, d) = slices.iter().partition(|s| !s.shared_counters.is_empty());
            (c, d, Some(slices))
        } else {
            (Vec::new(), slices, None)
        };
        pool.invalid = duplicate_device(&device_slices);
        if pool.invalid.is_none() && f.partitionable_devices {
            pool.invalid = counter_sets(&counter_slices, &mut pool.counter_sets).err();
            if pool.invalid.is_none() {
                let slices = split.as_deref().unwrap_or(&device_slices);
                pool.invalid = check_consumption(&pool.counter_sets, slices)
                    .and_then(|()| check_consumption(&pool.counter_sets, &others))
                    .err();
                pool.other_slices = others;
            }
        }
        pool.slices = device_slices;
        pools.push(pool);
    }
    // A stable sort: pools keep their order within each group.
    pools.sort_by_key(Pool::has_binding_conditions);
    pools
}

fn counter_sets(
    slices: &[&Slice],
    into: &mut BTreeMap<Str, BTreeMap<Str, Quantity>>,
) -> Result<(), String> {
    for s in slices {
        for (name, counters) in &s.shared_counters {
            if into.insert(*name, counters.clone()).is_some() {
                return Err(format!("duplicate counter set name {name}"));
            }
        }
    }
    Ok(())
}

fn check_consumption(
    sets: &BTreeMap<Str, BTreeMap<Str, Quantity>>,
    slices: &[&Slice],
) -> Result<(), String> {
    for c in slices
        .iter()
        .flat_map(|s| &s.devices)
        .flat_map(|d| &d.consumes_counters)
    {
        let Some(set) = sets.get(&c.counter_set) else {
            return Err(format!("counter set {} not found", c.counter_set));
        };
        if let Some(name) = c.counters.keys().find(|n| !set.contains_key(*n)) {
            return Err(format!(
                "counter {name} not found in counter set {}",
                c.counter_set
            ));
        }
    }
    Ok(())
}

/// A device of a pool.
#[derive(Clone, Copy)]
struct Candidate<'a> {
    pool: usize,
    slice: &'a Slice,
    device: &'a Device,
    id: DeviceId,
}

/// A request or subrequest with what allocating it needs.
struct RequestData<'a> {
    request: &'a ExactRequest,
    /// The parent request of a subrequest.
    parent: Option<Str>,
    class: &'a DeviceClass,
    num_devices: usize,
    /// For `allocationMode: All`, the devices it takes.
    all_devices: Vec<Candidate<'a>>,
}

impl RequestData<'_> {
    fn name(&self) -> String {
        match self.parent {
            Some(p) => format!("{p}/{}", self.request.name),
            None => self.request.name.to_string(),
        }
    }
}

/// A claim's requests: one entry per plain request, the subrequests of a `firstAvailable` one.
struct RequestSlot<'a> {
    subrequests: Vec<RequestData<'a>>,
    first_available: bool,
    selected: usize,
}

/// The state of a constraint while devices are added and removed.
enum ConstraintState {
    Match {
        requests: Vec<Str>,
        attribute: String,
        value: Option<Attribute>,
        count: usize,
    },
    Distinct {
        requests: Vec<Str>,
        attribute: String,
        values: HashMap<Str, Attribute>,
        count: usize,
    },
}

fn applies(requests: &[Str], request: Str, sub: Option<Str>) -> bool {
    if requests.is_empty() {
        return true;
    }
    requests.contains(&request)
        || sub.is_some_and(|s| {
            let full = format!("{request}/{s}");
            requests.iter().any(|r| r.as_str() == full)
        })
}

/// `lookupAttribute`: the fully qualified name, or its id when the domain is the driver.
pub fn lookup_attribute<'a>(device: &'a Device, driver: Str, name: &str) -> Option<&'a Attribute> {
    if let Some(a) = device.attributes.get(name) {
        return Some(a);
    }
    let (domain, id) = name.split_once('/')?;
    if domain != driver.as_str() {
        return None;
    }
    device.attributes.get(id)
}

fn same_value(a: &Attribute, b: &Attribute) -> bool {
    match (a, b) {
        (Attribute::Int(x), Attribute::Int(y)) => x == y,
        (Attribute::Bool(x), Attribute::Bool(y)) => x == y,
        (Attribute::String(x), Attribute::String(y)) => x == y,
        (Attribute::Version(x), Attribute::Version(y)) => x == y,
        _ => false,
    }
}

impl ConstraintState {
    fn add(&mut self, request: Str, sub: Option<Str>, c: &Candidate) -> bool {
        match self {
            ConstraintState::Match {
                requests,
                attribute,
                value,
                count,
            } => {
                if !applies(requests, request, sub) {
                    return true;
                }
                let Some(a) = lookup_attribute(c.device, c.id.driver, attribute) else {
                    return false;
                };
                if *count == 0 {
                    *value = Some(a.clone());
                    *count = 1;
                    return true;
                }
                let matches = match (a, value.as_ref()) {
                    (Attribute::Unsupported, _) | (_, None) => false,
                    (a, Some(v)) => same_value(a, v),
                };
                if matches {
                    *count += 1;
                }
                matches
            }
            ConstraintState::Distinct {
                requests,
                attribute,
                values,
                count,
            } => {
                if !applies(requests, request, sub) {
                    return true;
                }
                let Some(a) = lookup_attribute(c.device, c.id.driver, attribute) else {
                    return false;
                };
                if *count > 0
                    && (matches!(a, Attribute::Unsupported)
                        || values.values().any(|v| same_value(a, v)))
                {
                    return false;
                }
                values.insert(request, a.clone());
                *count += 1;
                true
            }
        }
    }

    fn remove(&mut self, request: Str, sub: Option<Str>) {
        match self {
            ConstraintState::Match {
                requests, count, ..
            } => {
                if applies(requests, request, sub) {
                    *count = count.saturating_sub(1);
                }
            }
            ConstraintState::Distinct {
                requests,
                values,
                count,
                ..
            } => {
                if applies(requests, request, sub) {
                    values.remove(&request);
                    *count = count.saturating_sub(1);
                }
            }
        }
    }
}

/// Where the search for a request's next device resumes (its devices are combinations, not
/// permutations).
#[derive(Clone, Copy, Default)]
struct Location {
    pool: usize,
    slice: usize,
    device: usize,
}

#[derive(Clone, Copy, Default)]
struct Position {
    claim: usize,
    request: usize,
    sub: usize,
    device: usize,
}

enum Stop {
    Fatal(String),
    /// `errAllocationResultMaxSizeExceeded`.
    TooMany,
}

type Counters = BTreeMap<Str, BTreeMap<Str, Quantity>>;

/// What accepting a device changed, so a backtrack can undo it.
struct Undo {
    claim: usize,
    request: Str,
    sub: Option<Str>,
    id: DeviceId,
    /// The counters it took are given back.
    counters: bool,
    capacity: Option<BTreeMap<Str, Quantity>>,
}

struct Search<'a> {
    dra: &'a Dra,
    features: AllocatorFeatures,
    allocated: &'a AllocatedState,
    node: NodeRef<'a>,
    claims: &'a [ClaimInput<'a>],
    pools: Vec<Pool<'a>>,
    requests: Vec<Vec<RequestSlot<'a>>>,
    constraints: Vec<Vec<ConstraintState>>,
    /// Devices being allocated in this attempt, and for which claims.
    allocating: HashMap<DeviceId, Vec<usize>>,
    allocating_capacity: HashMap<DeviceId, BTreeMap<Str, Quantity>>,
    /// Per counter key (pool, or pool name), what allocated devices left of each counter set.
    available_counters: HashMap<(Str, Str), Counters>,
    consumed_counters: HashMap<(Str, Str), Counters>,
    results: Vec<Vec<DeviceResult>>,
}

/// Allocates `claims` on `node`: `Ok(None)` when there is no solution.
pub fn allocate(
    dra: &Dra,
    features: AllocatorFeatures,
    allocated: &AllocatedState,
    node: NodeRef,
    claims: &[ClaimInput],
) -> Result<Option<Vec<Vec<DeviceResult>>>, AllocError> {
    let pools = gather_pools(dra, node, &features);
    let mut s = Search {
        dra,
        features,
        allocated,
        node,
        claims,
        pools,
        requests: Vec::new(),
        constraints: Vec::new(),
        allocating: HashMap::new(),
        allocating_capacity: HashMap::new(),
        available_counters: HashMap::new(),
        consumed_counters: HashMap::new(),
        results: vec![Vec::new(); claims.len()],
    };
    s.prepare().map_err(AllocError::Fatal)?;
    match s.allocate_one(Position::default(), false, Location::default()) {
        Ok(true) => Ok(Some(s.results)),
        Ok(false) | Err(Stop::TooMany) => {
            if s.features.skips_unusable_pools && s.pools.iter().any(|p| p.invalid.is_some()) {
                return Err(AllocError::Node(
                    "invalid resource pools were encountered".into(),
                ));
            }
            Ok(None)
        }
        Err(Stop::Fatal(e)) => Err(AllocError::Fatal(e)),
    }
}

impl<'a> Search<'a> {
    /// Checks the claims and gathers what each request needs, as `Allocate` does before
    /// searching.
    fn prepare(&mut self) -> Result<(), String> {
        for (ci, claim) in self.claims.iter().enumerate() {
            let mut min_devices = 0usize;
            let mut slots = Vec::new();
            for request in &claim.spec.requests {
                match &request.kind {
                    RequestKind::Exactly(r) => {
                        let data = self.request_data(ci, r, None)?;
                        min_devices += data.num_devices;
                        slots.push(RequestSlot {
                            subrequests: vec![data],
                            first_available: false,
                            selected: 0,
                        });
                    }
                    RequestKind::FirstAvailable(subs) => {
                        if !self.features.prioritized_list {
                            return Err(format!(
                                "claim {}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
                                kobj(claim),
                                request.name
                            ));
                        }
                        let mut data = Vec::new();
                        for sub in subs {
                            data.push(self.request_data(ci, sub, Some(request.name))?);
                        }
                        min_devices += data.iter().map(|d| d.num_devices).min().unwrap_or(0);
                        slots.push(RequestSlot {
                            subrequests: data,
                            first_available: true,
                            selected: 0,
                        });
                    }
                    RequestKind::Unknown => {
                        return Err(format!(
                            "claim {}, request {}: missing device class name (unsupported request type?)",
                            kobj(claim),
                            request.name
                        ));
                    }
                }
            }
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
                return Err(format!(
                    "claim {}: number of requested devices {min_devices} exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}",
                    kobj(claim)
                ));
            }
            let mut constraints = Vec::new();
            for (i, c) in claim.spec.constraints.iter().enumerate() {
                constraints.push(match c {
                    Constraint::MatchAttribute {
                        requests,
                        attribute,
                    } => ConstraintState::Match {
                        requests: requests.clone(),
                        attribute: attribute.clone(),
                        value: None,
                        count: 0,
                    },
                    Constraint::DistinctAttribute {
                        requests,
                        attribute,
                    } if self.features.consumable_capacity
                        || !self.features.skips_unusable_pools =>
                    {
                        ConstraintState::Distinct {
                            requests: requests.clone(),
                            attribute: attribute.clone(),
                            values: HashMap::new(),
                            count: 0,
                        }
                    }
                    _ => {
                        return Err(format!(
                            "claim {}, constraint #{i}: empty constraint (unsupported constraint type?)",
                            kobj(claim)
                        ));
                    }
                });
            }
            self.requests.push(slots);
            self.constraints.push(constraints);
        }
        Ok(())
    }

    /// `validateDeviceRequest`.
    fn request_data(
        &self,
        ci: usize,
        r: &'a ExactRequest,
        parent: Option<Str>,
    ) -> Result<RequestData<'a>, String> {
        let claim = &self.claims[ci];
        // A subrequest's error names it alone, as upstream's accessor does.
        let name = r.name;
        if !self.features.admin_access && r.admin_access.is_some() {
            return Err(format!(
                "claim {}, request {name}: admin access is requested, but the feature is disabled",
                kobj(claim)
            ));
        }
        if r.class.is_empty() {
            return Err(format!(
                "claim {}, request {name}: missing device class name (unsupported request type?)",
                kobj(claim)
            ));
        }
        let Some(class) = self.dra.classes.get(&r.class) else {
            return Err(format!(
                "claim {}, request {name}: could not retrieve device class {}: deviceclass.resource.k8s.io {:?} not found",
                kobj(claim),
                r.class,
                r.class.as_str()
            ));
        };
        let mut data = RequestData {
            request: r,
            parent,
            class,
            num_devices: 0,
            all_devices: Vec::new(),
        };
        match r.mode {
            AllocationMode::ExactCount(n) => data.num_devices = n.max(0) as usize,
            AllocationMode::All => {
                for (pi, pool) in self.pools.iter().enumerate() {
                    if pool.incomplete {
                        return Err(format!(
                            "claim {}, request {name}: asks for all devices, but resource pool {}/{} is currently being updated",
                            kobj(claim),
                            pool.driver,
                            pool.name
                        ));
                    }
                    if pool.invalid.is_some() {
                        return Err(format!(
                            "claim {}, request {name}: asks for all devices, but resource pool {}/{} is currently invalid",
                            kobj(claim),
                            pool.driver,
                            pool.name
                        ));
                    }
                    for slice in &pool.slices {
                        for device in &slice.devices {
                            let c = Candidate {
                                pool: pi,
                                slice,
                                device,
                                id: slice.device_id(device),
                            };
                            if self.selectable(ci, &data, &c)?
                                && (!self.features.consumable_capacity
                                    || self.capacity_fits(r, &c) == Some(true))
                            {
                                data.all_devices.push(c);
                            }
                        }
                    }
                }
                data.num_devices = data.all_devices.len();
            }
            AllocationMode::Other => {
                return Err(format!(
                    "claim {}, request {name}: unsupported count mode {}",
                    kobj(claim),
                    r.mode_name
                ));
            }
        }
        Ok(data)
    }

    /// `isSelectable`: binding conditions, the class's selectors, the request's, and where a
    /// per-device slice says the device is usable.
    fn selectable(&self, ci: usize, data: &RequestData, c: &Candidate) -> Result<bool, String> {
        if !self.features.binding_and_status && !c.device.binding_conditions.is_empty() {
            return Ok(false);
        }
        for (i, &sel) in data.class.selectors.iter().enumerate() {
            match self.dra.selector_result(sel, c.device.profile) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => {
                    return Err(format!(
                        "class {}: selector #{i}: CEL runtime error: {e}",
                        data.class.name
                    ));
                }
            }
        }
        for (i, &sel) in data.request.selectors.iter().enumerate() {
            match self.dra.selector_result(sel, c.device.profile) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => {
                    return Err(format!(
                        "claim {}: selector #{i}: CEL runtime error: {e}",
                        kobj(&self.claims[ci])
                    ));
                }
            }
        }
        if c.slice.per_device_node_selection == Some(true) {
            let scope = c.device.node_scope.as_ref();
            return Ok(scope.is_some_and(|s| scope_matches(s, self.node)));
        }
        Ok(true)
    }

    fn in_use(&self, id: &DeviceId) -> bool {
        self.allocated.devices.contains_key(id)
            || self.allocating.get(id).is_some_and(|c| !c.is_empty())
    }

    fn allocating_for(&self, id: &DeviceId, claim: usize) -> bool {
        self.allocating.get(id).is_some_and(|c| c.contains(&claim))
    }

    /// `CmpRequestOverCapacity`: `None` when the request names a capacity the device lacks.
    fn capacity_fits(&self, r: &ExactRequest, c: &Candidate) -> Option<bool> {
        let requests = r.capacity.as_ref();
        if requests.is_some_and(|q| q.keys().any(|k| !c.device.capacity.contains_key(k))) {
            return None;
        }
        let consumed = self.allocated.consumed.get(&c.id);
        let allocating = self.allocating_capacity.get(&c.id);
        for (name, cap) in &c.device.capacity {
            let want = consumed_amount(requests.and_then(|q| q.get(name)), cap);
            if violates_policy(want, cap) {
                return Some(false);
            }
            let mut total = want;
            if let Some(q) = consumed.and_then(|m| m.get(name)) {
                total = total + *q;
            }
            if let Some(q) = allocating.and_then(|m| m.get(name)) {
                total = total + *q;
            }
            if total > cap.value {
                return Some(false);
            }
        }
        Some(true)
    }

    fn counter_key(&self, pool: &Pool) -> (Str, Str) {
        if self.features.counters_by_pool_id {
            (pool.driver, pool.name)
        } else {
            (Str::empty(), pool.name)
        }
    }

    fn device_allocated(&self, id: &DeviceId) -> bool {
        self.allocated.devices.contains_key(id)
            || (self.features.counters_count_shared_devices
                && (self.allocated.shared.contains_key(id)
                    || self.allocated.consumed.contains_key(id)))
    }

    /// `checkAvailableCounters`: takes the device's counters if the pool has them left.
    fn take_counters(&mut self, c: &Candidate) -> bool {
        let pool = &self.pools[c.pool];
        let key = self.counter_key(pool);
        if !self.available_counters.contains_key(&key) {
            let mut available = pool.counter_sets.clone();
            for s in pool.slices.iter().chain(&pool.other_slices) {
                for d in &s.devices {
                    if !self.device_allocated(&s.device_id(d)) {
                        continue;
                    }
                    for cc in &d.consumes_counters {
                        let Some(set) = available.get_mut(&cc.counter_set) else {
                            continue;
                        };
                        for (n, q) in &cc.counters {
                            if let Some(v) = set.get_mut(n) {
                                *v = *v - *q;
                            }
                        }
                    }
                }
            }
            self.available_counters.insert(key, available);
        }
        let consumed = self.consumed_counters.entry(key).or_default();
        for cc in &c.device.consumes_counters {
            let set = consumed.entry(cc.counter_set).or_default();
            for (n, q) in &cc.counters {
                let e = set.entry(*n).or_insert(Quantity::ZERO);
                *e = *e + *q;
            }
        }
        let available = &self.available_counters[&key];
        let exceeded = available.iter().any(|(set, counters)| {
            counters.iter().any(|(n, have)| {
                let used = consumed
                    .get(set)
                    .and_then(|m| m.get(n))
                    .copied()
                    .unwrap_or(Quantity::ZERO);
                *have < used
            })
        });
        if exceeded {
            self.give_back_counters(c);
            return false;
        }
        true
    }

    fn give_back_counters(&mut self, c: &Candidate) {
        let key = self.counter_key(&self.pools[c.pool]);
        let consumed = self.consumed_counters.entry(key).or_default();
        for cc in &c.device.consumes_counters {
            let set = consumed.entry(cc.counter_set).or_default();
            for (n, q) in &cc.counters {
                let e = set.entry(*n).or_insert(Quantity::ZERO);
                *e = *e - *q;
            }
        }
    }

    /// `allocateDevice`: checks availability, taints and constraints, and takes the device.
    fn allocate_device(
        &mut self,
        pos: Position,
        c: Candidate<'a>,
        must: bool,
    ) -> Result<Option<Undo>, String> {
        let claims = self.claims;
        let claim = &claims[pos.claim];
        let data = &self.requests[pos.claim][pos.request].subrequests[pos.sub];
        let request: &'a ExactRequest = data.request;
        let (base, sub) = match data.parent {
            Some(p) => (p, Some(request.name)),
            None => (request.name, None),
        };
        let multiple = self.features.consumable_capacity && c.device.allow_multiple_allocations;
        let admin = request.admin();
        if !multiple && admin && self.allocating_for(&c.id, pos.claim) {
            return Ok(None);
        }
        if !admin && self.in_use(&c.id) {
            return Ok(None);
        }
        if !self.features.partitionable_devices && !c.device.consumes_counters.is_empty() {
            return Ok(None);
        }
        let skip_counters = multiple
            && (self.allocated.consumed.contains_key(&c.id)
                || self.allocating_capacity.contains_key(&c.id));
        let mut took_counters = false;
        if !skip_counters && !c.device.consumes_counters.is_empty() {
            if !self.take_counters(&c) {
                return Ok(None);
            }
            took_counters = true;
        }
        let rollback = self.features.rolls_back_rejected_devices;
        if self.features.device_taints
            && c.device.taints.iter().any(|t| {
                matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
                    && !request.tolerations.iter().any(|tol| tol.tolerates(t))
            })
        {
            if rollback && took_counters {
                self.give_back_counters(&c);
            }
            return Ok(None);
        }
        let n_constraints = self.constraints[pos.claim].len();
        for i in 0..n_constraints {
            if !self.constraints[pos.claim][i].add(base, sub, &c) {
                if rollback && took_counters {
                    self.give_back_counters(&c);
                }
                if must {
                    return Err(format!(
                        "claim {}, request {}: cannot add device {} because a claim constraint would not be satisfied",
                        kobj(claim),
                        request.name,
                        c.id
                    ));
                }
                for e in 0..i {
                    self.constraints[pos.claim][e].remove(base, sub);
                }
                return Ok(None);
            }
        }
        if !multiple {
            self.allocating.entry(c.id).or_default().push(pos.claim);
        }
        let mut consumed = BTreeMap::new();
        if self.features.consumable_capacity {
            if self.capacity_fits(request, &c) != Some(true) {
                if rollback {
                    for e in 0..n_constraints {
                        self.constraints[pos.claim][e].remove(base, sub);
                    }
                    if !multiple {
                        self.release(&c.id, pos.claim);
                    }
                    if took_counters {
                        self.give_back_counters(&c);
                    }
                }
                return Ok(None);
            }
            if multiple {
                consumed = c
                    .device
                    .capacity
                    .iter()
                    .map(|(n, cap)| {
                        (
                            *n,
                            consumed_amount(request.capacity.as_ref().and_then(|q| q.get(n)), cap),
                        )
                    })
                    .collect();
                let e = self.allocating_capacity.entry(c.id).or_default();
                for (n, q) in &consumed {
                    let v = e.entry(*n).or_insert(Quantity::ZERO);
                    *v = *v + *q;
                }
            }
        }
        let request_name = self.requests[pos.claim][pos.request].subrequests[pos.sub].name();
        self.results[pos.claim].push(DeviceResult {
            request: request_name,
            id: c.id,
            admin_access: admin,
            shared: multiple,
            consumed_capacity: consumed.clone(),
            location: location(c.slice, c.device),
        });
        Ok(Some(Undo {
            claim: pos.claim,
            request: base,
            sub,
            id: c.id,
            // Before 1.36.3 a shared device's undo kept the counters it took.
            counters: took_counters && (!multiple || rollback),
            capacity: multiple.then_some(consumed),
        }))
    }

    fn release(&mut self, id: &DeviceId, claim: usize) {
        if let Some(v) = self.allocating.get_mut(id) {
            v.retain(|&c| c != claim);
        }
    }

    fn undo(&mut self, u: Undo, c: &Candidate) {
        for con in &mut self.constraints[u.claim] {
            con.remove(u.request, u.sub);
        }
        self.release(&u.id, u.claim);
        if let Some(consumed) = &u.capacity
            && let Some(e) = self.allocating_capacity.get_mut(&u.id)
        {
            for (n, q) in consumed {
                if let Some(v) = e.get_mut(n) {
                    *v = *v - *q;
                }
            }
            if e.values().all(|q| q.is_zero()) {
                self.allocating_capacity.remove(&u.id);
            }
        }
        if u.counters {
            self.give_back_counters(c);
        }
        self.results[u.claim].pop();
    }

    /// `allocateOne`: finds a device for position `r`, then recurses for the next one.
    fn allocate_one(
        &mut self,
        r: Position,
        allocating_sub: bool,
        start: Location,
    ) -> Result<bool, Stop> {
        if r.claim >= self.claims.len() {
            return Ok(true);
        }
        if r.request >= self.requests[r.claim].len() {
            return match self.allocate_one(
                Position {
                    claim: r.claim + 1,
                    ..Position::default()
                },
                false,
                Location::default(),
            ) {
                Err(Stop::TooMany) => Ok(false),
                other => other,
            };
        }
        let slot = &self.requests[r.claim][r.request];
        if !allocating_sub && slot.first_available {
            let n = slot.subrequests.len();
            let mut all_too_many = true;
            for sub in 0..n {
                match self.allocate_one(Position { sub, ..r }, true, Location::default()) {
                    Err(Stop::TooMany) => continue,
                    Err(e) => return Err(e),
                    Ok(done) => {
                        all_too_many = false;
                        if done {
                            self.requests[r.claim][r.request].selected = sub;
                            return Ok(true);
                        }
                    }
                }
            }
            return if all_too_many {
                Err(Stop::TooMany)
            } else {
                Ok(false)
            };
        }
        let data = &slot.subrequests[r.sub];
        let all = matches!(data.request.mode, AllocationMode::All);
        if all && data.all_devices.is_empty() {
            return Ok(false);
        }
        if r.device >= data.num_devices {
            return self.allocate_one(
                Position {
                    claim: r.claim,
                    request: r.request + 1,
                    ..Position::default()
                },
                false,
                Location::default(),
            );
        }
        if self.results[r.claim].len() + data.num_devices - r.device > ALLOCATION_RESULTS_MAX_SIZE {
            return Err(Stop::TooMany);
        }
        let next = Position {
            device: r.device + 1,
            ..r
        };
        if all {
            let c = data.all_devices[r.device];
            let Some(undo) = self.allocate_device(r, c, true).map_err(Stop::Fatal)? else {
                return Ok(false);
            };
            return match self.allocate_one(next, allocating_sub, Location::default()) {
                Ok(true) => Ok(true),
                other => {
                    self.undo(undo, &c);
                    other.map(|_| false)
                }
            };
        }
        let admin = data.request.admin();
        for pi in start.pool..self.pools.len() {
            let pool = &self.pools[pi];
            if pool.incomplete && self.features.skips_unusable_pools {
                continue;
            }
            if let Some(why) = &pool.invalid {
                if self.features.skips_unusable_pools {
                    continue;
                }
                return Err(Stop::Fatal(format!("pool {} is invalid: {why}", pool.name)));
            }
            let first_slice = if pi == start.pool { start.slice } else { 0 };
            for si in first_slice..pool.slices.len() {
                let slice = self.pools[pi].slices[si];
                let first_device = if pi == start.pool && si == start.slice {
                    start.device
                } else {
                    0
                };
                for di in first_device..slice.devices.len() {
                    let device = &slice.devices[di];
                    let c = Candidate {
                        pool: pi,
                        slice,
                        device,
                        id: slice.device_id(device),
                    };
                    if admin && self.allocating_for(&c.id, r.claim) {
                        continue;
                    }
                    if !admin && self.in_use(&c.id) {
                        continue;
                    }
                    let data = &self.requests[r.claim][r.request].subrequests[r.sub];
                    if !self.selectable(r.claim, data, &c).map_err(Stop::Fatal)? {
                        continue;
                    }
                    if self.features.consumable_capacity
                        && self.capacity_fits(data.request, &c) != Some(true)
                    {
                        continue;
                    }
                    let Some(undo) = self.allocate_device(r, c, false).map_err(Stop::Fatal)? else {
                        continue;
                    };
                    let resume = Location {
                        pool: pi,
                        slice: si,
                        device: di + 1,
                    };
                    match self.allocate_one(next, allocating_sub, resume) {
                        Ok(true) => return Ok(true),
                        Ok(false) => self.undo(undo, &c),
                        Err(e) => {
                            self.undo(undo, &c);
                            return Err(e);
                        }
                    }
                }
            }
        }
        Ok(false)
    }
}

/// What one request of a claim finds on a node: for the explanation, not the decision.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestCensus {
    pub claim: Str,
    /// `<request>` or `<request>/<subrequest>`.
    pub request: String,
    pub device_class: Str,
    /// How many devices it asks for: a count, or `All`.
    pub wants: String,
    /// Free devices that pass every check of the request on their own.
    pub usable: Vec<String>,
    /// The other devices the node can see, each with why it cannot serve the request.
    pub excluded: Vec<ExcludedDevice>,
    /// The claim's constraints that bind this request's devices to others.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ExcludedDevice {
    /// `driver/pool/device`.
    pub device: String,
    pub reason: String,
}

/// For each request of `claim`, the devices `node` offers and why each is or is not usable,
/// checking what the allocator checks device by device (constraints between devices aside).
/// `holder` names who holds an allocated device.
pub fn census(
    dra: &Dra,
    features: AllocatorFeatures,
    allocated: &AllocatedState,
    node: NodeRef,
    claim: ClaimInput,
    holder: &dyn Fn(&DeviceId) -> String,
) -> Vec<RequestCensus> {
    let claims = [claim];
    let s = Search {
        dra,
        features,
        allocated,
        node,
        claims: &claims,
        pools: gather_pools(dra, node, &features),
        requests: Vec::new(),
        constraints: Vec::new(),
        allocating: HashMap::new(),
        allocating_capacity: HashMap::new(),
        available_counters: HashMap::new(),
        consumed_counters: HashMap::new(),
        results: Vec::new(),
    };
    let mut out = Vec::new();
    for request in &claim.spec.requests {
        let (subs, parent): (Vec<&ExactRequest>, Option<Str>) = match &request.kind {
            RequestKind::Exactly(r) => (vec![r], None),
            RequestKind::FirstAvailable(subs) => (subs.iter().collect(), Some(request.name)),
            RequestKind::Unknown => continue,
        };
        for r in subs {
            let Some(class) = dra.classes.get(&r.class) else {
                continue;
            };
            let data = RequestData {
                request: r,
                parent,
                class,
                num_devices: 0,
                all_devices: Vec::new(),
            };
            let mut c = RequestCensus {
                claim: claim.name,
                request: data.name(),
                device_class: r.class,
                wants: match r.mode {
                    AllocationMode::ExactCount(n) => n.to_string(),
                    _ => r.mode_name.clone(),
                },
                usable: Vec::new(),
                excluded: Vec::new(),
                constraints: claim
                    .spec
                    .constraints
                    .iter()
                    .filter_map(|con| {
                        let (kind, requests, attribute) = match con {
                            Constraint::MatchAttribute {
                                requests,
                                attribute,
                            } => ("matchAttribute", requests, attribute),
                            Constraint::DistinctAttribute {
                                requests,
                                attribute,
                            } => ("distinctAttribute", requests, attribute),
                            Constraint::Unknown => return None,
                        };
                        applies(requests, parent.unwrap_or(r.name), parent.map(|_| r.name))
                            .then(|| format!("{kind} {attribute}"))
                    })
                    .collect(),
            };
            for (pi, pool) in s.pools.iter().enumerate() {
                let unusable = if pool.incomplete {
                    Some("its pool is incomplete (some ResourceSlices are missing)".to_string())
                } else {
                    pool.invalid
                        .as_ref()
                        .map(|why| format!("its pool is invalid: {why}"))
                };
                for slice in &pool.slices {
                    for device in &slice.devices {
                        let cand = Candidate {
                            pool: pi,
                            slice,
                            device,
                            id: slice.device_id(device),
                        };
                        let reason = unusable.clone().or_else(|| s.why_not(&data, &cand, holder));
                        match reason {
                            None => c.usable.push(cand.id.to_string()),
                            Some(reason) => c.excluded.push(ExcludedDevice {
                                device: cand.id.to_string(),
                                reason,
                            }),
                        }
                    }
                }
            }
            out.push(c);
        }
    }
    out
}

impl Search<'_> {
    /// Why a device cannot serve a request on its own, in the order the allocator checks.
    fn why_not(
        &self,
        data: &RequestData,
        c: &Candidate,
        holder: &dyn Fn(&DeviceId) -> String,
    ) -> Option<String> {
        let request = data.request;
        if !request.admin() && self.allocated.devices.contains_key(&c.id) {
            return Some(format!("allocated to {}", holder(&c.id)));
        }
        if !self.features.binding_and_status && !c.device.binding_conditions.is_empty() {
            return Some("it has binding conditions (DRADeviceBindingConditions is off)".into());
        }
        // The class's selectors, then the request's; named only when one excludes the device.
        let selectors = (data.class.selectors.iter().enumerate())
            .map(|(i, &s)| (true, i, s))
            .chain(
                request
                    .selectors
                    .iter()
                    .enumerate()
                    .map(|(i, &s)| (false, i, s)),
            );
        for (of_class, i, sel) in selectors {
            let what = || {
                if of_class {
                    format!("DeviceClass {} selector #{i}", data.class.name)
                } else {
                    format!("request {} selector #{i}", data.name())
                }
            };
            match self.dra.selector_result(sel, c.device.profile) {
                Ok(true) => {}
                Ok(false) => {
                    let expression = self.dra.selector_expression(sel);
                    return Some(format!("{} is false: {expression}", what()));
                }
                Err(e) => return Some(format!("{} fails: CEL runtime error: {e}", what())),
            }
        }
        if c.slice.per_device_node_selection == Some(true)
            && !c
                .device
                .node_scope
                .as_ref()
                .is_some_and(|sc| scope_matches(sc, self.node))
        {
            return Some("not usable from this node".into());
        }
        if self.features.consumable_capacity && self.capacity_fits(request, c) != Some(true) {
            return Some("not enough capacity left for the request".into());
        }
        if !self.features.partitionable_devices && !c.device.consumes_counters.is_empty() {
            return Some("it consumes shared counters (DRAPartitionableDevices is off)".into());
        }
        if self.features.device_taints
            && let Some(t) = c.device.taints.iter().find(|t| {
                matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
                    && !request.tolerations.iter().any(|tol| tol.tolerates(t))
            })
        {
            return Some(format!(
                "taint {}={}:{} is not tolerated",
                t.key, t.value, t.effect
            ));
        }
        None
    }
}

/// `calculateConsumedCapacity`.
fn consumed_amount(requested: Option<&Quantity>, cap: &CapacityEntry) -> Quantity {
    let Some(&requested) = requested else {
        return cap
            .policy
            .as_ref()
            .and_then(|p| p.default)
            .unwrap_or(cap.value);
    };
    let Some(policy) = &cap.policy else {
        return requested;
    };
    if let Some((min, _, step)) = &policy.valid_range {
        if requested < *min {
            return *min;
        }
        let Some(step) = step else {
            return requested;
        };
        let (r, s, m) = (requested.value(), step.value(), min.value());
        if s == 0 {
            return requested;
        }
        let added = r - m;
        let n = added / s + i64::from(added % s != 0);
        return Quantity::from_units(m + s * n);
    }
    if !policy.valid_values.is_empty() {
        return policy
            .valid_values
            .iter()
            .find(|v| requested <= **v)
            .copied()
            .unwrap_or(requested);
    }
    requested
}

/// `violatesPolicy`.
fn violates_policy(value: Quantity, cap: &CapacityEntry) -> bool {
    let Some(policy) = &cap.policy else {
        return false;
    };
    if policy.default == Some(value) {
        return false;
    }
    if let Some((min, max, step)) = &policy.valid_range {
        if max.is_some_and(|m| value > m) {
            return true;
        }
        if let Some(step) = step {
            let s = step.value();
            return s != 0 && (value.value() - min.value()) % s != 0;
        }
        return false;
    }
    if !policy.valid_values.is_empty() {
        return !policy.valid_values.contains(&value);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cluster::Cluster;
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    use crate::testing::{cluster, device_class, gpu_slice, node, resource_claim};
    use serde_json::{Value, json};
    use std::sync::Arc;

    /// The 1.35/1.36 allocator with v1.36's gates.
    const INCUBATING: AllocatorFeatures = AllocatorFeatures {
        admin_access: true,
        prioritized_list: true,
        partitionable_devices: true,
        device_taints: true,
        binding_and_status: true,
        consumable_capacity: true,
        skips_unusable_pools: true,
        rolls_back_rejected_devices: true,
        counters_by_pool_id: true,
        counters_count_shared_devices: true,
    };
    /// The 1.34 allocator with v1.34's gates.
    const EXPERIMENTAL: AllocatorFeatures = AllocatorFeatures {
        partitionable_devices: false,
        device_taints: false,
        binding_and_status: false,
        consumable_capacity: false,
        skips_unusable_pools: false,
        ..INCUBATING
    };

    fn gpu_cluster(mut items: Vec<Value>) -> Vec<Value> {
        items.push(node("node-1", "4", json!({"zone": "a"})));
        items.push(device_class(
            "gpu",
            &["device.driver == \"gpu.example.com\""],
        ));
        items
    }

    /// Allocates a claim `default/c` with `devices` on node-1 of a cluster of `items`: the
    /// devices as `request=device`.
    fn run(
        items: &[Value],
        f: AllocatorFeatures,
        devices: Value,
    ) -> Result<Option<Vec<String>>, AllocError> {
        let mut items = items.to_vec();
        items.push(resource_claim("default/c", devices));
        let c: Arc<Cluster> = cluster(items);
        let dra = &c.dra;
        let claim = &dra.claims[&(Str::new("default"), Str::new("c"))];
        let labels = crate::model::labels::Labels::from_map(
            &[("zone".to_string(), "a".to_string())].into(),
            &Interner::new(),
        );
        let node = NodeRef {
            name: Str::new("node-1"),
            labels: &labels,
        };
        let input = [ClaimInput {
            namespace: claim.namespace,
            name: claim.name,
            spec: &claim.spec,
        }];
        allocate(dra, f, dra.allocated(f.consumable_capacity), node, &input).map(|r| {
            r.map(|claims| {
                claims[0]
                    .iter()
                    .map(|d| format!("{}={}", d.request, d.id.device))
                    .collect()
            })
        })
    }

    fn exactly(name: &str, extra: Value) -> Value {
        let mut e = json!({"deviceClassName": "gpu"});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                e[k] = v;
            }
        }
        json!({"name": name, "exactly": e})
    }

    fn devices(names: &[&str]) -> Value {
        names.iter().map(|n| json!({"name": n})).collect()
    }

    #[test]
    fn devices_are_taken_in_order_skipping_allocated_ones() {
        let mut taken = resource_claim(
            "default/other",
            json!({"requests": [exactly("r", json!({}))]}),
        );
        taken["status"] = json!({"allocation": {"devices": {"results": [
            {"request": "r", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}}});
        let c = gpu_cluster(vec![
            gpu_slice("node-1", devices(&["gpu-0", "gpu-1", "gpu-2"])),
            taken,
        ]);
        let two = json!({"requests": [exactly("r", json!({"count": 2}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, two).unwrap(),
            Some(vec!["r=gpu-1".into(), "r=gpu-2".into()])
        );
        let three = json!({"requests": [exactly("r", json!({"count": 3}))]});
        assert_eq!(run(&c, EXPERIMENTAL, three).unwrap(), None);
    }

    #[test]
    fn match_attribute_backtracks_to_a_device_with_the_same_value() {
        let dev = |name: &str, root: &str| json!({"name": name, "attributes": {"resource.kubernetes.io/pcieRoot": {"string": root}}});
        let c = gpu_cluster(vec![gpu_slice(
            "node-1",
            json!([dev("gpu-0", "a"), dev("gpu-1", "b"), dev("gpu-2", "b")]),
        )]);
        let claim = json!({
            "requests": [exactly("first", json!({})), exactly("second", json!({"selectors": [
                {"cel": {"expression": "device.attributes[\"resource.kubernetes.io\"].pcieRoot == \"b\""}}]}))],
            "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]});
        assert_eq!(
            run(&c, EXPERIMENTAL, claim).unwrap(),
            Some(vec!["first=gpu-1".into(), "second=gpu-2".into()])
        );
    }

    #[test]
    fn a_match_attribute_of_the_driver_domain_finds_the_bare_attribute() {
        let dev = |name: &str, model: &str| json!({"name": name, "attributes": {"model": {"string": model}}});
        let c = gpu_cluster(vec![gpu_slice(
            "node-1",
            json!([
                dev("gpu-0", "a100"),
                dev("gpu-1", "h100"),
                dev("gpu-2", "h100")
            ]),
        )]);
        let claim = json!({"requests": [exactly("r", json!({"count": 2}))],
            "constraints": [{"matchAttribute": "gpu.example.com/model"}]});
        assert_eq!(
            run(&c, EXPERIMENTAL, claim).unwrap(),
            Some(vec!["r=gpu-1".into(), "r=gpu-2".into()])
        );
        let other_domain = json!({"requests": [exactly("r", json!({"count": 2}))],
            "constraints": [{"matchAttribute": "other.example.com/model"}]});
        assert_eq!(run(&c, EXPERIMENTAL, other_domain).unwrap(), None);
    }

    #[test]
    fn only_the_newest_generation_of_a_pool_counts() {
        let mut old = gpu_slice("node-1", devices(&["old-0", "old-1"]));
        old["metadata"]["name"] = json!("old");
        let mut new = gpu_slice("node-1", devices(&["new-0"]));
        new["spec"]["pool"]["generation"] = json!(2);
        let c = gpu_cluster(vec![old, new]);
        let one = json!({"requests": [exactly("r", json!({}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, one).unwrap(),
            Some(vec!["r=new-0".into()])
        );
        let two = json!({"requests": [exactly("r", json!({"count": 2}))]});
        assert_eq!(run(&c, EXPERIMENTAL, two).unwrap(), None);
    }

    #[test]
    fn all_mode_needs_every_matching_device_free_and_at_least_one() {
        let c = gpu_cluster(vec![gpu_slice("node-1", devices(&["gpu-0", "gpu-1"]))]);
        let all = json!({"requests": [exactly("r", json!({"allocationMode": "All"}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, all).unwrap(),
            Some(vec!["r=gpu-0".into(), "r=gpu-1".into()])
        );
        let none = json!({"requests": [exactly("r", json!({"allocationMode": "All",
            "selectors": [{"cel": {"expression": "device.attributes[\"gpu.example.com\"].size() > 0"}}]}))]});
        assert_eq!(run(&c, EXPERIMENTAL, none).unwrap(), None);
    }

    #[test]
    fn first_available_takes_the_first_subrequest_that_fits() {
        let c = gpu_cluster(vec![gpu_slice("node-1", devices(&["gpu-0", "gpu-1"]))]);
        let claim = json!({"requests": [{"name": "gpu", "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu", "count": 3},
            {"name": "small", "deviceClassName": "gpu", "count": 2}]}]});
        assert_eq!(
            run(&c, EXPERIMENTAL, claim).unwrap(),
            Some(vec!["gpu/small=gpu-0".into(), "gpu/small=gpu-1".into()])
        );
    }

    #[test]
    fn admin_access_may_use_a_taken_device() {
        let mut taken = resource_claim(
            "default/other",
            json!({"requests": [exactly("r", json!({}))]}),
        );
        taken["status"] = json!({"allocation": {"devices": {"results": [
            {"request": "r", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}}});
        let c = gpu_cluster(vec![gpu_slice("node-1", devices(&["gpu-0"])), taken]);
        let admin = json!({"requests": [exactly("r", json!({"adminAccess": true}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, admin).unwrap(),
            Some(vec!["r=gpu-0".into()])
        );
        let plain = json!({"requests": [exactly("r", json!({}))]});
        assert_eq!(run(&c, EXPERIMENTAL, plain).unwrap(), None);
    }

    #[test]
    fn incomplete_and_invalid_pools_by_variant() {
        let mut incomplete = gpu_slice("node-1", devices(&["gpu-0"]));
        incomplete["spec"]["pool"]["resourceSliceCount"] = json!(2);
        let c = gpu_cluster(vec![incomplete]);
        let one = json!({"requests": [exactly("r", json!({}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, one.clone()).unwrap(),
            Some(vec!["r=gpu-0".into()])
        );
        assert_eq!(run(&c, INCUBATING, one).unwrap(), None);
        let all = json!({"requests": [exactly("r", json!({"allocationMode": "All"}))]});
        assert_eq!(
            run(&c, INCUBATING, all).unwrap_err(),
            AllocError::Fatal("claim default/c, request r: asks for all devices, but resource pool gpu.example.com/node-1 is currently being updated".into())
        );

        // Two slices of one pool name the same device.
        let mut first = gpu_slice("node-1", devices(&["gpu-0"]));
        first["spec"]["pool"]["resourceSliceCount"] = json!(2);
        let mut second = first.clone();
        second["metadata"]["name"] = json!("node-1-gpu-b");
        let c = gpu_cluster(vec![first, second]);
        let one = json!({"requests": [exactly("r", json!({}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, one.clone()).unwrap_err(),
            AllocError::Fatal("pool node-1 is invalid: duplicate device name gpu-0".into())
        );
        assert_eq!(
            run(&c, INCUBATING, one).unwrap_err(),
            AllocError::Node("invalid resource pools were encountered".into())
        );

        // One slice naming a device twice never reaches the allocator: the API server, and
        // loading, refuse it.
        let list = json!({"apiVersion": "v1", "kind": "List",
            "items": gpu_cluster(vec![gpu_slice("node-1", devices(&["gpu-0", "gpu-0"]))])});
        let err = crate::source::file::load_bytes("test.json", serde_json::to_vec(&list).unwrap())
            .expect_err("a slice with a duplicate device name is bad input")
            .to_string();
        assert!(
            err.contains(
                "ResourceSlice node-1-gpu: spec.devices[1].name: Duplicate value: \"gpu-0\""
            ),
            "{err}"
        );
    }

    #[test]
    fn a_cel_error_is_fatal_only_on_a_device_the_search_reaches() {
        let dev = |name: &str, attrs: Value| json!({"name": name, "attributes": attrs});
        let c = gpu_cluster(vec![gpu_slice(
            "node-1",
            json!([
                dev("gpu-0", json!({"model": {"string": "a100"}})),
                dev("gpu-1", json!({}))
            ]),
        )]);
        let sel = json!([{"cel": {"expression": "device.attributes[\"gpu.example.com\"].model == \"a100\""}}]);
        let one = json!({"requests": [exactly("r", json!({"selectors": sel}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, one).unwrap(),
            Some(vec!["r=gpu-0".into()])
        );
        let two = json!({"requests": [exactly("r", json!({"count": 2, "selectors": sel}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, two).unwrap_err(),
            AllocError::Fatal(
                "claim default/c: selector #0: CEL runtime error: no such key: model".into()
            )
        );
    }

    #[test]
    fn untolerated_taints_exclude_a_device_when_device_taints_are_on() {
        let c = gpu_cluster(vec![gpu_slice(
            "node-1",
            json!([{"name": "gpu-0", "taints": [{"key": "broken", "value": "yes", "effect": "NoSchedule"}]}]),
        )]);
        let plain = json!({"requests": [exactly("r", json!({}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, plain.clone()).unwrap(),
            Some(vec!["r=gpu-0".into()])
        );
        assert_eq!(run(&c, INCUBATING, plain).unwrap(), None);
        let tolerant = json!({"requests": [exactly("r", json!({"tolerations": [
            {"key": "broken", "operator": "Exists"}]}))]});
        assert_eq!(
            run(&c, INCUBATING, tolerant).unwrap(),
            Some(vec!["r=gpu-0".into()])
        );
    }

    #[test]
    fn partitions_share_their_pool_counters() {
        let counters = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node-1-counters"},
            "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
                "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 2},
                "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}]}});
        let part = |name: &str, mem: &str| {
            json!({"name": name,
            "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": mem}}}]})
        };
        let mut devices = gpu_slice(
            "node-1",
            json!([
                part("half-0", "40Gi"),
                part("half-1", "40Gi"),
                part("whole", "80Gi")
            ]),
        );
        devices["spec"]["pool"]["resourceSliceCount"] = json!(2);
        let c = gpu_cluster(vec![counters, devices]);
        let two = json!({"requests": [exactly("r", json!({"count": 2}))]});
        assert_eq!(
            run(&c, INCUBATING, two).unwrap(),
            Some(vec!["r=half-0".into(), "r=half-1".into()])
        );
        let three = json!({"requests": [exactly("r", json!({"count": 3}))]});
        assert_eq!(run(&c, INCUBATING, three).unwrap(), None);
        let one = json!({"requests": [exactly("r", json!({}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, one).unwrap(),
            None,
            "without DRAPartitionableDevices a device that consumes counters is never allocated"
        );
    }

    #[test]
    fn a_shared_device_gives_capacity_until_it_runs_out() {
        let c = gpu_cluster(vec![gpu_slice(
            "node-1",
            json!([{"name": "gpu-0", "allowMultipleAllocations": true,
                "capacity": {"memory": {"value": "80Gi"}}}]),
        )]);
        let mem = |q: &str| json!({"capacity": {"requests": {"memory": q}}});
        let two = json!({"requests": [exactly("a", mem("40Gi")), exactly("b", mem("40Gi"))]});
        assert_eq!(
            run(&c, INCUBATING, two).unwrap(),
            Some(vec!["a=gpu-0".into(), "b=gpu-0".into()])
        );
        let too_much = json!({"requests": [exactly("a", mem("40Gi")), exactly("b", mem("41Gi"))]});
        assert_eq!(run(&c, INCUBATING, too_much).unwrap(), None);
    }

    #[test]
    fn a_claim_may_get_at_most_32_devices() {
        let c = gpu_cluster(vec![gpu_slice("node-1", devices(&["gpu-0"]))]);
        let many = json!({"requests": [exactly("r", json!({"count": 33}))]});
        assert_eq!(
            run(&c, EXPERIMENTAL, many).unwrap_err(),
            AllocError::Fatal(
                "claim default/c: number of requested devices 33 exceeds the claim limit of 32"
                    .into()
            )
        );
    }
}
