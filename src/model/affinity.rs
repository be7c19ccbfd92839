//! Pod (anti-)affinity terms parsed as `framework.PodInfo` parses them: selector, namespaces (the
//! pod's own when neither `namespaces` nor `namespaceSelector` is set), namespace selector and
//! topology key.

use super::intern::{Interner, Str};
use super::labels::{Labels, Selector};
use k8s_openapi::api::core::v1 as k8s;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffinityTerm {
    pub namespaces: Vec<Str>,
    pub selector: Selector,
    pub topology_key: Str,
    pub namespace_selector: Selector,
}

impl AffinityTerm {
    fn parse(
        pod_namespace: Str,
        t: &k8s::PodAffinityTerm,
        strings: &Interner,
    ) -> Result<AffinityTerm, String> {
        let selector = Selector::from_label_selector(t.label_selector.as_ref(), strings)?;
        let namespace_selector =
            Selector::from_label_selector(t.namespace_selector.as_ref(), strings)?;
        let listed = t.namespaces.as_deref().unwrap_or(&[]);
        let namespaces = if listed.is_empty() && t.namespace_selector.is_none() {
            vec![pod_namespace]
        } else {
            listed.iter().map(|n| strings.intern(n)).collect()
        };
        Ok(AffinityTerm {
            namespaces,
            selector,
            topology_key: strings.intern(&t.topology_key),
            namespace_selector,
        })
    }

    /// `AffinityTerm.Matches`: the pod is in one of the term's namespaces (listed, or selected by
    /// the namespace selector through the namespace's labels) and its labels match. A namespace
    /// missing from the cluster has no labels, which an empty `namespaceSelector: {}` still selects.
    pub fn matches(
        &self,
        pod_namespace: Str,
        pod_labels: &Labels,
        namespace_labels: &Labels,
    ) -> bool {
        let in_namespace = self.namespaces.contains(&pod_namespace)
            || self.namespace_selector.matches(namespace_labels);
        in_namespace && self.selector.matches(pod_labels)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeightedAffinityTerm {
    pub term: AffinityTerm,
    pub weight: i32,
}

/// The pod-affinity part of a pod, parsed once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodAffinity {
    /// `podAffinity` or `podAntiAffinity` is set at all (upstream's `podWithAffinity`).
    pub has_affinity: bool,
    pub required_affinity: Vec<AffinityTerm>,
    pub required_anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<WeightedAffinityTerm>,
    pub preferred_anti_affinity: Vec<WeightedAffinityTerm>,
    /// Selector errors; upstream drops the affected group of terms and reports them for the pod
    /// being scheduled.
    pub parse_errors: Vec<String>,
}

/// A pod's `PodAffinity`, held only when it has any: most pods have none, and each of 150,000
/// would otherwise carry five empty lists. Reads as a `PodAffinity`, an empty one when none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeldAffinity(Option<Box<PodAffinity>>);

static NO_AFFINITY: PodAffinity = PodAffinity {
    has_affinity: false,
    required_affinity: Vec::new(),
    required_anti_affinity: Vec::new(),
    preferred_affinity: Vec::new(),
    preferred_anti_affinity: Vec::new(),
    parse_errors: Vec::new(),
};

impl HeldAffinity {
    pub fn new(affinity: PodAffinity) -> HeldAffinity {
        HeldAffinity((affinity != NO_AFFINITY).then(|| Box::new(affinity)))
    }
}

impl std::ops::Deref for HeldAffinity {
    type Target = PodAffinity;
    fn deref(&self) -> &PodAffinity {
        self.0.as_deref().unwrap_or(&NO_AFFINITY)
    }
}

impl std::ops::DerefMut for HeldAffinity {
    fn deref_mut(&mut self) -> &mut PodAffinity {
        self.0.get_or_insert_with(Box::default)
    }
}

fn parse_required(
    strings: &Interner,
    ns: Str,
    terms: Option<&Vec<k8s::PodAffinityTerm>>,
    what: &str,
    errors: &mut Vec<String>,
) -> Vec<AffinityTerm> {
    let terms = terms.map(Vec::as_slice).unwrap_or(&[]);
    match terms
        .iter()
        .map(|t| AffinityTerm::parse(ns, t, strings))
        .collect()
    {
        Ok(v) => kept(v),
        Err(e) => {
            errors.push(format!("{what}: {e}"));
            Vec::new()
        }
    }
}

/// Terms collected through a `Result` are grown, to room for four; a pod keeps its terms for
/// the whole run, so they are held in what they take.
fn kept<T>(mut terms: Vec<T>) -> Vec<T> {
    terms.shrink_to_fit();
    terms
}

fn parse_weighted(
    strings: &Interner,
    ns: Str,
    terms: Option<&Vec<k8s::WeightedPodAffinityTerm>>,
    what: &str,
    errors: &mut Vec<String>,
) -> Vec<WeightedAffinityTerm> {
    let terms = terms.map(Vec::as_slice).unwrap_or(&[]);
    let parsed: Result<Vec<_>, String> = terms
        .iter()
        .map(|t| {
            AffinityTerm::parse(ns, &t.pod_affinity_term, strings).map(|term| {
                WeightedAffinityTerm {
                    term,
                    weight: t.weight,
                }
            })
        })
        .collect();
    parsed.map(kept).unwrap_or_else(|e| {
        errors.push(format!("{what}: {e}"));
        Vec::new()
    })
}

impl PodAffinity {
    pub fn parse(
        namespace: Str,
        affinity: Option<&k8s::Affinity>,
        strings: &Interner,
    ) -> PodAffinity {
        let Some(a) = affinity else {
            return PodAffinity::default();
        };
        let mut errors = Vec::new();
        let pa = a.pod_affinity.as_ref();
        let paa = a.pod_anti_affinity.as_ref();
        PodAffinity {
            has_affinity: pa.is_some() || paa.is_some(),
            required_affinity: parse_required(
                strings,
                namespace,
                pa.and_then(|p| {
                    p.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
                "requiredAffinityTerms",
                &mut errors,
            ),
            required_anti_affinity: parse_required(
                strings,
                namespace,
                paa.and_then(|p| {
                    p.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
                "requiredAntiAffinityTerms",
                &mut errors,
            ),
            preferred_affinity: parse_weighted(
                strings,
                namespace,
                pa.and_then(|p| {
                    p.preferred_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
                "preferredAffinityTerms",
                &mut errors,
            ),
            preferred_anti_affinity: parse_weighted(
                strings,
                namespace,
                paa.and_then(|p| {
                    p.preferred_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
                "preferredAntiAffinityTerms",
                &mut errors,
            ),
            parse_errors: errors,
        }
    }

    pub fn has_required_anti_affinity(&self) -> bool {
        !self.required_anti_affinity.is_empty()
    }
}
