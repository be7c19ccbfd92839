//! Hostile and half-valid input, one test per class (issues 17 and 18): the binary answers with
//! exit 2 naming the file, object and field, warns and says what it did, or gives the answer a
//! cluster would; it never crashes, hangs, floods memory or silently answers something else.

mod common;

use common::colours::without_our_colours;
use common::{demo, root, sched};
use std::io::Write;

/// A file of a robustness case.
fn case(name: &str, file: &str) -> String {
    root()
        .join("fixtures/robustness")
        .join(name)
        .join(file)
        .display()
        .to_string()
}

struct Run {
    code: i32,
    out: String,
    err: String,
}

fn run(args: &[&str]) -> Run {
    run_with(args, b"")
}

fn run_with(args: &[&str], stdin: &[u8]) -> Run {
    let out = sched().args(args).write_stdin(stdin).output().unwrap();
    Run {
        code: out.status.code().expect("ended by a signal"),
        out: String::from_utf8(out.stdout).unwrap(),
        err: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Exit 2 with one error line that says all of `expected`.
fn refused(r: &Run, expected: &[&str]) {
    assert_eq!(r.code, 2, "stdout:\n{}\nstderr:\n{}", r.out, r.err);
    for e in expected {
        assert!(r.err.contains(e), "{e:?} not in:\n{}", r.err);
    }
}

/// `text` written to the file `name` in `dir`: its path.
fn written(dir: &tempfile::TempDir, name: &str, text: impl AsRef<[u8]>) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn whatif(cluster: &str, pod: &str) -> Run {
    whatif_with(cluster, pod, &[])
}

fn whatif_with(cluster: &str, pod: &str, flags: &[&str]) -> Run {
    run(&[&["whatif", "--snapshot", cluster, "-f", pod], flags].concat())
}

#[test]
fn gzip_bombs_stop_at_the_input_limit() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.yaml.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&bomb).unwrap(),
        flate2::Compression::best(),
    );
    let zeros = vec![b' '; 1 << 20];
    for _ in 0..8 {
        gz.write_all(&zeros).unwrap();
    }
    gz.finish().unwrap();
    let bomb = bomb.to_str().unwrap();
    let r = run(&[
        "whatif",
        "--snapshot",
        bomb,
        "-f",
        &case("max-runaway", "pod.yaml"),
        "--max-input-size",
        "2Mi",
    ]);
    refused(
        &r,
        &[
            bomb,
            "expands past 2Mi when decompressed",
            "--max-input-size",
        ],
    );
    // The same bound for a plain file and for -f.
    let r = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &case("max-runaway", "pod.yaml"),
        "--max-input-size",
        "1Ki",
    ]);
    refused(&r, &["holds more than 1Ki"]);
    refused(
        &whatif_with(&demo(), "x", &["--max-input-size", "lots"]),
        &["lots"],
    );
}

