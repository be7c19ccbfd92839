//! The binary as a user runs it: golden tables (80 columns, wide, colour on and off), structured
//! output, exit codes, and the errors bad input must produce.

mod common;

use assert_cmd::Command;
use common::{demo, root, sched};

fn pod(name: &str) -> String {
    root()
        .join("fixtures/pods")
        .join(name)
        .display()
        .to_string()
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = sched().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn table_at_80_columns() {
    let (code, out, err) = run(&["whatif", "--snapshot", &demo(), "-f", &pod("ssd-only.yaml")]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines().all(|l| l.chars().count() <= 80),
        "a line is wider than 80 columns:\n{out}"
    );
    insta::assert_snapshot!("whatif_ssd_only_80", out);
}

#[test]
fn wide_table_has_a_column_per_score_plugin() {
    let out = sched()
        .env("COLUMNS", "200")
        .args([
            "whatif",
            "--snapshot",
            &demo(),
            "-f",
            &pod("ssd-only.yaml"),
            "-o",
            "wide",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    let header = out.lines().find(|l| l.starts_with(" NODE ")).unwrap();
    let legend = out.lines().rfind(|l| !l.trim().is_empty()).unwrap();
    for (short, plugin) in [
        ("DR", "DynamicResources"),
        ("IL", "ImageLocality"),
        ("NA", "NodeAffinity"),
        ("NRBA", "NodeResourcesBalancedAllocation"),
        ("NRF", "NodeResourcesFit"),
        ("TT", "TaintToleration"),
    ] {
        assert!(
            header.split_whitespace().any(|h| h == short),
            "no {short} column:\n{out}"
        );
        assert!(
            legend.contains(&format!("{short} {plugin}")),
            "{short} is not in the legend:\n{out}"
        );
    }
    insta::assert_snapshot!("whatif_ssd_only_wide", out);
}

#[test]
fn colours_follow_the_flag_and_no_color() {
    let (_, coloured, _) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("checkout-critical.yaml"),
        "--color",
        "always",
    ]);
    assert!(coloured.contains("\u{1b}["), "--color always must colour");
    insta::assert_snapshot!("whatif_checkout_colour", coloured);
    let (_, plain, _) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("checkout-critical.yaml"),
        "--color",
        "never",
    ]);
    assert!(!plain.contains('\u{1b}'));
    let out = sched()
        .env("NO_COLOR", "1")
        .args([
            "whatif",
            "--snapshot",
            &demo(),
            "-f",
            &pod("checkout-critical.yaml"),
        ])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8(out.stdout).unwrap().contains('\u{1b}'),
        "NO_COLOR must turn colours off"
    );
}

#[test]
fn unschedulable_exits_1_with_preemption() {
    let (code, out, _) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("checkout-critical.yaml"),
    ]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("whatif_checkout_preemption", out);
}

#[test]
fn preemption_not_allowed_says_why() {
    let (code, out, _) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("batch-never.yaml"),
    ]);
    assert_eq!(code, 1);
    assert!(
        out.contains("preemption: not eligible due to preemptionPolicy=Never."),
        "{out}"
    );
}

#[test]
fn gated_pod_is_never_tried() {
    let (code, out, _) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("gated.yaml"),
        "-o",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["prefilter"]["plugin"], "SchedulingGates");
    assert_eq!(v["message"], "");
}

#[test]
fn json_schema_fields() {
    let (code, out, _) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("gpu-job.yaml"),
        "-o",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in [
        "pod",
        "priority",
        "numNodes",
        "nodes",
        "feasible",
        "selected",
        "message",
        "preemption",
        "scoringSkipped",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["selected"], serde_json::json!(["gpu-b1"]));
    assert_eq!(v["scoringSkipped"], true);
    let node = &v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "worker-a1")
        .unwrap();
    assert_eq!(node["plugin"], "NodeResourcesFit");
    assert_eq!(node["code"], "UnschedulableAndUnresolvable");
}

#[test]
fn yaml_output_parses() {
    let (code, out, _) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("web.yaml"),
        "-o",
        "yaml",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_saphyr::from_str(&out).unwrap();
    assert_eq!(v["pod"], "shop/web-extra");
}

