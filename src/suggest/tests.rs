use super::*;
use crate::explain;
use crate::plugins::registry::default_framework;
use crate::release::Release;
use crate::testing::{cluster, node, parsed_pod, pod};
use serde_json::json;

/// Suggestions for `pending` on `items`, with the default profile of the oldest release.
fn suggestions(items: Vec<Value>, pending: Value, limit: usize) -> Suggestions {
    let cluster = cluster(items);
    let snapshot = Snapshot::new(cluster.clone(), None);
    let fws = vec![default_framework(Release::OLDEST.into())];
    let pod = parsed_pod(pending);
    let result = fws[0].schedule(&snapshot, &pod);
    let explanation = explain::build(&fws[0], &snapshot, &pod, &result);
    assert!(
        !explanation.fits(),
        "the pod must be pending to have suggestions"
    );
    suggest(
        &Problem {
            fws: &fws,
            fw: &fws[0],
            cluster: &cluster,
            snapshot: &snapshot,
            pod: &pod,
            explanation: &explanation,
            pod_edits: true,
        },
        limit,
    )
}

fn cordoned(mut n: Value) -> Value {
    n["spec"]["unschedulable"] = json!(true);
    n
}

fn tainted(mut n: Value, key: &str, value: &str) -> Value {
    n["spec"]["taints"] = json!([{"key": key, "value": value, "effect": "NoSchedule"}]);
    n
}

#[test]
fn a_cluster_change_that_evicts_nothing_ranks_before_a_pod_edit() {
    let s = suggestions(
        vec![
            cordoned(node("a", "4", json!({}))),
            tainted(node("b", "4", json!({})), "dedicated", "gpu"),
            node("c", "1", json!({})),
        ],
        pod("ns/p", None, "2", 0, json!({})),
        10,
    );
    // Equal in kind, changes and amount: by description.
    assert_eq!(
        s.suggestions[0].edits,
        ["--untaint", "b=dedicated:NoSchedule"]
    );
    assert_eq!(s.suggestions[0].fits_on, ["b"]);
    assert_eq!(s.suggestions[1].edits, ["--uncordon", "a"]);
    assert_eq!(s.suggestions[1].fits_on, ["a"]);
    let kinds: Vec<Kind> = s.suggestions.iter().map(|s| s.kind).collect();
    let mut sorted = kinds.clone();
    sorted.sort();
    assert_eq!(kinds, sorted, "ranked by disruption");
    let tolerate = s
        .suggestions
        .iter()
        .find(|s| s.description.starts_with("tolerate"))
        .expect("a toleration for b's taint");
    assert_eq!(tolerate.fits_on, ["b"]);
    assert_eq!(tolerate.pod_patch[0]["path"], "/spec/tolerations");
    assert!(s.tried >= s.suggestions.len());
}

#[test]
fn a_request_is_lowered_to_what_the_roomiest_node_has_free() {
    let s = suggestions(
        vec![
            node("small", "1", json!({})),
            node("big", "2", json!({})),
            pod("ns/busy", Some("big"), "500m", 0, json!({})),
        ],
        pod("ns/p", None, "3", 0, json!({})),
        10,
    );
    let lowered = s
        .suggestions
        .iter()
        .find(|s| s.kind == Kind::Pod)
        .expect("a lower request");
    assert_eq!(lowered.fits_on, ["big"]);
    assert_eq!(
        lowered.pod_patch[0]["value"]["cpu"], "1500m",
        "{:?}",
        lowered.pod_patch
    );
}

#[test]
fn deleting_a_pod_of_equal_priority_is_an_eviction_with_its_name() {
    let s = suggestions(
        vec![
            node("a", "2", json!({})),
            pod("ns/bare", Some("a"), "2", 0, json!({})),
        ],
        pod("ns/p", None, "1", 0, json!({})),
        10,
    );
    let evict = s
        .suggestions
        .iter()
        .find(|s| s.kind == Kind::Evict)
        .expect("an eviction");
    assert_eq!(evict.evicts, ["ns/bare"]);
    assert_eq!(evict.edits, ["--delete-pod", "ns/bare"]);
}

