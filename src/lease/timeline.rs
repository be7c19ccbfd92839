//! `--watch` as an incident timeline: what changed between two versions of a lease (holder
//! changes, releases, renewals), and the moments nothing arrived that should have (a missed
//! renewal, an expiry), which no watch event announces and a clock must find.

use super::table::human;
use super::{Selection, holder, lease_duration, renew_time};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Kind {
    /// A lease appeared after the watch started.
    Created,
    /// A lease without holder got one.
    Acquired,
    /// Leadership moved to another identity.
    HolderChanged,
    /// The holder gave the lease up (empty holderIdentity).
    Released,
    /// The holder renewed (shown with `--renewals`, or when it follows a missed renewal).
    Renewed,
    /// The holder set or cleared preferredHolder, or the strategy changed.
    ElectionChanged,
    /// A third of the lease's duration passed without renewal.
    MissedRenewal,
    /// renewTime + leaseDurationSeconds passed: standbys may acquire it.
    Expired,
    Deleted,
}

/// One line of the timeline.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// When it was seen, by the API server's clock.
    pub time: Timestamp,
    pub namespace: String,
    pub name: String,
    pub event: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    pub message: String,
    /// Found by comparing a fresh list with what was last seen, after the watch's history had
    /// expired: changes in between were folded into this one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_relist: bool,
}

impl Change {
    /// Renewals are routine: shown only when asked for.
    pub fn is_routine(&self) -> bool {
        self.event == Kind::Renewed && !self.message.contains("resumed")
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
    alerted: Alerted,
}

/// What the watch has seen of each lease, and which silences it has already reported.
pub struct Tracker {
    selection: Selection,
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

fn spec_text(
    l: &Lease,
    f: impl Fn(&k8s_openapi::api::coordination::v1::LeaseSpec) -> Option<&String>,
) -> Option<String> {
    l.spec.as_ref().and_then(f).cloned()
}

/// The silences a held lease can reach: late at a third of its duration, expired after it.
fn thresholds(l: &Lease) -> Option<(Timestamp, Timestamp)> {
    holder(l)?;
    let renew = renew_time(l)?;
    let d = lease_duration(l)?;
    Some((renew + d / 3, renew + d))
}

impl Tracker {
    /// Starts from a list: what is already there is the starting state, not news.
    pub fn new(selection: Selection, leases: &[Lease], now: Timestamp) -> Tracker {
        let mut t = Tracker {
            selection,
            leases: BTreeMap::new(),
        };
        for l in leases.iter().filter(|l| t.selection.matches(l)) {
            let alerted = match thresholds(l) {
                Some((_, expiry)) if expiry < now => Alerted::Expired,
                Some((late, _)) if late < now => Alerted::Late,
                _ => Alerted::Nothing,
            };
            t.leases.insert(
                key(l),
                Tracked {
                    lease: l.clone(),
                    alerted,
                },
            );
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
        let change = |event: Kind, message: String| Change {
            time: now,
            namespace: namespace.clone(),
            name: name.clone(),
            event,
            holder: holder(&lease).map(str::to_string),
            message,
            from_relist,
        };
        let mut changes = Vec::new();
        let previous = self.leases.remove(&(namespace.clone(), name.clone()));
        let alerted = match &previous {
            None => {
                changes.push(change(
                    Kind::Created,
                    match holder(&lease) {
                        Some(h) => format!("created, held by {h}"),
                        None => "created without a holder".into(),
                    },
                ));
                Alerted::Nothing
            }
            Some(prev) => {
                let old = &prev.lease;
                let (before, after) = (holder(old), holder(&lease));
                let counted = match transitions(&lease) - transitions(old) {
                    0 => String::new(),
                    n if from_relist && n > 1 => {
                        format!(
                            " (leaseTransitions {} → {}: {n} changes while the watch was away)",
                            transitions(old),
                            transitions(&lease)
                        )
                    }
                    _ => format!(
                        " (leaseTransitions {} → {})",
                        transitions(old),
                        transitions(&lease)
                    ),
                };
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
                        format!("released by {a}: a standby may acquire it at its next retry"),
                    )),
                    _ => {}
                }
                let renewed =
                    before.is_some() && before == after && renew_time(old) != renew_time(&lease);
                if renewed {
                    let gap = renew_time(&lease)
                        .zip(renew_time(old))
                        .map(|(n, o)| human(n.duration_since(o)))
                        .unwrap_or_else(|| "-".into());
                    let message = if prev.alerted > Alerted::Nothing {
                        format!(
                            "renewals resumed after {gap} by {}",
                            after.unwrap_or_default()
                        )
                    } else {
                        format!("renewed after {gap}")
                    };
                    changes.push(change(Kind::Renewed, message));
                }
                let preferred = |l: &Lease| spec_text(l, |s| s.preferred_holder.as_ref());
                let strategy = |l: &Lease| spec_text(l, |s| s.strategy.as_ref());
                if preferred(old) != preferred(&lease) {
                    changes.push(change(
                        Kind::ElectionChanged,
                        match preferred(&lease) {
                            Some(p) => {
                                format!("preferredHolder set to {p}: the holder should yield")
                            }
                            None => "preferredHolder cleared".into(),
                        },
                    ));
                }
                if strategy(old) != strategy(&lease) {
                    changes.push(change(
                        Kind::ElectionChanged,
                        format!(
                            "strategy changed to {}",
                            strategy(&lease).unwrap_or_else(|| "none".into())
                        ),
                    ));
                }
                if renewed || before != after {
                    Alerted::Nothing
                } else {
                    prev.alerted
                }
            }
        };
        self.leases
            .insert((namespace, name), Tracked { lease, alerted });
        changes
    }