#[test]
fn explain_a_pending_pod_and_a_bound_one() {
    let (code, out, _) = run(&[
        "explain",
        "--snapshot",
        &demo(),
        "-n",
        "shop",
        "pod/search-indexer-7c9d5",
    ]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("explain_pending", out);
    let (code, out, _) = run(&[
        "explain",
        "--snapshot",
        &demo(),
        "batch/report-4hq8z",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["pod"], "batch/report-4hq8z");
    let (code, _, err) = run(&["explain", "--snapshot", &demo(), "pods/nope"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("pods \"nope\" not found in namespace \"default\""),
        "{err}"
    );
}

#[test]
fn replicas_are_placed_one_after_another() {
    let (code, out, _) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("hostport.yaml"),
        "--replicas",
        "3",
        "-o",
        "json",
    ]);
    assert_eq!(code, 1, "host port 443 is free on two nodes only");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["placed"], 2);
    assert!(
        v["stopped"]
            .as_str()
            .unwrap()
            .contains("node(s) didn't have free ports for the requested pod ports")
    );
    let nodes: Vec<&str> = v["placements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["node"].as_str().unwrap())
        .collect();
    assert_eq!(nodes.len(), 2);
    assert_ne!(
        nodes[0], nodes[1],
        "the second replica cannot reuse the first one's node"
    );
}

#[test]
fn bad_pod_fields_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: Pod\nmetadata: {name: typo}\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {cpu: 2 cores}}\n  tolerations:\n  - {key: k, operator: Exist}\n",
    )
    .unwrap();
    let (code, _, err) = run(&["whatif", "--snapshot", &demo(), "-f", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.yaml"), "{err}");
    assert!(
        err.contains("spec.containers[0].resources.requests[cpu]"),
        "{err}"
    );
    assert!(err.contains("spec.tolerations[0].operator"), "{err}");
}

#[test]
fn broken_yaml_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("cluster.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  metadata: {name: [oops\n",
    )
    .unwrap();
    let (code, _, err) = run(&[
        "whatif",
        "--snapshot",
        bad.to_str().unwrap(),
        "-f",
        &pod("web.yaml"),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("cluster.yaml:"), "{err}");
}

#[test]
fn objects_missing_fields_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("cluster.json");
    std::fs::write(&bad, r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"spec":{"taints":[{"key":"a","effect":"Sometimes"}]}}]}"#).unwrap();
    let (code, _, err) = run(&[
        "whatif",
        "--snapshot",
        bad.to_str().unwrap(),
        "-f",
        &pod("web.yaml"),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("Node n1: spec.taints[0].effect"), "{err}");
}