/// `kubectl-sched args…` under `ulimit -v kb` (no limit for `None`), reading the file `stdin`
/// if given; `None` when this system's shell cannot set a limit.
fn run_limited(kb: Option<&str>, args: &[&str], stdin: Option<&str>) -> Option<Run> {
    let limit = kb.map_or(String::new(), |kb| format!("ulimit -v {kb} || exit 99; "));
    let mut command = std::process::Command::new("sh");
    if let Some(file) = stdin {
        command.stdin(std::fs::File::open(file).unwrap());
    }
    let out = command
        .arg("-c")
        .arg(format!("{limit}exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_kubectl-sched"))
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .ok()?;
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("{args:?} under {kb:?}: {:?}", out.status));
    (code != 99).then(|| Run {
        code,
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

#[test]
fn what_will_be_refused_costs_little_memory_even_under_a_limit() {
    let dir = tempfile::tempdir().unwrap();
    // A 1 MB file that expands to 1.1 GiB: the same member of 1 MiB of spaces, 1,100 times.
    let bomb = dir.path().join("bomb.yaml.gz");
    let mut member = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    member.write_all(&vec![b' '; 1 << 20]).unwrap();
    let member = member.finish().unwrap();
    let mut head = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    head.write_all(b"apiVersion: v1\nkind: List\nitems:\n")
        .unwrap();
    let mut bytes = head.finish().unwrap();
    for _ in 0..1100 {
        bytes.extend_from_slice(&member);
    }
    std::fs::write(&bomb, bytes).unwrap();
    // 30 MB that are no cluster: millions of numbers in a list, in JSON and in YAML.
    let numbers = written(
        &dir,
        "numbers.json",
        format!("[{}1]", "1,".repeat(15_000_000)),
    );
    let items = written(
        &dir,
        "items.yaml",
        format!(
            "apiVersion: v1\nkind: List\nitems:\n{}",
            "- 1\n".repeat(7_500_000)
        ),
    );
    let pod = case("max-runaway", "pod.yaml");
    let not_an_object = "expected a Kubernetes object or a List, found a number";
    let expands =
        "expands past 1Gi when decompressed, the limit for one input (--max-input-size raises it)";
    // 2,000,000 KB is a common container limit; 600,000 KB is less than the reading of any of
    // these once needed.
    let all: &[Option<&str>] = &[None, Some("2000000"), Some("600000")];
    let cases = [
        (bomb.to_str().unwrap(), expands, all),
        (numbers.as_str(), not_an_object, &[None, Some("600000")]),
        (items.as_str(), not_an_object, &[None, Some("600000")]),
    ];
    for (file, message, limits) in cases {
        for &kb in limits {
            let Some(r) = run_limited(kb, &["whatif", "--snapshot", file, "-f", &pod], None) else {
                eprintln!("skipped: `ulimit -v` is not available here");
                return;
            };
            refused(&r, &[file, message]);
        }
    }
    // From stdin, spooled to a temporary file as it came: the same bound, the same refusal.
    let from_stdin = ["whatif", "--snapshot", "-", "-f", &pod];
    let r = run_limited(Some("600000"), &from_stdin, bomb.to_str()).unwrap();
    refused(&r, &[&format!("<stdin>: {expands}")]);
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let arrays = written(
        &dir,
        "nested.json",
        format!("{}{}", "[".repeat(40_000), "]".repeat(40_000)),
    );
    let d = 5_000;
    let lists = written(
        &dir,
        "lists.json",
        format!(
            "{}{}",
            r#"{"apiVersion":"v1","kind":"List","items":["#.repeat(d),
            "]}".repeat(d)
        ),
    );
    let pod = case("max-runaway", "pod.yaml");
    for f in [&arrays, &lists] {
        refused(&whatif(f, &pod), &[f, "recursion limit exceeded"]);
        refused(
            &run(&["whatif", "--snapshot", &demo(), "-f", f]),
            &[f, "recursion limit exceeded"],
        );
    }
}

#[test]
fn max_stops_at_the_limit_and_says_why() {
    let (cluster, pod) = (
        case("max-runaway", "cluster.yaml"),
        case("max-runaway", "pod.yaml"),
    );
    let max = [
        "whatif",
        "--snapshot",
        &cluster,
        "-f",
        &pod,
        "--max",
        "--limit",
        "500",
    ];
    let mut r = run(&max);
    assert_eq!(r.code, 0, "{}", r.err);
    // Lines below the table wrap at 80 columns: read them whole.
    r.out = r.out.replace("\n  ", " ");
    assert!(
        r.out
            .contains("At least 500 more replica(s) fit without evicting anything: big 500"),
        "{}",
        r.out
    );
    assert!(
        r.out.contains(
            "Stopped after 500 replicas, the --limit, while more still fit (the last went to big)"
        ),
        "{}",
        r.out
    );
    assert!(
        r.out
            .contains("Note: SCORE -: not scored, only one node was feasible"),
        "{}",
        r.out
    );
    let r = run(&[&max[..], &["-o", "json"]].concat());
    let json: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(
        (json["placed"].as_u64(), json["limit"].as_u64()),
        (Some(500), Some(500))
    );
    refused(
        &whatif_with(&cluster, &pod, &["--replicas", "1000000"]),
        &["1000000 replicas is more than --limit 100000"],
    );
}

#[test]
fn ties_keep_a_count_not_the_whole_pool() {
    // Twenty identical nodes: every placement ties with all the others that have room.
    let nodes: Vec<serde_json::Value> = (0..20)
        .map(|i| serde_json::json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": format!("n{i:02}")},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "3"}}}))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let cluster = written(
        &dir,
        "pool.json",
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": nodes}).to_string(),
    );
    let (cluster, pod) = (cluster.as_str(), case("max-runaway", "pod.yaml"));
    let r = whatif_with(cluster, &pod, &["--max", "-o", "json"]);
    let json: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(json["placed"], 60);
    let first = &json["placements"][0];
    assert_eq!(first["tiedCount"], 20);
    assert_eq!(first["tied"], serde_json::json!(["n00", "n01", "n02"]));
    let r = whatif_with(cluster, &pod, &["--replicas", "2"]);
    assert!(
        r.out
            .contains(" be-1     n00     397  n01, n02 and 17 more\n"),
        "{}",
        r.out
    );
}

#[test]
fn a_list_whose_items_is_not_a_list_is_refused() {
    let pod = case("list-items-not-a-list", "pod.yaml");
    for (file, found) in [
        ("items-map.yaml", "an object"),
        ("items-null.yaml", "null"),
        ("no-items.yaml", "nothing"),
        ("items-map.json", "an object"),
        ("items-null.json", "null"),
    ] {
        let f = case("list-items-not-a-list", file);
        refused(
            &whatif(&f, &pod),
            &[&f, &format!("List: items: expected a list, found {found}")],
        );
    }
}

#[test]
fn a_kind_that_is_not_a_string_is_said_so() {
    let f = case("msg-kind-not-a-string", "cluster.yaml");
    refused(
        &whatif(&f, &case("msg-kind-not-a-string", "pod.yaml")),
        &[&f, "object worker-1: kind: expected a string, found a list"],
    );
}

#[test]
fn a_quoted_continuation_line_does_not_retype_an_object() {
    let pod = case("yaml-quoted-continuation-hides-object", "pod.yaml");
    for file in ["cluster.yaml", "document.yaml"] {
        let r = whatif_with(
            &case("yaml-quoted-continuation-hides-object", file),
            &pod,
            &["--scheduler-version", "1.37"],
        );
        assert_eq!(r.code, 0, "{file}: {}{}", r.out, r.err);
        assert!(
            r.out.contains("on 1 node(s)") && r.err.is_empty(),
            "{file}: {}{}",
            r.out,
            r.err
        );
    }
}

#[test]
fn scalars_are_typed_the_same_whatever_the_layout() {
    let pod = case("yaml-scalar-typing-depends-on-layout", "pod.yaml");
    let errors: Vec<String> = ["fast.yaml", "quoted-kind.yaml"]
        .iter()
        .map(|f| {
            let r = whatif(&case("yaml-scalar-typing-depends-on-layout", f), &pod);
            assert_eq!(r.code, 2, "{f}: {}", r.out);
            r.err.replace(f, "FILE")
        })
        .collect();
    assert_eq!(errors[0].rsplit('/').next(), errors[1].rsplit('/').next());
    assert!(errors[0].contains("expected a string"), "{}", errors[0]);
}

#[test]
fn empty_inputs_are_not_empty_clusters() {
    let pod = case("empty-snapshot-is-empty-cluster", "pod.yaml");
    for f in ["empty.yaml", "comment-only.yaml", "empty.yaml.gz"] {
        let f = case("empty-snapshot-is-empty-cluster", f);
        refused(&whatif(&f, &pod), &[&f, "holds no object"]);
    }
    refused(&whatif("/dev/null", &pod), &["/dev/null: holds no object"]);
    let empty = case("empty-snapshot-is-empty-cluster", "empty.yaml");
    refused(
        &run(&["explain", "-A", "--snapshot", &empty]),
        &["holds no object"],
    );
    refused(&run(&["lease", "--snapshot", &empty]), &["holds no object"]);
    refused(
        &run_with(&["whatif", "--snapshot", "-", "-f", &pod], b""),
        &["<stdin>: holds no object"],
    );
    refused(
        &run_with(
            &["whatif", "--snapshot", &demo(), "-f", "-"],
            b"# nothing\n",
        ),
        &["<stdin>: holds no object"],
    );
    // An empty cluster written as one is read, with a warning that no pod can be placed.
    let dir = tempfile::tempdir().unwrap();
    let list = written(&dir, "none.yaml", "apiVersion: v1\nkind: List\nitems: []\n");
    let r = whatif(&list, &pod);
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(r.err.contains("holds no Node"), "{}", r.err);
}

#[test]
fn stdin_cannot_serve_both_the_cluster_and_the_pod() {
    let pod = std::fs::read(case("empty-snapshot-is-empty-cluster", "pod.yaml")).unwrap();
    refused(
        &run_with(&["whatif", "--snapshot", "-", "-f", "-"], &pod),
        &["--snapshot - and -f - cannot both read stdin"],
    );
}

#[cfg(unix)]
#[test]
fn a_snapshot_directory_entry_that_cannot_be_read_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(demo(), dir.path().join("pods.yaml")).unwrap();
    let link = dir.path().join("nodes.yaml");
    std::os::unix::fs::symlink("../nodes-moved-away.yaml", &link).unwrap();
    let pod = case("max-runaway", "pod.yaml");
    let r = whatif(dir.path().to_str().unwrap(), &pod);
    refused(&r, &[link.to_str().unwrap(), "No such file or directory"]);
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink("nodes.yaml", &link).unwrap();
    refused(&whatif(dir.path().to_str().unwrap(), &pod), &["nodes.yaml"]);
    std::fs::remove_file(&link).unwrap();
    std::fs::create_dir(&link).unwrap();
    refused(
        &whatif(dir.path().to_str().unwrap(), &pod),
        &["nodes.yaml: not a regular file"],
    );
}

#[test]
fn duplicates_are_refused_as_for_nodes() {
    let c = |f| case("duplicate-pod-double-counted", f);
    refused(
        &whatif(&c("cluster.yaml"), &c("pod.yaml")),
        &["Pod default/big: metadata.name: appears more than once"],
    );
    refused(
        &run(&["explain", "default/big", "--snapshot", &c("cluster.yaml")]),
        &["Pod default/big: metadata.name: appears more than once"],
    );
    refused(
        &whatif(&c("dup-priorityclass.yaml"), &c("high-pod.yaml")),
        &["PriorityClass high: metadata.name: appears more than once"],
    );
}

#[test]
fn a_kind_of_another_api_group_is_skipped_with_a_warning() {
    let pod = case("foreign-group-kind-rejects-dump", "pod.yaml");
    for (file, kind) in [
        ("with-knative-service.yaml", "Service.serving.knative.dev"),
        ("with-events-k8s-io-event.yaml", "Event.events.k8s.io"),
    ] {
        let r = whatif(&case("foreign-group-kind-rejects-dump", file), &pod);
        assert_eq!(r.code, 0, "{}", r.err);
        assert!(
            r.err
                .contains(&format!("warning: skipped 1 {kind} object(s)")),
            "{}",
            r.err
        );
    }
}

#[test]
fn a_wrong_api_version_names_the_field() {
    let c = |f| case("msg-apiversion-field-dot", f);
    refused(
        &whatif(&c("cluster.yaml"), &c("pod.yaml")),
        &["Node worker-1: apiVersion: unsupported value \"apps/v1\" for kind Node (expected v1)"],
    );
    refused(
        &whatif(&demo(), &c("pod-v2.yaml")),
        &["Pod default/web: apiVersion: unsupported value \"v2\" for kind Pod (expected v1)"],
    );
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        (
            "empty.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: '', kind: Node, metadata: {name: a}}\n",
        ),
        (
            "empty.json",
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"","kind":"Node","metadata":{"name":"a"}}]}"#,
        ),
    ] {
        refused(
            &whatif(&written(&dir, name, text), &c("pod.yaml")),
            &["Node a: apiVersion: unsupported value \"\" for kind Node (expected v1)"],
        );
    }
}

