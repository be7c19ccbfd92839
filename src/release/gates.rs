//! `--feature-gates` as kube-scheduler reads it (`k8s.io/component-base/featuregate`'s `Set` and
//! `SetFromMap`, behind the `compatibility` registry's `kube:` prefix), with its error texts, over
//! the gates the chosen release registers (`gate_table`); then whether kubectl-sched models what
//! the gates in force change.

use super::Release;
use super::gate_table::{DEPENDENCIES_1_35, DEPENDENCIES_1_36, GATES};
use std::fmt;

/// A gate's maturity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Alpha,
    Beta,
    Ga,
    Deprecated,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Alpha => "alpha",
            Stage::Beta => "beta",
            Stage::Ga => "GA",
            Stage::Deprecated => "deprecated",
        })
    }
}

/// A gate in one release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub stage: Stage,
    pub default: bool,
    pub locked: bool,
}

/// `AllAlpha` and `AllBeta`: every gate of that stage not set by name takes their value.
const ALL_ALPHA: &str = "AllAlpha";
const ALL_BETA: &str = "AllBeta";

/// The column of `release` in the table.
fn column(release: Release) -> usize {
    usize::from(release.minor - Release::OLDEST.minor)
}

fn index(name: &str) -> Option<usize> {
    GATES.binary_search_by(|(n, _)| n.cmp(&name)).ok()
}

fn spec_at(i: usize, release: Release) -> Option<Spec> {
    let code = GATES[i].1[column(release)].as_bytes();
    let stage = match code.first()? {
        b'A' => Stage::Alpha,
        b'B' => Stage::Beta,
        b'G' => Stage::Ga,
        b'D' => Stage::Deprecated,
        _ => return None,
    };
    Some(Spec {
        stage,
        default: code.get(1) == Some(&b'+'),
        locked: code.get(2) == Some(&b'!'),
    })
}

/// What `release` registers under `name`.
pub fn spec(name: &str, release: Release) -> Option<Spec> {
    index(name).and_then(|i| spec_at(i, release))
}

const WORDS: usize = GATES.len().div_ceil(64);

/// One bit per row of the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Bits([u64; WORDS]);

impl Bits {
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    fn put(&mut self, i: usize, on: bool) {
        if on {
            self.0[i / 64] |= 1 << (i % 64);
        } else {
            self.0[i / 64] &= !(1 << (i % 64));
        }
    }
}

/// The gates in force for one release: every gate's value, and which ones `--feature-gates`
/// named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Gates {
    release: Release,
    enabled: Bits,
    named: Bits,
}

/// A gate and its value in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateState {
    pub name: &'static str,
    pub enabled: bool,
    pub spec: Spec,
}

/// `--feature-gates` refused: kube-scheduler's own error text, or why kubectl-sched cannot model
/// what the gates in force change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// kube-scheduler would not start with these flags.
    #[error("kube-scheduler {release} refuses it: {message}")]
    Refused { release: Release, message: String },
    /// kube-scheduler would run with them, but their effect is not modelled.
    #[error("{0}")]
    NotModelled(String),
}

impl Gates {
    /// The release's defaults.
    pub fn defaults(release: Release) -> Gates {
        let mut enabled = Bits::default();
        for i in 0..GATES.len() {
            enabled.put(i, spec_at(i, release).is_some_and(|s| s.default));
        }
        Gates {
            release,
            enabled,
            named: Bits::default(),
        }
    }

    pub fn release(&self) -> Release {
        self.release
    }

