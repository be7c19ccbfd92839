//! Scheduler extenders through the binary, beyond the conformance cases: only filter,
//! prioritize and preempt are ever called (never bind, nothing without `--call-extenders`),
//! HTTPS with a CA and a client certificate, slow extenders and `--request-timeout`, answers
//! that are garbage, and bad TLS settings.

#[path = "common/colours.rs"]
mod colours;
mod support;

use assert_cmd::Command;
use base64::Engine;
use colours::without_our_colours;
use serde_json::Value;
use std::path::{Path, PathBuf};
use support::apiserver::Pki;
use support::extender::{FakeExtender, ServerTls};

fn case(name: &str, file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/conformance")
        .join(name)
        .join(file)
        .display()
        .to_string()
}

/// Four identical nodes; the pod fits all of them.
const FITS: &str = "extender-chain";
/// Three full nodes with lower-priority pods; the pod must preempt.
const PREEMPTS: &str = "extender-preempt-drops-candidates";

const HEADER: &str =
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n";

struct Run {
    code: i32,
    /// Our output with the fake's address written back as `127.0.0.1:PORT`.
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}:\n{}", self.stdout))
    }
}

/// `whatif` as kube-scheduler 1.36 on a conformance case's cluster and pod, with `extenders`
/// (YAML list entries using `127.0.0.1:PORT`) pointed at `fake`.
fn whatif(fixture: &str, fake: &FakeExtender, extenders: &str, extra: &[&str]) -> Run {
    whatif_as("1.36", fixture, fake, extenders, extra)
}

fn whatif_as(
    release: &str,
    fixture: &str,
    fake: &FakeExtender,
    extenders: &str,
    extra: &[&str],
) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, fake.configure(&format!("{HEADER}{extenders}"))).unwrap();
    let out = Command::cargo_bin("kubectl-sched")
        .unwrap()
        .env("COLUMNS", "200")
        .args(["whatif", "--scheduler-version", release, "--snapshot"])
        .arg(case(fixture, "cluster.yaml"))
        .arg("-f")
        .arg(case(fixture, "pod.yaml"))
        .arg("--config")
        .arg(&config)
        .args(extra)
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: fake.anonymise(&String::from_utf8_lossy(&out.stdout)),
        stderr: fake.anonymise(&String::from_utf8_lossy(&out.stderr)),
    }
}

fn verbs(fake: &FakeExtender) -> Vec<String> {
    fake.requests().into_iter().map(|r| r.verb).collect()
}

const EVERY_VERB: &str = "- urlPrefix: http://127.0.0.1:PORT/gate\n  filterVerb: filter\n  prioritizeVerb: prioritize\n  preemptVerb: preempt\n  bindVerb: bind\n  weight: 1\n  nodeCacheCapable: true\n";

