//! The search (`allocateOne`, `allocateDevice`): claims in order, requests in claim order,
//! devices one after the other; a dead end backtracks to the previous device.

use super::capacity::consumed_amount;
use super::constraints::ConstraintState;
use super::counters::Counters;
use super::pools::{Pool, gather_pools, scope_matches};
use super::rollback::{CapacityShare, Cause, DeviceChanges};
use super::{AllocatorFeatures, ClaimInput, DeviceResult, NodeRef, kobj, location};
use crate::model::dra::objects::{
    ALLOCATION_RESULTS_MAX_SIZE, AllocatedState, AllocationMode, Constraint, Device, DeviceClass,
    DeviceId, Dra, ExactRequest, RequestKind, Slice,
};
use crate::model::intern::Str;
use crate::model::quantity::Quantity;
use std::collections::{BTreeMap, HashMap};

/// A device of a pool.
#[derive(Clone, Copy)]
pub(super) struct Candidate<'a> {
    pub(super) pool: usize,
    pub(super) slice: &'a Slice,
    pub(super) device: &'a Device,
    pub(super) id: DeviceId,
}

/// A request or subrequest with what allocating it needs.
pub(super) struct RequestData<'a> {
    pub(super) request: &'a ExactRequest,
    /// The parent request of a subrequest.
    pub(super) parent: Option<Str>,
    pub(super) class: &'a DeviceClass,
    pub(super) num_devices: usize,
    /// For `allocationMode: All`, the devices it takes.
    pub(super) all_devices: Vec<Candidate<'a>>,
}

impl RequestData<'_> {
    pub(super) fn name(&self) -> String {
        match self.parent {
            Some(p) => format!("{p}/{}", self.request.name),
            None => self.request.name.to_string(),
        }
    }
}

/// A claim's requests: one entry per plain request, the subrequests of a `firstAvailable` one.
pub(super) struct RequestSlot<'a> {
    pub(super) subrequests: Vec<RequestData<'a>>,
    pub(super) first_available: bool,
    pub(super) selected: usize,
}

/// Where the search for a request's next device resumes (its devices are combinations, not
/// permutations).
#[derive(Clone, Copy, Default)]
pub(super) struct Location {
    pub(super) pool: usize,
    pub(super) slice: usize,
    pub(super) device: usize,
}

#[derive(Clone, Copy, Default)]
pub(super) struct Position {
    pub(super) claim: usize,
    pub(super) request: usize,
    pub(super) sub: usize,
    pub(super) device: usize,
}

pub(super) enum Stop {
    Fatal(String),
    /// `errAllocationResultMaxSizeExceeded`.
    TooMany,
}

pub(super) struct Search<'a> {
    pub(super) dra: &'a Dra,
    pub(super) features: AllocatorFeatures,
    pub(super) allocated: &'a AllocatedState,
    pub(super) node: NodeRef<'a>,
    pub(super) claims: &'a [ClaimInput<'a>],
    pub(super) pools: Vec<Pool<'a>>,
    pub(super) requests: Vec<Vec<RequestSlot<'a>>>,
    pub(super) constraints: Vec<Vec<ConstraintState>>,
    /// Devices being allocated in this attempt, and for which claims.
    pub(super) allocating: HashMap<DeviceId, Vec<usize>>,
    pub(super) allocating_capacity: HashMap<DeviceId, BTreeMap<Str, Quantity>>,
    /// Per counter key (pool, or pool name), what allocated devices left of each counter set.
    pub(super) available_counters: HashMap<(Str, Str), Counters>,
    pub(super) consumed_counters: HashMap<(Str, Str), Counters>,
    pub(super) results: Vec<Vec<DeviceResult>>,
}

