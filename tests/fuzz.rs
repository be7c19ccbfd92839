//! A fixed-seed mutation fuzz of every input kind, through the real binary: clusters, pods,
//! workloads and scheduler configurations from the fixtures and the conformance cases, mutated
//! byte by byte and by the classes of the robustness issues (empty and truncated files, Lists
//! whose items are not a list, duplicates, foreign API groups, quoted scalars spanning lines, deep
//! nesting, gzip, control characters, the tool's own style markers, bidirectional and zero-width
//! characters, unknown fields). Whatever the input, the binary must end by itself, without a
//! panic or a signal, with 0, 1 or 2, a 2 must name the file at fault, and, colour on or off, no
//! character from the input that a terminal does not show as itself may reach it unescaped, nor
//! any escape sequence but the tool's colours.

#[path = "common/colours.rs"]
mod colours;

use colours::without_our_colours;
use kubectl_sched::term::shows_as_itself;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Cases, each run with colour off and on: enough to meet every mutation on every kind of input
/// many times, in about half a minute on two cores in a debug build. A count, not a time budget,
/// so every run tries the same cases.
const CASES: usize = 600;
const SEED: u64 = 17;
/// A case that runs this long is a hang.
const CASE_TIMEOUT: Duration = Duration::from_secs(20);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn files(dir: &Path, name: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p, name));
        } else if p.file_name().and_then(|n| n.to_str()).is_some_and(name) {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// What a mutated file stands for on the command line.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    Cluster,
    Pod,
    Config,
}

struct Seeds {
    clusters: Vec<PathBuf>,
    pods: Vec<PathBuf>,
    configs: Vec<PathBuf>,
}

fn seeds() -> Seeds {
    let fixtures = root().join("fixtures");
    let yaml = |n: &str| n.ends_with(".yaml") || n.ends_with(".json");
    let mut clusters = files(&fixtures.join("conformance"), &|n| n == "cluster.yaml");
    let mut hand_written = files(&fixtures.join("clusters"), &yaml);
    let mut pods = files(&fixtures.join("conformance"), &|n| n == "pod.yaml");
    pods.extend(files(&fixtures.join("pods"), &yaml));
    let mut configs = files(&fixtures.join("conformance"), &|n| n == "config.yaml");
    configs.extend(files(&fixtures.join("config"), &yaml));
    // The robustness cases: each file where it belongs by what it holds.
    for f in files(&fixtures.join("robustness"), &yaml) {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        if text.contains("kind: Pod\n") && !text.contains("items:")
            || ["kind: Deployment", "kind: ReplicaSet", "kind: Job"]
                .iter()
                .any(|k| text.contains(k))
        {
            pods.push(f);
        } else {
            hand_written.push(f);
        }
    }
    // Counted several times: the conformance cases would otherwise crowd out the demo, the
    // leases and the robustness cases, the only clusters with leases and events to show.
    for _ in 0..5 {
        clusters.extend(hand_written.iter().cloned());
    }
    Seeds {
        clusters,
        pods,
        configs,
    }
}

/// Pieces that have broken the loaders before, or would: the issues' classes.
const TOKENS: &[&str] = &[
    "null",
    "~",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    "\n",
    "\n- ",
    "\nkind: List\n",
    "\nitems: {not: a list}\n",
    "\nitems: null\n",
    "\u{1b}]0;PWNED\u{7}\u{1b}[2J",
    "\u{9b}31m",
    "-1",
    "99999999999999999999",
    "2147483648",
    "1e999",
    "0.5",
    "08",
    "y",
    "&a ",
    "*a",
    "<<: *a\n",
    "\t",
    "\n---\n",
    "\n...\n",
    ": ",
    "\"first line\n  kind: Secret\n  \"",
    "|\n  kind: Secret\n",
    "\napiVersion: serving.knative.dev/v1\n",
    "\napiVersion: v2\n",
    "\napiVersion: \"\"\n",
    "\nunknownFeild: 1\n",
    "\u{feff}",
    // The tool's marker for bold, red and the end of a style; bidirectional and zero-width
    // characters; a line separator.
    "\u{E0001}\u{E0062}",
    "\u{E0001}\u{E0072}",
    "\u{E007F}\u{E0062}",
    "\u{202E}",
    "\u{2066}",
    "\u{200B}",
    "\u{200F}",
    "\u{2028}",
    "\\U000E0001\\U000E0067",
    "\n%YAML 1.2\n",
    " #",
    "operator: in",
    "9999-12-31T23:59:59.999999Z",
    "10 Gi",
    "\n  priority: 100000\n",
    "\n  runtimeClassName: gvisor\n",
    "\n  overhead: {cpu: 1}\n",
];

