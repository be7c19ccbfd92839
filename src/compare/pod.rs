//! One pod under two releases: its answers side by side, what differs, and why.

use super::switches::{self, Cause};
use crate::explain::{Explanation, NodeExplanation, Stage};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The fields whose difference is a different decision: the feasible nodes, the node(s) chosen,
/// the FailedScheduling message, preemption (and a cycle that fails with an error). Scores and
/// per-node verdicts are shown, but a difference there alone is not a different decision.
pub const DECISIONS: [&str; 5] = ["feasible", "selected", "message", "preemption", "error"];

/// What differs between two answers, field by field, in the answer's terms (`answer`): a field's
/// two values as `{base, other}`; per node for `filter` and `allFilters`, per node and plugin
/// (and `total`) for `scores`.
pub type Differences = Map<String, Value>;

/// One pod's answers under two releases.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodComparison {
    pub pod: String,
    /// The decisions (`DECISIONS`) are the same.
    pub same: bool,
    pub differences: Differences,
    /// The switches set differently in the two releases that belong to a plugin whose filter,
    /// score or message differs.
    pub because: Vec<Cause>,
    /// Plugins whose output differs though none of their switches does: they see a cluster the
    /// other differences changed, or are scored against other nodes.
    pub unattributed: Vec<&'static str>,
}

impl PodComparison {
    pub fn new(base: &Explanation, other: &Explanation) -> PodComparison {
        let (a, b) = (answer(base), answer(other));
        let differences = diff(&a, &b);
        let same = !DECISIONS.iter().any(|k| differences.contains_key(*k));
        let plugins = plugins_differing(base, other, &differences);
        let causes = switches::differing(&base.scheduler.features(), &other.scheduler.features());
        let because: Vec<Cause> = causes
            .iter()
            .filter(|c| plugins.contains(c.plugin))
            .cloned()
            .collect();
        let unattributed = plugins
            .iter()
            .copied()
            .filter(|p| !because.iter().any(|c| c.plugin == *p))
            .collect();
        PodComparison {
            pod: base.pod.clone(),
            same,
            differences,
            because,
            unattributed,
        }
    }

    /// Only scores (or per-node verdicts that change no decision) differ.
    pub fn identical(&self) -> bool {
        self.differences.is_empty()
    }
}

/// A pod's answer in the terms the conformance cases record it in.
pub fn answer(e: &Explanation) -> Value {
    let errored = e.error.is_some();
    let mut filter = Map::new();
    let mut all_filters = Map::new();
    let mut scores = Map::new();
    for n in &e.nodes {
        let name = n.name.to_string();
        if n.stage == Some(Stage::Filter) && !errored {
            filter.insert(
                name.clone(),
                json!({"plugin": n.plugin, "code": n.code, "reasons": n.reasons}),
            );
            if !n.all_reasons.is_empty() {
                all_filters.insert(name.clone(), json!(n.all_reasons));
            }
        }
        if n.feasible {
            scores.insert(name, json!({"plugins": n.scores, "total": n.total}));
        }
    }
    let preemption = e.preemption.as_ref().map(|p| {
        let nominated: Vec<&str> = if p.tied_nodes.is_empty() {
            Some(p.nominated_node.as_str())
                .filter(|n| !n.is_empty())
                .into_iter()
                .collect()
        } else {
            p.tied_nodes.iter().map(String::as_str).collect()
        };
        // Among tied candidates kube-scheduler picks one arbitrarily: their victims are not a
        // decision of the release.
        let victims = (nominated.len() == 1).then_some(&p.victims);
        json!({"nominatedNodes": nominated, "victims": victims, "message": p.message})
    });
    let mut out = json!({
        "prefilter": e.prefilter,
        "filter": filter,
        "allFilters": all_filters,
        "feasible": e.feasible,
        "scores": scores,
        "scoringSkipped": e.scoring_skipped,
        "selected": e.selected,
        "message": e.message,
        "messageBeforePostFilter": e.message_before_post_filter,
        "preemption": preemption,
        "error": e.error,
    });
    if !e.dra_allocation.is_empty() {
        out["draAllocation"] = json!(e.dra_allocation);
    }
    out
}

fn pair(base: &Value, other: &Value) -> Value {
    json!({"base": base, "other": other})
}

/// What differs between two answers (`Differences`).
pub fn diff(base: &Value, other: &Value) -> Differences {
    let empty = Map::new();
    let (a, b) = (
        base.as_object().unwrap_or(&empty),
        other.as_object().unwrap_or(&empty),
    );
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let mut out = Map::new();
    for key in keys {
        let (va, vb) = (
            &a.get(key).cloned().unwrap_or(Value::Null),
            &b.get(key).cloned().unwrap_or(Value::Null),
        );
        if va == vb {
            continue;
        }
        let per_node = match key.as_str() {
            "filter" | "allFilters" => by_key(va, vb, pair),
            "scores" => by_key(va, vb, |x, y| {
                let plugins = |v: &Value| {
                    let mut m = v["plugins"].as_object().cloned().unwrap_or_default();
                    m.insert("total".into(), v["total"].clone());
                    Value::Object(m)
                };
                Value::Object(by_key(&plugins(x), &plugins(y), pair))
            }),
            _ => {
                out.insert(key.clone(), pair(va, vb));
                continue;
            }
        };
        out.insert(key.clone(), Value::Object(per_node));
    }
    out
}

