//! Leader-election leases as client-go's `leaderelection` package and the node controller read
//! them: who holds each lease, whether the holder still renews it, and when a standby could take
//! over. Pure: every answer is a function of the objects and a clock, so the statuses are tested
//! with fixed times and the same code serves the live API, `--watch` and snapshot files.

pub mod candidates;
pub mod duration;
pub mod heartbeat;
pub mod table;
pub mod timeline;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::Serialize;

/// Node heartbeat leases live here; they are not leader elections.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// Where "now" comes from. An operator's laptop clock must not make a healthy lease look expired,
/// so the API server's clock is preferred whenever it is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ClockSource {
    /// The API server's Date header, read with the leases.
    Server,
    /// The time a snapshot was taken (by the server's clock when the snapshot knew it).
    Snapshot,
    /// The local clock: the server's was not available.
    Local,
}

/// The clock every duration is measured against.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Clock {
    pub now: Timestamp,
    pub source: ClockSource,
    /// The API server's clock minus the local one, when they differ by more than a second.
    #[serde(with = "opt_seconds")]
    pub skew: Option<SignedDuration>,
}

/// Differences up to this are the Date header's one-second resolution, not skew.
pub const SKEW_TOLERANCE: SignedDuration = SignedDuration::from_secs(1);

impl Clock {
    /// The server's clock, estimated from a Date header (whole seconds, so its midpoint) read
    /// when the local clock said `local`; within a second of the local clock the local one is
    /// used, being the more precise.
    pub fn from_server_date(date: Timestamp, local: Timestamp) -> Clock {
        let server = date + SignedDuration::from_millis(500);
        let skew = server.duration_since(local);
        if skew.abs() <= SKEW_TOLERANCE {
            Clock {
                now: local,
                source: ClockSource::Server,
                skew: None,
            }
        } else {
            Clock {
                now: server,
                source: ClockSource::Server,
                skew: Some(skew),
            }
        }
    }

    /// The local clock, when the server's is not available.
    pub fn local() -> Clock {
        Clock {
            now: Timestamp::now(),
            source: ClockSource::Local,
            skew: None,
        }
    }

    /// The same clock when the local one reads `local` (the skew measured once still applies).
    pub fn advanced_to_local(&self, local: Timestamp) -> Clock {
        Clock {
            now: self.skew.and_then(|s| plus(local, s)).unwrap_or(local),
            ..*self
        }
    }
}

/// client-go's leader-election timings. Only leaseDurationSeconds is recorded in the Lease; the
/// other two are the components' settings (kube-scheduler and kube-controller-manager default to
/// 15s/10s/2s).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    #[serde(with = "seconds")]
    pub renew_deadline: SignedDuration,
    #[serde(with = "seconds")]
    pub retry_period: SignedDuration,
}

impl Default for Timings {
    fn default() -> Timings {
        Timings {
            renew_deadline: SignedDuration::from_secs(10),
            retry_period: SignedDuration::from_secs(2),
        }
    }
}

/// client-go waits up to retryPeriod × (1 + JitterFactor 1.2) between two attempts.
const RETRY_JITTER_TENTHS: i32 = 12;

impl Timings {
    /// The longest a standby waits between two attempts to acquire.
    pub fn max_retry_wait(&self) -> SignedDuration {
        self.retry_period * (10 + RETRY_JITTER_TENTHS) / 10
    }

    /// When a leader that renewed at `renew` stops leading if it cannot renew again: after a
    /// renewal client-go sleeps retryPeriod, then retries for renewDeadline.
    pub fn gives_up_at(&self, renew: Timestamp) -> Option<Timestamp> {
        plus(renew, self.retry_period.checked_add(self.renew_deadline)?)
    }
}

/// `t + d`, or `None` past the end of time (a corrupt renewTime must not crash the tool).
pub fn plus(t: Timestamp, d: SignedDuration) -> Option<Timestamp> {
    t.checked_add(d).ok()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Status {
    /// Renewed within the last third of its duration.
    Healthy,
    /// Not renewed for more than a third of its duration, but not expired: the holder is missing
    /// renewals (a client-go leader renews every retryPeriod, 2s of a 15s lease; a kubelet every
    /// quarter of its 40s lease).
    #[serde(rename = "RenewingLate")]
    RenewingLate,
    /// renewTime + leaseDurationSeconds has passed: any standby may acquire it.
    Expired,
    /// No holder: released by its last holder, or never acquired.
    Released,
    /// No renewTime or no leaseDurationSeconds: nothing to measure.
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Healthy => "Healthy",
            Status::RenewingLate => "Renewing late",
            Status::Expired => "Expired",
            Status::Released => "Released",
            Status::Unknown => "Unknown",
        }
    }
}

