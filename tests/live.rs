//! The live source end to end: the real binaries against a fake API server over TLS
//! (tests/support/apiserver.rs), fed from fixtures/live/cluster.yaml and the conformance clusters.
//! Every test also checks that the tool sent nothing but GETs and never asked for Secrets.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::apiserver::{ApiServer, Fault, On};
use support::{ContextSpec, Credentials, Run, Workspace, kubeconfig, repo};

fn fixture() -> PathBuf {
    repo().join("fixtures/live/cluster.yaml")
}

/// A server loaded with the fixture cluster, and a workspace whose kubeconfig points at it
/// (context "test", namespace team-a).
fn setup() -> (ApiServer, Workspace, PathBuf) {
    support::fixture_server()
}

#[test]
fn whatif_reads_every_kind_concurrently_paginated_from_the_watch_cache() {
    let (server, ws, kc) = setup();
    server.max_page(2);
    let pod = ws.write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: new}\nspec:\n  containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]\n");
    let run = ws.run(&kc, &["whatif", "-f", pod.to_str().unwrap(), "-o", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    // The pod went to the context's namespace.
    assert_eq!(run.json()["pod"], "team-a/new");
    server.assert_only_gets();

    for path in [
        "/api/v1/nodes",
        "/api/v1/pods",
        "/api/v1/namespaces",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        "/apis/policy/v1/poddisruptionbudgets",
        "/api/v1/persistentvolumeclaims",
        "/api/v1/persistentvolumes",
        "/apis/storage.k8s.io/v1/storageclasses",
        "/apis/storage.k8s.io/v1/csinodes",
        "/apis/storage.k8s.io/v1/csidrivers",
        "/apis/storage.k8s.io/v1/csistoragecapacities",
        "/apis/storage.k8s.io/v1/volumeattachments",
        "/api/v1/services",
        "/api/v1/replicationcontrollers",
        "/apis/apps/v1/replicasets",
        "/apis/apps/v1/statefulsets",
        "/apis/resource.k8s.io/v1/deviceclasses",
        "/apis/resource.k8s.io/v1/resourceslices",
        "/apis/resource.k8s.io/v1/resourceclaims",
        "/apis/resource.k8s.io/v1/resourceclaimtemplates",
    ] {
        let reqs = server.requests_to(path);
        assert!(!reqs.is_empty(), "{path} was not listed");
        let first = &reqs[0];
        assert_eq!(first.param("limit"), Some("500"), "{path}: {first:?}");
        assert_eq!(
            first.param("resourceVersion"),
            Some("0"),
            "{path}: the first page comes from the watch cache"
        );
        assert_eq!(first.param("continue"), None);
        for next in &reqs[1..] {
            assert!(
                next.param("continue").is_some(),
                "{path}: later pages continue: {next:?}"
            );
            assert_eq!(
                next.param("resourceVersion"),
                None,
                "{path}: a continued page names no resourceVersion"
            );
        }
    }
    // 8 pods less the Succeeded one, 2 per page.
    let pods = server.requests_to("/api/v1/pods");
    assert_eq!(pods.len(), 4, "{pods:?}");
    assert!(
        pods.iter()
            .all(|r| r.param("fieldSelector")
                == Some("status.phase!=Succeeded,status.phase!=Failed"))
    );
    assert_eq!(server.requests_to("/api/v1/nodes").len(), 2);
    // whatif needs no events, leases or discovery.
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !r.path.contains("events") && !r.path.contains("lease"))
    );
    assert!(server.requests().iter().all(|r| {
        r.user_agent
            .as_deref()
            .is_some_and(|a| a.starts_with("kubectl-sched/"))
    }));
}

