//! `GatherPools`: the resource pools a node can see, their newest generation, whether each is
//! complete and valid, and the shared counters its slices declare.

use super::{AllocatorFeatures, NodeRef};
use crate::model::dra::objects::{Dra, NodeScope, Slice};
use crate::model::intern::Str;
use crate::model::quantity::Quantity;
use std::collections::BTreeMap;

/// A resource pool as seen from one node.
pub(super) struct Pool<'a> {
    pub(super) driver: Str,
    pub(super) name: Str,
    pub(super) incomplete: bool,
    pub(super) invalid: Option<String>,
    /// Slices with devices for this node, in name order.
    pub(super) slices: Vec<&'a Slice>,
    /// The pool's other device slices (they consume its counters too).
    pub(super) other_slices: Vec<&'a Slice>,
    pub(super) counter_sets: BTreeMap<Str, BTreeMap<Str, Quantity>>,
}

impl Pool<'_> {
    pub(super) fn has_binding_conditions(&self) -> bool {
        self.slices
            .iter()
            .any(|s| s.devices.iter().any(|d| !d.binding_conditions.is_empty()))
    }
}

pub(super) fn scope_matches(scope: &NodeScope, node: NodeRef) -> bool {
    match scope {
        NodeScope::Name(n) => *n == node.name,
        NodeScope::All => true,
        NodeScope::Selector(s) => s.matches(node.labels, node.name),
        NodeScope::Unknown => false,
    }
}

/// `nodeMatches` for a slice: `None` when the slice sets none of the node fields.
pub(super) fn slice_matches(s: &Slice, node: NodeRef) -> Option<bool> {
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

pub(super) fn per_device_match(s: &Slice, node: NodeRef) -> bool {
    s.devices.iter().any(|d| {
        d.node_scope
            .as_ref()
            .is_some_and(|sc| scope_matches(sc, node))
    })
}

pub(super) fn duplicate_device(slices: &[&Slice]) -> Option<String> {
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
pub(super) fn by_pool<'a>(
    slices: impl Iterator<Item = &'a Slice>,
) -> Vec<((Str, Str), Vec<&'a Slice>)> {
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
pub(super) fn gather_pools<'a>(
    dra: &'a Dra,
    node: NodeRef,
    f: &AllocatorFeatures,
) -> Vec<Pool<'a>> {
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

pub(super) fn counter_sets(
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

pub(super) fn check_consumption(
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

#[cfg(test)]
mod tests {
    use super::super::AllocError;
    use super::super::test_support::{
        EXPERIMENTAL, INCUBATING, devices, exactly, gpu_cluster, run,
    };
    use crate::testing::gpu_slice;
    use serde_json::json;

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
}
