//! Shared counters of partitionable devices (`checkAvailableCounters`): what allocated devices
//! left of each counter set of a pool, and what the devices being allocated take from it.

use super::pools::Pool;
use super::search::{Candidate, Search};
use crate::model::dra::objects::DeviceId;
use crate::model::intern::Str;
use crate::model::quantity::Quantity;
use std::collections::BTreeMap;

pub(super) type Counters = BTreeMap<Str, BTreeMap<Str, Quantity>>;

impl Search<'_> {
    pub(super) fn counter_key(&self, pool: &Pool) -> (Str, Str) {
        if self.features.counters_by_pool_id {
            (pool.driver, pool.name)
        } else {
            (Str::empty(), pool.name)
        }
    }

    pub(super) fn device_allocated(&self, id: &DeviceId) -> bool {
        self.allocated.devices.contains_key(id)
            || (self.features.counters_count_shared_devices
                && (self.allocated.shared.contains_key(id)
                    || self.allocated.consumed.contains_key(id)))
    }

    /// `checkAvailableCounters`: takes the device's counters if the pool has them left.
    pub(super) fn take_counters(&mut self, c: &Candidate) -> bool {
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

    pub(super) fn give_back_counters(&mut self, c: &Candidate) {
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
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{
        EXPERIMENTAL, INCUBATING, consuming, exactly, partitioned_pool, run,
    };
    use serde_json::json;

    #[test]
    fn partitions_share_their_pool_counters() {
        let part = |name: &str, mem: &str| {
            consuming(json!({"name": name}), json!({"memory": {"value": mem}}))
        };
        let c = partitioned_pool(
            json!({"memory": {"value": "80Gi"}}),
            json!([
                part("half-0", "40Gi"),
                part("half-1", "40Gi"),
                part("whole", "80Gi")
            ]),
        );
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
}