fn mutate(rng: &mut fastrand::Rng, bytes: &mut Vec<u8>) {
    let pos = |rng: &mut fastrand::Rng, b: &Vec<u8>| rng.usize(..=b.len());
    match rng.u8(..10) {
        0 if !bytes.is_empty() => {
            let i = rng.usize(..bytes.len());
            bytes[i] = rng.u8(..);
        }
        1 if !bytes.is_empty() => {
            let a = rng.usize(..bytes.len());
            let b = (a + rng.usize(..64)).min(bytes.len());
            bytes.drain(a..b);
        }
        2 if !bytes.is_empty() => {
            // A copy of a piece: often a whole object, a duplicate.
            let a = rng.usize(..bytes.len());
            let b = (a + rng.usize(..2048)).min(bytes.len());
            let piece = bytes[a..b].to_vec();
            let at = pos(rng, bytes);
            bytes.splice(at..at, piece);
        }
        3..=5 => {
            let t = TOKENS[rng.usize(..TOKENS.len())].as_bytes();
            let at = pos(rng, bytes);
            bytes.splice(at..at, t.iter().copied());
        }
        6 => {
            // A value replaced: the rest of a `key: value` line.
            let text = String::from_utf8_lossy(bytes).into_owned();
            let starts: Vec<usize> = text.match_indices(": ").map(|(i, _)| i + 2).collect();
            if let Some(&at) = starts.get(rng.usize(..starts.len().max(1))) {
                let end = text[at..].find('\n').map_or(text.len(), |e| at + e);
                let t = TOKENS[rng.usize(..TOKENS.len())];
                *bytes = format!("{}{t}{}", &text[..at], &text[end..]).into_bytes();
            }
        }
        7 => {
            let at = pos(rng, bytes);
            bytes.truncate(at);
        }
        _ => {
            // Deep: the object inside many Lists or arrays.
            let depth = rng.usize(1..300);
            let text = String::from_utf8_lossy(bytes).into_owned();
            *bytes = if rng.bool() {
                format!("{}{text}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()
            } else {
                format!(
                    "{}{}",
                    "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[".repeat(depth),
                    "]}".repeat(depth)
                )
                .into_bytes()
            };
        }
    }
}

/// Control, tag, bidirectional and zero-width characters in the free-form strings the tables
/// show, which the API server does not validate: leases' holders, events' messages.
fn hostile_strings(bytes: &mut Vec<u8>) {
    let value =
        r#""cp-1\e]0;PWNED\a\e[2J\x9b31m\rcp-2\U000E0001\U000E0062bold\u202Eev\u2066\u200B\u2028""#;
    let text = String::from_utf8_lossy(bytes).into_owned();
    *bytes = text
        .lines()
        .map(|l| {
            match ["holderIdentity: ", "message: "]
                .iter()
                .find_map(|k| l.find(k).map(|i| i + k.len()))
            {
                Some(at) => format!("{}{value}\n", &l[..at]),
                None => format!("{l}\n"),
            }
        })
        .collect::<String>()
        .into_bytes();
}

struct Case {
    args: Vec<String>,
    /// The names an exit 2 may name: the files given.
    names: Vec<String>,
    columns: &'static str,
}

fn build_case(rng: &mut fastrand::Rng, seeds: &Seeds, dir: &Path, n: usize) -> Case {
    let role = match rng.u8(..20) {
        0..=10 => Role::Cluster,
        11..=17 => Role::Pod,
        _ => Role::Config,
    };
    let pick = |rng: &mut fastrand::Rng, v: &[PathBuf]| v[rng.usize(..v.len())].clone();
    let cluster_seed = pick(rng, &seeds.clusters);
    // The pod of the same conformance case, when there is one.
    let pod_seed = match cluster_seed.with_file_name("pod.yaml") {
        p if p.exists() && rng.bool() => p,
        _ => pick(rng, &seeds.pods),
    };
    let config_seed = pick(rng, &seeds.configs);
    let seed = match role {
        Role::Cluster => &cluster_seed,
        Role::Pod => &pod_seed,
        Role::Config => &config_seed,
    };
    let mut bytes = std::fs::read(seed).unwrap();
    // Often, and alone: so few clusters hold leases or events that among the other mutations,
    // which mostly make the file invalid, these strings would rarely reach a table.
    if rng.u8(..4) == 0 {
        hostile_strings(&mut bytes);
    } else {
        for _ in 0..rng.usize(1..4) {
            mutate(rng, &mut bytes);
        }
    }
    if rng.u8(..12) == 0 {
        bytes.clear();
    }
    // Leases are what `lease` shows: it reads them more often where there are some.
    let holds_leases = bytes.windows(11).any(|w| w == b"kind: Lease");
    let gz = rng.u8(..8) == 0;
    if gz {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&bytes).unwrap();
        bytes = enc.finish().unwrap();
    }
    let mutated =
        dir.join(format!("m{n}-{role:?}.yaml{}", if gz { ".gz" } else { "" }).to_lowercase());
    std::fs::write(&mutated, &bytes).unwrap();
    let path = |p: &Path| p.display().to_string();
    let (cluster, pod, config) = match role {
        Role::Cluster => (path(&mutated), path(&pod_seed), None),
        Role::Pod => (path(&cluster_seed), path(&mutated), None),
        Role::Config => (path(&cluster_seed), path(&pod_seed), Some(path(&mutated))),
    };
    let mut args: Vec<String> = match (role, rng.u8(..10)) {
        (Role::Cluster, 0) => vec![
            "explain".into(),
            "-A".into(),
            "--snapshot".into(),
            cluster.clone(),
        ],
        (Role::Cluster, 1..=4) if holds_leases => {
            vec!["lease".into(), "--snapshot".into(), cluster.clone()]
        }
        (Role::Cluster, 1) => vec!["lease".into(), "--snapshot".into(), cluster.clone()],
        _ => vec![
            "whatif".into(),
            "--snapshot".into(),
            cluster.clone(),
            "-f".into(),
            pod.clone(),
        ],
    };
    if let Some(c) = &config {
        args.extend(["--config".into(), c.clone()]);
    }
    match rng.u8(..6) {
        0 => args.extend(["-o".into(), "json".into()]),
        1 => args.extend(["-o".into(), "wide".into()]),
        2 if args[0] == "whatif" => args.extend(["--max".into(), "--limit".into(), "40".into()]),
        _ => {}
    }
    let columns = ["80", "0", "1", "20", "200"][rng.usize(..5)];
    let names = [Some(cluster), Some(pod), config]
        .into_iter()
        .flatten()
        .collect();
    Case {
        args,
        names,
        columns,
    }
}

