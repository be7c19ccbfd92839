//! Node selectors as `component-helpers/scheduling/corev1/nodeaffinity` evaluates them: terms are
//! ORed, requirements inside a term ANDed, `matchFields` only knows `metadata.name`, an empty term
//! matches nothing, and a term that fails to parse is skipped while the others still count.

use super::intern::{Interner, Str};
use super::labels::{Labels, Operator, Requirement, Selector};
use k8s_openapi::api::core::v1 as k8s;

/// A field requirement of `matchFields`: `metadata.name In/NotIn [value]`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldRequirement {
    key: Str,
    value: Str,
    equal: bool,
}

impl FieldRequirement {
    fn matches(&self, node_name: Str) -> bool {
        // Only metadata.name is a node field; any other key reads as the empty string.
        let field = if self.key.as_str() == "metadata.name" {
            node_name.as_str()
        } else {
            ""
        };
        (field == self.value.as_str()) == self.equal
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSelectorTerm {
    /// The term's place in the list as written.
    index: usize,
    labels: Option<Selector>,
    fields: Option<Vec<FieldRequirement>>,
    parse_error: Option<String>,
}

impl NodeSelectorTerm {
    fn is_empty_term(t: &k8s::NodeSelectorTerm) -> bool {
        t.match_expressions.as_ref().is_none_or(Vec::is_empty)
            && t.match_fields.as_ref().is_none_or(Vec::is_empty)
    }

    fn parse(index: usize, t: &k8s::NodeSelectorTerm, strings: &Interner) -> NodeSelectorTerm {
        let mut term = NodeSelectorTerm {
            index,
            labels: None,
            fields: None,
            parse_error: None,
        };
        let mut errors = Vec::new();
        if let Some(exprs) = t.match_expressions.as_ref().filter(|e| !e.is_empty()) {
            let mut reqs = Vec::new();
            for (i, e) in exprs.iter().enumerate() {
                let Some(op) = Operator::from_node_selector(&e.operator) else {
                    let other = &e.operator;
                    errors.push(format!(
                            "matchExpressions[{i}].operator: Unsupported value: {other:?}: supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\", \"Gt\", \"Lt\""
                        ));
                    continue;
                };
                match Requirement::new(&e.key, op, e.values.as_deref().unwrap_or(&[]), strings) {
                    Ok(r) => reqs.push(r),
                    Err(err) => errors.push(format!("matchExpressions[{i}]: {err}")),
                }
            }
            term.labels = Some(Selector::Requirements(reqs));
        }
        if let Some(fields) = t.match_fields.as_ref().filter(|f| !f.is_empty()) {
            let mut reqs = Vec::new();
            for (i, f) in fields.iter().enumerate() {
                let equal = match f.operator.as_str() {
                    "In" => true,
                    "NotIn" => false,
                    other => {
                        errors.push(format!(
                            "matchFields[{i}].operator: Unsupported value: {other:?}: supported values: \"In\", \"NotIn\""
                        ));
                        continue;
                    }
                };
                let values = f.values.as_deref().unwrap_or(&[]);
                if values.len() != 1 {
                    errors.push(format!(
                        "matchFields[{i}].values: Invalid value: {values:?}: must have one element"
                    ));
                    continue;
                }
                reqs.push(FieldRequirement {
                    key: strings.intern(&f.key),
                    value: strings.intern(&values[0]),
                    equal,
                });
            }
            term.fields = Some(reqs);
        }
        if !errors.is_empty() {
            term.parse_error = Some(errors.join(", "));
        }
        term
    }

    fn matches(&self, labels: &Labels, node_name: Str) -> bool {
        if self.parse_error.is_some() {
            return false;
        }
        if let Some(sel) = &self.labels
            && !sel.matches(labels)
        {
            return false;
        }
        if let Some(fields) = &self.fields
            && !fields.iter().all(|f| f.matches(node_name))
        {
            return false;
        }
        true
    }

    /// The requirements the node fails, each as a `Miss`; a term that does not parse fails as a
    /// whole and names no requirement.
    fn misses(&self, labels: &Labels, node_name: Str) -> Vec<Miss> {
        let mut out: Vec<Miss> = self
            .labels
            .iter()
            .flat_map(Selector::requirements)
            .filter(|r| !r.matches(labels))
            .map(|r| Miss::of(r, labels))
            .collect();
        for f in self.fields.iter().flatten() {
            if !f.matches(node_name) {
                out.push(Miss {
                    key: f.key,
                    operator: if f.equal {
                        Operator::In
                    } else {
                        Operator::NotIn
                    },
                    values: vec![f.value],
                    node_value: (f.key.as_str() == "metadata.name").then_some(node_name),
                });
            }
        }
        out
    }
}

/// A requirement a node fails, with the node's value of its key (`None`: no such label).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Miss {
    pub key: Str,
    pub operator: Operator,
    pub values: Vec<Str>,
    pub node_value: Option<Str>,
}

impl Miss {
    pub fn of(r: &Requirement, labels: &Labels) -> Miss {
        Miss {
            key: r.key,
            operator: r.op,
            values: r.values.clone(),
            node_value: labels.get(r.key),
        }
    }
}

/// `v1.NodeSelector` (the terms of required node affinity, a PV's node affinity, or
/// `addedAffinity`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSelector {
    terms: Vec<NodeSelectorTerm>,
}

