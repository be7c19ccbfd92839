//! Scenarios through the whole plan: edits, drains, workloads, the queue and preemption. Every
//! decision the queue takes is also checked against single-pod what-if on the cluster as it was
//! at that moment (`Queue::check_against_whatif`).

use super::daemonset::{self, DaemonSet, NodeStatus};
use super::drain::Options;
use super::edit::Edit;
use super::report::{self, OutcomeKind};
use super::*;
use crate::model::node::LABEL_ZONE;
use crate::plugins::registry::default_framework;
use crate::release::Release;
use crate::testing::{cluster, node, parsed_pod, pod};
use serde_json::{Value, json};

const RELEASES: [&str; 4] = ["1.34", "1.35", "1.36", "1.37"];

fn owned(mut p: Value, kind: &str, owner: &str) -> Value {
    let api = match kind {
        "ReplicaSet" | "StatefulSet" | "DaemonSet" => "apps/v1",
        "Job" => "batch/v1",
        _ => "v1",
    };
    p["metadata"]["ownerReferences"] =
        json!([{"apiVersion": api, "kind": kind, "name": owner, "uid": owner, "controller": true}]);
    p
}

/// A running, ready pod of ReplicaSet `rs`.
fn replica(key: &str, node: &str, cpu: &str, priority: i32, labels: Value, rs: &str) -> Value {
    let mut p = owned(
        pod(key, Some(node), cpu, priority, labels),
        "ReplicaSet",
        rs,
    );
    p["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
    p
}

fn zoned(name: &str, cpu: &str, zone: &str) -> Value {
    node(name, cpu, json!({LABEL_ZONE: zone}))
}

fn pdb(name: &str, app: &str, allowed: i32, current: i32, desired: i32) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "ns"},
           "spec": {"selector": {"matchLabels": {"app": app}}},
           "status": {"disruptionsAllowed": allowed, "currentHealthy": current, "desiredHealthy": desired, "expectedPods": current}})
}

struct Ask {
    edits: Vec<Edit>,
    drain: Options,
    workloads: Vec<Workload>,
    pending: Option<Option<Str>>,
    seed: Option<u64>,
    release: &'static str,
}

impl Default for Ask {
    fn default() -> Self {
        Ask {
            edits: Vec::new(),
            drain: Options::default(),
            workloads: Vec::new(),
            pending: None,
            seed: None,
            release: "1.34",
        }
    }
}

fn drain(node: &str) -> Edit {
    Edit::Drain(Str::new(node))
}

fn plan(items: Vec<Value>, ask: Ask) -> Plan {
    let release = Release::parse(ask.release).unwrap();
    let fws = vec![default_framework(release.into())];
    run(
        &fws,
        (*cluster(items)).clone(),
        Request {
            edits: ask.edits,
            drain: ask.drain,
            workloads: ask.workloads,
            pending: ask.pending.map(|namespace| {
                Box::new(move |p: &Pod| namespace.is_none_or(|ns| p.namespace == ns)) as PodFilter
            }),
            seed: ask.seed,
        },
    )
    .unwrap()
}

fn report_of(p: &Plan) -> report::PlanReport {
    report::build(Release::OLDEST.into(), None, p)
}

