//! Change planning through the binary (issue 16): every change flag, drains (zone spreading,
//! anti-affinity among replicas, PodDisruptionBudgets, DaemonSet and static pods staying, kubectl's
//! refusals), every workload kind of `-f`, ties with `--seed`, the table and JSON, exit codes, a
//! live cluster; and that each placement equals single-pod what-if on the cluster as changed.
//! Most cases run on fixtures/clusters/plan.yaml (see its header).

mod support;

use serde_json::{Value, json};
use std::path::PathBuf;
use support::Run;

const RELEASES: [&str; 4] = ["1.34", "1.35", "1.36", "1.37"];

fn fixture(name: &str) -> String {
    support::repo()
        .join("fixtures/clusters")
        .join(name)
        .display()
        .to_string()
}

fn plan_cluster() -> String {
    fixture("plan.yaml")
}

/// `kubectl-sched` at 80 columns, without colours, on the plan cluster unless `--snapshot` is
/// given.
fn sched(args: &[&str]) -> Run {
    let mut c = assert_cmd::Command::cargo_bin("kubectl-sched").unwrap();
    c.env_remove("NO_COLOR")
        .env("COLUMNS", "80")
        .env("TERM", "xterm")
        .args(args);
    if !args.contains(&"--snapshot") {
        c.args(["--snapshot", &plan_cluster()]);
    }
    Run::from(c.output().unwrap())
}

/// The JSON report of a plan, with the exit code.
fn plan(args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let run = sched(&all);
    assert!(run.code == 0 || run.code == 1, "{run:?}");
    (run.code, run.json())
}

/// `pod → node` for scheduled pods, `pod → Outcome` otherwise, in queue order.
fn outcomes(report: &Value) -> Vec<(String, String)> {
    report["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let what = match p["outcome"].as_str().unwrap() {
                "Scheduled" => p["node"].as_str().unwrap().to_string(),
                other => other.to_string(),
            };
            (p["pod"].as_str().unwrap().to_string(), what)
        })
        .collect()
}

fn outcome_of(report: &Value, pod: &str) -> String {
    outcomes(report)
        .into_iter()
        .find(|(p, _)| p == pod)
        .unwrap_or_else(|| panic!("{pod} not in {report:#}"))
        .1
}

/// The item of the list `report[list]` whose `key` is `name`.
fn entry<'a>(report: &'a Value, list: &str, key: &str, name: &str) -> &'a Value {
    report[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item[key] == name)
        .unwrap_or_else(|| panic!("{name} not in {list} of {report:#}"))
}

fn pod_entry<'a>(report: &'a Value, pod: &str) -> &'a Value {
    entry(report, "pods", "pod", pod)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

/// The FailedScheduling message of a pod the plan leaves pending.
fn pending_message(report: &Value, pod: &str) -> String {
    let p = pod_entry(report, pod);
    assert_eq!(p["outcome"], "Pending", "{p}");
    p["message"].as_str().unwrap().to_string()
}

fn node_summary<'a>(report: &'a Value, node: &str) -> &'a Value {
    entry(report, "perNode", "node", node)
}

/// The changes as the report lists them, in order.
fn edit_flags(report: &Value) -> Vec<String> {
    report["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["flag"].as_str().unwrap().to_string())
        .collect()
}

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }
    fn write(&self, name: &str, text: &str) -> String {
        let p: PathBuf = self.0.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }
}

fn small_pod(dir: &Dir) -> String {
    dir.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: probe, namespace: shop}\nspec:\n  containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 128Mi}}}]\n",
    )
}

#[test]
fn draining_a1_pushes_the_batch_pod_out_and_a_node_like_a2_makes_it_safe() {
    let run = sched(&["whatif", "--drain", "a1"]);
    assert_eq!(run.code, 1, "{run:?}");
    // The verdict comes first, right after the header (and its warning that the dump names no
    // release).
    let verdict = run.stdout.split("\n\n").nth(1).unwrap_or_default();
    assert_eq!(
        verdict,
        "NOT SAFE to drain a1: 1 pod stays pending (batch/report-4hq8z)"
    );
    assert!(
        run.stdout.lines().all(|l| l.chars().count() <= 80),
        "a line is wider than 80 columns:\n{}",
        run.stdout
    );
    assert!(run.stdout.lines().all(|l| l == l.trim_end()));
    insta::assert_snapshot!("plan_drain_a1", run.stdout);

    let run = sched(&["whatif", "--clone-node", "a2=1", "--drain", "a1"]);
    assert_eq!(run.code, 0, "{run:?}");
    insta::assert_snapshot!("plan_drain_a1_with_a_clone", run.stdout);
}

/// Node and pod names as clouds write them (40 characters and more): the drain of a generated
/// cluster's busiest node still reads at 80 columns, a few lines per pod, nothing cut mid-name.
#[test]
fn a_drain_with_cloud_length_names_reads_at_80_columns() {
    let generated = fixture("generated-150.json.gz");
    let node = "ip-10-0-0-17.us-east-1.compute.internal";
    let run = sched(&["whatif", "--drain", node, "--snapshot", &generated]);
    assert!(
        run.stdout.lines().all(|l| l.chars().count() <= 80),
        "a line is wider than 80 columns:\n{}",
        run.stdout
    );
    let (_, report) = plan(&["whatif", "--drain", node, "--snapshot", &generated]);
    let pods = report["pods"].as_array().unwrap().len();
    assert!(pods >= 9, "{report}");
    assert!(
        run.stdout.lines().count() <= 40 + 6 * pods,
        "{} lines for {pods} pods:\n{}",
        run.stdout.lines().count(),
        run.stdout
    );
    // Every pod comes from the drained node, which its heading names: no FROM column.
    assert!(run.stdout.contains("\n POD "), "{}", run.stdout);
    assert!(!run.stdout.contains(" FROM "), "{}", run.stdout);
}

