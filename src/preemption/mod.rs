//! DefaultPreemption's evaluator (`framework/preemption` and `plugins/defaultpreemption`): which
//! nodes preemption might help, the victims on each (with PodDisruptionBudgets), and the candidate
//! the scheduler would nominate. Every potential node is evaluated; the real scheduler samples
//! some of them from a random offset, which the outcome reports.

use crate::framework::cycle_state::CycleState;
use crate::framework::extender;
use crate::framework::fit_error;
use crate::framework::plugin::Cx;
use crate::framework::post_filter::Preemption;
use crate::framework::runner::{Framework, Mode};
use crate::framework::status::NodeToStatus;
use crate::framework::status::{Code, Status};
use crate::framework::victims::{Candidate, Victim};
use crate::model::cluster::Pdb;
use crate::model::intern::Str;
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use rayon::prelude::*;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";

/// `DefaultPreemptionArgs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    pub min_candidate_nodes_percentage: i32,
    pub min_candidate_nodes_absolute: i32,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100,
        }
    }
}

impl Args {
    /// `calculateNumCandidates`: how many candidates the real scheduler looks for.
    pub fn num_candidates(&self, num_nodes: usize) -> usize {
        let n = num_nodes as i64 * i64::from(self.min_candidate_nodes_percentage) / 100;
        (n.max(i64::from(self.min_candidate_nodes_absolute)) as usize).min(num_nodes)
    }
}

/// `util.MoreImportantPod`: higher priority, then earlier start. A pod without a start time
/// counts as starting now, i.e. after every recorded start.
pub fn more_important(a: &Pod, b: &Pod) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| match (a.start_time, b.start_time) {
            (Some(x), Some(y)) => x.cmp(&y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        })
}

/// `filterPodsWithPDBViolation`: splits pods (most important first) into those whose eviction
/// would exceed a PDB's `disruptionsAllowed` and the rest, counting budgets as it goes.
fn split_by_pdb_violation(pods: Vec<Arc<Pod>>, pdbs: &[Pdb]) -> (Vec<Victim>, Vec<Victim>) {
    let mut allowed: Vec<i32> = pdbs.iter().map(|p| p.disruptions_allowed).collect();
    let (mut violating, mut fine) = (Vec::new(), Vec::new());
    for pod in pods {
        let mut violates = Vec::new();
        if !pod.labels.is_empty() {
            for (i, pdb) in pdbs.iter().enumerate() {
                if pdb.namespace != pod.namespace {
                    continue;
                }
                let Some(sel) = &pdb.selector else { continue };
                if sel.is_empty() || !sel.matches(&pod.labels) {
                    continue;
                }
                if pdb.disrupted_pods.contains(&pod.name) {
                    continue;
                }
                allowed[i] -= 1;
                if allowed[i] < 0 {
                    violates.push(format!("{}/{}", pdb.namespace, pdb.name));
                }
            }
        }
        let victim = Victim { pod, violates };
        if victim.violates.is_empty() {
            fine.push(victim);
        } else {
            violating.push(victim);
        }
    }
    (violating, fine)
}