/// `pod → node` for scheduled pods, `pod → OUTCOME` otherwise, in queue order.
fn outcomes(p: &Plan) -> Vec<(String, String)> {
    p.pods
        .iter()
        .map(|r| {
            let what = match &r.outcome {
                Outcome::Scheduled { node, .. } => node.to_string(),
                Outcome::Pending { .. } => "PENDING".into(),
                Outcome::Lost { .. } => "LOST".into(),
                Outcome::Blocked { .. } => "BLOCKED".into(),
                Outcome::Removed { .. } => "REMOVED".into(),
                Outcome::NotPredicted { .. } => "ELSEWHERE".into(),
                Outcome::Stays { .. } => "STAYS".into(),
            };
            (r.pod.key(), what)
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Two zones of two nodes; web spread across zones, two of its pods on a1.
fn spread_cluster() -> Vec<Value> {
    let web = |key: &str, node: &str| {
        let mut p = replica(key, node, "1", 0, json!({"app": "web"}), "web");
        p["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": LABEL_ZONE,
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]);
        p
    };
    vec![
        zoned("a1", "4", "a"),
        zoned("a2", "4", "a"),
        zoned("b1", "4", "b"),
        zoned("b2", "4", "b"),
        web("ns/web-1", "a1"),
        web("ns/web-2", "a1"),
        web("ns/web-3", "b1"),
        web("ns/web-4", "b2"),
    ]
}

#[test]
fn drained_replicas_stay_spread_across_zones_in_every_release() {
    for release in RELEASES {
        let p = plan(
            spread_cluster(),
            Ask {
                edits: vec![drain("a1")],
                release,
                ..Default::default()
            },
        );
        // Zone b already has two: both replacements must go to zone a, and a1 is cordoned.
        assert_eq!(
            outcomes(&p),
            pairs(&[("ns/web-1", "a2"), ("ns/web-2", "a2")]),
            "{release}"
        );
        let r = report_of(&p);
        assert!(r.verdict.safe);
        assert_eq!(
            r.verdict.summary,
            "safe to drain a1: all 2 pods find a home"
        );
        assert_eq!(r.per_zone.len(), 1);
        assert_eq!((r.per_zone[0].added, r.per_zone[0].removed), (2, 2));
        let a1 = r.per_node.iter().find(|n| n.node == "a1").unwrap();
        assert_eq!(
            (a1.pods_before, a1.pods_after, a1.unschedulable),
            (Some(2), Some(0), true)
        );
    }
}

/// Three db replicas, one per node, that repel each other by hostname.
fn anti_affinity_cluster() -> Vec<Value> {
    let db = |key: &str, node: &str| {
        let mut p = replica(key, node, "1", 0, json!({"app": "db"}), "db");
        p["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}]}});
        p
    };
    vec![
        node("n1", "4", json!({})),
        node("n2", "4", json!({})),
        node("n3", "4", json!({})),
        db("ns/db-1", "n1"),
        db("ns/db-2", "n2"),
        db("ns/db-3", "n3"),
    ]
}

#[test]
fn anti_affinity_among_replicas_leaves_the_replacement_pending_until_a_node_is_added() {
    let p = plan(
        anti_affinity_cluster(),
        Ask {
            edits: vec![drain("n1")],
            ..Default::default()
        },
    );
    assert_eq!(outcomes(&p), pairs(&[("ns/db-1", "PENDING")]));
    let r = report_of(&p);
    assert!(!r.verdict.safe);
    assert_eq!(
        r.verdict.summary,
        "NOT SAFE to drain n1: 1 pod stays pending (ns/db-1)"
    );
    assert!(
        r.pods[0]
            .message
            .as_deref()
            .unwrap()
            .contains("didn't match pod anti-affinity rules"),
        "{:?}",
        r.pods[0].message
    );
    // A node like n1 fixes it.
    let p = plan(
        anti_affinity_cluster(),
        Ask {
            edits: vec![Edit::clone_node("n1=1").unwrap(), drain("n1")],
            ..Default::default()
        },
    );
    assert_eq!(outcomes(&p), pairs(&[("ns/db-1", "n1-clone-1")]));
    assert!(report_of(&p).verdict.safe);
}

/// Three db pods of 2 cpu on n1 under a PDB that allows one disruption at a time; `spare`
/// nodes of `cpu`.
fn pdb_cluster(spare: usize, cpu: &str) -> Vec<Value> {
    let mut items = vec![node("n1", "8", json!({}))];
    for i in 0..spare {
        items.push(node(&format!("s{i}"), cpu, json!({})));
    }
    for i in 1..=3 {
        items.push(replica(
            &format!("ns/db-{i}"),
            "n1",
            "2",
            0,
            json!({"app": "db"}),
            "db",
        ));
    }
    items.push(pdb("db", "db", 1, 3, 2));
    items
}

#[test]
fn a_pdb_lets_evictions_through_one_at_a_time_as_replacements_start() {
    let p = plan(
        pdb_cluster(2, "4"),
        Ask {
            edits: vec![drain("n1")],
            ..Default::default()
        },
    );
    let d = &p.drains[0];
    assert_eq!(d.evicted, ["ns/db-1", "ns/db-2", "ns/db-3"]);
    assert!(d.blocked.is_empty() && d.completed());
    // Every replacement is scheduled, the last one too.
    let got = outcomes(&p);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got.iter().all(|(_, n)| n.starts_with('s')), "{got:?}");
    assert!(report_of(&p).verdict.safe);
}

#[test]
fn a_pdb_blocks_the_drain_when_replacements_find_no_home() {
    // One spare node with room for one replacement: the budget comes back once, not twice.
    let mut items = pdb_cluster(1, "2");
    items.push(node("n2", "1", json!({})));
    let p = plan(
        items,
        Ask {
            edits: vec![drain("n1"), drain("n2")],
            ..Default::default()
        },
    );
    let d = &p.drains[0];
    assert_eq!(d.evicted, ["ns/db-1", "ns/db-2"]);
    assert_eq!(d.blocked.len(), 1);
    let b = &d.blocked[0];
    assert_eq!(b.pod, "ns/db-3");
    assert_eq!(b.pdb.as_deref(), Some("ns/db"));
    assert!(b.retried);
    assert_eq!(
        b.message,
        "Cannot evict pod as it would violate the pod's disruption budget. (The disruption budget db needs 2 healthy pods and has 2 currently)"
    );
    assert_eq!(b.protects, ["ns/db-1", "ns/db-3"]);
    // kubectl waits on n1 for ever and never starts n2.
    assert_eq!(p.drains[1].waiting_on, Some(Str::new("n1")));
    let r = report_of(&p);
    assert!(!r.verdict.safe);
    // The three evictions are sent at once and the budget lets one through: which one lands
    // first is a race, so each pod may be the one left behind, or the one left pending.
    assert_eq!(
        r.verdict.summary,
        "NOT SAFE to drain n1, n2: kubectl drain never gets to n2: it waits on n1 for ever; 1 pod stays pending (ns/db-2); 1 pod cannot be evicted (ns/db-3); depending on the order, 2 pods may stay pending (ns/db-1, ns/db-3), 2 pods may not be evicted (ns/db-1, ns/db-2)"
    );
    assert_eq!(possible(&p, "ns/db-1"), [Some("n1"), Some("s0"), None]);
    assert_eq!(possible(&p, "ns/db-3"), [Some("n1"), Some("s0"), None]);
    assert!(result(&p, "ns/db-1").order_dependent);
    assert!(
        result(&p, "ns/db-1")
            .why
            .iter()
            .any(|w| w.contains("ns/db-2") || w.contains("ns/db-3")),
        "{:?}",
        result(&p, "ns/db-1").why
    );
}

#[test]
fn after_drain_timeout_kubectl_goes_on_with_the_next_node() {
    let mut items = pdb_cluster(1, "2");
    items.push(node("n2", "4", json!({})));
    items.push(replica(
        "ns/api-1",
        "n2",
        "1",
        0,
        json!({"app": "api"}),
        "api",
    ));
    let p = plan(
        items,
        Ask {
            edits: vec![drain("n1"), drain("n2")],
            drain: Options {
                timeout: Some(std::time::Duration::from_secs(300)),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let (n1, n2) = (&p.drains[0], &p.drains[1]);
    // n1 keeps a pod its budget protects; kubectl gives up on it and drains n2.
    assert!(n1.timed_out && !n1.completed());
    assert_eq!(n1.blocked[0].pod, "ns/db-3");
    assert_eq!(n2.waiting_on, None);
    assert_eq!(n2.evicted, ["ns/api-1"]);
    assert!(n2.completed());
    let r = report_of(&p);
    assert!(!r.verdict.safe);
    assert!(
        r.verdict
            .summary
            .contains("kubectl drain gives up on n1 at --drain-timeout and goes on"),
        "{}",
        r.verdict.summary
    );
    assert!(r.drains[0].timed_out && !r.drains[1].timed_out);
}

/// The outcome of `pod` in the plan.
fn result<'a>(p: &'a Plan, pod: &str) -> &'a PodResult {
    p.pods
        .iter()
        .find(|r| r.pod.key() == pod)
        .unwrap_or_else(|| panic!("{pod} not handled"))
}

/// Where `pod` may end: node names, `None` for pending.
fn possible<'a>(p: &'a Plan, pod: &str) -> Vec<Option<&'a str>> {
    result(p, pod)
        .possible
        .iter()
        .map(|n| n.map(|n| n.as_str()))
        .collect()
}

#[test]
fn replacements_racing_for_one_slot_may_each_win_the_first_evicted_most_likely() {
    for release in RELEASES {
        let p = plan(
            vec![
                node("n1", "4", json!({})),
                node("n2", "2", json!({})),
                replica("ns/web-a", "n1", "2", 0, json!({"app": "a"}), "a"),
                replica("ns/web-b", "n1", "2", 0, json!({"app": "b"}), "b"),
            ],
            Ask {
                edits: vec![drain("n1")],
                release,
                ..Default::default()
            },
        );
        // kubectl sends both evictions at once: the first it sends usually lands first and its
        // replacement takes the room, but either may.
        assert_eq!(
            outcomes(&p),
            pairs(&[("ns/web-a", "n2"), ("ns/web-b", "PENDING")]),
            "{release}"
        );
        for pod in ["ns/web-a", "ns/web-b"] {
            assert_eq!(possible(&p, pod), [Some("n2"), None], "{release} {pod}");
            let r = result(&p, pod);
            assert!(r.order_dependent, "{release} {pod}");
            assert!(
                r.why
                    .iter()
                    .any(|w| w.starts_with("competes with ns/web-") && w.ends_with("for n2")),
                "{release} {pod}: {:?}",
                r.why
            );
        }
        let r = report_of(&p);
        assert_eq!(
            r.verdict.summary,
            "NOT SAFE to drain n1: 1 pod stays pending (ns/web-b); depending on the order, 1 pod may stay pending (ns/web-a)"
        );
        assert_eq!(r.verdict.order_dependent, 2);
        assert!(!r.exploration.capped && r.exploration.end_states == 2);
    }
}

#[test]
fn priority_orders_only_pods_waiting_together_and_preemption_makes_up_for_it() {
    let p = plan(
        vec![
            node("n1", "4", json!({})),
            node("n2", "2", json!({})),
            replica("ns/high", "n1", "2", 100, json!({"app": "high"}), "high"),
            replica("ns/low", "n1", "2", 1, json!({"app": "low"}), "low"),
        ],
        Ask {
            edits: vec![drain("n1")],
            ..Default::default()
        },
    );
    // Waiting together, the higher priority goes first. When the lower one arrives first and
    // takes the room, the higher one preempts it: the end is the same.
    assert_eq!(
        outcomes(&p),
        pairs(&[("ns/high", "n2"), ("ns/low", "PENDING")])
    );
    assert_eq!(possible(&p, "ns/high"), [Some("n2")]);
    assert_eq!(possible(&p, "ns/low"), [None]);
    assert!(!result(&p, "ns/high").order_dependent);
    assert!(!result(&p, "ns/low").order_dependent);
    assert!(p.exploration.end_states >= 1 && !p.exploration.capped);
}

#[test]
fn a_replacement_waits_for_its_terminating_predecessor_and_is_retried_when_it_is_gone() {
    // db pods repel each other by zone. db-1's own predecessor, terminating on n1 in zone a,
    // keeps its replacement out of zone a until it is gone (inter-pod anti-affinity counts
    // terminating pods); zone b runs db-2. Nothing else competes: it ends on a2.
    let db = |key: &str, node: &str| {
        let mut p = replica(key, node, "1", 0, json!({"app": "db"}), "db");
        p["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": LABEL_ZONE, "labelSelector": {"matchLabels": {"app": "db"}}}]}});
        p
    };
    let items = vec![
        zoned("a1", "4", "a"),
        zoned("a2", "1", "a"),
        zoned("b1", "4", "b"),
        db("ns/db-1", "a1"),
        db("ns/db-2", "b1"),
    ];
    let p = plan(
        items.clone(),
        Ask {
            edits: vec![drain("a1")],
            ..Default::default()
        },
    );
    assert_eq!(outcomes(&p), pairs(&[("ns/db-1", "a2")]));
    let r = result(&p, "ns/db-1");
    assert_eq!(possible(&p, "ns/db-1"), [Some("a2")]);
    assert!(!r.order_dependent);
    assert_eq!(r.why, ["waited for ns/db-1 to terminate"]);

    // A web pod drained with it wants a2's room too: if it is scheduled while db-1 still
    // terminates, it takes the room and db-1's replacement, retried when db-1 is gone, stays
    // pending; if db-1 is gone first, the replacement takes the room.
    let mut items = items;
    items.push(replica(
        "ns/web",
        "a1",
        "1",
        0,
        json!({"app": "web"}),
        "web",
    ));
    items.push(replica(
        "ns/filler",
        "b1",
        "3",
        0,
        json!({"app": "filler"}),
        "filler",
    ));
    let p = plan(
        items,
        Ask {
            edits: vec![drain("a1")],
            ..Default::default()
        },
    );
    assert_eq!(
        outcomes(&p),
        pairs(&[("ns/db-1", "PENDING"), ("ns/web", "a2")])
    );
    assert_eq!(possible(&p, "ns/db-1"), [Some("a2"), None]);
    assert_eq!(possible(&p, "ns/web"), [Some("a2"), None]);
    // Its message is the one of its last retry, on the cluster as the plan leaves it: room, not
    // anti-affinity, is what it lacks by then.
    let Outcome::Pending { message } = &result(&p, "ns/db-1").outcome else {
        panic!()
    };
    let fw = default_framework(Release::OLDEST.into());
    let pod = &result(&p, "ns/db-1").pod;
    let whatif = crate::explain::build(&fw, &p.snapshot, pod, &fw.schedule(&p.snapshot, pod));
    assert_eq!(*message, whatif.message);
    assert!(!message.contains("anti-affinity"), "{message}");
    assert!(message.contains("Insufficient cpu"), "{message}");
}

