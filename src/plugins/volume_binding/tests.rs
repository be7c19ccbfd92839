//! VolumeBinding's cases: bound PVs' affinity, WaitForFirstConsumer matching and
//! provisioning, capacity tracking and scoring.

use super::*;
use crate::framework::snapshot::Snapshot;
use crate::model::cluster::convert_pod;
#[allow(unused_imports)]
use crate::model::intern::Interner;
#[allow(unused_imports)]
use crate::model::parse::{LoadOptions, Parse};
use crate::testing::{cluster, node, pod};
use serde_json::{Value, json};

fn app(claims: &[&str]) -> Pod {
    let mut p = pod("default/app", None, "100m", 0, json!({}));
    p["spec"]["volumes"] = Value::Array(
        claims
            .iter()
            .map(|c| json!({"name": c, "persistentVolumeClaim": {"claimName": c}}))
            .collect(),
    );
    convert_pod(
        serde_json::from_value(p).unwrap(),
        &Parse::new(&Interner::new()),
    )
    .unwrap()
    .into_pod()
}

fn class(name: &str, provisioner: &str, extra: Value) -> Value {
    let mut c = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name}, "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer"});
    if let Value::Object(m) = extra {
        for (k, v) in m {
            c[k] = v;
        }
    }
    c
}

fn unbound(name: &str, class: &str, size: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}}}})
}

fn bound(name: &str, pv: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {"volumeName": pv}})
}

/// An available local PV of `class` reachable from `host` only.
fn local_pv(name: &str, class: &str, size: &str, host: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"storageClassName": class, "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}},
        "status": {"phase": "Available"}})
}

struct Run {
    pre: Status,
    filters: Vec<Status>,
    binding: Vec<Vec<String>>,
}

fn unscored() -> VolumeBinding {
    VolumeBinding::new(&mut StateSlots::default(), None)
}

fn run(items: Vec<Value>, p: Pod) -> Run {
    let snapshot = Snapshot::new(cluster(items), None);
    let cx = Cx::new(&p, &snapshot);
    let mut state = CycleState::default();
    let (pre, _) = unscored().pre_filter(&cx, &mut state);
    let filters = snapshot
        .nodes
        .iter()
        .map(|n| unscored().filter(&cx, &state, n))
        .collect();
    let binding = snapshot
        .nodes
        .iter()
        .map(|n| unscored().pre_bind(&cx, &state, n))
        .collect();
    Run {
        pre,
        filters,
        binding,
    }
}

fn rejected(reasons: &[&str]) -> Status {
    Status::with_reasons(
        Code::UnschedulableAndUnresolvable,
        reasons.iter().map(|r| r.to_string()).collect(),
    )
}

#[test]
fn bound_pv_node_affinity_and_missing_pv() {
    let mut pv = local_pv("pv-1", "", "1Gi", "n1");
    pv["status"]["phase"] = json!("Bound");
    let items = vec![
        node("n1", "4", json!({})),
        node("n2", "4", json!({})),
        pv,
        bound("data", "pv-1"),
        bound("orphan", "pv-gone"),
    ];
    let r = run(items.clone(), app(&["data"]));
    assert!(r.pre.is_success());
    assert!(r.filters[0].is_success());
    assert_eq!(r.filters[1], rejected(&[ERR_REASON_NODE_CONFLICT]));
    // Nothing to bind: the claims are bound already.
    assert!(r.binding[0].is_empty());
    let r = run(items, app(&["orphan"]));
    assert_eq!(r.filters[0], rejected(&[ERR_REASON_PV_NOT_EXIST]));
}

#[test]
fn wffc_without_matching_pv_or_provisioner() {
    let items = vec![
        node("n1", "4", json!({})),
        node("n2", "4", json!({})),
        class("local", "kubernetes.io/no-provisioner", json!({})),
        local_pv("small", "local", "1Gi", "n1"),
        local_pv("big", "local", "10Gi", "n2"),
        unbound("c", "local", "5Gi"),
    ];
    let r = run(items, app(&["c"]));
    assert!(r.pre.is_success());
    assert_eq!(r.filters[0], rejected(&[ERR_REASON_BIND_CONFLICT]));
    assert!(r.filters[1].is_success());
    assert_eq!(
        r.binding[1],
        ["PersistentVolumeClaim default/c would bind to PersistentVolume big (10Gi)"]
    );
}