#[test]
fn drained_replicas_keep_their_zone_spread_in_every_release() {
    for release in RELEASES {
        let (code, r) = plan(&["whatif", "--drain", "a1", "--scheduler-version", release]);
        assert_eq!(code, 1, "{release}");
        assert_eq!(
            r["schedulerVersion"].as_str().unwrap()[..5],
            format!("v{release}")
        );
        // Zone b holds two web pods: both replacements must stay in zone a, and a1 is cordoned.
        for web in ["shop/web-7f9c-k2x8p", "shop/web-7f9c-q7w3e"] {
            assert_eq!(outcome_of(&r, web), "a2", "{release}: {r:#}");
        }
        // The first web replacement arrives as its eviction lands and takes a2's last free
        // cpu; db-0's (a StatefulSet's) arrives once db-0 is gone and preempts the batch pod
        // for its room, and nothing else has room for the batch pod.
        assert_eq!(pod_entry(&r, "shop/web-7f9c-k2x8p")["preempts"], json!([]));
        let preempting = pod_entry(&r, "shop/db-0");
        assert_eq!(preempting["preempts"], json!(["batch/report-4hq8z"]));
        let victim = pod_entry(&r, "batch/report-4hq8z");
        assert_eq!(victim["origin"], "Preempted");
        assert_eq!(victim["preemptedBy"], "shop/db-0");
        let message = pending_message(&r, "batch/report-4hq8z");
        assert!(message.starts_with("0/4 nodes are available:"), "{message}");
        assert_eq!(r["verdict"]["preempting"], 1);
        let zone_a = &r["perZone"][0];
        assert_eq!(
            (zone_a["zone"].as_str(), zone_a["added"].as_u64()),
            (Some("zone-a"), Some(3))
        );
    }
}

#[test]
fn replicas_with_required_anti_affinity_never_share_a_node() {
    // db-0 may only go where no db runs: a2.
    let (_, r) = plan(&["whatif", "--drain", "a1"]);
    assert_eq!(outcome_of(&r, "shop/db-0"), "a2");
    // With a2 cordoned too, it fits nowhere, and the anti-affinity says why.
    let (code, r) = plan(&["whatif", "--cordon", "a2", "--drain", "a1"]);
    assert_eq!(code, 1);
    let message = pending_message(&r, "shop/db-0");
    assert!(
        message.contains("node(s) didn't match pod anti-affinity rules"),
        "{message}"
    );
}

#[test]
fn a_pdb_lets_evictions_through_one_by_one_and_blocks_when_replacements_cannot_start() {
    // The web budget allows one disruption: the second web pod goes once the first one's
    // replacement runs.
    let (_, r) = plan(&["whatif", "--drain", "a1"]);
    let d = &r["drains"][0];
    assert_eq!(
        strings(&d["evicted"]),
        ["shop/db-0", "shop/web-7f9c-k2x8p", "shop/web-7f9c-q7w3e"]
    );
    assert_eq!(d["completed"], true);
    assert!(d["blocked"].as_array().unwrap().is_empty());

    // With a2 cordoned the first replacement has nowhere to go: the budget never comes back.
    let (code, r) = plan(&["whatif", "--cordon", "a2", "--drain", "a1", "--drain", "b1"]);
    assert_eq!(code, 1);
    let d = &r["drains"][0];
    assert_eq!(d["completed"], false);
    let b = &d["blocked"][0];
    assert_eq!(b["pod"], "shop/web-7f9c-q7w3e");
    assert_eq!(b["pdb"], "shop/web");
    assert_eq!(b["retried"], true);
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .starts_with("Cannot evict pod as it would violate the pod's disruption budget."),
        "{b}"
    );
    assert_eq!(
        strings(&b["protects"]),
        [
            "shop/web-7f9c-m4n8q",
            "shop/web-7f9c-q7w3e",
            "shop/web-7f9c-z9v5n"
        ]
    );
    assert_eq!(outcome_of(&r, "shop/web-7f9c-q7w3e"), "Blocked");
    // kubectl keeps retrying on a1 and never starts on b1.
    assert_eq!(r["drains"][1]["waitingOn"], "a1");
    let summary = r["verdict"]["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("NOT SAFE to drain a1, b1: kubectl drain never gets to b1"),
        "{summary}"
    );
    assert!(summary.contains("1 pod cannot be evicted (shop/web-7f9c-q7w3e)"));
    // The table names the budget and whom it protects (on lines cut at 80 columns).
    let table = sched(&["whatif", "--cordon", "a2", "--drain", "a1"]).stdout;
    let joined = table.replace("\n    ", " ");
    assert!(
        joined.contains(
            "PodDisruptionBudget shop/web protects shop/web-7f9c-m4n8q, shop/web-7f9c-q7w3e, shop/web-7f9c-z9v5n"
        ),
        "{table}"
    );
}