#[test]
fn a_replacement_may_see_its_siblings_still_running_or_already_terminating() {
    // web spreads over zones with maxSkew 1 (terminating pods do not count). Draining a1: the
    // first replacement scheduled while web-2 still runs may go to zone b; once web-2
    // terminates, zone a is one short and takes it.
    let web = |key: &str, node: &str| {
        let mut p = replica(key, node, "1", 0, json!({"app": "web"}), "web");
        p["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1, "topologyKey": LABEL_ZONE,
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}}]);
        p
    };
    let p = plan(
        vec![
            zoned("a1", "4", "a"),
            zoned("a2", "4", "a"),
            zoned("b1", "8", "b"),
            web("ns/web-1", "a1"),
            web("ns/web-2", "a1"),
            web("ns/web-3", "b1"),
        ],
        Ask {
            edits: vec![drain("a1")],
            ..Default::default()
        },
    );
    // Most likely both evictions land first: zone a has none left, zone b one; the first
    // replacement must go to zone a, the second may go either way and b1 is emptier.
    assert_eq!(
        outcomes(&p),
        pairs(&[("ns/web-1", "a2"), ("ns/web-2", "b1")])
    );
    for pod in ["ns/web-1", "ns/web-2"] {
        assert_eq!(possible(&p, pod), [Some("a2"), Some("b1")], "{pod}");
        assert!(result(&p, pod).order_dependent, "{pod}");
    }
    assert!(report_of(&p).verdict.safe);
}

