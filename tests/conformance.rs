//! Runs every case of `fixtures/conformance` through the real binary, exactly as a user would,
//! once per release a real scheduler decided it for (`expected.json` by v1.34.1,
//! `expected-v1.35.json` by v1.35.4, `expected-v1.36.json` by v1.36.2, `expected-v1.36.3.json`
//! by v1.36.3), and compares. Each case and release is a test of its own, named
//! `<case>@<release>`: `cargo test --test conformance -- dra-first-available@v1.36.3` runs one,
//! and they run in parallel. After the run, one line gives the pass count per release.
//!
//! Cases that cannot pass yet are listed in `tests/conformance_known_failures.txt` with the missing
//! piece (`case: why` for every release, `case@v1.36.3: why` for one); a test fails if its case
//! fails unlisted or passes listed, and the list fails if an entry names no case.
//!
//! Every run also checks the facts behind the reasons against the case (`conformance/facts.rs`).
//!
//! A case whose configuration has extenders runs with `--call-extenders` against the fake
//! extender of the fixtures' README (`support::extender`), started for each run.
//!
//! Each case also runs with `--compare-to` between releases decided by real schedulers (1.34 and
//! 1.35, 1.35 and 1.36, v1.36.2 and v1.36.3), as `compare:<case>@<base>..<other>`: the
//! differences it reports must be exactly those between the two expected files, computed here.

#[path = "conformance/facts.rs"]
mod facts;
#[path = "conformance/suggestions.rs"]
mod suggestions;
mod support;

use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use support::extender::{FakeExtender, Recorded};

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance")
}

fn known_failures() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance_known_failures.txt"),
    )
    .unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, why) = l.split_once(':').unwrap_or((l, ""));
            (name.trim().to_string(), why.trim().to_string())
        })
        .collect()
}

/// Reason lists of several "Insufficient …" come in Go map order upstream: compare as sets there.
fn normalise_reasons(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                if k == "reasons"
                    && let Value::Array(items) = child
                    && items
                        .iter()
                        .all(|i| i.as_str().is_some_and(|s| s.starts_with("Insufficient ")))
                {
                    items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                }
                normalise_reasons(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalise_reasons),
        _ => {}
    }
}

/// Our explanation, reshaped into the conformance format.
fn reshape(ours: &Value, expected: &Value) -> Value {
    let nodes = ours["nodes"].as_array().cloned().unwrap_or_default();
    let mut filter = Map::new();
    let mut all_filters = Map::new();
    let mut scores = Map::new();
    // A cycle that failed with an error leaves no per-node verdicts upstream.
    let errored = !ours["error"].is_null();
    for n in &nodes {
        let name = n["name"].as_str().unwrap_or("").to_string();
        if n["stage"] == "Filter" && !errored {
            filter.insert(
                name.clone(),
                json!({"plugin": n["plugin"], "code": n["code"], "reasons": n["reasons"]}),
            );
            // A node only an extender rejected has no failing Filter plugin.
            if n["allReasons"].as_object().is_some_and(|m| !m.is_empty()) {
                all_filters.insert(name.clone(), n["allReasons"].clone());
            }
        }
        if n["feasible"] == true {
            scores.insert(name, json!({"plugins": n["scores"], "total": n["total"]}));
        }
    }
    let preemption = match &ours["preemption"] {
        Value::Null => Value::Null,
        p => {
            // The real scheduler picks one of the tied candidates arbitrarily; any of them is right.
            let tied = expected["preemption"]["tiedNodes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let nominated = if tied.contains(&p["nominatedNode"]) {
                expected["preemption"]["nominatedNode"].clone()
            } else {
                p["nominatedNode"].clone()
            };
            let victims = if nominated == p["nominatedNode"] {
                p["victims"].clone()
            } else {
                // Victims of the node the expectation names, from our candidate list.
                let mut v: Vec<Value> = p["candidates"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|c| c["node"] == nominated)
                    .flat_map(|c| c["victims"].as_array().cloned().unwrap_or_default())
                    .map(|v| v["pod"].clone())
                    .collect();
                v.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                Value::Array(v)
            };
            json!({"nominatedNode": nominated, "victims": victims, "message": p["message"], "tiedNodes": p["tiedNodes"]})
        }
    };
    let mut out = json!({
        "pod": ours["pod"],
        "priority": ours["priority"],
        "numNodes": ours["numNodes"],
        "prefilter": ours["prefilter"],
        "filter": filter,
        "allFilters": all_filters,
        "feasible": ours["feasible"],
        "scores": scores,
        "scoringSkipped": ours["scoringSkipped"],
        "selected": ours["selected"],
        "message": ours["message"],
        "messageBeforePostFilter": ours["messageBeforePostFilter"],
        "preemption": preemption,
    });
    if expected.get("extenderCalls").is_some() {
        // The calls kube-scheduler makes: not those made only to show skipped scores.
        let calls: Vec<Value> = ours["extenderCalls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["displayOnly"] != true)
            .map(|c| json!({"extender": c["extender"], "verb": c["verb"], "nodes": c["nodes"]}))
            .collect();
        out["extenderCalls"] = Value::Array(calls);
    }
    // The cases record an allocation only where one was made; our schema always has the map.
    if let Some(allocation) = ours
        .get("draAllocation")
        .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
    {
        out["draAllocation"] = allocation.clone();
    }
    normalise_reasons(&mut out);
    out
}

/// Every call our output reports must be one the fake received, and the other way round.
fn calls_match_fake(ours: &Value, fake: &FakeExtender) -> Result<(), String> {
    let mut reported: Vec<Recorded> = ours["extenderCalls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| Recorded {
            extender: c["extender"].as_str().unwrap_or_default().to_string(),
            verb: c["verb"].as_str().unwrap_or_default().to_string(),
            nodes: c["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|n| n.as_str().unwrap_or_default().to_string())
                .collect(),
        })
        .collect();
    let mut received = fake.requests();
    // Prioritize calls run concurrently: the fake may receive them in any order.
    let key = |r: &Recorded| (r.extender.clone(), r.verb.clone(), r.nodes.clone());
    reported.sort_by_key(key);
    received.sort_by_key(key);
    if reported == received {
        Ok(())
    } else {
        Err(format!(
            "  the fake extender received {received:?}\n  but the output reports {reported:?}"
        ))
    }
}

fn extenders_configured(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("config.yaml"))
        .ok()
        .and_then(|config| serde_saphyr::from_str::<Value>(&config).ok())
        .is_some_and(|c| c["extenders"].as_array().is_some_and(|e| !e.is_empty()))
}