/// The keys of two objects whose values differ (null where one lacks it), each made by `f`.
fn by_key(a: &Value, b: &Value, f: impl Fn(&Value, &Value) -> Value) -> Map<String, Value> {
    let empty = Map::new();
    let (a, b) = (
        a.as_object().unwrap_or(&empty),
        b.as_object().unwrap_or(&empty),
    );
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (x, y) = (
                a.get(k).unwrap_or(&Value::Null),
                b.get(k).unwrap_or(&Value::Null),
            );
            (x != y).then(|| (k.clone(), f(x, y)))
        })
        .collect()
}

/// The plugins whose filter verdict, score or message differs between the two answers.
fn plugins_differing(
    base: &Explanation,
    other: &Explanation,
    differences: &Differences,
) -> BTreeSet<&'static str> {
    let mut out = BTreeSet::new();
    for a in &base.nodes {
        let Some(b) = other.nodes.iter().find(|n| n.name == a.name) else {
            continue;
        };
        filters_differing(a, b, &mut out);
        if a.feasible && b.feasible {
            for plugin in a.scores.keys().chain(b.scores.keys()) {
                if a.scores.get(plugin) != b.scores.get(plugin) {
                    out.insert(*plugin);
                }
            }
        }
    }
    if base.prefilter.plugin != other.prefilter.plugin
        || base.prefilter.reasons != other.prefilter.reasons
    {
        for p in [&base.prefilter.plugin, &other.prefilter.plugin] {
            if let Some(name) = static_name(p, base, other) {
                out.insert(name);
            }
        }
    }
    // Preemption runs only for a pod that fits nowhere: its difference counts only where it
    // ran under both.
    if differences.contains_key("preemption")
        && base.preemption.is_some()
        && other.preemption.is_some()
    {
        out.insert("DefaultPreemption");
    }
    out
}

/// Plugins that fail on one node in one answer and not the other, or fail differently.
fn filters_differing(a: &NodeExplanation, b: &NodeExplanation, out: &mut BTreeSet<&'static str>) {
    for (plugin, status) in &a.all_reasons {
        if b.all_reasons.get(plugin) != Some(status) {
            out.insert(*plugin);
        }
    }
    for plugin in b.all_reasons.keys() {
        if !a.all_reasons.contains_key(plugin) {
            out.insert(*plugin);
        }
    }
}

/// The static name of a PreFilter plugin named in either answer.
fn static_name(name: &str, base: &Explanation, other: &Explanation) -> Option<&'static str> {
    base.nodes
        .iter()
        .chain(&other.nodes)
        .filter_map(|n| n.plugin)
        .chain(super::switches::SWITCHES.iter().map(|s| s.plugin))
        .find(|p| *p == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Release;
    use crate::testing::{cluster, explain_as, node, pod};
    use serde_json::json;

    fn under(release: &str, c: &std::sync::Arc<crate::model::cluster::Cluster>) -> Explanation {
        let mut p = pod("ns/p", None, "3", 0, json!({}));
        p["status"] = json!({"phase": "Pending"});
        explain_as(Release::parse(release).unwrap(), c.clone(), p)
    }

    #[test]
    fn a_reason_that_changes_text_changes_the_message_and_says_why() {
        let mut tainted = node("a", "4", json!({}));
        tainted["spec"]["taints"] =
            json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]);
        let c = cluster(vec![tainted, node("b", "2", json!({}))]);
        let cmp = PodComparison::new(&under("v1.34.1", &c), &under("v1.34.2", &c));
        assert!(!cmp.same);
        assert_eq!(
            cmp.differences["filter"]["a"]["other"]["reasons"],
            json!(["node(s) had untolerated taint(s)"])
        );
        assert!(cmp.differences.contains_key("message"));
        assert!(!cmp.differences.contains_key("feasible"));
        let because: Vec<&str> = cmp.because.iter().map(|c| c.switch).collect();
        assert_eq!(because, ["untolerated_taint_reason_without_taint"]);
        assert!(cmp.unattributed.is_empty(), "{:?}", cmp.unattributed);
    }

    #[test]
    fn scores_alone_are_not_a_decision() {
        let c = cluster(vec![node("a", "8", json!({})), node("b", "16", json!({}))]);
        let cmp = PodComparison::new(&under("1.35", &c), &under("1.36", &c));
        assert!(cmp.same, "{:?}", cmp.differences);
        assert!(cmp.differences.contains_key("scores"));
        assert_eq!(cmp.because[0].plugin, "NodeResourcesBalancedAllocation");
        let cmp = PodComparison::new(&under("1.36", &c), &under("1.36", &c));
        assert!(cmp.identical() && cmp.because.is_empty());
    }
}