#[test]
fn io_errors_are_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.yaml");
    let missing = missing.to_str().unwrap();
    let r = whatif(&demo(), missing);
    assert_eq!(
        r.err,
        format!("error: {missing}: No such file or directory (os error 2)\n")
    );
    let d = dir.path().to_str().unwrap();
    let r = whatif(&demo(), d);
    assert_eq!(r.err, format!("error: {d}: Is a directory (os error 21)\n"));
    let pod = case("max-runaway", "pod.yaml");
    let r = run(&[
        "whatif",
        "--snapshot",
        &demo(),
        "-f",
        &pod,
        "--config",
        missing,
    ]);
    assert_eq!(r.err.matches("No such file").count(), 1, "{}", r.err);
    refused(
        &run(&["whatif", "--snapshot", &demo(), "-f", &pod, "--config", "-"]),
        &["--config - is not supported"],
    );
}

#[test]
fn unknown_fields_in_the_manifest_are_refused_with_the_closest_name() {
    let r = whatif(
        &case("pod-field-typo-ignored", "cluster.yaml"),
        &case("pod-field-typo-ignored", "pod.yaml"),
    );
    refused(
        &r,
        &[
            r#"Pod default/typo: strict decoding error: unknown field "spec.containers[0].resources.request" (did you mean "requests"?)"#,
        ],
    );
    refused(
        &whatif(
            &demo(),
            &case(
                "workload-selector-mismatch-accepted",
                "replicaset-unknown-field.yaml",
            ),
        ),
        &[
            r#"ReplicaSet shop/web: strict decoding error: unknown field "spec.replica" (did you mean "replicas"?)"#,
        ],
    );
}