/// The fake extender for a case whose configuration has extenders, and that configuration
/// pointed at it.
fn fake_extender(dir: &Path) -> Option<(FakeExtender, tempfile::NamedTempFile)> {
    if !extenders_configured(dir) {
        return None;
    }
    let config = std::fs::read_to_string(dir.join("config.yaml")).ok()?;
    let answers = std::fs::read_to_string(dir.join("extenders.yaml")).unwrap_or_default();
    let fake = FakeExtender::start(&config, &answers);
    let mut file = tempfile::NamedTempFile::new().expect("temporary config");
    std::io::Write::write_all(&mut file, fake.configure(&config).as_bytes())
        .expect("write the temporary config");
    Some((fake, file))
}

fn diff(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (k, e) in expected.as_object().into_iter().flatten() {
        let a = &actual[k];
        if a != e {
            out.push(format!("  {k}:\n    expected {}\n    actual   {}", e, a));
        }
    }
    // Absent from the expectation means nothing was allocated.
    if expected.get("draAllocation").is_none() && actual.get("draAllocation").is_some() {
        out.push(format!(
            "  draAllocation:\n    expected none\n    actual   {}",
            actual["draAllocation"]
        ));
    }
    out
}

/// The reference runs: expectation file, and the release that decided it.
const RELEASES: [(&str, &str); 4] = [
    ("expected.json", "v1.34.1"),
    ("expected-v1.35.json", "v1.35.4"),
    ("expected-v1.36.json", "v1.36.2"),
    ("expected-v1.36.3.json", "v1.36.3"),
];

/// What `whatif` printed on a case, its output as a string with the fake extender's URLs
/// anonymised, and the fake (for the calls it received).
type CaseRun = (std::process::Output, String, Option<FakeExtender>);

/// Runs `whatif` on a case with `flags`, as JSON: with its configuration, and the fake extender
/// it calls when it has extenders.
fn whatif_case(dir: &Path, flags: &[&str]) -> Result<CaseRun, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-sched"));
    cmd.arg("whatif")
        .args(flags)
        .arg("--snapshot")
        .arg(dir.join("cluster.yaml"))
        .arg("-f")
        .arg(dir.join("pod.yaml"))
        .arg("-o")
        .arg("json");
    let fake = fake_extender(dir);
    match &fake {
        Some((_, config)) => {
            cmd.arg("--call-extenders")
                .arg("--config")
                .arg(config.path());
        }
        None if dir.join("config.yaml").exists() => {
            cmd.arg("--config").arg(dir.join("config.yaml"));
        }
        None => {}
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run the binary: {e}"))?;
    let mut stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if let Some((fake, _)) = &fake {
        stdout = fake.anonymise(&stdout);
    }
    Ok((out, stdout, fake.map(|(f, _)| f)))
}

