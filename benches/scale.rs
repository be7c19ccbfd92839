//! Scale benchmarks (issue 6): `cargo bench --bench scale -- [--nodes 500,1000,2000,5000]
//! [--pods-per-node 30] [--gpus-per-node 8] [--runs 5] [--yaml]`. Generates clusters with the
//! gen-cluster example's generator (into target/bench-clusters, reused across runs), then prints
//! the median of each figure: load (parse + index), explain of a plain pod and of a pod with zone
//! spread and hostname anti-affinity, replica placement rates, and peak RSS. With GPUs, a second
//! table times explaining a pod with a one-GPU ResourceClaim, and one whose claim also has a
//! request selector (the first explanation after load, and the median of the rest). Then the
//! change plan of a drain (issue 16): the busiest node, and the busiest nodes together until at
//! least 100 pods are to be rescheduled, timed from the loaded cluster to the finished plan; and
//! "What would make it fit" for a pod that fits nowhere (issue 24), from its explanation to the
//! verified suggestions.

use kubectl_sched::explain;
use kubectl_sched::framework::snapshot::Snapshot;
use kubectl_sched::model::cluster::Cluster;
use kubectl_sched::model::intern::Str;
use kubectl_sched::model::pod::Pod;
use kubectl_sched::plan;
use kubectl_sched::plugins::registry::default_framework;
use kubectl_sched::release::Release;
use kubectl_sched::source::file;
use kubectl_sched::suggest;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The binaries' allocator, so load times are theirs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn cluster_file(nodes: usize, pods_per_node: usize, gpus: usize, yaml: bool) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-clusters");
    std::fs::create_dir_all(&dir).unwrap();
    let gpus_part = if gpus > 0 {
        format!("g{gpus}")
    } else {
        String::new()
    };
    let path = dir.join(format!(
        "c{nodes}x{pods_per_node}{gpus_part}.{}",
        if yaml { "yaml" } else { "json" }
    ));
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args([
                "run",
                "--release",
                "-q",
                "--example",
                "gen-cluster",
                "--",
                "--seed",
                "1",
            ])
            .args([
                "--nodes",
                &nodes.to_string(),
                "--pods-per-node",
                &pods_per_node.to_string(),
                "--gpus-per-node",
                &gpus.to_string(),
                "-o",
            ])
            .arg(&path)
            .status()
            .expect("run gen-cluster");
        assert!(status.success(), "gen-cluster failed");
    }
    path
}

fn load(path: &Path) -> Arc<Cluster> {
    Arc::new(file::load(path.to_str().unwrap()).expect("load"))
}

/// A pod read into the cluster's strings, as `whatif -f` reads it.
fn pod(yaml: &str, cluster: &Cluster) -> Pod {
    let v: serde_json::Value = serde_saphyr::from_str(yaml).unwrap();
    let mut p: k8s_openapi::api::core::v1::Pod = serde_json::from_value(v).unwrap();
    kubectl_sched::model::defaults::pod(&mut p, "default");
    Pod::from_k8s(&p, &cluster.parse()).unwrap()
}

const PLAIN: &str = "metadata: {name: plain, namespace: payments-0}\nspec:\n  containers:\n  - name: c\n    image: registry.example.com/team/app-3:v1\n    resources: {requests: {cpu: 200m, memory: 256Mi}}\n";
const SPREAD: &str = "metadata: {name: spread, namespace: payments-0, labels: {app: bench-spread}}\nspec:\n  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: bench-spread}}}\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: bench-spread}}}\n  containers:\n  - name: c\n    image: registry.example.com/team/app-3:v1\n    resources: {requests: {cpu: 200m, memory: 256Mi}}\n";

/// Fits no node as it is: more cpu than any untainted node has; the tainted GPU nodes have it.
const PENDING: &str = "metadata: {name: pending, namespace: payments-0}\nspec:\n  containers:\n  - name: c\n    image: registry.example.com/team/app-3:v1\n    resources: {requests: {cpu: '24', memory: 16Gi}}\n";

/// "What would make it fit" for `p`, which fits nowhere: the median time from the explanation
/// to the verified suggestions, how many were found and how many candidates tried.
fn suggest_time(cluster: &Arc<Cluster>, p: &Pod, runs: usize) -> (Duration, usize, usize) {
    let fws = vec![default_framework(Release::NEWEST.into())];
    let snapshot = Snapshot::new(cluster.clone(), None);
    let r = fws[0].schedule(&snapshot, p);
    let e = explain::build(&fws[0], &snapshot, p, &r);
    assert!(!e.fits(), "the pending pod fits nowhere");
    let problem = suggest::Problem {
        fws: &fws,
        fw: &fws[0],
        cluster,
        snapshot: &snapshot,
        pod: p,
        explanation: &e,
        pod_edits: true,
    };
    let (mut times, mut found) = (Vec::new(), (0, 0));
    for _ in 0..runs {
        let t = Instant::now();
        let s = suggest::suggest(&problem, 3);
        times.push(t.elapsed());
        found = (s.suggestions.len(), s.tried);
    }
    (median(times), found.0, found.1)
}

