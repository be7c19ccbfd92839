//! NodeAffinity (PreFilter, Filter, PreScore, Score): `nodeSelector` and required node affinity
//! filter; preferred terms score; `matchFields` on `metadata.name` narrows the nodes at PreFilter.
//! `addedAffinity` from the scheduler configuration applies to every pod of the profile.

use super::helper::default_normalize_score;
use crate::framework::cycle_state::{CycleState, StateKey, StateSlots};
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
            Some(names) if names.is_empty() => (Status::unresolvable(ERR_REASON_CONFLICT), None),
            Some(names) => (Status::success(), Some(names)),
            None => (Status::success(), None),
        }
    }

    fn filter(&self, cx: &Cx, _state: &CycleState, node: &NodeInfo) -> Status {
        let n = &node.node;
        if let Some(added) = &self.args.added_required
            && !added.matches(&n.labels, n.name)
        {
            return Status::unresolvable(ERR_REASON_ENFORCED);
        }
        if cx.pod.required_node_affinity.matches(&n.labels, n.name) {
            Status::success()
        } else {
            Status::unresolvable(ERR_REASON_POD)
        }
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
        let n = &node.node;
        let mut count = 0;
        if let Some(added) = &self.args.added_preferred {
            count += added.score(&n.labels, n.name);
        }
        if let Some(p) = state
            .read(self.pre_score)
            .and_then(|s| s.preferred.as_ref())
        {
            count += p.score(&n.labels, n.name);
        }
        Ok(count)
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
