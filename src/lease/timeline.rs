//! `--watch` as an incident timeline: what changed between two versions of a lease (holder
//! changes, releases, renewals), and the moments nothing arrived that should have (a missed
//! renewal, an expiry), which no watch event announces and a clock must find. Silences are timed
//! from when a renewal was seen, by the API server's clock, as client-go's standbys time them
//! from when they saw the record: a holder whose clock is off does not make its lease look dead.

use super::duration::human;
use super::{NODE_LEASE_NAMESPACE, Selection, holder, lease_duration, plus, renew_time, strategy};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Kind {
    /// A lease appeared after the watch started.
    Created,
    /// A lease got a holder, or its holder acquired it anew (leaseTransitions or acquireTime
    /// changed).
    Acquired,
    /// Leadership moved to another identity.
    HolderChanged,
    /// The holder gave the lease up (empty holderIdentity).
    Released,
    /// The holder renewed (shown with `--renewals`, or when it follows a missed renewal).
    Renewed,
    /// preferredHolder or the strategy changed (the leader-election controller sets them).
    ElectionChanged,
    /// A third of the lease's duration passed without renewal.
    MissedRenewal,
    /// The lease's duration passed without renewal: standbys may acquire it.
    Expired,
    /// A kubelet's heartbeat has been silent for node-monitor-grace-period.
    NodeNotReady,
    Deleted,
    /// The watch failed; it is being retried.
    WatchLost,
    /// The watch works again after a failure.
    WatchResumed,
}

/// One line of the timeline.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// When it was seen, by the API server's clock.
    pub time: Timestamp,
    /// Empty for the watch's own lines (WatchLost, WatchResumed).
    pub namespace: String,
    pub name: String,
    pub event: Kind,
    pub holder: Option<String>,
    pub message: String,
    /// Found by comparing a fresh list with what was last seen (after the watch's history
    /// expired, or to confirm a silence): changes in between were folded into this one.
    pub from_relist: bool,
    /// A renewal like any other: shown only with `--renewals`.
    #[serde(skip)]
    pub routine: bool,
}

