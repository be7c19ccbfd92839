//! Placing replicas one after another, each seeing the ones before it, as kube-scheduler does
//! when a Deployment scales up: the answer to "where would N replicas go" and "how many fit".
//!
//! Each replica is one `schedule_pod` cycle, as the real scheduler runs it. Replicas are identical
//! but for their names, so the cycles share a `CycleCache`: PreFilter state kept current with
//! AddPod, node-local verdicts and raw scores reused for every node no placement changed. Only
//! replicas that interact through something a placement changes beyond its node (a claim they
//! share) are scheduled with cold cycles; the tests check that the cache changes no answer.

use super::cache::CycleCache;
use super::plugin::Cx;
use super::runner::{Framework, Mode};
use super::schedule_one::{CycleResult, Ties};
use super::snapshot::Snapshot;
use crate::model::intern::Str;
use crate::model::pod::Pod;
use std::sync::Arc;

/// How many of the nodes tied for a placement it keeps by name: on a pool of identical nodes
/// nearly all of them tie every time, and keeping them all costs placements × nodes.
pub const TIES_KEPT: usize = 3;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub pod: String,
    pub node: Str,
    pub score: Option<i64>,
    /// The first of the nodes tied for the best score, by name (`node` first), at most
    /// `TIES_KEPT`: the real scheduler picks among them at random, this tool takes the first so
    /// runs are repeatable.
    pub tied: Vec<Str>,
    /// How many nodes tied (1: none but `node`).
    pub ties: usize,
}

