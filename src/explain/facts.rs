//! Facts in words for the table: one short phrase per fact, and for a group of nodes rejected
//! for the same reason the facts aggregated (distinct facts counted, shortfalls as a range),
//! formatting each distinct fact once however many nodes share it.

use super::{FactExplanation, list_names};
use crate::framework::facts::{
    AffinityKind, AffinityMiss, ClaimFact, Detail, LabelSource, PodRef, ScoreInput, Shortfall,
};
use crate::model::labels::Operator;
use crate::model::resource::canonical_amount;
use crate::model::taints::Taint;
use std::borrow::Cow;

fn pods(p: &[PodRef]) -> String {
    let names: Vec<String> = p.iter().map(PodRef::to_string).collect();
    list_names(&names)
}

fn taint(t: &Taint) -> String {
    let effect = t.effect.map_or("", |e| e.as_str());
    if t.value.is_empty() {
        format!("{}:{effect}", t.key)
    } else {
        format!("{}={}:{effect}", t.key, t.value)
    }
}

fn source(s: LabelSource) -> String {
    match s {
        LabelSource::NodeSelector => "nodeSelector".into(),
        LabelSource::NodeAffinity(i) => format!("affinity term {i}"),
        LabelSource::AddedAffinity(i) => format!("addedAffinity term {i}"),
    }
}

fn requirement(key: &str, op: Operator, values: &[crate::model::intern::Str]) -> String {
    let list = || {
        let v: Vec<&str> = values.iter().map(|v| v.as_str()).collect();
        v.join(",")
    };
    match op {
        Operator::In if values.len() == 1 => format!("{key}={}", values[0]),
        Operator::In => format!("{key} in ({})", list()),
        Operator::NotIn => format!("{key} notin ({})", list()),
        Operator::Exists => format!("{key} exists"),
        Operator::DoesNotExist => format!("no {key}"),
        Operator::Gt => format!("{key}>{}", list()),
        Operator::Lt => format!("{key}<{}", list()),
    }
}

fn amount(s: &Shortfall, v: i64) -> String {
    canonical_amount(&s.resource, v)
}

fn claim(c: &ClaimFact) -> String {
    let mut out = format!("claim {}", c.claim);
    if let Some(v) = c.volume {
        out.push_str(&format!(" (volume {v})"));
    }
    if let Some(v) = c.storage_class {
        out.push_str(&format!(", class {v}"));
    }
    if let Some(v) = c.requested {
        out.push_str(&format!(", {}", canonical_amount("storage", v)));
    }
    if let Some(v) = c.selected_node {
        out.push_str(&format!(", provisioning for {v}"));
    }
    if !c.pods.is_empty() {
        out.push_str(&format!(", in use by {}", pods(&c.pods)));
    }
    out
}