impl<'a> Search<'a> {
    pub(super) fn new(
        dra: &'a Dra,
        features: AllocatorFeatures,
        allocated: &'a AllocatedState,
        node: NodeRef<'a>,
        claims: &'a [ClaimInput<'a>],
    ) -> Search<'a> {
        Search {
            dra,
            features,
            allocated,
            node,
            claims,
            pools: gather_pools(dra, node, &features),
            requests: Vec::new(),
            constraints: Vec::new(),
            allocating: HashMap::new(),
            allocating_capacity: HashMap::new(),
            available_counters: HashMap::new(),
            consumed_counters: HashMap::new(),
            results: vec![Vec::new(); claims.len()],
        }
    }

    /// Checks the claims and gathers what each request needs, as `Allocate` does before
    /// searching.
    pub(super) fn prepare(&mut self) -> Result<(), String> {
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
    pub(super) fn request_data(
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
    pub(super) fn selectable(
        &self,
        ci: usize,
        data: &RequestData,
        c: &Candidate,
    ) -> Result<bool, String> {
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

    pub(super) fn in_use(&self, id: &DeviceId) -> bool {
        self.allocated.devices.contains_key(id)
            || self.allocating.get(id).is_some_and(|c| !c.is_empty())
    }

    pub(super) fn allocating_for(&self, id: &DeviceId, claim: usize) -> bool {
        self.allocating.get(id).is_some_and(|c| c.contains(&claim))
    }

    /// `allocateDevice`: checks availability, taints and constraints, and takes the device.
    pub(super) fn allocate_device(
        &mut self,
        pos: Position,
        c: Candidate<'a>,
        must: bool,
    ) -> Result<Option<DeviceChanges>, String> {
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
        // A device already shared took its counters with its first share.
        let skip_counters = multiple
            && (self.allocated.consumed.contains_key(&c.id)
                || self.allocating_capacity.contains_key(&c.id));
        let mut changes = DeviceChanges::new(pos.claim, base, sub, c.id);
        changes.shared = multiple;
        if !skip_counters && !c.device.consumes_counters.is_empty() {
            if !self.take_counters(&c) {
                return Ok(None);
            }
            changes.counters_reserved = true;
        }
        if self.features.device_taints
            && c.device.taints.iter().any(|t| {
                matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
                    && !request.tolerations.iter().any(|tol| tol.tolerates(t))
            })
        {
            self.roll_back(&changes, &c, Cause::Taint);
            return Ok(None);
        }
        for i in 0..self.constraints[pos.claim].len() {
            if !self.constraints[pos.claim][i].add(base, sub, &c) {
                self.roll_back(&changes, &c, Cause::Constraint);
                if must {
                    return Err(format!(
                        "claim {}, request {}: cannot add device {} because a claim constraint would not be satisfied",
                        kobj(claim),
                        request.name,
                        c.id
                    ));
                }
                return Ok(None);
            }
            changes.constraints_added += 1;
        }
        if !multiple {
            self.allocating.entry(c.id).or_default().push(pos.claim);
            changes.marked_in_use = true;
        }
        let mut consumed = BTreeMap::new();
        if self.features.consumable_capacity {
            if self.capacity_fits(request, &c) != Some(true) {
                self.roll_back(&changes, &c, Cause::Capacity);
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
                let entry_existed = self.take_capacity(c.id, &consumed);
                changes.capacity = Some(CapacityShare {
                    consumed: consumed.clone(),
                    entry_existed,
                });
            }
        }
        let request_name = self.requests[pos.claim][pos.request].subrequests[pos.sub].name();
        self.results[pos.claim].push(DeviceResult {
            request: request_name,
            id: c.id,
            admin_access: admin,
            shared: multiple,
            consumed_capacity: consumed,
            location: location(c.slice, c.device),
        });
        changes.result_added = true;
        Ok(Some(changes))
    }

    /// `allocateOne`: finds a device for position `r`, then recurses for the next one.
    pub(super) fn allocate_one(
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
            let Some(changes) = self.allocate_device(r, c, true).map_err(Stop::Fatal)? else {
                return Ok(false);
            };
            return match self.allocate_one(next, allocating_sub, Location::default()) {
                Ok(true) => Ok(true),
                other => {
                    self.roll_back(&changes, &c, Cause::Backtrack);
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
                    let Some(changes) = self.allocate_device(r, c, false).map_err(Stop::Fatal)?
                    else {
                        continue;
                    };
                    let resume = Location {
                        pool: pi,
                        slice: si,
                        device: di + 1,
                    };
                    match self.allocate_one(next, allocating_sub, resume) {
                        Ok(true) => return Ok(true),
                        Ok(false) => self.roll_back(&changes, &c, Cause::Backtrack),
                        Err(e) => {
                            self.roll_back(&changes, &c, Cause::Backtrack);
                            return Err(e);
                        }
                    }
                }
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::super::AllocError;
    use super::super::test_support::{
        EXPERIMENTAL, INCUBATING, devices, exactly, gpu_cluster, run,
    };
    use crate::testing::{gpu_slice, resource_claim};
    use serde_json::{Value, json};

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
