//! Consumable capacity (`consumable_capacity.go`): what a share of a device that allows
//! multiple allocations consumes, and whether it still fits.

use super::rollback::CapacityShare;
use super::search::{Candidate, Search};
use crate::model::dra::objects::{CapacityEntry, DeviceId, ExactRequest};
use crate::model::intern::Str;
use crate::model::quantity::Quantity;
use std::collections::BTreeMap;

impl Search<'_> {
    /// `CmpRequestOverCapacity`: `None` when the request names a capacity the device lacks.
    pub(super) fn capacity_fits(&self, r: &ExactRequest, c: &Candidate) -> Option<bool> {
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

    /// `allocatingCapacity.Insert`: a share of the device takes `consumed`; the device's entry,
    /// even an empty one, marks it as shared. Whether an earlier share had marked it.
    pub(super) fn take_capacity(
        &mut self,
        id: DeviceId,
        consumed: &BTreeMap<Str, Quantity>,
    ) -> bool {
        let existed = self.allocating_capacity.contains_key(&id);
        let e = self.allocating_capacity.entry(id).or_default();
        for (n, q) in consumed {
            let v = e.entry(*n).or_insert(Quantity::ZERO);
            *v = *v + *q;
        }
        existed
    }

    /// `allocatingCapacity.Remove`: gives back what a share consumed; the entry goes once only
    /// zeros are left. With `keep_marker` (v1.36.3) an earlier share keeps the device marked.
    pub(super) fn give_back_capacity(
        &mut self,
        id: &DeviceId,
        share: &CapacityShare,
        keep_marker: bool,
    ) {
        let Some(e) = self.allocating_capacity.get_mut(id) else {
            return;
        };
        for (n, q) in &share.consumed {
            if let Some(v) = e.get_mut(n) {
                *v = *v - *q;
            }
        }
        if e.values().all(|q| q.is_zero()) {
            self.allocating_capacity.remove(id);
            if keep_marker && share.entry_existed {
                self.allocating_capacity.insert(*id, BTreeMap::new());
            }
        }
    }
}

/// `calculateConsumedCapacity`.
pub(super) fn consumed_amount(requested: Option<&Quantity>, cap: &CapacityEntry) -> Quantity {
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
pub(super) fn violates_policy(value: Quantity, cap: &CapacityEntry) -> bool {
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
    use super::super::test_support::{INCUBATING, exactly, gpu_cluster, run};
    use crate::testing::gpu_slice;
    use serde_json::json;

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
}
