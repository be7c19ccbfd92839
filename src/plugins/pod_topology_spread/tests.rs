//! PodTopologySpread's filtering and scoring, case by case.

use super::*;
use crate::framework::snapshot::Snapshot;
use crate::framework::status::Code;
use crate::model::cluster::Cluster;
#[allow(unused_imports)]
use crate::model::intern::Interner;
#[allow(unused_imports)]
use crate::model::parse::{LoadOptions, Parse};
use crate::source::Dump;
use serde_json::{Value, json};

fn cluster(objects: Vec<Value>) -> Arc<Cluster> {
    let mut dump = Dump::default();
    for o in objects {
        match o["kind"].as_str().unwrap() {
            "Node" => dump.nodes.push(serde_json::from_value(o).unwrap()),
            "Pod" => dump.pods.push(serde_json::from_value(o).unwrap()),
            "Service" => dump.services.push(serde_json::from_value(o).unwrap()),
            "ReplicaSet" => dump.replica_sets.push(serde_json::from_value(o).unwrap()),
            "ReplicationController" => dump
                .replication_controllers
                .push(serde_json::from_value(o).unwrap()),
            other => panic!("unexpected kind {other}"),
        }
    }
    Arc::new(Cluster::from_dump(dump, LoadOptions::default()).unwrap())
}

fn node(name: &str, labels: Value) -> Value {
    let mut labels = labels;
    labels["kubernetes.io/hostname"] = json!(name);
    json!({"kind": "Node", "metadata": {"name": name, "labels": labels}})
}

fn zoned(name: &str, zone: &str) -> Value {
    node(name, json!({"topology.kubernetes.io/zone": zone}))
}

/// A bound pod in `default` labelled `app=web` plus `labels`.
fn web(name: &str, node: &str, labels: Value) -> Value {
    let mut all = json!({"app": "web"});
    all.as_object_mut()
        .unwrap()
        .extend(labels.as_object().unwrap().clone());
    json!({"kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": name, "labels": all},
           "spec": {"nodeName": node, "containers": [{"name": "c"}]}})
}

fn incoming(spec: Value, labels: Value) -> Pod {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c"}]);
    let mut p: k8s::Pod = serde_json::from_value(
        json!({"metadata": {"name": "new", "namespace": "default", "uid": "new", "labels": labels}, "spec": spec}),
    )
    .unwrap();
    crate::model::defaults::pod(&mut p, "default");
    Pod::from_k8s(&p, &Parse::new(&Interner::new())).unwrap()
}

fn spread(key: &str, action: &str, max_skew: i32, extra: Value) -> Value {
    let mut c = json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": action,
                       "labelSelector": {"matchLabels": {"app": "web"}}});
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    c
}

fn zone_spread(max_skew: i32, extra: Value) -> Value {
    json!({"topologySpreadConstraints": [spread(LABEL_ZONE, "DoNotSchedule", max_skew, extra)]})
}

fn system() -> PodTopologySpread {
    PodTopologySpread::new(&mut StateSlots::default(), &Args::default())
}

/// The PreFilter state in `state` (every instance built on fresh slots has the same keys).
fn filtered(state: &CycleState) -> &PreFilterState {
    state.read(system().pre_filter).unwrap()
}

/// PreFilter, then Filter on every node: (node, code, reasons) of the nodes that fail.
fn filter_all(
    pl: &PodTopologySpread,
    snapshot: &Snapshot,
    pod: &Pod,
) -> (Status, CycleState, Vec<(String, Code, String)>) {
    let cx = Cx::new(pod, snapshot);
    let mut state = CycleState::default();
    let (status, _) = pl.pre_filter(&cx, &mut state);
    let mut failed = Vec::new();
    if status.is_success() {
        for n in &snapshot.nodes {
            let s = pl.filter(&cx, &state, n);
            if !s.is_success() {
                failed.push((n.name().to_string(), s.code, s.message()));
            }
        }
    }
    (status, state, failed)
}

fn failing_nodes(failed: &[(String, Code, String)]) -> Vec<&str> {
    failed.iter().map(|(n, _, _)| n.as_str()).collect()
}

/// PreScore, Score and NormalizeScore over every node, as the runner runs them.
fn scores(pl: &PodTopologySpread, snapshot: &Snapshot, pod: &Pod) -> Option<Vec<i64>> {
    let cx = Cx::new(pod, snapshot);
    let mut state = CycleState::default();
    let nodes: Vec<&NodeInfo> = snapshot.nodes.iter().collect();
    if pl.pre_score(&cx, &mut state, &nodes).is_skip() {
        return None;
    }
    let mut scores: Vec<i64> = nodes
        .iter()
        .map(|n| pl.score(&cx, &state, n).unwrap())
        .collect();
    assert!(pl.normalize_score(&cx, &state, &mut scores).is_success());
    Some(scores)
}