#[test]
fn daemon_set_and_static_pods_stay_on_a_drained_node() {
    let (_, r) = plan(&["whatif", "--drain", "a1"]);
    let stays: Vec<(String, String)> = r["drains"][0]["stays"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["pod"].as_str().unwrap().to_string(),
                s["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(stays.len(), 2, "{stays:?}");
    assert_eq!(stays[0].0, "kube-system/node-agent-a1");
    assert!(stays[0].1.starts_with("DaemonSet-managed"));
    assert_eq!(stays[1].0, "kube-system/static-proxy-a1");
    assert!(stays[1].1.contains("mirror"));
    // They are still there, on a cordoned node.
    let a1 = node_summary(&r, "a1");
    assert_eq!(
        (a1["podsBefore"].as_u64(), a1["podsAfter"].as_u64()),
        (Some(5), Some(2))
    );
    assert_eq!(a1["unschedulable"], true);
}

#[test]
fn kubectl_refuses_bare_and_emptydir_pods_without_force_and_delete_emptydir_data() {
    let (code, r) = plan(&["whatif", "--drain", "b2"]);
    assert_eq!(code, 1);
    assert_eq!(
        r["drains"][0]["refused"],
        "[cannot delete Pods that declare no controller (use --force to override): default/debug, cannot delete Pods with local storage (use --delete-emptydir-data to override): shop/cache-5c6d-r8t2w]"
    );
    assert!(
        r["pods"].as_array().unwrap().is_empty(),
        "nothing is evicted"
    );

    let (code, r) = plan(&[
        "whatif",
        "--drain",
        "b2",
        "--force",
        "--delete-emptydir-data",
    ]);
    assert_eq!(code, 1, "the bare pod is lost");
    assert_eq!(outcome_of(&r, "default/debug"), "Lost");
    assert_eq!(
        r["verdict"]["summary"],
        "NOT SAFE to drain b2: 1 pod is lost: no controller recreates it (default/debug)"
    );

    let (code, r) = plan(&[
        "whatif",
        "--delete-pod",
        "default/debug",
        "--drain",
        "b2",
        "--delete-emptydir-data",
    ]);
    assert_eq!(code, 0, "{r:#}");
    assert_eq!(
        r["verdict"]["summary"],
        "safe to drain b2: all 3 pods find a home"
    );
    assert_eq!(outcome_of(&r, "default/debug"), "Removed");
    // web-4's zone-b replacement must stay in zone b, db-2 goes where no db runs.
    assert_eq!(outcome_of(&r, "shop/web-7f9c-m4n8q"), "b1");
    assert_eq!(outcome_of(&r, "shop/db-2"), "a2");
}

#[test]
fn deleting_a_node_and_a_no_execute_taint_recreate_owned_pods_without_asking_budgets() {
    let (code, r) = plan(&["whatif", "--clone-node", "b1=1", "--delete-node", "b2"]);
    assert_eq!(r["edits"][1]["flag"], "--delete-node b2");
    assert!(
        r["edits"][1]["summary"]
            .as_str()
            .unwrap()
            .starts_with("delete node b2: 3 pods recreated elsewhere, 1 pod lost, 1 pod gone"),
        "{:#}",
        r["edits"]
    );
    assert_eq!(code, 1, "default/debug is lost");
    assert_eq!(outcome_of(&r, "default/debug"), "Lost");
    assert_eq!(outcome_of(&r, "kube-system/node-agent-b2"), "Removed");
    assert_eq!(pod_entry(&r, "shop/db-2")["origin"], "Displaced");
    assert_eq!(pod_entry(&r, "shop/db-2")["edit"], 1);
    let b2 = node_summary(&r, "b2");
    assert_eq!(b2["podsAfter"], Value::Null);

    // The DaemonSet pod tolerates everything; the others go.
    let (_, r) = plan(&["whatif", "--taint", "b1=maintenance:NoExecute"]);
    assert_eq!(
        r["edits"][0]["summary"],
        "taint b1 maintenance:NoExecute: 2 pods recreated elsewhere"
    );
    // Their replacements arrive as the taint manager evicts them (in the order read).
    let moved: Vec<String> = outcomes(&r).into_iter().map(|(p, _)| p).collect();
    assert_eq!(moved, ["shop/web-7f9c-z9v5n", "shop/db-1"]);
}

#[test]
fn cordon_uncordon_taint_untaint_and_label_change_what_fits() {
    let dir = Dir::new();
    let ssd = dir.write(
        "ssd.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: ssd, namespace: shop}\nspec:\n  nodeSelector: {disktype: ssd}\n  containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]\n",
    );
    // The pod needs disktype=ssd, which b1 gets first; then `changes`.
    let place = |changes: &[&str]| {
        let mut args = vec!["whatif", "-f", &ssd, "--label", "b1", "disktype=ssd"];
        args.extend(changes);
        let (code, r) = plan(&args);
        let message = pod_entry(&r, "shop/ssd")["message"]
            .as_str()
            .unwrap_or("")
            .to_string();
        (code, outcome_of(&r, "shop/ssd"), message, r)
    };
    let b1 = (0, "b1".to_string());
    let (code, node, _, _) = place(&[]);
    assert_eq!((code, node), b1);
    // Cordoned: nowhere; uncordoned again: back on b1.
    let (code, _, message, _) = place(&["--cordon", "b1"]);
    assert_eq!(code, 1);
    assert!(
        message.contains("1 node(s) were unschedulable"),
        "{message}"
    );
    let (code, node, _, _) = place(&["--cordon", "b1", "--uncordon", "b1"]);
    assert_eq!((code, node), b1);
    // The label removed again with KEY-.
    let (code, _, message, _) = place(&["--label", "b1", "disktype-"]);
    assert_eq!(code, 1);
    assert!(
        message.contains("didn't match Pod's node affinity/selector"),
        "{message}"
    );
    // A NoSchedule taint keeps it off; removing the taint lets it back.
    let taint = ["--taint", "b1=dedicated=db:NoSchedule"];
    let (code, _, message, _) = place(&taint);
    assert_eq!(code, 1);
    assert!(message.contains("untolerated taint"), "{message}");
    let (code, node, _, r) = place(&[&taint[..], &["--untaint", "b1=dedicated"]].concat());
    assert_eq!((code, node), b1);
    assert_eq!(
        edit_flags(&r),
        [
            "--label b1 disktype=ssd",
            "--taint b1=dedicated=db:NoSchedule",
            "--untaint b1=dedicated"
        ]
    );
}

#[test]
fn added_and_cloned_nodes_get_their_daemon_set_pods_and_schedule_pending_pods() {
    let dir = Dir::new();
    let big = dir.write(
        "big.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: big, namespace: batch}\nspec:\n  priorityClassName: batch-low\n  containers: [{name: c, image: x, resources: {requests: {cpu: '3'}}}]\n",
    );
    let (code, _) = plan(&["whatif", "-f", &big, "--seed", "1"]);
    assert_eq!(
        code, 1,
        "3 cpu fit on no node, and the batch pod may preempt nobody"
    );
    let node = dir.write(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: c1\n  labels: {topology.kubernetes.io/zone: zone-c}\nstatus:\n  capacity: {cpu: '8', memory: 32Gi, pods: '110'}\n",
    );
    let (code, r) = plan(&["whatif", "-f", &big, "--add-node", &node]);
    assert_eq!(code, 0, "{r:#}");
    assert_eq!(outcome_of(&r, "batch/big"), "c1");
    // The node-agent DaemonSet tolerates everything and selects no node: c1 gets its pod.
    assert_eq!(outcome_of(&r, "kube-system/node-agent-c1"), "c1");
    assert_eq!(r["edits"][0]["addedNodes"], json!(["c1"]));
    let c1 = node_summary(&r, "c1");
    assert_eq!(
        (c1["podsBefore"].clone(), c1["podsAfter"].as_u64()),
        (Value::Null, Some(2))
    );

    // Clones are named after their node, with the DaemonSet pod and the static pod of a1.
    let (code, r) = plan(&["whatif", "-f", &big, "--clone-node", "a1=2"]);
    assert_eq!(code, 0);
    assert_eq!(
        r["edits"][0]["addedNodes"],
        json!(["a1-clone-1", "a1-clone-2"])
    );
    assert_eq!(outcome_of(&r, "batch/big"), "a1-clone-1");
    assert_eq!(
        outcome_of(&r, "kube-system/node-agent-a1-clone-2"),
        "a1-clone-2"
    );
    let clone = node_summary(&r, "a1-clone-2");
    assert_eq!(
        clone["podsAfter"], 2,
        "the DaemonSet pod and the static pod"
    );
    assert_eq!(clone["zone"], "zone-a");
}

#[test]
fn explain_all_pending_takes_the_same_changes() {
    let dir = Dir::new();
    // A snapshot of the plan cluster with two pending pods.
    let mut text = std::fs::read_to_string(plan_cluster()).unwrap();
    text.push_str(
        "- {apiVersion: v1, kind: Pod, metadata: {name: wants-3, namespace: shop, creationTimestamp: '2026-02-01T00:00:00Z'}, spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '3'}}}]}}\n\
         - {apiVersion: v1, kind: Pod, metadata: {name: wants-2, namespace: batch, creationTimestamp: '2026-02-02T00:00:00Z'}, spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 1500m}}}]}}\n",
    );
    let snapshot = dir.write("pending.yaml", &text);
    let run = sched(&["explain", "--all-pending", "--snapshot", &snapshot]);
    assert_eq!(run.code, 1, "{run:?}");
    let (code, r) = plan(&[
        "explain",
        "--all-pending",
        "--snapshot",
        &snapshot,
        "--clone-node",
        "a2=1",
    ]);
    assert_eq!(code, 0, "{r:#}");
    // In queue order: the DaemonSet pod (highest priority), then the older pending pod, which
    // only the clone has room for.
    let got = outcomes(&r);
    assert_eq!(
        got[..2],
        [
            (
                "kube-system/node-agent-a2-clone-1".to_string(),
                "a2-clone-1".to_string()
            ),
            ("shop/wants-3".to_string(), "a2-clone-1".to_string()),
        ]
    );
    assert_eq!(got[2].0, "batch/wants-2");
    assert_eq!(pod_entry(&r, "batch/wants-2")["outcome"], "Scheduled");
    assert_eq!(pod_entry(&r, "shop/wants-3")["origin"], "Pending");
    // -n keeps the namespace's pending pods only.
    let (_, r) = plan(&[
        "explain",
        "--all-pending",
        "--snapshot",
        &snapshot,
        "--clone-node",
        "a2=1",
        "-n",
        "batch",
    ]);
    let pods: Vec<String> = outcomes(&r).into_iter().map(|(p, _)| p).collect();
    assert!(
        pods.contains(&"batch/wants-2".to_string()) && !pods.contains(&"shop/wants-3".to_string())
    );
}

#[test]
fn every_workload_kind_of_f() {
    let dir = Dir::new();
    let spec = "containers: [{name: c, image: x, resources: {requests: {cpu: 100m}}}]";
    let cases = [
        (
            "Deployment",
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: w, namespace: shop}}\nspec:\n  replicas: 3\n  selector: {{matchLabels: {{app: w}}}}\n  template:\n    metadata: {{labels: {{app: w}}}}\n    spec: {{{spec}}}\n"
            ),
            3,
        ),
        (
            "ReplicaSet",
            format!(
                "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {{name: w, namespace: shop}}\nspec:\n  replicas: 2\n  selector: {{matchLabels: {{app: w}}}}\n  template:\n    metadata: {{labels: {{app: w}}}}\n    spec: {{{spec}}}\n"
            ),
            2,
        ),
        (
            "StatefulSet",
            format!(
                "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: w, namespace: shop}}\nspec:\n  replicas: 2\n  serviceName: w\n  selector: {{matchLabels: {{app: w}}}}\n  template:\n    metadata: {{labels: {{app: w}}}}\n    spec: {{{spec}}}\n"
            ),
            2,
        ),
        (
            "ReplicationController",
            format!(
                "apiVersion: v1\nkind: ReplicationController\nmetadata: {{name: w, namespace: shop}}\nspec:\n  replicas: 2\n  selector: {{app: w}}\n  template:\n    metadata: {{labels: {{app: w}}}}\n    spec: {{{spec}}}\n"
            ),
            2,
        ),
        (
            "Job",
            format!(
                "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: w, namespace: batch}}\nspec:\n  parallelism: 4\n  completions: 3\n  template:\n    spec: {{restartPolicy: Never, {spec}}}\n"
            ),
            3,
        ),
        (
            "CronJob",
            format!(
                "apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: w, namespace: batch}}\nspec:\n  schedule: '0 * * * *'\n  jobTemplate:\n    spec:\n      parallelism: 2\n      template:\n        spec: {{restartPolicy: Never, {spec}}}\n"
            ),
            2,
        ),
        (
            "Pod",
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: w, namespace: shop}}\nspec: {{{spec}}}\n"
            ),
            1,
        ),
    ];
    for (kind, text, count) in cases {
        let f = dir.write(&format!("{kind}.yaml"), &text);
        // --seed makes a plan of any workload.
        let (code, r) = plan(&["whatif", "-f", &f, "--seed", "7"]);
        assert_eq!(code, 0, "{kind}: {r:#}");
        let pods = r["pods"].as_array().unwrap();
        assert_eq!(pods.len(), count, "{kind}: {r:#}");
        assert!(
            pods.iter()
                .all(|p| p["origin"] == "Workload" && p["document"] == 0),
            "{kind}"
        );
        assert_eq!(r["seed"], 7);
    }
    // Several documents: placed in order, the second sees the first.
    let two = dir.write(
        "two.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: first, namespace: shop}\nspec:\n  nodeSelector: {kubernetes.io/hostname: b1}\n  containers: [{name: c, image: x, resources: {requests: {cpu: '1.5'}}}]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: second, namespace: shop}\nspec:\n  nodeSelector: {kubernetes.io/hostname: b1}\n  containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]\n",
    );
    let (code, r) = plan(&["whatif", "-f", &two]);
    assert_eq!(code, 1);
    assert_eq!(
        outcomes(&r),
        [
            ("shop/first".to_string(), "b1".to_string()),
            ("shop/second".to_string(), "Pending".to_string())
        ]
    );
    assert_eq!(pod_entry(&r, "shop/second")["document"], 1);
    // A List is several documents too.
    let list = dir.write(
        "list.yaml",
        "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: shop}, spec: {containers: [{name: c, image: x}]}}\n- {apiVersion: v1, kind: Pod, metadata: {name: b, namespace: shop}, spec: {containers: [{name: c, image: x}]}}\n",
    );
    let (code, r) = plan(&["whatif", "-f", &list]);
    assert_eq!((code, r["pods"].as_array().unwrap().len()), (0, 2));
}