/// `SelectVictimsOnNode` on a copy of the node and state.
fn select_victims_on_node(
    fw: &Framework,
    cx: &Cx,
    state: &CycleState,
    node_idx: usize,
) -> Result<Candidate, Status> {
    let pod = cx.pod;
    let mut node = cx.snapshot.nodes[node_idx].clone();
    let mut state = state.clone();
    let mut potential: Vec<Arc<Pod>> = Vec::new();
    for p in node.pods.clone() {
        if p.priority < pod.priority {
            node.remove_pod(p.uid);
            let s = fw.run_pre_filter_extension_remove_pod(cx, &mut state, &p, &node);
            if !s.is_success() {
                return Err(s);
            }
            potential.push(p);
        }
    }
    if potential.is_empty() {
        return Err(Status::unresolvable(NO_VICTIMS));
    }
    // `RunFilterPluginsWithNominatedPods`, stopping at the first failure as upstream does.
    let fits = |state: &CycleState, node: &NodeInfo| -> Status {
        fw.run_filter_plugins_with_nominated_pods(cx, state, node, Mode::Decide)
            .first
            .unwrap_or_else(Status::success)
    };
    let s = fits(&state, &node);
    if !s.is_success() {
        return Err(s);
    }
    potential.sort_by(|a, b| more_important(a, b));
    let (violating, fine) = split_by_pdb_violation(potential, &cx.snapshot.cluster.pdbs);
    let both_groups = !violating.is_empty() && !fine.is_empty();
    let mut victims = Vec::new();
    let mut num_violating = 0;
    for (group_violates, group) in [(true, violating), (false, fine)] {
        for v in group {
            node.add_pod(v.pod.clone());
            let s = fw.run_pre_filter_extension_add_pod(cx, &mut state, &v.pod, &node);
            if !s.is_success() {
                return Err(s);
            }
            let s = fits(&state, &node);
            if s.code == Code::Error {
                return Err(s);
            }
            if !s.is_success() {
                node.remove_pod(v.pod.uid);
                let s = fw.run_pre_filter_extension_remove_pod(cx, &mut state, &v.pod, &node);
                if !s.is_success() {
                    return Err(s);
                }
                if group_violates {
                    num_violating += 1;
                }
                victims.push(v);
            }
        }
    }
    if both_groups {
        victims.sort_by(|a, b| more_important(&a.pod, &b.pod));
    }
    if victims.is_empty() {
        return Err(Status::error(format!(
            "expected at least one victim pod on node {:?}",
            node.name().as_str()
        )));
    }
    Ok(Candidate {
        node: node.name(),
        victims,
        num_pdb_violations: num_violating,
    })
}

/// `GetEarliestPodStartTime` of the highest-priority victims, as nanoseconds; pods without a
/// start time count as "now", later than any recorded time.
fn earliest_start_of_highest(c: &Candidate) -> i128 {
    let start = |p: &Pod| p.start_time.map_or(i128::MAX, |t| t.as_nanosecond());
    let max_priority = c.victims.iter().map(|v| v.pod.priority).max().unwrap_or(0);
    c.victims
        .iter()
        .filter(|v| v.pod.priority == max_priority)
        .map(|v| start(&v.pod))
        .min()
        .unwrap_or(i128::MIN)
}

/// `pickOneNodeForPreemption`: the candidates left after each criterion in turn.
pub fn tied_candidates(candidates: &[Candidate]) -> Vec<Str> {
    type Criterion = fn(&Candidate) -> i128;
    let criteria: [Criterion; 5] = [
        |c| -(c.num_pdb_violations as i128),
        |c| -i128::from(c.victims.first().map_or(0, |v| v.pod.priority)),
        |c| {
            -c.victims
                .iter()
                .map(|v| i128::from(v.pod.priority) + i128::from(i32::MAX) + 1)
                .sum::<i128>()
        },
        |c| -(c.victims.len() as i128),
        earliest_start_of_highest,
    ];
    let mut left: Vec<&Candidate> = candidates.iter().collect();
    for f in criteria {
        if left.len() <= 1 {
            break;
        }
        let best = left.iter().map(|c| f(c)).max().unwrap_or(0);
        left.retain(|c| f(c) == best);
    }
    let mut names: Vec<Str> = left.iter().map(|c| c.node).collect();
    names.sort();
    names
}

/// A pod being deleted because the scheduler preempted it.
fn terminating_by_preemption(p: &Pod) -> bool {
    p.deletion_timestamp.is_some() && p.disruption_target_by_preemption
}

