//! `FitError.Error()`: "0/N nodes are available: …" — reasons counted over nodes, formatted as
//! "<count> <reason>", sorted as strings and joined by ", ".

use super::status::NodeToStatus;
use std::collections::HashMap;

/// The message before PostFilter plugins add their part. `prefilter_msg` is set when PreFilter
/// rejected the pod (then node statuses are not counted); `explicit` is how many nodes have their
/// own status, the rest getting the absent-nodes status.
pub fn message(
    num_all_nodes: usize,
    prefilter_msg: Option<&str>,
    statuses: &NodeToStatus,
    explicit: usize,
) -> String {
    let mut msg = format!("0/{num_all_nodes} nodes are available:");
    if let Some(pre) = prefilter_msg.filter(|m| !m.is_empty()) {
        msg.push_str(&format!(" {pre}."));
        return msg;
    }
    if prefilter_msg.is_some() {
        return msg;
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for status in statuses.by_node.values() {
        for r in &status.reasons {
            *counts.entry(r.as_str()).or_default() += 1;
        }
    }
    if explicit < num_all_nodes {
        for r in &statuses.absent.reasons {
            *counts.entry(r.as_str()).or_default() += num_all_nodes - explicit;
        }
    }
    let mut parts: Vec<String> = counts
        .into_iter()
        .map(|(r, n)| format!("{n} {r}"))
        .collect();
    parts.sort();
    if !parts.is_empty() {
        msg.push_str(&format!(" {}.", parts.join(", ")));
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::status::Status;
    use crate::model::intern::Str;

    #[test]
    fn counts_sorts_as_strings_and_adds_absent_nodes() {
        let mut by_node = HashMap::new();
        by_node.insert(Str::new("a"), Status::unschedulable("Insufficient cpu"));
        by_node.insert(Str::new("b"), Status::unschedulable("Insufficient cpu"));
        by_node.insert(
            Str::new("c"),
            Status::with_reasons(
                crate::framework::status::Code::Unschedulable,
                vec!["Insufficient cpu".into(), "Insufficient memory".into()],
            ),
        );
        let statuses = NodeToStatus {
            by_node,
            absent: Status::unresolvable("node(s) didn't satisfy plugin(s) [NodeAffinity]"),
        };
        assert_eq!(
            message(13, None, &statuses, 3),
            "0/13 nodes are available: 1 Insufficient memory, 10 node(s) didn't satisfy plugin(s) [NodeAffinity], 3 Insufficient cpu."
        );
    }
}