fn run_case(dir: &Path, expected_file: &str, release: &str, serial: bool) -> Result<(), String> {
    let serial = if serial { &["--serial"][..] } else { &[] };
    let (out, stdout, fake) = whatif_case(
        dir,
        &[&["--scheduler-version", release][..], serial].concat(),
    )?;
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(format!(
            "exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let ours: Value =
        serde_json::from_str(&stdout).map_err(|e| format!("output is not JSON: {e}"))?;
    if ours["schedulerVersion"] != release {
        return Err(format!(
            "modelled {} instead of {release}",
            ours["schedulerVersion"]
        ));
    }
    let mut expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(expected_file)).unwrap()).unwrap();
    normalise_reasons(&mut expected);
    let actual = reshape(&ours, &expected);
    let mut d = diff(&expected, &actual);
    if serial.is_empty() {
        d.extend(
            facts::check(&facts::Case::read(dir), &ours)
                .into_iter()
                .map(|p| format!("  facts: {p}")),
        );
    }
    if let Some(fake) = &fake
        && let Err(e) = calls_match_fake(&ours, fake)
    {
        d.push(e);
    }
    if d.is_empty() {
        Ok(())
    } else {
        Err(d.join("\n"))
    }
}

/// Runs a case under one release; on the newest reference also with `--serial`, as parallel
/// filtering and scoring must decide exactly as serial and that does not depend on the release.
fn check(dir: &Path, file: &str, release: &str) -> Result<(), String> {
    run_case(dir, file, release, false)?;
    if release == RELEASES[RELEASES.len() - 1].1 {
        run_case(dir, file, release, true).map_err(|e| format!("with --serial:\n{e}"))?;
    }
    Ok(())
}

/// The release pairs `--compare-to` runs on: base, then other.
const COMPARED: [(usize, usize); 3] = [(0, 1), (1, 2), (2, 3)];

/// A case's answer under one release as its expected file records it, in the terms
/// `--compare-to` reports differences in: preemption's nominated node as the tie set
/// kube-scheduler picks from (victims only without a tie).
fn recorded_answer(expected: &Value) -> Value {
    let mut a = expected.clone();
    let m = a.as_object_mut().unwrap();
    for k in ["pod", "priority", "numNodes", "extenderCalls"] {
        m.remove(k);
    }
    if let Some(p) = expected["preemption"].as_object() {
        let tied = p["tiedNodes"].as_array().cloned().unwrap_or_default();
        let nominated: Vec<Value> = if tied.is_empty() {
            [&p["nominatedNode"]]
                .into_iter()
                .filter(|n| n.as_str().is_some_and(|s| !s.is_empty()))
                .cloned()
                .collect()
        } else {
            tied
        };
        let victims = if nominated.len() == 1 {
            p["victims"].clone()
        } else {
            Value::Null
        };
        m.insert(
            "preemption".into(),
            json!({"nominatedNodes": nominated, "victims": victims, "message": p["message"]}),
        );
    }
    normalise_reasons(&mut a);
    a
}

/// What differs between two recorded answers: a field as `{base, other}`, per node for
/// `filter` and `allFilters`, per node and plugin (and `total`) for `scores`.
fn recorded_differences(a: &Value, b: &Value) -> Map<String, Value> {
    fn keyed(a: &Value, b: &Value, f: &dyn Fn(&Value, &Value) -> Value) -> Map<String, Value> {
        let empty = Map::new();
        let (ma, mb) = (
            a.as_object().unwrap_or(&empty),
            b.as_object().unwrap_or(&empty),
        );
        let keys: std::collections::BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
        keys.into_iter()
            .filter_map(|k| {
                let (x, y) = (
                    ma.get(k).unwrap_or(&Value::Null),
                    mb.get(k).unwrap_or(&Value::Null),
                );
                (x != y).then(|| (k.clone(), f(x, y)))
            })
            .collect()
    }
    let both = |x: &Value, y: &Value| json!({"base": x, "other": y});
    keyed(a, b, &|x, y| json!({"base": x, "other": y}))
        .into_iter()
        .map(|(k, v)| {
            let (x, y) = (&v["base"], &v["other"]);
            let v = match k.as_str() {
                "filter" | "allFilters" => Value::Object(keyed(x, y, &both)),
                "scores" => Value::Object(keyed(x, y, &|p, q| {
                    let flat = |s: &Value| {
                        let mut m = s["plugins"].as_object().cloned().unwrap_or_default();
                        m.insert("total".into(), s["total"].clone());
                        Value::Object(m)
                    };
                    Value::Object(keyed(&flat(p), &flat(q), &both))
                })),
                _ => v,
            };
            (k, v)
        })
        .collect()
}

