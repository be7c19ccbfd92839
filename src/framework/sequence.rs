//! Placing replicas one after another, each seeing the ones before it, as kube-scheduler does
//! when a Deployment scales up: the answer to "where would N replicas go" and "how many fit".

use super::runner::Framework;
use super::snapshot::Snapshot;
use crate::model::intern::Str;
use crate::model::pod::Pod;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub struct Placement {
    pub pod: String,
    pub node: Str,
    pub score: Option<i64>,
    /// Nodes tied with `node` for the best score; the real scheduler picks among them at random,
    /// this tool takes the first by name so runs are repeatable.
    pub tied: Vec<Str>,
}

#[derive(Clone, Debug, Default)]
pub struct Sequence {
    pub placements: Vec<Placement>,
    /// The FailedScheduling message of the first replica that fit nowhere.
    pub stopped: Option<String>,
}

/// The name of the `i`-th replica (from 1) of a pod named `base`.
pub fn replica_name(base: &str, i: usize) -> String {
    format!("{base}-{i}")
}

/// Places up to `limit` replicas of `template`, stopping at the first that fits nowhere. Each
/// placement is added to `snapshot`, so later replicas see the earlier ones.
pub fn place(fw: &Framework, snapshot: &mut Snapshot, template: &Pod, limit: usize) -> Sequence {
    let mut out = Sequence::default();
    for i in 1..=limit {
        let mut pod = template.clone();
        let name = replica_name(&template.name, i);
        pod.name = Str::new(&name);
        pod.uid = Str::new(format!(
            "kubectl-sched-whatif/{}/{name}",
            template.namespace
        ));
        let result = fw.decide(snapshot, &pod);
        let Some(&chosen) = result.selected.first() else {
            out.stopped = Some(match result.error {
                Some(e) => e.message(),
                None => result.message,
            });
            break;
        };
        let score = result
            .feasible
            .iter()
            .position(|&f| f == chosen)
            .and_then(|p| result.scores.get(p))
            .map(|s| s.total);
        let node = snapshot.nodes[chosen].name();
        out.placements.push(Placement {
            pod: name,
            node,
            score: if result.scoring_skipped { None } else { score },
            tied: result
                .selected
                .iter()
                .map(|&s| snapshot.nodes[s].name())
                .collect(),
        });
        pod.node_name = Some(node);
        snapshot.assume(Arc::new(pod), node);
    }
    out
}