#[test]
fn unknown_fields_in_a_dump_are_warned_about_once_per_field() {
    let dir = tempfile::tempdir().unwrap();
    let node = |name: &str| {
        format!(
            "- apiVersion: v1\n  kind: Node\n  metadata: {{name: {name}}}\n  spec: {{unschedulabel: true}}\n  status: {{allocatable: {{cpu: '4', pods: '10'}}}}\n"
        )
    };
    let cluster = written(
        &dir,
        "c.yaml",
        format!(
            "apiVersion: v1\nkind: List\nitems:\n{}{}",
            node("a"),
            node("b")
        ),
    );
    let r = whatif_with(
        &cluster,
        &case("max-runaway", "pod.yaml"),
        &["--scheduler-version", "1.37"],
    );
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(
        r.err,
        "warning: Node a and 1 other Node object(s): unknown field \"spec.unschedulabel\", ignored (a typo in an edited dump, or a field newer than this tool)\n"
    );
}

#[test]
fn the_manifest_is_validated_as_the_api_server_validates_it() {
    let c = |f| case("pod-validation-gaps", f);
    for (file, said) in [
        (
            "overhead-without-runtimeclass.yaml",
            "is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
        ),
        (
            "claim-not-declared.yaml",
            "spec.containers[0].resources.claims[0]: Not found: \"gpu\": must be one of the names in pod.spec.resourceClaims",
        ),
        (
            "hostnetwork-port-mismatch.yaml",
            "spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true",
        ),
        (
            "bad-nodename.yaml",
            "spec.nodeName: Invalid value: \"Worker_A1\": a lowercase RFC 1123 subdomain",
        ),
        (
            "bad-names.yaml",
            "metadata.namespace: Invalid value: \"Shop_NS\": a lowercase RFC 1123 label",
        ),
        (
            "missing-runtimeclass.yaml",
            "is forbidden: pod rejected: RuntimeClass \"gvisor\" not found",
        ),
        (
            "pod-level-below-containers.yaml",
            "spec.resources.requests[cpu]: Invalid value: \"100m\": must be greater than or equal to aggregate container requests of 6",
        ),
        (
            "nodename-with-gates.yaml",
            "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
        ),
    ] {
        let f = c(file);
        refused(&whatif(&demo(), &f), &[&f, said]);
    }
    refused(
        &whatif(&demo(), &c("bad-names.yaml")),
        &["metadata.name: Invalid value: \"Web_Pod\""],
    );
}

#[test]
fn what_the_api_server_accepts_is_accepted() {
    for file in [
        "tsc-topologykey.yaml",
        "gt-non-integer.yaml",
        "quantity-spaces.yaml",
    ] {
        let r = whatif(&demo(), &case("pod-validation-stricter-than-api", file));
        assert!(r.code == 0 || r.code == 1, "{file}: {}", r.err);
        assert!(r.out.starts_with("Pod "), "{file}: {}", r.out);
    }
    // A Gt on a value that is no integer is stored, and matches no node.
    let r = whatif(
        &demo(),
        &case("pod-validation-stricter-than-api", "gt-non-integer.yaml"),
    );
    assert!(
        r.out.contains("didn't match Pod's node affinity/selector"),
        "{}",
        r.out
    );
}

