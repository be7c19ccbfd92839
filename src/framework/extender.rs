//! Scheduler extenders (KEP-1819) as the scheduling cycle sees them: what the configuration says
//! about each one (`schedulerapi.Extender`), the `Extender` trait the cycle calls (upstream's
//! `framework.Extender`; the HTTP implementation lives at the I/O edge in `crate::extender`, and
//! the app injects it only with `--call-extenders`), and the parts of kube-scheduler that call
//! them: `findNodesThatPassExtenders` and the extender half of `prioritizeNodes`
//! (`schedule_one.go`), and preemption's `callExtenders`.

use super::facts::{Detail, Fact};
use super::snapshot::Snapshot;
use super::status::NodeToStatus;
use super::status::Status;
use super::victims::{Candidate, Victim};
use crate::config::extender::ExtenderConfig;
use crate::model::intern::Str;
use crate::model::node::Node;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// `extenderv1.MaxExtenderPriority`: extenders score 0..10, scaled to the plugins' 0..100.
pub const MAX_EXTENDER_PRIORITY: i64 = 10;

/// An answer, with how long the call took.
#[derive(Clone, Debug)]
pub struct Reply<T> {
    /// The error text as kube-scheduler would report it.
    pub result: Result<T, String>,
    pub elapsed: Duration,
}

/// `ExtenderFilterResult`, with the nodes it returned already parsed.
#[derive(Clone, Debug, Default)]
pub struct FilterResult {
    /// `Nodes`: whole Node objects (what an extender that is not `nodeCacheCapable` returns).
    pub nodes: Option<Vec<Arc<Node>>>,
    /// `NodeNames`.
    pub node_names: Option<Vec<String>>,
    pub failed_nodes: BTreeMap<String, String>,
    pub failed_and_unresolvable_nodes: BTreeMap<String, String>,
    /// `Error`: a non-empty text fails the call.
    pub error: String,
}

/// `HostPriority`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPriority {
    pub host: String,
    pub score: i64,
}

/// `MetaVictims`: the victims of one node, by pod UID.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetaVictims {
    pub pods: Vec<String>,
    pub num_pdb_violations: i64,
}

/// The victims a preemption candidate would evict, as an extender's ProcessPreemption gets them.
#[derive(Clone, Copy, Debug)]
pub struct VictimsOnNode<'a> {
    pub node: Str,
    pub pods: &'a [Victim],
    pub num_pdb_violations: i64,
}

/// `framework.Extender`. Which nodes go by name and which as objects is the implementation's
/// business, as in upstream's `HTTPExtender`: the cycle hands it the NodeInfos.
pub trait Extender: Send + Sync {
    fn config(&self) -> &ExtenderConfig;

    /// The filter verb on `nodes` (never called without one).
    fn filter(&self, pod: &Pod, nodes: &[&NodeInfo]) -> Reply<FilterResult>;

    /// The prioritize verb on `nodes` (never called without one).
    fn prioritize(&self, pod: &Pod, nodes: &[&NodeInfo]) -> Reply<Vec<HostPriority>>;

    /// The preempt verb on the candidates: `NodeNameToMetaVictims` of its answer.
    fn process_preemption(
        &self,
        pod: &Pod,
        candidates: &[VictimsOnNode],
    ) -> Reply<BTreeMap<String, Option<MetaVictims>>>;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    Filter,
    Prioritize,
    Preempt,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Filter => "filter",
            Verb::Prioritize => "prioritize",
            Verb::Preempt => "preempt",
        }
    }
}

/// One request the cycle made, for the explanation.
#[derive(Clone, Debug)]
pub struct Call {
    pub extender: &'static str,
    pub verb: Verb,
    /// The nodes sent, sorted.
    pub nodes: Vec<Str>,
    pub elapsed: Duration,
    pub error: Option<String>,
    /// Made only to show scores kube-scheduler does not compute (it skips scoring).
    pub display_only: bool,
}

impl Call {
    fn new<T>(
        extender: &'static str,
        verb: Verb,
        nodes: impl IntoIterator<Item = Str>,
        reply: &Reply<T>,
    ) -> Call {
        let mut nodes: Vec<Str> = nodes.into_iter().collect();
        nodes.sort();
        Call {
            extender,
            verb,
            nodes,
            elapsed: reply.elapsed,
            error: reply.result.as_ref().err().cloned(),
            display_only: false,
        }
    }
}