/// Runs a case with colour off, then on; `Err` says what went wrong.
fn check(case: &Case) -> Result<(), String> {
    for colour in ["never", "always"] {
        check_with(case, colour).map_err(|e| format!("--color {colour}: {e}"))?;
    }
    Ok(())
}

fn check_with(case: &Case, colour: &str) -> Result<(), String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubectl-sched"))
        .args(&case.args)
        .args(["--color", colour])
        .env("COLUMNS", case.columns)
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if started.elapsed() > CASE_TIMEOUT {
            let _ = child.kill();
            return Err(format!("still running after {CASE_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let err = String::from_utf8_lossy(&out.stderr);
    match status.code() {
        None => Err(format!("ended by a signal: {status:?}\n{err}")),
        Some(code @ 3..) => Err(format!("exit {code}\n{err}")),
        Some(2) if !case.names.iter().any(|n| err.contains(n.as_str())) => {
            Err(format!("exit 2 without naming the file:\n{err}"))
        }
        Some(_) if err.contains("panicked") => Err(format!("a panic:\n{err}")),
        Some(_) => {
            // Strings from the input reach a terminal escaped, and the only escape sequences
            // are the tool's colours; JSON stays exact.
            let out = String::from_utf8_lossy(&out.stdout);
            let ours = without_our_colours(&out);
            let raw = |t: &str| t.chars().find(|&c| !shows_as_itself(c));
            match (raw(&err), raw(&ours)) {
                (Some(c), _) => Err(format!("a raw {c:?} on stderr:\n{err}")),
                (None, Some(c)) if !case.args.iter().any(|a| a == "json") => {
                    Err(format!("a raw {c:?} on stdout:\n{out}"))
                }
                _ => Ok(()),
            }
        }
    }
}

#[test]
fn hostile_input_never_crashes_and_always_names_the_file() {
    let seeds = seeds();
    assert!(seeds.clusters.len() > 100 && seeds.pods.len() > 100 && !seeds.configs.is_empty());
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= CASES {
                        break;
                    }
                    // Each case from its own seed: the same cases whichever thread builds them.
                    let mut rng = fastrand::Rng::with_seed(SEED + i as u64);
                    let case = build_case(&mut rng, &seeds, dir.path(), i);
                    if let Err(e) = check(&case) {
                        failures.lock().unwrap().push(format!(
                            "case {i}: kubectl-sched {}\n{e}",
                            case.args.join(" ")
                        ));
                    }
                }
            });
        }
    });
    let ran = next.load(std::sync::atomic::Ordering::Relaxed).min(CASES);
    println!(
        "fuzz: {ran} cases, colour off and on, in {:?}",
        started.elapsed()
    );
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {ran} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
