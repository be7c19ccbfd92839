//! Which release a dump comes from when it names none (`kubectl get -o yaml` records no server
//! version): what its kubelets report, and the wording of the FailedScheduling events it holds,
//! where a release writes its own.

use super::{Release, ReleaseError, ReleaseSource};
use std::fmt;

/// `v1.M.P` as a kubelet reports it (`v1.30.14-eks-…` reads as v1.30.14): any minor, modelled
/// or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub minor: u16,
    pub patch: u16,
}

impl Version {
    const fn new(minor: u16, patch: u16) -> Version {
        Version { minor, patch }
    }

    pub fn parse(text: &str) -> Option<Version> {
        match super::components(text) {
            Ok((1, minor, patch)) => Some(Version::new(minor, patch.unwrap_or(0))),
            _ => None,
        }
    }

    fn of(r: Release) -> Version {
        Version::new(r.minor, r.patch)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v1.{}.{}", self.minor, self.patch)
    }
}

impl serde::Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Releases from `from` up to, not including, `until`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    from: Version,
    until: Option<Version>,
}

impl Range {
    const ANY: Range = Range {
        from: Version::new(0, 0),
        until: None,
    };

    fn contains(&self, v: Version) -> bool {
        v >= self.from && self.until.is_none_or(|u| v < u)
    }

    fn intersect(self, other: Range) -> Option<Range> {
        let from = self.from.max(other.from);
        let until = match (self.until, other.until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        until
            .is_none_or(|u| from < u)
            .then_some(Range { from, until })
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.until {
            None => write!(f, "{} or later", self.from),
            Some(u) if self.from == Version::new(0, 0) => write!(f, "before {u}"),
            Some(u) => write!(f, "{} to before {u}", self.from),
        }
    }
}

/// Wording only some releases write into a FailedScheduling message, from the release switches
/// (`Features`) that change messages without a gate off by default.
struct Tell {
    text: &'static str,
    releases: Range,
    /// What writes it, for the evidence.
    why: &'static str,
}

const TELLS: [Tell; 5] = [
    Tell {
        text: "node(s) had untolerated taint {",
        releases: Range {
            from: Version::new(0, 0),
            until: Some(Version::new(34, 2)),
        },
        why: "TaintToleration names the taint",
    },
    Tell {
        text: "node(s) had untolerated taint(s)",
        releases: Range {
            from: Version::new(34, 2),
            until: None,
        },
        why: "TaintToleration does not name the taint",
    },
    Tell {
        text: "node(s) didn't match Pod's required features",
        releases: Range {
            from: Version::new(35, 0),
            until: None,
        },
        why: "NodeDeclaredFeatures filters",
    },
    Tell {
        text: "invalid resource pools were encountered",
        releases: Range {
            from: Version::new(35, 0),
            until: None,
        },
        why: "the DRA allocator rejects nodes with invalid pools",
    },
    Tell {
        text: "preemption: found a potential placement for pod on node ",
        releases: Range {
            from: Version::new(37, 0),
            until: None,
        },
        why: "DefaultPreemption reports where it makes room",
    },
];

/// The kubelets' versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kubelets {
    /// Nodes reporting a version.
    pub nodes: u32,
    pub newest: Version,
    pub oldest: Version,
}

/// The FailedScheduling messages read, and how many hold each release's wording.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events {
    pub read: u32,
    seen: [u32; TELLS.len()],
    /// The tells of the most recent message that has any, one bit each.
    latest: u8,
}

impl Events {
    /// Reads messages oldest first.
    pub fn read<'a>(messages: impl IntoIterator<Item = &'a str>) -> Events {
        let mut e = Events::default();
        for m in messages {
            e.read += 1;
            let mut bits = 0u8;
            for (i, t) in TELLS.iter().enumerate() {
                if m.contains(t.text) {
                    e.seen[i] += 1;
                    bits |= 1 << i;
                }
            }
            if bits != 0 {
                e.latest = bits;
            }
        }
        e
    }

    /// The tells seen in any message, one bit each.
    fn seen_bits(&self) -> u8 {
        (0..TELLS.len())
            .filter(|&i| self.seen[i] > 0)
            .fold(0, |b, i| b | 1 << i)
    }

    /// The releases every message allows; `None` when they contradict each other (the cluster
    /// was upgraded while they were written), then the latest message's.
    fn releases(&self) -> (Option<Range>, bool) {
        let all = allowed(self.seen_bits());
        match all {
            Some(r) if r == Range::ANY => (None, false),
            Some(r) => (Some(r), false),
            None => (allowed(self.latest), true),
        }
    }
}

/// The releases that write every tell of `bits`; `None` when none does.
fn allowed(bits: u8) -> Option<Range> {
    TELLS
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .try_fold(Range::ANY, |r, (_, t)| r.intersect(t.releases))
}

/// Where the evidence disagrees, or falls short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conflict {
    /// Messages read like different releases; the latest one counted.
    EventsDisagree,
    /// The events read like a release the kubelets rule out (the control plane is at least as
    /// new as its newest kubelet, at most 3 minors newer than its oldest): the kubelets counted.
    EventsBeforeKubelets,
    /// The newest kubelet is older than any modelled release: the oldest modelled was taken.
    KubeletsOlderThanModelled,
}