/// A node still feasible: its index in the snapshot, and the NodeInfo the cycle goes on with
/// when it is not the snapshot's.
#[derive(Clone, Debug)]
pub struct Feasible {
    pub index: usize,
    /// Built from the Node object an extender returned: kube-scheduler goes on with a fresh
    /// NodeInfo without the node's pods (kubernetes/kubernetes#141781).
    pub fresh: Option<Box<NodeInfo>>,
}

impl Feasible {
    pub fn of(index: usize) -> Feasible {
        Feasible { index, fresh: None }
    }

    pub fn info<'a>(&'a self, snapshot: &'a Snapshot) -> &'a NodeInfo {
        self.fresh.as_deref().unwrap_or(&snapshot.nodes[self.index])
    }
}

/// What the filter extenders decided.
#[derive(Debug, Default)]
pub struct Filtered {
    pub feasible: Vec<Feasible>,
    /// The statuses extenders gave the nodes they rejected (also written to the cycle's).
    pub rejected: Vec<(Str, Status)>,
    /// Nodes an extender left out of its answer without a reason: kube-scheduler gives them no
    /// status, so the message does not count them.
    pub dropped: Vec<(usize, &'static str)>,
    /// The failure of an extender that is not ignorable: it ends the cycle.
    pub error: Option<Status>,
}

/// `findNodesThatPassExtenders`: each interested filter extender in turn, on what the previous
/// ones left. Rejections go into `statuses`.
pub fn find_nodes_that_pass(
    extenders: &[Arc<dyn Extender>],
    pod: &Pod,
    snapshot: &Snapshot,
    feasible: Vec<Feasible>,
    statuses: &mut NodeToStatus,
    calls: &mut Vec<Call>,
) -> Filtered {
    let mut out = Filtered {
        feasible,
        ..Filtered::default()
    };
    for ext in extenders {
        let cfg = ext.config();
        if out.feasible.is_empty() {
            break;
        }
        if !cfg.is_interested(pod) || !cfg.is_filter() {
            continue;
        }
        let name = cfg.name();
        let infos: Vec<&NodeInfo> = out.feasible.iter().map(|f| f.info(snapshot)).collect();
        let reply = ext.filter(pod, &infos);
        calls.push(Call::new(
            name,
            Verb::Filter,
            infos.iter().map(|n| n.name()),
            &reply,
        ));
        let result = reply.result.and_then(|r| {
            if r.error.is_empty() {
                passed_nodes(cfg, &out.feasible, snapshot, r)
            } else {
                Err(r.error)
            }
        });
        let (passed, failed, unresolvable) = match result {
            Ok(r) => r,
            Err(_) if cfg.ignorable => continue,
            Err(e) => {
                out.feasible.clear();
                out.error = Some(Status::error(e).with_plugin(name));
                break;
            }
        };
        let mut reject = |node: &str, status: Status| {
            let node = snapshot.cluster.strings.intern(node);
            statuses.by_node.insert(node, status.clone());
            out.rejected.push((node, status));
        };
        let by_extender = |status: Status| {
            status
                .with_plugin(name)
                .with_facts(vec![Fact::of(Detail::Extender(name))])
        };
        for (node, reason) in &unresolvable {
            reject(node, by_extender(Status::unresolvable(reason.clone())));
        }
        for (node, reason) in &failed {
            if !unresolvable.contains_key(node) {
                reject(node, by_extender(Status::unschedulable(reason.clone())));
            }
        }
        for f in &out.feasible {
            let node = f.info(snapshot).name();
            let kept = passed.iter().any(|p| p.index == f.index);
            if !kept
                && !failed.contains_key(node.as_str())
                && !unresolvable.contains_key(node.as_str())
            {
                out.dropped.push((f.index, name));
            }
        }
        out.feasible = passed;
    }
    out
}

type FailedNodes = BTreeMap<String, String>;

/// The nodes an answer lets through, as `HTTPExtender.Filter` reads it: names only from a
/// `nodeCacheCapable` extender, else Node objects, else none.
fn passed_nodes(
    cfg: &ExtenderConfig,
    input: &[Feasible],
    snapshot: &Snapshot,
    r: FilterResult,
) -> Result<(Vec<Feasible>, FailedNodes, FailedNodes), String> {
    let position = |name: Str| input.iter().position(|f| f.info(snapshot).name() == name);
    let not_in_input = |node: &str| {
        format!(
            "extender {:?} claims a filtered node {node:?} which is not found in the input node list",
            cfg.url_prefix
        )
    };
    let mut passed: Vec<Feasible> = Vec::new();
    match (r.node_names, r.nodes) {
        (Some(names), _) if cfg.node_cache_capable => {
            for n in names {
                let i = position(snapshot.cluster.strings.intern(&n))
                    .ok_or_else(|| not_in_input(&n))?;
                passed.push(input[i].clone());
            }
        }
        (_, Some(nodes)) => {
            // Upstream would go on with a Node it never had; a node outside the snapshot can
            // neither be explained nor bound, so it is refused like an unknown name.
            for node in nodes {
                let i = position(node.name).ok_or_else(|| not_in_input(node.name.as_str()))?;
                passed.push(Feasible {
                    index: input[i].index,
                    fresh: Some(Box::new(NodeInfo::new(node, Default::default()))),
                });
            }
        }
        _ => {}
    }
    // A node named twice is one node.
    let mut seen = std::collections::HashSet::new();
    passed.retain(|f| seen.insert(f.index));
    Ok((passed, r.failed_nodes, r.failed_and_unresolvable_nodes))
}

/// The extender half of `prioritizeNodes`: every interested extender's scores, scaled by its
/// weight, per node of `nodes` in extender order. Prioritize calls run concurrently, as
/// upstream's goroutines; a failed one gives no score and is not an error. An interested
/// extender without a prioritize verb scores 0 everywhere without being called.
pub fn prioritize(
    extenders: &[Arc<dyn Extender>],
    pod: &Pod,
    nodes: &[&NodeInfo],
    display_only: bool,
    calls: &mut Vec<Call>,
) -> Vec<Vec<(&'static str, i64)>> {
    let interested: Vec<&Arc<dyn Extender>> = extenders
        .iter()
        .filter(|e| e.config().is_interested(pod))
        .collect();
    if interested.is_empty() {
        return Vec::new();
    }
    let replies: Vec<Option<Reply<Vec<HostPriority>>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = interested
            .iter()
            .map(|e| {
                e.config()
                    .is_prioritizer()
                    .then(|| scope.spawn(|| e.prioritize(pod, nodes)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))))
            .collect()
    });
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name().as_str(), i))
        .collect();
    let mut out: Vec<Vec<(&'static str, i64)>> = vec![Vec::new(); nodes.len()];
    for (ext, reply) in interested.iter().zip(replies) {
        let cfg = ext.config();
        let name = cfg.name();
        let Some(reply) = reply else {
            for scores in &mut out {
                scores.push((name, 0));
            }
            continue;
        };
        let mut call = Call::new(
            name,
            Verb::Prioritize,
            nodes.iter().map(|n| n.name()),
            &reply,
        );
        call.display_only = display_only;
        calls.push(call);
        let Ok(list) = reply.result else { continue };
        let scale = super::MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY;
        for hp in list {
            // Hosts the request did not name have no row to add to.
            if let Some(&i) = index.get(hp.host.as_str()) {
                out[i].push((name, hp.score.wrapping_mul(cfg.weight).wrapping_mul(scale)));
            }
        }
    }
    out
}

