//! Coordinated leader election (Kubernetes 1.31+): components publish a LeaseCandidate per lease
//! they could lead, and the API server's leader-election controller picks among them by the
//! lease's strategy. Only `OldestEmulationVersion` is decided by that controller: lowest
//! emulationVersion, then lowest binaryVersion, then the oldest candidate; candidates not renewed
//! for 30 minutes or with an unparsable version take no part.

use super::duration::human;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::Value;
use std::cmp::Ordering;

pub const OLDEST_EMULATION_VERSION: &str = "OldestEmulationVersion";
/// The controller ignores candidates that have not renewed for this long.
pub const CANDIDATE_VALID_FOR: SignedDuration = SignedDuration::from_mins(30);

/// A LeaseCandidate, whichever coordination.k8s.io version it was read in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub namespace: String,
    /// The identity the candidate would hold the lease as.
    pub name: String,
    pub lease_name: String,
    pub binary_version: Option<String>,
    pub emulation_version: Option<String>,
    pub strategy: Option<String>,
    pub renew_time: Option<Timestamp>,
    pub ping_time: Option<Timestamp>,
    pub creation_timestamp: Option<Timestamp>,
}

fn text(v: &Value, path: &[&str]) -> Option<String> {
    path.iter()
        .try_fold(v, |v, k| v.get(k))?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn time(v: &Value, path: &[&str]) -> Option<Timestamp> {
    text(v, path)?.parse().ok()
}

/// The LeaseCandidates of a dump; objects without a name or leaseName are no candidates.
pub fn parse(objects: &[Value]) -> Vec<Candidate> {
    objects
        .iter()
        .filter_map(|o| {
            Some(Candidate {
                namespace: text(o, &["metadata", "namespace"]).unwrap_or_default(),
                name: text(o, &["metadata", "name"])?,
                lease_name: text(o, &["spec", "leaseName"])?,
                binary_version: text(o, &["spec", "binaryVersion"]),
                emulation_version: text(o, &["spec", "emulationVersion"]),
                // v1beta1 has one strategy; v1alpha1 listed preferences, the first winning.
                strategy: text(o, &["spec", "strategy"]).or_else(|| {
                    o.pointer("/spec/preferredStrategies/0")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                }),
                renew_time: time(o, &["spec", "renewTime"]),
                ping_time: time(o, &["spec", "pingTime"]),
                creation_timestamp: time(o, &["metadata", "creationTimestamp"]),
            })
        })
        .collect()
}

/// A version as blang/semver's ParseTolerant reads it: surrounding spaces and a leading `v`
/// dropped, leading zeros of each part removed, a missing minor or patch taken as 0 (but a
/// short version with a pre-release or build part is an error).
pub fn tolerant_version(s: &str) -> Option<semver::Version> {
    let s = s.trim();
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_string).collect();
    for p in &mut parts {
        if p.len() > 1 {
            let trimmed = p.trim_start_matches('0');
            *p = if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                trimmed.to_string()
            } else {
                format!("0{trimmed}")
            };
        }
    }
    if parts.len() < 3 {
        if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
            return None;
        }
        parts.resize(3, "0".to_string());
    }
    semver::Version::parse(&parts.join(".")).ok()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CandidateState {
    /// The strategy's choice.
    Preferred,
    /// Would take part in an election.
    Eligible,
    /// Not renewed for 30 minutes: ignored by the controller (and garbage-collected).
    Expired,
    /// Its binary or emulation version does not parse: never chosen.
    InvalidVersion,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RankedCandidate {
    #[serde(flatten)]
    pub candidate: Candidate,
    pub state: CandidateState,
}

/// The candidates of one lease and what the strategy makes of them.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Election {
    /// The lease's strategy, else the one its candidates ask for.
    pub strategy: Option<String>,
    pub candidates: Vec<RankedCandidate>,
    /// The identity the strategy prefers, when the controller decides it.
    pub preferred: Option<String>,
    /// What follows for the lease, in a sentence.
    pub note: String,
}

