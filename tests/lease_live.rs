//! `kubectl-sched lease` against the fake API server (tests/support/apiserver.rs): the server's
//! clock, holder matching, what is asked of the server, and `--watch` through a holder change,
//! watch expiry and compacted history. Every test also checks the tool sent nothing but GETs.

mod support;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use support::Workspace;
use support::apiserver::{ApiServer, Fault, On};

/// The server's clock runs five minutes behind the test machine's.
const SKEW: Duration = Duration::from_secs(300);

fn server_now() -> Timestamp {
    Timestamp::now() - SignedDuration::try_from(SKEW).unwrap()
}

fn micro(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

fn lease(
    ns: &str,
    name: &str,
    holder: &str,
    renewed_ago: i64,
    duration: i32,
    transitions: i32,
) -> Value {
    let renew = server_now() - SignedDuration::from_secs(renewed_ago);
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"namespace": ns, "name": name},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration,
                 // Renewals keep acquireTime: a new one means a new acquisition.
                 "acquireTime": format!("2026-01-01T00:00:{transitions:02}.000000Z"),
                 "renewTime": micro(renew), "leaseTransitions": transitions},
    })
}

fn setup() -> (ApiServer, Workspace, PathBuf) {
    let (server, ws, kc) = support::fixture_server();
    server.clock_skew(SKEW, false);
    server.apply(lease(
        "kube-system",
        "kube-scheduler",
        "cp-1_4f7e",
        1,
        15,
        3,
    ));
    server.apply(lease("kube-node-lease", "n1", "n1", 2, 40, 0));
    server.apply(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "kube-system", "name": "kube-scheduler-cp-1", "uid": "ks1"},
        "spec": {"nodeName": "cp-1", "hostNetwork": true, "containers": [{"name": "s", "image": "k"}]},
        "status": {"phase": "Running"},
    }));
    (server, ws, kc)
}

