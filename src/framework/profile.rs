//! Building a `Framework` from a profile's plugin sets as `NewFramework` does: plugins enabled per
//! extension point, then multiPoint plugins expanded into every point they implement
//! (`expandMultiPointPlugins`: `*` and per-point `disabled` lists, explicit per-point entries
//! overriding multiPoint ones), then the score weights (`getScoreWeights`). The plugins come from
//! a registry the caller passes in.

use super::cycle_state::StateSlots;
use super::plugin::{Plugin, Points};
use super::runner::Framework;
use crate::config::profile::{ExtensionPoint, ProfilePlugins};
use crate::release::ReleaseChoice;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The order `getExtensionPoints` walks the points, which decides which error is reported first.
const FRAMEWORK_ORDER: [ExtensionPoint; 12] = [
    ExtensionPoint::PreFilter,
    ExtensionPoint::Filter,
    ExtensionPoint::PostFilter,
    ExtensionPoint::Reserve,
    ExtensionPoint::PreScore,
    ExtensionPoint::Score,
    ExtensionPoint::PreBind,
    ExtensionPoint::Bind,
    ExtensionPoint::PostBind,
    ExtensionPoint::Permit,
    ExtensionPoint::PreEnqueue,
    ExtensionPoint::QueueSort,
];

/// The Go interface a plugin implements for an extension point, as errors name it.
fn interface(e: ExtensionPoint) -> &'static str {
    match e {
        ExtensionPoint::PreEnqueue => "PreEnqueuePlugin",
        ExtensionPoint::QueueSort => "QueueSortPlugin",
        ExtensionPoint::PreFilter => "PreFilterPlugin",
        ExtensionPoint::Filter => "FilterPlugin",
        ExtensionPoint::PostFilter => "PostFilterPlugin",
        ExtensionPoint::PreScore => "PreScorePlugin",
        ExtensionPoint::Score => "ScorePlugin",
        ExtensionPoint::Reserve => "ReservePlugin",
        ExtensionPoint::Permit => "PermitPlugin",
        ExtensionPoint::PreBind => "PreBindPlugin",
        ExtensionPoint::Bind => "BindPlugin",
        ExtensionPoint::PostBind => "PostBindPlugin",
    }
}

/// The extension points of a plugin that extends `e`.
fn points(e: ExtensionPoint) -> Points {
    match e {
        ExtensionPoint::PreEnqueue => Points::PRE_ENQUEUE,
        ExtensionPoint::QueueSort => Points::QUEUE_SORT,
        ExtensionPoint::PreFilter => Points::PRE_FILTER,
        ExtensionPoint::Filter => Points::FILTER,
        ExtensionPoint::PostFilter => Points::POST_FILTER,
        ExtensionPoint::PreScore => Points::PRE_SCORE,
        ExtensionPoint::Score => Points::SCORE,
        ExtensionPoint::Reserve => Points::RESERVE,
        ExtensionPoint::Permit => Points::PERMIT,
        ExtensionPoint::PreBind => Points::PRE_BIND,
        ExtensionPoint::Bind => Points::BIND,
        ExtensionPoint::PostBind => Points::POST_BIND,
    }
}

/// A plugin as the registry builds it, its cycle state registered in the slots: `Ok(None)` when
/// the registry has no plugin of that name, `Err` when its factory rejects the arguments.
pub type Instantiate<'a> =
    dyn FnMut(&str, &mut StateSlots) -> Result<Option<Arc<dyn Plugin>>, String> + 'a;