/// How long the controller waits for candidates to answer a ping.
pub const ELECTION_DURATION: SignedDuration = SignedDuration::from_secs(5);

#[derive(Debug, PartialEq, Eq)]
pub enum StrategyConflict {
    /// No live candidate names one.
    None,
    /// Candidates of the highest binary version ask for different ones.
    Disagree,
}

/// The strategy the controller runs the election with: the one of the candidates with the
/// highest binary version (they must agree).
fn pick_strategy(live: &[&Candidate]) -> Result<String, StrategyConflict> {
    let binary = |c: &Candidate| c.binary_version.as_deref().and_then(tolerant_version);
    let newest = live
        .iter()
        .filter_map(|c| binary(c))
        .max_by(|a, b| a.cmp_precedence(b));
    let mut strategies: Vec<&str> = live
        .iter()
        .filter(|c| match (&newest, binary(c)) {
            (Some(n), Some(v)) => v.cmp_precedence(n) == Ordering::Equal,
            (None, _) => true,
            _ => false,
        })
        .filter_map(|c| c.strategy.as_deref())
        .collect();
    strategies.sort_unstable();
    strategies.dedup();
    match strategies.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(StrategyConflict::None),
        _ => Err(StrategyConflict::Disagree),
    }
}

/// -1 when `a` is the better leader, as the controller's `compare` orders them.
fn compare(a: &Candidate, b: &Candidate) -> Ordering {
    let version = |v: &Option<String>| {
        v.as_deref()
            .and_then(tolerant_version)
            .unwrap_or(semver::Version::new(0, 0, 0))
    };
    version(&a.emulation_version)
        .cmp_precedence(&version(&b.emulation_version))
        .then_with(|| version(&a.binary_version).cmp_precedence(&version(&b.binary_version)))
        .then_with(|| match (a.creation_timestamp, b.creation_timestamp) {
            (Some(x), Some(y)) if x > y => Ordering::Greater,
            _ => Ordering::Less,
        })
}

fn expired(c: &Candidate, now: Timestamp) -> bool {
    c.renew_time.is_none_or(|r| r + CANDIDATE_VALID_FOR < now)
}

fn valid(c: &Candidate) -> bool {
    let ok = |v: &Option<String>| v.as_deref().and_then(tolerant_version).is_some();
    ok(&c.emulation_version) && ok(&c.binary_version)
}

