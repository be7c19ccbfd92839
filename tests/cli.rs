//! The binary as a user runs it: golden tables (80 columns, wide, colour on and off), structured
//! output, exit codes, and the errors bad input must produce.

mod common;

use assert_cmd::Command;
use common::colours::without_our_colours;
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
        err.contains("pod \"nope\" not found in namespace \"default\""),
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
fn max_counts_what_fits_without_evicting_and_says_what_preemption_would_do_next() {
    let (demo, checkout) = (demo(), pod("checkout-critical.yaml"));
    let max = |release: &str, extra: &[&str]| {
        let args = [
            &[
                "whatif",
                "--snapshot",
                &demo,
                "-f",
                &checkout,
                "--max",
                "--scheduler-version",
                release,
            ][..],
            extra,
        ]
        .concat();
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        out
    };
    // 1.37's message says preemption found a placement; 1.34 to 1.36's say nothing of it. Either
    // way the replica fits nowhere as the cluster stands, and preempting comes next.
    for release in ["1.34", "1.35", "1.36", "1.37"] {
        for colour in ["never", "always"] {
            let out = max(release, &["--color", colour]);
            assert_eq!(
                without_our_colours(&out) != out,
                colour == "always",
                "{out}"
            );
            // The lines below the table wrap at 80 columns: read them whole.
            let plain = without_our_colours(&out).replace("\n  ", " ");
            for line in [
                "At most 0 more replica(s) fit without evicting anything\n",
                "\nReplica 1 fits on no node without evicting pods: 0/6 nodes are available: ",
                "\nNext: DefaultPreemption would evict 1 pod(s) on worker-b1 and nominate that node for replica 1\n",
            ] {
                assert!(plain.contains(line), "{release}: {line:?} not in:\n{plain}");
            }
            assert!(!plain.contains("fits nowhere"), "{release}:\n{plain}");
            let said = if release == "1.37" {
                "3 Insufficient cpu. preemption: found a potential placement for pod on node worker-b1, preempting 1 victims\n"
            } else {
                "3 Insufficient cpu.\n"
            };
            assert!(plain.contains(said), "{release}:\n{plain}");
        }
        // JSON keeps kube-scheduler's message exact and says what preemption would do.
        let v: serde_json::Value = serde_json::from_str(&max(release, &["-o", "json"])).unwrap();
        assert_eq!(v["placed"], 0);
        assert_eq!(
            v["preemption"],
            serde_json::json!({"node": "worker-b1", "victims": 1})
        );
        let tail = if release == "1.37" {
            " preemption: found a potential placement for pod on node worker-b1, preempting 1 victims"
        } else {
            ""
        };
        let stopped = v["stopped"].as_str().unwrap();
        assert!(
            stopped.starts_with("0/6 nodes are available: ")
                && stopped.ends_with(&format!("3 Insufficient cpu.{tail}")),
            "{release}: {stopped}"
        );
    }
    insta::assert_snapshot!("whatif_max_preemption_next_1_37", max("1.37", &[]));
    // A pod that may not preempt: no room is made, and it fits nowhere.
    let never = pod("batch-never.yaml");
    let (code, out, err) = run(&[
        "whatif",
        "--snapshot",
        &demo,
        "-f",
        &never,
        "--max",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["preemption"], serde_json::Value::Null);
    let (_, out, _) = run(&["whatif", "--snapshot", &demo, "-f", &never, "--max"]);
    assert!(
        out.contains("\nReplica 1 fits nowhere: 0/6 nodes are available:"),
        "{out}"
    );
    assert!(!out.contains("Next:"), "{out}");
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
    text.push_str("---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: a}\n---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: b}\n");
    std::fs::write(&extra, text).unwrap();
    let (code, _, err) = run(&[
        "whatif",
        "--snapshot",
        extra.to_str().unwrap(),
        "-f",
        &pod("web.yaml"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("HorizontalPodAutoscaler").count(), 1, "{err}");
    assert!(
        err.contains("skipped 2 HorizontalPodAutoscaler object(s)"),
        "{err}"
    );
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

/// `kubectl-sched ARGS` with `stdin` and, if given, `TMPDIR`: exit code, stdout, stderr.
fn run_on(args: &[&str], stdin: &[u8], tmpdir: Option<&std::path::Path>) -> (i32, String, String) {
    let mut c = sched();
    if let Some(dir) = tmpdir {
        c.env("TMPDIR", dir);
    }
    let out = c.args(args).write_stdin(stdin).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn gzipped(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, bytes).unwrap();
    enc.finish().unwrap()
}

/// Stdin (streamed from the temporary file it is spooled to, or read whole where no temporary
/// file can be had) answers as the same text in a file, gzip-compressed or not; its errors are
/// the same, naming `<stdin>`.
#[test]
fn stdin_answers_and_fails_as_a_file() {
    fn whatif<'a>(snapshot: &'a str, pod: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        [
            &["whatif", "--snapshot", snapshot, "-f", pod, "-o", "json"],
            extra,
        ]
        .concat()
    }
    let dir = tempfile::tempdir().unwrap();
    let gz = root().join("fixtures/clusters/generated-150.json.gz");
    let mut json = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap()),
        &mut json,
    )
    .unwrap();
    let file = dir.path().join("cluster.json");
    std::fs::write(&file, &json).unwrap();
    let file = file.to_str().unwrap();
    let no_tmp = dir.path().join("no-such-dir");
    let gateway = pod("gen-gateway.yaml");
    let expected = run(&whatif(file, &gateway, &[]));
    assert_eq!(expected.0, 0, "{}", expected.2);
    for stdin in [json.clone(), gzipped(&json)] {
        for tmpdir in [None, Some(no_tmp.as_path())] {
            assert_eq!(
                run_on(&whatif("-", &gateway, &[]), &stdin, tmpdir),
                expected
            );
        }
    }
    // Errors: past the limit, before and after decompression; gzip cut short; a syntax error,
    // at its line and column.
    let limit = (json.len() - 1).to_string();
    let half_limit = (json.len() / 2).to_string();
    let expands = format!("expands past {half_limit} when decompressed");
    let mut broken = json.clone();
    let half = broken.len() / 2;
    let colon = broken[half..].windows(2).position(|w| w == b"\":").unwrap();
    broken[half + colon + 1] = b'#';
    let gz = gzipped(&json);
    let cases: [(Vec<u8>, &[&str], &str); 4] = [
        (
            json.clone(),
            &["--max-input-size", &limit],
            "holds more than",
        ),
        (gzipped(&json), &["--max-input-size", &half_limit], &expands),
        (
            gz[..gz.len() / 2].to_vec(),
            &[],
            "cannot decompress gzip data",
        ),
        (broken, &[], ""),
    ];
    for (stdin, extra, says) in cases {
        let (code, out, err) = run_on(&whatif("-", &gateway, extra), &stdin, None);
        assert_eq!((code, out.as_str()), (2, ""), "{err}");
        assert!(err.contains("<stdin>:"), "{err}");
        assert!(err.contains(says), "{err}");
        assert_eq!(
            run_on(&whatif("-", &gateway, extra), &stdin, Some(&no_tmp)),
            (code, out, err.clone())
        );
        let named = dir.path().join("named.json");
        std::fs::write(&named, &stdin).unwrap();
        let (_, _, from_file) = run(&whatif(named.to_str().unwrap(), &gateway, extra));
        assert_eq!(from_file.replace(named.to_str().unwrap(), "<stdin>"), err);
    }
}

/// A directory's files, streamed one after the other into one cluster, answer as the same
/// objects in one file; a directory with a file that cannot be streamed (a List nested in a
/// List) is read whole, with the same answer; objects of one name in two files are refused
/// either way, with the same error.
#[test]
fn directories_answer_as_one_file() {
    let gz = root().join("fixtures/clusters/generated-150.json.gz");
    let list: serde_json::Value = serde_json::from_reader(flate2::read::GzDecoder::new(
        std::fs::File::open(&gz).unwrap(),
    ))
    .unwrap();
    let items = list["items"].as_array().unwrap();
    let third = items.len() / 3;
    let as_list = |items: &[serde_json::Value]| {
        serde_json::to_vec(&serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}))
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let split = dir.path().join("split");
    std::fs::create_dir(&split).unwrap();
    std::fs::write(split.join("a.json"), as_list(&items[..third])).unwrap();
    std::fs::write(
        split.join("b.json.gz"),
        gzipped(&as_list(&items[third..2 * third])),
    )
    .unwrap();
    let documents: String = items[2 * third..]
        .iter()
        .map(|o| format!("---\n{}", serde_saphyr::to_string(o).unwrap()))
        .collect();
    std::fs::write(split.join("c.yaml"), documents).unwrap();
    let one = dir.path().join("one.json");
    std::fs::write(&one, as_list(items)).unwrap();
    let gateway = pod("gen-gateway.yaml");
    let whatif = |snapshot: &std::path::Path| {
        run(&[
            "whatif",
            "--snapshot",
            snapshot.to_str().unwrap(),
            "-f",
            &gateway,
            "-o",
            "json",
        ])
    };
    let expected = whatif(&one);
    assert_eq!(expected.0, 0, "{}", expected.2);
    assert_eq!(whatif(&split), expected);
    // Nothing more, in a layout only the general path reads.
    let nested = split.join("d.json");
    std::fs::write(&nested, r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"List","items":[]}]}"#).unwrap();
    assert_eq!(whatif(&split), expected);
    std::fs::remove_file(&nested).unwrap();
    // The first node again, in a file of its own.
    std::fs::write(split.join("e.json"), as_list(&items[..1])).unwrap();
    let streamed = whatif(&split);
    assert_eq!(streamed.0, 2, "{}", streamed.2);
    assert!(
        streamed
            .2
            .contains(&format!("{}: invalid objects:", split.display())),
        "{}",
        streamed.2
    );
    std::fs::write(&nested, r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"List","items":[]}]}"#).unwrap();
    assert_eq!(whatif(&split), streamed);
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
    assert!(out.contains("Exit codes:\n  0  the pod fits"), "{out}");
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

