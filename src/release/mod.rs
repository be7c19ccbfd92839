//! The kube-scheduler release being modelled: which one, why that one, and the switches
//! (`Features`) it sets. Everything that differs between releases is decided here, so the
//! pipeline keeps one code path.

pub mod evidence;
mod features;
mod gate_table;
pub mod gates;

use crate::term::{self, Style};
use evidence::Evidence;
pub use features::Features;
use gates::Gates;
use std::fmt;

/// A modelled minor release: the patch the reference runs used, and whether the project has
/// been checked against a real scheduler of that release.
struct Modelled {
    minor: u16,
    reference_patch: u16,
    verified: bool,
}

/// Oldest first. 1.34 has reached end of life but is still widely run.
const MODELLED: [Modelled; 4] = [
    Modelled {
        minor: 34,
        reference_patch: 1,
        verified: true,
    },
    Modelled {
        minor: 35,
        reference_patch: 4,
        verified: true,
    },
    Modelled {
        minor: 36,
        reference_patch: 2,
        verified: true,
    },
    Modelled {
        minor: 37,
        reference_patch: 0,
        verified: false,
    },
];

/// A kube-scheduler release `v1.<minor>.<patch>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    pub minor: u16,
    pub patch: u16,
}

/// Why a version string cannot be modelled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReleaseError {
    #[error("{0:?} is not a Kubernetes version (expected e.g. 1.36 or v1.36.2)")]
    Syntax(String),
    #[error(
        "kube-scheduler {0} is not modelled: kubectl-sched models {supported}; pass --scheduler-version to choose one",
        supported = supported_list()
    )]
    Unsupported(String),
}

fn supported_list() -> String {
    let names: Vec<String> = MODELLED
        .iter()
        .map(|m| {
            let mut s = format!("1.{}", m.minor);
            if m.minor == Release::OLDEST.minor {
                s.push_str(" (end of life)");
            }
            if !m.verified {
                s.push_str(" (unverified)");
            }
            s
        })
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// `major.minor[.patch]` of a version as users, servers and kubelets write it. Build metadata and
/// pre-release suffixes (`-eks-…`, `+k3s1`, `-rc.1`) do not change the scheduler's code.
fn components(text: &str) -> Result<(u16, u16, Option<u16>), ()> {
    let trimmed = text.trim();
    let core = trimmed.strip_prefix('v').unwrap_or(trimmed);
    let core = core.split(['-', '+']).next().unwrap_or("");
    let mut parts = core.split('.');
    let mut number = || -> Result<Option<u16>, ()> {
        match parts.next() {
            None => Ok(None),
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse().map(Some).map_err(|_| ())
            }
            Some(_) => Err(()),
        }
    };
    let (Some(major), Some(minor)) = (number()?, number()?) else {
        return Err(());
    };
    let patch = number()?;
    if number()?.is_some() {
        return Err(());
    }
    Ok((major, minor, patch))
}

impl Release {
    pub const OLDEST: Release = Release {
        minor: MODELLED[0].minor,
        patch: MODELLED[0].reference_patch,
    };
    pub const NEWEST: Release = Release {
        minor: MODELLED[MODELLED.len() - 1].minor,
        patch: MODELLED[MODELLED.len() - 1].reference_patch,
    };

    /// Reads `1.36`, `v1.36.2`, or what `/version` reports (`v1.36.2-eks-4a2b`, `v1.35.4+k3s1`,
    /// `v1.34.1-gke.1200`). A minor without a patch means the patch the reference runs used.
    pub fn parse(text: &str) -> Result<Release, ReleaseError> {
        let (major, minor, patch) =
            components(text).map_err(|()| ReleaseError::Syntax(text.to_string()))?;
        let shown = match patch {
            Some(p) => format!("v{major}.{minor}.{p}"),
            None => format!("v{major}.{minor}"),
        };
        let modelled = MODELLED
            .iter()
            .find(|m| major == 1 && m.minor == minor)
            .ok_or(ReleaseError::Unsupported(shown))?;
        Ok(Release {
            minor,
            patch: patch.unwrap_or(modelled.reference_patch),
        })
    }

    fn modelled(self) -> &'static Modelled {
        MODELLED
            .iter()
            .find(|m| m.minor == self.minor)
            .expect("only modelled releases are constructed")
    }

    /// The release of every modelled minor that the reference runs used, oldest first.
    pub fn all_modelled() -> impl Iterator<Item = Release> {
        MODELLED.iter().map(|m| Release {
            minor: m.minor,
            patch: m.reference_patch,
        })
    }

    /// Whether the project has been checked against a real scheduler of this minor release.
    pub fn verified(self) -> bool {
        self.modelled().verified
    }

    /// At least `1.<minor>.<patch>`.
    pub fn at_least(self, minor: u16, patch: u16) -> bool {
        (self.minor, self.patch) >= (minor, patch)
    }

    /// The switches this release sets: its default feature gates and its code changes.
    pub fn features(self) -> Features {
        Features::of(self)
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v1.{}.{}", self.minor, self.patch)
    }
}