/// What the preempt extenders made of the candidates.
#[derive(Debug, Default)]
pub struct PreemptionAnswer {
    pub candidates: Vec<Candidate>,
    /// Candidates an extender left out: (node, extender).
    pub dropped: Vec<(Str, &'static str)>,
}

/// `callExtenders`: each interested extender with a preempt verb in turn, on the candidates the
/// previous one returned. A failing extender that is not ignorable ends preemption with its error
/// (as does a candidate returned without victims); an ignorable one is skipped, and its
/// candidates without victims are dropped.
pub fn process_preemption(
    extenders: &[Arc<dyn Extender>],
    pod: &Pod,
    snapshot: &Snapshot,
    candidates: &[Candidate],
    calls: &mut Vec<Call>,
) -> Result<PreemptionAnswer, String> {
    let mut answer = PreemptionAnswer {
        candidates: candidates.to_vec(),
        dropped: Vec::new(),
    };
    for ext in extenders {
        let cfg = ext.config();
        if answer.candidates.is_empty() {
            break;
        }
        if !cfg.supports_preemption() || !cfg.is_interested(pod) {
            continue;
        }
        let name = cfg.name();
        let sent: Vec<VictimsOnNode> = answer
            .candidates
            .iter()
            .map(|c| VictimsOnNode {
                node: c.node,
                pods: &c.victims,
                num_pdb_violations: c.num_pdb_violations as i64,
            })
            .collect();
        let reply = ext.process_preemption(pod, &sent);
        calls.push(Call::new(
            name,
            Verb::Preempt,
            sent.iter().map(|v| v.node),
            &reply,
        ));
        let converted = reply
            .result
            .and_then(|r| to_candidates(cfg, snapshot, &answer.candidates, r));
        let mut returned = match converted {
            Ok(r) => r,
            Err(_) if cfg.ignorable => continue,
            Err(e) => return Err(e),
        };
        if let Some(empty) = returned.iter().find(|c| c.victims.is_empty()) {
            if !cfg.ignorable {
                return Err(format!(
                    "expected at least one victim pod on node {:?}",
                    empty.node.as_str()
                ));
            }
            returned.retain(|c| !c.victims.is_empty());
        }
        for c in &answer.candidates {
            if !returned.iter().any(|r| r.node == c.node) {
                answer.dropped.push((c.node, name));
            }
        }
        answer.candidates = returned;
    }
    answer.candidates.sort_by_key(|c| c.node);
    Ok(answer)
}

/// `convertToVictims`: UIDs back to the pods on each node, in the order the extender gave them.
fn to_candidates(
    cfg: &ExtenderConfig,
    snapshot: &Snapshot,
    sent: &[Candidate],
    returned: BTreeMap<String, Option<MetaVictims>>,
) -> Result<Vec<Candidate>, String> {
    let mut out = Vec::new();
    for (node, meta) in returned {
        let info = snapshot
            .cluster
            .strings
            .get(&node)
            .and_then(|n| snapshot.get(n))
            .ok_or_else(|| format!("nodeinfo not found for node name {node:?}"))?;
        let meta = meta.unwrap_or_default();
        let before = sent.iter().find(|c| c.node == info.name());
        let mut victims = Vec::new();
        for uid in meta.pods {
            let pod = info
                .pods
                .iter()
                .find(|p| p.uid.as_str() == uid)
                .ok_or_else(|| {
                    format!(
                        "extender: {} claims to preempt pod (UID: &{{{uid}}}) on node: {node}, but the pod is not found on that node",
                        cfg.url_prefix
                    )
                })?;
            let violates = before
                .and_then(|c| c.victims.iter().find(|v| v.pod.uid == pod.uid))
                .map(|v| v.violates.clone())
                .unwrap_or_default();
            victims.push(Victim {
                pod: pod.clone(),
                violates,
            });
        }
        out.push(Candidate {
            node: info.name(),
            victims,
            num_pdb_violations: meta.num_pdb_violations.max(0) as usize,
        });
    }
    Ok(out)
}

/// How the explanation shows a node an extender left out of its answer without a reason.
/// kube-scheduler records no status for it, so the message does not count it.
pub fn dropped_status(extender: &'static str) -> Status {
    Status::unresolvable("left out of the extender's answer without a reason")
        .with_plugin(extender)
        .with_facts(vec![Fact::of(Detail::Extender(extender))])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::extender::ManagedResource;
    use crate::explain::{self, Explanation, Stage};
    #[allow(unused_imports)]
    use crate::model::intern::Interner;
    #[allow(unused_imports)]
    use crate::model::parse::{LoadOptions, Parse};
    use crate::plugins::registry::default_framework;
    use crate::release::Release;
    use crate::testing::{cluster, node, pod};
    use serde_json::{Value, json};
    use std::sync::Mutex;

    /// An extender answering from tables, recording what it was asked.
    #[derive(Default)]
    struct Scripted {
        config: ExtenderConfig,
        failed: Vec<(&'static str, &'static str)>,
        error: Option<&'static str>,
        scores: Vec<(&'static str, i64)>,
        prioritize_error: bool,
        drop: Vec<&'static str>,
        seen: Mutex<Vec<(Verb, Vec<String>)>>,
    }

    fn reply<T>(result: Result<T, String>) -> Reply<T> {
        Reply {
            result,
            elapsed: Duration::ZERO,
        }
    }

    impl Scripted {
        fn named(name: &str) -> Scripted {
            Scripted {
                config: ExtenderConfig {
                    url_prefix: format!("http://x/{name}"),
                    filter_verb: "filter".into(),
                    prioritize_verb: "prioritize".into(),
                    preempt_verb: "preempt".into(),
                    weight: 2,
                    node_cache_capable: true,
                    ..ExtenderConfig::default()
                },
                ..Scripted::default()
            }
        }

        fn record(&self, verb: Verb, nodes: impl Iterator<Item = Str>) {
            let nodes = nodes.map(|n| n.to_string()).collect();
            self.seen.lock().unwrap().push((verb, nodes));
        }

        fn seen(&self) -> Vec<(Verb, Vec<String>)> {
            self.seen.lock().unwrap().clone()
        }
    }

    impl Extender for Scripted {
        fn config(&self) -> &ExtenderConfig {
            &self.config
        }

        fn filter(&self, _pod: &Pod, nodes: &[&NodeInfo]) -> Reply<FilterResult> {
            self.record(Verb::Filter, nodes.iter().map(|n| n.name()));
            if let Some(e) = self.error {
                return reply(Err(e.to_string()));
            }
            let failed: BTreeMap<String, String> = self
                .failed
                .iter()
                .map(|(n, r)| (n.to_string(), r.to_string()))
                .collect();
            let names = nodes
                .iter()
                .map(|n| n.name().to_string())
                .filter(|n| !failed.contains_key(n))
                .collect();
            reply(Ok(FilterResult {
                node_names: Some(names),
                failed_nodes: failed,
                ..FilterResult::default()
            }))
        }

        fn prioritize(&self, _pod: &Pod, nodes: &[&NodeInfo]) -> Reply<Vec<HostPriority>> {
            self.record(Verb::Prioritize, nodes.iter().map(|n| n.name()));
            if self.prioritize_error {
                return reply(Err(
                    "failed prioritize with extender at URL x, code 500".into()
                ));
            }
            reply(Ok(self
                .scores
                .iter()
                .map(|&(host, score)| HostPriority {
                    host: host.into(),
                    score,
                })
                .collect()))
        }

        fn process_preemption(
            &self,
            _pod: &Pod,
            candidates: &[VictimsOnNode],
        ) -> Reply<BTreeMap<String, Option<MetaVictims>>> {
            self.record(Verb::Preempt, candidates.iter().map(|c| c.node));
            reply(Ok(candidates
                .iter()
                .filter(|c| !self.drop.contains(&c.node.as_str()))
                .map(|c| {
                    let meta = MetaVictims {
                        pods: c.pods.iter().map(|v| v.pod.uid.to_string()).collect(),
                        num_pdb_violations: c.num_pdb_violations,
                    };
                    (c.node.to_string(), Some(meta))
                })
                .collect()))
        }
    }

    fn run(items: Vec<Value>, p: Value, extenders: &[&Arc<Scripted>]) -> Explanation {
        let c = cluster(items);
        let p = crate::model::cluster::convert_pod(
            serde_json::from_value(p).unwrap(),
            &Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod();
        let snapshot = Snapshot::new(c, None);
        let mut fw = default_framework(Release::OLDEST.into());
        fw.extenders = extenders.iter().map(|e| e.config.clone()).collect();
        fw.extender_clients = extenders
            .iter()
            .map(|&e| e.clone() as Arc<dyn Extender>)
            .collect();
        let result = fw.schedule(&snapshot, &p);
        explain::build(&fw, &snapshot, &p, &result)
    }

    fn three_nodes() -> Vec<Value> {
        vec![
            node("a", "4", json!({})),
            node("b", "4", json!({})),
            node("c", "4", json!({})),
        ]
    }

    fn nodes(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn the_nominated_node_goes_through_the_extenders_alone_first() {
        let ext = Arc::new(Scripted::named("e"));
        let mut p = pod("ns/p", None, "1", 0, json!({}));
        p["status"]["nominatedNodeName"] = json!("b");
        let mut items = three_nodes();
        items.push(node("small", "500m", json!({})));
        let e = run(items, p, &[&ext]);
        assert_eq!(
            ext.seen(),
            [
                (Verb::Filter, nodes(&["b"])),
                (Verb::Prioritize, nodes(&["b"]))
            ]
        );
        assert_eq!(e.selected, ["b"]);
        assert_eq!(e.feasible, ["b"]);
        assert!(e.scoring_skipped);
        let others: Vec<_> = e.nodes.iter().filter(|n| n.name != "b").collect();
        assert!(others.iter().all(|n| n.stage == Some(Stage::NotEvaluated)));
        let small = others.iter().find(|n| n.name == "small").unwrap();
        assert!(small.plugin.is_none(), "kube-scheduler never filtered it");
        assert!(small.all_reasons.contains_key("NodeResourcesFit"));
        assert!(
            e.extender_calls[1].display_only,
            "kube-scheduler does not score"
        );
    }

    #[test]
    fn a_nominated_node_the_extender_rejects_sends_the_cycle_through_every_node() {
        let ext = Arc::new(Scripted {
            failed: vec![("b", "node(s) busy")],
            scores: vec![("c", 3)],
            ..Scripted::named("e")
        });
        let mut p = pod("ns/p", None, "1", 0, json!({}));
        p["status"]["nominatedNodeName"] = json!("b");
        let e = run(three_nodes(), p, &[&ext]);
        assert_eq!(
            ext.seen(),
            [
                (Verb::Filter, nodes(&["b"])),
                (Verb::Filter, nodes(&["a", "b", "c"])),
                (Verb::Prioritize, nodes(&["a", "c"])),
            ]
        );
        assert_eq!(e.selected, ["c"]);
        let b = e.nodes.iter().find(|n| n.name == "b").unwrap();
        assert_eq!(b.plugin, Some("http://x/e"));
        assert_eq!(b.reasons, ["node(s) busy"]);
        assert!(
            b.all_reasons.is_empty(),
            "only Filter plugins are listed there"
        );
    }

    #[test]
    fn extender_scores_are_weighted_and_a_failed_prioritize_gives_none() {
        let scorer = Arc::new(Scripted {
            scores: vec![("a", 10), ("b", 5), ("nowhere", 9)],
            ..Scripted::named("scorer")
        });
        let broken = Arc::new(Scripted {
            prioritize_error: true,
            ..Scripted::named("broken")
        });
        let mut silent = Scripted::named("silent");
        silent.config.prioritize_verb.clear();
        let silent = Arc::new(silent);
        let e = run(
            three_nodes(),
            pod("ns/p", None, "1", 0, json!({})),
            &[&scorer, &broken, &silent],
        );
        let a = &e.nodes[0];
        assert_eq!(a.name, "a");
        assert_eq!(a.scores["http://x/scorer"], 200);
        assert_eq!(a.scores["http://x/silent"], 0);
        assert!(!a.scores.contains_key("http://x/broken"));
        let c = e.nodes.iter().find(|n| n.name == "c").unwrap();
        assert!(
            !c.scores.contains_key("http://x/scorer"),
            "c was not scored"
        );
        assert!(silent.seen().iter().all(|(v, _)| *v == Verb::Filter));
    }

    #[test]
    fn a_failing_extender_ends_the_cycle_unless_it_is_ignorable() {
        let first = Arc::new(Scripted {
            failed: vec![("a", "node(s) full")],
            ..Scripted::named("first")
        });
        let failing = || Scripted {
            error: Some("quota service unavailable"),
            ..Scripted::named("failing")
        };
        let e = run(
            three_nodes(),
            pod("ns/p", None, "1", 0, json!({})),
            &[&first, &Arc::new(failing())],
        );
        assert_eq!(e.message, "quota service unavailable");
        assert_eq!(e.message_before_post_filter, e.message);
        assert!(e.feasible.is_empty() && e.preemption.is_none());
        let a = e.nodes.iter().find(|n| n.name == "a").unwrap();
        assert_eq!(a.reasons, ["node(s) full"], "earlier rejections are kept");

        let mut ignorable = failing();
        ignorable.config.ignorable = true;
        let e = run(
            three_nodes(),
            pod("ns/p", None, "1", 0, json!({})),
            &[&Arc::new(ignorable)],
        );
        assert_eq!(e.feasible, ["a", "b", "c"]);
        assert_eq!(
            e.extender_calls[0].error.as_deref(),
            Some("quota service unavailable")
        );
    }

    #[test]
    fn extenders_uninterested_in_the_pod_are_never_called() {
        let mut gpu = Scripted::named("gpu");
        gpu.config.managed_resources = vec![ManagedResource {
            name: "example.com/gpu".into(),
            ignored_by_scheduler: false,
        }];
        let gpu = Arc::new(gpu);
        let e = run(three_nodes(), pod("ns/p", None, "1", 0, json!({})), &[&gpu]);
        assert!(gpu.seen().is_empty());
        assert!(!e.nodes[0].scores.contains_key("http://x/gpu"));
        let mut p = pod("ns/p", None, "1", 0, json!({}));
        p["spec"]["initContainers"] = json!([{"name": "i", "image": "i",
            "resources": {"limits": {"example.com/gpu": "1"}}}]);
        let items = three_nodes()
            .into_iter()
            .map(|mut n| {
                n["status"]["allocatable"]["example.com/gpu"] = json!("1");
                n
            })
            .collect();
        run(items, p, &[&gpu]);
        assert_eq!(gpu.seen()[0].0, Verb::Filter, "limits count as requests");
    }

    fn full_nodes() -> Vec<Value> {
        vec![
            node("a", "1", json!({})),
            node("b", "1", json!({})),
            pod("ns/low-a", Some("a"), "1", 1, json!({})),
            pod("ns/low-b", Some("b"), "1", 1, json!({})),
        ]
    }

    #[test]
    fn the_preempt_verb_shrinks_the_candidates() {
        let ext = Arc::new(Scripted {
            drop: vec!["a"],
            ..Scripted::named("e")
        });
        let e = run(
            full_nodes(),
            pod("ns/new", None, "1", 100, json!({})),
            &[&ext],
        );
        assert_eq!(ext.seen(), [(Verb::Preempt, nodes(&["a", "b"]))]);
        let p = e.preemption.unwrap();
        assert_eq!(p.nominated_node, "b");
        assert_eq!(p.tied_nodes, ["b"]);
        assert_eq!(p.dropped_by_extenders["a"], "http://x/e");

        let all = Arc::new(Scripted {
            drop: vec!["a", "b"],
            ..Scripted::named("e")
        });
        let e = run(
            full_nodes(),
            pod("ns/new", None, "1", 100, json!({})),
            &[&all],
        );
        assert!(
            e.message.ends_with(
                "no new claims to deallocate, preemption: no candidate node for preemption"
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn candidates_returned_without_victims_fail_or_are_dropped_if_ignorable() {
        struct Emptying(ExtenderConfig);
        impl Extender for Emptying {
            fn config(&self) -> &ExtenderConfig {
                &self.0
            }
            fn filter(&self, _: &Pod, _: &[&NodeInfo]) -> Reply<FilterResult> {
                unreachable!("no filter verb")
            }
            fn prioritize(&self, _: &Pod, _: &[&NodeInfo]) -> Reply<Vec<HostPriority>> {
                unreachable!("no prioritize verb")
            }
            fn process_preemption(
                &self,
                _: &Pod,
                c: &[VictimsOnNode],
            ) -> Reply<BTreeMap<String, Option<MetaVictims>>> {
                reply(Ok(c
                    .iter()
                    .map(|c| {
                        (
                            c.node.to_string(),
                            (c.node != "b").then(MetaVictims::default),
                        )
                    })
                    .collect()))
            }
        }
        let run_with = |ignorable: bool| {
            let cfg = ExtenderConfig {
                url_prefix: "http://x/e".into(),
                preempt_verb: "preempt".into(),
                ignorable,
                ..ExtenderConfig::default()
            };
            let c = cluster(full_nodes());
            let p = crate::model::cluster::convert_pod(
                serde_json::from_value(pod("ns/new", None, "1", 100, json!({}))).unwrap(),
                &Parse::new(&Interner::new()),
            )
            .unwrap()
            .into_pod();
            let snapshot = Snapshot::new(c, None);
            let mut fw = default_framework(Release::OLDEST.into());
            fw.extenders = vec![cfg.clone()];
            fw.extender_clients = vec![Arc::new(Emptying(cfg))];
            let result = fw.schedule(&snapshot, &p);
            explain::build(&fw, &snapshot, &p, &result)
        };
        assert_eq!(
            run_with(false).preemption.unwrap().message,
            "preemption: expected at least one victim pod on node \"a\""
        );
        assert_eq!(
            run_with(true).preemption.unwrap().message,
            "no new claims to deallocate, preemption: no candidate node for preemption"
        );
    }
}
