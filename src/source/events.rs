//! The real scheduler's FailedScheduling events: which is the latest for a pod. Live reads and
//! snapshots keep only those of pending pods; `explain` compares the latest with its own message.

use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::jiff::Timestamp;
use std::collections::HashMap;

pub const FAILED_SCHEDULING: &str = "FailedScheduling";

/// When an event was last observed, whichever API wrote it: events.k8s.io (eventTime, series)
/// or core/v1 (lastTimestamp, firstTimestamp).
pub fn last_seen(e: &Event) -> Option<Timestamp> {
    [
        e.series
            .as_ref()
            .and_then(|s| s.last_observed_time.as_ref())
            .map(|t| t.0),
        e.last_timestamp.as_ref().map(|t| t.0),
        e.event_time.as_ref().map(|t| t.0),
        e.first_timestamp.as_ref().map(|t| t.0),
        e.metadata.creation_timestamp.as_ref().map(|t| t.0),
    ]
    .into_iter()
    .flatten()
    .max()
}

/// How many times the event was reported.
pub fn count(e: &Event) -> i32 {
    e.series
        .as_ref()
        .and_then(|s| s.count)
        .or(e.count)
        .unwrap_or(1)
        .max(1)
}

/// Whether `e` is a FailedScheduling event about the pod `namespace/name`. A UID on both sides
/// must agree, so a deleted pod's events do not speak for a new pod of the same name.
pub fn is_failed_scheduling_of(e: &Event, namespace: &str, name: &str, uid: Option<&str>) -> bool {
    let o = &e.involved_object;
    let event_ns = o
        .namespace
        .as_deref()
        .or(e.metadata.namespace.as_deref())
        .unwrap_or("default");
    e.reason.as_deref() == Some(FAILED_SCHEDULING)
        && o.kind.as_deref().is_none_or(|k| k == "Pod")
        && o.name.as_deref() == Some(name)
        && event_ns == namespace
        && match (
            o.uid.as_deref().filter(|u| !u.is_empty()),
            uid.filter(|u| !u.is_empty()),
        ) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        }
}

/// The latest FailedScheduling event about a pod.
pub fn latest<'a>(
    events: &'a [Event],
    namespace: &str,
    name: &str,
    uid: Option<&str>,
) -> Option<&'a Event> {
    events
        .iter()
        .filter(|e| is_failed_scheduling_of(e, namespace, name, uid))
        .max_by_key(|e| last_seen(e))
}

/// A pod not bound to a node, by namespace, name and UID (empty when unknown).
pub type Pending<'a> = (&'a str, &'a str, &'a str);

/// The pods of a list that are not bound to a node, as `latest_of_pending` takes them.
pub fn pending_of(pods: &[Pod]) -> impl Iterator<Item = Pending<'_>> {
    pods.iter()
        .filter(|p| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .is_none_or(str::is_empty)
        })
        .map(|p| {
            (
                p.metadata.namespace.as_deref().unwrap_or("default"),
                p.metadata.name.as_deref().unwrap_or(""),
                p.metadata.uid.as_deref().unwrap_or(""),
            )
        })
}

/// Keeps the latest FailedScheduling event of each pod that is not bound to a node.
pub fn latest_of_pending<'a>(
    events: Vec<Event>,
    pending: impl IntoIterator<Item = Pending<'a>>,
) -> Vec<Event> {
    let pending: HashMap<(&str, &str), Option<&str>> = pending
        .into_iter()
        .map(|(ns, name, uid)| ((ns, name), Some(uid)))
        .collect();
    let mut best: HashMap<(String, String), Event> = HashMap::new();
    for e in events {
        let o = &e.involved_object;
        let ns = o
            .namespace
            .as_deref()
            .or(e.metadata.namespace.as_deref())
            .unwrap_or("default");
        let name = o.name.as_deref().unwrap_or("");
        let Some(&uid) = pending.get(&(ns, name)) else {
            continue;
        };
        if !is_failed_scheduling_of(&e, ns, name, uid) {
            continue;
        }
        let key = (ns.to_string(), name.to_string());
        if best
            .get(&key)
            .is_none_or(|old| last_seen(old) < last_seen(&e))
        {
            best.insert(key, e);
        }
    }
    let mut kept: Vec<((String, String), Event)> = best.into_iter().collect();
    kept.sort_by(|a, b| a.0.cmp(&b.0));
    kept.into_iter().map(|(_, e)| e).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str, uid: &str, reason: &str, last: &str, message: &str) -> Event {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{name}.{last}"), "namespace": "ns"},
            "involvedObject": {"kind": "Pod", "namespace": "ns", "name": name, "uid": uid},
            "reason": reason,
            "message": message,
            "lastTimestamp": last,
        }))
        .unwrap()
    }

    fn pod(name: &str, uid: &str, node: Option<&str>) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns", "uid": uid},
            "spec": {"containers": [], "nodeName": node},
        }))
        .unwrap()
    }

    #[test]
    fn latest_per_pending_pod() {
        let events = vec![
            event("a", "u1", FAILED_SCHEDULING, "2025-01-01T00:00:00Z", "old"),
            event("a", "u1", FAILED_SCHEDULING, "2025-01-01T00:05:00Z", "new"),
            event(
                "a",
                "u0",
                FAILED_SCHEDULING,
                "2025-01-01T00:09:00Z",
                "previous pod of that name",
            ),
            event(
                "a",
                "u1",
                "Scheduled",
                "2025-01-01T00:10:00Z",
                "other reason",
            ),
            event(
                "b",
                "u2",
                FAILED_SCHEDULING,
                "2025-01-01T00:00:00Z",
                "bound since",
            ),
        ];
        let pods = vec![pod("a", "u1", None), pod("b", "u2", Some("n1"))];
        let kept = latest_of_pending(events.clone(), pending_of(&pods));
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].message.as_deref(), Some("new"));
        assert_eq!(
            latest(&events, "ns", "a", Some("u1"))
                .unwrap()
                .message
                .as_deref(),
            Some("new")
        );
        assert_eq!(
            latest(&events, "ns", "a", None).unwrap().message.as_deref(),
            Some("previous pod of that name")
        );
        assert!(latest(&events, "other", "a", None).is_none());
    }

    #[test]
    fn series_counts_and_times() {
        let e: Event = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "x", "namespace": "ns"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "eventTime": "2025-01-01T00:00:00.000000Z",
            "series": {"count": 7, "lastObservedTime": "2025-01-01T01:00:00.000000Z"},
        }))
        .unwrap();
        assert_eq!(count(&e), 7);
        assert_eq!(last_seen(&e).unwrap().to_string(), "2025-01-01T01:00:00Z");
    }
}