    /// Reads every `--feature-gates` value given, in order, as kube-scheduler of `release` reads
    /// its flag: `Name=bool` pairs separated by commas, optionally prefixed `kube:`; the last value
    /// of a gate wins. Returns the gates and the warnings kube-scheduler would log.
    pub fn parse(release: Release, flags: &[String]) -> Result<(Gates, Vec<String>), GateError> {
        let refused = |message: String| GateError::Refused { release, message };
        // The registry's flag: `component:key=value` pairs, the component defaulting to "kube".
        let (mut bare, mut kube): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        for flag in flags {
            for pair in flag.split(',').filter(|p| !p.is_empty()) {
                match pair.split_once(':') {
                    None => bare.push(pair.trim().to_string()),
                    Some((component, value)) => match component.trim() {
                        "kube" => kube.push(value.trim().to_string()),
                        "" => bare.push(value.trim().to_string()),
                        other => return Err(refused(format!("component not registered: {other}"))),
                    },
                }
            }
        }
        if !bare.is_empty() && !kube.is_empty() {
            return Err(refused(
                "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use".into(),
            ));
        }
        // The feature gate's own `Set`: each `key=value`, the value a Go bool.
        let mut raw: Vec<(String, bool)> = Vec::new();
        for s in bare.iter().chain(&kube).flat_map(|v| v.split(',')) {
            if s.is_empty() {
                continue;
            }
            let (key, value) = match s.split_once('=') {
                Some((k, v)) => (k.trim(), v.trim()),
                None => return Err(refused(format!("missing bool value for {}", s.trim()))),
            };
            let value = parse_go_bool(value).ok_or_else(|| {
                refused(format!(
                    "invalid value of {key}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax"
                ))
            })?;
            match raw.iter_mut().find(|(k, _)| k == key) {
                Some(entry) => entry.1 = value,
                None => raw.push((key.to_string(), value)),
            }
        }
        Gates::defaults(release).set(&raw)
    }

    /// `SetFromMap`: unknown gates and gates locked to another value are refused; `AllAlpha` and
    /// `AllBeta` set every gate of their stage not named; then every gate that is on must have
    /// the gates it depends on (1.35+).
    fn set(mut self, raw: &[(String, bool)]) -> Result<(Gates, Vec<String>), GateError> {
        let release = self.release;
        let refused = |message: String| GateError::Refused { release, message };
        let mut errors: Vec<(String, String)> = Vec::new();
        let mut warnings = Vec::new();
        let mut all: Vec<(Stage, bool)> = Vec::new();
        for (key, value) in raw {
            let special = match key.as_str() {
                ALL_ALPHA => Some(Stage::Alpha),
                ALL_BETA => Some(Stage::Beta),
                _ => None,
            };
            if let Some(stage) = special {
                all.push((stage, *value));
                continue;
            }
            let Some((i, spec)) = index(key).and_then(|i| Some((i, spec_at(i, release)?))) else {
                // kube-scheduler stops at the first unknown gate it meets.
                return Err(refused(format!("unrecognized feature gate: {key}")));
            };
            if spec.locked && spec.default != *value {
                errors.push((
                    key.clone(),
                    format!(
                        "cannot set feature gate {key} to {value}, feature is locked to {}",
                        spec.default
                    ),
                ));
                continue;
            }
            self.enabled.put(i, *value);
            self.named.put(i, true);
            if matches!(spec.stage, Stage::Ga | Stage::Deprecated) {
                let stage = if spec.stage == Stage::Ga {
                    "GA"
                } else {
                    "deprecated"
                };
                warnings.push(if release.minor >= 35 {
                    format!(
                        "\"Warning: setting {stage} feature gate. It will be removed in a future release.\" featureGate={key:?} value={value}"
                    )
                } else {
                    format!(
                        "Setting {stage} feature gate {key}={value}. It will be removed in a future release."
                    )
                });
            }
        }
        for (stage, value) in all {
            for i in 0..GATES.len() {
                if !self.named.get(i) && spec_at(i, release).is_some_and(|s| s.stage == stage) {
                    self.enabled.put(i, value);
                }
            }
        }
        if !errors.is_empty() {
            // Go visits the gates in map order; by name here, so the text is stable.
            errors.sort();
            return Err(refused(aggregate(
                errors.into_iter().map(|(_, e)| e).collect(),
            )));
        }
        let mut unmet = Vec::new();
        for (feature, deps) in dependencies(release) {
            if !self.is_on(feature) {
                continue;
            }
            let off: Vec<&str> = deps.iter().copied().filter(|d| !self.is_on(d)).collect();
            if !off.is_empty() {
                unmet.push(format!(
                    "{feature} is enabled, but depends on features that are disabled: [{}]",
                    off.join(" ")
                ));
            }
        }
        if !unmet.is_empty() {
            return Err(refused(aggregate(unmet)));
        }
        Ok((self, warnings))
    }

