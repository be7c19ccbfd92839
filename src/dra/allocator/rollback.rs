//! What trying a candidate device changed, and what each release undoes when the device is
//! rejected part-way through `allocateDevice` or the search backtracks from it.
//!
//! v1.36.3 records every change (`deviceRollbackState`) and undoes all of it on every path
//! (`rollbackDevice`). Earlier releases undo by hand, path by path, and leave some of it behind
//! for the rest of the search on that node:
//! - rejected by an untolerated taint: the shared counters it took stay taken;
//! - rejected by a constraint: its entries in the earlier constraints are removed, its counters
//!   stay taken;
//! - rejected for capacity (an `All` request's device that earlier shares filled up): its
//!   counters, its constraint entries and its in-use mark all stay;
//! - backtracked: a device shared through consumable capacity keeps the counters its first share
//!   took, and its "already shared" marker (the device's entry among the capacity being
//!   allocated, which lets later shares skip the counter check) is removed only by subtracting
//!   what this share consumed: a share that consumed nothing leaves the marker behind, and one
//!   that leaves only zeros removes it although an earlier share still holds the device.

use super::search::{Candidate, Search};
use crate::model::dra::objects::DeviceId;
use crate::model::intern::Str;
use crate::model::quantity::Quantity;
use std::collections::BTreeMap;

/// What `allocateDevice` changed for one candidate device (`deviceRollbackState`).
pub(super) struct DeviceChanges {
    pub(super) claim: usize,
    /// The request, or the parent of the subrequest, and the subrequest: as constraints see them.
    pub(super) request: Str,
    pub(super) sub: Option<Str>,
    pub(super) id: DeviceId,
    /// Allocated as one share of a device that allows multiple allocations.
    pub(super) shared: bool,
    pub(super) counters_reserved: bool,
    /// How many of the claim's constraints, in order, took the device.
    pub(super) constraints_added: usize,
    pub(super) marked_in_use: bool,
    pub(super) capacity: Option<CapacityShare>,
    pub(super) result_added: bool,
}

/// The capacity one share of a device consumed.
pub(super) struct CapacityShare {
    pub(super) consumed: BTreeMap<Str, Quantity>,
    /// An earlier share already held the device: its entry is the "already shared" marker.
    pub(super) entry_existed: bool,
}

/// Why a candidate's changes are undone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cause {
    Taint,
    Constraint,
    Capacity,
    /// The search backtracks from a device it had accepted.
    Backtrack,
}

impl DeviceChanges {
    pub(super) fn new(claim: usize, request: Str, sub: Option<Str>, id: DeviceId) -> Self {
        DeviceChanges {
            claim,
            request,
            sub,
            id,
            shared: false,
            counters_reserved: false,
            constraints_added: 0,
            marked_in_use: false,
            capacity: None,
            result_added: false,
        }
    }
}