/// One fact as a phrase.
pub fn phrase(d: &Detail) -> String {
    match d {
        Detail::Resource(s) if s.resource.as_str() == "pods" => {
            format!("{} of {} pods", s.used, s.allocatable)
        }
        Detail::Resource(s) => format!(
            "{} requested {}, free {} of {} (short {})",
            s.resource,
            amount(s, s.requested),
            amount(s, s.free()),
            amount(s, s.allocatable),
            amount(s, s.short())
        ),
        Detail::Taint(t) => taint(t),
        Detail::NodeName(n) => format!("the pod names node {n}"),
        Detail::Label(l) => {
            let (src, m) = &**l;
            let has = match m.node_value {
                Some(v) => format!("node has {v}"),
                None => "node has no such label".into(),
            };
            format!(
                "{} {}: {has}",
                source(*src),
                requirement(&m.key, m.operator, &m.values)
            )
        }
        Detail::ConflictingNodeNames => "the terms' matchFields name no common node".into(),
        Detail::Gates(g) => {
            let g: Vec<&str> = g.iter().map(|g| g.as_str()).collect();
            format!("gates {}", g.join(", "))
        }
        Detail::MissingFeatures(f) => format!("missing {}", f.names().join(", ")),
        Detail::Port(p) => {
            let (port, holders) = &**p;
            format!(
                "{}/{} ({}) held by {}",
                port.port,
                port.protocol.as_str(),
                port.ip,
                pods(holders)
            )
        }
        Detail::Affinity(a) => {
            let domain = a.domain.map_or_else(
                || format!("node has no {}", a.topology_key),
                |d| format!("{}={d}", a.topology_key),
            );
            match a.kind {
                AffinityKind::Affinity => format!(
                    "affinity term {} ({}): no matching pod in {domain}",
                    a.term, a.selector
                ),
                AffinityKind::AntiAffinity => format!(
                    "anti-affinity term {} ({}): {} in {domain}",
                    a.term,
                    a.selector,
                    pods(&a.pods)
                ),
                AffinityKind::ExistingAntiAffinity => format!(
                    "{} in {domain}, anti-affinity ({}) matches the pod",
                    pods(&a.pods),
                    a.selector
                ),
            }
        }
        Detail::Spread(s) => match s.domain {
            Some(d) => format!(
                "{}={d}: {} matching, minimum {}, skew {} > maxSkew {}",
                s.topology_key, s.matching, s.minimum, s.skew, s.max_skew
            ),
            None => format!("node has no {}", s.topology_key),
        },
        Detail::Claim(c) => claim(c),
        Detail::Disk(d) => format!("volume {} in use by {}", d.0, pods(&d.1)),
        Detail::Zone(z) => {
            let values: Vec<&str> = z.values.iter().map(|v| v.as_str()).collect();
            let has = z.node_value.map_or_else(
                || "node has no such label".into(),
                |v| format!("node has {v}"),
            );
            format!(
                "volume {} needs {} in ({}): {has}",
                z.volume,
                z.key,
                values.join(",")
            )
        }
        Detail::VolumeLimit {
            driver,
            attached,
            adding,
            limit,
        } => format!("{driver}: {attached} attached + {adding} new > limit {limit}"),
        Detail::MissingDriver(d) => format!("CSI driver {d} not on the node"),
        Detail::Devices(c) => {
            let c: Vec<&str> = c.iter().map(|c| c.as_str()).collect();
            format!("claims {}", c.join(", "))
        }
        Detail::Extender(e) => format!("rejected by extender {e}"),
        Detail::Restricted(p) => format!("left out by the PreFilter of {}", p.join(", ")),
    }
}

/// One score input as a phrase.
pub fn input_phrase(i: &ScoreInput) -> String {
    match i {
        ScoreInput::Resource {
            resource,
            requested,
            allocatable,
        } => format!(
            "{resource} {} of {} requested with the pod",
            canonical_amount(resource, *requested),
            canonical_amount(resource, *allocatable)
        ),
        ScoreInput::Image {
            image,
            size,
            nodes,
            total_nodes,
        } => format!(
            "image {image} ({}) on {nodes} of {total_nodes} nodes",
            canonical_amount("storage", *size)
        ),
        ScoreInput::PreferredTerm { source: s, weight } => {
            format!("preferred {} matches, weight {weight}", source(*s))
        }
        ScoreInput::Taint(t) => format!("PreferNoSchedule taint {}", taint(t)),
        ScoreInput::Spread {
            topology_key,
            domain,
            matching,
            weight,
        } => format!("{topology_key}={domain}: {matching} matching (weight {weight:.2})"),
        ScoreInput::AffinityDomain {
            topology_key,
            domain,
            score,
        } => format!("{topology_key}={domain}: {score}"),
        ScoreInput::Storage {
            class,
            requested,
            capacity,
        } => format!(
            "class {class}: {} of {}",
            canonical_amount("storage", *requested),
            canonical_amount("storage", *capacity)
        ),
        ScoreInput::Subrequest { request, index } => {
            format!("request {request} gets subrequest {index}")
        }
    }
}

/// A fact without what differs from node to node (the pods holding a port, the domain and the
/// pods of an affinity term), so nodes rejected alike count together.
fn general(d: &Detail) -> Cow<'_, Detail> {
    match d {
        Detail::Port(p) => Cow::Owned(Detail::Port(Box::new((p.0, Vec::new())))),
        Detail::Affinity(a) => Cow::Owned(Detail::Affinity(Box::new(AffinityMiss {
            domain: None,
            pods: Vec::new(),
            ..(**a).clone()
        }))),
        d => Cow::Borrowed(d),
    }
}

