//! Building a `Framework` from a profile's plugin list: each multiPoint plugin joins every
//! extension point it implements, score plugins with their weight (`expandMultiPointPlugins`).

use super::plugin::Points;
use super::runner::Framework;
use crate::plugins::{self, PluginArgs};

pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// A profile as a list of multiPoint plugins and their weights.
pub fn from_multi_point(
    scheduler_name: &str,
    enabled: &[(String, Option<i64>)],
    args: &PluginArgs,
    percentage_of_nodes_to_score: Option<i32>,
) -> Result<Framework, String> {
    let mut fw = Framework {
        profile: scheduler_name.to_string(),
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
    };
    for (name, weight) in enabled {
        let plugin = plugins::new_plugin(name, args)
            .ok_or_else(|| format!("plugin {name:?} does not exist"))?;
        let points = plugin.points();
        let idx = fw.plugins.len();
        fw.plugins.push(plugin);
        let lists: [(Points, &mut Vec<usize>); 7] = [
            (Points::PRE_ENQUEUE, &mut fw.pre_enqueue),
            (Points::PRE_FILTER, &mut fw.pre_filter),
            (Points::FILTER, &mut fw.filter),
            (Points::POST_FILTER, &mut fw.post_filter),
            (Points::PRE_SCORE, &mut fw.pre_score),
            (Points::RESERVE, &mut fw.reserve),
            (Points::PRE_BIND, &mut fw.pre_bind),
        ];
        for (point, list) in lists {
            if points.contains(point) {
                list.push(idx);
            }
        }
        if points.contains(Points::SCORE) {
            // Upstream defaults a missing multiPoint weight to 1.
            fw.score.push((idx, weight.unwrap_or(1)));
        }
    }
    Ok(fw)
}

/// The v1 default profile.
pub fn default_framework() -> Framework {
    let known: Vec<(String, Option<i64>)> = plugins::DEFAULT_PLUGINS
        .iter()
        .filter(|(name, _)| plugins::new_plugin(name, &PluginArgs::default()).is_some())
        .map(|&(n, w)| (n.to_string(), w))
        .collect();
    from_multi_point(DEFAULT_SCHEDULER_NAME, &known, &PluginArgs::default(), None)
        .expect("the default plugins are registered")
}