/// `Evaluator.Preempt` without the API calls.
pub fn preempt(
    fw: &Framework,
    args: &Args,
    cx: &Cx,
    state: &CycleState,
    statuses: &NodeToStatus,
) -> (Status, Preemption) {
    // Dry runs decide; their verdicts are not explained.
    let cx = &Cx {
        explain: false,
        ..*cx
    };
    let pod = cx.pod;
    let snapshot = cx.snapshot;
    let mut out = Preemption::default();
    if pod.preemption_never {
        out.not_eligible = Some("not eligible due to preemptionPolicy=Never.".into());
    } else if let Some(nominated) = pod.nominated_node_name {
        let nominated_status = statuses.get(nominated);
        if nominated_status.code != Code::UnschedulableAndUnresolvable
            && let Some(ni) = snapshot.get(nominated)
            && ni
                .pods
                .iter()
                .any(|p| p.priority < pod.priority && terminating_by_preemption(p))
        {
            out.not_eligible =
                Some("not eligible due to a terminating pod on the nominated node.".into());
        }
    }
    if let Some(msg) = &out.not_eligible {
        out.message = msg.clone();
        return (Status::unschedulable(format!("preemption: {msg}")), out);
    }
    // `NodesForStatusCode(Unschedulable)`.
    let potential: Vec<usize> = (0..snapshot.num_nodes())
        .filter(|&i| statuses.get(snapshot.nodes[i].name()).code == Code::Unschedulable)
        .collect();
    out.potential_nodes = potential
        .iter()
        .map(|&i| snapshot.nodes[i].name())
        .collect();
    out.sampled_candidates = args.num_candidates(potential.len());
    let evaluate = |&i: &usize| (i, select_victims_on_node(fw, cx, state, i));
    let results: Vec<(usize, Result<Candidate, Status>)> = if fw.parallel && potential.len() > 16 {
        potential.par_iter().map(evaluate).collect()
    } else {
        potential.iter().map(evaluate).collect()
    };
    let mut dry_run = NodeToStatus {
        by_node: HashMap::new(),
        absent: Status::unresolvable(NOT_HELPFUL),
    };
    let mut errors = Vec::new();
    for (i, r) in results {
        match r {
            Ok(c) => out.candidates.push(c),
            Err(s) => {
                let name = snapshot.nodes[i].name();
                if s.code == Code::Error {
                    errors.push(s.message());
                }
                dry_run.by_node.insert(name, s.clone());
                out.failures.push((name, s));
            }
        }
    }
    out.candidates.sort_by_key(|c| c.node);
    out.failures.sort_by_key(|(n, _)| *n);
    if out.candidates.is_empty() {
        if !errors.is_empty() {
            out.message = errors.join(", ");
            return (Status::error(format!("preemption: {}", out.message)), out);
        }
        let explicit = dry_run.by_node.len();
        out.message = fit_error::message(snapshot.num_nodes(), None, &dry_run, explicit);
        return (
            Status::unschedulable(format!("preemption: {}", out.message)),
            out,
        );
    }
    if !fw.extender_clients.is_empty() {
        match extender::process_preemption(
            &fw.extender_clients,
            pod,
            snapshot,
            &out.candidates,
            &mut out.extender_calls,
        ) {
            Ok(answer) => {
                out.candidates = answer.candidates;
                out.dropped_by_extenders = answer.dropped;
            }
            Err(e) => {
                out.message = e;
                return (Status::error(format!("preemption: {}", out.message)), out);
            }
        }
        if out.candidates.is_empty() {
            out.message = "no candidate node for preemption".into();
            return (
                Status::unschedulable(format!("preemption: {}", out.message)),
                out,
            );
        }
    }
    out.tied = tied_candidates(&out.candidates);
    out.nominated_node = out.tied.first().copied();
    let status = match out
        .nominated_node
        .filter(|_| fw.features.preemption_success_message)
    {
        Some(node) => {
            let victims = out
                .candidates
                .iter()
                .find(|c| c.node == node)
                .map_or(0, |c| c.victims.len());
            Status::new(
                Code::Success,
                format!(
                    "preemption: found a potential placement for pod on node {node}, preempting {victims} victims"
                ),
            )
        }
        None => Status::success(),
    };
    (status, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_counts() {
        let args = Args::default();
        assert_eq!(args.num_candidates(3), 3);
        assert_eq!(args.num_candidates(5000), 500);
        assert_eq!(args.num_candidates(500), 100);
    }
}

#[cfg(test)]
mod scenario_tests {
    use crate::release::Release;
    use crate::testing::{cluster, explain, explain_as, node, pod};
    use serde_json::json;

    fn pdb(name: &str, app: &str, allowed: i32) -> serde_json::Value {
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": "ns"},
               "spec": {"selector": {"matchLabels": {"app": app}}}, "status": {"disruptionsAllowed": allowed}})
    }

    #[test]
    fn prefers_the_node_whose_victims_violate_no_pdb() {
        let c = cluster(vec![
            node("a", "2", json!({})),
            node("b", "2", json!({})),
            pod("ns/protected", Some("a"), "2", 10, json!({"app": "db"})),
            pod("ns/free", Some("b"), "2", 10, json!({"app": "batch"})),
            pdb("db", "db", 0),
        ]);
        let e = explain(c, pod("ns/new", None, "1", 100, json!({})));
        let p = e.preemption.unwrap();
        assert_eq!(p.nominated_node, "b");
        assert_eq!(p.victims, ["ns/free"]);
        let a = p.candidates.iter().find(|c| c.node == "a").unwrap();
        assert_eq!(a.num_pdb_violations, 1);
        assert_eq!(a.victims[0].violates, ["ns/db"]);
    }

    #[test]
    fn from_1_37_a_successful_preemption_says_where_and_how_many() {
        let c = cluster(vec![
            node("a", "2", json!({})),
            pod("ns/low-1", Some("a"), "1", 1, json!({})),
            pod("ns/low-2", Some("a"), "1", 1, json!({})),
        ]);
        let new = pod("ns/new", None, "2", 100, json!({}));
        let e = explain_as(Release::parse("1.37").unwrap(), c.clone(), new.clone());
        assert_eq!(
            e.message,
            "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential placement for pod on node a, preempting 2 victims"
        );
        let e = explain_as(Release::parse("1.36").unwrap(), c, new);
        assert_eq!(e.message, "0/1 nodes are available: 1 Insufficient cpu.");
        assert_eq!(e.preemption.unwrap().victims, ["ns/low-1", "ns/low-2"]);
    }

    #[test]
    fn equal_priority_pods_are_never_victims() {
        let c = cluster(vec![
            node("a", "1", json!({})),
            pod("ns/peer", Some("a"), "1", 100, json!({})),
        ]);
        let e = explain(c, pod("ns/new", None, "1", 100, json!({})));
        assert_eq!(
            e.message,
            "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
        );
    }

    #[test]
    fn policy_never_is_not_eligible() {
        let c = cluster(vec![
            node("a", "1", json!({})),
            pod("ns/low", Some("a"), "1", 1, json!({})),
        ]);
        let mut p = pod("ns/new", None, "1", 100, json!({}));
        p["spec"]["preemptionPolicy"] = json!("Never");
        let e = explain(c, p);
        assert_eq!(
            e.preemption.unwrap().not_eligible.as_deref(),
            Some("not eligible due to preemptionPolicy=Never.")
        );
    }

    #[test]
    fn reprieves_the_most_important_pods_first() {
        // Evicting either pod frees enough; the higher-priority one is reprieved.
        let c = cluster(vec![
            node("a", "3", json!({})),
            pod("ns/mid", Some("a"), "1", 50, json!({})),
            pod("ns/low", Some("a"), "1", 5, json!({})),
            pod("ns/keep", Some("a"), "1", 500, json!({})),
        ]);
        let e = explain(c, pod("ns/new", None, "1", 100, json!({})));
        assert_eq!(e.preemption.unwrap().victims, ["ns/low"]);
    }

    #[test]
    fn a_nominated_pod_of_higher_priority_keeps_its_room() {
        let mut nominated = pod("ns/first", None, "1", 1000, json!({}));
        nominated["status"]["nominatedNodeName"] = json!("a");
        let c = cluster(vec![
            node("a", "2", json!({})),
            node("b", "1", json!({})),
            nominated,
        ]);
        let e = explain(c, pod("ns/new", None, "2", 100, json!({})));
        // On a, the nominated pod is assumed running: only 1 cpu is left; b is too small.
        assert!(e.selected.is_empty());
        let a = e.nodes.iter().find(|n| n.name.as_str() == "a").unwrap();
        assert_eq!(a.reasons, ["Insufficient cpu"]);
    }

    #[test]
    fn unresolvable_nodes_are_not_helpful() {
        let c = cluster(vec![
            node("a", "1", json!({"zone": "x"})),
            pod("ns/low", Some("a"), "1", 1, json!({})),
        ]);
        let mut p = pod("ns/new", None, "1", 100, json!({}));
        p["spec"]["nodeSelector"] = json!({"zone": "y"});
        let e = explain(c, p);
        assert!(
            e.message.ends_with(
                "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
            ),
            "{}",
            e.message
        );
    }
}
