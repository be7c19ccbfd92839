//! What the explanation says about scheduler extenders: which are configured and whether they
//! were called, every request made (with how long it took), and the notes where their part of
//! the decision differs from what a user might assume.

use super::Explanation;
use crate::config::extender::ExtenderConfig;
use crate::framework::extender::{Call, Verb};
use crate::framework::runner::Framework;
use crate::framework::schedule_one::CycleResult;
use crate::model::intern::Str;
use crate::model::pod::Pod;
use crate::term::Style;
use serde::Serialize;
use std::fmt::Write;

/// One configured extender.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtenderSummary {
    /// Its URL prefix, the name upstream gives it in scores and reasons.
    pub name: String,
    pub filter_verb: String,
    pub prioritize_verb: String,
    pub preempt_verb: String,
    pub bind_verb: String,
    pub weight: i64,
    pub node_cache_capable: bool,
    pub ignorable: bool,
    /// Its managed resources let it hear about this pod.
    pub interested: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtendersExplanation {
    /// `--call-extenders` was given: their answers are part of this result.
    pub called: bool,
    /// In the order kube-scheduler calls them (ignorable ones last).
    pub configured: Vec<ExtenderSummary>,
    /// The extender that would bind the pod instead of DefaultBinder (never called: binding is
    /// not part of a what-if).
    pub binder: Option<String>,
}

/// One request made to an extender.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallExplanation {
    pub extender: String,
    pub verb: Verb,
    /// The nodes sent, sorted.
    pub nodes: Vec<Str>,
    pub duration_ms: f64,
    pub error: Option<String>,
    /// Made only to show the scores of a scoring kube-scheduler skips; it makes no such request.
    pub display_only: bool,
}

impl CallExplanation {
    fn of(c: &Call) -> CallExplanation {
        CallExplanation {
            extender: c.extender.to_string(),
            verb: c.verb,
            nodes: c.nodes.clone(),
            // Tenths of a millisecond: finer is noise for a network call.
            duration_ms: (c.elapsed.as_secs_f64() * 10_000.0).round() / 10.0,
            error: c.error.clone(),
            display_only: c.display_only,
        }
    }
}

/// The extenders part of an explanation: the summary, every call in order (filter, prioritize,
/// then preempt), and notes.
pub fn build(
    fw: &Framework,
    pod: &Pod,
    r: &CycleResult,
    fits: bool,
) -> (
    Option<ExtendersExplanation>,
    Vec<CallExplanation>,
    Vec<String>,
) {
    if fw.extenders.is_empty() {
        return (None, Vec::new(), Vec::new());
    }
    let called = !fw.extender_clients.is_empty();
    let configured: Vec<ExtenderSummary> = fw.extenders.iter().map(|e| summary(e, pod)).collect();
    let binder = fw
        .extenders
        .iter()
        .find(|e| e.is_binder() && e.is_interested(pod))
        .map(|e| e.url_prefix.clone());
    let mut calls: Vec<CallExplanation> =
        r.extender_calls.iter().map(CallExplanation::of).collect();
    if let Some(outcome) = r.post_filter.as_ref().and_then(|pf| pf.preemption.as_ref()) {
        calls.extend(outcome.extender_calls.iter().map(CallExplanation::of));
    }
    let mut notes = Vec::new();
    if !called {
        let names: Vec<&str> = fw.extenders.iter().map(|e| e.url_prefix.as_str()).collect();
        notes.push(format!(
            "the configuration has {} scheduler extender(s) ({}) that were not called (--call-extenders calls them, sending them this pod and the nodes): kube-scheduler's answer may differ, as extenders can reject nodes, add to the scores and drop preemption candidates",
            names.len(),
            names.join(", ")
        ));
    }
    if let Some(b) = &binder
        && fits
    {
        notes.push(format!(
            "{b} would bind the pod (its bindVerb) instead of DefaultBinder; kubectl-sched never calls bind"
        ));
    }
    if !r.scored_as_returned.is_empty() {
        notes.push("a filter extender that is not nodeCacheCapable answered with Node objects: kube-scheduler scores those as nodes without pods (kubernetes/kubernetes#141781), and so do the scores here".into());
    }
    let explanation = ExtendersExplanation {
        called,
        configured,
        binder,
    };
    (Some(explanation), calls, notes)
}

fn summary(e: &ExtenderConfig, pod: &Pod) -> ExtenderSummary {
    ExtenderSummary {
        name: e.url_prefix.clone(),
        filter_verb: e.filter_verb.clone(),
        prioritize_verb: e.prioritize_verb.clone(),
        preempt_verb: e.preempt_verb.clone(),
        bind_verb: e.bind_verb.clone(),
        weight: e.weight,
        node_cache_capable: e.node_cache_capable,
        ignorable: e.ignorable,
        interested: e.is_interested(pod),
    }
}

/// The calls, one line each, and the preemption candidates extenders dropped, for the table.
pub fn render(e: &Explanation, style: Style, out: &mut String) {
    if let Some(p) = &e.preemption {
        for (node, extender) in &p.dropped_by_extenders {
            let _ = writeln!(
                out,
                "  {node}: dropped from the preemption candidates by {extender}"
            );
        }
    }
    if e.extender_calls.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{}", style.bold("Extender calls:"));
    for c in &e.extender_calls {
        let outcome = match &c.error {
            Some(e) => style.bad(&format!("failed: {e}")),
            None => style.good("ok"),
        };
        let shown = if c.display_only {
            style.dim(" (only to show the scores: kube-scheduler skips this call)")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {} {} on {} node(s), {} ms: {outcome}{shown}",
            c.verb.as_str(),
            c.extender,
            c.nodes.len(),
            c.duration_ms
        );
    }
}
