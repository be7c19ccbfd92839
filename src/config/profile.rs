//! A profile's plugins as the configuration gives them (`config.Plugins`, `PluginSet`,
//! `Plugin`), and the release's default plugins (`getDefaultPlugins`).

use crate::release::{Features, ReleaseChoice};
use std::collections::BTreeSet;

/// The extension points a profile configures one by one (`Plugins` without `multiPoint`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtensionPoint {
    PreEnqueue,
    QueueSort,
    PreFilter,
    Filter,
    PostFilter,
    PreScore,
    Score,
    Reserve,
    Permit,
    PreBind,
    Bind,
    PostBind,
}

impl ExtensionPoint {
    /// In the order of the v1 `Plugins` fields.
    pub const ALL: [ExtensionPoint; 12] = [
        ExtensionPoint::PreEnqueue,
        ExtensionPoint::QueueSort,
        ExtensionPoint::PreFilter,
        ExtensionPoint::Filter,
        ExtensionPoint::PostFilter,
        ExtensionPoint::PreScore,
        ExtensionPoint::Score,
        ExtensionPoint::Reserve,
        ExtensionPoint::Permit,
        ExtensionPoint::PreBind,
        ExtensionPoint::Bind,
        ExtensionPoint::PostBind,
    ];

    /// The field name in a v1 `Plugins` (`profiles[i].plugins.<field>`).
    pub fn field(self) -> &'static str {
        match self {
            ExtensionPoint::PreEnqueue => "preEnqueue",
            ExtensionPoint::QueueSort => "queueSort",
            ExtensionPoint::PreFilter => "preFilter",
            ExtensionPoint::Filter => "filter",
            ExtensionPoint::PostFilter => "postFilter",
            ExtensionPoint::PreScore => "preScore",
            ExtensionPoint::Score => "score",
            ExtensionPoint::Reserve => "reserve",
            ExtensionPoint::Permit => "permit",
            ExtensionPoint::PreBind => "preBind",
            ExtensionPoint::Bind => "bind",
            ExtensionPoint::PostBind => "postBind",
        }
    }
}

/// An enabled plugin (`config.Plugin`); a weight of 0 or none counts as 1 for score plugins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginRef {
    pub name: String,
    pub weight: Option<i32>,
}

impl PluginRef {
    pub fn new(name: &str, weight: Option<i32>) -> PluginRef {
        PluginRef {
            name: name.to_string(),
            weight,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PluginSet {
    pub enabled: Vec<PluginRef>,
    pub disabled: Vec<String>,
}

/// A profile's `plugins`, after v1 defaulting merged them with the default plugins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProfilePlugins {
    pub multi_point: PluginSet,
    /// Indexed like `ExtensionPoint::ALL`.
    pub points: [PluginSet; 12],
}

impl ProfilePlugins {
    pub fn point(&self, e: ExtensionPoint) -> &PluginSet {
        &self.points[e as usize]
    }

    pub fn point_mut(&mut self, e: ExtensionPoint) -> &mut PluginSet {
        &mut self.points[e as usize]
    }

    /// `pluginsNeeded`: every plugin enabled somewhere, multiPoint included.
    pub fn needed(&self) -> BTreeSet<&str> {
        self.points
            .iter()
            .chain(std::iter::once(&self.multi_point))
            .flat_map(|s| s.enabled.iter().map(|p| p.name.as_str()))
            .collect()
    }
}

/// The default profile's multiPoint plugins in order, with their score weights
/// (`getDefaultPlugins`; DynamicResourceAllocation is on in every modelled release, so
/// DynamicResources comes before DefaultPreemption).
fn default_multi_point(features: &Features) -> Vec<(&'static str, Option<i32>)> {
    let mut plugins = vec![
        ("SchedulingGates", None),
        ("PrioritySort", None),
        ("NodeUnschedulable", None),
        ("NodeName", None),
        ("TaintToleration", Some(3)),
        ("NodeAffinity", Some(2)),
        ("NodePorts", None),
        ("NodeResourcesFit", Some(1)),
        ("VolumeRestrictions", None),
        ("NodeVolumeLimits", None),
        ("VolumeBinding", None),
        ("VolumeZone", None),
        ("PodTopologySpread", Some(2)),
        ("InterPodAffinity", Some(2)),
        (
            "DynamicResources",
            features.dynamic_resources_scores.then_some(2),
        ),
        ("DefaultPreemption", None),
        ("NodeResourcesBalancedAllocation", Some(1)),
        ("ImageLocality", Some(1)),
        ("DefaultBinder", None),
    ];
    // Gated plugins go last, as `applyFeatureGates` appends them.
    if features.enable_node_declared_features {
        plugins.push(("NodeDeclaredFeatures", None));
    }
    plugins
}

/// The release's default plugins as a profile's `plugins`.
pub fn default_plugins(release: ReleaseChoice) -> ProfilePlugins {
    ProfilePlugins {
        multi_point: PluginSet {
            enabled: default_multi_point(&release.features())
                .into_iter()
                .map(|(name, weight)| PluginRef::new(name, weight))
                .collect(),
            disabled: Vec::new(),
        },
        points: Default::default(),
    }
}