    /// Whether the gate is on; false for a gate the release does not have.
    pub fn is_on(&self, name: &str) -> bool {
        index(name).is_some_and(|i| self.enabled.get(i))
    }

    /// Every gate of the release and its value, by name.
    pub fn all(&self) -> impl Iterator<Item = GateState> + '_ {
        (0..GATES.len()).filter_map(|i| {
            Some(GateState {
                name: GATES[i].0,
                enabled: self.enabled.get(i),
                spec: spec_at(i, self.release)?,
            })
        })
    }

    /// The gates whose value is not the release's default.
    pub fn changed(&self) -> impl Iterator<Item = GateState> + '_ {
        self.all().filter(|g| g.enabled != g.spec.default)
    }

    /// `--feature-gates` named this gate.
    pub fn named(&self, name: &str) -> bool {
        index(name).is_some_and(|i| self.named.get(i))
    }

    /// The same gate values, for another release: the gates changed here, set there (as
    /// `--feature-gates` would be read by that release's kube-scheduler).
    pub fn for_release(&self, other: Release) -> Result<(Gates, Vec<String>), GateError> {
        let raw: Vec<(String, bool)> = self
            .all()
            .filter(|g| self.named(g.name))
            .map(|g| (g.name.to_string(), g.enabled))
            .collect();
        Gates::defaults(other).set(&raw)
    }

    /// Whether kubectl-sched computes what these gates change: every gate off its default must
    /// be modelled or provably unable to change one scheduling cycle (then a note says so), and
    /// the DRA allocator implementation kube-scheduler picks from them must be the one modelled.
    pub fn modelled(&self) -> Result<Vec<String>, GateError> {
        let mut notes = Vec::new();
        let mut unmodelled = Vec::new();
        for g in self.changed() {
            match effect(g.name) {
                Effect::Modelled => {}
                Effect::NoEffect(why) => notes.push(format!(
                    "feature gate {}={}: no effect on what kubectl-sched computes ({why})",
                    g.name, g.enabled
                )),
                Effect::NotModelled(what) => {
                    unmodelled.push(format!("{}={} ({what})", g.name, g.enabled));
                }
            }
        }
        if !unmodelled.is_empty() {
            return Err(GateError::NotModelled(format!(
                "kubectl-sched does not model feature gate {} in kube-scheduler {}: its answer would silently be the release's default one",
                unmodelled.join(", "),
                self.release
            )));
        }
        let chosen = allocator(self);
        let default = allocator(&Gates::defaults(self.release));
        if chosen != default {
            let gates: Vec<String> = ALLOCATOR_GATES
                .iter()
                .filter(|n| self.is_on(n) != Gates::defaults(self.release).is_on(n))
                .map(|n| format!("{n}={}", self.is_on(n)))
                .collect();
            return Err(GateError::NotModelled(format!(
                "with {} kube-scheduler {} allocates devices with its \"{chosen}\" DRA allocator instead of the \"{default}\" one, which kubectl-sched does not model",
                gates.join(", "),
                self.release
            )));
        }
        Ok(notes)
    }
}

/// `utilerrors.NewAggregate(...).Error()`: one error as itself, several in brackets.
fn aggregate(mut errors: Vec<String>) -> String {
    errors.dedup();
    match errors.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn dependencies(release: Release) -> &'static [(&'static str, &'static [&'static str])] {
    match release.minor {
        ..=34 => &[],
        35 => DEPENDENCIES_1_35,
        _ => DEPENDENCIES_1_36,
    }
}