impl Placement {
    fn new(pod: String, node: Str, score: Option<i64>, tied: Vec<Str>) -> Placement {
        Placement {
            pod,
            node,
            score,
            ties: tied.len(),
            // A copy: the tie set's own vector has room for every node.
            tied: tied[..tied.len().min(TIES_KEPT)].to_vec(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sequence {
    pub placements: Vec<Placement>,
    /// The FailedScheduling message of the first replica that fit nowhere.
    pub stopped: Option<String>,
    /// What DefaultPreemption makes of that replica; `None` when it did not run.
    pub preemption: Option<Preemption>,
}

/// What preemption would do next for a replica that fits nowhere as the cluster stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Preemption {
    /// Evict `victims` pods on `node` and nominate the node for the replica.
    Nominates { node: Str, victims: usize },
    /// No room is made (the message says why).
    NoRoom,
}

impl Sequence {
    /// Stops at the replica whose cycle (with PostFilter) is `result`, which fits nowhere: its
    /// message and what preemption would do.
    fn stop(&mut self, result: CycleResult) {
        if let Some(e) = result.error {
            self.stopped = Some(e.message());
            return;
        }
        self.preemption = result.post_filter.and_then(|out| out.preemption).map(|p| {
            let victims = |node| p.candidates.iter().find(|c| c.node == node);
            match p
                .nominated_node
                .and_then(|n| Some((n, victims(n)?.victims.len())))
            {
                Some((node, victims)) => Preemption::Nominates { node, victims },
                None => Preemption::NoRoom,
            }
        });
        self.stopped = Some(result.message);
    }
}

/// The `i`-th replica (from 1) of `template`.
fn replica(template: &Pod, i: usize) -> Pod {
    let mut pod = template.clone();
    let name = format!("{}-{i}", template.name);
    pod.uid = Str::new(format!(
        "kubectl-sched-whatif/{}/{name}",
        template.namespace
    ));
    pod.name = Str::new(name);
    pod
}

/// Places up to `limit` replicas of `template`, stopping at the first that fits nowhere. Each
/// placement is added to `snapshot`, so later replicas see the earlier ones.
pub fn place(fw: &Framework, snapshot: &mut Snapshot, template: &Pod, limit: usize) -> Sequence {
    place_reporting(fw, snapshot, template, limit, &mut |_| {})
}

/// `place`, telling `placed` how many replicas are placed after each one (for progress).
pub fn place_reporting(
    fw: &Framework,
    snapshot: &mut Snapshot,
    template: &Pod,
    limit: usize,
    placed: &mut dyn FnMut(usize),
) -> Sequence {
    // Nominated pods make filtering two-pass per node, and replicas sharing a claim change what
    // PreFilter decides for each other: those are scheduled cold, each from scratch.
    let cx = Cx::new(template, snapshot);
    let mut cache =
        (snapshot.nominated.is_empty() && !fw.replicas_interact(&cx)).then(|| CycleCache::new(fw));
    place_with(fw, snapshot, template, limit, placed, cache.as_mut())
}

/// Schedules the replicas one cycle each, with `cache` when given.
fn place_with(
    fw: &Framework,
    snapshot: &mut Snapshot,
    template: &Pod,
    limit: usize,
    placed: &mut dyn FnMut(usize),
    mut cache: Option<&mut CycleCache>,
) -> Sequence {
    let mut out = Sequence::default();
    for i in 1..=limit {
        let mut pod = replica(template, i);
        snapshot.generate_template_claims(&mut pod);
        let result = fw.schedule_pod(
            snapshot,
            &pod,
            Mode::Decide,
            &mut Ties::FirstByName,
            cache.as_deref_mut(),
        );
        let Some(chosen) = result.chosen else {
            out.stop(result);
            break;
        };
        let node = snapshot.nodes[chosen].name();
        out.placements.push(Placement::new(
            pod.name.to_string(),
            node,
            result.chosen_score(),
            result
                .selected
                .iter()
                .map(|&s| snapshot.nodes[s].name())
                .collect(),
        ));
        placed(out.placements.len());
        snapshot.allocate_claims(&pod, node, result.allocations_on(chosen));
        pod.node_name = Some(node);
        let pod = Arc::new(pod);
        snapshot.assume(pod.clone(), node);
        if let Some(c) = cache.as_deref_mut() {
            let next = replica(template, i + 1);
            let cx = Cx::new(&next, snapshot);
            c.pod_added(fw, &cx, &pod, chosen);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    use crate::plugins::registry::default_framework;
    use crate::release::Release;
    use std::path::Path;

    fn load_case(dir: &Path) -> Option<(Arc<crate::model::cluster::Cluster>, Pod)> {
        let cluster = crate::source::file::load(dir.join("cluster.yaml").to_str()?).ok()?;
        let text = std::fs::read_to_string(dir.join("pod.yaml")).ok()?;
        let v: serde_json::Value = serde_saphyr::from_str(&text).ok()?;
        let mut p: k8s_openapi::api::core::v1::Pod = serde_json::from_value(v).ok()?;
        crate::model::defaults::pod(&mut p, "default");
        p.spec.as_mut()?.priority.get_or_insert(0);
        Some((
            Arc::new(cluster),
            Pod::from_k8s(&p, &Parse::new(&Interner::new())).ok()?,
        ))
    }

    /// With a cache, every cycle of a replica sequence answers exactly as a cold cycle does, in
    /// both modes, on every conformance cluster with its pod, for the oldest and newest release;
    /// and a sequence placed with the cache is the one placed without.
    #[test]
    fn the_cache_gives_the_answers_of_cold_cycles() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs: Vec<_> = std::fs::read_dir(root.join("fixtures/conformance"))
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("pod.yaml").exists() && !p.join("config.yaml").exists())
            .collect();
        dirs.sort();
        let mut compared = 0;
        for release in [Release::OLDEST, Release::NEWEST] {
            let fw = default_framework(release.into());
            for dir in &dirs {
                let Some((cluster, template)) = load_case(dir) else {
                    continue;
                };
                let mut snapshot = Snapshot::new(cluster, None);
                let cx = Cx::new(&template, &snapshot);
                if !snapshot.nominated.is_empty() || fw.replicas_interact(&cx) {
                    continue;
                }
                let unchanged = snapshot.clone();
                let mut cache = CycleCache::new(&fw);
                let explain = |s: &Snapshot, p: &Pod, r| {
                    serde_json::to_value(crate::explain::build(&fw, s, p, &r)).unwrap()
                };
                for i in 1..=12 {
                    let at = format!("{} ({release}), replica {i}", dir.display());
                    let pod = replica(&template, i);
                    let cycle = |mode: Mode, cache: Option<&mut CycleCache>| {
                        fw.schedule_pod(&snapshot, &pod, mode, &mut Ties::FirstByName, cache)
                    };
                    let cold = cycle(Mode::Decide, None);
                    let cached = cycle(Mode::Decide, Some(&mut cache));
                    assert_eq!(format!("{cold:?}"), format!("{cached:?}"), "{at}");
                    let cold_explained = explain(&snapshot, &pod, cycle(Mode::Explain, None));
                    let cached_explained =
                        explain(&snapshot, &pod, cycle(Mode::Explain, Some(&mut cache)));
                    assert_eq!(cold_explained, cached_explained, "{at}");
                    let Some(chosen) = cold.chosen else {
                        break;
                    };
                    let node = snapshot.nodes[chosen].name();
                    let mut bound = pod.clone();
                    bound.node_name = Some(node);
                    let bound = Arc::new(bound);
                    snapshot.assume(bound.clone(), node);
                    let next = replica(&template, i + 1);
                    let cx = Cx::new(&next, &snapshot);
                    cache.pod_added(&fw, &cx, &bound, chosen);
                }
                let mut with = unchanged.clone();
                let mut without = unchanged;
                assert_eq!(
                    place(&fw, &mut with, &template, 12),
                    place_with(&fw, &mut without, &template, 12, &mut |_| {}, None),
                    "{}",
                    dir.display()
                );
                compared += 1;
            }
        }
        assert!(compared > 200, "only {compared} cases compared");
    }

    /// A placement on a pool of identical nodes holds a few names, not room for the pool: a
    /// truncated vector keeps its allocation, so memory would still grow as placements × nodes.
    #[test]
    fn a_placement_keeps_no_room_for_the_whole_tie_set() {
        let pool: Vec<Str> = (0..800).map(|i| Str::new(format!("n{i:03}"))).collect();
        let p = Placement::new("w-1".into(), pool[0], Some(100), pool.clone());
        assert_eq!(p.ties, 800);
        assert_eq!(p.tied, pool[..TIES_KEPT]);
        assert!(p.tied.capacity() <= TIES_KEPT, "{}", p.tied.capacity());
    }

    /// A ReadWriteOncePod claim taken by the first replica keeps the second one out.
    #[test]
    fn replicas_sharing_a_read_write_once_pod_claim() {
        use crate::testing::{cluster, node, pod};
        use serde_json::json;
        let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "ns", "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"accessModes": ["ReadWriteOncePod"], "volumeName": "pv", "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound"}});
        let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOncePod"], "claimRef": {"namespace": "ns", "name": "data"},
                     "csi": {"driver": "d", "volumeHandle": "h"}}, "status": {"phase": "Bound"}});
        let c = cluster(vec![
            node("a", "4", json!({})),
            node("b", "4", json!({})),
            pvc,
            pv,
        ]);
        let mut p = pod("ns/w", None, "1", 0, json!({}));
        p["spec"]["volumes"] =
            json!([{"name": "v", "persistentVolumeClaim": {"claimName": "data"}}]);
        let template = crate::model::cluster::convert_pod(
            serde_json::from_value(p).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod();
        let mut snapshot = Snapshot::new(c, None);
        let seq = place(
            &default_framework(Release::OLDEST.into()),
            &mut snapshot,
            &template,
            3,
        );
        assert_eq!(seq.placements.len(), 1, "{:?}", seq.stopped);
        assert!(seq.stopped.unwrap().contains("ReadWriteOncePod"));
    }
}