#[test]
fn a_daemon_set_runs_where_the_controller_and_the_scheduler_allow_and_may_preempt() {
    let dir = Dir::new();
    let ds = |priority: &str| {
        format!(
            "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: logger, namespace: kube-system}}\nspec:\n  selector: {{matchLabels: {{app: logger}}}}\n  template:\n    metadata: {{labels: {{app: logger}}}}\n    spec:\n      {priority}\n      containers: [{{name: c, image: x, resources: {{requests: {{cpu: '1'}}}}}}]\n"
        )
    };
    let f = dir.write("ds.yaml", &ds(""));
    let (code, r) = plan(&[
        "whatif",
        "-f",
        &f,
        "--taint",
        "b2=dedicated=db:NoSchedule",
        "--cordon",
        "a2",
    ]);
    assert_eq!(code, 1, "a1 has no room left");
    let d = &r["daemonSets"][0];
    assert_eq!(d["daemonSet"], "kube-system/logger");
    let node = |name: &str| entry(d, "nodes", "node", name);
    // The controller tolerates the cordon; the user's taint is not tolerated.
    assert_eq!(node("a2")["outcome"], "Scheduled");
    assert_eq!(node("b1")["outcome"], "Scheduled");
    assert_eq!(node("b2")["outcome"], "Skipped");
    assert_eq!(
        node("b2")["reason"],
        "untolerated taint dedicated=db:NoSchedule"
    );
    assert_eq!(node("a1")["outcome"], "Pending");
    assert!(
        node("a1")["reason"]
            .as_str()
            .unwrap()
            .contains("Insufficient cpu")
    );
    assert_eq!(
        (
            d["scheduled"].as_u64(),
            d["skipped"].as_u64(),
            d["pending"].as_u64()
        ),
        (Some(2), Some(1), Some(1))
    );
    let table = sched(&["whatif", "-f", &f, "--taint", "b2=dedicated=db:NoSchedule"]).stdout;
    assert!(table.contains("DaemonSet kube-system/logger:"), "{table}");
    assert!(table.contains("skipped"), "{table}");

    // A node-critical DaemonSet makes room on a1 by preempting there.
    let f = dir.write(
        "critical.yaml",
        &ds("priorityClassName: system-node-critical"),
    );
    let (_, r) = plan(&["whatif", "-f", &f]);
    let on_a1 = pod_entry(&r, "kube-system/logger-a1");
    assert_eq!(on_a1["node"], "a1");
    assert!(!on_a1["preempts"].as_array().unwrap().is_empty(), "{on_a1}");
}