#[test]
fn tied_nodes_are_all_possible_and_reported_whole() {
    let items = vec![
        node("n1", "4", json!({})),
        node("a", "4", json!({})),
        node("b", "4", json!({})),
        node("c", "4", json!({})),
        replica("ns/web-1", "n1", "1", 0, json!({}), "web"),
    ];
    let p = plan(
        items,
        Ask {
            edits: vec![drain("n1")],
            ..Default::default()
        },
    );
    let r = result(&p, "ns/web-1");
    assert_eq!(possible(&p, "ns/web-1"), [Some("a"), Some("b"), Some("c")]);
    // A tie alone does not make it order-dependent.
    assert!(!r.order_dependent);
    let report = report_of(&p);
    assert_eq!(report.pods[0].tied_nodes, ["a", "b", "c"]);
    assert_eq!(report.pods[0].tied, 3);
    assert_eq!(
        r.why,
        ["3 nodes tie for its best score: kube-scheduler picks one at random"]
    );

    // Two replicas that tie on two nodes with room for one each: each may end on either, and
    // which one depends on the order.
    let p = plan(
        vec![
            node("n1", "4", json!({})),
            node("a", "1", json!({})),
            node("b", "1", json!({})),
            replica("ns/x", "n1", "1", 0, json!({"app": "x"}), "x"),
            replica("ns/y", "n1", "1", 0, json!({"app": "y"}), "y"),
        ],
        Ask {
            edits: vec![drain("n1")],
            ..Default::default()
        },
    );
    assert_eq!(outcomes(&p), pairs(&[("ns/x", "a"), ("ns/y", "b")]));
    for pod in ["ns/x", "ns/y"] {
        assert_eq!(possible(&p, pod), [Some("a"), Some("b")], "{pod}");
        assert!(result(&p, pod).order_dependent, "{pod}");
    }
    assert!(report_of(&p).verdict.safe);
}