#[test]
fn a_pod_nothing_can_help_says_why() {
    let mut p = pod("ns/p", None, "1", 0, json!({}));
    p["spec"]["volumes"] = json!([{"name": "v", "persistentVolumeClaim": {"claimName": "gone"}}]);
    let s = suggestions(vec![node("a", "2", json!({}))], p, 10);
    assert!(s.suggestions.is_empty());
    let why = s.none_because.expect("a reason");
    assert!(why.starts_with("no change to try"), "{why}");
}

#[test]
fn the_limit_bounds_the_suggestions() {
    let s = suggestions(
        vec![
            cordoned(node("a", "4", json!({}))),
            cordoned(node("b", "4", json!({}))),
        ],
        pod("ns/p", None, "2", 0, json!({})),
        1,
    );
    assert_eq!(s.suggestions.len(), 1);
    assert_eq!(s.suggestions[0].fits_on, ["a"]);
}

#[test]
fn one_change_repeated_on_many_nodes_does_not_fill_every_slot() {
    let s = suggestions(
        vec![
            tainted(node("gpu-a", "4", json!({})), "dedicated", "gpu"),
            tainted(node("gpu-b", "4", json!({})), "dedicated", "gpu"),
            tainted(node("gpu-c", "4", json!({})), "dedicated", "gpu"),
            cordoned(node("d", "4", json!({}))),
        ],
        pod("ns/p", None, "2", 0, json!({})),
        3,
    );
    let described: Vec<&str> = s
        .suggestions
        .iter()
        .map(|s| s.description.as_str())
        .collect();
    assert_eq!(described.len(), 3, "{described:?}");
    assert!(described[0].starts_with("remove taint dedicated=gpu:NoSchedule from gpu-a"));
    assert_eq!(described[1], "uncordon d");
    assert_eq!(described[2], "add 1 node like d");

    // With room for every suggestion, the other nodes of the same change follow.
    let all = suggestions(
        vec![
            tainted(node("gpu-a", "4", json!({})), "dedicated", "gpu"),
            tainted(node("gpu-b", "4", json!({})), "dedicated", "gpu"),
            cordoned(node("d", "4", json!({}))),
        ],
        pod("ns/p", None, "2", 0, json!({})),
        10,
    );
    assert!(
        all.suggestions
            .iter()
            .any(|s| s.description.ends_with("from gpu-b")),
        "{:?}",
        all.suggestions
    );
}

/// `explain --all-pending`'s suggestions for the pending pods of `items`, with the default
/// profile of the oldest release.
fn all_pending_suggestions(items: Vec<Value>) -> Vec<pending::Placing> {
    let cluster = cluster(items);
    let snapshot = Snapshot::new(cluster.clone(), None);
    let fws = vec![default_framework(Release::OLDEST.into())];
    let pending: Vec<&Arc<Pod>> = cluster
        .pods
        .iter()
        .filter(|p| p.node_name.is_none())
        .collect();
    let explanations: Vec<_> = pending
        .iter()
        .map(|p| explain::build(&fws[0], &snapshot, p, &fws[0].schedule(&snapshot, p)))
        .collect();
    let explained: Vec<_> = pending.iter().copied().zip(&explanations).collect();
    pending::suggest(&fws, &cluster, &snapshot, &explained, 10).suggestions
}

/// The node `explain --all-pending` suggests adding for the pending pods of `items`.
fn new_nodes_suggested(items: Vec<Value>) -> pending::Placing {
    all_pending_suggestions(items)
        .into_iter()
        .find(|s| s.edits[0] == "--clone-node")
        .expect("a node to add")
}