/// The election of a lease, or `None` when it has no candidates.
pub fn election(lease: &Lease, all: &[Candidate], now: Timestamp) -> Option<Election> {
    let ns = lease.metadata.namespace.as_deref().unwrap_or_default();
    let name = lease.metadata.name.as_deref().unwrap_or_default();
    let mut mine: Vec<&Candidate> = all
        .iter()
        .filter(|c| c.namespace == ns && c.lease_name == name)
        .collect();
    if mine.is_empty() {
        return None;
    }
    mine.sort_by(|a, b| a.name.cmp(&b.name));
    let spec = lease.spec.as_ref();
    let live: Vec<&Candidate> = mine.iter().copied().filter(|c| !expired(c, now)).collect();
    let picked = pick_strategy(&live);
    let strategy = match &picked {
        Ok(s) => Some(s.clone()),
        Err(_) => spec.and_then(|s| s.strategy.clone()),
    };
    let decides = strategy.as_deref() == Some(OLDEST_EMULATION_VERSION);
    let best = mine
        .iter()
        .filter(|c| !expired(c, now) && valid(c))
        .fold(None::<&Candidate>, |best, c| match best {
            Some(b) if compare(b, c) != Ordering::Greater => Some(b),
            _ => Some(c),
        })
        .filter(|_| decides);
    let candidates = mine
        .iter()
        .map(|c| RankedCandidate {
            candidate: (*c).clone(),
            state: if expired(c, now) {
                CandidateState::Expired
            } else if !valid(c) {
                CandidateState::InvalidVersion
            } else if best.is_some_and(|b| b.name == c.name) {
                CandidateState::Preferred
            } else {
                CandidateState::Eligible
            },
        })
        .collect();
    let holder = super::holder(lease);
    let preferred_holder = spec.and_then(|s| s.preferred_holder.as_deref());
    let note = match (strategy.as_deref(), best) {
        (None, _) => match picked {
            Err(StrategyConflict::Disagree) => "candidates of the newest binary version ask for different strategies: the controller elects no one until they agree".into(),
            _ => "no live candidate names a strategy: the controller elects no one".into(),
        },
        (Some(s), _) if !decides => format!(
            "strategy {s} is not decided by the API server's leader-election controller: a third-party controller picks the holder"
        ),
        (Some(_), None) => "no candidate is eligible (all expired or with unparsable versions): no election can succeed".into(),
        (Some(_), Some(b)) => match (holder, preferred_holder) {
            (Some(h), _) if h == b.name => {
                format!("{h} holds the lease and is the strategy's choice")
            }
            (_, Some(p)) if p == b.name => format!(
                "preferredHolder is {p}: the holder stops renewing when it sees that and lets the lease expire, then the leader-election controller makes {p} the holder"
            ),
            (Some(h), _) => format!(
                "{} is the strategy's choice (emulation {}, binary {}): the leader-election controller will set preferredHolder to it, and {h} will stop renewing and let the lease expire",
                b.name,
                b.emulation_version.as_deref().unwrap_or("-"),
                b.binary_version.as_deref().unwrap_or("-")
            ),
            (None, _) => format!(
                "no holder: the leader-election controller will elect {} once the candidates answer its ping (it waits up to {})",
                b.name,
                human(ELECTION_DURATION)
            ),
        },
    };
    Some(Election {
        strategy,
        candidates,
        preferred: best.map(|b| b.name.clone()),
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::tests::{lease, ts};
    use serde_json::json;

    fn cand(name: &str, emu: &str, bin: &str, renew: &str, created: &str) -> Value {
        json!({
            "apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate",
            "metadata": {"namespace": "kube-system", "name": name, "creationTimestamp": created},
            "spec": {"leaseName": "kube-scheduler", "binaryVersion": bin, "emulationVersion": emu,
                     "strategy": "OldestEmulationVersion", "renewTime": renew},
        })
    }

    const NOW: &str = "2026-11-23T10:00:00Z";

    #[test]
    fn versions_parse_tolerantly() {
        assert_eq!(
            tolerant_version("v1.31"),
            Some(semver::Version::new(1, 31, 0))
        );
        assert_eq!(
            tolerant_version(" 1.33.2 "),
            Some(semver::Version::new(1, 33, 2))
        );
        assert!(tolerant_version("1.34.0-alpha.1").is_some());
        assert_eq!(tolerant_version("latest"), None);
        // As blang/semver: leading zeros dropped, short versions with a pre-release refused.
        assert_eq!(
            tolerant_version("1.031"),
            Some(semver::Version::new(1, 31, 0))
        );
        assert_eq!(tolerant_version("1.34-alpha"), None);
    }

    #[test]
    fn the_oldest_emulation_version_wins_then_binary_then_age() {
        let objects = vec![
            cand(
                "cp-1_a",
                "1.33",
                "1.34.1",
                "2026-11-23T09:59:00Z",
                "2026-01-01T00:00:00Z",
            ),
            cand(
                "cp-2_b",
                "1.33",
                "1.33.5",
                "2026-11-23T09:59:00Z",
                "2026-02-01T00:00:00Z",
            ),
            cand(
                "cp-3_c",
                "1.33",
                "1.33.5",
                "2026-11-23T09:59:00Z",
                "2026-01-15T00:00:00Z",
            ),
            // Older emulation version, but not renewed for 30 minutes.
            cand(
                "cp-4_d",
                "1.32",
                "1.32.0",
                "2026-11-23T09:29:00Z",
                "2025-01-01T00:00:00Z",
            ),
            cand(
                "cp-5_e",
                "one",
                "1.30.0",
                "2026-11-23T09:59:00Z",
                "2025-01-01T00:00:00Z",
            ),
        ];
        let all = parse(&objects);
        let l = lease(
            "kube-system",
            "kube-scheduler",
            Some("cp-1_a"),
            Some(NOW),
            Some(15),
        );
        let e = election(&l, &all, ts(NOW)).unwrap();
        assert_eq!(e.preferred.as_deref(), Some("cp-3_c"));
        let states: Vec<_> = e.candidates.iter().map(|c| c.state).collect();
        assert_eq!(
            states,
            [
                CandidateState::Eligible,
                CandidateState::Eligible,
                CandidateState::Preferred,
                CandidateState::Expired,
                CandidateState::InvalidVersion
            ]
        );
        assert!(
            e.note.starts_with("cp-3_c is the strategy's choice"),
            "{}",
            e.note
        );
    }

    #[test]
    fn third_party_strategies_are_not_predicted() {
        let mut o = cand("cp-1_a", "1.33", "1.34.1", NOW, NOW);
        o["spec"]["strategy"] = json!("example.com/Custom");
        let all = parse(&[o]);
        let l = lease(
            "kube-system",
            "kube-scheduler",
            Some("cp-1_a"),
            Some(NOW),
            Some(15),
        );
        let e = election(&l, &all, ts(NOW)).unwrap();
        assert_eq!(e.preferred, None);
        assert!(e.note.contains("third-party"), "{}", e.note);
        let other = lease("kube-system", "other", None, None, None);
        assert!(election(&other, &all, ts(NOW)).is_none());
    }

    #[test]
    fn the_newest_binary_version_decides_the_strategy() {
        let mut old = cand("cp-1_a", "1.33", "1.33.0", NOW, NOW);
        old["spec"]["strategy"] = json!("example.com/Old");
        let new = cand("cp-2_b", "1.34", "1.34.1", NOW, NOW);
        let l = lease("kube-system", "kube-scheduler", None, None, None);
        let e = election(&l, &parse(&[old.clone(), new.clone()]), ts(NOW)).unwrap();
        assert_eq!(e.strategy.as_deref(), Some(OLDEST_EMULATION_VERSION));
        // cp-1 is older in emulation version, so the strategy prefers it.
        assert_eq!(e.preferred.as_deref(), Some("cp-1_a"));
        assert!(
            e.note
                .starts_with("no holder: the leader-election controller will elect cp-1_a"),
            "{}",
            e.note
        );
        let mut rival = cand("cp-3_c", "1.34", "1.34.1", NOW, NOW);
        rival["spec"]["strategy"] = json!("example.com/Other");
        let e = election(&l, &parse(&[old, new, rival]), ts(NOW)).unwrap();
        assert_eq!(e.strategy, None);
        assert!(
            e.note.contains("ask for different strategies"),
            "{}",
            e.note
        );
    }

    #[test]
    fn a_preferred_holder_is_handed_the_lease_by_the_controller() {
        let all = parse(&[
            cand("cp-1_a", "1.34", "1.34.1", NOW, NOW),
            cand("cp-2_b", "1.33", "1.34.1", NOW, NOW),
        ]);
        let mut l = lease(
            "kube-system",
            "kube-scheduler",
            Some("cp-1_a"),
            Some(NOW),
            Some(15),
        );
        l.spec.as_mut().unwrap().preferred_holder = Some("cp-2_b".into());
        let e = election(&l, &all, ts(NOW)).unwrap();
        assert!(
            e.note
                .starts_with("preferredHolder is cp-2_b: the holder stops renewing"),
            "{}",
            e.note
        );
    }
}