#[test]
fn pods_under_several_pdbs_cannot_be_evicted_and_unready_ones_may_always_go() {
    let mut items = pdb_cluster(2, "4");
    items.push(pdb("db-too", "db", 5, 3, 0));
    let p = plan(
        items,
        Ask {
            edits: vec![drain("n1")],
            ..Default::default()
        },
    );
    let d = &p.drains[0];
    assert_eq!(d.blocked.len(), 3);
    assert!(d.blocked.iter().all(|b| !b.retried && b.pdb.is_none()));
    assert_eq!(
        d.blocked[0].message,
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support. (ns/db, ns/db-too)"
    );
    // Not stuck: kubectl reports the error and would go on with the next node.
    assert!(!d.completed());

    let mut sick = replica("ns/sick", "n1", "1", 0, json!({"app": "sick"}), "sick");
    sick["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
    let mut always = pdb("sick", "sick", 0, 0, 1);
    always["spec"]["unhealthyPodEvictionPolicy"] = json!("AlwaysAllow");
    let p = plan(
        vec![
            node("n1", "4", json!({})),
            node("n2", "4", json!({})),
            sick,
            always,
        ],
        Ask {
            edits: vec![drain("n1")],
            ..Default::default()
        },
    );
    assert_eq!(outcomes(&p), pairs(&[("ns/sick", "n2")]));
}

fn mixed_node() -> Vec<Value> {
    let mut mirror = pod("kube-system/etcd-n1", Some("n1"), "100m", 0, json!({}));
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "h"});
    mirror = owned(mirror, "Node", "n1");
    let mut scratch = replica("ns/cache-1", "n1", "1", 0, json!({}), "cache");
    scratch["spec"]["volumes"] = json!([{"name": "tmp", "emptyDir": {}}]);
    vec![
        node("n1", "8", json!({})),
        node("n2", "8", json!({})),
        owned(
            pod("ns/agent-n1", Some("n1"), "100m", 0, json!({})),
            "DaemonSet",
            "agent",
        ),
        mirror,
        pod("ns/bare", Some("n1"), "1", 0, json!({})),
        scratch,
        replica("ns/web-1", "n1", "1", 0, json!({}), "web"),
    ]
}