/// A lease's timing facts at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assessment {
    pub status: Status,
    /// now − renewTime (negative when the holder's clock runs ahead of the server's).
    pub since_renewal: Option<SignedDuration>,
    pub duration: Option<SignedDuration>,
    /// renewTime + leaseDuration: when the lease expires (or expired).
    pub expires_at: Option<Timestamp>,
    /// The earliest a standby may acquire it, if the holder stops renewing now.
    pub takeover_at: Option<Timestamp>,
}

pub fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()?
        .holder_identity
        .as_deref()
        .filter(|h| !h.is_empty())
}

pub fn renew_time(lease: &Lease) -> Option<Timestamp> {
    let spec = lease.spec.as_ref()?;
    spec.renew_time.as_ref().map(|t| t.0)
}

/// `spec.strategy`: set when the lease is managed by coordinated leader election.
pub fn strategy(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()?
        .strategy
        .as_deref()
        .filter(|s| !s.is_empty())
}

pub fn lease_duration(lease: &Lease) -> Option<SignedDuration> {
    let secs = lease.spec.as_ref()?.lease_duration_seconds?;
    (secs > 0).then(|| SignedDuration::from_secs(secs.into()))
}

/// The lease's status at `now`, by the rules client-go and the leader-election controller use
/// (`renewTime + leaseDurationSeconds` before now is expired).
pub fn assess(lease: &Lease, now: Timestamp) -> Assessment {
    let renew = renew_time(lease);
    let duration = lease_duration(lease);
    let since_renewal = renew.map(|r| now.duration_since(r));
    let expires_at = renew.zip(duration).and_then(|(r, d)| plus(r, d));
    let (status, takeover_at) = if holder(lease).is_none() {
        (Status::Released, Some(now))
    } else {
        match (since_renewal, duration, expires_at) {
            (Some(since), Some(d), Some(expiry)) => {
                let status = if expiry < now {
                    Status::Expired
                } else if since > d / 3 {
                    Status::RenewingLate
                } else {
                    Status::Healthy
                };
                (status, Some(expiry.max(now)))
            }
            // A standby seeing the record for the first time waits a full duration from then.
            (None, Some(d), _) => (Status::Unknown, plus(now, d)),
            // Without a duration client-go's record is never valid: the next retry takes it.
            _ => (Status::Unknown, Some(now)),
        }
    };
    Assessment {
        status,
        since_renewal,
        duration,
        expires_at,
        takeover_at,
    }
}

/// The pods and nodes a holder identity may name.
#[derive(Clone, Debug, Default)]
pub struct Inventory {
    pub pods: Vec<PodRef>,
    pub nodes: Vec<NodeRef>,
}

#[derive(Clone, Debug)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    pub node: Option<String>,
    pub host_network: bool,
}

#[derive(Clone, Debug)]
pub struct NodeRef {
    pub name: String,
    /// The node's Ready condition: `Some(true)` Ready, `Some(false)` NotReady or Unknown.
    pub ready: Option<bool>,
}

/// The hostname part of an identity: client-go components use `<hostname>_<uuid>`, and a
/// hostname cannot contain `_`.
pub fn identity_host(identity: &str) -> &str {
    identity.split('_').next().unwrap_or(identity)
}

/// A node named by a hostname: the same name, or the same first DNS label (a kubelet may
/// register `ip-10-0-1-2.ec2.internal` where the host calls itself `ip-10-0-1-2`).
fn same_host(node: &str, host: &str) -> bool {
    let label = |s: &str| s.split('.').next().unwrap_or(s).to_string();
    node == host || label(node) == label(host)
}