#[test]
fn ties_go_to_the_first_node_by_name_unless_seeded() {
    let dir = Dir::new();
    let pod = small_pod(&dir);
    let chosen = |seed: Option<&str>| {
        let mut args = vec!["whatif", "-f", &pod, "--clone-node", "b1=4"];
        if let Some(s) = seed {
            args.extend(["--seed", s]);
        }
        let (_, r) = plan(&args);
        let p = pod_entry(&r, "shop/probe").clone();
        (
            p["node"].as_str().unwrap().to_string(),
            p["tied"].as_u64().unwrap(),
        )
    };
    // The four clones are alike and emptier than any other node.
    let (first, tied) = chosen(None);
    assert_eq!((first.as_str(), tied), ("b1-clone-1", 4));
    assert_eq!(chosen(None).0, first, "repeatable");
    assert_eq!(chosen(Some("5")), chosen(Some("5")), "a seed is repeatable");
    let mut seen: Vec<String> = (0..24).map(|s| chosen(Some(&s.to_string())).0).collect();
    seen.sort();
    seen.dedup();
    assert!(
        seen.len() > 1,
        "seeds choose among the tied nodes: {seen:?}"
    );
}

/// `--snapshot` with `edit` applied to the plan cluster's objects by hand.
fn edited(dir: &Dir, edit: impl Fn(&mut Vec<Value>)) -> String {
    let text = std::fs::read_to_string(plan_cluster()).unwrap();
    let mut list: Value = serde_saphyr::from_str(&text).unwrap();
    edit(list["items"].as_array_mut().unwrap());
    dir.write("edited.json", &serde_json::to_string(&list).unwrap())
}