/// A PV reserved for the claim decides: where it is out of reach, no other PV is taken.
#[test]
fn a_pv_reserved_for_the_claim_wins_or_blocks() {
    let mut reserved = local_pv("reserved", "local", "10Gi", "n2");
    reserved["spec"]["claimRef"] = json!({"name": "c", "namespace": "default"});
    let items = vec![
        node("n1", "4", json!({})),
        node("n2", "4", json!({})),
        class("local", "kubernetes.io/no-provisioner", json!({})),
        local_pv("free", "local", "10Gi", "n1"),
        reserved,
        unbound("c", "local", "5Gi"),
    ];
    let r = run(items, app(&["c"]));
    assert_eq!(r.filters[0], rejected(&[ERR_REASON_BIND_CONFLICT]));
    assert_eq!(
        r.binding[1],
        ["PersistentVolumeClaim default/c would bind to PersistentVolume reserved (10Gi)"]
    );
}

/// PVs reached through one label and through a general selector are tried together, in
/// name order, and equally small ones are reported as ties.
#[test]
fn label_indexed_and_general_affinities_mix() {
    let mut general = local_pv("a-general", "local", "5Gi", "n1");
    general["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z9"]}]}]}});
    let items = vec![
        node("n1", "4", json!({"zone": "z1"})),
        node("n2", "4", json!({"zone": "z9"})),
        class("local", "kubernetes.io/no-provisioner", json!({})),
        general,
        local_pv("b-host", "local", "5Gi", "n1"),
        local_pv("c-host", "local", "5Gi", "n2"),
        unbound("c", "local", "5Gi"),
    ];
    let r = run(items, app(&["c"]));
    assert_eq!(
        r.binding[0],
        [
            "PersistentVolumeClaim default/c would bind to PersistentVolume a-general (5Gi) (equally small here: a-general, b-host; kube-scheduler may take any of them)"
        ]
    );
    assert_eq!(
        r.binding[1],
        ["PersistentVolumeClaim default/c would bind to PersistentVolume c-host (5Gi)"]
    );
}

#[test]
fn smallest_fitting_pvs_each_claim_its_own() {
    let items = vec![
        node("n1", "4", json!({})),
        class("local", "kubernetes.io/no-provisioner", json!({})),
        local_pv("a-20", "local", "20Gi", "n1"),
        local_pv("b-5", "local", "5Gi", "n1"),
        local_pv("c-8", "local", "8Gi", "n1"),
        unbound("big", "local", "6Gi"),
        unbound("small", "local", "2Gi"),
    ];
    let r = run(items.clone(), app(&["big", "small"]));
    assert!(r.filters[0].is_success());
    // The smaller request is matched first and takes the 5Gi PV; the other gets 8Gi.
    assert_eq!(
        r.binding[0],
        [
            "PersistentVolumeClaim default/small would bind to PersistentVolume b-5 (5Gi)",
            "PersistentVolumeClaim default/big would bind to PersistentVolume c-8 (8Gi)"
        ]
    );
    // The same claim twice needs two PVs.
    let r = run(items, app(&["big", "big"]));
    assert!(r.filters[0].is_success());
    assert_eq!(r.binding[0].len(), 2);
}

#[test]
fn provisioning_follows_allowed_topologies_and_selected_node() {
    let mut items = vec![
        node("n1", "4", json!({"zone": "a"})),
        node("n2", "4", json!({"zone": "b"})),
        class(
            "zonal",
            "csi.example.com",
            json!({"allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}]}),
        ),
        unbound("c", "zonal", "1Gi"),
    ];
    let r = run(items.clone(), app(&["c"]));
    assert_eq!(r.filters[0], rejected(&[ERR_REASON_BIND_CONFLICT]));
    assert!(r.filters[1].is_success());
    assert_eq!(
        r.binding[1],
        [
            "PersistentVolumeClaim default/c would be provisioned by StorageClass zonal (provisioner csi.example.com) for node n2"
        ]
    );
    // Provisioning already started for n1: no other node will do.
    items[3]["metadata"]["annotations"] = json!({"volume.kubernetes.io/selected-node": "n1"});
    let r = run(items, app(&["c"]));
    assert_eq!(r.filters[1], rejected(&[ERR_REASON_BIND_CONFLICT]));
}

#[test]
fn tracked_storage_capacity_limits_provisioning() {
    let items = vec![
        node("n1", "4", json!({"zone": "a"})),
        node("n2", "4", json!({"zone": "b"})),
        class("fast", "csi.example.com", json!({})),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": true}}),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
            "metadata": {"name": "cap-a", "namespace": "kube-system"},
            "storageClassName": "fast", "capacity": "10Gi",
            "nodeTopology": {"matchLabels": {"zone": "a"}}}),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
            "metadata": {"name": "cap-b", "namespace": "kube-system"},
            "storageClassName": "fast", "capacity": "1Gi",
            "nodeTopology": {"matchLabels": {"zone": "b"}}}),
        unbound("c", "fast", "5Gi"),
    ];
    let r = run(items, app(&["c"]));
    assert!(r.filters[0].is_success());
    assert_eq!(r.filters[1], rejected(&[ERR_REASON_NOT_ENOUGH_SPACE]));
}