/// `--compare-to` between two releases on a case: the differences it reports, against those
/// of the two expected files.
fn compare_case(
    dir: &Path,
    (file_a, release_a): (&str, &str),
    (file_b, release_b): (&str, &str),
) -> Result<(), String> {
    let read = |f: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap()
    };
    let expected = recorded_differences(
        &recorded_answer(&read(file_a)),
        &recorded_answer(&read(file_b)),
    );
    let (out, stdout, _fake) = whatif_case(
        dir,
        &["--scheduler-version", release_a, "--compare-to", release_b],
    )?;
    let ours: Value = serde_json::from_str(&stdout).map_err(|e| {
        format!(
            "output is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
    })?;
    let mut reported = ours["differences"].clone();
    // Expected files record a cycle's error as its message.
    if let Some(m) = reported.as_object_mut() {
        m.remove("error");
    }
    normalise_reasons(&mut reported);
    let mut problems = Vec::new();
    if reported != Value::Object(expected.clone()) {
        problems.push(format!(
            "  reported differences {reported}\n  expected files differ in {}",
            Value::Object(expected.clone())
        ));
    }
    let same = !["feasible", "selected", "message", "preemption"]
        .iter()
        .any(|k| expected.contains_key(*k));
    if ours["same"] != same || out.status.code() != Some(if same { 0 } else { 1 }) {
        problems.push(format!(
            "  same: {} (exit {:?}), expected {same}",
            ours["same"],
            out.status.code()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Passed and run, per release.
type Tally = Arc<Mutex<BTreeMap<&'static str, (usize, usize)>>>;

fn main() {
    let args = Arguments::from_args();
    let known = Arc::new(known_failures());
    let mut cases: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").exists())
        .collect();
    cases.sort();
    let tally: Tally = Arc::default();
    let mut names = std::collections::BTreeSet::new();
    let mut trials = Vec::new();
    for (file, release) in RELEASES {
        for dir in &cases {
            if !dir.join(file).exists() {
                continue;
            }
            let case = dir.file_name().unwrap().to_string_lossy().to_string();
            let name = format!("{case}@{release}");
            names.insert(case.clone());
            names.insert(name.clone());
            let listed = [&name, &case]
                .into_iter()
                .find(|k| known.contains_key(k.as_str()))
                .cloned();
            // Suggestions are not made with --call-extenders, which those cases need.
            if !extenders_configured(dir) {
                let (dir, case) = (dir.clone(), name.clone());
                trials.push(Trial::test(format!("suggestions:{name}"), move || {
                    suggestions::check(&dir, release)
                        .map(|_| ())
                        .map_err(|e| Failed::from(format!("suggestions of {case}: {e}")))
                }));
            }
            let (dir, tally) = (dir.clone(), tally.clone());
            trials.push(Trial::test(name.clone(), move || {
                let result = check(&dir, file, release);
                let mut t = tally.lock().unwrap();
                let entry = t.entry(release).or_default();
                entry.1 += 1;
                entry.0 += usize::from(result.is_ok());
                drop(t);
                match (result, listed) {
                    (Ok(()), None) | (Err(_), Some(_)) => Ok(()),
                    (Ok(()), Some(k)) => Err(Failed::from(format!(
                        "{name} passes now: remove {k} from tests/conformance_known_failures.txt"
                    ))),
                    (Err(e), None) => Err(Failed::from(format!("{name} FAILED\n{e}"))),
                }
            }));
        }
    }
    for (a, b) in COMPARED {
        let (base, other) = (RELEASES[a], RELEASES[b]);
        for dir in &cases {
            if !(dir.join(base.0).exists() && dir.join(other.0).exists()) {
                continue;
            }
            let case = dir.file_name().unwrap().to_string_lossy().to_string();
            // A case one of the releases cannot pass yet cannot be compared either.
            if [
                case.clone(),
                format!("{case}@{}", base.1),
                format!("{case}@{}", other.1),
            ]
            .iter()
            .any(|k| known.contains_key(k))
            {
                continue;
            }
            let dir = dir.clone();
            trials.push(Trial::test(
                format!("compare:{case}@{}..{}", base.1, other.1),
                move || compare_case(&dir, base, other).map_err(Failed::from),
            ));
        }
    }
    let unknown: Vec<String> = known
        .keys()
        .filter(|k| !names.contains(k.as_str()))
        .cloned()
        .collect();
    trials.push(Trial::test("known-failures-name-cases", move || {
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(Failed::from(format!(
                "listed in tests/conformance_known_failures.txt, but there is no such case or release: {}",
                unknown.join(", ")
            )))
        }
    }));
    let conclusion = libtest_mimic::run(&args, trials);
    let counts: Vec<String> = RELEASES
        .iter()
        .filter_map(|(_, release)| {
            let t = tally.lock().unwrap();
            let (passed, run) = t.get(release)?;
            Some(format!("{release}: {passed}/{run} pass"))
        })
        .collect();
    if !counts.is_empty() {
        println!(
            "conformance: {} ({} known failures listed)",
            counts.join(", "),
            known.len()
        );
        for (name, why) in known.iter() {
            println!("  known failure {name}: {why}");
        }
    }
    conclusion.exit();
}