fn node_mut<'a>(items: &'a mut [Value], name: &str) -> &'a mut Value {
    items
        .iter_mut()
        .find(|o| o["kind"] == "Node" && o["metadata"]["name"] == name)
        .unwrap()
}

#[test]
fn each_placement_equals_single_pod_whatif_on_the_changed_cluster() {
    let dir = Dir::new();
    let pod = dir.write(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: probe, namespace: shop, labels: {app: web}}\nspec:\n  containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 1Gi}}}]\n  affinity:\n    podAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 50\n        podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: db}}}\n",
    );
    let cordoned = |n: &mut Value| {
        n["spec"]["unschedulable"] = json!(true);
        n["spec"]["taints"] =
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]);
    };
    type Edit = Box<dyn Fn(&mut Vec<Value>)>;
    let cases: Vec<(Vec<&str>, Edit)> = vec![
        (
            vec!["--cordon", "b1"],
            Box::new(move |items| cordoned(node_mut(items, "b1"))),
        ),
        (
            vec!["--taint", "a2=team=x:PreferNoSchedule"],
            Box::new(|items| {
                node_mut(items, "a2")["spec"]["taints"] =
                    json!([{"key": "team", "value": "x", "effect": "PreferNoSchedule"}])
            }),
        ),
        (
            vec!["--label", "b2", "kubernetes.io/hostname=other"],
            Box::new(|items| {
                node_mut(items, "b2")["metadata"]["labels"]["kubernetes.io/hostname"] =
                    json!("other")
            }),
        ),
        (
            vec!["--cordon", "a2", "--uncordon", "a2", "--cordon", "b2"],
            Box::new(move |items| cordoned(node_mut(items, "b2"))),
        ),
        (
            vec!["--clone-node", "b2=1"],
            Box::new(|items| {
                let mut clone = node_mut(items, "b2").clone();
                clone["metadata"]["name"] = json!("b2-clone-1");
                clone["metadata"]["labels"]["kubernetes.io/hostname"] = json!("b2-clone-1");
                let mut agent = items
                    .iter()
                    .find(|o| o["metadata"]["name"] == "node-agent-b2")
                    .unwrap()
                    .clone();
                agent["metadata"]["name"] = json!("node-agent-b2-clone-1");
                agent["metadata"]["uid"] = json!("uid-agent-clone");
                agent["spec"]["nodeName"] = json!("b2-clone-1");
                items.push(clone);
                items.push(agent);
            }),
        ),
    ];
    for release in RELEASES {
        for (flags, edit) in &cases {
            let mut args = vec!["whatif", "-f", &pod, "--scheduler-version", release];
            args.extend(flags.iter().copied());
            let (_, r) = plan(&args);
            let placed = pod_entry(&r, "shop/probe");
            let snapshot = edited(&dir, edit);
            let run = sched(&[
                "whatif",
                "-f",
                &pod,
                "--snapshot",
                &snapshot,
                "--scheduler-version",
                release,
                "-o",
                "json",
            ]);
            let whatif = run.json();
            let selected = strings(&whatif["selected"]);
            assert_eq!(
                placed["node"].as_str(),
                selected.first().map(String::as_str),
                "{release} {flags:?}: plan {placed}, what-if selects {selected:?}"
            );
            assert_eq!(
                placed["tied"].as_u64(),
                Some(selected.len() as u64),
                "{release} {flags:?}"
            );
            let best = whatif["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|n| n["name"] == selected[0])
                .unwrap();
            if !whatif["scoringSkipped"].as_bool().unwrap() {
                assert_eq!(placed["score"], best["total"], "{release} {flags:?}");
            }
        }
    }
}

