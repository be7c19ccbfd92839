//! Placing replicas one after another, each seeing the ones before it, as kube-scheduler does
//! when a Deployment scales up: the answer to "where would N replicas go" and "how many fit".
//!
//! Replicas are identical but for their names, so after a placement only the chosen node and the
//! state its new pod feeds have changed. The incremental path keeps PreFilter state current with
//! AddPod (as upstream's nominated-pods pass does), reuses node-local filter verdicts and raw
//! scores for every node but the one that changed, and re-runs only the plugins whose answers can
//! depend on other nodes. It gives the same placements as scheduling each replica from scratch,
//! which the tests check against the plain loop.

use super::cycle_state::CycleState;
use super::plugin::{Cx, Plugin};
use super::runner::{Framework, MAX_NODE_SCORE};
use super::snapshot::Snapshot;
use super::status::Status;
use crate::model::intern::Str;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use rayon::prelude::*;
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
    /// Stops at `pod`, which fits nowhere: its message and what preemption would do, from a full
    /// cycle (with PostFilter).
    fn stop(&mut self, fw: &Framework, snapshot: &Snapshot, pod: &Pod) {
        let result = fw.decide(snapshot, pod);
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
    // Nominated pods make filtering two-pass per node, and replicas sharing a claim can change
    // what PreFilter decides (a ReadWriteOncePod claim becomes "in use", a ResourceClaim gets
    // allocated): keep those paths simple and exact by scheduling each replica from scratch.
    let shares_claims = template
        .volumes
        .iter()
        .any(|v| v.persistent_volume_claim.is_some())
        || crate::plugins::dynamic_resources::takes_devices(
            &fw.features,
            &snapshot.cluster.dra,
            template,
        );
    if snapshot.nominated.is_empty() && !shares_claims {
        Incremental::new(fw).place(snapshot, template, limit, placed)
    } else {
        place_one_by_one(fw, snapshot, template, limit, placed)
    }
}

/// Schedules every replica from scratch: the reference the incremental path must match.
pub fn place_one_by_one(
    fw: &Framework,
    snapshot: &mut Snapshot,
    template: &Pod,
    limit: usize,
    placed: &mut dyn FnMut(usize),
) -> Sequence {
    let mut out = Sequence::default();
    for i in 1..=limit {
        let mut pod = replica(template, i);
        snapshot.generate_template_claims(&mut pod);
        let result = fw.decide(snapshot, &pod);
        let Some(&chosen) = result.selected.first() else {
            out.stop(fw, snapshot, &pod);
            break;
        };
        let score = (!result.scoring_skipped)
            .then(|| {
                result
                    .feasible
                    .iter()
                    .position(|&f| f == chosen)
                    .map(|p| result.scores[p].total)
            })
            .flatten();
        let node = snapshot.nodes[chosen].name();
        out.placements.push(Placement::new(
            pod.name.to_string(),
            node,
            score,
            result
                .selected
                .iter()
                .map(|&s| snapshot.nodes[s].name())
                .collect(),
        ));
        placed(out.placements.len());
        let allocations = result
            .device_allocations
            .iter()
            .find(|(n, _)| *n == chosen)
            .map(|(_, a)| a.clone())
            .unwrap_or_default();
        snapshot.allocate_claims(&pod, node, &allocations);
        pod.node_name = Some(node);
        snapshot.assume(Arc::new(pod), node);
    }
    out
}

struct Incremental<'a> {
    fw: &'a Framework,
    /// Per Filter plugin (profile order): node-local?
    local_filter: Vec<bool>,
    /// Per Score plugin (profile order): node-local?
    local_score: Vec<bool>,
}

/// What is kept per node between replicas.
#[derive(Clone, Default)]
struct NodeCache {
    /// Some node-local filter rejects the node.
    local_fail: bool,
    /// Raw scores of node-local score plugins, by score position, once computed.
    scores: Vec<Option<i64>>,
}