/// A patch release decides as itself: v1.36.2's allocator keeps the shared counters of a tainted
/// partition it gave up, v1.36.3's gives them back; a bare 1.36 is v1.36.2, and its table says
/// why the node fails there and where it would not.
#[test]
fn a_patch_release_decides_as_itself() {
    let case = root().join("fixtures/conformance/dra-partition-taint-reject-releases-counters");
    let (cluster, pod) = (case.join("cluster.yaml"), case.join("pod.yaml"));
    for (version, code, lines) in [
        (
            "1.36",
            1,
            [
                "kube-scheduler v1.36.2 (--scheduler-version)",
                "    the allocator of v1.36.2 keeps the shared counters and constraint entries of devices it tried and gave up; from v1.36.3 on it gives them back and allocates here",
            ],
        ),
        (
            "v1.36.3",
            0,
            [
                "kube-scheduler v1.36.3 (--scheduler-version)",
                "DynamicResources: on node-1, claim gpu-claim gets gpu → gpu.example.com/node-1/gpu-0-part-b",
            ],
        ),
    ] {
        let (got, out, err) = run(&[
            "whatif",
            "--scheduler-version",
            version,
            "--color",
            "never",
            "--snapshot",
            cluster.to_str().unwrap(),
            "-f",
            pod.to_str().unwrap(),
        ]);
        assert_eq!(got, code, "{version}: {err}");
        for line in lines {
            assert!(
                out.lines().any(|l| l == line),
                "{version}: {line:?} missing from:\n{out}"
            );
        }
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

fn workloads() -> String {
    root()
        .join("fixtures/clusters/workloads.yaml")
        .display()
        .to_string()
}

/// `explain TYPE/NAME`: a workload's pending pods, found through owner references and grouped by
/// cause; kubectl's types and short names; where a name not found here is.
#[test]
fn explain_takes_kubectl_resource_arguments() {
    let w = workloads();
    let json = |args: &[&str]| -> (i32, serde_json::Value) {
        let mut all = vec!["explain", "--snapshot", &w, "-o", "json"];
        all.extend(args);
        let (code, out, err) = run(&all);
        assert!(matches!(code, 0 | 1), "{args:?}: {err}");
        (code, serde_json::from_str(&out).unwrap())
    };
    // Deployment → ReplicaSets → pods: one old pod too big, two new ones wanting a GPU node.
    let (code, v) = json(&["deploy/web", "-n", "shop"]);
    assert_eq!(code, 1);
    assert_eq!(
        v["workload"],
        serde_json::json!({"kind": "Deployment", "namespace": "shop", "name": "web"})
    );
    assert_eq!(
        (v["pods"].as_u64(), v["pending"].as_u64()),
        (Some(5), Some(3))
    );
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(
        groups[0]["pods"],
        serde_json::json!(["shop/web-7b9c2-a1b2c", "shop/web-7b9c2-d3e4f"])
    );
    assert_eq!(
        groups[0]["owners"],
        serde_json::json!(["ReplicaSet web-7b9c2"])
    );
    assert_eq!(groups[0]["fits"], false);
    assert_eq!(groups[0]["explanation"]["pod"], "shop/web-7b9c2-a1b2c");
    assert!(
        groups[1]["explanation"]["message"]
            .as_str()
            .unwrap()
            .contains("2 Insufficient cpu"),
        "{v}"
    );
    for (arg, ns, kind) in [
        ("deployments.apps/web", "shop", "Deployment"),
        ("sts/db", "shop", "StatefulSet"),
        ("rs/web-6d4f8", "shop", "ReplicaSet"),
        ("cj/nightly", "batch", "CronJob"),
        ("job/nightly-29260800", "batch", "Job"),
    ] {
        let (_, v) = json(&[arg, "-n", ns]);
        assert_eq!(v["workload"]["kind"], kind, "{arg}");
        assert!(v["pending"].as_u64().unwrap() >= 1, "{arg}: {v}");
    }
    // The CronJob's pod tolerates the tainted pool and fits there: exit 0.
    assert_eq!(json(&["cj/nightly", "-n", "batch"]).0, 0);
    // Every pod running: said, exit 0.
    let (code, out, _) = run(&["explain", "--snapshot", &w, "deploy/api", "-n", "shop"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("Deployment shop/api: no pending pod (1 pod(s), all on nodes)"),
        "{out}"
    );
    let (code, v) = json(&["deploy/api", "-n", "shop"]);
    assert_eq!((code, v["pending"].as_u64()), (0, Some(0)));
    assert_eq!(v["groups"], serde_json::json!([]));
    // Errors: an unknown type lists the types; "not found" says where it is.
    let (code, _, err) = run(&["explain", "--snapshot", &w, "svc/web"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("pod (po), deployment (deploy), replicaset (rs), statefulset (sts), daemonset (ds), replicationcontroller (rc), job, cronjob (cj)"),
        "{err}"
    );
    for (args, said) in [
        (
            &["deploy/web"][..],
            "deployment \"web\" not found in namespace \"default\"; found in namespace shop: add -n shop",
        ),
        (
            &["web-6d4f8-r5t9z"][..],
            "pod \"web-6d4f8-r5t9z\" not found in namespace \"default\"; found in namespace shop: add -n shop",
        ),
        (
            &["batch/db-0"][..],
            "pod \"db-0\" not found in namespace \"batch\"; found in namespace shop: use shop/db-0",
        ),
        (&["deplyo/web"][..], "did you mean deploy/web?"),
        (
            &["ds/agent", "-n", "shop"][..],
            "daemonset \"agent\" not found in namespace \"shop\" (the snapshot holds no daemonsets",
        ),
    ] {
        explain_refuses(&w, args, said);
    }
}

/// `explain --snapshot CLUSTER ARGS` exits 2 saying `said`.
fn explain_refuses(cluster: &str, args: &[&str], said: &str) {
    let mut all = vec!["explain", "--snapshot", cluster];
    all.extend(args);
    let (code, _, err) = run(&all);
    assert_eq!(code, 2, "{args:?}");
    assert!(err.contains(said), "{args:?}: {err}");
}

/// What a person reads for a workload: its line, then each group with its explanation.
#[test]
fn a_workloads_pending_pods_at_80_and_200_columns() {
    for columns in ["80", "200"] {
        for colour in [false, true] {
            let mut c = sched();
            c.env("COLUMNS", columns);
            if colour {
                c.arg("--color=always");
            }
            let out = c
                .args([
                    "explain",
                    "--snapshot",
                    &workloads(),
                    "deploy/web",
                    "-n",
                    "shop",
                ])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1));
            let out = String::from_utf8(out.stdout).unwrap();
            let name = format!(
                "explain_deploy_web_{columns}{}",
                if colour { "_colour" } else { "" }
            );
            insta::assert_snapshot!(name, out);
        }
    }
}

/// `-l`/`--field-selector` pick the pending pods to explain, with kubectl's syntax; a bad one is
/// kubectl's error, exit 2.
#[test]
fn explain_selects_pending_pods_with_kubectl_selectors() {
    let w = workloads();
    let pods = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["explain", "--snapshot", &w, "-o", "json"];
        all.extend(args);
        let (code, out, err) = run(&all);
        assert!(matches!(code, 0 | 1), "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["pods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["pod"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        pods(&["-l", "app=web"]),
        [
            "shop/web-6d4f8-r5t9z",
            "shop/web-7b9c2-a1b2c",
            "shop/web-7b9c2-d3e4f"
        ]
    );
    assert_eq!(
        pods(&["-l", "app==web,pod-template-hash!=7b9c2"]),
        ["shop/web-6d4f8-r5t9z"]
    );
    assert_eq!(
        pods(&["--selector", "app in (db, debug)"]),
        ["default/debug", "shop/db-0"]
    );
    assert_eq!(
        pods(&["-l", "app notin (web,db),!job-name"]),
        ["default/debug"]
    );
    assert_eq!(pods(&["-l", "job-name"]), ["batch/nightly-29260800-x7k2p"]);
    assert_eq!(
        pods(&[
            "--field-selector",
            "metadata.namespace=shop,metadata.name!=db-0"
        ]),
        [
            "shop/web-6d4f8-r5t9z",
            "shop/web-7b9c2-a1b2c",
            "shop/web-7b9c2-d3e4f"
        ]
    );
    assert_eq!(
        pods(&["--field-selector", "status.phase=Running"]),
        Vec::<String>::new()
    );
    assert_eq!(
        pods(&["-l", "app=web", "-n", "default"]),
        Vec::<String>::new()
    );
    for (args, said) in [
        (
            &["-l", "app in web"][..],
            "-l \"app in web\": unable to parse requirement: found 'web' expected: '('",
        ),
        (
            &["-l", "app=web,"][..],
            "found '', expected: identifier after ','",
        ),
        (
            &["--field-selector", "spec.nodename="][..],
            "field label not supported: spec.nodename",
        ),
        (
            &["--field-selector", "spec.restartPolicy=Never"][..],
            "spec.restartPolicy is selected by the API server only",
        ),
        (
            &["-l", "app=web", "web-1"][..],
            "name cannot be provided when a selector is specified",
        ),
    ] {
        explain_refuses(&w, args, said);
    }
}

/// The plugin binaries' help: the usage as typed, examples, exit codes; kubectl flags the
/// command does not take say which command does, not clap's `-- -l` tip.
#[test]
fn help_and_errors_speak_as_kubectl_users_type() {
    let plugin = |bin: &str, args: &[&str]| {
        let out = Command::cargo_bin(bin)
            .unwrap()
            .env("COLUMNS", "80")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    for (bin, typed) in [
        ("kubectl-sched_whatif", "kubectl sched-whatif"),
        ("kubectl-sched_explain", "kubectl sched-explain"),
        ("kubectl-sched_lease", "kubectl sched-lease"),
    ] {
        let (code, out, _) = plugin(bin, &["--help"]);
        assert_eq!(code, 0);
        assert!(out.contains(&format!("Usage: {typed} ")), "{out}");
        assert!(!out.contains("kubectl-sched_"), "{out}");
        assert!(out.contains("Examples:\n  # "), "{out}");
        assert!(out.contains(&format!("\n  {typed} ")), "{out}");
        assert!(out.contains("Exit codes:\n  0  "), "{out}");
    }
    let (_, out, _) = run(&["whatif", "--help"]);
    assert!(
        out.contains("Usage: kubectl-sched whatif -f FILE [flags]"),
        "{out}"
    );
    let (_, out, _) = plugin("kubectl-sched_lease", &["--help"]);
    assert!(
        out.contains("Only this namespace's leases (default: every namespace)"),
        "{out}"
    );
    let (_, out, _) = plugin("kubectl-sched_explain", &["--help"]);
    assert!(
        out.contains("Namespace (default: the context's namespace"),
        "{out}"
    );

    for (bin, args, tip) in [
        (
            "kubectl-sched_explain",
            &["-w"][..],
            "-w/--watch is not supported by sched-explain; sched-lease takes --watch",
        ),
        (
            "kubectl-sched_whatif",
            &["-l", "app=web"][..],
            "--drain, --cordon, --uncordon and --taint take -l SELECTOR",
        ),
        (
            "kubectl-sched_lease",
            &["--field-selector", "x=y"][..],
            "sched-explain --field-selector explains the pending pods it selects",
        ),
        (
            "kubectl-sched_whatif",
            &["--token", "abc"][..],
            "it connects as kubectl does, with --kubeconfig, --context",
        ),
    ] {
        let (code, _, err) = plugin(bin, args);
        assert_eq!(code, 2, "{args:?}");
        assert!(
            err.contains("  tip: ") && err.contains(tip),
            "{args:?}: {err}"
        );
        assert!(!err.contains("as a value, use"), "{err}");
    }
    // A typo still gets clap's suggestion, and never the `--` tip.
    let (code, _, err) = run(&["explain", "--snapshto", "x"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("a similar argument exists: '--snapshot'"),
        "{err}"
    );
    let (_, _, err) = run(&["explain", "--bogus"]);
    assert!(!err.contains("as a value, use"), "{err}");
    // `--drain -l` without its selector is named as written.
    let (code, _, err) = run(&["whatif", "--drain", "-l"]);
    assert_eq!(code, 2);
    assert!(err.contains("'--drain -l <SELECTOR>'"), "{err}");
}

/// Every example of every command's help that runs on a fixture works as printed.
#[test]
fn the_help_examples_run() {
    let mut ran = 0;
    for (bin, command) in [
        ("kubectl-sched_whatif", "kubectl sched-whatif "),
        ("kubectl-sched_explain", "kubectl sched-explain "),
        ("kubectl-sched_lease", "kubectl sched-lease "),
    ] {
        let help = Command::cargo_bin(bin)
            .unwrap()
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8(help.stdout).unwrap();
        for line in help.lines().filter(|l| l.contains("fixtures/")) {
            let args = line
                .trim()
                .strip_prefix(command)
                .unwrap_or_else(|| panic!("{line}"));
            let out = Command::cargo_bin(bin)
                .unwrap()
                .current_dir(root())
                .args(args.split_whitespace())
                .output()
                .unwrap();
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{line}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        }
    }
    assert!(ran >= 12, "{ran} examples ran");
}

/// A pod read back from a cluster (`kubectl get pod -o yaml`) is placed as a new pod, replacing
/// the cluster's pod of that name instead of being counted twice.
#[test]
fn an_exported_pod_is_placed_as_new_and_replaces_itself() {
    let dir = tempfile::tempdir().unwrap();
    let exported = dir.path().join("web.yaml");
    std::fs::write(
        &exported,
        "apiVersion: v1
kind: Pod
metadata:
  name: web-6d4f8-k2x8p
  namespace: shop
  uid: uid-web-6d4f8-k2x8p
  resourceVersion: '48211'
  creationTimestamp: '2026-11-23T09:00:00Z'
  managedFields:
  - manager: kube-controller-manager
    operation: Update
    apiVersion: v1
  labels: {app: web, pod-template-hash: 6d4f8}
  ownerReferences:
  - {apiVersion: apps/v1, kind: ReplicaSet, name: web-6d4f8, uid: uid-web-6d4f8, controller: true}
spec:
  nodeName: blue-1
  containers:
  - name: main
    image: ghcr.io/example/web:1
    resources: {requests: {cpu: '3', memory: 1Gi}}
status:
  phase: Running
  hostIP: 10.0.0.1
",
    )
    .unwrap();
    let whatif = |file: &std::path::Path| {
        let (code, out, err) = run(&[
            "whatif",
            "--snapshot",
            &workloads(),
            "-f",
            file.to_str().unwrap(),
            "-o",
            "json",
        ]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        (code, v, err)
    };
    let (code, v, err) = whatif(&exported);
    // Taken off blue-1, it fits there again (3 of 4 cpus): not pinned, not counted twice.
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["selected"], serde_json::json!(["blue-1"]));
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [format!(
            "warning: {}: Pod shop/web-6d4f8-k2x8p is placed as a new pod, without its spec.nodeName, status, metadata.uid, metadata.resourceVersion, metadata.creationTimestamp, metadata.managedFields; it replaces the cluster's pod of that name, taken off blue-1 first",
            exported.display()
        )]
    );
    // In a plan too (several documents): one pod of that name, not two.
    let two = dir.path().join("two.yaml");
    let text = std::fs::read_to_string(&exported).unwrap();
    std::fs::write(
        &two,
        format!(
            "{text}---\n{}",
            text.replace("web-6d4f8-k2x8p", "web-6d4f8-extra")
        ),
    )
    .unwrap();
    let (code, v, err) = whatif(&two);
    assert_eq!(code, 1, "{err}");
    // (A plan names a controller's pods afresh, `-1`.) The first goes back to blue-1, which
    // has room for it only without the pod it replaces.
    let placed: Vec<(&str, &str, &str)> = v["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["pod"].as_str().unwrap(),
                p["outcome"].as_str().unwrap(),
                p["node"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        placed,
        [
            ("shop/web-6d4f8-k2x8p-1", "Scheduled", "blue-1"),
            ("shop/web-6d4f8-extra-1", "Pending", "")
        ]
    );
}

/// Objects of API versions Kubernetes no longer serves, whose fields map one to one, are read
/// as the current version with one warning per kind and version; policy/v1beta1's empty PDB
/// selector keeps selecting nothing.
#[test]
fn removed_api_versions_are_read_as_the_current_one() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("old.yaml");
    let mut text = std::fs::read_to_string(demo()).unwrap();
    text = text.replace(
        "- apiVersion: policy/v1\n  kind: PodDisruptionBudget",
        "- apiVersion: policy/v1beta1\n  kind: PodDisruptionBudget",
    );
    text = text.replace(
        "- apiVersion: scheduling.k8s.io/v1\n  kind: PriorityClass",
        "- apiVersion: scheduling.k8s.io/v1beta1\n  kind: PriorityClass",
    );
    text.push_str(
        "- apiVersion: policy/v1beta1
  kind: PodDisruptionBudget
  metadata: {name: nothing-in-v1beta1, namespace: batch}
  spec: {selector: {}, maxUnavailable: 0}
- apiVersion: storage.k8s.io/v1beta1
  kind: CSIStorageCapacity
  metadata: {name: cap, namespace: kube-system}
  storageClassName: fast
  capacity: 10Gi
",
    );
    std::fs::write(&cluster, &text).unwrap();
    let args = [
        "whatif",
        "--snapshot",
        cluster.to_str().unwrap(),
        "-f",
        &pod("checkout-critical.yaml"),
        "-o",
        "json",
    ];
    let (code, out, err) = run(&args);
    assert_eq!(code, 1, "{err}");
    let warnings: Vec<&str> = err.lines().collect();
    assert_eq!(
        warnings,
        [
            "warning: read 1 CSIStorageCapacity object(s) of storage.k8s.io/v1beta1, which Kubernetes 1.27 stopped serving, as storage.k8s.io/v1: the fields mean the same",
            "warning: read 2 PodDisruptionBudget object(s) of policy/v1beta1, which Kubernetes 1.25 stopped serving, as policy/v1: the fields mean the same (an empty selector keeps its policy/v1beta1 meaning: it selects no pod)",
            "warning: read 3 PriorityClass object(s) of scheduling.k8s.io/v1beta1, which Kubernetes 1.22 stopped serving, as scheduling.k8s.io/v1: the fields mean the same",
        ]
    );
    // The same answer as from the current versions: the priorities and the PDBs read.
    let (_, expected, _) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("checkout-critical.yaml"),
        "-o",
        "json",
    ]);
    let (v, e): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&out).unwrap(),
        serde_json::from_str(&expected).unwrap(),
    );
    assert_eq!(v["preemption"], e["preemption"]);
    assert_eq!(v["priority"], e["priority"]);
    // As JSON, through the fast path, the same.
    let json_cluster = dir.path().join("old.json");
    let values: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    std::fs::write(&json_cluster, serde_json::to_string(&values).unwrap()).unwrap();
    let (code, _, json_err) = run(&[
        "whatif",
        "--snapshot",
        json_cluster.to_str().unwrap(),
        "-f",
        &pod("checkout-critical.yaml"),
    ]);
    assert_eq!(code, 1);
    assert_eq!(json_err, err);
    // A version whose fields do not map one to one is still an error naming apiVersion.
    let older = dir.path().join("older.yaml");
    std::fs::write(
        &older,
        "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: d}\n",
    )
    .unwrap();
    let (code, _, err) = run(&["explain", "-A", "--snapshot", older.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unsupported value \"extensions/v1beta1\" for kind Deployment"),
        "{err}"
    );
}