impl Inventory {
    /// The pod a holder identity names, and its node. A pod's hostname is its name unless it
    /// uses the host's network, when it is the node's name: then the pod is the one on that node
    /// named after the lease (static control-plane pods are `<component>-<node>`).
    pub fn holder_of(&self, lease_namespace: &str, lease_name: &str, identity: &str) -> Holder {
        let host = identity_host(identity);
        let by_name = |p: &&PodRef| !p.host_network && p.name == host;
        let pod = self
            .pods
            .iter()
            .filter(by_name)
            .find(|p| p.namespace == lease_namespace)
            .or_else(|| self.pods.iter().find(by_name));
        if let Some(p) = pod {
            return Holder {
                pod: Some(format!("{}/{}", p.namespace, p.name)),
                node: p.node.clone(),
            };
        }
        let prefix = format!("{lease_name}-");
        let on_host: Vec<&PodRef> = self
            .pods
            .iter()
            .filter(|p| {
                p.host_network
                    && p.node.as_deref().is_some_and(|n| same_host(n, host))
                    && p.namespace == lease_namespace
                    && p.name.starts_with(&prefix)
            })
            .collect();
        // Any pod placed there (kube-proxy runs on every node) proves the node, even when the
        // nodes themselves were not read.
        let node = self
            .pods
            .iter()
            .filter_map(|p| p.node.as_deref())
            .chain(self.nodes.iter().map(|n| n.name.as_str()))
            .find(|n| same_host(n, host));
        Holder {
            pod: match on_host.as_slice() {
                [p] => Some(format!("{}/{}", p.namespace, p.name)),
                _ => None,
            },
            node: node.map(str::to_string),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holder {
    pub pod: Option<String>,
    pub node: Option<String>,
}

/// One leader-election lease, as every view shows it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseReport {
    pub namespace: String,
    pub name: String,
    pub holder_identity: Option<String>,
    pub holder_pod: Option<String>,
    pub holder_node: Option<String>,
    pub acquire_time: Option<Timestamp>,
    pub renew_time: Option<Timestamp>,
    pub lease_duration_seconds: Option<i32>,
    pub lease_transitions: Option<i32>,
    pub status: Status,
    /// The status in a sentence.
    pub reason: String,
    #[serde(with = "opt_seconds")]
    pub since_renewal_seconds: Option<SignedDuration>,
    /// How long ago it expired (Expired only).
    #[serde(with = "opt_seconds")]
    pub expired_for_seconds: Option<SignedDuration>,
    /// The earliest a standby may acquire it if the holder stops renewing now.
    pub takeover_at: Option<Timestamp>,
    #[serde(with = "opt_seconds")]
    pub takeover_in_seconds: Option<SignedDuration>,
    /// When the holder stops leading by its own rules if it cannot renew (renewTime +
    /// retryPeriod + renewDeadline, by its clock); only while it holds an unexpired lease.
    pub holder_gives_up_at: Option<Timestamp>,
    pub strategy: Option<String>,
    pub preferred_holder: Option<String>,
    pub election: Option<candidates::Election>,
}

/// How long ago, in words; a renewal up to a second "in the future" is the Date header's
/// resolution and request latency, not a clock problem.
fn renewed_sentence(verb: &str, since: SignedDuration) -> String {
    if since < -SKEW_TOLERANCE {
        format!(
            "renewTime is {} in the future: the holder's clock runs ahead of the API server's",
            duration::human(since.abs())
        )
    } else if since < SignedDuration::from_millis(100) {
        format!("{verb} just now")
    } else {
        format!("{verb} {} ago", duration::human(since))
    }
}

/// Who takes over a lease nobody holds, in the words of its election mode.
fn next_holder(lease: &Lease) -> &'static str {
    if strategy(lease).is_some() {
        "the API server's leader-election controller elects a new holder among the candidates"
    } else {
        "a standby may acquire it at its next retry"
    }
}

/// The status in words, with the numbers that decide it.
fn reason(lease: &Lease, a: &Assessment) -> String {
    // client-go writes renewTime when it releases a lease.
    let verb = if a.status == Status::Released {
        "released"
    } else {
        "renewed"
    };
    let since = a
        .since_renewal
        .map(|s| renewed_sentence(verb, s))
        .unwrap_or_default();
    let duration = a.duration.map(duration::human).unwrap_or_default();
    match a.status {
        Status::Released if a.since_renewal.is_some() => {
            format!("no holder ({since}); {}", next_holder(lease))
        }
        Status::Released => format!("no holder; {}", next_holder(lease)),
        Status::Unknown if a.duration.is_none() => format!(
            "no leaseDurationSeconds: client-go treats the record as already expired, so {}",
            next_holder(lease)
        ),
        Status::Unknown => format!(
            "no renewTime: a standby that sees it now waits a full {duration} before acquiring it"
        ),
        Status::Healthy => format!("{since}, within its {duration}"),
        Status::RenewingLate => format!(
            "{since}: more than a third of its {duration} without renewal, so renewals are being missed"
        ),
        Status::Expired => {
            let ago = duration::human(
                a.since_renewal.unwrap_or_default() - a.duration.unwrap_or_default(),
            );
            if strategy(lease).is_some() {
                format!(
                    "{since}: expired {ago} ago, and the API server's leader-election controller has not elected a new holder (no candidate answers its pings?)"
                )
            } else {
                format!(
                    "{since}: expired {ago} ago, and no standby has taken over: none is running or can reach the API server, or the holder's clock runs behind the server's (then it still renews: --watch shows renewals)"
                )
            }
        }
    }
}

/// Everything the views show about one lease at `clock.now`.
pub fn report(
    lease: &Lease,
    inventory: &Inventory,
    all_candidates: &[candidates::Candidate],
    clock: &Clock,
    timings: &Timings,
) -> LeaseReport {
    let now = clock.now;
    let a = assess(lease, now);
    let namespace = lease.metadata.namespace.clone().unwrap_or_default();
    let name = lease.metadata.name.clone().unwrap_or_default();
    let spec = lease.spec.clone().unwrap_or_default();
    let identity = holder(lease).map(str::to_string);
    let found = identity
        .as_deref()
        .map(|id| inventory.holder_of(&namespace, &name, id))
        .unwrap_or_default();
    let held_fresh = matches!(a.status, Status::Healthy | Status::RenewingLate);
    let election = candidates::election(lease, all_candidates, now);
    LeaseReport {
        reason: reason(lease, &a),
        holder_identity: identity,
        holder_pod: found.pod,
        holder_node: found.node,
        acquire_time: spec.acquire_time.map(|t| t.0),
        renew_time: spec.renew_time.map(|t| t.0),
        lease_duration_seconds: spec.lease_duration_seconds,
        lease_transitions: spec.lease_transitions,
        status: a.status,
        since_renewal_seconds: a.since_renewal,
        expired_for_seconds: (a.status == Status::Expired)
            .then(|| a.expires_at.map(|e| now.duration_since(e)))
            .flatten(),
        takeover_at: a.takeover_at,
        takeover_in_seconds: a.takeover_at.map(|t| t.duration_since(now)),
        holder_gives_up_at: held_fresh
            .then(|| renew_time(lease).and_then(|r| timings.gives_up_at(r)))
            .flatten(),
        strategy: spec.strategy,
        preferred_holder: spec.preferred_holder,
        election,
        namespace,
        name,
    }
}

/// Which leases a listing shows.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only this namespace (`-n`); every namespace otherwise.
    pub namespace: Option<String>,
    /// Only this lease.
    pub name: Option<String>,
}