#[test]
fn a_priority_that_contradicts_its_class_is_refused() {
    let f = case("pod-spec-priority-trusted", "pod.yaml");
    refused(
        &whatif(&demo(), &f),
        &[
            "Pod shop/checkout is forbidden: the integer value of priority (100000) must not be provided in pod spec; priority admission controller computed 10 from the given PriorityClass name",
        ],
    );
    let without: String = std::fs::read_to_string(&f)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("  priority:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let r = run_with(
        &["whatif", "--snapshot", &demo(), "-f", "-"],
        without.as_bytes(),
    );
    assert!(
        r.out.contains("(priority 10,") && r.out.contains("the pod may not preempt"),
        "{}",
        r.out
    );
}

#[test]
fn workloads_are_validated_and_errors_name_the_workload_and_the_path() {
    let c = |f| case("msg-workload-error-loses-name-and-path", f);
    refused(
        &whatif(&demo(), &c("deployment.yaml")),
        &[
            "Deployment default/web: spec.template.spec.containers[0].resources: invalid type: sequence",
        ],
    );
    refused(
        &whatif(&demo(), &c("deployment-bad-label.yaml")),
        &[
            "Deployment default/web is invalid:\n  spec.template.metadata.labels: invalid label value: \"front end\"",
        ],
    );
    refused(
        &whatif(
            &demo(),
            &case("workload-selector-mismatch-accepted", "deployment.yaml"),
        ),
        &[
            "Deployment shop/web is invalid:",
            "spec.template.metadata.labels: Invalid value: {\"app\":\"frontend\"}: `selector` does not match template `labels`",
        ],
    );
    // A template's restart policy, as each workload's validation allows it.
    let job =
        std::fs::read_to_string(case("job-parallelism-over-completions", "job.yaml")).unwrap();
    let stateful = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db, namespace: default}\nspec:\n  selector: {matchLabels: {app: db}}\n  template:\n    metadata: {labels: {app: db}}\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: x}]\n";
    // A CronJob's template is its Job's; a DaemonSet's update strategy is one of two.
    let cron = "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly, namespace: batch}\nspec:\n  schedule: '0 2 * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Always\n          containers: [{name: c, image: x}]\n";
    let daemon = "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent, namespace: kube-system}\nspec:\n  selector: {matchLabels: {app: agent}}\n  updateStrategy: {type: Sideways}\n  template:\n    metadata: {labels: {app: agent}}\n    spec:\n      containers: [{name: c, image: x}]\n";
    for (manifest, expected) in [
        (
            stateful.to_string(),
            "StatefulSet default/db is invalid:\n  spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
        ),
        (
            job.replace("      restartPolicy: Never\n", ""),
            "Job default/reindex is invalid:\n  spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
        ),
        (
            job.replace("restartPolicy: Never", "restartPolicy: Always"),
            "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"",
        ),
        (
            cron.to_string(),
            "CronJob batch/nightly is invalid:\n  spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\"",
        ),
        (
            daemon.to_string(),
            "DaemonSet kube-system/agent is invalid:\n  spec.updateStrategy.type: Unsupported value: \"Sideways\": supported values: \"OnDelete\", \"RollingUpdate\"",
        ),
    ] {
        refused(
            &run_with(
                &["whatif", "--snapshot", &demo(), "-f", "-"],
                manifest.as_bytes(),
            ),
            &[expected],
        );
    }
}

#[test]
fn a_job_runs_no_more_pods_than_completions_at_once() {
    let c = |f| case("job-parallelism-over-completions", f);
    let r = whatif_with(&demo(), &c("job.yaml"), &["-o", "json"]);
    let json: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(
        (json["requested"].as_u64(), json["placed"].as_u64()),
        (Some(2), Some(2))
    );
    refused(
        &whatif(&demo(), &c("job-int32-overflow.yaml")),
        &["Job default/reindex: spec.parallelism: invalid value: integer `2147483648`"],
    );
    refused(
        &whatif(&demo(), &c("job-negative.yaml")),
        &["spec.parallelism: Invalid value: -5: must be greater than or equal to 0"],
    );
}

#[test]
fn dump_objects_the_api_server_would_refuse_are_warned_about() {
    let c = |f| case("dump-invalid-selector-ignored", f);
    let r = whatif(&c("cluster.yaml"), &c("pod.yaml"));
    assert!(
        r.err.contains("warning: Pod default/guard: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions[0].operator: Invalid value: \"in\": not a valid selector operator (the API server refuses this; read the way kube-scheduler reads it)"),
        "{}",
        r.err
    );
    let c = |f| case("pvc-bad-quantity-ignored", f);
    let r = whatif(&c("cluster-ok.yaml"), &c("pod.yaml"));
    assert_eq!(r.code, 0, "{}", r.err);
    refused(
        &whatif(&c("cluster.yaml"), &c("pod.yaml")),
        &[
            "PersistentVolumeClaim default/cache: spec.resources.requests.storage: invalid quantity \"10 Gi\"",
        ],
    );
}