/// A pod with one ResourceClaim of payments-0.
fn claim_pod(claim: &str) -> String {
    format!(
        "metadata: {{name: gpu-{claim}, namespace: payments-0}}\nspec:\n  containers:\n  - name: c\n    image: registry.example.com/team/app-3:v1\n    resources: {{requests: {{cpu: 200m, memory: 256Mi}}, claims: [{{name: gpu}}]}}\n  resourceClaims:\n  - {{name: gpu, resourceClaimName: {claim}}}\n"
    )
}

/// The first explanation of `p` and the median of the next `runs`.
fn time_first_and_rest(snapshot: &Snapshot, p: &Pod, runs: usize) -> (Duration, Duration) {
    let fw = default_framework(Release::NEWEST.into());
    let t = Instant::now();
    let r = fw.schedule(snapshot, p);
    assert!(!r.selected.is_empty(), "the GPU pod fits somewhere");
    std::hint::black_box(explain::build(&fw, snapshot, p, &r));
    (t.elapsed(), time_explain(snapshot, p, runs))
}

fn time_explain(snapshot: &Snapshot, p: &Pod, runs: usize) -> Duration {
    let fw = default_framework(Release::NEWEST.into());
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let r = fw.schedule(snapshot, p);
        let e = explain::build(&fw, snapshot, p, &r);
        std::hint::black_box(&e);
        times.push(t.elapsed());
    }
    median(times)
}

/// Replicas placed per second, `count` of them one after another.
fn placement_rate(cluster: &Arc<Cluster>, p: &Pod, count: usize) -> (f64, usize) {
    let fw = default_framework(Release::NEWEST.into());
    let mut snapshot = Snapshot::new(cluster.clone(), None);
    let t = Instant::now();
    let seq = kubectl_sched::framework::sequence::place(&fw, &mut snapshot, p, count);
    (
        seq.placements.len() as f64 / t.elapsed().as_secs_f64(),
        seq.placements.len(),
    )
}

/// `--drain` of `nodes`: the whole plan (edits, snapshot, evictions, the queue, the report's
/// input), as the CLI runs it once the cluster is loaded; and, of that, the snapshot the plan
/// builds after its edits (what a plain what-if counts as part of the load).
struct DrainTime {
    plan: Duration,
    snapshot: Duration,
    rescheduled: usize,
    scheduled: usize,
}

fn drain_time(cluster: &Arc<Cluster>, nodes: &[Str]) -> DrainTime {
    let fws = vec![default_framework(Release::NEWEST.into())];
    let (mut plans, mut snapshots) = (Vec::new(), Vec::new());
    let mut moved = (0, 0);
    for _ in 0..3 {
        let t = Instant::now();
        std::hint::black_box(Snapshot::new(Arc::new((**cluster).clone()), None));
        snapshots.push(t.elapsed());
        let owned = (**cluster).clone();
        let t = Instant::now();
        let plan = plan::run(
            &fws,
            owned,
            plan::Request {
                edits: nodes.iter().map(|&n| plan::edit::Edit::Drain(n)).collect(),
                drain: plan::drain::Options {
                    force: true,
                    delete_emptydir_data: true,
                    timeout: None,
                },
                workloads: Vec::new(),
                pending: None,
                seed: None,
            },
        )
        .expect("the nodes exist");
        plans.push(t.elapsed());
        let scheduled = plan
            .pods
            .iter()
            .filter(|p| matches!(p.outcome, plan::Outcome::Scheduled { .. }))
            .count();
        moved = (plan.pods.len(), scheduled);
        std::hint::black_box(&plan);
    }
    DrainTime {
        plan: median(plans),
        snapshot: median(snapshots),
        rescheduled: moved.0,
        scheduled: moved.1,
    }
}