/// What a gate off its default does to what kubectl-sched computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// `Features` follows it.
    Modelled,
    /// It cannot change one scheduling cycle's answer, for this reason.
    NoEffect(&'static str),
    /// It changes scheduling decisions in a way kubectl-sched does not model.
    NotModelled(&'static str),
}

/// The gates `Features` follows (`Features::with_gates`).
pub const MODELLED: [&str; 12] = [
    "DRAAdminAccess",
    "DRAConsumableCapacity",
    "DRADeviceBindingConditions",
    "DRADeviceTaints",
    "DRAExtendedResource",
    "DRAPartitionableDevices",
    "DRAPrioritizedList",
    "DRAResourceClaimDeviceStatus",
    "DRASchedulerFilterTimeout",
    "NodeDeclaredFeatures",
    "StorageCapacityScoring",
    "VolumeLimitScaling",
];

/// The gates kube-scheduler's scheduling code reads (pkg/scheduler, the DRA allocator, the pod
/// helpers its plugins call) whose effect is not modelled, and what they change.
const NOT_MODELLED: [(&str, &str); 26] = [
    ("CompositePodGroup", "pod groups"),
    ("CSIMigrationPortworx", "in-tree Portworx volumes"),
    ("DRADerivedAttributes", "DRA device attributes"),
    ("DRADeviceCompatibilityGroups", "DRA counter sets"),
    ("DRADeviceTaintRules", "DeviceTaintRules"),
    ("DRAFractionalCapacityRange", "DRA capacity requests"),
    (
        "DRAListTypeAttributes",
        "DRA list attributes and constraints",
    ),
    (
        "DRANodeAllocatableResources",
        "DRA node allocatable resources",
    ),
    ("DRAOptionalNodeOperations", "DRA device preparation"),
    ("DRAWorkloadResourceClaims", "claims of pod groups"),
    ("DynamicResourceAllocation", "the DynamicResources plugin"),
    ("GangScheduling", "pod groups"),
    ("GenericWorkload", "pod groups"),
    (
        "InPlacePodLevelResourcesVerticalScaling",
        "pod requests during resizes",
    ),
    ("InPlacePodVerticalScaling", "pod requests during resizes"),
    (
        "InPlacePodVerticalScalingSchedulerPreemption",
        "preemption for resizes",
    ),
    ("InterPodAffinityHostnameFastPath", "InterPodAffinity"),
    (
        "MatchLabelKeysInPodTopologySpread",
        "PodTopologySpread's matchLabelKeys",
    ),
    (
        "NodeInclusionPolicyInPodTopologySpread",
        "PodTopologySpread's node inclusion policies",
    ),
    ("PodGroupPreemptionPolicy", "pod groups"),
    ("PodLevelResources", "pod-level requests"),
    ("SidecarContainers", "restartable init containers' requests"),
    ("TaintTolerationComparisonOperators", "toleration operators"),
    ("TopologyAwareWorkloadScheduling", "pod groups"),
    ("VolumeAttributesClass", "volume binding"),
    ("WorkloadAwarePreemption", "pod groups"),
];

/// Gates the scheduler reads that act outside one scheduling cycle.
const OUTSIDE_THE_CYCLE: [(&str, &str); 11] = [
    ("ComponentFlagz", "an HTTP endpoint"),
    ("ComponentStatusz", "an HTTP endpoint"),
    ("CoordinatedLeaderElection", "leader election"),
    (
        "NominatedNodeNameForExpectation",
        "the scheduler writes nominatedNodeName before binding: an API write after the decision",
    ),
    (
        "OpportunisticBatching",
        "it reuses a cycle's ranking for the next identical pod only where the result is the same; kubectl-sched computes every cycle in full",
    ),
    (
        "SchedulerAsyncAPICalls",
        "the API calls after a decision are made asynchronously",
    ),
    (
        "SchedulerAsyncPreemption",
        "victims are deleted asynchronously; the candidates and the choice are the same",
    ),
    (
        "SchedulerPopFromBackoffQ",
        "queueing: which pod is tried when",
    ),
    (
        "SchedulerPreQueueingHints",
        "queueing: which pod is tried when",
    ),
    (
        "SchedulerQueueingHints",
        "queueing: which pod is tried when",
    ),
    (
        "DRAResourcePoolStatus",
        "an API the scheduler does not read",
    ),
];

/// What a gate off its default does here.
pub fn effect(name: &str) -> Effect {
    if MODELLED.contains(&name) {
        return Effect::Modelled;
    }
    if let Some((_, what)) = NOT_MODELLED.iter().find(|(n, _)| *n == name) {
        return Effect::NotModelled(what);
    }
    if let Some((_, why)) = OUTSIDE_THE_CYCLE.iter().find(|(n, _)| *n == name) {
        return Effect::NoEffect(why);
    }
    Effect::NoEffect(
        "kube-scheduler's scheduling code does not read it: a gate of the kubelet, the API server, controllers, clients, logging or metrics",
    )
}

/// The implementations of the structured DRA allocator (`structured.NewAllocator`), most stable
/// first: kube-scheduler takes the first that supports every DRA feature the gates turn on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Allocator {
    Stable,
    Incubating,
    Experimental,
}