#[test]
fn control_characters_from_the_cluster_never_reach_the_terminal() {
    let c = |f| case("terminal-escape-injection", f);
    for (args, shown) in [
        (vec!["lease", "--snapshot", &c("leases.yaml")], true),
        (
            vec!["lease", "--snapshot", &c("leases.yaml"), "-o", "wide"],
            true,
        ),
        (
            vec![
                "lease",
                "kube-system/kube-scheduler",
                "--snapshot",
                &c("leases.yaml"),
            ],
            true,
        ),
        (
            vec!["explain", "default/web", "--snapshot", &c("events.yaml")],
            true,
        ),
        (
            vec![
                "explain",
                "-A",
                "--snapshot",
                &c("events.yaml"),
                "-o",
                "wide",
            ],
            false,
        ),
    ] {
        for color in ["never", "always"] {
            let mut args = args.clone();
            args.extend(["--color", color]);
            let r = run(&args);
            if shown {
                assert!(r.out.contains("\\x1b]0;PWNED\\x07"), "{args:?}: {}", r.out);
            }
            // Colour codes are ours only: no other escape or bell reaches the terminal.
            let ours = without_our_colours(&r.out);
            assert!(
                !ours.chars().any(|ch| ch.is_control() && ch != '\n'),
                "{args:?}: {ours:?}"
            );
            assert!(
                !r.err.chars().any(|ch| ch.is_control() && ch != '\n'),
                "{}",
                r.err
            );
        }
    }
    // JSON stays exact.
    let r = run(&["lease", "--snapshot", &c("leases.yaml"), "-o", "json"]);
    assert!(r.out.contains(r"\u001b]0;PWNED\u0007"), "{}", r.out);
}

/// Characters a cluster string may hold that must never reach a terminal as they are: the tool's
/// own style markers (tag characters), bidirectional and zero-width controls, a line separator.
const HIDDEN: &[char] = &[
    '\u{E0001}',
    '\u{E0062}',
    '\u{E0064}',
    '\u{E0067}',
    '\u{E0072}',
    '\u{E007F}',
    '\u{202E}',
    '\u{2066}',
    '\u{2069}',
    '\u{200B}',
    '\u{FEFF}',
    '\u{2028}',
];

/// Text as a terminal gets it holds no hidden character, and no escape sequence but our colours.
fn shown_safely(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|c| HIDDEN.contains(c)) {
        panic!("{what}: a raw {c:?} in:\n{text}");
    }
    assert!(
        !without_our_colours(text)
            .chars()
            .any(|c| c.is_control() && c != '\n'),
        "{what}: an escape sequence not ours in:\n{text:?}"
    );
}

#[test]
fn cluster_strings_cannot_forge_styles_or_reorder_text() {
    let c = |f| case("terminal-style-forgery", f);
    let cluster = c("cluster.yaml");
    let leases = c("leases.yaml");
    let pod = case("max-runaway", "pod.yaml");
    let web = "default/web\u{E0001}\u{E0064}\u{200B}dim";
    // Each command, and what it must show escaped.
    let commands: [(Vec<&str>, &str); 8] = [
        (
            vec!["lease", "--snapshot", &leases, "-o", "wide"],
            "evil\\u{e0001}\\u{e0062}-holder",
        ),
        (
            vec![
                "lease",
                "kube-system/kube-scheduler",
                "--snapshot",
                &cluster,
            ],
            "evil\\u{e0001}\\u{e0062}-holder\\u{2066}_x",
        ),
        (vec!["lease", "--snapshot", &cluster], "evil\\u{e0001}"),
        (
            vec![
                "whatif",
                "--snapshot",
                &cluster,
                "-f",
                &pod,
                "--nodes",
                "all",
            ],
            "n1\\u{e0001}\\u{e0062}-evil\\u{202e}oi\\u{2066}\\u{200b}\\u{feff}\\u{2028}",
        ),
        (
            vec!["whatif", "--snapshot", &cluster, "-f", &pod, "-o", "wide"],
            "n1\\u{e0001}\\u{e0062}-evil",
        ),
        (
            vec!["explain", web, "--snapshot", &cluster],
            "\\u{e0001}\\u{e0067}fake\\u{e007f}\\u{e0067} \\u{202e}elbaliava\\u{2069} \\x1b[5m",
        ),
        (
            vec!["explain", "-A", "--snapshot", &cluster, "-o", "wide"],
            "default/web\\u{e0001}\\u{e0064}\\u{200b}dim",
        ),
        (
            vec!["explain", "-A", "--snapshot", &cluster],
            "web\\u{e0001}\\u{e0064}",
        ),
    ];
    for (args, escaped) in commands {
        for colour in [&["--color", "always"][..], &["--color", "never"], &[]] {
            let args = [&args[..], colour].concat();
            let mut cmd = sched();
            if colour.is_empty() {
                cmd.env("NO_COLOR", "1");
            }
            let out = cmd.args(&args).output().unwrap();
            let (stdout, stderr) = (
                String::from_utf8(out.stdout).unwrap(),
                String::from_utf8(out.stderr).unwrap(),
            );
            assert!(
                out.status.code().is_some_and(|c| c < 2),
                "{args:?}: {stderr}"
            );
            assert!(
                stdout.contains(escaped),
                "{args:?}: {escaped} not in:\n{stdout}"
            );
            shown_safely(&format!("{args:?} stdout"), &stdout);
            shown_safely(&format!("{args:?} stderr"), &stderr);
            assert_eq!(
                stdout.contains('\x1b'),
                colour.contains(&"always"),
                "{args:?}: colour as asked:\n{stdout}"
            );
        }
    }
    // -o name prints names and nothing else: escaped, never styled.
    let r = run(&["explain", "-A", "--snapshot", &cluster, "-o", "name"]);
    assert_eq!(r.out, "pod/web\\u{e0001}\\u{e0064}\\u{200b}dim\n");
    shown_safely("explain -A -o name", &r.out);
    // JSON and YAML stay exact.
    let r = run(&["lease", "--snapshot", &leases, "-o", "json"]);
    assert!(r.out.contains("evil\u{E0001}\u{E0062}-holder"), "{}", r.out);
    let r = run(&["whatif", "--snapshot", &cluster, "-f", &pod, "-o", "yaml"]);
    assert!(r.out.contains("\u{202E}oi\u{2066}"), "{}", r.out);
}