impl Change {
    /// A line about the watch itself rather than a lease.
    pub fn watch(time: Timestamp, event: Kind, message: String) -> Change {
        Change {
            time,
            namespace: String::new(),
            name: String::new(),
            event,
            holder: None,
            message,
            from_relist: false,
            routine: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Alerted {
    Nothing,
    Late,
    Expired,
}

struct Tracked {
    lease: Lease,
    /// When its current renewal was seen, by the server's clock.
    observed: Timestamp,
    alerted: Alerted,
}

/// What the watch has seen of each lease, and which silences it has already reported.
pub struct Tracker {
    selection: Selection,
    /// node-monitor-grace-period, for heartbeat leases.
    node_grace: SignedDuration,
    leases: BTreeMap<(String, String), Tracked>,
}

fn key(l: &Lease) -> (String, String) {
    (
        l.metadata.namespace.clone().unwrap_or_default(),
        l.metadata.name.clone().unwrap_or_default(),
    )
}

fn transitions(l: &Lease) -> i32 {
    l.spec
        .as_ref()
        .and_then(|s| s.lease_transitions)
        .unwrap_or(0)
}

fn acquired(l: &Lease) -> Option<Timestamp> {
    l.spec.as_ref()?.acquire_time.as_ref().map(|t| t.0)
}

fn spec_text(
    l: &Lease,
    f: impl Fn(&k8s_openapi::api::coordination::v1::LeaseSpec) -> Option<&String>,
) -> Option<String> {
    l.spec.as_ref().and_then(f).cloned()
}

fn is_heartbeat(l: &Lease) -> bool {
    l.metadata.namespace.as_deref() == Some(NODE_LEASE_NAMESPACE)
}

impl Tracked {
    /// The silences a held lease can reach, timed from when its renewal was seen: late at a
    /// third of its duration; then expired (a heartbeat: NotReady after the grace period).
    fn thresholds(&self, node_grace: SignedDuration) -> Option<(Timestamp, Timestamp)> {
        holder(&self.lease)?;
        let d = lease_duration(&self.lease)?;
        let last = if is_heartbeat(&self.lease) {
            node_grace
        } else {
            d
        };
        Some((plus(self.observed, d / 3)?, plus(self.observed, last)?))
    }
}

impl Tracker {
    /// Starts from a list: what is already there is the starting state, not news. A listed
    /// renewal counts as seen at its renewTime (or now, if that is in the future).
    pub fn new(
        selection: Selection,
        leases: &[Lease],
        now: Timestamp,
        node_grace: SignedDuration,
    ) -> Tracker {
        let mut t = Tracker {
            selection,
            node_grace,
            leases: BTreeMap::new(),
        };
        for l in leases.iter().filter(|l| t.selection.matches(l)) {
            let mut tracked = Tracked {
                lease: l.clone(),
                observed: renew_time(l).map_or(now, |r| r.min(now)),
                alerted: Alerted::Nothing,
            };
            tracked.alerted = match tracked.thresholds(node_grace) {
                Some((_, last)) if last < now => Alerted::Expired,
                Some((late, _)) if late < now => Alerted::Late,
                _ => Alerted::Nothing,
            };
            t.leases.insert(key(l), tracked);
        }
        t
    }

    pub fn len(&self) -> usize {
        self.leases.len()
    }

    pub fn is_empty(&self) -> bool {
        self.leases.is_empty()
    }

    /// A new version of a lease (ADDED or MODIFIED): what it changed.
    pub fn observe(&mut self, lease: Lease, now: Timestamp, from_relist: bool) -> Vec<Change> {
        if !self.selection.matches(&lease) {
            return Vec::new();
        }
        let (namespace, name) = key(&lease);
        let mut changes = Vec::new();
        let mut previous = self.leases.remove(&(namespace.clone(), name.clone()));
        // Deleted and created again while the watch was away: not the same lease.
        if let Some(prev) = &previous
            && prev.lease.metadata.uid.is_some()
            && prev.lease.metadata.uid != lease.metadata.uid
        {
            changes.push(self.gone(prev, now, from_relist));
            previous = None;
        }
        let change = |event: Kind, message: String| Change {
            time: now,
            namespace: namespace.clone(),
            name: name.clone(),
            event,
            holder: holder(&lease).map(str::to_string),
            message,
            from_relist,
            routine: false,
        };
        let (observed, alerted) = match &previous {
            None => {
                changes.push(change(
                    Kind::Created,
                    match holder(&lease) {
                        Some(h) => format!("created, held by {h}"),
                        None => "created without a holder".into(),
                    },
                ));
                (now, Alerted::Nothing)
            }
            Some(prev) => {
                let old = &prev.lease;
                let (before, after) = (holder(old), holder(&lease));
                let counted = match transitions(&lease) - transitions(old) {
                    0 => String::new(),
                    n if from_relist && n > 1 => format!(
                        " (leaseTransitions {} → {}: {n} changes while the watch was away)",
                        transitions(old),
                        transitions(&lease)
                    ),
                    _ => format!(
                        " (leaseTransitions {} → {})",
                        transitions(old),
                        transitions(&lease)
                    ),
                };
                let reacquired = before.is_some()
                    && before == after
                    && (transitions(old) != transitions(&lease)
                        || acquired(old) != acquired(&lease));
                match (before, after) {
                    (Some(a), Some(b)) if a != b => changes.push(change(
                        Kind::HolderChanged,
                        format!("leader changed: {a} → {b}{counted}"),
                    )),
                    (None, Some(b)) => {
                        changes.push(change(Kind::Acquired, format!("acquired by {b}{counted}")))
                    }
                    (Some(a), None) => changes.push(change(
                        Kind::Released,
                        format!("released by {a}: {}", super::next_holder(&lease)),
                    )),
                    (Some(a), Some(_)) if reacquired => changes.push(change(
                        Kind::Acquired,
                        format!("acquired again by {a} (a restart keeps its identity){counted}"),
                    )),
                    _ => {}
                }
                let renewed = !reacquired
                    && before.is_some()
                    && before == after
                    && renew_time(old) != renew_time(&lease);
                if renewed {
                    let gap = human(now.duration_since(prev.observed));
                    let mut c = if prev.alerted > Alerted::Nothing {
                        change(
                            Kind::Renewed,
                            format!(
                                "renewals resumed after {gap} by {}",
                                after.unwrap_or_default()
                            ),
                        )
                    } else {
                        change(Kind::Renewed, format!("renewed after {gap}"))
                    };
                    c.routine = prev.alerted == Alerted::Nothing;
                    changes.push(c);
                }
                let preferred = |l: &Lease| spec_text(l, |s| s.preferred_holder.as_ref());
                let strategy_of = |l: &Lease| spec_text(l, |s| s.strategy.as_ref());
                if preferred(old) != preferred(&lease) {
                    changes.push(change(
                        Kind::ElectionChanged,
                        match preferred(&lease) {
                            Some(p) => format!(
                                "preferredHolder set to {p}: the holder should stop renewing and let the lease expire"
                            ),
                            None => "preferredHolder cleared".into(),
                        },
                    ));
                }
                if strategy_of(old) != strategy_of(&lease) {
                    changes.push(change(
                        Kind::ElectionChanged,
                        format!(
                            "strategy changed to {}",
                            strategy_of(&lease).unwrap_or_else(|| "none".into())
                        ),
                    ));
                }
                if renew_time(old) != renew_time(&lease) || before != after {
                    (now, Alerted::Nothing)
                } else {
                    (prev.observed, prev.alerted)
                }
            }
        };
        self.leases.insert(
            (namespace, name),
            Tracked {
                lease,
                observed,
                alerted,
            },
        );
        changes
    }

    fn gone(&self, prev: &Tracked, now: Timestamp, from_relist: bool) -> Change {
        let (namespace, name) = key(&prev.lease);
        Change {
            time: now,
            holder: holder(&prev.lease).map(str::to_string),
            message: "deleted".into(),
            event: Kind::Deleted,
            namespace,
            name,
            from_relist,
            routine: false,
        }
    }

    pub fn deleted(&mut self, lease: &Lease, now: Timestamp, from_relist: bool) -> Vec<Change> {
        match self.leases.remove(&key(lease)) {
            Some(prev) => vec![self.gone(&prev, now, from_relist)],
            None => Vec::new(),
        }
    }

    /// A fresh list against what was last seen: after the watch's history expired, or to
    /// confirm a silence the watch may merely have missed.
    pub fn resync(&mut self, leases: Vec<Lease>, now: Timestamp) -> Vec<Change> {
        let listed: std::collections::HashSet<(String, String)> = leases
            .iter()
            .filter(|l| self.selection.matches(l))
            .map(key)
            .collect();
        let gone: Vec<Lease> = self
            .leases
            .iter()
            .filter(|(k, _)| !listed.contains(*k))
            .map(|(_, t)| t.lease.clone())
            .collect();
        let mut changes: Vec<Change> = gone
            .iter()
            .flat_map(|l| self.deleted(l, now, true))
            .collect();
        for l in leases {
            changes.extend(self.observe(l, now, true));
        }
        changes
    }

    /// The next moment a silence must be checked for.
    pub fn next_deadline(&self) -> Option<Timestamp> {
        self.leases
            .values()
            .filter_map(|t| {
                let (late, last) = t.thresholds(self.node_grace)?;
                match t.alerted {
                    Alerted::Nothing => Some(late),
                    Alerted::Late => Some(last),
                    Alerted::Expired => None,
                }
            })
            .min()
    }

    /// Whether a silence has run out by `now` (worth confirming with a list before saying so).
    pub fn silence_due(&self, now: Timestamp) -> bool {
        self.next_deadline().is_some_and(|d| d < now)
    }

    /// The silences that have run out by `now`.
    pub fn tick(&mut self, now: Timestamp) -> Vec<Change> {
        let grace = self.node_grace;
        let mut changes = Vec::new();
        for ((namespace, name), t) in &mut self.leases {
            let Some((late, last)) = t.thresholds(grace) else {
                continue;
            };
            let since = human(now.duration_since(t.observed));
            let who = holder(&t.lease).unwrap_or_default().to_string();
            let heartbeat = is_heartbeat(&t.lease);
            let (event, message, alerted) = if last < now && t.alerted < Alerted::Expired {
                if heartbeat {
                    (
                        Kind::NodeNotReady,
                        format!(
                            "the kubelet has not renewed for {since}: the node controller marks node {name} NotReady (node-monitor-grace-period {})",
                            human(grace)
                        ),
                        Alerted::Expired,
                    )
                } else {
                    let next = if strategy(&t.lease).is_some() {
                        "the leader-election controller elects a new holder"
                    } else {
                        "standbys may acquire it"
                    };
                    (
                        Kind::Expired,
                        format!("expired: {who} has not renewed for {since}; {next}"),
                        Alerted::Expired,
                    )
                }
            } else if late < now && t.alerted < Alerted::Late {
                let whose = if heartbeat {
                    "the kubelet"
                } else {
                    who.as_str()
                };
                (
                    Kind::MissedRenewal,
                    format!("missed renewals: {whose} has not renewed for {since}"),
                    Alerted::Late,
                )
            } else {
                continue;
            };
            t.alerted = alerted;
            changes.push(Change {
                time: now,
                namespace: namespace.clone(),
                name: name.clone(),
                event,
                holder: Some(who),
                message,
                from_relist: false,
                routine: false,
            });
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::tests::{lease, ts};

    const GRACE: SignedDuration = SignedDuration::from_secs(50);

    /// A tracker of one leader lease, started at `now`.
    fn tracking(l: &Lease, now: Timestamp) -> Tracker {
        Tracker::new(Selection::default(), std::slice::from_ref(l), now, GRACE)
    }

    fn renewed(l: &Lease, at: &str) -> Lease {
        let mut l = l.clone();
        l.spec.as_mut().unwrap().renew_time = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(ts(at)),
        );
        l
    }

    #[test]
    fn a_missed_renewal_an_expiry_and_a_new_leader() {
        let l = lease(
            "kube-system",
            "kube-scheduler",
            Some("cp-1_a"),
            Some("2026-11-23T10:00:00Z"),
            Some(15),
        );
        let mut t = tracking(&l, ts("2026-11-23T10:00:01Z"));
        assert_eq!(t.next_deadline(), Some(ts("2026-11-23T10:00:05Z")));
        let r = t.observe(
            renewed(&l, "2026-11-23T10:00:02Z"),
            ts("2026-11-23T10:00:02Z"),
            false,
        );
        assert_eq!(r.len(), 1);
        assert!(r[0].routine);
        assert_eq!(r[0].message, "renewed after 2s");
        assert!(t.tick(ts("2026-11-23T10:00:06Z")).is_empty());
        let late = t.tick(ts("2026-11-23T10:00:07.5Z"));
        assert_eq!(late[0].event, Kind::MissedRenewal);
        assert_eq!(
            late[0].message,
            "missed renewals: cp-1_a has not renewed for 5.5s"
        );
        assert!(t.tick(ts("2026-11-23T10:00:08Z")).is_empty());
        assert_eq!(t.next_deadline(), Some(ts("2026-11-23T10:00:17Z")));
        let expired = t.tick(ts("2026-11-23T10:00:18Z"));
        assert_eq!(expired[0].event, Kind::Expired);
        assert_eq!(t.next_deadline(), None);
        let mut taken = renewed(&l, "2026-11-23T10:00:19Z");
        let spec = taken.spec.as_mut().unwrap();
        spec.holder_identity = Some("cp-2_b".into());
        spec.lease_transitions = Some(2);
        let c = t.observe(taken, ts("2026-11-23T10:00:19Z"), false);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].event, Kind::HolderChanged);
        assert_eq!(
            c[0].message,
            "leader changed: cp-1_a → cp-2_b (leaseTransitions 1 → 2)"
        );
        assert_eq!(t.next_deadline(), Some(ts("2026-11-23T10:00:24Z")));
    }

    #[test]
    fn renewals_after_a_silence_are_news() {
        let l = lease(
            "kube-system",
            "s",
            Some("cp-1_a"),
            Some("2026-11-23T10:00:00Z"),
            Some(15),
        );
        let mut t = tracking(&l, ts("2026-11-23T10:00:06Z"));
        let r = t.observe(
            renewed(&l, "2026-11-23T10:00:09Z"),
            ts("2026-11-23T10:00:09Z"),
            false,
        );
        assert!(!r[0].routine);
        assert_eq!(r[0].message, "renewals resumed after 9s by cp-1_a");
    }

    #[test]
    fn a_relist_reports_what_changed_and_what_went() {
        let a = lease(
            "kube-system",
            "a",
            Some("x_1"),
            Some("2026-11-23T10:00:00Z"),
            Some(15),
        );
        let b = lease(
            "kube-system",
            "b",
            Some("y_1"),
            Some("2026-11-23T10:00:00Z"),
            Some(15),
        );
        let mut t = Tracker::new(
            Selection::default(),
            &[a.clone(), b],
            ts("2026-11-23T10:00:01Z"),
            GRACE,
        );
        let mut a2 = renewed(&a, "2026-11-23T10:01:00Z");
        a2.spec.as_mut().unwrap().holder_identity = Some("x_2".into());
        a2.spec.as_mut().unwrap().lease_transitions = Some(4);
        let c = t.resync(vec![a2], ts("2026-11-23T10:01:00Z"));
        let kinds: Vec<Kind> = c.iter().map(|c| c.event).collect();
        assert_eq!(kinds, [Kind::Deleted, Kind::HolderChanged]);
        assert!(c.iter().all(|c| c.from_relist));
        assert_eq!(
            c[1].message,
            "leader changed: x_1 → x_2 (leaseTransitions 1 → 4: 3 changes while the watch was away)"
        );
        assert_eq!(t.len(), 1);
    }
}

#[cfg(test)]
mod more_tests {
    use super::*;
    use crate::lease::tests::{lease, ts};

    const GRACE: SignedDuration = SignedDuration::from_secs(50);

    /// A tracker of one leader lease, started at `now`.
    fn tracking(l: &Lease, now: Timestamp) -> Tracker {
        Tracker::new(Selection::default(), std::slice::from_ref(l), now, GRACE)
    }

    fn with(l: &Lease, f: impl Fn(&mut k8s_openapi::api::coordination::v1::LeaseSpec)) -> Lease {
        let mut l = l.clone();
        f(l.spec.as_mut().unwrap());
        l
    }

    fn at(s: &str) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime> {
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            ts(s),
        ))
    }