impl serde::Serialize for Release {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Where the modelled release came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ReleaseSource {
    /// `--scheduler-version`.
    Flag,
    /// The API server's `/version`.
    Server,
    /// The server version a snapshot recorded.
    Snapshot,
    /// Inferred from the nodes' kubelet versions.
    Kubelets,
    /// Inferred from the wording of FailedScheduling events.
    Events,
    /// `--compare-to`: the release compared with.
    CompareTo,
    /// Nothing said which: the newest release modelled.
    Newest,
}

/// The release a command models, why, and the feature gates in force. In JSON:
/// `schedulerVersion`, `schedulerVersionFrom`, `schedulerVersionVerified` and `featureGates`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReleaseChoice {
    pub release: Release,
    pub source: ReleaseSource,
    /// `--feature-gates`, or the release's defaults.
    pub gates: Gates,
    /// What the input says of its release, when the release was inferred from it.
    pub evidence: Evidence,
}

impl serde::Serialize for ReleaseChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("ReleaseChoice", 5)?;
        st.serialize_field("schedulerVersion", &self.release)?;
        st.serialize_field("schedulerVersionFrom", &self.source)?;
        st.serialize_field("schedulerVersionVerified", &self.release.verified())?;
        if self.inferred() {
            st.serialize_field("schedulerVersionEvidence", &self.evidence)?;
        } else {
            st.skip_field("schedulerVersionEvidence")?;
        }
        st.serialize_field("featureGates", &GateValues(&self.gates))?;
        st.end()
    }
}

/// Every gate of the release and its value in force, by name.
struct GateValues<'a>(&'a Gates);

impl serde::Serialize for GateValues<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.all().map(|g| (g.name, g.enabled)))
    }
}

impl From<Release> for ReleaseChoice {
    /// A release asked for by name, with its default gates.
    fn from(release: Release) -> ReleaseChoice {
        ReleaseChoice {
            release,
            source: ReleaseSource::Flag,
            gates: Gates::defaults(release),
            evidence: Evidence::default(),
        }
    }
}

impl ReleaseChoice {
    /// `--scheduler-version` if given, else the cluster's version (`live` tells whether it came
    /// from the API server or a snapshot), else what the dump's kubelets and events point to.
    pub fn choose(
        flag: Option<&str>,
        cluster_version: Option<&str>,
        live: bool,
        evidence: Evidence,
    ) -> Result<ReleaseChoice, ReleaseError> {
        let (release, source, evidence) = match (flag, cluster_version) {
            (Some(flag), _) => (Release::parse(flag)?, ReleaseSource::Flag, evidence),
            (None, Some(v)) if live => (Release::parse(v)?, ReleaseSource::Server, evidence),
            (None, Some(v)) => (Release::parse(v)?, ReleaseSource::Snapshot, evidence),
            (None, None) => evidence.choose()?,
        };
        Ok(ReleaseChoice {
            release,
            source,
            gates: Gates::defaults(release),
            evidence,
        })
    }

    /// The release was inferred from the input, not named by the flag or a server version.
    pub fn inferred(&self) -> bool {
        matches!(
            self.source,
            ReleaseSource::Kubelets | ReleaseSource::Events | ReleaseSource::Newest
        )
    }

    /// What a user must see, not in dim text: the release was guessed with conflicting or no
    /// evidence, or is unverified and was not asked for by name.
    pub fn warning(&self) -> Option<String> {
        let mut said = Vec::new();
        if self.source == ReleaseSource::Newest {
            said.push(format!(
                "nothing in the input says which kube-scheduler release made it ({}): modelling the newest, {}; pass --scheduler-version",
                self.evidence.describe(),
                self.release
            ));
        } else if self.inferred() && self.evidence.conflict.is_some() {
            said.push(format!(
                "the input's evidence of its release conflicts: modelling {}; pass --scheduler-version if that is not the cluster's",
                self.release
            ));
        }
        // Asked for by name, the header's "unverified" says enough.
        if !self.release.verified() && self.source != ReleaseSource::Flag {
            said.push(format!(
                "{} is modelled from its changelog and source: no real scheduler of that release has checked it",
                self.release
            ));
        }
        (!said.is_empty()).then(|| said.join("; "))
    }

    /// Another release with the same `--feature-gates`, as that release's kube-scheduler reads
    /// them; an error when it refuses them or their effect there is not modelled.
    pub fn with_release(
        &self,
        release: Release,
        source: ReleaseSource,
    ) -> Result<ReleaseChoice, gates::GateError> {
        let (gates, _) = self.gates.for_release(release)?;
        gates.modelled()?;
        Ok(ReleaseChoice {
            release,
            source,
            gates,
            evidence: Evidence::default(),
        })
    }

    /// The switches of the release with the gates in force.
    pub fn features(&self) -> Features {
        Features::with_gates(self.release, &self.gates)
    }

    /// The gates in force that are not the release's defaults, for a header: `feature gates:
    /// A=true, B=false`; `None` with the defaults.
    pub fn describe_gates(&self) -> Option<String> {
        let changed: Vec<String> = self
            .gates
            .changed()
            .map(|g| format!("{}={}", g.name, g.enabled))
            .collect();
        (!changed.is_empty()).then(|| format!("feature gates: {}", changed.join(", ")))
    }