impl Selection {
    /// Leader-election leases the selection names: node heartbeats only when asked for by
    /// namespace or name.
    pub fn matches(&self, lease: &Lease) -> bool {
        let ns = lease.metadata.namespace.as_deref().unwrap_or_default();
        let name = lease.metadata.name.as_deref().unwrap_or_default();
        let ns_ok = match &self.namespace {
            Some(want) => want == ns,
            None => ns != NODE_LEASE_NAMESPACE || self.name.is_some(),
        };
        ns_ok && self.name.as_deref().is_none_or(|n| n == name)
    }
}

/// The whole listing: every selected lease, by namespace and name.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listing {
    pub clock: Clock,
    pub timings: Timings,
    pub leases: Vec<LeaseReport>,
}

pub fn listing(
    leases: &[Lease],
    candidate_objects: &[serde_json::Value],
    inventory: &Inventory,
    selection: &Selection,
    clock: Clock,
    timings: Timings,
) -> Listing {
    let all_candidates = candidates::parse(candidate_objects);
    let mut reports: Vec<LeaseReport> = leases
        .iter()
        .filter(|l| selection.matches(l))
        .map(|l| report(l, inventory, &all_candidates, &clock, &timings))
        .collect();
    reports.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Listing {
        clock,
        timings,
        leases: reports,
    }
}

/// Durations serialise as seconds with millisecond precision.
fn secs_f64(d: &SignedDuration) -> f64 {
    (d.as_millis() as f64) / 1000.0
}