#[test]
fn unknown_kinds_warn_once_per_kind() {
    let dir = tempfile::tempdir().unwrap();
    let extra = dir.path().join("cluster.yaml");
    let mut text = std::fs::read_to_string(demo()).unwrap();
    text.push_str("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b}\n");
    std::fs::write(&extra, text).unwrap();
    let (code, _, err) = run(&[
        "whatif",
        "--snapshot",
        extra.to_str().unwrap(),
        "-f",
        &pod("web.yaml"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("Deployment").count(), 1, "{err}");
    assert!(err.contains("skipped 2 Deployment object(s)"), "{err}");
}

#[test]
fn snapshots_from_stdin_gzip_and_directories() {
    let text = std::fs::read(demo()).unwrap();
    let out = sched()
        .args([
            "whatif",
            "--snapshot",
            "-",
            "-f",
            &pod("web.yaml"),
            "-o",
            "json",
        ])
        .write_stdin(text.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let from_stdin: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("demo.yaml.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut enc, &text).unwrap();
    enc.finish().unwrap();
    let (code, out, err) = run(&[
        "whatif",
        "--snapshot",
        dir.path().to_str().unwrap(),
        "-f",
        &pod("web.yaml"),
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let from_dir: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(from_stdin, from_dir);
}

#[test]
fn billion_laughs_is_an_error_not_an_oom() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.yaml");
    let mut text = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let mut prev = 'a';
    for name in ['b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'] {
        text.push_str(&format!("{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
        prev = name;
    }
    std::fs::write(&bomb, text).unwrap();
    let (code, _, err) = run(&[
        "whatif",
        "--snapshot",
        bomb.to_str().unwrap(),
        "-f",
        &pod("web.yaml"),
    ]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn plugin_binaries_stand_for_their_subcommand() {
    let out = Command::cargo_bin("kubectl-sched_whatif")
        .unwrap()
        .env("COLUMNS", "80")
        .args(["--snapshot", &demo(), "-f", &pod("web.yaml"), "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::cargo_bin("kubectl-sched_explain")
        .unwrap()
        .args([
            "--snapshot",
            &demo(),
            "shop/search-indexer-7c9d5",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn help_documents_exit_codes() {
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Exit codes: 0 the pod fits"), "{out}");
}

/// The release modelled: the snapshot's recorded version, the flag over it, the newest modelled
/// (said so) for a dump that records none, and a refusal outside the supported window.
#[test]
fn the_release_modelled_is_named_and_chosen() {
    let json = |args: &[&str]| -> serde_json::Value {
        let (code, out, err) = run(args);
        assert!(matches!(code, 0 | 1), "{err}");
        serde_json::from_str(&out).unwrap()
    };
    let demo_as = |extra: &[&str]| {
        let web = pod("web.yaml");
        let demo = demo();
        let args = [
            &["whatif", "--snapshot", &demo, "-f", &web, "-o", "json"][..],
            extra,
        ]
        .concat();
        json(&args)
    };
    let recorded = demo_as(&[]);
    assert_eq!(recorded["schedulerVersion"], "v1.36.2");
    assert_eq!(recorded["schedulerVersionFrom"], "snapshot");
    let flagged = demo_as(&["--scheduler-version", "v1.34.1"]);
    assert_eq!(flagged["schedulerVersion"], "v1.34.1");
    assert_eq!(flagged["schedulerVersionFrom"], "flag");

    let case = root().join("fixtures/conformance/fit-memory");
    let unversioned = case.join("cluster.yaml");
    let unversioned = unversioned.to_str().unwrap();
    let case_pod = case.join("pod.yaml");
    let case_pod = case_pod.to_str().unwrap();
    let newest = json(&[
        "whatif",
        "--snapshot",
        unversioned,
        "-f",
        case_pod,
        "-o",
        "json",
    ]);
    assert_eq!(newest["schedulerVersion"], "v1.37.0");
    assert_eq!(newest["schedulerVersionFrom"], "newest");
    assert_eq!(newest["schedulerVersionVerified"], false);
    let (_, table, _) = run(&["whatif", "--snapshot", unversioned, "-f", case_pod]);
    assert_eq!(
        table.lines().nth(1),
        Some("kube-scheduler v1.37.0 (unverified; newest modelled, as the input names none)")
    );

    for (version, error) in [
        (
            "1.33",
            "error: kube-scheduler v1.33 is not modelled: kubectl-sched models 1.34 (end of life), 1.35, 1.36 and 1.37 (unverified); pass --scheduler-version to choose one",
        ),
        (
            "latest",
            "error: \"latest\" is not a Kubernetes version (expected e.g. 1.36 or v1.36.2)",
        ),
    ] {
        let (code, out, err) = run(&[
            "whatif",
            "--snapshot",
            &demo(),
            "-f",
            &pod("web.yaml"),
            "--scheduler-version",
            version,
        ]);
        assert_eq!((code, out.as_str(), err.trim()), (2, "", error));
    }
}

/// A device selector that would not compile is bad input naming the file, the object, the field
/// and the expression.
#[test]
fn a_selector_that_does_not_compile_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(
        &cluster,
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec:\n  selectors:\n  - cel: {expression: 'device.drivr == \"gpu.example.com\"'}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {allocatable: {cpu: '1', pods: '10'}}\n",
    )
    .unwrap();
    let (code, _, err) = run(&[
        "whatif",
        "--snapshot",
        cluster.to_str().unwrap(),
        "-f",
        &pod("web.yaml"),
    ]);
    assert_eq!(code, 2, "{err}");
    for part in [
        "cluster.yaml",
        "DeviceClass gpu",
        "spec.selectors[0].cel.expression",
        "undefined field 'drivr'",
        "device.drivr == \\\"gpu.example.com\\\"",
    ] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
}

/// The table says what the chosen node would allocate and, for a node DynamicResources
/// rejected, what each request finds there and which constraint no combination keeps.
#[test]
fn the_table_shows_device_allocation_and_why_devices_do_not_fit() {
    let case = root().join("fixtures/conformance/dra-match-attribute");
    let (code, out, err) = run(&[
        "whatif",
        "--scheduler-version",
        "1.34",
        "--color",
        "never",
        "--snapshot",
        case.join("cluster.yaml").to_str().unwrap(),
        "-f",
        case.join("pod.yaml").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for line in [
        "DynamicResources: on node-1, claim gpu-claim gets gpu → gpu.example.com/node-1/gpu-1, nic → nic.example.com/node-1/nic-0",
        "DynamicResources: node-2: claim gpu-claim request gpu wants 1 of class gpu.example.com: usable gpu.example.com/node-2/gpu-0",
        "every request finds devices, but no combination of them keeps matchAttribute resource.kubernetes.io/pcieRoot",
    ] {
        assert!(out.contains(line), "{line:?} missing from:\n{out}");
    }
}