#[test]
fn daemon_set_and_mirror_pods_stay_and_bare_pods_need_force() {
    let p = plan(
        mixed_node(),
        Ask {
            edits: vec![drain("n1")],
            ..Default::default()
        },
    );
    let d = &p.drains[0];
    assert_eq!(
        d.refused.as_deref(),
        Some(
            "[cannot delete Pods that declare no controller (use --force to override): ns/bare, cannot delete Pods with local storage (use --delete-emptydir-data to override): ns/cache-1]"
        )
    );
    assert!(d.evicted.is_empty() && p.pods.is_empty());
    let r = report_of(&p);
    assert!(!r.verdict.safe);
    assert!(
        r.verdict
            .summary
            .starts_with("NOT SAFE to drain n1: kubectl drain refuses n1: [")
    );
    // The node is cordoned all the same, as kubectl leaves it.
    assert!(p.snapshot.get(Str::new("n1")).unwrap().node.unschedulable);

    let p = plan(
        mixed_node(),
        Ask {
            edits: vec![drain("n1")],
            drain: Options {
                force: true,
                delete_emptydir_data: true,
                timeout: None,
            },
            ..Default::default()
        },
    );
    let d = &p.drains[0];
    let stays: Vec<&str> = d.stays.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(stays, ["kube-system/etcd-n1", "ns/agent-n1"]);
    assert_eq!(
        outcomes(&p),
        pairs(&[
            ("ns/bare", "LOST"),
            ("ns/cache-1", "n2"),
            ("ns/web-1", "n2")
        ])
    );
    let r = report_of(&p);
    assert_eq!(
        r.verdict.summary,
        "NOT SAFE to drain n1: 1 pod is lost: no controller recreates it (ns/bare)"
    );
}

#[test]
fn the_queue_takes_higher_priority_first_then_the_first_to_arrive_not_the_older_pod() {
    let at = |mut p: Value, t: &str| {
        p["metadata"]["creationTimestamp"] = json!(t);
        p
    };
    let items = vec![
        node("n1", "8", json!({})),
        node("n2", "2", json!({})),
        at(
            replica("ns/a-young", "n1", "2", 10, json!({}), "a"),
            "2026-01-03T00:00:00Z",
        ),
        at(
            replica("ns/b-old", "n1", "2", 10, json!({}), "b"),
            "2026-01-01T00:00:00Z",
        ),
        at(
            replica("ns/low", "n1", "2", 1, json!({}), "c"),
            "2025-01-01T00:00:00Z",
        ),
        at(
            replica("ns/high", "n1", "2", 100, json!({}), "d"),
            "2026-06-01T00:00:00Z",
        ),
    ];
    let p = plan(
        items,
        Ask {
            edits: vec![drain("n1")],
            ..Default::default()
        },
    );
    // Room for one on n2: `high` takes it; the others may not preempt equal or higher priority,
    // and `low` can preempt nobody. Between equal priorities the replacement that arrived first
    // goes first: kubectl evicts a-young before b-old (by name), and the replacements are new
    // pods, so the old pods' creation times play no part.
    let order: Vec<String> = p.pods.iter().map(|r| r.pod.key()).collect();
    assert_eq!(order, ["ns/high", "ns/a-young", "ns/b-old", "ns/low"]);
    assert_eq!(outcomes(&p)[0].1, "n2");
    assert!(p.pods.iter().all(|r| r.pod.creation_timestamp.is_none()));
}

#[test]
fn a_replacement_preempts_lower_priority_pods_whose_replacements_are_queued_in_turn() {
    for release in RELEASES {
        let items = vec![
            node("n1", "4", json!({})),
            node("n2", "4", json!({})),
            node("n3", "2", json!({})),
            replica("ns/critical", "n1", "3", 1000, json!({}), "critical"),
            replica("ns/batch", "n2", "2", 10, json!({}), "batch"),
            owned(
                pod("ns/job", Some("n2"), "2", 5, json!({})),
                "Job",
                "nightly",
            ),
        ];
        let p = plan(
            items,
            Ask {
                edits: vec![drain("n1")],
                release,
                ..Default::default()
            },
        );
        assert_eq!(
            outcomes(&p),
            pairs(&[
                ("ns/critical", "n2"),
                ("ns/batch", "n3"),
                ("ns/job", "PENDING"),
            ]),
            "{release}"
        );
        let Outcome::Scheduled { preempted, .. } = &p.pods[0].outcome else {
            panic!()
        };
        assert_eq!(preempted, &["ns/batch", "ns/job"]);
        assert_eq!(
            p.pods[1].origin,
            Origin::Preempted {
                node: Str::new("n2"),
                by: "ns/critical".into()
            }
        );
        let r = report_of(&p);
        assert_eq!(r.verdict.preempting, 1);
        assert_eq!(
            r.verdict.summary,
            "NOT SAFE to drain n1: 1 pod stays pending (ns/job)"
        );
    }
}

