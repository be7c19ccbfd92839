//! KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as kube-scheduler's `--config`
//! reads it: strict decoding, v1 defaulting, `ValidateKubeSchedulerConfiguration`, then one
//! `Framework` per profile (`profile.NewMap`). Every error reads as kube-scheduler's.

mod args;
mod decode;
pub(crate) mod duration;
mod field;
mod node;
mod v1;
mod validation;

use crate::framework::extender;
use crate::framework::profile::{self, ProfilePlugins};
use crate::framework::runner::Framework;
use crate::plugins::{self, PluginArgs, node_resources_fit};
use crate::release::ReleaseChoice;
use args::{Args, DecodeError, InitError};
use node::Node;
use std::collections::BTreeMap;

/// Where the runtime scheme of kube-scheduler's configuration was created, as its errors name it.
pub const SCHEME: &str = "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme/scheme.go:29";

/// Why a configuration file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Syntax { path: String, message: String },
    /// kube-scheduler rejects it; `message` is kube-scheduler's error.
    #[error("{path}: {message}")]
    Rejected { path: String, message: String },
    /// kube-scheduler would crash on it.
    #[error("{path}: {message}")]
    Crash { path: String, message: String },
}

/// The profiles of a configuration, each with the configuration's extenders.
pub struct Loaded {
    pub frameworks: Vec<Framework>,
}

