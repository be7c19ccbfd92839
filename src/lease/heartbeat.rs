//! Node heartbeats: each kubelet renews a Lease named after its node in `kube-node-lease` every
//! quarter of its 40s duration. The node controller marks a node NotReady (its Ready condition
//! Unknown, with the unreachable taint) once it has seen neither a renewal nor a status update
//! for node-monitor-grace-period (50s by default since Kubernetes 1.32).

use super::{Inventory, NODE_LEASE_NAMESPACE, NodeRef, Status, assess, holder};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// kube-controller-manager's `--node-monitor-grace-period` default.
pub const DEFAULT_NODE_MONITOR_GRACE_PERIOD: SignedDuration = SignedDuration::from_secs(50);

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Heartbeat {
    pub node: String,
    pub status: Status,
    pub holder_identity: Option<String>,
    pub renew_time: Option<Timestamp>,
    #[serde(with = "super::opt_seconds")]
    pub since_renewal_seconds: Option<SignedDuration>,
    /// When the node controller marks the node NotReady if nothing more arrives: renewTime +
    /// the grace period (already past when negative).
    pub not_ready_at: Option<Timestamp>,
    #[serde(with = "super::opt_seconds")]
    pub not_ready_in_seconds: Option<SignedDuration>,
    /// The node's Ready condition as the snapshot or API showed it (`None`: node not read).
    pub node_ready: Option<bool>,
    /// The node object exists (a lease without a node is left over from a deleted node);
    /// unknown when the nodes were not read.
    pub node_exists: Option<bool>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Heartbeats {
    pub clock: super::Clock,
    #[serde(with = "super::seconds")]
    pub grace_period: SignedDuration,
    /// Every node lease (and every node without one), stalest first.
    pub nodes: Vec<Heartbeat>,
    /// How many kubelets renewed within the last third of their lease.
    pub renewing: usize,
}

/// The heartbeats of every node (or only of `only`), stalest first: no renewal at all, then
/// the oldest renewal.
pub fn heartbeats(
    leases: &[Lease],
    inventory: &Inventory,
    only: Option<&str>,
    clock: super::Clock,
    grace_period: SignedDuration,
) -> Heartbeats {
    let now = clock.now;
    let wanted = |name: &str| only.is_none_or(|o| o == name);
    // Thousands of nodes: look them up by name, not by scanning the list per lease.
    let by_name: HashMap<&str, &NodeRef> = inventory
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n))
        .collect();
    let mut nodes: Vec<Heartbeat> = leases
        .iter()
        .filter(|l| l.metadata.namespace.as_deref() == Some(NODE_LEASE_NAMESPACE))
        .filter(|l| wanted(l.metadata.name.as_deref().unwrap_or_default()))
        .map(|l| {
            let name = l.metadata.name.clone().unwrap_or_default();
            let a = assess(l, now);
            let node = by_name.get(name.as_str());
            let not_ready_at = super::renew_time(l).and_then(|r| super::plus(r, grace_period));
            Heartbeat {
                status: a.status,
                holder_identity: holder(l).map(str::to_string),
                renew_time: super::renew_time(l),
                since_renewal_seconds: a.since_renewal,
                not_ready_in_seconds: not_ready_at.map(|t| t.duration_since(now)),
                not_ready_at,
                node_ready: node.and_then(|n| n.ready),
                node_exists: (!inventory.nodes.is_empty()).then_some(node.is_some()),
                node: name,
            }
        })
        .collect();
    let leased: HashSet<String> = nodes.iter().map(|h| h.node.clone()).collect();
    for n in inventory.nodes.iter().filter(|n| wanted(&n.name)) {
        if !leased.contains(&n.name) {
            nodes.push(Heartbeat {
                node: n.name.clone(),
                status: Status::Unknown,
                holder_identity: None,
                renew_time: None,
                since_renewal_seconds: None,
                not_ready_at: None,
                not_ready_in_seconds: None,
                node_ready: n.ready,
                node_exists: Some(true),
            });
        }
    }
    nodes.sort_by(|a, b| {
        a.renew_time
            .is_some()
            .cmp(&b.renew_time.is_some())
            .then(a.renew_time.cmp(&b.renew_time))
            .then_with(|| a.node.cmp(&b.node))
    });
    let renewing = nodes.iter().filter(|h| h.status == Status::Healthy).count();
    Heartbeats {
        clock,
        grace_period,
        nodes,
        renewing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::tests::{lease, ts};
    use crate::lease::{Clock, ClockSource, NodeRef};

    #[test]
    fn stalest_first_with_the_time_left_before_not_ready() {
        let leases = vec![
            lease(
                NODE_LEASE_NAMESPACE,
                "w-1",
                Some("w-1"),
                Some("2026-11-23T09:59:58Z"),
                Some(40),
            ),
            lease(
                NODE_LEASE_NAMESPACE,
                "w-2",
                Some("w-2"),
                Some("2026-11-23T09:59:30Z"),
                Some(40),
            ),
            lease(
                NODE_LEASE_NAMESPACE,
                "w-3",
                Some("w-3"),
                Some("2026-11-23T09:58:00Z"),
                Some(40),
            ),
            lease(
                "kube-system",
                "kube-scheduler",
                Some("x"),
                Some("2026-11-23T09:58:00Z"),
                Some(15),
            ),
        ];
        let node = |name: &str, ready| NodeRef {
            name: name.into(),
            ready: Some(ready),
        };
        let inventory = Inventory {
            pods: vec![],
            nodes: vec![
                node("w-1", true),
                node("w-2", true),
                node("w-3", false),
                node("w-4", false),
            ],
        };
        let clock = Clock {
            now: ts("2026-11-23T10:00:00Z"),
            source: ClockSource::Server,
            skew: None,
        };
        let h = heartbeats(
            &leases,
            &inventory,
            None,
            clock,
            DEFAULT_NODE_MONITOR_GRACE_PERIOD,
        );
        let order: Vec<&str> = h.nodes.iter().map(|n| n.node.as_str()).collect();
        assert_eq!(order, ["w-4", "w-3", "w-2", "w-1"]);
        assert_eq!(h.renewing, 1);
        let w2 = &h.nodes[2];
        assert_eq!(w2.status, Status::RenewingLate);
        assert_eq!(w2.not_ready_in_seconds, Some(SignedDuration::from_secs(20)));
        let w3 = &h.nodes[1];
        assert_eq!(w3.status, Status::Expired);
        assert_eq!(
            w3.not_ready_in_seconds,
            Some(SignedDuration::from_secs(-70))
        );
        assert_eq!(h.nodes[0].status, Status::Unknown);
        assert_eq!(h.nodes[0].node_exists, Some(true));
        let one = heartbeats(
            &leases,
            &inventory,
            Some("w-2"),
            clock,
            DEFAULT_NODE_MONITOR_GRACE_PERIOD,
        );
        assert_eq!(one.nodes.len(), 1);
        assert_eq!(one.nodes[0].node, "w-2");
    }
}