impl Conflict {
    fn describe(self) -> &'static str {
        match self {
            Conflict::EventsDisagree => {
                "the events read like different releases (an upgrade?): the latest counted"
            }
            Conflict::EventsBeforeKubelets => {
                "the events read like a release older than the kubelets allow (written before an upgrade?): the kubelets counted"
            }
            Conflict::KubeletsOlderThanModelled => {
                "the kubelets are older than any release modelled (a control plane runs at most 3 minors ahead of its kubelets): the oldest modelled was taken"
            }
        }
    }
}

/// What a dump says of its release.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    pub kubelets: Option<Kubelets>,
    pub events: Events,
    pub conflict: Option<Conflict>,
}

/// The releases whose behaviour differs, one of each: where the evidence allows several, the
/// choice is among these.
const DISTINCT: [Version; 6] = [
    Version::new(34, 1),
    Version::new(34, 2),
    Version::new(35, 4),
    Version::new(36, 2),
    Version::new(36, 3),
    Version::new(37, 0),
];

/// One release of each distinct behaviour, oldest first.
pub fn distinct_releases() -> impl Iterator<Item = Release> {
    DISTINCT
        .iter()
        .filter_map(|v| Release::parse(&v.to_string()).ok())
}

impl Evidence {
    /// Reads the kubelets' versions and the FailedScheduling messages (oldest first).
    pub fn read<'a>(
        kubelet_versions: impl IntoIterator<Item = &'a str>,
        messages: impl IntoIterator<Item = &'a str>,
    ) -> Evidence {
        let mut kubelets: Option<Kubelets> = None;
        for v in kubelet_versions.into_iter().filter_map(Version::parse) {
            let k = kubelets.get_or_insert(Kubelets {
                nodes: 0,
                newest: v,
                oldest: v,
            });
            k.nodes += 1;
            k.newest = k.newest.max(v);
            k.oldest = k.oldest.min(v);
        }
        Evidence {
            kubelets,
            events: Events::read(messages),
            conflict: None,
        }
    }

    /// The release the evidence points to, and why: the newest kubelet's, unless the events
    /// rule it out and allow a newer one the kubelets allow too; from the events alone, the
    /// newest release they allow; with neither, the newest modelled.
    pub fn choose(mut self) -> Result<(Release, ReleaseSource, Evidence), ReleaseError> {
        let (events, disagree) = self.events.releases();
        if disagree {
            self.conflict = Some(Conflict::EventsDisagree);
        }
        let release = |v: Version| Release::parse(&v.to_string());
        let Some(k) = self.kubelets else {
            return Ok(match events {
                Some(range) => {
                    let v = DISTINCT.iter().rev().find(|v| range.contains(**v));
                    match v {
                        Some(v) => (release(*v)?, ReleaseSource::Events, self),
                        None => (Release::NEWEST, ReleaseSource::Newest, self),
                    }
                }
                None => (Release::NEWEST, ReleaseSource::Newest, self),
            });
        };
        let newest = if k.newest.minor < Release::OLDEST.minor {
            self.conflict = self.conflict.or(Some(Conflict::KubeletsOlderThanModelled));
            Version::of(Release::OLDEST)
        } else {
            k.newest
        };
        let Some(range) = events.filter(|r| !r.contains(newest)) else {
            return Ok((release(newest)?, ReleaseSource::Kubelets, self));
        };
        // The control plane is at least its newest kubelet's release and at most 3 minors newer
        // than its oldest.
        let allowed = Range {
            from: newest,
            until: Some(Version::new(k.oldest.minor.max(newest.minor) + 4, 0)),
        };
        match DISTINCT
            .iter()
            .find(|v| allowed.contains(**v) && range.contains(**v))
        {
            Some(v) => Ok((release(*v)?, ReleaseSource::Events, self)),
            None => {
                self.conflict = Some(Conflict::EventsBeforeKubelets);
                Ok((release(newest)?, ReleaseSource::Kubelets, self))
            }
        }
    }

    /// The evidence in words, for a header: `the newest of 5 kubelets is v1.36.2; 2 of 3
    /// FailedScheduling events read like v1.34.2 or later (TaintToleration does not name the
    /// taint)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match self.kubelets {
            Some(k) if k.nodes == 1 => parts.push(format!("the one kubelet is {}", k.newest)),
            Some(k) => parts.push(format!(
                "the newest of {} kubelets is {}{}",
                k.nodes,
                k.newest,
                if k.oldest != k.newest {
                    format!(", the oldest {}", k.oldest)
                } else {
                    String::new()
                }
            )),
            None => parts.push("no kubelet version".into()),
        }
        let tells: Vec<String> = TELLS
            .iter()
            .zip(self.events.seen)
            .filter(|(_, n)| *n > 0)
            .map(|(t, n)| format!("{n} read like {} ({})", t.releases, t.why))
            .collect();
        match (self.events.read, tells.is_empty()) {
            (0, _) => parts.push("no FailedScheduling event".into()),
            (n, true) => parts.push(format!(
                "{n} FailedScheduling event(s), none in a release's own wording"
            )),
            (n, false) => parts.push(format!(
                "of {n} FailedScheduling event(s), {}",
                tells.join(", ")
            )),
        }
        if let Some(c) = self.conflict {
            parts.push(c.describe().to_string());
        }
        parts.join("; ")
    }
}

