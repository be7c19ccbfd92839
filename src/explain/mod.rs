//! The explanation: the documented, stable schema (`-o json|yaml`) that scripts, the conformance
//! suite and the table view all read. Built from a `CycleResult`; renderers live beside it.

pub mod extenders;
pub mod facts;
pub mod placement;
pub mod table;

use crate::dra::allocator::RequestCensus;
use crate::framework::facts::{Detail, ScoreInput};
use crate::framework::plugin::Cx;
use crate::framework::runner::Framework;
use crate::framework::schedule_one::{CycleResult, NodeOutcome};
use crate::framework::snapshot::Snapshot;
use crate::framework::status::{Code, Status};
use crate::model::intern::Str;
use crate::model::pod::Pod;
use crate::plugins::dynamic_resources;
use crate::release::{Release, ReleaseChoice};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PluginStatus {
    pub code: Code,
    pub reasons: Vec<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub enum Stage {
    /// The pod was never tried (a PreEnqueue plugin such as SchedulingGates held it back).
    PreEnqueue,
    /// PreFilter rejected the pod, or its node list left this node out.
    PreFilter,
    /// A Filter plugin or a filter extender rejected the node.
    Filter,
    /// kube-scheduler did not evaluate the node: the pod's nominated node passed first (the
    /// Filter plugins' verdicts here are in `allReasons`), or the node passed the Filter plugins
    /// and a filter extender's error ended the cycle.
    NotEvaluated,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeExplanation {
    pub name: Str,
    pub feasible: bool,
    /// Where the node was rejected; null for a feasible node.
    pub stage: Option<Stage>,
    /// The first failing plugin, where the real scheduler stops.
    pub plugin: Option<&'static str>,
    pub code: Option<Code>,
    /// That plugin's reasons: what the FailedScheduling message counts.
    pub reasons: Vec<String>,
    /// Every failing filter plugin, each judged on its own.
    pub all_reasons: BTreeMap<&'static str, PluginStatus>,
    /// Normalised, weighted score per Score plugin (feasible nodes only).
    pub scores: BTreeMap<&'static str, i64>,
    pub total: Option<i64>,
    /// Where DynamicResources rejected the node: per request of the pod's pending claims, the
    /// devices there that could serve it and why the others cannot.
    pub devices: Vec<RequestCensus>,
    /// What each failing plugin saw, behind its reasons (docs/json.md: the facts).
    pub facts: Vec<FactExplanation>,
    /// Per Score plugin (feasible nodes): its raw score and the inputs behind it.
    pub score_inputs: BTreeMap<&'static str, ScoreInputsExplanation>,
    /// Where DynamicResources rejected the node only because this release's allocator keeps
    /// what a device it rejected or backtracked from took: the release that gives it back and
    /// allocates the pod's claims here.
    pub allocator_fixed_in: Option<Release>,
}

/// One fact: the plugin, the reason it explains (upstream's text, as in `reasons`), and the
/// plugin's typed fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactExplanation {
    pub plugin: &'static str,
    pub reason: String,
    pub detail: Detail,
}

impl Serialize for FactExplanation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("plugin", self.plugin)?;
        m.serialize_entry("reason", &self.reason)?;
        self.detail.serialize_fields(&mut m)?;
        m.end()
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScoreInputsExplanation {
    /// The plugin's score before normalisation and weight.
    pub raw: i64,
    pub inputs: Vec<ScoreInput>,
}

/// The facts a status carries, each with the text of the reason it explains.
pub fn facts_of(s: &Status) -> impl Iterator<Item = FactExplanation> + '_ {
    s.facts.iter().map(|f| FactExplanation {
        plugin: s.plugin,
        reason: s
            .reasons
            .get(usize::from(f.reason))
            .cloned()
            .unwrap_or_default(),
        detail: f.detail.clone(),
    })
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreFilterExplanation {
    pub code: Code,
    pub plugin: String,
    pub reasons: Vec<String>,
    /// The nodes PreFilter plugins restricted the pod to; null means all nodes.
    pub node_names: Option<Vec<String>>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VictimExplanation {
    pub pod: String,
    pub priority: i32,
    /// PodDisruptionBudgets whose budget this eviction would exceed.
    pub violates: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateExplanation {
    pub node: String,
    pub victims: Vec<VictimExplanation>,
    #[serde(rename = "numPDBViolations")]
    pub num_pdb_violations: usize,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreemptionExplanation {
    /// The node DefaultPreemption nominates (empty if none): the first of `tiedNodes`.
    pub nominated_node: String,
    /// The pods it would evict there, `namespace/name`, sorted.
    pub victims: Vec<String>,
    pub candidates: Vec<CandidateExplanation>,
    /// Candidates equally good after every criterion; the real scheduler picks one arbitrarily.
    pub tied_nodes: Vec<String>,
    /// The PostFilter plugins' message, as appended to the FailedScheduling event.
    pub message: String,
    /// Why the pod may not preempt, when it may not.
    pub not_eligible: Option<String>,
    /// Nodes where evicting pods might help (their filter failure is resolvable).
    pub potential_nodes: Vec<String>,
    /// Why preemption does not help on each potential node that is not a candidate.
    pub failures: BTreeMap<String, PluginStatus>,
    /// How many candidates the real scheduler gathers (from a random start) before choosing.
    pub sampled_candidates: usize,
    /// Candidates an extender's preempt verb left out: node → extender.
    pub dropped_by_extenders: BTreeMap<String, String>,
}

/// One device the DynamicResources Reserve would allocate.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct AllocatedDeviceExplanation {
    /// `<request>` or `<request>/<subrequest>`.
    pub request: String,
    pub driver: Str,
    pub pool: Str,
    pub device: Str,
    /// Present only when set, as the API writes `adminAccess` in an allocation result.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub admin_access: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub pod: String,
    pub priority: i32,
    /// The profile (`schedulerName`) that scheduled the pod.
    pub profile: String,
    /// The kube-scheduler release modelled and why.
    #[serde(flatten)]
    pub scheduler: ReleaseChoice,
    pub num_nodes: usize,
    pub prefilter: PreFilterExplanation,
    /// Every node: feasible ones best first, then the others by name.
    pub nodes: Vec<NodeExplanation>,
    pub feasible: Vec<Str>,
    /// The nodes with the highest total (the real scheduler picks one at random), sorted.
    pub selected: Vec<Str>,
    /// Exactly one node was feasible, so the real scheduler did not score (scores shown anyway).
    pub scoring_skipped: bool,
    /// The FailedScheduling message; empty when the pod fits.
    pub message: String,
    /// The FitError text before the PostFilter plugins' part.
    pub message_before_post_filter: String,
    pub preemption: Option<PreemptionExplanation>,
    /// What VolumeBinding's Reserve/PreBind would do on the selected node.
    pub binding: Vec<String>,
    /// Per selected node, the devices DynamicResources would allocate to each claim not
    /// allocated yet, in allocation order; absent when nothing is allocated.
    pub dra_allocation: BTreeMap<Str, BTreeMap<Str, Vec<AllocatedDeviceExplanation>>>,
    /// Where the real scheduler's view differs from this exhaustive one.
    pub notes: Vec<String>,
    /// A plugin failed with an error (the real scheduler would retry the pod).
    pub error: Option<String>,
    /// The configuration's scheduler extenders, and whether they were called.
    pub extenders: Option<extenders::ExtendersExplanation>,
    /// Every request made to an extender, in order.
    pub extender_calls: Vec<extenders::CallExplanation>,
}

impl Explanation {
    /// The pod fits: a node would be chosen.
    pub fn fits(&self) -> bool {
        !self.selected.is_empty()
    }
}

/// A few names for a sentence: the first three, then how many more.
pub fn list_names<S: AsRef<str>>(names: &[S]) -> String {
    const SHOWN: usize = 3;
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    if names.len() <= SHOWN {
        names.join(", ")
    } else {
        format!(
            "{} and {} more",
            names[..SHOWN].join(", "),
            names.len() - SHOWN
        )
    }
}

fn plugin_status(s: &Status) -> PluginStatus {
    PluginStatus {
        code: s.code,
        reasons: s.reasons.clone(),
    }
}

/// The inputs behind the scores of the feasible nodes (`nodes[].scoreInputs`), of every one or
/// of the one named: computed only for what is shown (the JSON, `--node`), as each takes every
/// Score plugin over again.
pub fn add_score_inputs(
    e: &mut Explanation,
    fw: &Framework,
    snapshot: &Snapshot,
    pod: &Pod,
    r: &CycleResult,
    only: Option<&str>,
) {
    let Some(state) = &r.state else {
        return;
    };
    let cx = Cx {
        explain: true,
        ..Cx::new(pod, snapshot)
    };
    for n in e.nodes.iter_mut().filter(|n| n.feasible) {
        if only.is_some_and(|name| name != n.name.as_str()) {
            continue;
        }
        let Some(ni) = snapshot.node_index(n.name).map(|i| &snapshot.nodes[i]) else {
            continue;
        };
        n.score_inputs = fw
            .score_inputs(&cx, state, ni)
            .into_iter()
            .map(|(plugin, raw, inputs)| (plugin, ScoreInputsExplanation { raw, inputs }))
            .collect();
    }
}

pub fn build(fw: &Framework, snapshot: &Snapshot, pod: &Pod, r: &CycleResult) -> Explanation {
    let name_of = |i: usize| snapshot.nodes[i].name();
    let cx = Cx::new(pod, snapshot);
    // Node index → its scores, for the feasible nodes.
    let mut score_of: Vec<Option<&crate::framework::runner::NodeScores>> =
        vec![None; snapshot.num_nodes()];
    for (&i, s) in r.feasible.iter().zip(&r.scores) {
        score_of[i] = Some(s);
    }
    // Feasible nodes best first, then the others, by name: ordered as indices, since moving
    // thousands of explanations around costs more than building them.
    let mut is_feasible = vec![false; snapshot.num_nodes()];
    for &i in &r.feasible {
        is_feasible[i] = r.gated.is_none();
    }
    let feasible_at = |i: usize| is_feasible[i];
    let mut keyed: Vec<(bool, Option<i64>, &str, usize)> = (0..snapshot.num_nodes())
        .map(|i| {
            (
                !feasible_at(i),
                score_of[i].map(|s| -s.total),
                snapshot.nodes[i].name().as_str(),
                i,
            )
        })
        .collect();
    // Node names are unique, so the order is total and an unstable sort is deterministic.
    keyed.sort_unstable();
    let order = keyed.into_iter().map(|(_, _, _, i)| i);
    let nodes: Vec<NodeExplanation> = order
        .map(|i| {
            let ni = &snapshot.nodes[i];
            let mut e = NodeExplanation {
                name: ni.name(),
                feasible: false,
                stage: None,
                plugin: None,
                code: None,
                reasons: Vec::new(),
                all_reasons: BTreeMap::new(),
                scores: BTreeMap::new(),
                total: None,
                devices: Vec::new(),
                facts: Vec::new(),
                score_inputs: BTreeMap::new(),
                allocator_fixed_in: None,
            };
            if let Some(g) = &r.gated {
                e.stage = Some(Stage::PreEnqueue);
                e.plugin = Some(g.plugin);
                e.code = Some(g.code);
                e.reasons = g.reasons.clone();
                e.facts = facts_of(g).collect();
                return e;
            }
            match &r.nodes[i] {
                NodeOutcome::Excluded => {
                    if let Some(s) = &r.excluded_status {
                        e.stage = Some(Stage::PreFilter);
                        e.plugin = (!s.plugin.is_empty()).then_some(s.plugin);
                        e.code = Some(s.code);
                        e.reasons = s.reasons.clone();
                        e.facts = facts_of(s).collect();
                    }
                }
                NodeOutcome::Filtered(_) if feasible_at(i) => {
                    e.feasible = true;
                    if let Some(scores) = score_of[i] {
                        e.scores = scores.by_plugin.iter().copied().collect();
                        e.total = Some(scores.total);
                    }
                }
                // The nominated node passed first: kube-scheduler filtered no other node.
                NodeOutcome::Filtered(f) if r.nominated_fast_path.is_some() => {
                    e.stage = Some(Stage::NotEvaluated);
                    e.all_reasons = f.all.iter().map(|s| (s.plugin, plugin_status(s))).collect();
                    e.facts = f.all.iter().flat_map(facts_of).collect();
                }
                NodeOutcome::Filtered(f) => match &f.first {
                    Some(first) => {
                        e.stage = Some(Stage::Filter);
                        e.plugin = Some(first.plugin);
                        e.code = Some(first.code);
                        e.reasons = first.reasons.clone();
                        e.all_reasons =
                            f.all.iter().map(|s| (s.plugin, plugin_status(s))).collect();
                        // A node a filter extender rejected has its status only in `first`.
                        let extender =
                            Some(first).filter(|s| !e.all_reasons.contains_key(s.plugin));
                        e.facts = f.all.iter().chain(extender).flat_map(facts_of).collect();
                        if e.all_reasons.contains_key(dynamic_resources::NAME) {
                            e.devices = dynamic_resources::device_report(&fw.features, &cx, ni);
                            e.allocator_fixed_in =
                                dynamic_resources::allocator_fixed_in(&fw.features, &cx, ni);
                        }
                    }
                    // A plugin's error stopped the cycle: no node has a verdict.
                    None if r.error.is_some() => {}
                    None => e.stage = Some(Stage::NotEvaluated),
                },
            }
            e
        })
        .collect();

    let prefilter = match &r.gated {
        Some(g) => PreFilterExplanation {
            code: g.code,
            plugin: g.plugin.to_string(),
            reasons: g.reasons.clone(),
            node_names: None,
        },
        None => PreFilterExplanation {
            code: r.prefilter.code,
            plugin: r.prefilter.plugin.to_string(),
            reasons: r.prefilter.reasons.clone(),
            node_names: r
                .prefilter_nodes
                .as_ref()
                .map(|s| s.iter().map(|n| n.to_string()).collect()),
        },
    };

    let mut feasible: Vec<Str> = r.feasible.iter().map(|&i| name_of(i)).collect();
    feasible.sort();
    let selected: Vec<Str> = r.selected.iter().map(|&i| name_of(i)).collect();

    let preemption = r.post_filter.as_ref().map(|pf| {
        let outcome = pf.preemption.clone().unwrap_or_default();
        let message = pf.status.message();
        let nominated = outcome.nominated_node;
        let mut victims: Vec<String> = outcome
            .candidates
            .iter()
            .find(|c| Some(c.node) == nominated)
            .map(|c| c.victims.iter().map(|v| v.pod.key()).collect())
            .unwrap_or_default();
        victims.sort();
        PreemptionExplanation {
            nominated_node: nominated.map(|n| n.to_string()).unwrap_or_default(),
            victims,
            candidates: outcome
                .candidates
                .iter()
                .map(|c| CandidateExplanation {
                    node: c.node.to_string(),
                    victims: c
                        .victims
                        .iter()
                        .map(|v| VictimExplanation {
                            pod: v.pod.key(),
                            priority: v.pod.priority,
                            violates: v.violates.clone(),
                        })
                        .collect(),
                    num_pdb_violations: c.num_pdb_violations,
                })
                .collect(),
            tied_nodes: outcome.tied.iter().map(|n| n.to_string()).collect(),
            message,
            not_eligible: outcome.not_eligible.clone(),
            potential_nodes: outcome
                .potential_nodes
                .iter()
                .map(|n| n.to_string())
                .collect(),
            failures: outcome
                .failures
                .iter()
                .map(|(n, s)| (n.to_string(), plugin_status(s)))
                .collect(),
            sampled_candidates: outcome.sampled_candidates,
            dropped_by_extenders: outcome
                .dropped_by_extenders
                .iter()
                .map(|(n, e)| (n.to_string(), e.to_string()))
                .collect(),
        }
    });

    let mut notes = Vec::new();
    if r.gated.is_none() && r.error.is_none() {
        if r.nominated_fast_path.is_some() {
            notes.push(format!(
                "the pod is nominated to {} (status.nominatedNodeName, set when it preempted pods there) and that node passes every filter: kube-scheduler takes it without evaluating other nodes",
                selected.first().cloned().unwrap_or_default()
            ));
        } else if let Some(nominated) = pod.nominated_node_name {
            let why = nodes
                .iter()
                .find(|n| n.name == nominated)
                .map(|n| {
                    format!(
                        "it fails {}: {}",
                        n.plugin.unwrap_or("PreFilter"),
                        n.reasons.join("; ")
                    )
                })
                .unwrap_or_else(|| "that node is not in the cluster".into());
            notes.push(format!(
                "the pod is nominated to {nominated} (status.nominatedNodeName, set when it preempted pods there), but {why}; kube-scheduler therefore evaluates every node"
            ));
        }
        if r.nominated_fast_path.is_none() && r.scoring_skipped {
            notes.push("exactly one node is feasible: kube-scheduler chooses it without scoring; the scores are shown for reference".into());
        }
        if r.feasible.len() > r.num_nodes_to_find {
            notes.push(format!(
                "kube-scheduler stops filtering after finding {} feasible nodes (percentageOfNodesToScore) and scores only those, starting where its previous cycle stopped; its choice may differ among the {} feasible nodes shown here",
                r.num_nodes_to_find,
                r.feasible.len()
            ));
        }
        if selected.len() > 1 && r.nominated_fast_path.is_none() {
            notes.push(format!(
                "{} nodes tie for the highest score: kube-scheduler picks one of them at random",
                selected.len()
            ));
        }
    }

    let (extenders, extender_calls, extender_notes) =
        extenders::build(fw, pod, r, !selected.is_empty());
    notes.extend(extender_notes);

    Explanation {
        pod: pod.key(),
        priority: pod.priority,
        profile: fw.profile.clone(),
        scheduler: fw.release,
        num_nodes: snapshot.num_nodes(),
        prefilter,
        nodes,
        feasible,
        selected,
        scoring_skipped: r.scoring_skipped,
        message: r.message.clone(),
        message_before_post_filter: r.message_before_post_filter.clone(),
        preemption,
        binding: r.binding.clone(),
        dra_allocation: r
            .device_allocations
            .iter()
            .map(|(node, claims)| {
                let claims = claims
                    .iter()
                    .map(|c| {
                        let devices = c
                            .devices
                            .iter()
                            .map(|d| AllocatedDeviceExplanation {
                                request: d.request.clone(),
                                driver: d.id.driver,
                                pool: d.id.pool,
                                device: d.id.device,
                                admin_access: d.admin_access,
                            })
                            .collect();
                        (c.claim, devices)
                    })
                    .collect();
                (name_of(*node), claims)
            })
            .collect(),
        notes,
        error: r.error.as_ref().map(Status::message),
        extenders,
        extender_calls,
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::{cluster, explain, node, pod};
    use serde_json::json;

    #[test]
    fn a_nomination_is_explained() {
        let c = cluster(vec![node("a", "2", json!({})), node("b", "4", json!({}))]);
        let mut p = pod("ns/p", None, "1", 0, json!({}));
        p["status"]["nominatedNodeName"] = json!("a");
        let e = explain(c.clone(), p.clone());
        assert_eq!(e.selected, ["a"], "the nominated node wins without scoring");
        assert!(e.notes[0].contains("nominated to a"), "{:?}", e.notes);
        p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("3");
        let e = explain(c, p);
        assert_eq!(e.selected, ["b"]);
        assert!(
            e.notes[0].contains("but it fails NodeResourcesFit: Insufficient cpu"),
            "{:?}",
            e.notes
        );
    }
}