/// "What would make it fit": on by default for a pod that fits nowhere or only by preemption,
/// `--suggest N` bounds it, `--no-suggest` drops it; JSON carries the same suggestions.
#[test]
fn what_would_make_it_fit_at_80_columns_with_and_without_colour() {
    let checkout = pod("checkout-critical.yaml");
    let base = ["whatif", "--snapshot", &demo(), "-f", &checkout];
    for colour in ["never", "always"] {
        let mut args = base.to_vec();
        args.extend(["--suggest", "2", "--color", colour]);
        let (code, out, err) = run(&args);
        assert_eq!(code, 1, "{err}");
        let section = &out[out.find("What would make it fit").expect("the section")..];
        assert!(
            without_our_colours(section)
                .lines()
                .all(|l| l.chars().count() <= 80),
            "a line is wider than 80 columns:\n{section}"
        );
        insta::assert_snapshot!(format!("whatif_suggestions_80_{colour}"), section);
    }
    let mut args = base.to_vec();
    args.push("--no-suggest");
    let (_, out, _) = run(&args);
    assert!(!out.contains("What would make it fit"), "{out}");
    let mut args = base.to_vec();
    args.extend(["--suggest", "1", "-o", "json"]);
    let (_, out, _) = run(&args);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let suggestions = v["suggestions"].as_array().unwrap();
    assert_eq!(suggestions.len(), 1);
    for key in [
        "kind",
        "description",
        "edits",
        "podPatch",
        "fitsOn",
        "evicts",
        "alsoPlaces",
    ] {
        assert!(suggestions[0].get(key).is_some(), "no {key}: {out}");
    }
    assert!(v["suggestionsTried"].as_u64().unwrap() >= 1);
    // A pod that fits has no section.
    let (code, out, _) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("web.yaml"),
        "-o",
        "json",
    ]);
    assert_eq!(code, 0);
    assert!(!out.contains("\"suggestions\""));
}