#[test]
fn all_pending_tries_each_kind_of_change_before_the_same_on_more_nodes() {
    // Nine nodes with the same taint sort before the cordoned one, and are more than the plans
    // tried: once one untaint places the pod, the other eight wait and the uncordon is tried.
    let mut items: Vec<Value> = (0..9)
        .map(|i| tainted(node(&format!("a{i}"), "4", json!({})), "dedicated", "gpu"))
        .collect();
    items.push(cordoned(node("z", "4", json!({}))));
    items.push(pod("ns/p", None, "2", 0, json!({})));
    let s = all_pending_suggestions(items);
    let flags: Vec<&str> = s.iter().map(|s| s.edits[0].as_str()).collect();
    assert!(flags.contains(&"--uncordon"), "{flags:?}");
    assert!(flags.contains(&"--untaint"), "{flags:?}");
}

#[test]
fn pending_replicas_are_given_as_many_new_nodes_as_they_need() {
    // Every node is full; each new node like `a` takes two of the five pending replicas.
    let mut items = vec![node("a", "4", json!({})), node("b", "4", json!({}))];
    items.push(pod("ns/running-a", Some("a"), "4", 0, json!({})));
    items.push(pod("ns/running-b", Some("b"), "4", 0, json!({})));
    for i in 0..5 {
        items.push(pod(&format!("ns/web-{i}"), None, "2", 0, json!({})));
    }
    let clone = new_nodes_suggested(items);
    assert_eq!(clone.edits, ["--clone-node", "a=3"]);
    assert_eq!(clone.description, "add 3 nodes like a");
    assert_eq!((clone.places.len(), clone.of), (5, 5));
    assert!(clone.evicts.is_empty());
}

#[test]
fn one_new_node_stays_one_when_it_places_every_pod_it_can() {
    let items = vec![
        node("a", "4", json!({})),
        pod("ns/running", Some("a"), "4", 0, json!({})),
        pod("ns/web-0", None, "2", 0, json!({})),
        pod("ns/web-1", None, "2", 0, json!({})),
    ];
    let clone = new_nodes_suggested(items);
    assert_eq!(clone.edits, ["--clone-node", "a=1"]);
    assert_eq!(clone.description, "add 1 node like a");
    assert_eq!(clone.places.len(), 2);
}

/// Node `a` (4 cpu), full with a pod the pending ones cannot preempt, and pending pods of
/// `(cpu, priority)`: the queue takes the higher priorities first.
fn full_node_and_pending(pending: &[(&str, i32)]) -> Vec<Value> {
    let mut items = vec![
        node("a", "4", json!({})),
        pod("ns/running", Some("a"), "4", 1000, json!({})),
    ];
    for (i, (cpu, priority)) in pending.iter().enumerate() {
        items.push(pod(&format!("ns/p-{i}"), None, cpu, *priority, json!({})));
    }
    items
}

#[test]
fn new_nodes_double_when_the_first_estimate_falls_short() {
    // One new node takes the two small pods, so three look enough for six; but new nodes
    // spread the small pods, each big one needs an empty node: 3 places 3, 6 places all, 5 not.
    let clone = new_nodes_suggested(full_node_and_pending(&[
        ("2", 10),
        ("2", 10),
        ("4", 0),
        ("4", 0),
        ("4", 0),
        ("4", 0),
    ]));
    assert_eq!(clone.edits, ["--clone-node", "a=6"]);
    assert_eq!(clone.places.len(), 6);
}

#[test]
fn new_nodes_come_down_when_the_first_estimate_is_too_many() {
    // One new node takes the big pod alone, so seven look needed; two small pods share a node:
    // 7 and 6 place all, 3 does not, 4 does.
    let mut pending = vec![("4", 10)];
    pending.extend([("2", 0); 6]);
    let clone = new_nodes_suggested(full_node_and_pending(&pending));
    assert_eq!(clone.edits, ["--clone-node", "a=4"]);
    assert_eq!(clone.places.len(), 7);
}