#[test]
fn consistent_read_asks_for_no_resource_version() {
    let (server, ws, kc) = setup();
    let run = ws.run(
        &kc,
        &["explain", "small", "--consistent-read", "-o", "json"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    for r in server
        .requests()
        .iter()
        .filter(|r| r.query.contains_key("limit"))
    {
        assert_eq!(r.param("resourceVersion"), None, "{r:?}");
    }
    server.assert_only_gets();
}

/// The live read gives exactly what the same objects give from a file.
#[test]
fn live_and_file_agree_on_the_conformance_clusters() {
    let dir = repo().join("fixtures/conformance");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("cluster.yaml").exists() && p.join("pod.yaml").exists())
        .collect();
    cases.sort();
    assert!(cases.len() > 50, "conformance cases found: {}", cases.len());
    let ws = Workspace::new();
    let mut compared = 0;
    for case in cases {
        let server = ApiServer::start();
        server.load(&case.join("cluster.yaml"));
        server.max_page(3);
        let kc = ws.write(
            "config",
            &kubeconfig(&[ContextSpec::for_server("c", &server)], Some("c")),
        );
        let mut args = vec![
            "whatif".to_string(),
            "-f".into(),
            case.join("pod.yaml").display().to_string(),
            "-o".into(),
            "json".into(),
        ];
        if case.join("config.yaml").exists() {
            args.extend([
                "--config".into(),
                case.join("config.yaml").display().to_string(),
            ]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let live = ws.run(&kc, &args);
        let cluster = case.join("cluster.yaml");
        let mut file_args = args.clone();
        // The dump records no version: model the one the fake server reports.
        file_args.extend([
            "--snapshot",
            cluster.to_str().unwrap(),
            "--scheduler-version",
            "v1.34.1",
        ]);
        let file = ws.run(&kc, &file_args);
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(live.code, file.code, "{name}: live {live:?}\nfile {file:?}");
        assert_eq!(
            live.stdout.replace(
                r#""schedulerVersionFrom": "server""#,
                r#""schedulerVersionFrom": "flag""#
            ),
            file.stdout,
            "{name}: live and file explanations differ"
        );
        server.assert_only_gets();
        compared += 1;
    }
    assert!(compared > 50);
}

#[test]
fn an_expired_continue_token_restarts_that_list() {
    let (server, ws, kc) = setup();
    server.max_page(1);
    server.fault(Fault::status("pods", 410).on(On::Continue).times(1));
    let live = ws.run(&kc, &["explain", "-A", "-o", "json"]);
    let file = ws.run(
        &kc,
        &[
            "explain",
            "-A",
            "-o",
            "json",
            "--snapshot",
            fixture().to_str().unwrap(),
            "--scheduler-version",
            "v1.34.1",
        ],
    );
    assert_eq!(live.code, 1, "{live:?}");
    let pods: Vec<Value> = live.json()["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["pod"].clone())
        .collect();
    assert_eq!(
        pods,
        vec![
            json!("default/other-sched"),
            json!("default/web"),
            json!("team-a/big"),
            json!("team-a/small")
        ]
    );
    // The same answer as from the file, under the release the server reports.
    let (live, file) = (live.json(), file.json());
    assert_eq!(live["pods"], file["pods"]);
    assert_eq!(live["schedulerVersion"], file["schedulerVersion"]);
    assert_eq!(live["schedulerVersionFrom"], "server");
    let reqs = server.requests_to("/api/v1/pods");
    let first_pages = reqs
        .iter()
        .filter(|r| r.param("continue").is_none())
        .count();
    assert_eq!(first_pages, 2, "the pod list started again: {reqs:?}");
    // Seven live pods, one per page, after one page and one expired continuation.
    assert_eq!(reqs.len(), 2 + 7, "{reqs:?}");
    server.assert_only_gets();
}

#[test]
fn a_list_that_keeps_expiring_fails_with_advice() {
    let (server, ws, kc) = setup();
    server.max_page(1);
    server.fault(Fault::status("nodes", 410).on(On::Continue));
    let run = ws.run(&kc, &["explain", "small"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr
            .contains("cannot list nodes: the list kept expiring while it was read (410 Gone)"),
        "{}",
        run.stderr
    );
    // The first attempt and three restarts.
    let first_pages = server
        .requests_to("/api/v1/nodes")
        .iter()
        .filter(|r| r.param("continue").is_none())
        .count();
    assert_eq!(first_pages, 4);
    server.assert_only_gets();
}

#[test]
fn a_forbidden_optional_kind_is_one_warning_naming_what_it_costs() {
    let (server, ws, kc) = setup();
    server.fault(Fault::status("poddisruptionbudgets", 403));
    server.fault(Fault::status("csidrivers", 404));
    let run = ws.run(&kc, &["explain", "big", "-o", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: cannot list"))
        .collect();
    assert_eq!(
        warnings,
        vec![
            "warning: cannot list poddisruptionbudgets (403 Forbidden): preemption ignores PDBs",
            "warning: cannot list csidrivers (the API server does not serve them): which CSI drivers track storage capacity is unknown to VolumeBinding",
        ],
        "{}",
        run.stderr
    );
    // Without the PDB, the victims violate no budget.
    let candidates = &run.json()["preemption"]["candidates"];
    assert!(
        candidates
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["numPDBViolations"] == 0),
        "{candidates}"
    );
    server.assert_only_gets();
}

#[test]
fn forbidden_nodes_or_pods_fail_with_the_permissions_needed() {
    for kind in ["nodes", "pods"] {
        let (server, ws, kc) = setup();
        server.fault(Fault::status(kind, 403));
        let run = ws.run(
            &kc,
            &[
                "whatif",
                "-f",
                repo()
                    .join("fixtures/conformance/fit-memory/pod.yaml")
                    .to_str()
                    .unwrap(),
            ],
        );
        assert_eq!(run.code, 3, "{run:?}");
        assert_eq!(
            run.stderr.lines().count(),
            1,
            "one line, no trace: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains(&format!(
                "permission denied: user \"test-user\" may not list {kind} (403 Forbidden)"
            )) && run
                .stderr
                .contains("needs the \"list\" verb on \"nodes\" and \"pods\""),
            "{}",
            run.stderr
        );
        // -v adds the server's own words.
        let verbose = ws.run(
            &kc,
            &[
                "-v",
                "whatif",
                "-f",
                repo()
                    .join("fixtures/conformance/fit-memory/pod.yaml")
                    .to_str()
                    .unwrap(),
            ],
        );
        assert!(
            verbose
                .stderr
                .contains(&format!("{kind} is forbidden: User")),
            "{}",
            verbose.stderr
        );
        server.assert_only_gets();
    }
}

#[test]
fn server_errors_and_timeouts_are_one_sentence_exit_3() {
    let (server, ws, kc) = setup();
    server.fault(Fault::status("pods", 500));
    let run = ws.run(&kc, &["explain", "small"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(
        run.stderr.trim(),
        format!(
            "error: the API server at {} failed to list pods (500 InternalError): Internal error occurred: etcdserver: request timed out",
            server.url()
        )
    );

    server.clear_faults();
    server.fault(Fault::delay("nodes", Duration::from_secs(4)));
    let start = Instant::now();
    let run = ws.run(&kc, &["explain", "small", "--request-timeout", "1s"]);
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "the timeout did not cut the request"
    );
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "the API server at {} (context \"test\") did not answer within 1s when asked to list nodes",
            server.url()
        )),
        "{}",
        run.stderr
    );
    let run = ws.run(&kc, &["explain", "small", "--request-timeout", "soon"]);
    assert_eq!(run.code, 2, "{run:?}");
    server.assert_only_gets();
}

#[test]
fn a_slow_read_draws_nothing_on_a_stderr_that_is_not_a_terminal() {
    let (server, ws, kc) = setup();
    server.fault(Fault::delay("pods", Duration::from_millis(1500)));
    let run = ws.run(&kc, &["explain", "small", "-o", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "", "stderr must stay empty: {:?}", run.stderr);
    server.assert_only_gets();
}

/// On a terminal, a read that takes more than a moment counts objects per kind on stderr, then
/// erases its line. `script` (util-linux) provides the terminal.
#[cfg(unix)]
#[test]
fn a_slow_read_counts_objects_on_a_terminal() {
    let (server, ws, kc) = setup();
    server.fault(Fault::delay("pods", Duration::from_millis(1500)));
    let bin = support::binary("kubectl-sched");
    let command = format!("{} explain small -o json", bin.display());
    let out = ws
        .command("script", Some(&kc))
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script(1) from util-linux runs the tool on a terminal");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let line = "\r\x1b[2Kreading the cluster: 3 nodes, 0 pods, ";
    assert!(text.contains(line), "no progress line in {text:?}");
    assert!(
        text.contains("kinds done)\r\x1b[2K"),
        "the line is erased: {text:?}"
    );
    assert!(text.contains("\"pod\": \"team-a/small\""), "{text:?}");
    server.assert_only_gets();
}

#[test]
fn unreachable_servers_and_tls_problems_are_explained() {
    let ws = Workspace::new();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = ApiServer::start();
    server.load(&fixture());
    let mut closed = ContextSpec::for_server("gone", &server);
    closed.server = format!("https://127.0.0.1:{port}");
    let kc = ws.write("closed", &kubeconfig(&[closed], Some("gone")));
    let run = ws.run(&kc, &["explain", "small"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(
        run.stderr.trim(),
        format!(
            "error: cannot reach the API server at https://127.0.0.1:{port} (context \"gone\"): connection refused (is the cluster up, and is this the right context?)"
        )
    );

    // A kubeconfig that trusts another CA (of the same name, as when a cluster is re-created).
    let other = ApiServer::start();
    let mut untrusted = ContextSpec::for_server("untrusted", &server);
    untrusted.ca_pem = other.pki.ca_pem.clone();
    let kc = ws.write("untrusted", &kubeconfig(&[untrusted], Some("untrusted")));
    let run = ws.run(&kc, &["explain", "small"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr
            .contains("cannot connect securely to the API server")
            && run
                .stderr
                .contains("not signed by a certificate authority the kubeconfig trusts"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);

    // A certificate for another name.
    let mut wrong_name = ContextSpec::for_server("wrong-name", &server);
    wrong_name.tls_server_name = Some("api.example.com".into());
    let kc = ws.write("wrong-name", &kubeconfig(&[wrong_name], Some("wrong-name")));
    let run = ws.run(&kc, &["explain", "small"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr
            .contains("the server's certificate is not valid for this address"),
        "{}",
        run.stderr
    );
    assert!(
        server.requests().is_empty(),
        "nothing got past TLS: {:?}",
        server.requests()
    );
}

#[test]
fn tokens_client_certificates_and_exec_plugins_authenticate() {
    let (server, ws, _) = setup();
    server.require_auth();
    server.add_token("good-token", "jane");

    let token =
        |t: &str| ContextSpec::for_server("t", &server).credentials(Credentials::Token(t.into()));
    let kc = ws.write("token", &kubeconfig(&[token("good-token")], Some("t")));
    assert_eq!(ws.run(&kc, &["explain", "team-a/small"]).code, 0);
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.user.as_deref() == Some("jane"))
    );

    // Expired credentials.
    let kc = ws.write("expired", &kubeconfig(&[token("expired-token")], Some("t")));
    let run = ws.run(&kc, &["explain", "team-a/small"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(
        run.stderr.trim(),
        format!(
            "error: the API server at {} rejected the credentials of user \"t-user\" (401 Unauthorized): they may have expired; log in again or refresh the token, then retry",
            server.url()
        )
    );

    // A client certificate.
    server.clear_requests();
    let (cert, key) = server.client_cert("carol");
    let kc = ws.write(
        "cert",
        &kubeconfig(
            &[ContextSpec::for_server("c", &server).credentials(Credentials::Cert(cert, key))],
            Some("c"),
        ),
    );
    let run = ws.run(&kc, &["explain", "team-a/small"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.user.as_deref() == Some("carol"))
    );

    // An exec credential plugin, as cloud providers' kubeconfigs use.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let plugin = ws.write(
            "credential-plugin.sh",
            "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"good-token\"}}'\n",
        );
        std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let exec = ContextSpec::for_server("e", &server)
            .credentials(Credentials::Exec(plugin.display().to_string(), vec![]));
        let kc = ws.write("exec", &kubeconfig(&[exec], Some("e")));
        server.clear_requests();
        let run = ws.run(&kc, &["explain", "team-a/small"]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            server
                .requests()
                .iter()
                .all(|r| r.user.as_deref() == Some("jane"))
        );

        let failing = ws.write(
            "failing-plugin.sh",
            "#!/bin/sh\necho 'token expired, run: login' >&2\nexit 1\n",
        );
        std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
        let exec = ContextSpec::for_server("e", &server)
            .credentials(Credentials::Exec(failing.display().to_string(), vec![]));
        let kc = ws.write("exec-failing", &kubeconfig(&[exec], Some("e")));
        let run = ws.run(&kc, &["explain", "team-a/small"]);
        assert_eq!(run.code, 3, "{run:?}");
        assert!(
            run.stderr
                .starts_with("error: cannot get credentials of user \"e-user\""),
            "{}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
    server.assert_only_gets();
}

#[test]
fn kubeconfig_files_contexts_and_namespaces_resolve_as_kubectl_does() {
    let one = ApiServer::start();
    one.load(&fixture());
    let two = ApiServer::start();
    two.load(&fixture());
    let ws = Workspace::new();
    let a = ws.write(
        "a.yaml",
        &kubeconfig(
            &[ContextSpec::for_server("a", &one).namespace("team-a")],
            Some("a"),
        ),
    );
    let b = ws.write(
        "b.yaml",
        &kubeconfig(
            &[ContextSpec::for_server("b", &two).namespace("default")],
            Some("b"),
        ),
    );
    let missing = ws.path("missing.yaml");
    let list = std::env::join_paths([&missing, &a, &b]).unwrap();
    let run = |args: &[&str]| -> Run {
        Run::from(
            ws.command("kubectl-sched", None)
                .env("KUBECONFIG", &list)
                .args(args)
                .output()
                .unwrap(),
        )
    };
    let pod_of = |r: &Run| r.json()["pod"].as_str().unwrap_or("").to_string();

    // The first file's current context, and its namespace.
    let r = run(&["explain", "small", "-o", "json"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(pod_of(&r), "team-a/small");
    assert!(!one.requests().is_empty() && two.requests().is_empty());

    // Another context from the second file, with its own namespace.
    let r = run(&["explain", "web", "--context", "b", "-o", "json"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert_eq!(pod_of(&r), "default/web");
    assert!(!two.requests().is_empty());

    // -n wins over the context's namespace; NAMESPACE/NAME over both.
    assert_eq!(
        pod_of(&run(&["explain", "pod/web", "-n", "default", "-o", "json"])),
        "default/web"
    );
    assert_eq!(
        pod_of(&run(&[
            "explain",
            "team-a/big",
            "--context",
            "b",
            "-o",
            "json"
        ])),
        "team-a/big"
    );

    // --cluster and --user mix a context's parts.
    two.clear_requests();
    let r = run(&[
        "explain",
        "small",
        "--cluster",
        "b-cluster",
        "--user",
        "b-user",
        "-o",
        "json",
    ]);
    assert_eq!(pod_of(&r), "team-a/small");
    assert!(
        !two.requests().is_empty(),
        "--cluster b-cluster talks to the second server"
    );

    // --kubeconfig replaces $KUBECONFIG.
    one.clear_requests();
    let r = run(&[
        "--kubeconfig",
        b.to_str().unwrap(),
        "explain",
        "web",
        "-o",
        "json",
    ]);
    assert_eq!(pod_of(&r), "default/web");
    assert!(one.requests().is_empty());

    // A wrong context is one sentence naming the ones there are.
    let r = run(&["explain", "small", "--context", "prod"]);
    assert_eq!(r.code, 3);
    assert!(
        r.stderr
            .starts_with("error: context \"prod\" not found in the kubeconfig files")
            && r.stderr.trim_end().ends_with("(contexts: a, b)"),
        "{}",
        r.stderr
    );

    // --snapshot makes no connection at all.
    one.clear_requests();
    two.clear_requests();
    let r = run(&[
        "explain",
        "team-a/small",
        "--snapshot",
        fixture().to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(r.code, 0);
    assert!(one.requests().is_empty() && two.requests().is_empty());
    one.assert_only_gets();
    two.assert_only_gets();
}

#[test]
fn explain_shows_the_real_schedulers_message_and_flags_differences() {
    let (server, ws, kc) = setup();
    // The pod's latest FailedScheduling event says what is computed.
    let run = ws.run(&kc, &["explain", "big", "-o", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    let e = run.json();
    assert_eq!(
        e["schedulerEvent"]["matches"], true,
        "{}",
        e["schedulerEvent"]
    );
    assert_eq!(e["schedulerEvent"]["count"], 12);
    assert_eq!(e["schedulerEvent"]["lastSeen"], "2025-01-01T00:10:00Z");
    let events = server.requests_to("/api/v1/namespaces/team-a/events");
    assert_eq!(events.len(), 1, "{:?}", server.requests());
    assert_eq!(
        events[0].param("fieldSelector"),
        Some(
            "involvedObject.kind=Pod,involvedObject.namespace=team-a,involvedObject.name=big,reason=FailedScheduling"
        )
    );
    assert_eq!(
        server
            .requests_to("/api/v1/namespaces/team-a/pods/big")
            .len(),
        1,
        "the pod is also read by name"
    );

    let table = ws.run(&kc, &["explain", "pods/big"]);
    assert!(
        table.stdout.contains(
            "kube-scheduler said (FailedScheduling, 12 times, last at 2025-01-01T00:10:00Z):"
        ),
        "{}",
        table.stdout
    );
    assert!(
        table
            .stdout
            .contains("= the same as the message computed here"),
        "{}",
        table.stdout
    );

    // web's event is stale: flagged.
    let table = ws.run(&kc, &["explain", "default/web"]);
    assert_eq!(table.code, 1);
    assert!(
        table.stdout.contains(
            "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
        ),
        "{}",
        table.stdout
    );
    assert!(
        table
            .stdout
            .contains("≠ differs from the message computed here"),
        "{}",
        table.stdout
    );

    // A pod without events says so; a bound pod gets no comparison.
    server.delete("events", Some("default"), "web.1");
    let table = ws.run(&kc, &["explain", "default/web"]);
    assert!(
        table
            .stdout
            .contains("kube-scheduler: no FailedScheduling event for this pod"),
        "{}",
        table.stdout
    );
    let bound = ws.run(&kc, &["explain", "api-1", "-o", "json"]);
    assert!(bound.json()["schedulerEvent"].is_null(), "{}", bound.stdout);

    // A finished pod is found by name although the list leaves it out.
    let done = ws.run(&kc, &["explain", "default/done"]);
    assert_eq!(done.code, 2);
    assert!(
        done.stderr.contains("pod default/done has finished"),
        "{}",
        done.stderr
    );
    let missing = ws.run(&kc, &["explain", "nope"]);
    assert!(
        missing
            .stderr
            .contains("pod \"nope\" not found in namespace \"team-a\""),
        "{}",
        missing.stderr
    );
    server.assert_only_gets();
}

#[test]
fn all_pending_is_one_table_and_the_plugin_binary_works() {
    let (server, ws, kc) = setup();
    let run = Run::from(
        ws.command("kubectl-sched_explain", Some(&kc))
            .args(["--all-pending"])
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 1, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("kube-scheduler v1.")
            && lines[0].ends_with("the API server's version)"),
        "{}",
        run.stdout
    );
    assert!(
        lines[1].contains("POD") && lines[1].contains("KUBE-SCHEDULER"),
        "{}",
        run.stdout
    );
    // A row per group of pods held back alike; here each pod is a group of its own.
    let row = |pod: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().any(|w| w == pod))
            .unwrap_or_else(|| panic!("{pod} in {}", run.stdout))
            .to_string()
    };
    assert!(
        row("team-a/big").contains(" no ") && row("team-a/big").contains("same"),
        "{}",
        row("team-a/big")
    );
    assert!(row("team-a/small").contains("would be scheduled on one of n1, n2"));
    assert!(row("default/web").contains("differs"));
    assert!(row("default/other-sched").contains("matches no profile"));
    assert!(
        run.stdout
            .contains("4 pending pod(s): 1 would be scheduled now, 2 fit no node"),
        "{}",
        run.stdout
    );
    // One cluster-wide list of FailedScheduling events.
    let events = server.requests_to("/api/v1/events");
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].param("fieldSelector"),
        Some("reason=FailedScheduling")
    );

    // -A is every namespace, as in kubectl, whatever -n says; --all-pending honours -n.
    let json = ws
        .run(&kc, &["explain", "-A", "-n", "team-a", "-o", "json"])
        .json();
    assert_eq!(json["pods"].as_array().unwrap().len(), 4);
    assert_eq!(json["schedulerVersionFrom"], "server");
    let json = ws
        .run(
            &kc,
            &["explain", "--all-pending", "-n", "team-a", "-o", "json"],
        )
        .json();
    let rows = json["pods"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["pod"], "team-a/big");
    assert_eq!(rows[0]["nominatedNode"], "n2");
    assert_eq!(rows[0]["victims"], json!(["team-a/api-2"]));
    assert_eq!(rows[1]["fits"], true);
    server.assert_only_gets();
}

fn read_snapshot(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap();
    kubectl_sched::source::file::parse_documents(&path.display().to_string(), bytes)
        .unwrap()
        .into_iter()
        .flat_map(|d| match d.get("items") {
            Some(Value::Array(items)) => items.clone(),
            _ => vec![d],
        })
        .collect()
}

#[test]
fn snapshots_are_redacted_complete_and_explain_the_same_offline() {
    let (server, ws, kc) = setup();
    server.clock_skew(Duration::from_secs(3600), true);
    for name in ["snap.json", "snap.yaml.gz"] {
        let out = ws.path(name);
        let run = ws.run(&kc, &["snapshot", "-f", out.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            run.stdout.starts_with(&format!(
                "wrote {} (redacted): 3 nodes, 7 pods",
                out.display()
            )),
            "{}",
            run.stdout
        );
        let text = String::from_utf8_lossy(&std::fs::read(&out).unwrap()).to_string();
        if name.ends_with(".gz") {
            assert!(!text.contains("team-a"), "compressed");
        }
        let objects = read_snapshot(&out);
        let info = &objects[0];
        assert_eq!(info["kind"], "SnapshotInfo");
        assert_eq!(info["spec"]["serverVersion"], "v1.34.1");
        assert_eq!(info["spec"]["context"], "test");
        assert_eq!(info["spec"]["redacted"], true);
        let skew = info["spec"]["clockSkewMs"].as_i64().unwrap();
        assert!((3_598_000..=3_602_000).contains(&skew), "skew {skew}");
        let kinds = |k: &str| objects.iter().filter(|o| o["kind"] == k).count();
        assert_eq!(kinds("Node"), 3);
        assert_eq!(kinds("Pod"), 7, "terminated pods are left out");
        assert_eq!(kinds("Lease"), 2);
        assert_eq!(kinds("LeaseCandidate"), 1);
        assert_eq!(kinds("Secret"), 0);
        let lc = objects
            .iter()
            .find(|o| o["kind"] == "LeaseCandidate")
            .unwrap();
        assert_eq!(lc["apiVersion"], "coordination.k8s.io/v1beta1");
        // The latest FailedScheduling event of each pending pod, nothing else.
        let events: Vec<&str> = objects
            .iter()
            .filter(|o| o["kind"] == "Event")
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(events, vec!["web.1", "big.new"]);
        let all = objects.iter().map(|o| o.to_string()).collect::<String>();
        for secret in [
            "s3cr3t",
            "rs-s3cr3t",
            "last-applied-configuration",
            "managedFields",
        ] {
            assert!(!all.contains(secret), "{secret} in the snapshot");
        }
        assert!(all.contains("team.example/owner"), "small annotations stay");
    }
    server.assert_only_gets();
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !r.path.contains("secrets"))
    );

    // Reading it back explains exactly as live.
    let snap = ws.path("snap.json");
    for args in [
        ["explain", "big"],
        ["explain", "default/web"],
        ["explain", "-A"],
    ] {
        let live = ws.run(&kc, &[&args[..], &["-o", "json", "-n", "team-a"]].concat());
        let offline = ws.run(
            &kc,
            &[
                &args[..],
                &[
                    "-o",
                    "json",
                    "-n",
                    "team-a",
                    "--snapshot",
                    snap.to_str().unwrap(),
                ],
            ]
            .concat(),
        );
        assert_eq!(
            live.stdout.replace(
                r#""schedulerVersionFrom": "server""#,
                r#""schedulerVersionFrom": "snapshot""#
            ),
            offline.stdout,
            "{args:?}"
        );
        assert_eq!(live.code, offline.code, "{args:?}");
    }
    let gz = ws.path("snap.yaml.gz");
    let a = ws.run(
        &kc,
        &[
            "explain",
            "big",
            "-o",
            "json",
            "--snapshot",
            snap.to_str().unwrap(),
            "-n",
            "team-a",
        ],
    );
    let b = ws.run(
        &kc,
        &[
            "explain",
            "big",
            "-o",
            "json",
            "--snapshot",
            gz.to_str().unwrap(),
            "-n",
            "team-a",
        ],
    );
    assert_eq!(a.stdout, b.stdout);

    // --no-redact keeps everything.
    let raw = ws.path("raw.json");
    let run = ws.run(
        &kc,
        &["snapshot", "--file", raw.to_str().unwrap(), "--no-redact"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let text = std::fs::read_to_string(&raw).unwrap();
    assert!(
        text.contains("s3cr3t")
            && text.contains("last-applied-configuration")
            && text.contains("managedFields")
    );
    assert!(!text.contains("\"redacted\""));
}

#[test]
fn an_incomplete_snapshot_says_so_when_read_back() {
    let (server, ws, kc) = setup();
    server.fault(Fault::status("poddisruptionbudgets", 403));
    server.hide("leasecandidates");
    let out = ws.path("snap.json");
    let run = ws.run(&kc, &["snapshot", "-f", out.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stderr.trim(),
        "warning: cannot list poddisruptionbudgets (403 Forbidden): preemption ignores PDBs"
    );
    let objects = read_snapshot(&out);
    assert_eq!(
        objects
            .iter()
            .filter(|o| o["kind"] == "LeaseCandidate")
            .count(),
        0
    );
    let back = ws.run(
        &kc,
        &[
            "explain",
            "small",
            "--snapshot",
            out.to_str().unwrap(),
            "-n",
            "team-a",
        ],
    );
    assert!(
        back.stderr.contains(&format!(
            "warning: {} is incomplete: cannot list poddisruptionbudgets (403 Forbidden): preemption ignores PDBs",
            out.display()
        )),
        "{}",
        back.stderr
    );
    server.assert_only_gets();
}

/// The snapshot's objects other than its SnapshotInfo record (which says when it was taken).
fn snapshot_objects(path: &Path) -> Vec<Value> {
    read_snapshot(path)
        .into_iter()
        .filter(|o| o["kind"] != "SnapshotInfo")
        .collect()
}

#[test]
fn lists_arriving_in_small_frames_read_as_whole_ones() {
    let (server, ws, kc) = setup();
    let explain = ["explain", "-A", "-o", "json"];
    let whole = ws.run(&kc, &explain);
    let snap = ws.path("whole.json");
    assert_eq!(
        ws.run(&kc, &["snapshot", "-f", snap.to_str().unwrap()])
            .code,
        0
    );
    // Frames of a few bytes split items, strings and escapes anywhere; pages of two objects
    // come with continue tokens.
    for (frame, page) in [(1, None), (7, Some(2)), (64, None)] {
        server.list_frames(frame);
        if let Some(n) = page {
            server.max_page(n);
        }
        let framed = ws.run(&kc, &explain);
        assert_eq!(framed.code, whole.code, "{framed:?}");
        assert_eq!(framed.stdout, whole.stdout, "frames of {frame} bytes");
        for name in ["framed.json", "framed.yaml.gz"] {
            let out = ws.path(name);
            let run = ws.run(&kc, &["snapshot", "-f", out.to_str().unwrap()]);
            assert_eq!(run.code, 0, "{run:?}");
            assert_eq!(snapshot_objects(&out), snapshot_objects(&snap), "{name}");
        }
    }
    server.assert_only_gets();
}

#[test]
fn pods_are_read_as_protobuf_where_no_field_it_lacks_can_matter() {
    let (server, ws, kc) = setup();
    server.max_page(2);
    server.list_frames(3);
    let pod = ws.write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: new}\nspec:\n  containers: [{name: c, image: x, resources: {requests: {cpu: 500m}}}]\n");
    let pod = pod.to_str().unwrap();
    let snap = ws.path("snap.json");
    let commands: [&[&str]; 4] = [
        &["whatif", "-f", pod, "-o", "json"],
        &["explain", "-A", "-o", "json"],
        // Extenders are sent pods whole, and a snapshot is a faithful dump.
        &["whatif", "-f", pod, "-o", "json", "--call-extenders"],
        &["snapshot", "-f", snap.to_str().unwrap()],
    ];
    let pods_asked_as = |server: &ApiServer| {
        let lists = server.requests_to("/api/v1/pods");
        assert!(lists.len() >= 2, "paginated: {lists:?}");
        let accept: Vec<_> = lists.iter().map(|r| r.accept.clone()).collect();
        assert!(accept.windows(2).all(|w| w[0] == w[1]), "{accept:?}");
        accept[0].clone().unwrap_or_default()
    };
    let mut answers = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        server.clear_requests();
        let run = ws.run(&kc, command);
        // explain -A finds pods that fit nowhere.
        assert!(run.code <= 1, "{command:?}: {run:?}");
        let accept = pods_asked_as(&server);
        assert_eq!(
            accept.starts_with("application/vnd.kubernetes.protobuf, application/json"),
            i < 2,
            "{command:?}: {accept}"
        );
        // Nothing else is asked for as protobuf.
        for r in server.requests() {
            if r.path != "/api/v1/pods" {
                assert!(
                    !r.accept.unwrap_or_default().contains("protobuf"),
                    "{}",
                    r.path
                );
            }
        }
        answers.push(run);
    }
    // A server that answers JSON whatever it is asked gives the same answers.
    server.json_only();
    for (command, answer) in commands.iter().zip(&answers).take(2) {
        let run = ws.run(&kc, command);
        assert_eq!(run.code, answer.code, "{run:?}");
        assert_eq!(run.stdout, answer.stdout, "{command:?}");
    }
    server.assert_only_gets();
}

#[test]
fn a_snapshot_whose_pod_list_restarts_holds_each_pod_once() {
    let (server, ws, kc) = setup();
    let snap = ws.path("whole.json");
    assert_eq!(
        ws.run(&kc, &["snapshot", "-f", snap.to_str().unwrap()])
            .code,
        0
    );
    server.max_page(2);
    server.list_frames(5);
    server.fault(Fault::status("pods", 410).on(On::Continue).times(1));
    for name in ["restarted.json", "restarted.json.gz"] {
        let out = ws.path(name);
        let run = ws.run(&kc, &["snapshot", "-f", out.to_str().unwrap()]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(run.stdout.contains(": 3 nodes, 7 pods"), "{}", run.stdout);
        assert_eq!(snapshot_objects(&out), snapshot_objects(&snap), "{name}");
        server.clear_faults();
    }
    let first_pages = server
        .requests_to("/api/v1/pods")
        .iter()
        .filter(|r| r.param("continue").is_none())
        .count();
    assert_eq!(first_pages, 1 + 2 + 1, "the pod list started again once");
    server.assert_only_gets();
}

#[test]
fn a_list_broken_off_mid_answer_is_an_error_and_writes_nothing() {
    let (server, ws, kc) = setup();
    server.list_frames(16);
    server.break_lists("pods", 300);
    let run = ws.run(&kc, &["explain", "small"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(
        run.stderr.trim(),
        format!(
            "error: cannot reach the API server at {} (context \"test\"): the connection was closed (is the cluster up, and is this the right context?)",
            server.url()
        )
    );
    let out = ws.path("snap.json");
    let snapshot = ws.run(&kc, &["snapshot", "-f", out.to_str().unwrap()]);
    assert_eq!(snapshot.code, 3, "{snapshot:?}");
    assert_eq!(snapshot.stderr, run.stderr);
    assert!(!out.exists());
    let files: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("snapshot"))
        .collect();
    assert!(files.is_empty(), "{files:?}");
    server.assert_only_gets();
}

/// The fake server's watch, which the lease inspector builds on: initial events, changes after a
/// resourceVersion, 410 for compacted history, timeouts.
#[test]
fn the_fake_server_watches() {
    use futures::{StreamExt, TryStreamExt};
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{Api, WatchEvent, WatchParams};

    let server = ApiServer::start();
    server.load(&fixture());
    let ws = Workspace::new();
    let kc = ws.write(
        "config",
        &kubeconfig(&[ContextSpec::for_server("w", &server)], Some("w")),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let kubeconfig = kube::config::Kubeconfig::read_from(&kc).unwrap();
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        // The fake server is on loopback: never through a proxy from the environment.
        config.proxy_url = None;
        let client = kube::Client::try_from(config).unwrap();
        let leases: Api<Lease> = Api::namespaced(client, "kube-system");

        let start = server.resource_version().to_string();
        let stream = leases
            .watch(&WatchParams::default().timeout(5), &start)
            .await
            .unwrap();
        let mut stream = stream.boxed();
        let mut renewed: Value = server
            .object("leases", Some("kube-system"), "kube-scheduler")
            .unwrap();
        renewed["spec"]["holderIdentity"] = json!("cp-2_9a1c");
        renewed["apiVersion"] = json!("coordination.k8s.io/v1");
        renewed["kind"] = json!("Lease");
        server.apply(renewed);
        // Another namespace's lease is not this watch's business.
        server.delete("leases", Some("kube-node-lease"), "n1");
        match stream.try_next().await.unwrap() {
            Some(WatchEvent::Modified(l)) => assert_eq!(
                l.spec.unwrap().holder_identity.as_deref(),
                Some("cp-2_9a1c")
            ),
            other => panic!("expected a modification, got {other:?}"),
        }

        // From the start: the current objects as ADDED.
        let all: Api<Lease> = Api::all(leases.clone().into_client());
        let events: Vec<_> = all
            .watch(&WatchParams::default().timeout(1), "0")
            .await
            .unwrap()
            .collect()
            .await;
        let added = events
            .iter()
            .filter(|e| matches!(e, Ok(WatchEvent::Added(_))))
            .count();
        assert_eq!(added, 1, "{events:?}");

        // Compacted history.
        server.compact();
        let events: Vec<_> = leases
            .watch(&WatchParams::default().timeout(1), "1")
            .await
            .unwrap()
            .collect()
            .await;
        match events.first() {
            Some(Ok(WatchEvent::Error(e))) => assert_eq!(e.code, 410),
            other => panic!("expected 410, got {other:?}"),
        }
    });
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.param("watch") == Some("true"))
    );
}

/// The release modelled is the API server's unless `--scheduler-version` says otherwise; each
/// release decides as its own scheduler does.
#[test]
fn the_servers_version_chooses_the_release() {
    let (server, ws, kc) = setup();
    let explain = |pod: &str, extra: &[&str]| -> Value {
        let run = ws.run(&kc, &[&["explain", pod, "-o", "json"][..], extra].concat());
        assert!(matches!(run.code, 0 | 1), "{run:?}");
        run.json()
    };
    let balanced = |e: &Value| e["nodes"][0]["scores"]["NodeResourcesBalancedAllocation"].clone();

    let v134 = explain("big", &[]);
    assert_eq!(
        (&v134["schedulerVersion"], &v134["schedulerVersionFrom"]),
        (&json!("v1.34.1"), &json!("server"))
    );
    assert!(
        v134["message"]
            .as_str()
            .unwrap()
            .contains("untolerated taint {dedicated: gpu}"),
        "{}",
        v134["message"]
    );
    let small134 = explain("small", &[]);
    assert!(
        small134["nodes"][0]["scores"]
            .get("DynamicResources")
            .is_none()
    );

    server.git_version("v1.35.2+k3s1");
    let v135 = explain("big", &[]);
    assert_eq!(v135["schedulerVersion"], "v1.35.2");
    assert!(
        v135["message"]
            .as_str()
            .unwrap()
            .contains("1 node(s) had untolerated taint(s),"),
        "{}",
        v135["message"]
    );
    let small135 = explain("small", &[]);
    assert_eq!(small135["nodes"][0]["scores"]["DynamicResources"], 0);
    assert_eq!(balanced(&small135), balanced(&small134));

    server.git_version("v1.36.2-eks-4a2b");
    let small136 = explain("small", &[]);
    assert_eq!(small136["schedulerVersion"], "v1.36.2");
    assert_ne!(
        balanced(&small136),
        balanced(&small135),
        "1.36 scores the change in balance"
    );

    // The flag wins over the server.
    let flagged = explain("small", &["--scheduler-version", "1.34"]);
    assert_eq!(
        (
            &flagged["schedulerVersion"],
            &flagged["schedulerVersionFrom"]
        ),
        (&json!("v1.34.1"), &json!("flag"))
    );
    assert_eq!(flagged["nodes"], small134["nodes"]);

    // A release outside the window is refused, not approximated.
    server.git_version("v1.33.5");
    let run = ws.run(&kc, &["explain", "small"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("the cluster reports v1.33.5")
            && run.stderr.contains("--scheduler-version"),
        "{}",
        run.stderr
    );
    let run = ws.run(&kc, &["explain", "small", "--scheduler-version", "1.36"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("kube-scheduler v1.36.2 (--scheduler-version)"),
        "{}",
        run.stdout
    );
}

/// Live, selectors go to the API server as kubectl sends them (labelSelector, fieldSelector),
/// a workload's pods are found through its controllers listed in its namespace, a name not
/// found in the namespace is looked up across namespaces once, and the plugin's completer
/// lists names from the cluster.
#[test]
fn selectors_workloads_hints_and_completion_ask_the_api_server() {
    let server = ApiServer::start();
    server.load(&repo().join("fixtures/clusters/workloads.yaml"));
    let ws = Workspace::new();
    let kc = ws.write(
        "config",
        &kubeconfig(&[ContextSpec::for_server("test", &server)], Some("test")),
    );
    let pods = |run: &Run| -> Vec<String> {
        run.json()["pods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["pod"].as_str().unwrap().to_string())
            .collect()
    };
    let run = ws.run(
        &kc,
        &[
            "explain",
            "-l",
            "app=web,pod-template-hash notin (7b9c2)",
            "-o",
            "json",
        ],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(pods(&run), ["shop/web-6d4f8-r5t9z"]);
    assert!(
        server.requests_to("/api/v1/pods").iter().any(|r| {
            r.param("labelSelector") == Some("app=web,pod-template-hash notin (7b9c2)")
        }),
        "{:?}",
        server.requests_to("/api/v1/pods")
    );
    server.clear_requests();
    let run = ws.run(
        &kc,
        &[
            "explain",
            "--field-selector",
            "spec.restartPolicy=Never",
            "-n",
            "batch",
            "-o",
            "json",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(pods(&run), ["batch/nightly-29260800-x7k2p"]);
    assert!(
        server
            .requests_to("/api/v1/namespaces/batch/pods")
            .iter()
            .any(|r| r.param("fieldSelector") == Some("spec.restartPolicy=Never")),
        "{:?}",
        server.requests()
    );

    let run = ws.run(&kc, &["explain", "deploy/web", "-n", "shop", "-o", "json"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.json()["groups"].as_array().unwrap().len(), 2);
    assert!(
        !server
            .requests_to("/apis/apps/v1/namespaces/shop/deployments")
            .is_empty()
    );
    let run = ws.run(&kc, &["explain", "cj/nightly", "-n", "batch", "-o", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.json()["groups"][0]["pods"],
        json!(["batch/nightly-29260800-x7k2p"])
    );

    server.clear_requests();
    let run = ws.run(&kc, &["explain", "web-6d4f8-r5t9z"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains(
            "pod \"web-6d4f8-r5t9z\" not found in namespace \"default\"; found in namespace shop: add -n shop"
        ),
        "{run:?}"
    );
    let lookups: Vec<_> = server
        .requests_to("/api/v1/pods")
        .into_iter()
        .filter(|r| r.param("fieldSelector") == Some("metadata.name=web-6d4f8-r5t9z"))
        .collect();
    assert_eq!(lookups.len(), 1, "{:?}", server.requests());

    let complete = |words: &[&str]| -> String {
        let out = ws
            .command("kubectl_complete-sched_explain", Some(&kc))
            .args(words)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        complete(&["-n", "shop", "web-7b"]),
        "web-7b9c2-a1b2c\nweb-7b9c2-d3e4f\n:4\n"
    );
    assert_eq!(complete(&["-n", "sh"]), "shop\n:4\n");
    assert_eq!(complete(&["-n", "batch", "cj/"]), "cj/nightly\n:4\n");
    server.assert_only_gets();
}