#[test]
fn ties_go_to_the_first_node_by_name_or_to_a_seeded_choice() {
    let items = || {
        vec![
            node("n1", "4", json!({})),
            node("a", "4", json!({})),
            node("b", "4", json!({})),
            node("c", "4", json!({})),
            replica("ns/web-1", "n1", "1", 0, json!({}), "web"),
        ]
    };
    let ask = |seed| Ask {
        edits: vec![drain("n1")],
        seed,
        ..Default::default()
    };
    let p = plan(items(), ask(None));
    let Outcome::Scheduled { node, tied, .. } = &p.pods[0].outcome else {
        panic!()
    };
    assert_eq!((node.as_str(), tied.len()), ("a", 3));
    let chosen = |seed| outcomes(&plan(items(), ask(Some(seed))))[0].1.clone();
    assert_eq!(chosen(7), chosen(7));
    let mut seen: Vec<String> = (0..32).map(chosen).collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen, ["a", "b", "c"]);
}

#[test]
fn deleting_a_node_and_a_no_execute_taint_reschedule_owned_pods() {
    let items = vec![
        node("n1", "4", json!({})),
        node("n2", "4", json!({})),
        node("n3", "4", json!({})),
        replica("ns/web-1", "n1", "1", 0, json!({}), "web"),
        pod("ns/bare", Some("n1"), "1", 0, json!({})),
        replica("ns/api-1", "n2", "1", 0, json!({}), "api"),
    ];
    let p = plan(
        items,
        Ask {
            edits: vec![
                Edit::DeleteNode(Str::new("n1")),
                Edit::taint("n2=maintenance:NoExecute").unwrap(),
            ],
            ..Default::default()
        },
    );
    assert_eq!(
        outcomes(&p),
        pairs(&[("ns/bare", "LOST"), ("ns/web-1", "n3"), ("ns/api-1", "n3")])
    );
    assert_eq!(
        p.pods[2].origin,
        Origin::Displaced {
            node: Str::new("n2"),
            edit: 1
        }
    );
    let r = report_of(&p);
    let n1 = r.per_node.iter().find(|n| n.node == "n1").unwrap();
    assert_eq!(
        (n1.pods_before, n1.pods_after, n1.removed),
        (Some(2), None, 2)
    );
}

fn daemon_set(extra: Value, priority: i32) -> DaemonSet {
    let mut p = owned(
        pod("ns/agent", None, "1", priority, json!({})),
        "DaemonSet",
        "agent",
    );
    for (k, v) in extra.as_object().unwrap() {
        p["spec"][k] = v.clone();
    }
    let mut template = parsed_pod(p);
    daemonset::add_controller_tolerations(&mut template);
    DaemonSet {
        namespace: Str::new("ns"),
        name: Str::new("agent"),
        template,
        on_delete: false,
    }
}