    #[test]
    fn a_restart_under_the_same_identity_is_an_acquisition_not_a_renewal() {
        let l = lease(
            "ingress",
            "leader",
            Some("pod-a"),
            Some("2026-11-23T10:00:00Z"),
            Some(30),
        );
        let mut t = tracking(&l, ts("2026-11-23T10:00:01Z"));
        let again = with(&l, |s| {
            s.renew_time = at("2026-11-23T10:00:20Z");
            s.acquire_time = at("2026-11-23T10:00:20Z");
            s.lease_transitions = Some(2);
        });
        let c = t.observe(again, ts("2026-11-23T10:00:20Z"), false);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].event, Kind::Acquired);
        assert!(!c[0].routine);
        assert_eq!(
            c[0].message,
            "acquired again by pod-a (a restart keeps its identity) (leaseTransitions 1 → 2)"
        );
    }

    #[test]
    fn releases_recreations_and_election_changes_are_lines() {
        let mut l = lease(
            "kube-system",
            "s",
            Some("cp-1_a"),
            Some("2026-11-23T10:00:00Z"),
            Some(15),
        );
        l.metadata.uid = Some("u1".into());
        let mut t = tracking(&l, ts("2026-11-23T10:00:01Z"));
        let preferred = with(&l, |s| {
            s.strategy = Some("OldestEmulationVersion".into());
            s.preferred_holder = Some("cp-2_b".into());
        });
        let c = t.observe(preferred.clone(), ts("2026-11-23T10:00:02Z"), false);
        let kinds: Vec<Kind> = c.iter().map(|c| c.event).collect();
        assert_eq!(kinds, [Kind::ElectionChanged, Kind::ElectionChanged]);
        let released = with(&preferred, |s| {
            s.holder_identity = Some(String::new());
            s.lease_duration_seconds = Some(1);
        });
        let c = t.observe(released.clone(), ts("2026-11-23T10:00:03Z"), false);
        assert_eq!(c[0].event, Kind::Released);
        assert_eq!(
            c[0].message,
            "released by cp-1_a: the API server's leader-election controller elects a new holder among the candidates"
        );
        let mut recreated = lease(
            "kube-system",
            "s",
            Some("cp-3_c"),
            Some("2026-11-23T10:00:04Z"),
            Some(15),
        );
        recreated.metadata.uid = Some("u2".into());
        let c = t.resync(vec![recreated], ts("2026-11-23T10:00:05Z"));
        let kinds: Vec<Kind> = c.iter().map(|c| c.event).collect();
        assert_eq!(kinds, [Kind::Deleted, Kind::Created]);
    }

    #[test]
    fn heartbeats_go_not_ready_after_the_grace_period() {
        let l = lease(
            NODE_LEASE_NAMESPACE,
            "w-1",
            Some("w-1"),
            Some("2026-11-23T10:00:00Z"),
            Some(40),
        );
        let nodes = Selection {
            namespace: Some(NODE_LEASE_NAMESPACE.into()),
            name: None,
        };
        let mut t = Tracker::new(
            nodes,
            std::slice::from_ref(&l),
            ts("2026-11-23T10:00:01Z"),
            GRACE,
        );
        let late = t.tick(ts("2026-11-23T10:00:14Z"));
        assert_eq!(
            late[0].message,
            "missed renewals: the kubelet has not renewed for 14s"
        );
        assert_eq!(t.next_deadline(), Some(ts("2026-11-23T10:00:50Z")));
        let gone = t.tick(ts("2026-11-23T10:00:51Z"));
        assert_eq!(gone[0].event, Kind::NodeNotReady);
        assert!(
            gone[0].message.contains("marks node w-1 NotReady"),
            "{}",
            gone[0].message
        );
    }

    #[test]
    fn a_holder_clock_behind_the_server_does_not_look_like_silence() {
        // The holder's clock is 10s behind: every renewTime it writes is 10s old on arrival.
        let l = lease(
            "kube-system",
            "s",
            Some("cp-1_a"),
            Some("2026-11-23T09:59:58Z"),
            Some(15),
        );
        let mut t = tracking(&l, ts("2026-11-23T10:00:00Z"));
        for i in 1..10 {
            let now = ts(&format!("2026-11-23T10:00:{:02}Z", i * 2));
            let renewed = with(&l, |s| {
                s.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                    now - SignedDuration::from_secs(10),
                ))
            });
            let c = t.observe(renewed, now, false);
            assert!(c.iter().all(|c| c.routine), "{c:?}");
            assert!(t.tick(now + SignedDuration::from_secs(1)).is_empty());
        }
    }
}