/// Reads a configuration file into its profiles, as the release's kube-scheduler would.
pub fn load(path: &std::path::Path, release: ReleaseChoice) -> Result<Loaded, ConfigError> {
    let display = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: display.clone(),
        source,
    })?;
    from_text(&text, release).map_err(|e| match e {
        Failure::Syntax(message) => ConfigError::Syntax {
            path: display,
            message,
        },
        Failure::Rejected(message) => ConfigError::Rejected {
            path: display,
            message,
        },
        Failure::Crash(message) => ConfigError::Crash {
            path: display,
            message,
        },
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Failure {
    Syntax(String),
    Rejected(String),
    Crash(String),
}

/// One `pluginConfig` entry with its arguments typed.
#[derive(Clone, Debug)]
struct PluginConfig {
    name: String,
    raw: Option<Node>,
    args: Args,
}

/// A defaulted profile (the internal `KubeSchedulerProfile`).
#[derive(Clone, Debug)]
struct Profile {
    scheduler_name: String,
    percentage_of_nodes_to_score: Option<i32>,
    plugins: ProfilePlugins,
    plugin_config: Vec<PluginConfig>,
}

fn from_text(text: &str, release: ReleaseChoice) -> Result<Loaded, Failure> {
    let doc = node::parse(text).map_err(Failure::Syntax)?;
    let (cfg, profiles) = decode_and_default(text, &doc, release).map_err(Failure::Rejected)?;
    let features = release.features();
    let errs = validation::validate(&cfg, &profiles, &features);
    if !errs.is_empty() {
        return Err(Failure::Rejected(field::aggregate(&errs)));
    }
    build(&cfg, profiles, release)
}

/// `loadConfig`: the universal decoder (kind check, strict decoding, nested plugin arguments)
/// followed by defaulting.
fn decode_and_default(
    text: &str,
    doc: &Node,
    release: ReleaseChoice,
) -> Result<(v1::Configuration, Vec<Profile>), String> {
    let field = |key: &str| match doc {
        Node::Map(entries) => {
            entries
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| match v {
                    Node::String(s) if !s.is_empty() => Some(s.clone()),
                    _ => None,
                })
        }
        _ => None,
    };
    let Some(kind) = field("kind") else {
        return Err(format!("Object 'Kind' is missing in '{text}'"));
    };
    let Some(api_version) = field("apiVersion") else {
        return Err(format!("Object 'apiVersion' is missing in '{text}'"));
    };
    if api_version == v1::GROUP_VERSION && args::is_args_kind(&kind) {
        return Err(format!(
            "couldn't decode as KubeSchedulerConfiguration, got {api_version}, Kind={kind}: "
        ));
    }
    if api_version != v1::GROUP_VERSION || kind != v1::KIND {
        return Err(format!(
            "no kind {kind:?} is registered for version {api_version:?} in scheme {SCHEME:?}"
        ));
    }

    let features = release.features();
    let mut strict = decode::Strict::default();
    let mut cfg = v1::decode(doc, &mut strict)?;
    let mut strict = strict.into_messages();
    let mut typed: Vec<Vec<PluginConfig>> = Vec::new();
    for (i, p) in cfg.profiles.iter().enumerate() {
        let mut list = Vec::new();
        for (j, c) in p.plugin_config.iter().enumerate() {
            let at = format!("decoding .profiles[{i}].pluginConfig[{j}]");
            let args = match args::decode(&c.name, c.args.as_ref(), &features) {
                Ok(a) => a,
                Err(DecodeError::Fatal(e)) => return Err(format!("{at}: {e}")),
                Err(DecodeError::Strict(e)) => {
                    strict.push(format!("{at}: strict decoding error: {e}"));
                    continue;
                }
            };
            list.push(PluginConfig {
                name: c.name.clone(),
                raw: c.args.clone(),
                args,
            });
        }
        typed.push(list);
    }
    if !strict.is_empty() {
        return Err(format!("strict decoding error: {}", strict.join(", ")));
    }

    cfg.set_defaults(release);
    if typed.is_empty() {
        typed.push(Vec::new());
    }
    let profiles = cfg
        .profiles
        .iter()
        .zip(typed)
        .map(|(p, mut plugin_config)| {
            let plugins = p.plugins.clone().expect("defaulted");
            for c in &mut plugin_config {
                c.args.set_defaults(&features);
            }
            for name in plugins.needed() {
                if plugin_config.iter().any(|c| c.name == name) {
                    continue;
                }
                if let Some(args) = Args::defaults_for(name, &features) {
                    plugin_config.push(PluginConfig {
                        name: name.to_string(),
                        raw: None,
                        args,
                    });
                }
            }
            Profile {
                scheduler_name: p.scheduler_name.clone().unwrap_or_default(),
                percentage_of_nodes_to_score: p.percentage_of_nodes_to_score,
                plugins,
                plugin_config,
            }
        })
        .collect();
    Ok((cfg, profiles))
}

/// `scheduler.New`: extenders, then `profile.NewMap`.
fn build(
    cfg: &v1::Configuration,
    mut profiles: Vec<Profile>,
    release: ReleaseChoice,
) -> Result<Loaded, Failure> {
    let features = release.features();
    let extenders = extender::scheduler_order(cfg.extenders.clone());
    if !cfg.extenders.is_empty() {
        // Resources managed by extenders and ignored by the scheduler replace NodeResourcesFit's
        // ignoredResources in every profile.
        let ignored: Vec<String> = cfg
            .extenders
            .iter()
            .flat_map(|e| {
                e.managed_resources
                    .iter()
                    .filter(|r| r.ignored_by_scheduler)
                    .map(|r| r.name.clone())
            })
            .collect();
        if !ignored.is_empty() {
            for p in &mut profiles {
                let fit = p
                    .plugin_config
                    .iter_mut()
                    .find(|c| c.name == node_resources_fit::NAME);
                match fit.map(|c| &mut c.args) {
                    Some(Args::NodeResourcesFit {
                        ignored_resources, ..
                    }) => *ignored_resources = ignored.clone(),
                    _ => {
                        return Err(Failure::Rejected(
                            "couldn't build extenders: can't find NodeResourcesFitArgs in plugin config".into(),
                        ));
                    }
                }
            }
        }
    }

    let percentage = cfg.percentage_of_nodes_to_score;
    let mut frameworks = Vec::new();
    for p in &profiles {
        let mut plugin_args = PluginArgs::default();
        let mut init_errors: BTreeMap<&str, String> = BTreeMap::new();
        let needed = p.plugins.needed();
        for c in &p.plugin_config {
            match c.args.apply(&mut plugin_args, &features) {
                Ok(()) => {}
                Err(InitError::Crash(message)) if needed.contains(c.name.as_str()) => {
                    return Err(Failure::Crash(message));
                }
                Err(InitError::Invalid(message)) => {
                    init_errors.insert(c.name.as_str(), message);
                }
                Err(InitError::Crash(_)) => {}
            }
        }
        let fw = profile::build(
            &p.scheduler_name,
            &p.plugins,
            p.percentage_of_nodes_to_score.or(percentage),
            release,
            &mut |name| match init_errors.get(name) {
                Some(e) => Err(e.clone()),
                None => Ok(plugins::new_plugin(name, &plugin_args, &features)),
            },
        )
        .map_err(|e| {
            Failure::Rejected(format!(
                "initializing profiles: creating profile for scheduler name {}: {e}",
                p.scheduler_name
            ))
        })?;
        frameworks.push(Framework {
            extenders: extenders.clone(),
            ..fw
        });
    }
    Ok(Loaded { frameworks })
}

#[cfg(test)]
mod tests;