#[test]
fn only_filter_prioritize_and_preempt_are_called_never_bind() {
    let fake = FakeExtender::start(&format!("{HEADER}{EVERY_VERB}"), "");
    let fits = whatif(FITS, &fake, EVERY_VERB, &["--call-extenders", "-o", "json"]);
    assert_eq!(fits.code, 0, "{}", fits.stderr);
    assert_eq!(verbs(&fake), ["filter", "prioritize"]);
    let e = fits.json();
    assert_eq!(e["extenders"]["binder"], "http://127.0.0.1:PORT/gate");
    assert!(
        e["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("would bind the pod")),
        "{:#}",
        e["notes"]
    );

    let fake = FakeExtender::start(&format!("{HEADER}{EVERY_VERB}"), "");
    let preempts = whatif(
        PREEMPTS,
        &fake,
        EVERY_VERB,
        &["--call-extenders", "-o", "json"],
    );
    assert_eq!(preempts.code, 1, "{}", preempts.stderr);
    assert_eq!(verbs(&fake), ["preempt"]);
    assert_eq!(preempts.json()["preemption"]["nominatedNode"], "node-1");
}

#[test]
fn every_modelled_release_calls_extenders_alike() {
    let answers = "extenders:\n  gate:\n    prioritize:\n      scores:\n        node-4: 10\n";
    for release in ["1.34", "1.35", "1.36", "1.37"] {
        let fake = FakeExtender::start(&format!("{HEADER}{EVERY_VERB}"), answers);
        let run = whatif_as(
            release,
            FITS,
            &fake,
            EVERY_VERB,
            &["--call-extenders", "-o", "json"],
        );
        assert_eq!(run.code, 0, "{release}: {}", run.stderr);
        assert_eq!(verbs(&fake), ["filter", "prioritize"], "{release}");
        assert_eq!(run.json()["selected"][0], "node-4", "{release}");
    }
}

#[test]
fn explain_sends_the_pending_pod_from_the_snapshot() {
    let fake = FakeExtender::start(&format!("{HEADER}{EVERY_VERB}"), "");
    let dir = tempfile::tempdir().unwrap();
    for file in ["cluster.yaml", "pod.yaml"] {
        std::fs::copy(case(FITS, file), dir.path().join(file)).unwrap();
    }
    // Not .yaml: the snapshot directory would read it as cluster objects.
    let config = dir.path().join("config.txt");
    std::fs::write(&config, fake.configure(&format!("{HEADER}{EVERY_VERB}"))).unwrap();
    let out = Command::cargo_bin("kubectl-sched")
        .unwrap()
        .args([
            "explain",
            "default/app",
            "--call-extenders",
            "-o",
            "json",
            "--snapshot",
        ])
        .arg(dir.path())
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(verbs(&fake), ["filter", "prioritize"]);
}

#[test]
fn nothing_is_sent_without_call_extenders() {
    let fake = FakeExtender::start(&format!("{HEADER}{EVERY_VERB}"), "");
    let run = whatif(PREEMPTS, &fake, EVERY_VERB, &["-o", "json"]);
    assert_eq!(run.code, 1);
    assert!(fake.requests().is_empty());
    assert!(
        run.stderr.contains("not called without --call-extenders"),
        "{}",
        run.stderr
    );
    let e = run.json();
    assert_eq!(e["extenders"]["called"], false);
    assert_eq!(e["extenderCalls"], serde_json::json!([]));
    let notes = e["notes"].to_string();
    assert!(notes.contains("were not called"), "{notes}");
}

#[test]
fn the_table_names_the_extender_that_rejected_a_node_and_every_call() {
    let answers = "extenders:\n  gate:\n    filter:\n      failedNodes:\n        node-2: node(s) over the team's quota\n    prioritize:\n      scores:\n        node-3: 7\n";
    let fake = FakeExtender::start(&format!("{HEADER}{EVERY_VERB}"), answers);
    let run = whatif(FITS, &fake, EVERY_VERB, &["--call-extenders", "-o", "wide"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = &run.stdout;
    assert!(
        out.contains("node-2  no      http://127.0.0.1:PORT/gate: node(s) over the"),
        "{out}"
    );
    // The wide table has a score column named after the extender, 7 × weight 1 × 10.
    assert!(out.contains("http://127.0.0.1:PORT/gate"), "{out}");
    assert!(out.contains("Would be scheduled on node-3"), "{out}");
    assert!(out.contains("Extender calls:"), "{out}");
    assert!(
        out.contains("filter http://127.0.0.1:PORT/gate on 4 node(s)"),
        "{out}"
    );
    assert!(
        out.contains("prioritize http://127.0.0.1:PORT/gate on 3 node(s)"),
        "{out}"
    );
    let json = whatif(FITS, &fake, EVERY_VERB, &["--call-extenders", "-o", "json"]).json();
    let node3 = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "node-3")
        .unwrap();
    assert_eq!(node3["scores"]["http://127.0.0.1:PORT/gate"], 70);
    for call in json["extenderCalls"].as_array().unwrap() {
        assert!(call["durationMs"].as_f64().unwrap() >= 0.0, "{call}");
    }
}

/// A CA, the fake's certificate for 127.0.0.1, and a client certificate, written to files.
struct Certs {
    pki: Pki,
    dir: tempfile::TempDir,
    server: (String, String),
    client: (String, String),
}

impl Certs {
    fn new() -> Certs {
        let pki = Pki::new("extender-ca");
        let (cert, key, _) = pki.issue(&["127.0.0.1"], "extender", false);
        let (ccert, ckey, _) = pki.issue(&[], "kube-scheduler", true);
        let dir = tempfile::tempdir().unwrap();
        for (name, pem) in [
            ("ca.pem", &pki.ca_pem),
            ("client.pem", &ccert),
            ("client-key.pem", &ckey),
        ] {
            std::fs::write(dir.path().join(name), pem).unwrap();
        }
        Certs {
            pki,
            dir,
            server: (cert, key),
            client: (ccert, ckey),
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn server_tls(&self, require_client: bool) -> ServerTls {
        ServerTls {
            cert_pem: self.server.0.clone(),
            key_pem: self.server.1.clone(),
            client_ca_pem: require_client.then(|| self.pki.ca_pem.clone()),
        }
    }
}

fn https_extender(tls: &str) -> String {
    format!(
        "- urlPrefix: https://127.0.0.1:PORT/secure\n  filterVerb: filter\n  nodeCacheCapable: true\n  enableHTTPS: true\n{tls}"
    )
}

const REJECT_NODE_1: &str = "extenders:\n  secure:\n    filter:\n      failedNodes:\n        node-1: node(s) refused over TLS\n";

fn rejected_node_1(run: &Run) -> bool {
    run.json()["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["name"] == "node-1" && n["reasons"][0] == "node(s) refused over TLS")
}

#[test]
fn https_with_a_ca_and_a_client_certificate() {
    let certs = Certs::new();
    let files = https_extender(&format!(
        "  tlsConfig:\n    caFile: {}\n    certFile: {}\n    keyFile: {}\n",
        certs.file("ca.pem").display(),
        certs.file("client.pem").display(),
        certs.file("client-key.pem").display()
    ));
    let fake = FakeExtender::start_tls(
        &format!("{HEADER}{files}"),
        REJECT_NODE_1,
        certs.server_tls(true),
    );
    let run = whatif(FITS, &fake, &files, &["--call-extenders", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(rejected_node_1(&run), "{}", run.stdout);

    // The same certificates inline, base64 as in a configuration file.
    let b64 = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
    let inline = https_extender(&format!(
        "  tlsConfig:\n    caData: {}\n    certData: {}\n    keyData: {}\n",
        b64(&certs.pki.ca_pem),
        b64(&certs.client.0),
        b64(&certs.client.1)
    ));
    let run = whatif(FITS, &fake, &inline, &["--call-extenders", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(rejected_node_1(&run), "{}", run.stdout);

    // Without the client certificate the server hangs up: the cycle fails, nothing was heard.
    let before = fake.requests().len();
    let no_cert = https_extender(&format!(
        "  tlsConfig:\n    caFile: {}\n",
        certs.file("ca.pem").display()
    ));
    let run = whatif(FITS, &fake, &no_cert, &["--call-extenders", "-o", "json"]);
    assert_eq!(run.code, 1);
    let message = run.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("Post \"https://127.0.0.1:PORT/secure/filter\": "),
        "{message}"
    );
    assert_eq!(fake.requests().len(), before);
}

#[test]
fn https_verifies_the_server_unless_told_not_to() {
    let certs = Certs::new();
    let other = Pki::new("another-ca");
    std::fs::write(certs.file("other-ca.pem"), &other.ca_pem).unwrap();
    let fake = FakeExtender::start_tls(
        &format!("{HEADER}{}", https_extender("")),
        REJECT_NODE_1,
        certs.server_tls(false),
    );
    let wrong_ca = https_extender(&format!(
        "  tlsConfig:\n    caFile: {}\n",
        certs.file("other-ca.pem").display()
    ));
    let run = whatif(FITS, &fake, &wrong_ca, &["--call-extenders", "-o", "json"]);
    let message = run.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with(
            "Post \"https://127.0.0.1:PORT/secure/filter\": tls: invalid peer certificate"
        ),
        "{message}"
    );
    assert!(fake.requests().is_empty());

    // enableHTTPS without a CA skips verification, as kube-scheduler's transport does.
    let run = whatif(
        FITS,
        &fake,
        &https_extender(""),
        &["--call-extenders", "-o", "json"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(rejected_node_1(&run), "{}", run.stdout);
}

fn slow(http_timeout: &str) -> String {
    format!(
        "- urlPrefix: http://127.0.0.1:PORT/slow\n  filterVerb: filter\n  nodeCacheCapable: true\n  httpTimeout: {http_timeout}\n"
    )
}

const SLOW: &str = "extenders:\n  slow:\n    filter:\n      delay: 1s\n";

fn message(run: &Run) -> String {
    run.json()["message"].as_str().unwrap().to_string()
}

#[test]
fn a_slow_extender_times_out_as_kube_scheduler_would() {
    let fake = FakeExtender::start(&format!("{HEADER}{}", slow("200ms")), SLOW);
    let run = whatif(
        FITS,
        &fake,
        &slow("200ms"),
        &["--call-extenders", "-o", "json"],
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        message(&run),
        "Post \"http://127.0.0.1:PORT/slow/filter\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    );
    let took = run.json()["extenderCalls"][0]["durationMs"]
        .as_f64()
        .unwrap();
    assert!((200.0..1000.0).contains(&took), "{took}");
    // A longer --request-timeout changes nothing: httpTimeout decides.
    let run = whatif(
        FITS,
        &fake,
        &slow("200ms"),
        &["--call-extenders", "--request-timeout", "5s", "-o", "json"],
    );
    assert!(message(&run).ends_with("(Client.Timeout exceeded while awaiting headers)"));
}

#[test]
fn request_timeout_cuts_a_longer_http_timeout_short_and_says_so() {
    let fake = FakeExtender::start(&format!("{HEADER}{}", slow("30s")), SLOW);
    let run = whatif(
        FITS,
        &fake,
        &slow("30s"),
        &[
            "--call-extenders",
            "--request-timeout",
            "200ms",
            "-o",
            "json",
        ],
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        message(&run),
        "Post \"http://127.0.0.1:PORT/slow/filter\": no answer within --request-timeout 200ms (kube-scheduler would wait up to 30s, so its answer may differ)"
    );
}

const GATE: &str = "- urlPrefix: http://127.0.0.1:PORT/gate\n  filterVerb: filter\n  prioritizeVerb: prioritize\n  preemptVerb: preempt\n  weight: 1\n  nodeCacheCapable: true\n";

#[test]
fn garbage_answers_fail_the_call_as_go_would_read_them() {
    let fake = FakeExtender::start(&format!("{HEADER}{GATE}"), "");
    for (body, expected) in [
        (
            "<html>oops</html>",
            "invalid character '<' looking for beginning of value",
        ),
        ("", "EOF"),
        ("{\"NodeNames\": [\"node-1\"", "unexpected EOF"),
        (
            "[1, 2]",
            "json: cannot unmarshal array into Go value of type v1.ExtenderFilterResult",
        ),
        (
            "{\"NodeNames\": \"node-1\"}",
            "json: cannot unmarshal string into Go struct field ExtenderFilterResult.NodeNames of type *[]string",
        ),
        (
            "{\"nodenames\": [\"node-9\"]}",
            "extender \"http://127.0.0.1:PORT/gate\" claims a filtered node \"node-9\" which is not found in the input node list",
        ),
    ] {
        fake.answer_raw("gate", "filter", body);
        let run = whatif(FITS, &fake, GATE, &["--call-extenders", "-o", "json"]);
        assert_eq!(run.code, 1, "{body}: {}", run.stderr);
        assert_eq!(message(&run), expected, "answering {body:?}");
    }
}

#[test]
fn an_extender_error_cannot_forge_styles_or_reorder_text() {
    let fake = FakeExtender::start(&format!("{HEADER}{GATE}"), "");
    let hostile = "quota\u{E0001}\u{E0062} gone\u{202E}x\u{200B}\u{1b}[5m";
    fake.answer_raw(
        "gate",
        "filter",
        &serde_json::json!({"Error": hostile}).to_string(),
    );
    for colour in ["always", "never"] {
        let run = whatif(FITS, &fake, GATE, &["--call-extenders", "--color", colour]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stdout
                .contains("quota\\u{e0001}\\u{e0062} gone\\u{202e}x\\u{200b}\\x1b[5m"),
            "{}",
            run.stdout
        );
        for text in [&run.stdout, &run.stderr] {
            assert!(
                !text.contains(['\u{E0001}', '\u{E0062}', '\u{202E}', '\u{200B}']),
                "{text}"
            );
            assert!(!without_our_colours(text).contains('\x1b'), "{text:?}");
        }
    }
    let run = whatif(FITS, &fake, GATE, &["--call-extenders", "-o", "json"]);
    assert!(message(&run).contains(hostile), "{}", run.stdout);
}

#[test]
fn a_garbage_prioritize_answer_gives_no_score_and_is_not_an_error() {
    let fake = FakeExtender::start(&format!("{HEADER}{GATE}"), "");
    fake.answer_raw("gate", "prioritize", "\"nope\"");
    let run = whatif(FITS, &fake, GATE, &["--call-extenders", "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let e = run.json();
    assert!(
        e["nodes"][0]["scores"]
            .get("http://127.0.0.1:PORT/gate")
            .is_none()
    );
    assert_eq!(
        e["extenderCalls"][1]["error"],
        "json: cannot unmarshal string into Go value of type v1.HostPriorityList"
    );
}

#[test]
fn a_garbage_preempt_answer_ends_preemption_with_its_error() {
    let fake = FakeExtender::start(&format!("{HEADER}{GATE}"), "");
    for (body, expected) in [
        (
            "{\"NodeNameToMetaVictims\": {\"node-9\": {\"Pods\": [{\"UID\": \"x\"}]}}}",
            "preemption: nodeinfo not found for node name \"node-9\"",
        ),
        (
            "{\"NodeNameToMetaVictims\": {\"node-1\": {\"Pods\": [{\"UID\": \"nobody\"}]}}}",
            "preemption: extender: http://127.0.0.1:PORT/gate claims to preempt pod (UID: &{nobody}) on node: node-1, but the pod is not found on that node",
        ),
        (
            "{\"NodeNameToMetaVictims\": {\"node-1\": {\"Pods\": []}}}",
            "preemption: expected at least one victim pod on node \"node-1\"",
        ),
    ] {
        fake.answer_raw("gate", "preempt", body);
        let run = whatif(PREEMPTS, &fake, GATE, &["--call-extenders", "-o", "json"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_eq!(
            run.json()["preemption"]["message"],
            expected,
            "answering {body}"
        );
    }
}

#[test]
fn unusable_tls_settings_are_bad_input() {
    let fake = FakeExtender::start(&format!("{HEADER}{GATE}"), "");
    let missing = https_extender("  tlsConfig:\n    caFile: /nonexistent/ca.pem\n");
    let run = whatif(FITS, &fake, &missing, &["--call-extenders"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("config.yaml: extender https://127.0.0.1:"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("open /nonexistent/ca.pem"),
        "{}",
        run.stderr
    );
    // Nothing is read while extenders are not called.
    let run = whatif(FITS, &fake, &missing, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn replicas_are_not_placed_with_extenders() {
    let fake = FakeExtender::start(&format!("{HEADER}{GATE}"), "");
    let run = whatif(FITS, &fake, GATE, &["--call-extenders", "--replicas", "2"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("--call-extenders places one pod"),
        "{}",
        run.stderr
    );
    assert!(fake.requests().is_empty());
}