#[test]
fn bad_changes_are_errors_naming_the_flag_exit_2() {
    let dir = Dir::new();
    let pod = small_pod(&dir);
    let no_capacity = dir.write(
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata: {name: c1}\n",
    );
    let bad_doc = dir.write(
        "two.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: ok, namespace: shop}\nspec: {containers: [{name: c, image: x}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: bad, namespace: shop}\nspec: {containers: [{name: c, image: x, resources: {requests: {cpu: lots}}}]}\n",
    );
    for (args, expected) in [
        (
            vec!["whatif", "--cordon", "zz"],
            "error: --cordon zz: no node named \"zz\"",
        ),
        (
            vec!["whatif", "--drain", "a1", "--delete-node", "a1"],
            "error: --drain a1: a later --delete-node removes the node before it could be drained",
        ),
        (
            vec!["whatif", "--taint", "a1=k:Sometimes"],
            "error: --taint a1=k:Sometimes: invalid taint effect \"Sometimes\"",
        ),
        (
            vec!["whatif", "--taint", "a1"],
            "error: --taint a1: expected NODE=KEY[=VALUE]:EFFECT",
        ),
        (
            vec!["whatif", "--untaint", "a1=nope"],
            "error: --untaint a1=nope: a1 has no such taint",
        ),
        (
            vec!["whatif", "--label", "a1", "no-value"],
            "error: --label a1 no-value: expected KEY=VALUE, or KEY- to remove",
        ),
        (
            vec!["whatif", "--clone-node", "a1=0"],
            "error: --clone-node a1=0: \"0\" is not a count from 1 to 10000",
        ),
        (
            vec!["whatif", "--delete-pod", "shop/nope"],
            "error: --delete-pod shop/nope: no pod \"nope\" in namespace \"shop\"",
        ),
        (
            vec!["whatif", "--add-node", &no_capacity],
            "status.capacity: required",
        ),
        (
            vec!["whatif", "--add-node", &pod],
            "expected a Node, found a \"Pod\"",
        ),
        (vec!["whatif", "-f", &bad_doc], "(document 2)"),
        (
            vec!["whatif", "-f", &pod, "--max", "--drain", "a1"],
            "error: --max counts the replicas",
        ),
        (
            vec!["whatif", "-f", &bad_doc, "--replicas", "2", "--seed", "1"],
            "error: --replicas:",
        ),
        (vec!["whatif"], "error: nothing to place"),
        (
            vec!["explain", "pod/x", "--drain", "a1"],
            "go with --all-pending",
        ),
        (vec!["whatif", "-f", &pod, "--force"], "--drain"),
        (
            vec!["whatif", "--drain-timeout", "5m", "--cordon", "a1"],
            "--drain",
        ),
        (
            vec!["whatif", "--drain", "a1", "--drain-timeout", "soon"],
            "error: invalid --drain-timeout \"soon\": use a duration such as 90s, 5m or 1h",
        ),
    ] {
        let run = sched(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{args:?}");
    }
}

#[test]
fn changes_apply_in_command_line_order() {
    // Label, then remove it: gone. The other way round: the removal fails (nothing to remove).
    let (_, r) = plan(&[
        "whatif", "--label", "a1", "x=1", "--cordon", "b1", "--label", "a1", "x-",
    ]);
    assert_eq!(
        edit_flags(&r),
        ["--label a1 x=1", "--cordon b1", "--label a1 x-"]
    );
    let run = sched(&["whatif", "--label", "a1", "x-", "--label", "a1", "x=1"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("--label a1 x-: a1 has no label x"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_live_cluster_is_planned_by_reading_it_only() {
    let (server, ws, kc) = support::fixture_server();
    let live = ws.run(&kc, &["whatif", "--drain", "n1", "--force", "-o", "json"]);
    assert!(live.code == 0 || live.code == 1, "{live:?}");
    server.assert_only_gets();
    let file = sched(&[
        "whatif",
        "--snapshot",
        support::repo()
            .join("fixtures/live/cluster.yaml")
            .to_str()
            .unwrap(),
        "--drain",
        "n1",
        "--force",
        "-o",
        "json",
        "--scheduler-version",
        live.json()["schedulerVersion"].as_str().unwrap(),
    ]);
    assert_eq!(live.code, file.code);
    let (mut a, mut b) = (live.json(), file.json());
    for v in [&mut a, &mut b] {
        v.as_object_mut().unwrap().remove("schedulerVersionFrom");
    }
    assert_eq!(a, b);
    assert!(!a["pods"].as_array().unwrap().is_empty(), "{a:#}");
}

#[test]
fn order_dependent_outcomes_list_every_node_a_pod_may_end_on() {
    let cluster = fixture("drain-race.yaml");
    let (code, r) = plan(&["whatif", "--snapshot", &cluster, "--drain", "n1"]);
    assert_eq!(code, 1, "{r:#}");
    // api and worker both want n2's room; the first kubectl evicts usually wins.
    for (pod, node) in [
        ("shop/api-7c4d-a", json!("n2")),
        ("shop/worker-5f6b-b", Value::Null),
    ] {
        let p = pod_entry(&r, pod);
        assert_eq!(p["node"], node, "{p:#}");
        assert_eq!(p["orderDependent"], true, "{p:#}");
        assert_eq!(p["possibleNodes"], json!(["n2", null]), "{p:#}");
        let why = strings(&p["why"]);
        assert!(
            why.iter()
                .any(|w| w.starts_with("competes with shop/") && w.ends_with(" for n2")),
            "{why:?}"
        );
    }
    assert_eq!(pod_entry(&r, "shop/api-7c4d-a")["tiedNodes"], json!(["n2"]));
    // The small pod ties on t1 and t2, whatever the order.
    let cron = pod_entry(&r, "shop/cron-9d8e-c");
    assert_eq!(cron["node"], "t1");
    assert_eq!(
        (cron["tied"].as_u64(), &cron["tiedNodes"]),
        (Some(2), &json!(["t1", "t2"]))
    );
    assert_eq!(cron["possibleNodes"], json!(["t1", "t2"]));
    assert_eq!(cron["orderDependent"], false);
    assert_eq!(r["verdict"]["orderDependent"], 2);
    assert_eq!(
        r["verdict"]["summary"],
        "NOT SAFE to drain n1: 1 pod stays pending (shop/worker-5f6b-b); depending on the order, 1 pod may stay pending (shop/api-7c4d-a)"
    );
    assert_eq!(r["exploration"]["capped"], false);
    assert_eq!(r["exploration"]["endStates"], 2);
}

#[test]
fn the_table_says_which_outcomes_depend_on_the_order_and_why() {
    let cluster = fixture("drain-race.yaml");
    let run = sched(&["whatif", "--snapshot", &cluster, "--drain", "n1"]);
    assert!(run.stdout.contains("order-dependent:"), "{}", run.stdout);
    assert!(run.stdout.lines().all(|l| l.chars().count() <= 80));
    insta::assert_snapshot!("plan_drain_race_80", run.stdout);
    let mut c = assert_cmd::Command::cargo_bin("kubectl-sched").unwrap();
    c.env_remove("NO_COLOR")
        .env("COLUMNS", "200")
        .env("TERM", "xterm")
        .args([
            "whatif",
            "--snapshot",
            &cluster,
            "--drain",
            "n1",
            "--color",
            "always",
        ]);
    let wide = Run::from(c.output().unwrap());
    insta::assert_snapshot!("plan_drain_race_200_colour", wide.stdout);
}

#[test]
fn a_drain_timeout_lets_kubectl_go_on_with_the_next_node() {
    // With a2 cordoned, web's first replacement has nowhere to go: web's budget never comes
    // back and a1 keeps a pod. Without a timeout kubectl never gets to b1; with one it does.
    let (_, r) = plan(&["whatif", "--cordon", "a2", "--drain", "a1", "--drain", "b1"]);
    assert_eq!(r["drains"][1]["waitingOn"], "a1");
    let with_timeout = [
        "whatif",
        "--cordon",
        "a2",
        "--drain",
        "a1",
        "--drain",
        "b1",
        "--drain-timeout",
        "5m",
    ];
    let (code, r) = plan(&with_timeout);
    assert_eq!(code, 1);
    let (a1, b1) = (&r["drains"][0], &r["drains"][1]);
    assert_eq!(a1["timedOut"], true, "{a1:#}");
    assert_eq!(a1["completed"], false);
    assert_eq!(b1["waitingOn"], Value::Null);
    assert!(
        !b1["evicted"].as_array().unwrap().is_empty()
            || !b1["blocked"].as_array().unwrap().is_empty(),
        "{b1:#}"
    );
    let summary = r["verdict"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("kubectl drain gives up on a1 at --drain-timeout and goes on"),
        "{summary}"
    );
    let table = sched(&with_timeout).stdout;
    assert!(
        table
            .replace("\n    ", " ")
            .contains("timed out: kubectl gives up at --drain-timeout"),
        "{table}"
    );
}

/// `--drain -l SELECTOR` drains every node the selector selects, in name order, as `kubectl
/// drain -l` does: the same plan as naming them; `--cordon`, `--uncordon` and `--taint` take
/// `-l` too; a selector that selects nothing, or does not parse, is bad input.
#[test]
fn node_sets_by_label_selector() {
    let (code, by_label) = plan(&[
        "whatif",
        "--drain",
        "-l",
        "topology.kubernetes.io/zone=zone-b",
        "--force",
        "--delete-emptydir-data",
    ]);
    let (named_code, by_name) = plan(&[
        "whatif",
        "--drain",
        "b1",
        "--drain",
        "b2",
        "--force",
        "--delete-emptydir-data",
    ]);
    assert_eq!(code, named_code);
    assert_eq!(
        edit_flags(&by_label),
        ["--drain -l topology.kubernetes.io/zone=zone-b"]
    );
    let drained = |r: &Value| -> Vec<String> {
        r["drains"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["node"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(drained(&by_label), ["b1", "b2"]);
    assert_eq!(by_label["drains"], by_name["drains"]);
    assert_eq!(by_label["pods"], by_name["pods"]);
    assert_eq!(by_label["verdict"], by_name["verdict"]);
    // Every spelling kubectl accepts, and set-based selectors.
    for spelling in [
        &["--drain", "-ltopology.kubernetes.io/zone=zone-b"][..],
        &["--drain", "--selector=topology.kubernetes.io/zone=zone-b"][..],
        &["--drain", "-l", "topology.kubernetes.io/zone in (zone-b)"][..],
    ] {
        let mut args = vec!["whatif"];
        args.extend(spelling);
        args.extend(["--force", "--delete-emptydir-data"]);
        let (_, r) = plan(&args);
        assert_eq!(drained(&r), ["b1", "b2"], "{spelling:?}");
    }
    let (_, r) = plan(&[
        "explain",
        "--all-pending",
        "--cordon",
        "-l",
        "topology.kubernetes.io/zone=zone-a",
        "--taint",
        "-l",
        "topology.kubernetes.io/zone!=zone-a",
        "dedicated=batch:NoSchedule",
    ]);
    let summaries: Vec<&str> = r["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["summary"].as_str().unwrap())
        .collect();
    assert_eq!(
        summaries,
        [
            "cordon a1; cordon a2",
            "taint b1 dedicated=batch:NoSchedule; taint b2 dedicated=batch:NoSchedule"
        ]
    );
    for (args, said) in [
        (
            &["whatif", "--drain", "-l", "pool=none"][..],
            "--drain -l pool=none: no node matches",
        ),
        (
            &["whatif", "--cordon", "-l", "pool in blue"][..],
            "unable to parse requirement: found 'blue' expected: '('",
        ),
        (
            &["whatif", "--taint", "-l", "pool=blue", "dedicated"][..],
            "expected KEY[=VALUE]:EFFECT (the effect is required)",
        ),
    ] {
        let run = sched(args);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(run.stderr.contains(said), "{run:?}");
    }
}

/// A PodDisruptionBudget of policy/v1beta1 with an empty selector selects no pod, as it did in
/// that version (in policy/v1 `{}` selects every pod): a drain is as if it were not there.
#[test]
fn an_empty_v1beta1_budget_protects_nothing() {
    let dir = Dir::new();
    let mut text = std::fs::read_to_string(plan_cluster()).unwrap();
    text.push_str(
        "- apiVersion: policy/v1beta1
  kind: PodDisruptionBudget
  metadata: {name: legacy, namespace: shop}
  spec: {selector: {}, maxUnavailable: 0}
  status: {disruptionsAllowed: 0, currentHealthy: 4, desiredHealthy: 4}
",
    );
    let old = dir.write("old.yaml", &text);
    let (code, with) = plan(&["whatif", "--drain", "a1", "--snapshot", &old]);
    let (expected_code, without) = plan(&["whatif", "--drain", "a1"]);
    assert_eq!(code, expected_code);
    assert_eq!(with["drains"], without["drains"]);
    assert_eq!(with["pods"], without["pods"]);
    // Read as policy/v1, the same budget would select every shop pod and refuse their eviction.
    let v1 = dir.write("v1.yaml", &text.replace("policy/v1beta1", "policy/v1"));
    let (_, refused) = plan(&["whatif", "--drain", "a1", "--snapshot", &v1]);
    assert_ne!(refused["drains"], without["drains"]);
}