#[test]
fn filter_counts_matching_pods_per_domain() {
    let mut terminating = web("p-term", "b1", json!({}));
    terminating["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
    let mut other_ns = web("p-other", "b1", json!({}));
    other_ns["metadata"]["namespace"] = json!("other");
    let c = cluster(vec![
        zoned("a1", "a"),
        zoned("a2", "a"),
        zoned("b1", "b"),
        node("nozone", json!({})),
        web("p1", "a1", json!({})),
        web("p2", "a2", json!({})),
        web("p3", "b1", json!({})),
        json!({"kind": "Pod", "metadata": {"name": "db", "namespace": "default", "labels": {"app": "db"}},
               "spec": {"nodeName": "b1", "containers": [{"name": "c"}]}}),
        terminating,
        other_ns,
    ]);
    let snapshot = Snapshot::new(c, None);
    let pod = incoming(zone_spread(1, json!({})), json!({"app": "web"}));
    let (status, state, failed) = filter_all(&system(), &snapshot, &pod);
    assert!(status.is_success());
    let s = filtered(&state);
    assert_eq!(s.counts[0].get(Str::new("a")), 2);
    assert_eq!(s.counts[0].get(Str::new("b")), 1);
    assert_eq!(s.counts[0].len(), 2, "a node without the key is no domain");
    assert_eq!(
        failed,
        [
            (
                "a1".to_string(),
                Code::Unschedulable,
                ERR_REASON_CONSTRAINTS_NOT_MATCH.to_string()
            ),
            (
                "a2".to_string(),
                Code::Unschedulable,
                ERR_REASON_CONSTRAINTS_NOT_MATCH.to_string()
            ),
            (
                "nozone".to_string(),
                Code::UnschedulableAndUnresolvable,
                ERR_REASON_NODE_LABEL_NOT_MATCH.to_string()
            ),
        ]
    );
    // A pod its own selector does not match does not add itself to the domain.
    let other = incoming(zone_spread(1, json!({})), json!({"app": "other"}));
    let (_, _, failed) = filter_all(&system(), &snapshot, &other);
    assert_eq!(failing_nodes(&failed), ["nozone"]);
}

#[test]
fn pods_without_hard_constraints_skip_prefilter() {
    let snapshot = Snapshot::new(cluster(vec![zoned("a1", "a")]), None);
    let soft =
        json!({"topologySpreadConstraints": [spread(LABEL_ZONE, "ScheduleAnyway", 1, json!({}))]});
    for spec in [json!({}), soft] {
        let (status, state, _) =
            filter_all(&system(), &snapshot, &incoming(spec, json!({"app": "web"})));
        assert!(status.is_skip());
        assert!(state.read(system().pre_filter).is_none());
    }
}

#[test]
fn min_domains_treats_the_global_minimum_as_zero() {
    let snapshot = Snapshot::new(
        cluster(vec![
            zoned("a1", "a"),
            zoned("b1", "b"),
            web("p1", "a1", json!({})),
            web("p2", "b1", json!({})),
        ]),
        None,
    );
    let three = incoming(
        zone_spread(1, json!({"minDomains": 3})),
        json!({"app": "web"}),
    );
    let (_, _, failed) = filter_all(&system(), &snapshot, &three);
    assert_eq!(failing_nodes(&failed), ["a1", "b1"]);
    let two = incoming(
        zone_spread(1, json!({"minDomains": 2})),
        json!({"app": "web"}),
    );
    let (_, _, failed) = filter_all(&system(), &snapshot, &two);
    assert!(failed.is_empty());
}

#[test]
fn node_inclusion_policies_decide_which_nodes_are_domains() {
    let tainted = {
        let mut n = node("c1", json!({"topology.kubernetes.io/zone": "c"}));
        n["spec"] = json!({"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]});
        n
    };
    let snapshot = Snapshot::new(
        cluster(vec![
            node(
                "a1",
                json!({"topology.kubernetes.io/zone": "a", "pool": "general"}),
            ),
            node(
                "b1",
                json!({"topology.kubernetes.io/zone": "b", "pool": "general"}),
            ),
            tainted,
            web("p1", "a1", json!({})),
            web("p2", "b1", json!({})),
        ]),
        None,
    );
    let with_selector = |extra: Value| {
        let mut spec = zone_spread(1, extra);
        spec["nodeSelector"] = json!({"pool": "general"});
        incoming(spec, json!({"app": "web"}))
    };
    // Honor (default): c1 does not match the node selector, so zone c is no domain.
    let (_, state, failed) = filter_all(&system(), &snapshot, &with_selector(json!({})));
    assert_eq!(filtered(&state).counts[0].len(), 2);
    assert!(
        failed.is_empty(),
        "c1 is NodeAffinity's to reject: an unknown domain counts 0"
    );
    let (_, _, failed) = filter_all(
        &system(),
        &snapshot,
        &with_selector(json!({"nodeAffinityPolicy": "Ignore"})),
    );
    assert_eq!(failing_nodes(&failed), ["a1", "b1"]);
    // Taints are ignored unless the constraint honors them.
    let plain = |extra: Value| incoming(zone_spread(1, extra), json!({"app": "web"}));
    let (_, _, failed) = filter_all(&system(), &snapshot, &plain(json!({})));
    assert_eq!(failing_nodes(&failed), ["a1", "b1"]);
    let (_, _, failed) = filter_all(
        &system(),
        &snapshot,
        &plain(json!({"nodeTaintsPolicy": "Honor"})),
    );
    assert!(failed.is_empty());
}

#[test]
fn match_label_keys_add_the_pods_values_to_the_selector() {
    let snapshot = Snapshot::new(
        cluster(vec![
            zoned("a1", "a"),
            zoned("b1", "b"),
            web("old-1", "a1", json!({"pod-template-hash": "old"})),
            web("old-2", "a1", json!({"pod-template-hash": "old"})),
            web("new-1", "b1", json!({"pod-template-hash": "new"})),
        ]),
        None,
    );
    let labels = json!({"app": "web", "pod-template-hash": "new"});
    let pod = incoming(
        zone_spread(1, json!({"matchLabelKeys": ["pod-template-hash"]})),
        labels.clone(),
    );
    let (_, state, failed) = filter_all(&system(), &snapshot, &pod);
    let s = filtered(&state);
    assert_eq!(
        (
            s.counts[0].get(Str::new("a")),
            s.counts[0].get(Str::new("b"))
        ),
        (0, 1)
    );
    assert_eq!(failing_nodes(&failed), ["b1"]);
    // Keys the pod does not carry add nothing; a nil selector still selects nothing.
    let mut nil_selector = zone_spread(
        1,
        json!({"matchLabelKeys": ["pod-template-hash", "absent"]}),
    );
    nil_selector["topologySpreadConstraints"][0]
        .as_object_mut()
        .unwrap()
        .remove("labelSelector");
    let (_, state, failed) = filter_all(&system(), &snapshot, &incoming(nil_selector, labels));
    let s = filtered(&state);
    assert_eq!(s.counts[0].get(Str::new("b")), 0);
    assert_eq!(*s.self_match, [false]);
    assert!(failed.is_empty());
}

#[test]
fn an_empty_selector_counts_no_existing_pod_but_the_pod_itself() {
    let snapshot = Snapshot::new(
        cluster(vec![
            zoned("a1", "a"),
            zoned("b1", "b"),
            web("p1", "a1", json!({})),
            web("p2", "a1", json!({})),
        ]),
        None,
    );
    let pod = incoming(
        zone_spread(1, json!({"labelSelector": {}})),
        json!({"app": "web"}),
    );
    let (_, mut state, failed) = filter_all(&system(), &snapshot, &pod);
    assert!(failed.is_empty());
    assert_eq!(*filtered(&state).self_match, [true]);
    // AddPod has no such exception: upstream counts the added pod.
    let cx = Cx::new(&pod, &snapshot);
    let added = Arc::new(incoming(json!({}), json!({"app": "web"})));
    let b1 = snapshot.get(Str::new("b1")).unwrap();
    assert!(system().add_pod(&cx, &mut state, &added, b1).is_success());
    assert_eq!(filtered(&state).counts[0].get(Str::new("b")), 1);
}

#[test]
fn add_and_remove_pod_move_the_counts_of_one_copy() {
    let snapshot = Snapshot::new(
        cluster(vec![
            zoned("a1", "a"),
            zoned("b1", "b"),
            zoned("c1", "c"),
            web("p1", "a1", json!({})),
            web("p2", "b1", json!({})),
            web("p3", "b1", json!({})),
            web("p4", "c1", json!({})),
        ]),
        None,
    );
    let pl = system();
    let pod = incoming(zone_spread(1, json!({})), json!({"app": "web"}));
    let (_, state, failed) = filter_all(&pl, &snapshot, &pod);
    assert_eq!(failing_nodes(&failed), ["b1"]);
    let cx = Cx::new(&pod, &snapshot);
    let (a1, b1) = (
        snapshot.get(Str::new("a1")).unwrap(),
        snapshot.get(Str::new("b1")).unwrap(),
    );

    // Preemption on b1: removing one victim makes b1 fit.
    let mut removed = state.clone();
    let victim = b1.pods[0].clone();
    assert!(pl.remove_pod(&cx, &mut removed, &victim, b1).is_success());
    assert!(pl.filter(&cx, &removed, b1).is_success());
    assert!(
        !pl.filter(&cx, &state, b1).is_success(),
        "the original state is untouched"
    );

    // A nominated pod on a1 raises its domain; one in another namespace does not.
    let mut added = state.clone();
    let nominated = Arc::new(incoming(json!({}), json!({"app": "web"})));
    assert!(pl.add_pod(&cx, &mut added, &nominated, a1).is_success());
    let s = filtered(&added);
    assert_eq!(
        (s.counts[0].get(Str::new("a")), s.min_match_num(0, 1)),
        (2, 1)
    );
    assert!(!pl.filter(&cx, &added, a1).is_success());
    let mut foreign = (*nominated).clone();
    foreign.namespace = Str::new("other");
    let mut other = state.clone();
    assert!(
        pl.add_pod(&cx, &mut other, &Arc::new(foreign), a1)
            .is_success()
    );
    assert_eq!(filtered(&other).counts[0].get(Str::new("a")), 1);

    // Removing from the minimum domain lowers the global minimum.
    let mut lower = state.clone();
    assert!(pl.remove_pod(&cx, &mut lower, &a1.pods[0], a1).is_success());
    assert_eq!(filtered(&lower).min_match_num(0, 1), 0);
    assert!(
        !pl.filter(&cx, &lower, snapshot.get(Str::new("c1")).unwrap())
            .is_success()
    );
}

#[test]
fn critical_paths_keep_the_two_smallest_domains() {
    let (a, b, c) = (Str::new("a"), Str::new("b"), Str::new("c"));
    let mut p = CriticalPaths::new();
    for (d, n) in [(c, 3), (a, 1), (b, 2)] {
        p.update(d, n);
    }
    assert_eq!(p.0, [(a, 1), (b, 2)]);
    p.update(a, 4);
    assert_eq!(p.0, [(b, 2), (a, 4)]);
    p.update(c, 0);
    assert_eq!(p.0, [(c, 0), (b, 2)]);
    p.update(b, 1);
    assert_eq!(p.0, [(c, 0), (b, 1)]);
}

#[test]
fn default_selector_follows_services_and_the_controller() {
    let owner = |api_version: &str, kind: &str, controller: bool| {
        let mut p = web("w", "n1", json!({"tier": "fe"}));
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": api_version, "kind": kind, "name": "w", "uid": "u", "controller": controller}]);
        p
    };
    let c = cluster(vec![
        json!({"kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}),
        json!({"kind": "Service", "metadata": {"name": "nosel", "namespace": "default"}, "spec": {}}),
        json!({"kind": "Service", "metadata": {"name": "x", "namespace": "default"}, "spec": {"selector": {"app": "x"}}}),
        json!({"kind": "ReplicaSet", "metadata": {"name": "w", "namespace": "default"},
               "spec": {"selector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}}}),
        json!({"kind": "ReplicationController", "metadata": {"name": "w", "namespace": "default"},
               "spec": {"selector": {"rc": "w"}}}),
    ]);
    let sel = |p: Value| {
        let p: k8s::Pod = serde_json::from_value(p).unwrap();
        default_selector(
            &Pod::from_k8s(&p, &Parse::new(&Interner::new())).unwrap(),
            &c.workloads,
        )
    };
    let text = |s: Selector| {
        s.requirements()
            .iter()
            .map(|r| format!("{} {}", r.key, r.op.as_str()))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(
        text(sel(owner("apps/v1", "ReplicaSet", true))),
        "app In,tier Exists"
    );
    assert_eq!(
        text(sel(owner("v1", "ReplicationController", true))),
        "app In,rc In"
    );
    assert_eq!(
        text(sel(owner("apps/v1", "ReplicaSet", false))),
        "app In",
        "not the controller"
    );
    assert_eq!(
        text(sel(owner("apps/v1beta2", "ReplicaSet", true))),
        "app In"
    );
    assert_eq!(text(sel(owner("a/b/c", "ReplicaSet", true))), "app In");
    let mut lonely = web("w", "n1", json!({}));
    lonely["metadata"]["labels"] = json!({"app": "other"});
    assert!(sel(lonely).is_empty());
}

#[test]
fn system_defaults_apply_to_selected_pods_only() {
    let service = json!({"kind": "Service", "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}});
    let snapshot = Snapshot::new(
        cluster(vec![
            zoned("n1", "a"),
            node("n2", json!({})),
            service,
            web("p1", "n1", json!({})),
        ]),
        None,
    );
    let pl = system();
    let (status, _, _) = filter_all(&pl, &snapshot, &incoming(json!({}), json!({"app": "web"})));
    assert!(
        status.is_skip(),
        "the system defaults are all ScheduleAnyway"
    );
    // n1: host 1*ln4+2, zone a 1*ln4+4 → 9; n2 has no zone: host 0+2 → 2. Normalized with
    // min 2, max 9.
    assert_eq!(
        scores(&pl, &snapshot, &incoming(json!({}), json!({"app": "web"}))),
        Some(vec![22, 100])
    );
    assert_eq!(
        scores(&pl, &snapshot, &incoming(json!({}), json!({"app": "db"}))),
        None
    );
    // With a listed default (not the system one), every key is required.
    let listed = PodTopologySpread::new(
        &mut StateSlots::default(),
        &Args {
            default_constraints: system_default_constraints(),
            defaulting_type: DefaultingType::List,
        },
    );
    assert_eq!(
        scores(
            &listed,
            &snapshot,
            &incoming(json!({}), json!({"app": "web"}))
        ),
        Some(vec![100, 0])
    );
}

#[test]
fn scores_weigh_domains_by_the_log_of_their_number() {
    let snapshot = Snapshot::new(
        cluster(vec![
            zoned("n1", "a"),
            zoned("n2", "a"),
            zoned("n3", "b"),
            node("n4", json!({})),
            web("p1", "n1", json!({})),
            web("p2", "n1", json!({})),
            web("p3", "n3", json!({})),
        ]),
        None,
    );
    let spec = json!({"topologySpreadConstraints": [
        spread(LABEL_ZONE, "ScheduleAnyway", 1, json!({})),
        spread(LABEL_HOSTNAME, "ScheduleAnyway", 2, json!({})),
    ]});
    // Zones a, b: weight ln 4; hosts n1..n3 (n4 lacks the zone key): ln 5.
    // n1: 2*ln4 + 0 + 2*ln5 + 1 = 6.99 → 7; n2: 2*ln4 + 0 + 1 = 3.77 → 4;
    // n3: ln4 + ln5 + 1 = 3.996 → 4; n4 ignored.
    let got = scores(&system(), &snapshot, &incoming(spec, json!({"app": "web"})));
    assert_eq!(got, Some(vec![100 * 4 / 7, 100, 100, 0]));
}

#[test]
fn go_log_is_the_natural_logarithm() {
    assert_eq!(go_log(4.0), 4f64.ln());
    for n in 2..20_000 {
        let (x, want) = (f64::from(n), f64::from(n).ln());
        assert!((go_log(x) - want).abs() <= want * f64::EPSILON, "log({n})");
    }
}

#[test]
fn configured_default_constraints_filter_controller_owned_pods() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/conformance/config-pts-default-constraints"
    );
    let cluster = Arc::new(crate::source::file::load(&format!("{dir}/cluster.yaml")).unwrap());
    let (path, mut docs) =
        crate::source::file::load_documents(&format!("{dir}/pod.yaml"), Default::default())
            .unwrap();
    let mut pod: k8s::Pod = crate::source::file::typed(&path, "Pod", docs.remove(0)).unwrap();
    crate::model::defaults::pod(&mut pod, "default");
    let pod = Pod::from_k8s(&pod, &Parse::new(&Interner::new())).unwrap();
    let snapshot = Snapshot::new(cluster, None);
    let zone = k8s::TopologySpreadConstraint {
        max_skew: 1,
        topology_key: LABEL_ZONE.into(),
        when_unsatisfiable: "DoNotSchedule".into(),
        ..Default::default()
    };
    let pl = PodTopologySpread::new(
        &mut StateSlots::default(),
        &Args {
            default_constraints: vec![zone],
            defaulting_type: DefaultingType::List,
        },
    );
    let (status, _, failed) = filter_all(&pl, &snapshot, &pod);
    assert!(status.is_success());
    assert_eq!(failing_nodes(&failed), ["node-1", "node-4"]);
    assert_eq!(
        scores(&pl, &snapshot, &pod),
        None,
        "no ScheduleAnyway default: PreScore skips"
    );
}
