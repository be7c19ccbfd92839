//! NodeAffinity (PreFilter, Filter, PreScore, Score): `nodeSelector` and required node affinity
//! filter; preferred terms score; `matchFields` on `metadata.name` narrows the nodes at PreFilter.
//! `addedAffinity` from the scheduler configuration applies to every pod of the profile.

use super::helper::default_normalize_score;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
use crate::framework::facts::{Detail, Fact, LabelSource, ScoreInput};
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes, Reuse};
use crate::framework::status::Status;
use crate::model::intern::Str;
use crate::model::node_info::NodeInfo;
use crate::model::node_selector::{NodeSelector, PreferredSchedulingTerms};
use std::collections::BTreeSet;

pub const NAME: &str = "NodeAffinity";
pub const ERR_REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
pub const ERR_REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
pub const ERR_REASON_CONFLICT: &str = "pod affinity terms conflict";

/// `NodeAffinityArgs`.
#[derive(Clone, Debug, Default)]
pub struct Args {
    pub added_required: Option<NodeSelector>,
    pub added_preferred: Option<PreferredSchedulingTerms>,
}

#[derive(Clone, Debug)]
pub struct PreFilterState;

#[derive(Clone, Debug)]
pub struct PreScoreState {
    preferred: Option<PreferredSchedulingTerms>,
}

pub struct NodeAffinity {
    pub args: Args,
    pre_filter: StateKey<PreFilterState>,
    pre_score: StateKey<PreScoreState>,
}

impl NodeAffinity {
    pub fn new(slots: &mut StateSlots, args: Args) -> NodeAffinity {
        NodeAffinity {
            args,
            pre_filter: slots.register("PreFilterNodeAffinity"),
            pre_score: slots.register("PreScoreNodeAffinity"),
        }
    }
}

impl NodeAffinity {
    /// The preferred terms the node matches (the profile's, then the pod's), with their
    /// weights: the score is their sum.
    fn matched(&self, state: &CycleState, node: &NodeInfo) -> Vec<(LabelSource, i32)> {
        let n = &node.node;
        let index = |i: usize| u16::try_from(i).unwrap_or(u16::MAX);
        let added = self.args.added_preferred.iter().flat_map(|a| {
            a.matched(&n.labels, n.name)
                .map(|(i, w)| (LabelSource::AddedAffinity(index(i)), w))
        });
        let own = state
            .read(self.pre_score)
            .and_then(|s| s.preferred.as_ref())
            .into_iter()
            .flat_map(|p| {
                p.matched(&n.labels, n.name)
                    .map(|(i, w)| (LabelSource::NodeAffinity(index(i)), w))
            });
        added.chain(own).collect()
    }
}

/// Per term of a selector the node matches none of, the requirements it fails there.
fn term_facts(
    selector: &NodeSelector,
    source: fn(u16) -> LabelSource,
    node: &NodeInfo,
) -> Vec<Fact> {
    let n = &node.node;
    selector
        .misses(&n.labels, n.name)
        .into_iter()
        .map(|(term, m)| {
            let term = u16::try_from(term).unwrap_or(u16::MAX);
            Fact::of(Detail::Label(Box::new((source(term), m))))
        })
        .collect()
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER | Points::PRE_SCORE | Points::SCORE
    }

    fn pre_filter(&self, cx: &Cx, state: &mut CycleState) -> (Status, PreFilterNodes) {
        let pod = cx.pod;
        let required = pod.required_node_affinity.affinity.as_ref();
        if required.is_none() && self.args.added_required.is_none() && pod.node_selector.is_none() {
            return (Status::skip(), None);
        }
        state.write(self.pre_filter, PreFilterState);
        let Some(terms) = cx_required_terms(cx) else {
            return (Status::success(), None);
        };
        // Node names from `matchFields: metadata.name In [...]`: a term without one allows any node.
        let mut node_names: Option<BTreeSet<Str>> = None;
        for term in terms {
            let mut term_names: Option<BTreeSet<Str>> = None;
            for r in term.match_fields.iter().flatten() {
                if r.key == "metadata.name" && r.operator == "In" {
                    let strings = &cx.snapshot.cluster.strings;
                    let s: BTreeSet<Str> = r
                        .values
                        .iter()
                        .flatten()
                        .map(|v| strings.intern(v))
                        .collect();
                    term_names = Some(match term_names {
                        None => s,
                        Some(prev) => prev.intersection(&s).copied().collect(),
                    });
                }
            }
            let Some(term_names) = term_names else {
                return (Status::success(), None);
            };
            node_names
                .get_or_insert_with(BTreeSet::new)
                .extend(term_names);
        }
        match node_names {
            Some(names) if names.is_empty() => (
                cx.with_fact(Status::unresolvable(ERR_REASON_CONFLICT), || {
                    Detail::ConflictingNodeNames
                }),
                None,
            ),
            Some(names) => (Status::success(), Some(names)),
            None => (Status::success(), None),
        }
    }

    fn filter(&self, cx: &Cx, _state: &CycleState, node: &NodeInfo) -> Status {
        let n = &node.node;
        if let Some(added) = &self.args.added_required
            && !added.matches(&n.labels, n.name)
        {
            return cx.with_facts(Status::unresolvable(ERR_REASON_ENFORCED), || {
                term_facts(added, LabelSource::AddedAffinity, node)
            });
        }
        let required = &cx.pod.required_node_affinity;
        if required.matches(&n.labels, n.name) {
            return Status::success();
        }
        cx.with_facts(Status::unresolvable(ERR_REASON_POD), || {
            let mut facts: Vec<Fact> = required
                .selector_misses(&n.labels)
                .into_iter()
                .map(|m| Fact::of(Detail::Label(Box::new((LabelSource::NodeSelector, m)))))
                .collect();
            // The terms are ORed: they matter only when the node fails them all.
            if let Some(a) = required
                .affinity
                .as_ref()
                .filter(|a| !a.matches(&n.labels, n.name))
            {
                facts.extend(term_facts(a, LabelSource::NodeAffinity, node));
            }
            facts
        })
    }

    fn pre_score(&self, cx: &Cx, state: &mut CycleState, _nodes: &[&NodeInfo]) -> Status {
        let preferred = match &cx.pod.preferred_node_affinity {
            Ok(p) => p.clone(),
            Err(e) => return Status::error(e.clone()),
        };
        if preferred.is_none() && self.args.added_preferred.is_none() {
            return Status::skip();
        }
        state.write(self.pre_score, PreScoreState { preferred });
        Status::success()
    }

    fn score(&self, _cx: &Cx, state: &CycleState, node: &NodeInfo) -> Result<i64, Status> {
        Ok(self
            .matched(state, node)
            .iter()
            .map(|&(_, weight)| i64::from(weight))
            .sum())
    }

    fn score_inputs(&self, _cx: &Cx, state: &CycleState, node: &NodeInfo) -> Vec<ScoreInput> {
        self.matched(state, node)
            .into_iter()
            .map(|(source, weight)| ScoreInput::PreferredTerm { source, weight })
            .collect()
    }

    fn has_score_extensions(&self) -> bool {
        true
    }

    fn normalize_score(&self, _cx: &Cx, _state: &CycleState, scores: &mut [i64]) -> Status {
        default_normalize_score(scores, false);
        Status::success()
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}

/// The pod's required node-selector terms as written (PreFilter reads `matchFields` raw).
fn cx_required_terms<'a>(cx: &'a Cx) -> Option<&'a [k8s_openapi::api::core::v1::NodeSelectorTerm]> {
    cx.pod
        .required_node_affinity_terms
        .as_deref()
        .filter(|t| !t.is_empty())
}