/// A fact made `general`, as a phrase.
fn general_phrase(d: &Detail) -> String {
    match d {
        Detail::Port(p) => format!("{}/{} ({}) in use", p.0.port, p.0.protocol.as_str(), p.0.ip),
        Detail::Affinity(a) => {
            let rule = match a.kind {
                AffinityKind::Affinity => "affinity term",
                AffinityKind::AntiAffinity => "anti-affinity term",
                AffinityKind::ExistingAntiAffinity => "existing pods' anti-affinity term",
            };
            format!("{rule} {} ({}) by {}", a.term, a.selector, a.topology_key)
        }
        d => phrase(d),
    }
}

/// How many distinct facts a group's line names before "and N more".
const SHOWN: usize = 3;

/// The facts of a group of nodes in one line: shortfalls per resource as a range, other facts
/// counted by how many nodes show them, most frequent first.
pub fn aggregate<'a>(facts: impl Iterator<Item = &'a FactExplanation>) -> String {
    // Per resource: (least short, most short, the shortfall of one node for its units).
    let mut short: Vec<(Shortfall, i64, i64)> = Vec::new();
    let mut distinct: Vec<(Cow<Detail>, usize)> = Vec::new();
    for f in facts {
        match &f.detail {
            Detail::Resource(s) if s.resource.as_str() != "pods" => {
                match short.iter_mut().find(|(r, _, _)| r.resource == s.resource) {
                    Some((_, lo, hi)) => {
                        *lo = (*lo).min(s.short());
                        *hi = (*hi).max(s.short());
                    }
                    None => short.push((*s, s.short(), s.short())),
                }
            }
            d => {
                let d = general(d);
                match distinct.iter_mut().find(|(x, _)| *x == d) {
                    Some((_, n)) => *n += 1,
                    None => distinct.push((d, 1)),
                }
            }
        }
    }
    let mut parts: Vec<String> = short
        .iter()
        .map(|(s, lo, hi)| {
            let range = if lo == hi {
                amount(s, *lo)
            } else {
                format!("{}–{}", amount(s, *lo), amount(s, *hi))
            };
            format!(
                "{} short by {range} (requests {})",
                s.resource,
                amount(s, s.requested)
            )
        })
        .collect();
    // Most frequent first; equally frequent in the order met (nodes by name).
    distinct.sort_by_key(|d| std::cmp::Reverse(d.1));
    let more = distinct.len().saturating_sub(SHOWN);
    parts.extend(
        distinct
            .iter()
            .take(SHOWN)
            .map(|(d, n)| format!("{} ({n})", general_phrase(d))),
    );
    if more > 0 {
        parts.push(format!("and {more} more"));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::intern::Interner;

    fn fact(detail: Detail) -> FactExplanation {
        FactExplanation {
            plugin: "P",
            reason: "r".into(),
            detail,
        }
    }

    #[test]
    fn shortfalls_aggregate_as_a_range_and_others_by_count() {
        let strings = Interner::default();
        let cpu = |used| {
            fact(Detail::Resource(Shortfall {
                resource: strings.intern("cpu"),
                requested: 4000,
                allocatable: 8000,
                used,
            }))
        };
        let t = |key: &str| {
            fact(Detail::Taint(Taint {
                key: strings.intern(key),
                value: strings.intern(""),
                effect: Some(crate::model::taints::Effect::NoSchedule),
            }))
        };
        let facts = [cpu(6000), cpu(7500), t("a"), t("b"), t("b")];
        assert_eq!(
            aggregate(facts.iter()),
            "cpu short by 2–3500m (requests 4); b:NoSchedule (2); a:NoSchedule (1)"
        );
        let many: Vec<FactExplanation> = ["a", "b", "c", "d", "e"].map(t).into();
        assert!(aggregate(many.iter()).ends_with("; and 2 more"));
    }
}