#[test]
fn narrow_terminals_get_a_useful_minimum() {
    let pod = root().join("fixtures/pods/checkout-critical.yaml");
    let pod = pod.to_str().unwrap();
    let mut heights = Vec::new();
    for columns in ["0", "-3", "1", "20", "80"] {
        // The table's height; "What would make it fit" adds its own lines below it.
        let out = sched()
            .env("COLUMNS", columns)
            .args(["whatif", "--snapshot", &demo(), "-f", pod, "--no-suggest"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let out = String::from_utf8(out.stdout).unwrap();
        assert!(out.contains(" NODES  REJECTED BY"), "{columns}:\n{out}");
        assert!(
            out.lines().all(|l| !l.ends_with(' ')),
            "{columns}: trailing spaces"
        );
        heights.push(out.lines().count());
    }
    // COLUMNS=0 (or negative) is unset: 80.
    assert_eq!(heights[0], heights[4]);
    assert_eq!(heights[1], heights[4]);
    assert!(heights[2] < 40 && heights[3] < 40, "{heights:?}");
}

#[test]
fn absurd_quantities_are_scored_as_upstream_not_a_panic() {
    // Found by tests/fuzz.rs: a node with 10^20 CPUs overflowed the score arithmetic (upstream's
    // int64 arithmetic wraps there).
    let dir = tempfile::tempdir().unwrap();
    let cluster = written(
        &dir,
        "huge.yaml",
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: huge}\n  status: {allocatable: {cpu: 99999999999999999999, memory: 8Gi, pods: '10'}}\n- apiVersion: v1\n  kind: Node\n  metadata: {name: small}\n  status: {allocatable: {cpu: '4', memory: 8Gi, pods: '10'}}\n",
    );
    let pod = case("max-runaway", "pod.yaml");
    let configs = [
        "",
        "config-requestedtocapacityratio",
        "config-leastallocated-extended-weights",
    ];
    for config in configs {
        let mut args = vec!["whatif", "--snapshot", &cluster, "-f", &pod];
        let path = root()
            .join("fixtures/conformance")
            .join(config)
            .join("config.yaml");
        let path = path.display().to_string();
        if !config.is_empty() {
            args.extend(["--config", &path]);
        }
        let r = run(&args);
        assert!(
            r.code == 0 && r.out.contains(" huge "),
            "{config}: {}{}",
            r.out,
            r.err
        );
    }
}

/// The demo cluster with more pending pods, as a stream after it.
fn demo_with(pods: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    let demo = std::fs::read_to_string(demo()).unwrap();
    write!(f, "{demo}\n---\n{pods}").unwrap();
    f
}

fn pending_pod(name: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: lab, uid: {name}}}\nspec:\n  containers: [{{name: c, image: x{spec}}}]\n"
    )
}