#[test]
fn leases_are_measured_by_the_servers_clock_and_holders_matched() {
    let (server, ws, kc) = setup();
    let run = ws.run(&kc, &["lease", "-o", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let v = run.json();
    // By the local clock the lease was renewed five minutes ago and long expired.
    assert_eq!(v["clock"]["source"], "Server");
    let skew = v["clock"]["skew"].as_f64().unwrap();
    assert!((-301.5..=-298.5).contains(&skew), "{skew}");
    let leases = v["leases"].as_array().unwrap();
    assert_eq!(leases.len(), 1, "node heartbeats are left out: {leases:?}");
    let l = &leases[0];
    assert_eq!(l["status"], "Healthy", "{l}");
    assert_eq!(l["holderPod"], "kube-system/kube-scheduler-cp-1");
    assert_eq!(l["holderNode"], "cp-1");
    // The fixture's candidate stopped renewing in 2025: expired, so nobody is preferred.
    assert_eq!(l["election"]["candidates"][0]["state"], "Expired");

    let table = ws.run(&kc, &["lease"]);
    assert_eq!(table.code, 0, "{table:?}");
    assert!(
        table
            .stdout
            .contains("note: the local clock is 5m0s ahead of the API server's"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("Healthy"), "{}", table.stdout);

    server.assert_only_gets();
    let lists = server.requests_to("/apis/coordination.k8s.io/v1/leases");
    assert!(
        lists
            .iter()
            .all(|r| r.param("fieldSelector") == Some("metadata.namespace!=kube-node-lease")),
        "{lists:?}"
    );
    // Pods only of the namespaces that hold leader leases; nothing else of the cluster.
    assert!(
        !server
            .requests_to("/api/v1/namespaces/kube-system/pods")
            .is_empty()
    );
    assert!(server.requests_to("/api/v1/pods").is_empty());
    assert!(server.requests_to("/api/v1/nodes").is_empty());
}

#[test]
fn node_heartbeats_read_nodes_and_a_named_lease_is_asked_for_by_name() {
    let (server, ws, kc) = setup();
    server.apply(lease("kube-node-lease", "n2", "n2", 45, 40, 0));
    let run = ws.run(&kc, &["lease", "--nodes", "-o", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let nodes = run.json()["nodes"].as_array().unwrap().clone();
    // Stalest first: a node without any heartbeat lease, then the oldest renewal.
    assert_eq!(nodes[0]["node"], "n3", "{nodes:?}");
    assert_eq!(nodes[0]["status"], "Unknown");
    assert_eq!(nodes[1]["node"], "n2", "{nodes:?}");
    assert_eq!(nodes[1]["status"], "Expired");
    assert!(
        !server
            .requests_to("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
            .is_empty()
    );
    assert!(!server.requests_to("/api/v1/nodes").is_empty());

    server.clear_requests();
    let run = ws.run(&kc, &["lease", "lease/kube-scheduler"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("When could someone else take over?"),
        "{}",
        run.stdout
    );
    let asked = server.requests_to("/apis/coordination.k8s.io/v1/leases");
    assert_eq!(
        asked[0].param("fieldSelector"),
        Some("metadata.name=kube-scheduler")
    );
    server.assert_only_gets();
}

#[test]
fn forbidden_leases_name_the_permission_needed() {
    let (server, ws, kc) = setup();
    server.fault(Fault::status("leases", 403));
    let run = ws.run(&kc, &["lease"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr
            .contains("may not list leases in all namespaces (403 Forbidden)")
            && run.stderr.contains("\"list\" and \"watch\" on \"leases\""),
        "{}",
        run.stderr
    );
    server.clear_faults();
    // Unreadable pods cost only the holder's pod.
    server.fault(Fault::status("pods", 403));
    let run = ws.run(&kc, &["lease", "-o", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains(
            "cannot list pods (403 Forbidden): lease holders are not matched to their pods"
        ),
        "{}",
        run.stderr
    );
}

/// The watch's stdout, line by line, as it arrives.
struct Watch {
    child: Child,
    lines: Receiver<String>,
}

impl Watch {
    fn start(ws: &Workspace, kc: &std::path::Path, args: &[&str]) -> Watch {
        let mut child = ws
            .command("kubectl-sched", Some(kc))
            .args(["lease", "--watch"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the watch");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watch { child, lines }
    }

    /// The next line of an event, skipping others, within `timeout`.
    fn next_event(&self, event: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let v: Value = serde_json::from_str(&line).expect("one JSON object per line");
                    if v["event"] == event {
                        return v;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!("no {event} event within {timeout:?}"),
                Err(RecvTimeoutError::Disconnected) => panic!("the watch ended before {event}"),
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_watch_is_a_timeline_through_holder_changes_reconnects_and_expired_history() {
    let (server, ws, kc) = setup();
    // Watches end after a second, so the tool keeps resuming from the last version it saw.
    server.max_watch(Duration::from_secs(1));
    let watch = Watch::start(&ws, &kc, &["-o", "json", "--renewals"]);
    let watches = || {
        server
            .requests_to("/apis/coordination.k8s.io/v1/leases")
            .iter()
            .filter(|r| r.param("watch") == Some("true"))
            .count()
    };
    wait_for("the first watch", || watches() >= 1);

    server.apply(lease(
        "kube-system",
        "kube-scheduler",
        "cp-1_4f7e",
        0,
        15,
        3,
    ));
    let renewed = watch.next_event("Renewed", Duration::from_secs(10));
    assert_eq!(renewed["name"], "kube-scheduler");

    // A holder change mid-watch, after at least one reconnect.
    let before = watches();
    wait_for("a reconnect", || watches() > before);
    server.apply(lease(
        "kube-system",
        "kube-scheduler",
        "cp-2_77aa",
        0,
        15,
        4,
    ));
    let changed = watch.next_event("HolderChanged", Duration::from_secs(10));
    assert_eq!(
        changed["message"],
        "leader changed: cp-1_4f7e → cp-2_77aa (leaseTransitions 3 → 4)"
    );
    assert_eq!(changed["holder"], "cp-2_77aa");
    assert_eq!(changed["fromRelist"], false, "{changed}");
    // Times are the server's: five minutes behind this machine.
    let at: Timestamp = changed["time"].as_str().unwrap().parse().unwrap();
    let behind = Timestamp::now().duration_since(at);
    assert!(behind > SignedDuration::from_secs(295), "{behind:?}");

    // The next watch is held up while the lease changes twice and the history is compacted: the
    // tool lists again and reports what it missed, folded into one line.
    server.fault(
        Fault::delay("leases", Duration::from_millis(1500))
            .on(On::Watch)
            .times(1),
    );
    let before = watches();
    wait_for("the delayed watch", || watches() > before);
    server.apply(lease(
        "kube-system",
        "kube-scheduler",
        "cp-3_0c0c",
        0,
        15,
        5,
    ));
    server.apply(lease(
        "kube-system",
        "kube-scheduler",
        "cp-1_5e5e",
        0,
        15,
        6,
    ));
    server.compact();
    let relisted = watch.next_event("HolderChanged", Duration::from_secs(10));
    assert_eq!(relisted["fromRelist"], true, "{relisted}");
    assert_eq!(
        relisted["message"],
        "leader changed: cp-2_77aa → cp-1_5e5e (leaseTransitions 4 → 6: 2 changes while the watch was away)"
    );

    // Silence: the holder stops renewing, and the tool says so by the clock.
    let late = watch.next_event("MissedRenewal", Duration::from_secs(10));
    assert_eq!(late["holder"], "cp-1_5e5e");
    drop(watch);
    server.assert_only_gets();
    let w = server.requests_to("/apis/coordination.k8s.io/v1/leases");
    assert!(
        w.iter()
            .filter(|r| r.param("watch") == Some("true"))
            .all(|r| r.param("fieldSelector") == Some("metadata.namespace!=kube-node-lease"))
    );
}

#[test]
fn the_watch_ends_after_the_request_timeout_as_kubectl_get_w_does() {
    let (server, ws, kc) = setup();
    let started = Instant::now();
    let out = ws
        .command("kubectl-sched", Some(&kc))
        .args(["lease", "--watch", "--request-timeout", "2s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(started.elapsed() >= Duration::from_secs(2));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("Watching 1 lease(s)"), "{stdout}");
    server.assert_only_gets();
}

#[test]
fn a_failing_watch_says_so_retries_and_loses_nothing() {
    let (server, ws, kc) = setup();
    server.max_watch(Duration::from_secs(1));
    // The first watch is answered 410 outright (history gone): the tool lists again. Then two
    // watch requests fail (500: kube's client itself retries 503s), as while an API server
    // restarts.
    server.fault(Fault::status("leases", 410).on(On::Watch).times(1));
    let watch = Watch::start(&ws, &kc, &["-o", "json"]);
    let lists = || {
        server
            .requests_to("/apis/coordination.k8s.io/v1/leases")
            .iter()
            .filter(|r| r.param("watch").is_none())
            .count()
    };
    wait_for("the list after 410", || lists() >= 2);
    server.clear_faults();
    server.fault(Fault::status("leases", 500).on(On::Watch).times(2));
    let lost = watch.next_event("WatchLost", Duration::from_secs(10));
    assert!(
        lost["message"]
            .as_str()
            .unwrap()
            .starts_with("watch lost, retrying:"),
        "{lost}"
    );
    // What changes while the watch is down is reported once it is back.
    server.apply(lease(
        "kube-system",
        "kube-scheduler",
        "cp-9_abcd",
        0,
        15,
        4,
    ));
    watch.next_event("WatchResumed", Duration::from_secs(15));
    let changed = watch.next_event("HolderChanged", Duration::from_secs(10));
    assert_eq!(changed["holder"], "cp-9_abcd");
    drop(watch);
    server.assert_only_gets();
}