#[test]
fn a_daemon_set_runs_where_the_controller_and_the_scheduler_both_allow() {
    let mut gpu = node("gpu", "8", json!({}));
    gpu["spec"] = json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]});
    let mut cordoned = node("cordoned", "8", json!({}));
    cordoned["spec"] = json!({"unschedulable": true, "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]});
    let items = vec![
        node("plain", "8", json!({})),
        gpu,
        cordoned,
        node("full", "1", json!({})),
        replica("ns/busy", "full", "1", 0, json!({}), "busy"),
    ];
    let p = plan(
        items.clone(),
        Ask {
            workloads: vec![Workload::DaemonSet(daemon_set(json!({}), 0))],
            ..Default::default()
        },
    );
    let nodes = &p.daemon_sets[0].nodes;
    let status = |n: &str| {
        nodes
            .iter()
            .find(|(x, _)| x.as_str() == n)
            .unwrap()
            .1
            .clone()
    };
    assert!(matches!(
        status("plain"),
        NodeStatus::Gets(Outcome::Scheduled { .. })
    ));
    assert!(matches!(
        status("cordoned"),
        NodeStatus::Gets(Outcome::Scheduled { .. })
    ));
    assert_eq!(
        status("gpu"),
        NodeStatus::Skipped("untolerated taint dedicated=gpu:NoSchedule".into())
    );
    let NodeStatus::Gets(Outcome::Pending { message }) = status("full") else {
        panic!("{:?}", status("full"))
    };
    assert!(message.contains("Insufficient cpu"), "{message}");
    let r = report_of(&p);
    let ds = &r.daemon_sets[0];
    assert_eq!((ds.scheduled, ds.skipped, ds.pending), (2, 1, 1));
    // A system-critical DaemonSet makes room by preempting on its node.
    let p = plan(
        items,
        Ask {
            workloads: vec![Workload::DaemonSet(daemon_set(json!({}), 2_000_001_000))],
            ..Default::default()
        },
    );
    assert!(outcomes(&p).contains(&("ns/busy".into(), "plain".into())));
    let full = p.daemon_sets[0]
        .nodes
        .iter()
        .find(|(n, _)| n.as_str() == "full")
        .unwrap();
    assert!(matches!(
        &full.1,
        NodeStatus::Gets(Outcome::Scheduled { preempted, .. }) if preempted == &["ns/busy"]
    ));
}

#[test]
fn a_daemon_set_already_running_is_replaced_or_kept_on_delete() {
    let running = |node: &str| {
        owned(
            pod(&format!("ns/agent-{node}"), Some(node), "1", 0, json!({})),
            "DaemonSet",
            "agent",
        )
    };
    let items = vec![
        node("a", "1", json!({})),
        node("b", "1", json!({"pool": "x"})),
        running("a"),
        running("b"),
    ];
    // The new template asks for the same cpu: it fits where the old pod was, and leaves b.
    let p = plan(
        items.clone(),
        Ask {
            workloads: vec![Workload::DaemonSet(daemon_set(
                json!({"nodeSelector": {"pool": "x"}}),
                0,
            ))],
            ..Default::default()
        },
    );
    let c = &p.daemon_sets[0];
    assert_eq!(c.replaced, ["ns/agent-a", "ns/agent-b"]);
    assert!(matches!(c.nodes[0].1, NodeStatus::Skipped(_)));
    assert!(matches!(
        c.nodes[1].1,
        NodeStatus::Gets(Outcome::Scheduled { .. })
    ));
    let mut ds = daemon_set(json!({}), 0);
    ds.on_delete = true;
    let p = plan(
        items,
        Ask {
            workloads: vec![Workload::DaemonSet(ds)],
            ..Default::default()
        },
    );
    assert_eq!(
        p.daemon_sets[0].nodes[0].1,
        NodeStatus::Kept("ns/agent-a".into())
    );
    assert!(p.pods.is_empty());
}

#[test]
fn workload_replicas_and_several_documents_are_placed_in_queue_order() {
    let mut template = pod("ns/api", None, "1", 0, json!({"app": "api"}));
    template["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "api"}}}]}});
    let template = parsed_pod(owned(template, "ReplicaSet", "api"));
    let items = vec![
        node("a", "2", json!({})),
        node("b", "2", json!({})),
        node("c", "2", json!({})),
    ];
    let p = plan(
        items,
        Ask {
            workloads: vec![
                Workload::Replicas { template, count: 4 },
                Workload::Replicas {
                    template: parsed_pod(pod("ns/solo", None, "2", 0, json!({}))),
                    count: 1,
                },
            ],
            ..Default::default()
        },
    );
    let got = outcomes(&p);
    let nodes: Vec<&str> = got[..3].iter().map(|(_, n)| n.as_str()).collect();
    let mut distinct = nodes.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "{got:?}");
    assert_eq!(got[3], ("ns/api-4".into(), "PENDING".into()));
    // The second document sees the first's pods: 1 cpu is left on each node.
    assert_eq!(got[4], ("ns/solo".into(), "PENDING".into()));
    assert_eq!(
        report_of(&p).verdict.summary,
        "2 pods stay pending (ns/api-4, ns/solo)"
    );
}

#[test]
fn pending_pods_with_edits_added_nodes_and_other_schedulers() {
    let mut other = pod("ns/other", None, "1", 0, json!({}));
    other["spec"]["schedulerName"] = json!("my-scheduler");
    let items = vec![
        node("a", "2", json!({})),
        replica("ns/busy", "a", "2", 0, json!({}), "busy"),
        pod("ns/big", None, "2", 0, json!({})),
        pod("team/small", None, "1", 0, json!({})),
        other,
    ];
    let p = plan(
        items.clone(),
        Ask {
            pending: Some(None),
            ..Default::default()
        },
    );
    assert_eq!(
        outcomes(&p),
        pairs(&[
            ("ns/big", "PENDING"),
            ("team/small", "PENDING"),
            ("ns/other", "ELSEWHERE")
        ])
    );
    let p = plan(
        items,
        Ask {
            edits: vec![Edit::clone_node("a=2").unwrap()],
            pending: Some(Some(Str::new("ns"))),
            ..Default::default()
        },
    );
    assert_eq!(
        outcomes(&p),
        pairs(&[("ns/big", "a-clone-1"), ("ns/other", "ELSEWHERE")])
    );
    let r = report_of(&p);
    assert_eq!(r.pods[1].outcome, OutcomeKind::NotPredicted);
    assert!(!r.verdict.safe);
}

#[test]
fn a_drain_of_a_node_a_later_edit_deletes_is_refused() {
    let fws = vec![default_framework(Release::OLDEST.into())];
    let err = run(
        &fws,
        (*cluster(vec![node("a", "1", json!({}))])).clone(),
        Request {
            edits: vec![drain("a"), Edit::DeleteNode(Str::new("a"))],
            drain: Options::default(),
            workloads: Vec::new(),
            pending: None,
            seed: None,
        },
    )
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "--drain a: a later --delete-node removes the node before it could be drained"
    );
}
