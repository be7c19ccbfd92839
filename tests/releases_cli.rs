//! The scheduler a user runs: `--feature-gates` read as kube-scheduler reads them, the release of
//! a dump inferred from its kubelets and events, and `--compare-to` between two releases (tables
//! at 80 and 200 columns, colour on and off; JSON; exit codes).

mod common;

use common::colours::without_our_colours;
use common::{root, sched};
use serde_json::Value;

fn fixture(path: &str) -> String {
    root().join(path).display().to_string()
}

fn upgrade() -> String {
    fixture("fixtures/clusters/upgrade.yaml")
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = sched().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn json(args: &[&str]) -> (i32, Value) {
    let (code, out, err) = run(&[args, &["-o", "json"]].concat());
    let v = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, v)
}

/// A dump of the conformance case `case` with its pod pending and a FailedScheduling event
/// whose message is `message`, in a directory that lives as long as the value.
fn with_event(case: &str, pod: (&str, &str), message: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let case = root().join("fixtures/conformance").join(case);
    let event = serde_json::json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{}.1", pod.1), "namespace": pod.0},
        "involvedObject": {"kind": "Pod", "name": pod.1, "namespace": pod.0},
        "reason": "FailedScheduling", "type": "Warning", "message": message,
        "count": 2, "lastTimestamp": "2026-11-01T10:00:00Z"
    });
    let text = format!(
        "{}\n---\n{}\n---\n{event}\n",
        std::fs::read_to_string(case.join("cluster.yaml")).unwrap(),
        std::fs::read_to_string(case.join("pod.yaml")).unwrap()
    );
    let path = dir.path().join("dump.yaml");
    std::fs::write(&path, text).unwrap();
    let path = path.display().to_string();
    (dir, path)
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn recorded_message(case: &str, file: &str) -> String {
    let path = root().join("fixtures/conformance").join(case).join(file);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["message"].as_str().unwrap().to_string()
}

#[test]
fn feature_gates_are_refused_in_kube_schedulers_words() {
    let demo = common::demo();
    let pod = fixture("fixtures/pods/web.yaml");
    for (gates, said) in [
        (
            "Typo=true",
            "kube-scheduler v1.36.2 refuses it: unrecognized feature gate: Typo",
        ),
        (
            "SidecarContainers=false",
            "kube-scheduler v1.36.2 refuses it: cannot set feature gate SidecarContainers to false, feature is locked to true",
        ),
        (
            "StorageCapacityScoring=maybe",
            "kube-scheduler v1.36.2 refuses it: invalid value of StorageCapacityScoring=maybe, err: strconv.ParseBool: parsing \"maybe\": invalid syntax",
        ),
        (
            "GenericWorkload=true",
            "kubectl-sched does not model feature gate GenericWorkload=true (pod groups) in kube-scheduler v1.36.2: its answer would silently be the release's default one",
        ),
    ] {
        let (code, out, err) = run(&[
            "whatif",
            "--snapshot",
            &demo,
            "-f",
            &pod,
            "--feature-gates",
            gates,
        ]);
        assert_eq!(code, 2, "{gates}: {out}{err}");
        assert_eq!(
            err.trim(),
            format!("error: --feature-gates {gates:?}: {said}"),
            "{gates}"
        );
    }
    // A gate 1.34 does not have.
    let (code, _, err) = run(&[
        "whatif",
        "--snapshot",
        &demo,
        "-f",
        &pod,
        "--scheduler-version",
        "1.34",
        "--feature-gates",
        "NodeDeclaredFeatures=true",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "kube-scheduler v1.34.1 refuses it: unrecognized feature gate: NodeDeclaredFeatures"
        ),
        "{err}"
    );
}

#[test]
fn gates_in_force_change_the_answer_and_are_shown() {
    let up = upgrade();
    let trainer = fixture("fixtures/pods/restart-all.yaml");
    let whatif =
        |gates: &[&str]| run(&[&["whatif", "-f", &trainer, "--snapshot", &up][..], gates].concat());
    // 1.35 (the kubelets') has NodeDeclaredFeatures off: the pod fits; on, no node declares
    // what its restart rules need.
    let (code, out, _) = whatif(&[]);
    assert_eq!(code, 0, "{out}");
    let (code, out, err) = whatif(&["--feature-gates", "NodeDeclaredFeatures=true"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("feature gates: NodeDeclaredFeatures=true"),
        "{out}"
    );
    // JSON carries every gate of the release.
    let (_, v) = json(&[
        "whatif",
        "-f",
        &trainer,
        "--snapshot",
        &up,
        "--feature-gates",
        "kube:NodeDeclaredFeatures=true,kube:KubeletInUserNamespace=true",
    ]);
    let w1 = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "w1")
        .unwrap();
    assert_eq!(w1["plugin"], "NodeDeclaredFeatures");
    assert_eq!(
        w1["reasons"],
        serde_json::json!(["node(s) didn't match Pod's required features"])
    );
    let gates = v["featureGates"].as_object().unwrap();
    assert!(gates.len() > 200, "{}", gates.len());
    assert_eq!(gates["NodeDeclaredFeatures"], true);
    assert_eq!(gates["SchedulerQueueingHints"], true);
    assert_eq!(gates["StorageCapacityScoring"], false);
    // A gate that cannot change one cycle is accepted with a note.
    let (code, _, err) = whatif(&["--feature-gates", "KubeletInUserNamespace=true"]);
    assert_eq!(code, 0);
    assert!(
        err.contains(
            "feature gate KubeletInUserNamespace=true: no effect on what kubectl-sched computes"
        ),
        "{err}"
    );
}