/// Nodes by how many pods they run, most first.
fn busiest(cluster: &Cluster) -> Vec<(Str, usize)> {
    let mut counts: std::collections::HashMap<Str, usize> = Default::default();
    for p in &cluster.pods {
        if let Some(n) = p.node_name {
            *counts.entry(n).or_default() += 1;
        }
    }
    let mut v: Vec<(Str, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

fn main() {
    let nodes: Vec<usize> = arg("--nodes")
        .unwrap_or_else(|| "500,1000,2000,5000".into())
        .split(',')
        .map(|n| n.parse().expect("--nodes"))
        .collect();
    let ppn: usize = arg("--pods-per-node").map_or(30, |s| s.parse().unwrap());
    let runs: usize = arg("--runs").map_or(5, |s| s.parse().unwrap());
    let yaml = flag("--yaml");
    let replicas: usize = arg("--replicas").map_or(1000, |s| s.parse().unwrap());
    let gpus: usize = arg("--gpus-per-node").map_or(0, |s| s.parse().unwrap());
    let mut dra_rows = Vec::new();
    println!(
        "{:>6} {:>8} {:>10} {:>10} {:>12} {:>14} {:>15} {:>15} {:>9}",
        "nodes",
        "pods",
        "load",
        "plain",
        "spread+anti",
        "per node+pod",
        "plain repl/s",
        "spread repl/s",
        "peak RSS"
    );
    for &n in &nodes {
        let path = cluster_file(n, ppn, gpus, yaml);
        let mut load_times = Vec::new();
        let mut cluster = None;
        for _ in 0..runs.min(3) {
            let t = Instant::now();
            let c = load(&path);
            let snapshot = Snapshot::new(c.clone(), None);
            load_times.push(t.elapsed());
            std::hint::black_box(&snapshot);
            cluster = Some(c);
        }
        let cluster = cluster.unwrap();
        let pods = cluster.pods.len();
        let snapshot = Snapshot::new(cluster, None);
        if gpus > 0 {
            let one = time_first_and_rest(
                &snapshot,
                &pod(&claim_pod("bench-gpu"), &snapshot.cluster),
                runs,
            );
            let a100 = time_first_and_rest(
                &snapshot,
                &pod(&claim_pod("bench-a100"), &snapshot.cluster),
                runs,
            );
            dra_rows.push((n, one, a100));
        }
        let plain = time_explain(&snapshot, &pod(PLAIN, &snapshot.cluster), runs);
        let spread = time_explain(&snapshot, &pod(SPREAD, &snapshot.cluster), runs);
        let cluster = snapshot.cluster.clone();
        let (plain_rate, _) = placement_rate(&cluster, &pod(PLAIN, &cluster), replicas);
        let (spread_rate, placed) = placement_rate(&cluster, &pod(SPREAD, &cluster), replicas);
        println!(
            "{n:>6} {pods:>8} {:>8.0}ms {:>8.2}ms {:>10.2}ms {:>12.1}ns {:>15.0} {:>9.0} ({placed:>4}) {:>7.0}MB",
            median(load_times).as_secs_f64() * 1e3,
            plain.as_secs_f64() * 1e3,
            spread.as_secs_f64() * 1e3,
            spread.as_secs_f64() * 1e9 / (n + pods) as f64,
            plain_rate,
            spread_rate,
            peak_rss_mb()
        );
        // The drain plans, on the same cluster: pods rescheduled, of them scheduled, time.
        let by_load = busiest(&cluster);
        let mut enough = Vec::new();
        let mut total = 0;
        for &(node, count) in &by_load {
            if total >= 100 {
                break;
            }
            enough.push(node);
            total += count;
        }
        for nodes in [vec![by_load[0].0], enough] {
            let d = drain_time(&cluster, &nodes);
            let what = match nodes.as_slice() {
                [_] => format!("busiest node ({} pods)", by_load[0].1),
                many => format!("{} busiest nodes ({total} pods)", many.len()),
            };
            println!(
                "{:>6} drain {what}: {} pods rescheduled, {} scheduled; plan {:.0}ms, of which the snapshot {:.0}ms",
                "",
                d.rescheduled,
                d.scheduled,
                d.plan.as_secs_f64() * 1e3,
                d.snapshot.as_secs_f64() * 1e3
            );
        }
        let (t, found, tried) = suggest_time(&cluster, &pod(PENDING, &cluster), runs);
        println!(
            "{:>6} suggestions for a pod that fits nowhere: {found} verified of {tried} tried in {:.0}ms",
            "",
            t.as_secs_f64() * 1e3
        );
    }
    if !dra_rows.is_empty() {
        println!(
            "\n{:>6} {:>6} {:>22} {:>22}",
            "nodes", "GPUs", "1-GPU first / median", "+selector first / med"
        );
        for (n, one, a100) in dra_rows {
            println!(
                "{n:>6} {:>6} {:>10.2}ms {:>8.2}ms {:>10.2}ms {:>8.2}ms",
                n * gpus,
                one.0.as_secs_f64() * 1e3,
                one.1.as_secs_f64() * 1e3,
                a100.0.as_secs_f64() * 1e3,
                a100.1.as_secs_f64() * 1e3
            );
        }
    }
}