/// A pod edit is an RFC 6902 patch, and the cluster changes of `explain --all-pending` are
/// ranked by the pending pods they place.
#[test]
fn explain_suggests_pod_edits_and_all_pending_ranks_cluster_changes() {
    let (code, out, _) = run(&[
        "explain",
        "--snapshot",
        &demo(),
        "-n",
        "shop",
        "pod/search-indexer-7c9d5",
        "--suggest",
        "10",
        "-o",
        "json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let patched = v["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "pod")
        .expect("a pod edit");
    assert!(patched["podPatch"][0]["op"].is_string(), "{patched}");
    for colour in ["never", "always"] {
        let (code, out, _) = run(&[
            "explain",
            "--snapshot",
            &demo(),
            "--all-pending",
            "--color",
            colour,
        ]);
        assert_eq!(code, 1);
        let section = &out[out.find("What would place them").expect("the section")..];
        insta::assert_snapshot!(
            format!("explain_all_pending_suggestions_80_{colour}"),
            section
        );
    }
}

/// Pending replicas that need more than one new node are offered as many as they need: the
/// demo cluster with seven more replicas of a pod that fits no node's free room. Each new node
/// takes one of them or the demo's pending search-indexer, so eight are needed: with seven, one
/// replica is placed only by preempting, which does not count as placed.
#[test]
fn all_pending_suggests_as_many_new_nodes_as_the_replicas_need() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("replicas.yaml");
    let mut text = std::fs::read_to_string(demo()).unwrap();
    for i in 0..7 {
        text.push_str(&format!(
            "\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: checkout-{i}\n  namespace: shop\n  uid: uid-checkout-{i}\nspec:\n  containers:\n  - name: checkout\n    image: ghcr.io/example/checkout:1.8\n    resources: {{requests: {{cpu: 6500m, memory: 4Gi}}}}\n"
        ));
    }
    std::fs::write(&cluster, text).unwrap();
    let cluster = cluster.to_str().unwrap();
    let all_pending = |extra: &[&str]| {
        let mut args = vec!["explain", "--snapshot", cluster, "--all-pending"];
        args.extend(extra);
        run(&args)
    };
    let (code, json, err) = all_pending(&["-o", "json"]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let first = &v["suggestions"][0];
    assert_eq!(
        first["edits"],
        serde_json::json!(["--clone-node", "worker-b1=8"]),
        "{first}"
    );
    assert_eq!(first["places"].as_array().unwrap().len(), 8, "{first}");
    for count in ["7", "8"] {
        let (_, out, _) = all_pending(&["--clone-node", &format!("worker-b1={count}")]);
        let preempting = out.contains("preempting");
        assert_eq!(preempting, count == "7", "{out}");
    }
    for colour in ["never", "always"] {
        let (code, out, _) = all_pending(&["--color", colour]);
        assert_eq!(code, 1);
        let section = &out[out.find("What would place them").expect("the section")..];
        insta::assert_snapshot!(format!("all_pending_new_nodes_80_{colour}"), section);
    }
}

/// The verdict-first table, on the demo cluster and on one examples/gen-cluster wrote
/// (`--nodes 150 --pods-per-node 8 --seed 1`), at 80 and 200 columns, with colour and with
/// NO_COLOR: the same text either way, no line wider than the terminal, a screen at most.
#[test]
fn grouped_table_goldens() {
    let generated = root()
        .join("fixtures/clusters/generated-150.json.gz")
        .display()
        .to_string();
    let cases = [
        ("demo_checkout", demo(), "checkout-critical.yaml"),
        ("generated_too_big", generated.clone(), "gen-too-big.yaml"),
        ("generated_no_room", generated.clone(), "gen-no-room.yaml"),
        ("generated_gateway", generated, "gen-gateway.yaml"),
    ];
    for (name, cluster, file) in cases {
        let args = ["whatif", "--snapshot", &cluster, "-f", &pod(file)];
        for columns in ["80", "200"] {
            let out = |colour: bool| {
                let mut c = sched();
                c.env("COLUMNS", columns).args(args);
                if colour {
                    c.args(["--color", "always"]);
                } else {
                    c.env("NO_COLOR", "1");
                }
                String::from_utf8(c.output().unwrap().stdout).unwrap()
            };
            let (coloured, plain) = (out(true), out(false));
            assert!(coloured.contains("\u{1b}["), "--color always must colour");
            assert!(!plain.contains('\u{1b}'), "NO_COLOR must turn colours off");
            assert_eq!(without_our_colours(&coloured), plain);
            let width: usize = columns.parse().unwrap();
            assert!(
                plain.lines().all(|l| l.chars().count() <= width),
                "a line is wider than {width} columns:\n{plain}"
            );
            // The explanation; the suggestions after it are a bounded section of their own.
            let explanation = plain.split("What would make it fit").next().unwrap();
            assert!(
                explanation.lines().count() <= 40,
                "longer than a screen:\n{plain}"
            );
            insta::assert_snapshot!(format!("grouped_{name}_{columns}"), plain);
            insta::assert_snapshot!(format!("grouped_{name}_{columns}_colour"), coloured);
        }
    }
}

/// `--node NAME`: one node in full, a rejected one with every failing plugin's facts and a
/// feasible one with every score's inputs; an unknown name is bad input.
#[test]
fn one_node_in_full() {
    let generated = root()
        .join("fixtures/clusters/generated-150.json.gz")
        .display()
        .to_string();
    let rejected = "ip-10-0-0-100.eu-west-1.compute.internal";
    let (code, out, err) = run(&[
        "whatif",
        "--snapshot",
        &generated,
        "-f",
        &pod("gen-gateway.yaml"),
        "--node",
        rejected,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("held by search-0/"), "{out}");
    insta::assert_snapshot!("node_in_full_rejected", out);
    let (code, out, err) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("ssd-only.yaml"),
        "--node",
        "worker-b1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("NodeResourcesFit 34 (raw 34)"), "{out}");
    insta::assert_snapshot!("node_in_full_feasible", out);
    let (code, _, err) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("ssd-only.yaml"),
        "--node",
        "nowhere",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--node nowhere: the cluster has no such node"),
        "{err}"
    );
}

/// `--nodes all` lists every node with the facts behind its first failing plugin.
#[test]
fn every_node_with_its_facts() {
    let (code, out, err) = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod("ssd-only.yaml"),
        "--nodes",
        "all",
    ]);
    assert_eq!(code, 0, "{err}");
    for node in [
        "worker-b1",
        "worker-a1",
        "cp-1",
        "gpu-b1",
        "worker-a2",
        "worker-b2",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!(" {node} "))),
            "{out}"
        );
    }
    assert!(out.contains("nodeSelector disktype=ssd:"), "{out}");
}