#[test]
fn the_release_of_a_dump_is_inferred_and_said() {
    // Kubelets at v1.35.4, no server version: v1.35.4, from the kubelets.
    let (_, v) = json(&["explain", "-A", "--snapshot", &upgrade()]);
    assert_eq!(v["schedulerVersion"], "v1.35.4");
    assert_eq!(v["schedulerVersionFrom"], "kubelets");
    let evidence = &v["schedulerVersionEvidence"];
    assert_eq!(evidence["kubelets"]["newest"], "v1.35.4");
    assert_eq!(evidence["kubelets"]["nodes"], 3);
    assert_eq!(evidence["events"]["read"], 1);
    assert_eq!(evidence["conflict"], Value::Null);
    let (_, out, err) = run(&["explain", "-A", "--snapshot", &upgrade()]);
    assert!(
        out.starts_with(
            "kube-scheduler v1.35.4 (from the kubelets: the newest of 3 kubelets is v1.35.4;"
        ),
        "{out}"
    );
    assert!(
        err.starts_with("note: kube-scheduler v1.35.4 (from the kubelets"),
        "{err}"
    );

    // No kubelet versions, but an event in v1.34.1's wording: v1.34.1, from the events.
    let case = "preempt-mixed-unresolvable";
    let (_dir, dump) = with_event(
        case,
        ("default", "urgent"),
        &recorded_message(case, "expected.json"),
    );
    let (_, v) = json(&["explain", "pod/urgent", "--snapshot", &dump]);
    assert_eq!(v["schedulerVersion"], "v1.34.1");
    assert_eq!(v["schedulerVersionFrom"], "events");
    assert_eq!(
        v["schedulerVersionEvidence"]["events"]["tells"][0]["releases"],
        "before v1.34.2"
    );
    assert_eq!(v["schedulerEvent"]["matches"], true);

    // Nothing at all: the newest, with a warning that is not dim.
    let bare = fixture("fixtures/conformance/fit-memory/cluster.yaml");
    let pod = fixture("fixtures/conformance/fit-memory/pod.yaml");
    let (_, out, err) = run(&["whatif", "--snapshot", &bare, "-f", &pod, "--color=always"]);
    assert!(
        err.starts_with("warning: kube-scheduler v1.37.0 (unverified; newest modelled"),
        "{err}"
    );
    let warning = out.lines().nth(2).unwrap();
    assert!(
        warning.starts_with(
            "\u{1b}[33mwarning: nothing in the input says which kube-scheduler release made it"
        ),
        "{warning:?}"
    );
}

#[test]
fn an_event_in_another_releases_words_names_it() {
    let case = "preempt-mixed-unresolvable";
    let (_dir, dump) = with_event(
        case,
        ("default", "urgent"),
        &recorded_message(case, "expected.json"),
    );
    let (_, out, _) = run(&[
        "explain",
        "pod/urgent",
        "--snapshot",
        &dump,
        "--scheduler-version",
        "1.36",
    ]);
    assert!(
        out.contains("≠ differs from the message computed here: the event reads like v1.34.1: pass --scheduler-version v1.34.1"),
        "{out}"
    );
    let (_, v) = json(&[
        "explain",
        "-A",
        "--snapshot",
        &dump,
        "--scheduler-version",
        "1.36",
    ]);
    assert_eq!(
        v["pods"][0]["schedulerEvent"]["readsLike"],
        serde_json::json!(["v1.34.1"])
    );
    let (_, out, _) = run(&[
        "explain",
        "-A",
        "--snapshot",
        &dump,
        "--scheduler-version",
        "1.36",
    ]);
    assert!(out.contains("reads like v1.34.1"), "{out}");
}

