//! `kubectl-sched lease` on the incident snapshot fixtures/clusters/leases.yaml, where "now" is
//! the time the snapshot was taken: golden views, structured output and the errors.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn leases() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/clusters/leases.yaml")
        .display()
        .to_string()
}

fn run(args: &[&str], columns: &str, colour: bool) -> (i32, String, String) {
    let mut c = Command::cargo_bin("kubectl-sched").unwrap();
    c.env("COLUMNS", columns).env("TERM", "xterm");
    if colour {
        c.env_remove("NO_COLOR").arg("--color=always");
    } else {
        c.env("NO_COLOR", "1");
    }
    let out = c
        .arg("lease")
        .args(["--snapshot", &leases()])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Columns a line takes on a terminal: colour codes take none, `…` and `—` one each.
fn shown_width(line: &str) -> usize {
    let mut n = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|c| c.is_ascii_alphabetic());
        } else {
            n += 1;
        }
    }
    n
}

/// Every view, golden, at 80 and 200 columns, with colour and without; within the width
/// unless wide.
#[test]
fn every_view_at_80_and_200_columns_with_and_without_colour() {
    let views: [(&str, &[&str]); 4] = [
        ("listing", &[]),
        ("listing_wide", &["-o", "wide"]),
        ("detail_scheduler", &["lease/kube-scheduler"]),
        ("nodes", &["--nodes"]),
    ];
    for (view, args) in views {
        for columns in ["80", "200"] {
            for colour in [false, true] {
                let (code, out, err) = run(args, columns, colour);
                assert_eq!(code, 0, "{view}: {err}");
                assert!(err.is_empty(), "{view}: {err}");
                assert_eq!(out.contains('\u{1b}'), colour, "{view}");
                if !args.contains(&"wide") {
                    let limit: usize = columns.parse().unwrap();
                    for line in out.lines() {
                        assert!(shown_width(line) <= limit, "{view} at {columns}: {line:?}");
                    }
                }
                let name = format!(
                    "lease_{view}_{columns}{}",
                    if colour { "_colour" } else { "" }
                );
                insta::assert_snapshot!(name, out);
            }
        }
    }
}

#[test]
fn the_listing_shows_every_leader_lease_and_what_is_wrong() {
    let (code, out, err) = run(&[], "80", false);
    assert_eq!(code, 0, "{err}");
    for lease in [
        "cert-manager-controller",
        "ingress-nginx-leader",
        "cloud-controller-manager",
        "kube-controller-manager",
        "kube-scheduler",
    ] {
        assert!(out.contains(lease), "{out}");
    }
    // Node heartbeats are not leader elections.
    assert!(!out.contains("kube-node-lease"));
    // An identity is never split over lines: it is whole in the notes, cut in the table.
    let (_, detail, _) = run(&["lease/kube-scheduler"], "80", false);
    assert!(detail.contains("cp-3_0b1c2d3e-5678-4a9b-8c7d-6e5f4a3b2c1d is the strategy's choice"));
    assert!(
        detail.contains("cp-1_7d6c5b4a-aaaa-4bbb-8ccc-11…"),
        "{detail}"
    );
}

#[test]
fn the_wide_listing_names_identities_pods_and_nodes() {
    let (code, out, err) = run(&["-o", "wide"], "80", false);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("ingress-nginx/ingress-nginx-controller-6c9f7d-x2x8k"),
        "{out}"
    );
}

#[test]
fn colours_mark_the_statuses_and_no_color_removes_them() {
    let (_, coloured, _) = run(&[], "80", true);
    assert!(
        coloured.contains("\u{1b}[31mExpired\u{1b}[39m"),
        "{coloured}"
    );
    assert!(
        coloured.contains("\u{1b}[32mHealthy\u{1b}[39m"),
        "{coloured}"
    );
    let (_, plain, _) = run(&[], "80", false);
    assert!(!plain.contains('\u{1b}'));
}