/// `NewFramework` for one profile. Errors read as kube-scheduler's.
pub fn build(
    scheduler_name: &str,
    plugins: &ProfilePlugins,
    percentage_of_nodes_to_score: Option<i32>,
    release: ReleaseChoice,
    instantiate: &mut Instantiate,
) -> Result<Framework, String> {
    let mut instances: BTreeMap<&str, Arc<dyn Plugin>> = BTreeMap::new();
    let mut slots = StateSlots::default();
    for name in plugins.needed() {
        if let Some(p) = instantiate(name, &mut slots)
            .map_err(|e| format!("initializing plugin {name:?}: {e}"))?
        {
            instances.insert(name, p);
        }
    }

    let mut lists: [Vec<&str>; 12] = Default::default();
    for e in FRAMEWORK_ORDER {
        let list = &mut lists[e as usize];
        for p in &plugins.point(e).enabled {
            let Some(pl) = instances.get(p.name.as_str()) else {
                return Err(format!("{} {:?} does not exist", interface(e), p.name));
            };
            if !pl.points().contains(points(e)) {
                return Err(format!(
                    "plugin {:?} does not extend {} plugin",
                    p.name,
                    interface(e)
                ));
            }
            if list.contains(&p.name.as_str()) {
                return Err(format!(
                    "plugin {:?} already registered as {:?}",
                    p.name,
                    interface(e)
                ));
            }
            list.push(&p.name);
        }
    }

    if !plugins.multi_point.enabled.is_empty() {
        for e in FRAMEWORK_ORDER {
            let set = plugins.point(e);
            if set.disabled.iter().any(|d| d == "*") {
                continue;
            }
            let explicit = &lists[e as usize];
            let mut overrides: Vec<&str> = Vec::new();
            let mut multi: Vec<&str> = Vec::new();
            for p in &plugins.multi_point.enabled {
                let Some(pl) = instances.get(p.name.as_str()) else {
                    return Err(format!("{} {:?} does not exist", interface(e), p.name));
                };
                if !pl.points().contains(points(e)) || set.disabled.contains(&p.name) {
                    continue;
                }
                if explicit.contains(&p.name.as_str()) {
                    if !overrides.contains(&p.name.as_str()) {
                        overrides.push(&p.name);
                    }
                    continue;
                }
                if multi.contains(&p.name.as_str()) {
                    return Err(format!(
                        "plugin {:?} already registered as {:?}",
                        p.name,
                        interface(e)
                    ));
                }
                multi.push(&p.name);
            }
            // Explicitly configured plugins that multiPoint also names come first, in their
            // explicit order; then multiPoint's own; then the remaining explicit ones.
            let (first, rest): (Vec<&str>, Vec<&str>) =
                explicit.iter().partition(|n| overrides.contains(n));
            lists[e as usize] = first.into_iter().chain(multi).chain(rest).collect();
        }
    }

    let queue_sort = lists[ExtensionPoint::QueueSort as usize].len();
    if queue_sort != 1 {
        return Err(format!(
            "only one queue sort plugin required for profile with scheduler name {scheduler_name:?}, but got {queue_sort}"
        ));
    }
    if lists[ExtensionPoint::Bind as usize].is_empty() {
        return Err(format!(
            "at least one bind plugin is needed for profile with scheduler name {scheduler_name:?}"
        ));
    }

    // Explicit score entries take precedence over multiPoint ones; 0 or unset means 1.
    let mut weights: BTreeMap<&str, i64> = BTreeMap::new();
    for p in plugins
        .point(ExtensionPoint::Score)
        .enabled
        .iter()
        .chain(&plugins.multi_point.enabled)
    {
        // A multiPoint plugin never looked up (every point disabled with `*`) is not a score plugin.
        if instances
            .get(p.name.as_str())
            .is_some_and(|pl| pl.points().contains(Points::SCORE))
        {
            weights.entry(&p.name).or_insert(match p.weight {
                None | Some(0) => 1,
                Some(w) => i64::from(w),
            });
        }
    }

    let mut fw = Framework {
        profile: scheduler_name.to_string(),
        release,
        features: release.features(),
        plugins: Vec::new(),
        pre_enqueue: Vec::new(),
        pre_filter: Vec::new(),
        filter: Vec::new(),
        post_filter: Vec::new(),
        pre_score: Vec::new(),
        score: Vec::new(),
        reserve: Vec::new(),
        pre_bind: Vec::new(),
        percentage_of_nodes_to_score,
        parallel: true,
        extenders: Vec::new(),
        extender_clients: Vec::new(),
    };
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut index_of = |fw: &mut Framework, name: &str| -> usize {
        *index
            .entry(instances.get_key_value(name).expect("resolved above").0)
            .or_insert_with(|| {
                fw.plugins.push(instances[name].clone());
                fw.plugins.len() - 1
            })
    };
    for e in ExtensionPoint::ALL {
        for name in &lists[e as usize] {
            let i = index_of(&mut fw, name);
            match e {
                ExtensionPoint::PreEnqueue => fw.pre_enqueue.push(i),
                ExtensionPoint::PreFilter => fw.pre_filter.push(i),
                ExtensionPoint::Filter => fw.filter.push(i),
                ExtensionPoint::PostFilter => fw.post_filter.push(i),
                ExtensionPoint::PreScore => fw.pre_score.push(i),
                ExtensionPoint::Score => fw.score.push((i, weights[name])),
                ExtensionPoint::Reserve => fw.reserve.push(i),
                ExtensionPoint::PreBind => fw.pre_bind.push(i),
                // Not run offline: queue order, permit and binding side effects.
                ExtensionPoint::QueueSort
                | ExtensionPoint::Permit
                | ExtensionPoint::Bind
                | ExtensionPoint::PostBind => {}
            }
        }
    }
    Ok(fw)
}