impl<'a> Incremental<'a> {
    fn new(fw: &'a Framework) -> Self {
        Incremental {
            fw,
            local_filter: fw
                .filter
                .iter()
                .map(|&i| fw.plugins[i].reuse().node_local_filter)
                .collect(),
            local_score: fw
                .score
                .iter()
                .map(|&(i, _)| fw.plugins[i].reuse().node_local_score)
                .collect(),
        }
    }

    fn filter_plugin(&self, k: usize) -> &dyn Plugin {
        self.fw.plugin(self.fw.filter[k])
    }

    /// Whether a node-local filter that ran rejects the node.
    fn local_fail(&self, cx: &Cx, state: &CycleState, node: &NodeInfo) -> bool {
        (0..self.fw.filter.len()).any(|k| {
            let pl = self.filter_plugin(k);
            self.local_filter[k]
                && !state.skips_filter(pl.name())
                && !pl.filter(cx, state, node).is_success()
        })
    }

    /// Whether a node fails some filter: its cached node-local verdicts, then the other filters.
    /// `Err` when a filter fails with an error, which ends the cycle.
    fn fails(
        &self,
        cx: &Cx,
        state: &CycleState,
        node: &NodeInfo,
        cache: &NodeCache,
        global: &[usize],
    ) -> Result<bool, ()> {
        if cache.local_fail {
            return Ok(true);
        }
        for &k in global {
            let s = self.filter_plugin(k).filter(cx, state, node);
            if s.code == crate::framework::status::Code::Error {
                return Err(());
            }
            if !s.is_success() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn place(
        &self,
        snapshot: &mut Snapshot,
        template: &Pod,
        limit: usize,
        placed: &mut dyn FnMut(usize),
    ) -> Sequence {
        let fw = self.fw;
        let mut out = Sequence::default();
        if limit == 0 {
            return out;
        }
        let mut pod = replica(template, 1);
        if fw.pre_enqueue.iter().any(|&i| {
            !fw.plugin(i)
                .pre_enqueue(&Cx {
                    pod: &pod,
                    snapshot,
                })
                .is_success()
        }) {
            out.stop(fw, snapshot, &pod);
            return out;
        }
        let mut state = CycleState::default();
        let (pre, allowed, _) = fw.run_pre_filter(
            &Cx {
                pod: &pod,
                snapshot,
            },
            &mut state,
        );
        if !pre.is_success() {
            out.stop(fw, snapshot, &pod);
            return out;
        }
        let candidates: Vec<usize> = match &allowed {
            None => (0..snapshot.num_nodes()).collect(),
            Some(names) => {
                let mut v: Vec<usize> = names
                    .iter()
                    .filter_map(|&n| snapshot.node_index(n))
                    .collect();
                v.sort_unstable();
                v
            }
        };
        // Indexed by node; nodes PreFilter left out are never consulted.
        let mut cache: Vec<NodeCache> = vec![NodeCache::default(); snapshot.num_nodes()];
        {
            let cx = Cx {
                pod: &pod,
                snapshot,
            };
            let build = |&i: &usize| NodeCache {
                local_fail: self.local_fail(&cx, &state, &snapshot.nodes[i]),
                scores: vec![None; fw.score.len()],
            };
            let built: Vec<NodeCache> = if fw.parallel {
                candidates.par_iter().map(build).collect()
            } else {
                candidates.iter().map(build).collect()
            };
            for (&i, c) in candidates.iter().zip(built) {
                cache[i] = c;
            }
        }
        // With only node-local filters active, checking a node is a few cached reads: cheaper
        // serially than handing out to threads.
        let global: Vec<usize> = (0..fw.filter.len())
            .filter(|&k| !self.local_filter[k] && !state.skips_filter(self.filter_plugin(k).name()))
            .collect();
        // Per PreScore plugin: is its state (and Skip decision) current?
        let mut pre_score_current = vec![false; fw.pre_score.len()];
        let mut feasible: Vec<usize> = Vec::with_capacity(candidates.len());
        for i in 1..=limit {
            if i > 1 {
                pod = replica(template, i);
            }
            let cx = Cx {
                pod: &pod,
                snapshot,
            };
            let verdict = |&n: &usize| {
                (
                    n,
                    self.fails(&cx, &state, &snapshot.nodes[n], &cache[n], &global),
                )
            };
            let verdicts: Vec<(usize, Result<bool, ()>)> =
                if fw.parallel && !global.is_empty() && candidates.len() > 64 {
                    candidates.par_iter().map(verdict).collect()
                } else {
                    candidates.iter().map(verdict).collect()
                };
            feasible.clear();
            feasible.extend(
                verdicts
                    .iter()
                    .filter(|(_, v)| *v == Ok(false))
                    .map(|&(n, _)| n),
            );
            if feasible.is_empty() || verdicts.iter().any(|(_, v)| v.is_err()) {
                out.stop(fw, snapshot, &pod);
                break;
            }
            let (chosen, score, tied) = if feasible.len() == 1 {
                (feasible[0], None, vec![snapshot.nodes[feasible[0]].name()])
            } else {
                match self.score(
                    &cx,
                    &mut state,
                    &mut cache,
                    &feasible,
                    &mut pre_score_current,
                ) {
                    Ok(best) => best,
                    Err(e) => {
                        out.stopped = Some(e.message());
                        break;
                    }
                }
            };
            let node = snapshot.nodes[chosen].name();
            out.placements
                .push(Placement::new(pod.name.to_string(), node, score, tied));
            placed(i);
            pod.node_name = Some(node);
            let added = Arc::new(pod.clone());
            snapshot.assume(added.clone(), node);
            let next = replica(template, i + 1);
            let cx = Cx {
                pod: &next,
                snapshot,
            };
            let ni = &snapshot.nodes[chosen];
            if !fw.run_add_pod(&cx, &mut state, &added, ni).is_success() {
                // A plugin could not follow; finish with full cycles rather than guess.
                let rest = place_one_by_one(
                    fw,
                    snapshot,
                    &replica(template, i + 1),
                    limit - i,
                    &mut |n| placed(i + n),
                );
                renumber_into(&mut out, rest, template, i);
                break;
            }
            for (k, &p) in fw.pre_score.iter().enumerate() {
                pre_score_current[k] = pre_score_current[k]
                    && fw.plugin(p).pre_score_add_pod(&cx, &mut state, &added, ni);
            }
            cache[chosen] = NodeCache {
                local_fail: self.local_fail(&cx, &state, ni),
                scores: vec![None; fw.score.len()],
            };
        }
        out
    }

    /// PreScore (where not current), Score and normalisation over the feasible nodes: the best
    /// node, its total and the tie set.
    fn score(
        &self,
        cx: &Cx,
        state: &mut CycleState,
        cache: &mut [NodeCache],
        feasible: &[usize],
        pre_score_current: &mut [bool],
    ) -> Result<(usize, Option<i64>, Vec<Str>), Status> {
        let fw = self.fw;
        let snapshot = cx.snapshot;
        if pre_score_current.iter().any(|c| !c) {
            let infos: Vec<&NodeInfo> = feasible.iter().map(|&i| &snapshot.nodes[i]).collect();
            for (k, &p) in fw.pre_score.iter().enumerate() {
                if pre_score_current[k] {
                    continue;
                }
                let pl = fw.plugin(p);
                state.skip_score.retain(|&n| n != pl.name());
                let s = pl.pre_score(cx, state, &infos);
                if s.is_skip() {
                    state.skip_score.push(pl.name());
                } else if !s.is_success() {
                    return Err(Status::error(format!(
                        "running PreScore plugin {:?}: {}",
                        pl.name(),
                        s.message()
                    )));
                }
                pre_score_current[k] = true;
            }
        }
        let state = &*state;
        let mut totals = vec![0i64; feasible.len()];
        for (k, &(p, weight)) in fw.score.iter().enumerate() {
            let pl = fw.plugin(p);
            if state.skips_score(pl.name()) {
                continue;
            }
            let compute = |&n: &usize| {
                pl.score(cx, state, &snapshot.nodes[n]).map_err(|e| {
                    Status::error(format!(
                        "plugin {:?} failed with: {}",
                        pl.name(),
                        e.message()
                    ))
                })
            };
            let mut raw: Vec<i64> = if self.local_score[k] {
                // Cached for every node but those placed on since; those are few.
                let mut raw = Vec::with_capacity(feasible.len());
                for &n in feasible {
                    let v = match cache[n].scores[k] {
                        Some(v) => v,
                        None => {
                            let v = compute(&n)?;
                            cache[n].scores[k] = Some(v);
                            v
                        }
                    };
                    raw.push(v);
                }
                raw
            } else if fw.parallel && feasible.len() > 64 {
                feasible.par_iter().map(compute).collect::<Result<_, _>>()?
            } else {
                feasible.iter().map(compute).collect::<Result<_, _>>()?
            };
            if pl.has_score_extensions() {
                let s = pl.normalize_score(cx, state, &mut raw);
                if !s.is_success() {
                    return Err(Status::error(format!(
                        "plugin {:?} failed with: {}",
                        pl.name(),
                        s.message()
                    )));
                }
            }
            for (t, v) in totals.iter_mut().zip(raw) {
                if !(0..=MAX_NODE_SCORE).contains(&v) {
                    return Err(Status::error(format!(
                        "plugin {:?} returns an invalid score {v}, it should in the range of [0, {MAX_NODE_SCORE}] after normalizing",
                        pl.name()
                    )));
                }
                *t += v * weight;
            }
        }
        let best = totals.iter().copied().max().unwrap_or(0);
        let mut tied: Vec<Str> = feasible
            .iter()
            .zip(&totals)
            .filter(|(_, t)| **t == best)
            .map(|(&n, _)| snapshot.nodes[n].name())
            .collect();
        tied.sort();
        let chosen = snapshot.node_index(tied[0]).expect("a feasible node");
        Ok((chosen, Some(best), tied))
    }
}

/// Appends placements of a fallback run (which numbered its replicas from 1) after `done`.
fn renumber_into(out: &mut Sequence, rest: Sequence, template: &Pod, done: usize) {
    for (j, mut p) in rest.placements.into_iter().enumerate() {
        p.pod = format!("{}-{}", template.name, done + j + 1);
        out.placements.push(p);
    }
    out.stopped = rest.stopped;
    out.preemption = rest.preemption;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::profile::default_framework;
    use crate::release::Release;
    use std::path::Path;

    fn load_case(dir: &Path) -> Option<(Arc<crate::model::cluster::Cluster>, Pod)> {
        let cluster = crate::source::file::load(dir.join("cluster.yaml").to_str()?).ok()?;
        let text = std::fs::read_to_string(dir.join("pod.yaml")).ok()?;
        let v: serde_json::Value = serde_saphyr::from_str(&text).ok()?;
        let mut p: k8s_openapi::api::core::v1::Pod = serde_json::from_value(v).ok()?;
        crate::model::defaults::pod(&mut p, "default");
        p.spec.as_mut()?.priority.get_or_insert(0);
        Some((Arc::new(cluster), Pod::from_k8s(&p).ok()?))
    }

    /// The incremental path places exactly as scheduling each replica from scratch does, on every
    /// conformance cluster and the demo cluster.
    #[test]
    fn incremental_matches_one_by_one() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs: Vec<_> = std::fs::read_dir(root.join("fixtures/conformance"))
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("pod.yaml").exists() && !p.join("config.yaml").exists())
            .collect();
        dirs.sort();
        let fw = default_framework(Release::OLDEST.into());
        let mut compared = 0;
        for dir in dirs {
            let Some((cluster, pod)) = load_case(&dir) else {
                continue;
            };
            let mut a = Snapshot::new(cluster.clone(), None);
            let mut b = Snapshot::new(cluster, None);
            let fast = place(&fw, &mut a, &pod, 12);
            let slow = place_one_by_one(&fw, &mut b, &pod, 12, &mut |_| {});
            assert_eq!(fast, slow, "{}", dir.display());
            compared += 1;
        }
        assert!(compared > 100, "only {compared} cases compared");
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
        let template = crate::model::cluster::convert_pod(serde_json::from_value(p).unwrap())
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