impl NodeSelector {
    pub fn parse(ns: &k8s::NodeSelector, strings: &Interner) -> NodeSelector {
        NodeSelector {
            terms: ns
                .node_selector_terms
                .iter()
                .enumerate()
                .filter(|(_, t)| !NodeSelectorTerm::is_empty_term(t))
                .map(|(i, t)| NodeSelectorTerm::parse(i, t, strings))
                .collect(),
        }
    }

    /// Errors of the terms, as `NewNodeSelector` reports them.
    pub fn parse_errors(&self) -> Vec<String> {
        self.terms
            .iter()
            .filter_map(|t| t.parse_error.clone())
            .collect()
    }

    pub fn matches(&self, labels: &Labels, node_name: Str) -> bool {
        self.terms.iter().any(|t| t.matches(labels, node_name))
    }

    /// On a node that matches no term: per term (its index as written), the requirements the
    /// node fails there.
    pub fn misses(&self, labels: &Labels, node_name: Str) -> Vec<(usize, Miss)> {
        self.terms
            .iter()
            .flat_map(|t| {
                t.misses(labels, node_name)
                    .into_iter()
                    .map(move |m| (t.index, m))
            })
            .collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreferredTerm {
    pub weight: i32,
    term: NodeSelectorTerm,
}

/// `PreferredSchedulingTerms`: weights summed over the terms a node matches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreferredSchedulingTerms {
    terms: Vec<PreferredTerm>,
}

impl PreferredSchedulingTerms {
    /// Terms with weight 0 or no requirements are dropped; a parse error fails the whole list.
    pub fn parse(
        terms: &[k8s::PreferredSchedulingTerm],
        strings: &Interner,
    ) -> Result<PreferredSchedulingTerms, String> {
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (i, t) in terms.iter().enumerate() {
            if t.weight == 0 || NodeSelectorTerm::is_empty_term(&t.preference) {
                continue;
            }
            let term = NodeSelectorTerm::parse(i, &t.preference, strings);
            match &term.parse_error {
                Some(e) => errors.push(format!("[{i}].{e}")),
                None => out.push(PreferredTerm {
                    weight: t.weight,
                    term,
                }),
            }
        }
        if errors.is_empty() {
            Ok(PreferredSchedulingTerms { terms: out })
        } else {
            Err(errors.join(", "))
        }
    }

    pub fn score(&self, labels: &Labels, node_name: Str) -> i64 {
        self.matched(labels, node_name)
            .map(|(_, weight)| i64::from(weight))
            .sum()
    }

    /// The terms the node matches: their index as written and their weight.
    pub fn matched<'a>(
        &'a self,
        labels: &'a Labels,
        node_name: Str,
    ) -> impl Iterator<Item = (usize, i32)> + 'a {
        self.terms
            .iter()
            .filter(move |t| t.term.matches(labels, node_name))
            .map(|t| (t.term.index, t.weight))
    }
}

/// `GetRequiredNodeAffinity`: the pod's `nodeSelector` AND its required node affinity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequiredNodeAffinity {
    pub node_selector: Option<Selector>,
    pub affinity: Option<NodeSelector>,
}

impl RequiredNodeAffinity {
    /// The `nodeSelector` entries the node fails.
    pub fn selector_misses(&self, labels: &Labels) -> Vec<Miss> {
        self.node_selector
            .iter()
            .flat_map(Selector::requirements)
            .filter(|r| !r.matches(labels))
            .map(|r| Miss::of(r, labels))
            .collect()
    }

    pub fn matches(&self, labels: &Labels, node_name: Str) -> bool {
        if let Some(sel) = &self.node_selector
            && !sel.matches(labels)
        {
            return false;
        }
        match &self.affinity {
            Some(a) => a.matches(labels, node_name),
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(
        exprs: &[(&str, &str, &[&str])],
        fields: &[(&str, &str, &[&str])],
    ) -> k8s::NodeSelectorTerm {
        let conv = |v: &[(&str, &str, &[&str])]| {
            Some(
                v.iter()
                    .map(|(k, op, vals)| k8s::NodeSelectorRequirement {
                        key: k.to_string(),
                        operator: op.to_string(),
                        values: Some(vals.iter().map(|s| s.to_string()).collect()),
                    })
                    .collect(),
            )
        };
        k8s::NodeSelectorTerm {
            match_expressions: conv(exprs),
            match_fields: conv(fields),
        }
    }

    #[test]
    fn terms_are_ored_and_empty_terms_match_nothing() {
        let labels = Labels::from_pairs(vec![(Str::new("zone"), Str::new("a"))]);
        let node = Str::new("node-1");
        let ns = NodeSelector::parse(
            &k8s::NodeSelector {
                node_selector_terms: vec![
                    term(&[("zone", "In", &["b"])], &[]),
                    term(&[], &[("metadata.name", "In", &["node-1"])]),
                ],
            },
            &Interner::new(),
        );
        assert!(ns.matches(&labels, node));
        let empty = NodeSelector::parse(
            &k8s::NodeSelector {
                node_selector_terms: vec![term(&[], &[])],
            },
            &Interner::new(),
        );
        assert!(!empty.matches(&labels, node));
    }

    #[test]
    fn a_broken_term_does_not_hide_a_good_one() {
        let labels = Labels::from_pairs(vec![(Str::new("zone"), Str::new("a"))]);
        let ns = NodeSelector::parse(
            &k8s::NodeSelector {
                node_selector_terms: vec![
                    term(&[("zone", "Bogus", &["a"])], &[]),
                    term(&[("zone", "In", &["a"])], &[]),
                ],
            },
            &Interner::new(),
        );
        assert!(ns.matches(&labels, Str::new("n")));
        assert_eq!(ns.parse_errors().len(), 1);
    }
}