#[test]
fn one_lease_in_detail_spells_out_the_takeover_rules_and_candidates() {
    // A namespaced reference and the plugin's own timings.
    let (code, out, _) = run(
        &[
            "kube-system/kube-controller-manager",
            "--renew-deadline",
            "20s",
            "--retry-period",
            "5s",
        ],
        "200",
        false,
    );
    assert_eq!(code, 0);
    assert!(out.contains("Renewing late"), "{out}");
    assert!(out.contains("The leader renews every 5s (retryPeriod); if it cannot renew within 20s (renewDeadline)"), "{out}");
    assert!(
        out.contains("renewTime + retryPeriod 5s + renewDeadline 20s"),
        "{out}"
    );
    assert!(
        out.contains(
            "A standby takes over only after it has seen the same record, unchanged, for 15s"
        ),
        "{out}"
    );
}

#[test]
fn node_heartbeats_list_the_stale_kubelets_stalest_first() {
    let (code, out, err) = run(&["--nodes"], "80", false);
    assert_eq!(code, 0, "{err}");
    let stale: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("w-"))
        .collect();
    assert_eq!(stale, ["w-3", "w-4"], "{out}");
    let (_, out, _) = run(&["--nodes", "--node-grace-period", "40s"], "80", false);
    assert!(out.contains("in 20s"), "{out}");
}

#[test]
fn json_and_yaml_carry_every_derived_fact() {
    let (code, out, err) = run(&["-o", "json"], "80", false);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["clock"]["now"], "2026-11-23T10:00:00Z");
    assert_eq!(v["clock"]["source"], "Snapshot");
    assert_eq!(v["timings"]["renewDeadline"], 10.0);
    let by_name = |name: &str| {
        v["leases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == name)
            .unwrap()
            .clone()
    };
    let ccm = by_name("cloud-controller-manager");
    assert_eq!(ccm["status"], "Expired");
    assert_eq!(ccm["expiredForSeconds"], 95.0);
    assert_eq!(
        ccm["holderPod"],
        "kube-system/cloud-controller-manager-cp-3"
    );
    assert_eq!(ccm["holderNode"], "cp-3");
    let kcm = by_name("kube-controller-manager");
    assert_eq!(kcm["status"], "RenewingLate");
    assert_eq!(kcm["takeoverInSeconds"], 7.0);
    assert_eq!(kcm["holderGivesUpAt"], "2026-11-23T10:00:04Z");
    let sched = by_name("kube-scheduler");
    assert_eq!(
        sched["election"]["preferred"],
        "cp-3_0b1c2d3e-5678-4a9b-8c7d-6e5f4a3b2c1d"
    );
    assert_eq!(by_name("cert-manager-controller")["status"], "Released");
    assert_eq!(
        by_name("ingress-nginx-leader")["holderPod"],
        "ingress-nginx/ingress-nginx-controller-6c9f7d-x2x8k"
    );

    let (code, out, _) = run(&["--nodes", "-o", "yaml"], "80", false);
    assert_eq!(code, 0);
    assert!(out.contains("node: w-3"), "{out}");
    assert!(out.contains("notReadyInSeconds: -90.0"), "{out}");
}

#[test]
fn errors_name_what_is_wrong() {
    let (code, _, err) = run(&["lease/nope"], "80", false);
    assert_eq!(code, 2);
    assert_eq!(err, "error: leases \"nope\" not found in any namespace\n");
    let (code, _, err) = run(&["-n", "default", "kube-scheduler"], "80", false);
    assert_eq!(code, 2);
    assert!(err.contains("not found in namespace \"default\""), "{err}");
    let (code, _, err) = run(&["--watch"], "80", false);
    assert_eq!(code, 2);
    assert!(err.contains("--watch needs a live cluster"), "{err}");
    let (code, _, err) = run(&["--retry-period", "soon"], "80", false);
    assert_eq!(code, 2);
    assert!(err.contains("invalid --retry-period \"soon\""), "{err}");
}

#[test]
fn the_plugin_binary_is_the_lease_command() {
    let out = Command::cargo_bin("kubectl-sched_lease")
        .unwrap()
        .env("NO_COLOR", "1")
        .env("COLUMNS", "80")
        .args(["--snapshot", &leases(), "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["leases"].as_array().unwrap().len(), 5);
}