mod seconds {
    use k8s_openapi::jiff::SignedDuration;
    pub fn serialize<S: serde::Serializer>(d: &SignedDuration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(super::secs_f64(d))
    }
}

mod opt_seconds {
    use k8s_openapi::jiff::SignedDuration;
    pub fn serialize<S: serde::Serializer>(
        d: &Option<SignedDuration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_f64(super::secs_f64(d)),
            None => s.serialize_none(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};

    pub fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    pub fn lease(
        ns: &str,
        name: &str,
        holder: Option<&str>,
        renew: Option<&str>,
        secs: Option<i32>,
    ) -> Lease {
        Lease {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(k8s_openapi::api::coordination::v1::LeaseSpec {
                holder_identity: holder.map(Into::into),
                renew_time: renew.map(|r| MicroTime(ts(r))),
                acquire_time: renew.map(|r| MicroTime(ts(r))),
                lease_duration_seconds: secs,
                lease_transitions: Some(1),
                ..Default::default()
            }),
        }
    }

    const RENEW: &str = "2026-11-23T10:00:00Z";

    fn status_at(l: &Lease, now: &str) -> Status {
        assess(l, ts(now)).status
    }

    #[test]
    fn statuses_follow_the_renewal_age() {
        let l = lease(
            "kube-system",
            "kube-scheduler",
            Some("m1_x"),
            Some(RENEW),
            Some(15),
        );
        assert_eq!(status_at(&l, "2026-11-23T10:00:02Z"), Status::Healthy);
        assert_eq!(status_at(&l, "2026-11-23T10:00:05Z"), Status::Healthy);
        assert_eq!(
            status_at(&l, "2026-11-23T10:00:05.001Z"),
            Status::RenewingLate
        );
        // Expired strictly after renewTime + duration, as isLeaseExpired says.
        assert_eq!(status_at(&l, "2026-11-23T10:00:15Z"), Status::RenewingLate);
        assert_eq!(status_at(&l, "2026-11-23T10:00:15.001Z"), Status::Expired);
        let released = lease("kube-system", "x", Some(""), Some(RENEW), Some(1));
        assert_eq!(
            status_at(&released, "2026-11-23T10:00:02Z"),
            Status::Released
        );
        let no_time = lease("kube-system", "x", Some("a"), None, Some(15));
        assert_eq!(status_at(&no_time, "2026-11-23T10:00:02Z"), Status::Unknown);
        let no_duration = lease("kube-system", "x", Some("a"), Some(RENEW), None);
        assert_eq!(
            status_at(&no_duration, "2026-11-23T10:00:02Z"),
            Status::Unknown
        );
    }

    #[test]
    fn takeover_is_renewal_plus_duration_or_now_once_expired() {
        let l = lease(
            "kube-system",
            "kube-scheduler",
            Some("m1_x"),
            Some(RENEW),
            Some(15),
        );
        let a = assess(&l, ts("2026-11-23T10:00:04Z"));
        assert_eq!(a.takeover_at, Some(ts("2026-11-23T10:00:15Z")));
        let late = assess(&l, ts("2026-11-23T10:01:00Z"));
        assert_eq!(late.takeover_at, Some(ts("2026-11-23T10:01:00Z")));
        let r = report(
            &l,
            &Inventory::default(),
            &[],
            &Clock {
                now: ts("2026-11-23T10:01:00Z"),
                source: ClockSource::Server,
                skew: None,
            },
            &Timings::default(),
        );
        assert_eq!(r.expired_for_seconds, Some(SignedDuration::from_secs(45)));
        assert_eq!(r.holder_gives_up_at, None);
        assert!(
            r.reason
                .starts_with("renewed 1m0s ago: expired 45s ago, and no standby has taken over"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn the_server_clock_decides_and_skew_shows_beyond_a_second() {
        let local = ts("2026-11-23T10:00:10.200Z");
        // The Date header is whole seconds: 10:00:10 means 10:00:10.000–10:00:10.999.
        let same = Clock::from_server_date(ts("2026-11-23T10:00:10Z"), local);
        assert_eq!(same.now, local);
        assert_eq!(same.skew, None);
        // The laptop is 30s behind the server: a lease renewed 2s ago by the server's clock is
        // healthy, though by the laptop's clock it was renewed in the future.
        let ahead = Clock::from_server_date(ts("2026-11-23T10:00:40Z"), local);
        assert_eq!(ahead.skew, Some(SignedDuration::from_millis(30_300)));
        assert_eq!(ahead.now, ts("2026-11-23T10:00:40.5Z"));
        let l = lease(
            "kube-system",
            "s",
            Some("m1_x"),
            Some("2026-11-23T10:00:38.5Z"),
            Some(15),
        );
        assert_eq!(assess(&l, ahead.now).status, Status::Healthy);
        // The laptop is a minute ahead: by its clock the lease would look expired.
        let behind = Clock::from_server_date(ts("2026-11-23T09:59:10Z"), local);
        let fresh = lease(
            "kube-system",
            "s",
            Some("m1_x"),
            Some("2026-11-23T09:59:08Z"),
            Some(15),
        );
        assert_eq!(assess(&fresh, behind.now).status, Status::Healthy);
        assert_eq!(assess(&fresh, local).status, Status::Expired);
        let later = behind.advanced_to_local(ts("2026-11-23T10:00:20.200Z"));
        assert_eq!(later.now, ts("2026-11-23T09:59:20.5Z"));
    }

    #[test]
    fn a_renewal_in_the_future_is_the_holders_clock() {
        let l = lease(
            "kube-system",
            "s",
            Some("m1_x"),
            Some("2026-11-23T10:00:05Z"),
            Some(15),
        );
        let r = report(
            &l,
            &Inventory::default(),
            &[],
            &Clock {
                now: ts("2026-11-23T10:00:00Z"),
                source: ClockSource::Server,
                skew: None,
            },
            &Timings::default(),
        );
        assert_eq!(r.status, Status::Healthy);
        assert!(
            r.reason.starts_with("renewTime is 5s in the future"),
            "{}",
            r.reason
        );
    }

    fn pod(ns: &str, name: &str, node: &str, host_network: bool) -> PodRef {
        PodRef {
            namespace: ns.into(),
            name: name.into(),
            node: Some(node.into()),
            host_network,
        }
    }

    #[test]
    fn holders_are_matched_to_pods_by_hostname() {
        let inv = Inventory {
            pods: vec![
                pod("kube-system", "kube-scheduler-cp-1", "cp-1", true),
                pod("kube-system", "kube-controller-manager-cp-1", "cp-1", true),
                pod("kube-system", "etcd-cp-1", "cp-1", true),
                pod("ingress", "ingress-nginx-7d9f-abcde", "w-3", false),
            ],
            nodes: vec![NodeRef {
                name: "cp-2".into(),
                ready: Some(true),
            }],
        };
        let h = inv.holder_of("kube-system", "kube-scheduler", "cp-1_6f0c9a");
        assert_eq!(h.pod.as_deref(), Some("kube-system/kube-scheduler-cp-1"));
        assert_eq!(h.node.as_deref(), Some("cp-1"));
        let h = inv.holder_of("ingress", "ingress-leader", "ingress-nginx-7d9f-abcde");
        assert_eq!(h.pod.as_deref(), Some("ingress/ingress-nginx-7d9f-abcde"));
        assert_eq!(h.node.as_deref(), Some("w-3"));
        // A node with no matching pod: the node is still named.
        let h = inv.holder_of("kube-system", "kube-scheduler", "cp-2_1234");
        assert_eq!(
            h,
            Holder {
                pod: None,
                node: Some("cp-2".into())
            }
        );
        let h = inv.holder_of("kube-system", "kube-scheduler", "somewhere-else");
        assert_eq!(h, Holder::default());
    }

    #[test]
    fn node_heartbeats_are_left_out_unless_asked_for() {
        let node = lease(
            NODE_LEASE_NAMESPACE,
            "w-1",
            Some("w-1"),
            Some(RENEW),
            Some(40),
        );
        let leader = lease(
            "kube-system",
            "kube-scheduler",
            Some("a"),
            Some(RENEW),
            Some(15),
        );
        let all = Selection::default();
        assert!(!all.matches(&node));
        assert!(all.matches(&leader));
        let by_ns = Selection {
            namespace: Some(NODE_LEASE_NAMESPACE.into()),
            name: None,
        };
        assert!(by_ns.matches(&node) && !by_ns.matches(&leader));
        let by_name = Selection {
            namespace: None,
            name: Some("w-1".into()),
        };
        assert!(by_name.matches(&node) && !by_name.matches(&leader));
    }
}
