//! What the allocator's tests share: the two variants and a claim allocated on a one-node cluster.

use super::{AllocError, AllocatorFeatures, ClaimInput, NodeRef, allocate};
use crate::model::cluster::Cluster;
use crate::model::dra::objects::Dra;
use crate::model::intern::{Interner, Str};
use crate::testing::{cluster, device_class, gpu_slice, node, resource_claim};
use serde_json::{Value, json};
use std::sync::Arc;

/// The 1.35/1.36 allocator with v1.36's gates.
pub(super) const INCUBATING: AllocatorFeatures = AllocatorFeatures {
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
pub(super) const EXPERIMENTAL: AllocatorFeatures = AllocatorFeatures {
    partitionable_devices: false,
    device_taints: false,
    binding_and_status: false,
    consumable_capacity: false,
    skips_unusable_pools: false,
    ..INCUBATING
};

pub(super) fn gpu_cluster(mut items: Vec<Value>) -> Vec<Value> {
    items.push(node("node-1", "4", json!({"zone": "a"})));
    items.push(device_class(
        "gpu",
        &["device.driver == \"gpu.example.com\""],
    ));
    items
}

/// Calls `then` with the DRA objects of a cluster of `items` and a claim `default/c` with
/// `devices`, node-1 and that claim.
pub(super) fn on_node_1<T>(
    items: &[Value],
    devices: Value,
    then: impl FnOnce(&Dra, NodeRef, &[ClaimInput]) -> T,
) -> T {
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
    then(dra, node, &input)
}

/// Allocates a claim `default/c` with `devices` on node-1 of a cluster of `items`: the
/// devices as `request=device`.
pub(super) fn run(
    items: &[Value],
    f: AllocatorFeatures,
    devices: Value,
) -> Result<Option<Vec<String>>, AllocError> {
    on_node_1(items, devices, |dra, node, input| {
        allocate(dra, f, dra.allocated(f.consumable_capacity), node, input).map(|r| {
            r.map(|claims| {
                claims[0]
                    .iter()
                    .map(|d| format!("{}={}", d.request, d.id.device))
                    .collect()
            })
        })
    })
}

/// Node-1's pool of partitionable devices: a slice declaring counter set `gpu-0` with
/// `counters`, and a slice of `devices`.
pub(super) fn partitioned_pool(counters: Value, devices: Value) -> Vec<Value> {
    let counter_slice = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "node-1-counters"},
        "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 2},
            "sharedCounters": [{"name": "gpu-0", "counters": counters}]}});
    let mut device_slice = gpu_slice("node-1", devices);
    device_slice["spec"]["pool"]["resourceSliceCount"] = json!(2);
    gpu_cluster(vec![counter_slice, device_slice])
}

/// `device`, consuming `counters` of counter set `gpu-0`.
pub(super) fn consuming(mut device: Value, counters: Value) -> Value {
    device["consumesCounters"] = json!([{"counterSet": "gpu-0", "counters": counters}]);
    device
}

pub(super) fn exactly(name: &str, extra: Value) -> Value {
    let mut e = json!({"deviceClassName": "gpu"});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            e[k] = v;
        }
    }
    json!({"name": name, "exactly": e})
}

pub(super) fn devices(names: &[&str]) -> Value {
    names.iter().map(|n| json!({"name": n})).collect()
}