#[test]
fn every_pending_pod_in_a_line_grouped_by_cause() {
    let gpu = ", resources: {requests: {nvidia.com/gpu: '8'}, limits: {nvidia.com/gpu: '8'}}";
    let mut pods: String = (1..=3)
        .map(|i| pending_pod(&format!("train-{i}"), gpu))
        .collect();
    pods.push_str(&pending_pod("tiny", ", resources: {requests: {cpu: 10m}}"));
    pods.push_str(&pending_pod(
        "huge-with-a-long-name",
        ", resources: {requests: {cpu: '900'}}",
    ));
    let cluster = demo_with(&pods);
    let cluster = cluster.path().to_str().unwrap();
    let r = run(&["explain", "-A", "--snapshot", cluster, "--color", "never"]);
    assert_eq!(r.code, 1, "{}", r.err);
    // The release modelled, then the table.
    let (release, table_text) = r.out.split_once('\n').unwrap();
    assert_eq!(release, "kube-scheduler v1.36.2 (recorded in the snapshot)");
    let lines: Vec<&str> = table_text.lines().collect();
    // The table fits 80 columns (the names are whole, the causes cut with …).
    let table: Vec<&&str> = lines.iter().take_while(|l| !l.is_empty()).collect();
    assert!(
        table
            .iter()
            .all(|l| l.chars().count() <= 80 && !l.ends_with(' ')),
        "{}",
        r.out
    );
    // The largest group first, a row per group of pods held back alike, naming its pods.
    assert!(
        lines[1].starts_with("    3  no    3 Insufficient") && lines[1].contains(" lab/train-1,"),
        "{}",
        r.out
    );
    assert!(
        r.out.contains(" lab/train-2,") && r.out.contains(" lab/train-3\n"),
        "{}",
        r.out
    );
    let tiny = lines.iter().find(|l| l.contains(" lab/tiny ")).unwrap();
    assert!(tiny.contains("  yes   would be scheduled on"), "{}", r.out);
    assert!(
        r.out
            .contains("\n6 pending pod(s): 1 would be scheduled now, 5 fit no node\n"),
        "{}",
        r.out
    );
    // -o wide: each pod's whole message; JSON: the cause and the message.
    let wide = run(&["explain", "-A", "--snapshot", cluster, "-o", "wide"]);
    assert!(
        wide.out.contains("0/6 nodes are available:"),
        "{}",
        wide.out
    );
    let json = run(&["explain", "-A", "--snapshot", cluster, "-o", "json"]);
    let report: serde_json::Value = serde_json::from_str(&json.out).unwrap();
    assert_eq!(report["schedulerVersion"], "v1.36.2");
    let rows = &report["pods"];
    let train = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["pod"] == "lab/train-1")
        .unwrap();
    assert!(
        train["reason"]
            .as_str()
            .unwrap()
            .starts_with("3 Insufficient nvidia.com/gpu")
    );
    assert!(
        train["message"]
            .as_str()
            .unwrap()
            .starts_with("0/6 nodes are available: ")
    );
    // -A is every namespace; --all-pending honours -n.
    let pods_in = |flag: &str| -> Vec<String> {
        let r = run(&[
            "explain",
            flag,
            "-n",
            "shop",
            "--snapshot",
            cluster,
            "-o",
            "json",
        ]);
        let report: serde_json::Value = serde_json::from_str(&r.out).unwrap();
        report["pods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["pod"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(pods_in("--all-pending"), ["shop/search-indexer-7c9d5"]);
    assert_eq!(pods_in("-A").len(), rows.as_array().unwrap().len());
}

#[test]
fn null_and_far_future_values_in_a_dump_read_as_the_api_server_reads_them() {
    let extra = "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: odd\n  creationTimestamp: '9999-12-31T23:59:59.999999Z'\n  labels: {kubernetes.io/hostname: odd, empty: null}\nstatus:\n  allocatable: {cpu: '4', memory: 8Gi, pods: '10', ephemeral-storage: null}\n  conditions: [null, {type: Ready, status: 'True', lastHeartbeatTime: null}]\n";
    for json in [false, true] {
        let cluster = demo_with(extra);
        let path = if json {
            let docs: Vec<serde_json::Value> =
                serde_saphyr::from_multiple(&std::fs::read_to_string(cluster.path()).unwrap())
                    .unwrap();
            let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": docs});
            let f = tempfile::Builder::new().suffix(".json").tempfile().unwrap();
            std::fs::write(f.path(), list.to_string()).unwrap();
            f.into_temp_path()
        } else {
            cluster.into_temp_path()
        };
        let r = whatif(path.to_str().unwrap(), &case("max-runaway", "pod.yaml"));
        assert_eq!(r.code, 0, "{}", r.err);
        assert!(r.out.contains(" odd "), "{}", r.out);
    }
}

#[test]
fn a_null_profile_is_the_default_profile_as_kube_scheduler_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = written(
        &dir,
        "config.yaml",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [null]\n",
    );
    let pod = case("max-runaway", "pod.yaml");
    let plain = whatif_with(&demo(), &pod, &["-o", "json"]);
    let with = whatif_with(&demo(), &pod, &["-o", "json", "--config", &config]);
    assert_eq!(with.code, 0, "{}", with.err);
    assert_eq!(with.out, plain.out);
}

#[test]
fn placed_only_none_has_no_dangling_colon() {
    let r = whatif_with(
        &demo(),
        &case("max-runaway", "pod.yaml"),
        &["--replicas", "3"],
    );
    assert!(r.out.contains("Placed 3/3: "), "{}", r.out);
    let huge = "apiVersion: v1\nkind: Pod\nmetadata: {name: huge, namespace: lab}\nspec:\n  containers: [{name: c, image: x, resources: {requests: {cpu: '900'}}}]\n";
    let r = run_with(
        &[
            "whatif",
            "--snapshot",
            &demo(),
            "-f",
            "-",
            "--replicas",
            "5",
        ],
        huge.as_bytes(),
    );
    assert_eq!(r.code, 1);
    assert!(r.out.contains("\nPlaced only 0/5\n"), "{}", r.out);
}

#[test]
fn help_lists_the_commands_own_flags_first() {
    for cmd in ["whatif", "explain", "lease"] {
        let r = run(&[cmd, "--help"]);
        let own = r.out.find("Options:").unwrap();
        let cluster = r.out.find("Cluster and connection:").unwrap();
        let output = r.out.find("Output:").unwrap();
        assert!(own < cluster && cluster < output, "{cmd}:\n{}", r.out);
        assert!(r.out[cluster..output].contains("--kubeconfig"), "{cmd}");
        assert!(!r.out[cluster..output].contains("--replicas"), "{cmd}");
        // The reference pages it names exist.
        let (_, pages) = r
            .out
            .split_once("Reference (in kubectl-sched's repository): ")
            .unwrap_or_else(|| panic!("{cmd}: no reference line:\n{}", r.out));
        for page in pages.trim().split(", ") {
            assert!(root().join(page).is_file(), "{cmd}: {page} does not exist");
        }
    }
}

/// `--config` and the certificate files a configuration names are small files: a device or a
/// log named by mistake is refused once past 16 MiB, not read until memory runs out.
#[cfg(unix)]
#[test]
fn an_endless_config_file_is_refused_not_read() {
    let out = sched()
        .args([
            "whatif",
            "--snapshot",
            &demo(),
            "-f",
            root().join("fixtures/pods/web.yaml").to_str().unwrap(),
            "--config",
            "/dev/zero",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("/dev/zero: larger than 16 MiB: not a configuration or certificate file"),
        "{err}"
    );
}
