//! Small builders for unit tests: clusters and pods as JSON, run through the real loader and
//! pipeline.

use crate::explain::{self, Explanation};
use crate::framework::snapshot::Snapshot;
use crate::model::cluster::Cluster;
use crate::model::cluster::convert_pod;
use crate::model::intern::Interner;
use crate::model::parse::Parse;
use crate::plugins::registry::default_framework;
use crate::release::Release;
use serde_json::{Value, json};
use std::sync::Arc;

pub fn node(name: &str, cpu: &str, labels: Value) -> Value {
    let mut l = json!({"kubernetes.io/hostname": name});
    if let Value::Object(extra) = labels {
        for (k, v) in extra {
            l[k] = v;
        }
    }
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": l},
           "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}})
}

/// A running pod `namespace/name` on `node` requesting `cpu`, with priority and labels.
pub fn pod(key: &str, node: Option<&str>, cpu: &str, priority: i32, labels: Value) -> Value {
    let (ns, name) = key.split_once('/').expect("namespace/name");
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": key, "labels": labels},
        "spec": {"priority": priority, "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {"phase": if node.is_some() { "Running" } else { "Pending" }}});
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
        p["status"]["startTime"] = json!("2026-01-01T00:00:00Z");
    }
    p
}

pub fn cluster(items: Vec<Value>) -> Arc<Cluster> {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    Arc::new(
        crate::source::file::load_bytes("test.json", serde_json::to_vec(&list).unwrap())
            .expect("valid test cluster"),
    )
}

/// A pod manifest parsed as the loader parses it.
pub fn parsed_pod(pod: Value) -> crate::model::pod::Pod {
    convert_pod(
        serde_json::from_value(pod).unwrap(),
        &Parse::new(&Interner::new()),
    )
    .unwrap()
    .into_pod()
}

/// Schedules `pod` on `cluster` with v1.34.1's default profile and explains the result.
pub fn explain(cluster: Arc<Cluster>, pod: Value) -> Explanation {
    explain_as(Release::OLDEST, cluster, pod)
}

/// The same with the default profile of `release`.
pub fn explain_as(release: Release, cluster: Arc<Cluster>, pod: Value) -> Explanation {
    let p = parsed_pod(pod);
    let snapshot = Snapshot::new(cluster, None);
    let fw = default_framework(release.into());
    let result = fw.schedule(&snapshot, &p);
    explain::build(&fw, &snapshot, &p, &result)
}

/// A DeviceClass with CEL selectors.
pub fn device_class(name: &str, selectors: &[&str]) -> Value {
    let selectors: Vec<Value> = selectors
        .iter()
        .map(|e| json!({"cel": {"expression": e}}))
        .collect();
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": name}, "spec": {"selectors": selectors}})
}

/// A node-local ResourceSlice of driver `gpu.example.com`, the pool named after the node.
pub fn gpu_slice(node: &str, devices: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-gpu")},
        "spec": {"driver": "gpu.example.com", "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices}})
}

/// A ResourceClaim `namespace/name` with these `spec.devices` (requests, constraints).
pub fn resource_claim(key: &str, devices: Value) -> Value {
    let (ns, name) = key.split_once('/').expect("namespace/name");
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}")},
        "spec": {"devices": devices}})
}

/// `pod` with `spec.resourceClaims` naming these claims.
pub fn with_claims(mut pod: Value, claims: &[&str]) -> Value {
    pod["spec"]["resourceClaims"] = claims
        .iter()
        .map(|c| json!({"name": c, "resourceClaimName": c}))
        .collect();
    pod
}