#[test]
fn compare_one_pod() {
    let case = |c: &str, f: &str| fixture(&format!("fixtures/conformance/{c}/{f}"));
    // Scores alone differ: exit 0, and the table says so with the scores and why.
    let args = |c: &str, base: &str, other: &str| -> Vec<String> {
        [
            "whatif",
            "--snapshot",
            &case(c, "cluster.yaml"),
            "-f",
            &case(c, "pod.yaml"),
            "--scheduler-version",
            base,
            "--compare-to",
            other,
        ]
        .map(String::from)
        .to_vec()
    };
    let a = args("fit-memory", "1.35", "1.36");
    let (code, v) = json(&strs(&a));
    assert_eq!(code, 0);
    assert_eq!(v["same"], true);
    assert_eq!(v["base"]["schedulerVersion"], "v1.35.4");
    assert_eq!(v["other"]["schedulerVersion"], "v1.36.2");
    assert_eq!(
        v["differences"]["scores"]["node-1"]["NodeResourcesBalancedAllocation"],
        serde_json::json!({"base": 88, "other": 69})
    );
    assert_eq!(
        v["because"][0]["switch"],
        "balanced_allocation_scores_improvement"
    );
    assert_eq!(v["because"][0]["plugin"], "NodeResourcesBalancedAllocation");
    // The same release on both sides, an unknown one: bad input.
    for (other, said) in [
        ("1.35.4", "that is the release modelled"),
        ("1.33", "kube-scheduler v1.33 is not modelled"),
    ] {
        let (code, _, err) = run(&strs(&args("fit-memory", "1.35", other)));
        assert_eq!(code, 2);
        assert!(err.contains(said), "{err}");
    }
    // Identical answers: one line.
    let (code, out, _) = run(&strs(&args("nodeports-specific-hostip", "1.36", "v1.36.3")));
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(
        out.lines()
            .nth(2)
            .unwrap()
            .contains("the same answer under both"),
        "{out}"
    );
}

#[test]
fn compare_tables_at_80_and_200_columns() {
    let case = |f: &str| {
        fixture(&format!(
            "fixtures/conformance/preempt-mixed-unresolvable/{f}"
        ))
    };
    let views: [(&str, Vec<String>); 3] = [
        (
            "compare_pod",
            [
                "whatif",
                "--snapshot",
                &case("cluster.yaml"),
                "-f",
                &case("pod.yaml"),
                "--scheduler-version",
                "v1.34.1",
                "--compare-to",
                "v1.34.2",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "compare_pending",
            [
                "explain",
                "-A",
                "--snapshot",
                &upgrade(),
                "--compare-to",
                "1.36",
            ]
            .map(String::from)
            .to_vec(),
        ),
        (
            "compare_replicas",
            [
                "whatif",
                "--snapshot",
                &fixture("fixtures/conformance/fit-memory/cluster.yaml"),
                "-f",
                &fixture("fixtures/conformance/fit-memory/pod.yaml"),
                "--replicas",
                "4",
                "--scheduler-version",
                "1.35",
                "--compare-to",
                "1.36",
            ]
            .map(String::from)
            .to_vec(),
        ),
    ];
    for (name, args) in &views {
        for columns in ["80", "200"] {
            for colour in [false, true] {
                let mut c = sched();
                c.env("COLUMNS", columns).args(args);
                if colour {
                    c.arg("--color=always");
                }
                let out = c.output().unwrap();
                assert_eq!(out.status.code(), Some(1), "{name}");
                let out = String::from_utf8(out.stdout).unwrap();
                let visible = without_our_colours(&out);
                assert!(
                    !visible.contains('\x1b'),
                    "{name}: an escape that is not the tool's colours:\n{out}"
                );
                if columns == "80" {
                    assert!(
                        visible.lines().all(|l| l.chars().count() <= 80),
                        "{name}: a line is wider than 80 columns:\n{out}"
                    );
                }
                let snapshot = format!("{name}_{columns}{}", if colour { "_colour" } else { "" });
                insta::assert_snapshot!(snapshot, out);
            }
        }
    }
}

#[test]
fn compare_a_whole_cluster_workloads_and_plans() {
    let up = upgrade();
    let (code, v) = json(&["explain", "-A", "--snapshot", &up, "--compare-to", "1.36"]);
    assert_eq!(code, 1);
    assert_eq!(v["same"], false);
    assert_eq!(v["base"]["schedulerVersion"], "v1.35.4");
    let change = |pod: &str| {
        v["pods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pod"] == pod)
            .map(|p| p["change"].clone())
            .unwrap()
    };
    assert_eq!(change("ops/agent-k8r2p"), "stopsFitting");
    assert_eq!(change("shop/api-6d4f9-x2v7k"), "moves");
    assert_eq!(change("batch/big-7xk2q"), "same");

    // A workload's pending pods: the taint's wording changes in v1.34.2.
    let workloads = fixture("fixtures/clusters/workloads.yaml");
    let (code, v) = json(&[
        "explain",
        "deploy/web",
        "-n",
        "shop",
        "--snapshot",
        &workloads,
        "--compare-to",
        "v1.34.1",
    ]);
    assert_eq!(code, 1);
    assert_eq!(v["scope"], "Deployment shop/web");
    assert_eq!(v["pods"][0]["change"], "messageChanges");
    assert_eq!(v["pods"][0]["because"][0]["plugin"], "TaintToleration");

    // A plan decided alike under both releases: exit 0 though the plan is not safe.
    let plan = fixture("fixtures/clusters/plan.yaml");
    let drain = [
        "whatif",
        "--snapshot",
        &plan,
        "--drain",
        "a1",
        "--scheduler-version",
        "1.35",
        "--compare-to",
        "1.36",
    ];
    let (code, out, _) = run(&drain);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("the same outcome under both (NOT SAFE)"),
        "{out}"
    );
    let (_, v) = json(&drain);
    assert_eq!(v["same"], true);
    assert_eq!(v["base"]["verdict"]["safe"], false);
    assert!(v["candidates"].as_array().unwrap().len() > 3);
}