impl serde::Serialize for Evidence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        #[derive(serde::Serialize)]
        struct KubeletsOut {
            nodes: u32,
            newest: Version,
            oldest: Version,
        }
        #[derive(serde::Serialize)]
        struct TellOut {
            text: &'static str,
            count: u32,
            releases: String,
        }
        #[derive(serde::Serialize)]
        struct EventsOut {
            read: u32,
            tells: Vec<TellOut>,
        }
        let mut st = s.serialize_struct("Evidence", 3)?;
        st.serialize_field(
            "kubelets",
            &self.kubelets.map(|k| KubeletsOut {
                nodes: k.nodes,
                newest: k.newest,
                oldest: k.oldest,
            }),
        )?;
        st.serialize_field(
            "events",
            &EventsOut {
                read: self.events.read,
                tells: TELLS
                    .iter()
                    .zip(self.events.seen)
                    .filter(|(_, n)| *n > 0)
                    .map(|(t, count)| TellOut {
                        text: t.text,
                        count,
                        releases: t.releases.to_string(),
                    })
                    .collect(),
            },
        )?;
        st.serialize_field("conflict", &self.conflict.map(Conflict::describe))?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choose(kubelets: &[&str], events: &[&str]) -> (String, ReleaseSource, Option<Conflict>) {
        let (r, source, e) = Evidence::read(kubelets.iter().copied(), events.iter().copied())
            .choose()
            .unwrap();
        (r.to_string(), source, e.conflict)
    }

    const NAMED: &str =
        "0/3 nodes are available: 3 node(s) had untolerated taint {dedicated: gpu}.";
    const UNNAMED: &str = "0/3 nodes are available: 3 node(s) had untolerated taint(s).";
    const PLACED: &str = "0/3 nodes are available: 3 Insufficient cpu. preemption: found a potential placement for pod on node a, preempting 1 victims";

    #[test]
    fn the_kubelets_name_the_release() {
        assert_eq!(
            choose(&["v1.36.2", "v1.35.4-eks-1", "v1.36.3"], &[]),
            ("v1.36.3".into(), ReleaseSource::Kubelets, None)
        );
        // Events that agree leave it so.
        assert_eq!(choose(&["v1.35.1"], &[UNNAMED]).0, "v1.35.1");
    }

    #[test]
    fn events_name_what_kubelets_cannot() {
        // v1.34 kubelets, but the scheduler no longer names taints: v1.34.2 or later.
        assert_eq!(
            choose(&["v1.34.1"], &[UNNAMED]),
            ("v1.34.2".into(), ReleaseSource::Events, None)
        );
        // The 1.37 preemption text with 1.36 kubelets: the control plane is ahead.
        assert_eq!(choose(&["v1.36.1"], &[PLACED]).0, "v1.37.0");
        // Events alone: the newest release they allow.
        assert_eq!(
            choose(&[], &[NAMED]),
            ("v1.34.1".into(), ReleaseSource::Events, None)
        );
    }

    #[test]
    fn conflicts_are_said() {
        // Events from before an upgrade: the kubelets win.
        assert_eq!(
            choose(&["v1.36.2"], &[NAMED]),
            (
                "v1.36.2".into(),
                ReleaseSource::Kubelets,
                Some(Conflict::EventsBeforeKubelets)
            )
        );
        // Events that contradict each other: the latest counts.
        assert_eq!(
            choose(&[], &[NAMED, UNNAMED]),
            (
                "v1.37.0".into(),
                ReleaseSource::Events,
                Some(Conflict::EventsDisagree)
            )
        );
        // Kubelets older than any release modelled.
        let (r, _, c) = choose(&["v1.33.4", "v1.32.1"], &[]);
        assert_eq!(
            (r.as_str(), c),
            ("v1.34.1", Some(Conflict::KubeletsOlderThanModelled))
        );
        // Nothing at all.
        assert_eq!(
            choose(
                &["not a version"],
                &["0/1 nodes are available: 1 Insufficient cpu."]
            ),
            ("v1.37.0".into(), ReleaseSource::Newest, None)
        );
        // A kubelet newer than any release modelled is the cluster's release: not modelled.
        assert!(Evidence::read(["v1.38.0"], []).choose().is_err());
    }

    #[test]
    fn the_evidence_in_words() {
        let (_, _, e) = Evidence::read(["v1.34.1", "v1.34.0"], [UNNAMED, "x"])
            .choose()
            .unwrap();
        assert_eq!(
            e.describe(),
            "the newest of 2 kubelets is v1.34.1, the oldest v1.34.0; of 2 FailedScheduling event(s), 1 read like v1.34.2 or later (TaintToleration does not name the taint)"
        );
    }
}