    /// A table's header lines: which kube-scheduler is modelled and why, and the gates not at
    /// their default, dim; a warning a user must see, in the warning colour. Wrapped to `width`.
    pub fn header(&self, style: Style, width: u16) -> String {
        let mut note = self.describe();
        if let Some(gates) = self.describe_gates() {
            note = format!("{note}\n{gates}");
        }
        let mut out: Vec<String> = note
            .lines()
            .map(|l| style.dim(&term::prose(l, width, 2)))
            .collect();
        if let Some(w) = self.warning() {
            out.push(style.warn(&term::prose(&format!("warning: {w}"), width, 2)));
        }
        out.join("\n")
    }

    /// One line for a table header: which kube-scheduler is modelled and why.
    pub fn describe(&self) -> String {
        let inferred;
        let why = match self.source {
            ReleaseSource::Flag => "--scheduler-version",
            ReleaseSource::CompareTo => "--compare-to",
            ReleaseSource::Server => "the API server's version",
            ReleaseSource::Snapshot => "recorded in the snapshot",
            ReleaseSource::Kubelets => {
                inferred = format!("from the kubelets: {}", self.evidence.describe());
                &inferred
            }
            ReleaseSource::Events => {
                inferred = format!("from FailedScheduling events: {}", self.evidence.describe());
                &inferred
            }
            ReleaseSource::Newest => "newest modelled, as the input names none",
        };
        let unverified = if self.release.verified() {
            ""
        } else {
            "unverified; "
        };
        format!("kube-scheduler {} ({unverified}{why})", self.release)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_users_and_servers_write() {
        let r = |minor, patch| Release { minor, patch };
        assert_eq!(Release::parse("1.36"), Ok(r(36, 2)));
        assert_eq!(Release::parse("v1.36"), Ok(r(36, 2)));
        assert_eq!(Release::parse("1.34"), Ok(r(34, 1)));
        assert_eq!(Release::parse("v1.35.0"), Ok(r(35, 0)));
        assert_eq!(Release::parse("v1.36.2-eks-4a2b"), Ok(r(36, 2)));
        assert_eq!(Release::parse("v1.36.3"), Ok(r(36, 3)));
        assert_eq!(Release::parse("v1.35.7+k3s1"), Ok(r(35, 7)));
        assert_eq!(Release::parse("v1.34.12-gke.1200"), Ok(r(34, 12)));
        assert_eq!(Release::parse(" 1.37 "), Ok(Release::NEWEST));
    }

    #[test]
    fn refuses_what_is_not_modelled() {
        for bad in ["1.33", "v1.38.0", "2.34", "v0.34"] {
            let e = Release::parse(bad).unwrap_err();
            assert!(matches!(e, ReleaseError::Unsupported(_)), "{bad}: {e}");
            assert!(
                e.to_string()
                    .contains("1.34 (end of life), 1.35, 1.36 and 1.37 (unverified)"),
                "{e}"
            );
        }
        for bad in [
            "",
            "1",
            "latest",
            "1.x",
            "1.36.2.1",
            "v1..2",
            "1.36.",
            "1.99999999",
        ] {
            assert!(
                matches!(Release::parse(bad), Err(ReleaseError::Syntax(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_flag_wins_then_the_cluster_then_the_newest() {
        let none = Evidence::default;
        let c = ReleaseChoice::choose(Some("1.35"), Some("v1.36.2"), true, none()).unwrap();
        assert_eq!((c.release.minor, c.source), (35, ReleaseSource::Flag));
        let c = ReleaseChoice::choose(None, Some("v1.36.2"), true, none()).unwrap();
        assert_eq!((c.release.minor, c.source), (36, ReleaseSource::Server));
        let c = ReleaseChoice::choose(None, Some("v1.34.3"), false, none()).unwrap();
        assert_eq!(c.source, ReleaseSource::Snapshot);
        assert_eq!(c.release.to_string(), "v1.34.3");
        let c = ReleaseChoice::choose(None, None, false, none()).unwrap();
        assert_eq!(
            (c.release, c.source),
            (Release::NEWEST, ReleaseSource::Newest)
        );
        assert!(c.describe().contains("unverified"), "{}", c.describe());
        assert!(c.warning().unwrap().contains("pass --scheduler-version"));
        assert!(ReleaseChoice::choose(None, Some("v1.31.0"), true, none()).is_err());
        let kubelets = Evidence::read(["v1.35.2"], []);
        let c = ReleaseChoice::choose(None, None, false, kubelets).unwrap();
        assert_eq!(
            (c.release.to_string(), c.source),
            ("v1.35.2".into(), ReleaseSource::Kubelets)
        );
        assert_eq!(c.warning(), None);
        assert_eq!(
            c.describe(),
            "kube-scheduler v1.35.2 (from the kubelets: the one kubelet is v1.35.2; no FailedScheduling event)"
        );
    }
}