impl fmt::Display for Allocator {
    /// The name of the implementing package.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Allocator::Stable => "stable",
            Allocator::Incubating => "incubating",
            Allocator::Experimental => "experimental",
        })
    }
}

/// The gates behind the allocator's features.
const ALLOCATOR_GATES: [&str; 7] = [
    "DRAAdminAccess",
    "DRAPrioritizedList",
    "DRAPartitionableDevices",
    "DRADeviceTaints",
    "DRADeviceBindingConditions",
    "DRAResourceClaimDeviceStatus",
    "DRAConsumableCapacity",
];

/// `structured.Features`, as DynamicResources fills it from the gates.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum DraFeature {
    AdminAccess,
    PrioritizedList,
    PartitionableDevices,
    DeviceTaints,
    /// 1.34 has binding and status apart; later releases together.
    DeviceBinding,
    DeviceStatus,
    ConsumableCapacity,
}

impl DraFeature {
    const ALL: [DraFeature; 7] = [
        DraFeature::AdminAccess,
        DraFeature::PrioritizedList,
        DraFeature::PartitionableDevices,
        DraFeature::DeviceTaints,
        DraFeature::DeviceBinding,
        DraFeature::DeviceStatus,
        DraFeature::ConsumableCapacity,
    ];
}

fn allocator(gates: &Gates) -> Allocator {
    use DraFeature::*;
    let on = |n: &str| gates.is_on(n);
    let minor = gates.release.minor;
    let (binding, status) = if minor == 34 {
        (
            on("DRADeviceBindingConditions"),
            on("DRAResourceClaimDeviceStatus"),
        )
    } else {
        let both = on("DRADeviceBindingConditions") && on("DRAResourceClaimDeviceStatus");
        (both, both)
    };
    let requested: Vec<DraFeature> = [
        (AdminAccess, on("DRAAdminAccess")),
        (PrioritizedList, on("DRAPrioritizedList")),
        (PartitionableDevices, on("DRAPartitionableDevices")),
        (DeviceTaints, on("DRADeviceTaints")),
        (DeviceBinding, binding),
        (DeviceStatus, status),
        (ConsumableCapacity, on("DRAConsumableCapacity")),
    ]
    .into_iter()
    .filter_map(|(f, on)| on.then_some(f))
    .collect();
    // Each implementation's `SupportedFeatures`, per release (1.37 as 1.36).
    let classic = [
        AdminAccess,
        PrioritizedList,
        PartitionableDevices,
        DeviceTaints,
    ];
    let (stable, incubating): (&[DraFeature], &[DraFeature]) = if minor >= 36 {
        (&classic, &DraFeature::ALL)
    } else {
        (&[], &classic)
    };
    let supports = |set: &[DraFeature]| requested.iter().all(|f| set.contains(f));
    if supports(stable) {
        Allocator::Stable
    } else if supports(incubating) {
        Allocator::Incubating
    } else {
        Allocator::Experimental
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Release {
        Release::parse(s).unwrap()
    }

    fn parse(release: &str, flags: &[&str]) -> Result<Gates, GateError> {
        let flags: Vec<String> = flags.iter().map(|s| s.to_string()).collect();
        Gates::parse(r(release), &flags).map(|(g, _)| g)
    }

    fn refusal(release: &str, flags: &[&str]) -> String {
        match parse(release, flags) {
            Err(GateError::Refused { message, .. }) => message,
            other => panic!("{flags:?} on {release}: {other:?}"),
        }
    }

    #[test]
    fn the_table_is_sorted_and_every_row_well_formed() {
        assert!(GATES.windows(2).all(|w| w[0].0 < w[1].0));
        for (name, cells) in GATES {
            for c in cells {
                assert!(
                    *c == "." || (c.len() >= 2 && "ABGD".contains(&c[..1])),
                    "{name}: {c}"
                );
            }
        }
        for (f, deps) in DEPENDENCIES_1_35.iter().chain(DEPENDENCIES_1_36) {
            assert!(index(f).is_some(), "{f}");
            assert!(deps.iter().all(|d| index(d).is_some()), "{f}: {deps:?}");
        }
    }

    #[test]
    fn reads_what_kube_scheduler_reads() {
        let g = parse(
            "1.35",
            &["NodeDeclaredFeatures=true", "kube:StorageCapacityScoring=t"],
        );
        assert!(matches!(
            g,
            Err(GateError::Refused { ref message, .. }) if message.contains("do not mix use")
        ));
        let g = parse(
            "1.35",
            &[" NodeDeclaredFeatures = true ,,StorageCapacityScoring=T"],
        )
        .unwrap();
        assert!(g.is_on("NodeDeclaredFeatures") && g.is_on("StorageCapacityScoring"));
        let changed: Vec<&str> = g.changed().map(|g| g.name).collect();
        assert_eq!(changed, ["NodeDeclaredFeatures", "StorageCapacityScoring"]);
        // The last value wins.
        let g = parse(
            "1.36",
            &["StorageCapacityScoring=true", "StorageCapacityScoring=0"],
        )
        .unwrap();
        assert_eq!(g.changed().count(), 0);
        assert_eq!(
            g,
            Gates::defaults(r("1.36"))
                .set(&[("StorageCapacityScoring".into(), false)])
                .unwrap()
                .0
        );
    }

    #[test]
    fn refuses_with_kube_schedulers_own_words() {
        for (release, flag, said) in [
            (
                "1.34",
                "NodeDeclaredFeatures=true",
                "unrecognized feature gate: NodeDeclaredFeatures",
            ),
            ("1.36", "Typo=true", "unrecognized feature gate: Typo"),
            (
                "1.36",
                "SidecarContainers=false",
                "cannot set feature gate SidecarContainers to false, feature is locked to true",
            ),
            (
                "1.36",
                "SidecarContainers=false,SchedulerQueueingHints=false",
                "[cannot set feature gate SchedulerQueueingHints to false, feature is locked to true, cannot set feature gate SidecarContainers to false, feature is locked to true]",
            ),
            (
                "1.36",
                "StorageCapacityScoring",
                "missing bool value for StorageCapacityScoring",
            ),
            (
                "1.36",
                "StorageCapacityScoring=yes",
                "invalid value of StorageCapacityScoring=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax",
            ),
            (
                "1.36",
                "wardle:Foo=true",
                "component not registered: wardle",
            ),
            (
                "1.35",
                "DRADeviceBindingConditions=true,DRAResourceClaimDeviceStatus=false",
                "DRADeviceBindingConditions is enabled, but depends on features that are disabled: [DRAResourceClaimDeviceStatus]",
            ),
        ] {
            assert_eq!(refusal(release, &[flag]), said, "{flag} on {release}");
        }
        // In 1.36 default-on gates depend on NodeDeclaredFeatures: it cannot be turned off alone.
        assert!(refusal("1.36", &["NodeDeclaredFeatures=false"]).starts_with(
            "[ExtendWebSocketsToKubelet is enabled, but depends on features that are disabled: [NodeDeclaredFeatures], "
        ));
        // Locking to the default value is fine.
        assert!(parse("1.36", &["SidecarContainers=true"]).is_ok());
    }

    #[test]
    fn all_alpha_and_all_beta_set_what_is_not_named() {
        let g = parse("1.35", &["AllAlpha=true,StorageCapacityScoring=false"]).unwrap();
        assert!(!g.is_on("StorageCapacityScoring") && g.is_on("NodeDeclaredFeatures"));
        assert!(g.is_on("VolumeLimitScaling") && g.is_on("DRAConsumableCapacity"));
        let g = parse("1.36", &["AllBeta=false"]);
        // Every beta gate off, DRADeviceBindingConditions with them: nothing left wanting.
        let g = g.unwrap();
        assert!(!g.is_on("DRAConsumableCapacity") && !g.is_on("NodeDeclaredFeatures"));
    }

    #[test]
    fn only_modelled_effects_are_accepted() {
        let g = parse("1.35", &["NodeDeclaredFeatures=true"]).unwrap();
        assert_eq!(g.modelled(), Ok(vec![]));
        let g = parse(
            "1.36",
            &["SchedulerAsyncPreemption=false,KubeletInUserNamespace=true"],
        )
        .unwrap();
        let notes = g.modelled().unwrap();
        assert_eq!(notes.len(), 2, "{notes:?}");
        let g = parse("1.36", &["GenericWorkload=true"]).unwrap();
        assert!(
            matches!(g.modelled(), Err(GateError::NotModelled(m)) if m.contains("GenericWorkload=true (pod groups)"))
        );
        // 1.35 needs its experimental allocator for consumable capacity.
        let g = parse("1.35", &["DRAConsumableCapacity=true"]).unwrap();
        assert!(
            matches!(g.modelled(), Err(GateError::NotModelled(m)) if m.contains("\"experimental\""))
        );
        // 1.36's incubating allocator has it; without it and binding conditions, 1.36 takes
        // its stable one.
        let g = parse("1.36", &["DRAConsumableCapacity=false"]).unwrap();
        assert_eq!(g.modelled(), Ok(vec![]));
        let g = parse(
            "1.36",
            &["DRAConsumableCapacity=false,DRADeviceBindingConditions=false"],
        )
        .unwrap();
        assert!(matches!(g.modelled(), Err(GateError::NotModelled(m)) if m.contains("\"stable\"")));
        // 1.34 without device status: its incubating allocator.
        let g = parse("1.34", &["DRAResourceClaimDeviceStatus=false"]).unwrap();
        assert!(
            matches!(g.modelled(), Err(GateError::NotModelled(m)) if m.contains("\"incubating\""))
        );
        for minor in ["1.34", "1.35", "1.36", "1.37"] {
            assert_eq!(Gates::defaults(r(minor)).modelled(), Ok(vec![]));
        }
    }

    #[test]
    fn the_same_gates_under_another_release() {
        let g = parse("1.36", &["StorageCapacityScoring=true"]).unwrap();
        let (other, _) = g.for_release(r("1.35")).unwrap();
        assert!(other.is_on("StorageCapacityScoring"));
        let g = parse("1.36", &["VolumeLimitScaling=true"]).unwrap();
        assert!(matches!(
            g.for_release(r("1.34")),
            Err(GateError::Refused { message, .. }) if message == "unrecognized feature gate: VolumeLimitScaling"
        ));
    }
}