impl Search<'_> {
    /// `rollbackDevice` (v1.36.3), or what the earlier releases undo on the path of `cause`.
    pub(super) fn roll_back(&mut self, changes: &DeviceChanges, c: &Candidate, cause: Cause) {
        let everything = self.features.rolls_back_rejected_devices;
        let backtrack = cause == Cause::Backtrack;
        if changes.result_added {
            self.results[changes.claim].pop();
        }
        if let Some(share) = &changes.capacity
            && (everything || !share.consumed.is_empty())
        {
            self.give_back_capacity(&changes.id, share, everything);
        }
        if changes.marked_in_use && (everything || backtrack) {
            self.release(&changes.id, changes.claim);
        }
        if everything || backtrack || cause == Cause::Constraint {
            for con in &mut self.constraints[changes.claim][..changes.constraints_added] {
                con.remove(changes.request, changes.sub);
            }
        }
        if changes.counters_reserved && (everything || (backtrack && !changes.shared)) {
            self.give_back_counters(c);
        }
    }

    /// The device is no longer being allocated for `claim`.
    pub(super) fn release(&mut self, id: &DeviceId, claim: usize) {
        if let Some(v) = self.allocating.get_mut(id) {
            v.retain(|&c| c != claim);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::AllocatorFeatures;
    use super::super::search::{Candidate, Position, Search};
    use super::super::test_support::{
        INCUBATING, consuming, exactly, gpu_cluster, on_node_1, partitioned_pool, run,
    };
    use super::{Cause, DeviceChanges};
    use crate::model::intern::Str;
    use crate::model::quantity::Quantity;
    use crate::testing::gpu_slice;
    use serde_json::{Value, json};

    /// v1.36.2's allocator: pool-name counter keys, partial rollback.
    const V1_36_2: AllocatorFeatures = AllocatorFeatures {
        rolls_back_rejected_devices: false,
        counters_by_pool_id: false,
        ..INCUBATING
    };
    /// v1.36.3's: every change of a candidate undone.
    const V1_36_3: AllocatorFeatures = AllocatorFeatures {
        rolls_back_rejected_devices: true,
        ..V1_36_2
    };

    fn one_counter() -> Value {
        json!({"c": {"value": "1"}})
    }

    /// A device with these string attributes (`kind` steers selectors, `color` constraints).
    fn device(name: &str, attributes: &[(&str, &str)]) -> Value {
        let attributes: serde_json::Map<String, Value> = attributes
            .iter()
            .map(|(k, v)| (k.to_string(), json!({ "string": v })))
            .collect();
        json!({"name": name, "attributes": attributes})
    }

    fn kind_is(kinds: &[&str]) -> Value {
        let any: Vec<String> = kinds
            .iter()
            .map(|k| format!("device.attributes[\"gpu.example.com\"].kind == \"{k}\""))
            .collect();
        json!([{"cel": {"expression": any.join(" || ")}}])
    }

    /// Allocates the claim under v1.36.2 and v1.36.3.
    fn both(items: &[Value], claim: Value) -> [Option<Vec<String>>; 2] {
        [V1_36_2, V1_36_3].map(|f| run(items, f, claim.clone()).unwrap())
    }

    fn picks(devices: &[&str]) -> Option<Vec<String>> {
        Some(devices.iter().map(|d| d.to_string()).collect())
    }

    #[test]
    fn a_device_rejected_for_a_taint_keeps_its_counters_taken_until_1_36_3() {
        let mut tainted = consuming(json!({"name": "part-a"}), one_counter());
        tainted["taints"] = json!([{"key": "broken", "value": "ecc", "effect": "NoSchedule"}]);
        let items = partitioned_pool(
            one_counter(),
            json!([tainted, consuming(json!({"name": "part-b"}), one_counter())]),
        );
        let claim = json!({"requests": [exactly("r", json!({}))]});
        assert_eq!(both(&items, claim), [None, picks(&["r=part-b"])]);
    }

    #[test]
    fn a_device_rejected_by_a_constraint_keeps_its_counters_taken_until_1_36_3() {
        let part = |name: &str, color: &str| {
            consuming(
                device(name, &[("color", color)]),
                json!({"c": {"value": "4"}}),
            )
        };
        let items = partitioned_pool(
            json!({"c": {"value": "8"}}),
            json!([
                part("part-0", "red"),
                part("part-1", "blue"),
                part("part-2", "red")
            ]),
        );
        let claim = json!({"requests": [exactly("r", json!({"count": 2}))],
            "constraints": [{"matchAttribute": "gpu.example.com/color"}]});
        assert_eq!(
            both(&items, claim),
            [None, picks(&["r=part-0", "r=part-2"])]
        );
    }

    #[test]
    fn a_device_rejected_for_capacity_leaves_its_constraint_entry_until_1_36_3() {
        // `a` fills the shared device up; `b`'s `All` subrequest listed it while it was empty,
        // so the device enters the constraint and is then rejected for capacity. Its entry
        // (red) left behind keeps the fallback subrequest's blue device out.
        let mut full = device("shared", &[("kind", "cap"), ("color", "red")]);
        full["allowMultipleAllocations"] = json!(true);
        full["capacity"] = json!({"memory": {"value": "2"}});
        let items = gpu_cluster(vec![gpu_slice(
            "node-1",
            json!([full, device("other", &[("kind", "fb"), ("color", "blue")])]),
        )]);
        let two = json!({"requests": {"memory": "2"}});
        let claim = json!({
            "requests": [
                exactly("a", json!({"selectors": kind_is(&["cap"]), "capacity": two})),
                {"name": "b", "firstAvailable": [
                    {"name": "all", "deviceClassName": "gpu", "allocationMode": "All",
                     "selectors": kind_is(&["cap"]), "capacity": two},
                    {"name": "fallback", "deviceClassName": "gpu", "selectors": kind_is(&["fb"])}]}],
            "constraints": [{"matchAttribute": "gpu.example.com/color", "requests": ["b"]}]});
        assert_eq!(
            both(&items, claim),
            [None, picks(&["a=shared", "b/fallback=other"])]
        );
    }

    #[test]
    fn backtracking_from_a_shared_device_keeps_its_counters_taken_until_1_36_3() {
        // `r0` tries the shared device first and takes the pool's only counter; `r1` needs it,
        // so the search backtracks `r0` onto the device without counters.
        let mut shared = consuming(device("shared", &[("kind", "shared")]), one_counter());
        shared["allowMultipleAllocations"] = json!(true);
        let items = partitioned_pool(
            one_counter(),
            json!([
                shared,
                device("plain", &[("kind", "shared")]),
                consuming(device("counted", &[("kind", "counted")]), one_counter())
            ]),
        );
        let claim = json!({"requests": [
            exactly("r0", json!({"selectors": kind_is(&["shared"])})),
            exactly("r1", json!({"selectors": kind_is(&["counted"])}))]});
        assert_eq!(
            both(&items, claim),
            [None, picks(&["r0=plain", "r1=counted"])]
        );
    }

    #[test]
    fn backtracking_from_a_second_share_drops_the_shared_marker_until_1_36_3() {
        // `r0`'s share consumes no capacity and takes the counter; `r1`'s share of the same
        // device skips the counter, then is backtracked onto `fallback` because of `r2`. Taking
        // back `r1`'s capacity leaves only zeros: v1.36.2 drops the device's entry, so `r3`'s
        // share pays the counter a second time and does not fit; v1.36.3 keeps the device
        // marked as shared by `r0`.
        let mut shared = consuming(
            device("shared", &[("kind", "shared"), ("color", "red")]),
            one_counter(),
        );
        shared["allowMultipleAllocations"] = json!(true);
        shared["capacity"] = json!({"memory": {"value": "10"}});
        let items = partitioned_pool(
            one_counter(),
            json!([
                shared,
                device("fallback", &[("kind", "fallback"), ("color", "blue")]),
                device("gate", &[("kind", "gate"), ("color", "blue")])
            ]),
        );
        let memory = |q: &str| json!({"requests": {"memory": q}});
        let claim = json!({
            "requests": [
                exactly("r0", json!({"selectors": kind_is(&["shared"]), "capacity": memory("0")})),
                exactly("r1", json!({"selectors": kind_is(&["shared", "fallback"])})),
                exactly("r2", json!({"selectors": kind_is(&["gate"])})),
                exactly("r3", json!({"selectors": kind_is(&["shared"]), "capacity": memory("5")}))],
            "constraints": [{"matchAttribute": "gpu.example.com/color", "requests": ["r1", "r2"]}]});
        assert_eq!(
            both(&items, claim),
            [
                None,
                picks(&["r0=shared", "r1=fallback", "r2=gate", "r3=shared"])
            ]
        );
    }

    #[test]
    fn backtracking_from_an_exclusive_device_gives_its_counters_back_in_every_release() {
        let items = partitioned_pool(
            one_counter(),
            json!([
                consuming(device("counted-x", &[("kind", "x")]), one_counter()),
                device("free-x", &[("kind", "x")]),
                consuming(device("counted-y", &[("kind", "y")]), one_counter())
            ]),
        );
        let claim = json!({"requests": [
            exactly("r0", json!({"selectors": kind_is(&["x"])})),
            exactly("r1", json!({"selectors": kind_is(&["y"])}))]});
        let fits = picks(&["r0=free-x", "r1=counted-y"]);
        assert_eq!(both(&items, claim), [fits.clone(), fits]);
    }

    /// What the search state shows, under v1.36.2 and v1.36.3, after `allocateDevice` tried
    /// `device` for the claim's first request on its own (the search checks capacity before, so
    /// only this reaches a device whose capacity does not fit) and, if it took the device,
    /// backtracked from it: whether the device is still marked in use, still marked as shared,
    /// and the counters still taken.
    fn after_trying(items: &[Value], claim: Value, device: &str) -> [(bool, bool, Quantity); 2] {
        [V1_36_2, V1_36_3].map(|f| try_device(items, claim.clone(), f, device))
    }

    fn try_device(
        items: &[Value],
        claim: Value,
        f: AllocatorFeatures,
        device: &str,
    ) -> (bool, bool, Quantity) {
        on_node_1(items, claim, |dra, node, input| {
            let mut s = Search::new(dra, f, dra.allocated(true), node, input);
            s.prepare().unwrap();
            let pool = &s.pools[0];
            let slice = pool.slices[0];
            let d = slice
                .devices
                .iter()
                .find(|d| d.name.as_str() == device)
                .unwrap();
            let c = Candidate {
                pool: 0,
                slice,
                device: d,
                id: slice.device_id(d),
            };
            let changes: Option<DeviceChanges> =
                s.allocate_device(Position::default(), c, false).unwrap();
            if let Some(changes) = changes {
                s.roll_back(&changes, &c, Cause::Backtrack);
            }
            let taken = s.consumed_counters.values().flat_map(|sets| sets.values());
            let counters = taken
                .flat_map(|set| set.get(&Str::new("c")))
                .fold(Quantity::ZERO, |a, q| a + *q);
            (
                s.in_use(&c.id),
                s.allocating_capacity.contains_key(&c.id),
                counters,
            )
        })
    }

    #[test]
    fn a_device_rejected_for_capacity_stays_marked_in_use_with_its_counters_until_1_36_3() {
        let mut small = consuming(json!({"name": "small"}), one_counter());
        small["capacity"] = json!({"memory": {"value": "4"}});
        let items = partitioned_pool(one_counter(), json!([small]));
        let claim =
            json!({"requests": [exactly("r", json!({"capacity": {"requests": {"memory": "8"}}}))]});
        assert_eq!(
            after_trying(&items, claim, "small"),
            [
                (true, false, Quantity::from_units(1)),
                (false, false, Quantity::ZERO)
            ]
        );
    }

    #[test]
    fn backtracking_from_a_share_that_consumed_nothing_leaves_the_shared_marker_until_1_36_3() {
        let mut shared = consuming(json!({"name": "shared"}), one_counter());
        shared["allowMultipleAllocations"] = json!(true);
        let items = partitioned_pool(one_counter(), json!([shared]));
        let claim = json!({"requests": [exactly("r", json!({}))]});
        assert_eq!(
            after_trying(&items, claim, "shared"),
            [
                (false, true, Quantity::from_units(1)),
                (false, false, Quantity::ZERO)
            ]
        );
    }
}