    pub fn deleted(&mut self, lease: &Lease, now: Timestamp, from_relist: bool) -> Vec<Change> {
        let (namespace, name) = key(lease);
        match self.leases.remove(&(namespace.clone(), name.clone())) {
            Some(prev) => vec![Change {
                time: now,
                holder: holder(&prev.lease).map(str::to_string),
                message: "deleted".into(),
                event: Kind::Deleted,
                namespace,
                name,
                from_relist,
            }],
            None => Vec::new(),
        }
    }

    /// After the watch's history expired: the fresh list against what was last seen.
    pub fn resync(&mut self, leases: Vec<Lease>, now: Timestamp) -> Vec<Change> {
        let listed: std::collections::HashSet<(String, String)> = leases.iter().map(key).collect();
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
                let (late, expiry) = thresholds(&t.lease)?;
                match t.alerted {
                    Alerted::Nothing => Some(late),
                    Alerted::Late => Some(expiry),
                    Alerted::Expired => None,
                }
            })
            .min()
    }

    /// The silences that have run out by `now`.
    pub fn tick(&mut self, now: Timestamp) -> Vec<Change> {
        let mut changes = Vec::new();
        for ((namespace, name), t) in &mut self.leases {
            let Some((late, expiry)) = thresholds(&t.lease) else {
                continue;
            };
            let since = renew_time(&t.lease)
                .map(|r| human(now.duration_since(r)))
                .unwrap_or_default();
            let who = holder(&t.lease).unwrap_or_default().to_string();
            let (event, message, alerted) = if expiry < now && t.alerted < Alerted::Expired {
                (
                    Kind::Expired,
                    format!("expired: {who} has not renewed for {since}; standbys may acquire it"),
                    Alerted::Expired,
                )
            } else if late < now && t.alerted < Alerted::Late {
                (
                    Kind::MissedRenewal,
                    format!("missed renewals: {who} has not renewed for {since}"),
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
            });
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::tests::{lease, ts};

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
        let mut t = Tracker::new(
            Selection::default(),
            std::slice::from_ref(&l),
            ts("2026-11-23T10:00:01Z"),
        );
        assert_eq!(t.next_deadline(), Some(ts("2026-11-23T10:00:05Z")));
        let r = t.observe(
            renewed(&l, "2026-11-23T10:00:02Z"),
            ts("2026-11-23T10:00:02Z"),
            false,
        );
        assert_eq!(r.len(), 1);
        assert!(r[0].is_routine());
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
        let mut t = Tracker::new(
            Selection::default(),
            std::slice::from_ref(&l),
            ts("2026-11-23T10:00:06Z"),
        );
        let r = t.observe(
            renewed(&l, "2026-11-23T10:00:09Z"),
            ts("2026-11-23T10:00:09Z"),
            false,
        );
        assert!(!r[0].is_routine());
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