/// From 1.37 nodes where the claims leave more of the class's capacity free score higher;
/// a pod without claims scores 0 everywhere.
#[test]
fn capacity_scoring_from_1_37() {
    use crate::release::Release;
    use crate::testing::explain_as;
    let capacity = |name: &str, zone: &str, size: &str| {
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
            "metadata": {"name": name, "namespace": "kube-system"},
            "storageClassName": "fast", "capacity": size,
            "nodeTopology": {"matchLabels": {"zone": zone}}})
    };
    let c = cluster(vec![
        node("n1", "4", json!({"zone": "a"})),
        node("n2", "4", json!({"zone": "b"})),
        class("fast", "csi.example.com", json!({})),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": true}}),
        capacity("cap-a", "a", "100Gi"),
        capacity("cap-b", "b", "20Gi"),
        unbound("c", "fast", "10Gi"),
    ]);
    let mut p = pod("default/app", None, "100m", 0, json!({}));
    p["spec"]["volumes"] = json!([{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]);
    let scores = |release: &str, p: &Value| {
        let e = explain_as(Release::parse(release).unwrap(), c.clone(), p.clone());
        e.nodes
            .iter()
            .map(|n| (n.name.to_string(), n.scores.get(NAME).copied()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        scores("1.37", &p),
        [("n1".into(), Some(90)), ("n2".into(), Some(50))]
    );
    assert_eq!(
        scores("1.36", &p),
        [("n1".into(), None), ("n2".into(), None)]
    );
    let plain = pod("default/plain", None, "100m", 0, json!({}));
    assert!(scores("1.37", &plain).iter().all(|(_, s)| *s == Some(0)));
}

#[test]
fn unbound_immediate_and_missing_class_binding_mode() {
    let items = vec![
        node("n1", "4", json!({})),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "std"}, "provisioner": "x"}),
        unbound("c", "std", "1Gi"),
        unbound("prebound", "local", "1Gi"),
    ];
    let r = run(items.clone(), app(&["c"]));
    assert_eq!(r.pre, Status::unresolvable(ERR_UNBOUND_IMMEDIATE));
    // A claim of a class that does not exist binds immediately, so it must be bound already.
    let r = run(items, app(&["prebound"]));
    assert_eq!(r.pre, Status::unresolvable(ERR_UNBOUND_IMMEDIATE));
}

/// On a node whose CSINode says the GCE PD plugin migrated, a bound in-tree PV is read as
/// the CSI driver's: its zone label becomes the driver's topology key.
#[test]
fn migrated_in_tree_pv_uses_the_drivers_topology() {
    let items = vec![
        node(
            "n1",
            "4",
            json!({"topology.kubernetes.io/zone": "us-central1-a"}),
        ),
        node(
            "n2",
            "4",
            json!({"topology.kubernetes.io/zone": "us-central1-a",
            "topology.gke.io/zone": "us-central1-a"}),
        ),
        node(
            "n3",
            "4",
            json!({"topology.kubernetes.io/zone": "us-central1-a"}),
        ),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": "n1",
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"}},
            "spec": {"drivers": []}}),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": "n2",
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs,kubernetes.io/gce-pd"}},
            "spec": {"drivers": []}}),
        json!({"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "pd", "labels": {"topology.kubernetes.io/zone": "us-central1-a"}},
            "spec": {"gcePersistentDisk": {"pdName": "disk"}}}),
        bound("data", "pd"),
    ];
    let r = run(items, app(&["data"]));
    assert_eq!(r.filters[0], rejected(&[ERR_REASON_NODE_CONFLICT]));
    assert!(r.filters[1].is_success());
    // Not migrated on n3: the in-tree PV has no node affinity at all.
    assert!(r.filters[2].is_success());
}

#[test]
fn invalid_claim_selector_is_an_error() {
    let mut c = unbound("c", "local", "1Gi");
    c["spec"]["selector"] = json!({"matchExpressions": [{"key": "k", "operator": "Bogus"}]});
    let items = vec![
        node("n1", "4", json!({})),
        class("local", "kubernetes.io/no-provisioner", json!({})),
        c,
    ];
    let r = run(items, app(&["c"]));
    assert_eq!(r.filters[0].code, Code::Error);
    assert!(
        r.filters[0].reasons[0]
            .starts_with("error creating internal label selector for claim: default/c: ")
    );
}