/// `explain --all-pending`: a row per group of pods held back alike, naming their owners and
/// pods; the JSON has the groups too.
#[test]
fn pending_pods_grouped_by_cause_with_their_owners() {
    let workloads = root()
        .join("fixtures/clusters/workloads.yaml")
        .display()
        .to_string();
    let (code, out, err) = run(&["explain", "--all-pending", "--snapshot", &workloads]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("ReplicaSet web-7b9c2"), "{out}");
    insta::assert_snapshot!("all_pending_grouped_80", out);
    let (_, json, _) = run(&[
        "explain",
        "--all-pending",
        "--snapshot",
        &workloads,
        "-o",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let groups = json["groups"].as_array().unwrap();
    let pods: usize = groups
        .iter()
        .map(|g| g["pods"].as_array().unwrap().len())
        .sum();
    assert_eq!(pods, json["pods"].as_array().unwrap().len());
    let web = groups
        .iter()
        .find(|g| g["owners"] == serde_json::json!(["ReplicaSet web-7b9c2"]))
        .expect("the web-7b9c2 pods are in one group");
    // With a pod of no controller held back alike.
    assert_eq!(
        web["pods"],
        serde_json::json!([
            "default/debug",
            "shop/web-7b9c2-a1b2c",
            "shop/web-7b9c2-d3e4f"
        ])
    );
}

/// `explain` of the demo's pending pod, which fits nowhere (preemption would make room).
fn explain_stuck_pod(demo: &str) -> [&str; 6] {
    [
        "explain",
        "-n",
        "shop",
        "search-indexer-7c9d5",
        "--snapshot",
        demo,
    ]
}

/// `--no-headers`, as on kubectl get: every table loses its column-header line and nothing else
/// (verdicts, notes and the rows' layout stay).
#[test]
fn no_headers_drops_the_column_header_lines_and_nothing_else() {
    let leases = root()
        .join("fixtures/clusters/leases.yaml")
        .display()
        .to_string();
    let (demo, web) = (demo(), pod("web.yaml"));
    let views: [(&[&str], &[&str]); 9] = [
        (
            &["lease", "--snapshot", &leases],
            &[" NAMESPACE      NAME                      HOLDER    STATUS    RENEWED  TAKEOVER"],
        ),
        (
            &["explain", "-A", "--snapshot", &demo],
            &[" PODS  FITS  REASON                    OWNERS / PODS              KUBE-SCHEDULER"],
        ),
        (
            &["explain", "-A", "--snapshot", &demo, "-o", "wide"],
            &[
                " POD                        OWNER  FITS  MESSAGE                         KUBE-SCHEDULER",
            ],
        ),
        (
            &["whatif", "-f", &web, "--snapshot", &demo],
            &[
                " FEASIBLE NODE  SCORE",
                " NODES  REJECTED BY: REASON, WITH THE FACTS",
            ],
        ),
        (
            &["whatif", "-f", &web, "--snapshot", &demo, "--nodes", "all"],
            &[" NODE       FITS    FIRST FAILING PLUGIN: REASONS                          SCORE"],
        ),
        (
            &["whatif", "-f", &web, "--snapshot", &demo, "-o", "wide"],
            &[
                " NODE       FITS    FIRST FAILING PLUGIN: REASONS  DR  IL  NRBA  NRF  PTS   TT  SCORE",
            ],
        ),
        (
            &explain_stuck_pod(&demo),
            &[
                " NODES  REJECTED BY: REASON, WITH THE FACTS",
                "   VICTIM                   PRIORITY  VIOLATES PDB",
            ],
        ),
        (
            &["whatif", "-f", &web, "--snapshot", &demo, "--replicas", "3"],
            &[" REPLICA      NODE       SCORE  TIED WITH"],
        ),
        (
            &["whatif", "--drain", "worker-a1", "--snapshot", &demo],
            &[" NODE        PODS  IN  OUT  CPU  MEM"],
        ),
    ];
    for (args, headers) in views {
        let (code, headed, _) = run(args);
        let (headless_code, headless, err) = run(&[args, &["--no-headers"]].concat());
        assert_eq!(headless_code, code, "{args:?}: {err}");
        for h in headers {
            assert!(headed.lines().any(|l| l == *h), "{args:?}: {h:?}\n{headed}");
        }
        let rest: Vec<&str> = headed.lines().filter(|l| !headers.contains(l)).collect();
        assert_eq!(headless.lines().collect::<Vec<_>>(), rest, "{args:?}");
    }
}

/// `-o name`, as kubectl get prints it: `TYPE/NAME` per object, the exit code as for the table;
/// plans and comparisons name no object and refuse it.
#[test]
fn output_name_prints_type_slash_name_per_object() {
    let leases = root()
        .join("fixtures/clusters/leases.yaml")
        .display()
        .to_string();
    let (demo, web, w) = (demo(), pod("web.yaml"), workloads());
    let cases: [(&[&str], i32, &str); 9] = [
        (
            &["lease", "--snapshot", &leases],
            0,
            "lease.coordination.k8s.io/cert-manager-controller\nlease.coordination.k8s.io/ingress-nginx-leader\nlease.coordination.k8s.io/cloud-controller-manager\nlease.coordination.k8s.io/kube-controller-manager\nlease.coordination.k8s.io/kube-scheduler\n",
        ),
        (
            &["lease", "kube-scheduler", "--snapshot", &leases],
            0,
            "lease.coordination.k8s.io/kube-scheduler\n",
        ),
        // Every namespace's pending pods, without their namespace (as kubectl get -A -o name).
        (
            &["explain", "-A", "--snapshot", &w],
            1,
            "pod/debug\npod/web-7b9c2-a1b2c\npod/web-7b9c2-d3e4f\npod/nightly-29260800-x7k2p\npod/db-0\npod/web-6d4f8-r5t9z\n",
        ),
        (
            &["explain", "deploy/web", "-n", "shop", "--snapshot", &w],
            1,
            "pod/web-7b9c2-a1b2c\npod/web-7b9c2-d3e4f\npod/web-6d4f8-r5t9z\n",
        ),
        (
            &["whatif", "-f", &web, "--snapshot", &demo],
            0,
            "node/worker-a1\n",
        ),
        (
            &[
                "explain",
                "-n",
                "shop",
                "pod/web-5d8c7b9f4-k2x8p",
                "--snapshot",
                &demo,
            ],
            0,
            "node/worker-a1\n",
        ),
        // Fits nowhere (preemption would make room, but nothing is bound): no name, exit 1.
        (&explain_stuck_pod(&demo), 1, ""),
        (
            &[
                "whatif",
                "-f",
                &pod("gen-too-big.yaml"),
                "--snapshot",
                &demo,
            ],
            1,
            "",
        ),
        (
            &["whatif", "-f", &web, "--snapshot", &demo, "--replicas", "4"],
            0,
            "node/worker-a1\nnode/worker-b1\nnode/worker-a1\nnode/worker-a2\n",
        ),
    ];
    for (args, code, expected) in cases {
        let (got, out, err) = run(&[args, &["-o", "name"]].concat());
        assert_eq!((got, out.as_str()), (code, expected), "{args:?}: {err}");
    }
    for (args, view) in [
        (&["whatif", "--drain", "worker-a1"][..], "a plan"),
        (
            &["whatif", "-f", &web, "--compare-to", "1.35"][..],
            "--compare-to",
        ),
        (&["lease", "--nodes"][..], "--nodes"),
    ] {
        let snapshot = if args[0] == "lease" { &leases } else { &demo };
        let (code, out, err) = run(&[args, &["--snapshot", snapshot, "-o", "name"]].concat());
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}");
        assert!(
            err.contains(view) && err.contains("-o table, -o wide, -o json or -o yaml"),
            "{args:?}: {err}"
        );
    }
}
