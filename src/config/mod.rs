//! KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) as kube-scheduler's `--config`
//! reads it: strict decoding, v1 defaulting and `ValidateKubeSchedulerConfiguration`, giving the
//! profiles the plugin registry builds frameworks from (`plugins::registry`). Every error reads
//! as kube-scheduler's.

pub mod args;
mod decode;
pub(crate) mod duration;
pub mod extender;
mod node;
pub mod profile;
mod v1;
mod validation;

use crate::release::ReleaseChoice;
use args::{Args, DecodeError};
use extender::ExtenderConfig;
use node::Node;
use profile::ProfilePlugins;

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

/// Reads a configuration file, as the release's kube-scheduler would.
pub fn load(path: &std::path::Path, release: ReleaseChoice) -> Result<Configuration, ConfigError> {
    let read = |source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    };
    let bytes = read_small_file(path).map_err(read)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| read(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    from_text(&text, release).map_err(|e| e.at(path))
}

/// The most a file the configuration names (itself, an extender's certificates) may hold: such
/// files are kilobytes, and `/dev/zero` or a log file named by mistake must not fill the memory.
pub const MAX_SMALL_FILE: u64 = 16 << 20;

/// A configuration or certificate file, whole, refused past `MAX_SMALL_FILE` bytes.
pub fn read_small_file(path: impl AsRef<std::path::Path>) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_SMALL_FILE + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SMALL_FILE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "larger than {} MiB: not a configuration or certificate file",
                MAX_SMALL_FILE >> 20
            ),
        ));
    }
    Ok(bytes)
}

/// Why kube-scheduler would not start with a configuration, before the file is named.
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    Syntax(String),
    Rejected(String),
    Crash(String),
}

impl Failure {
    /// The error of the configuration file at `path`.
    pub fn at(self, path: &std::path::Path) -> ConfigError {
        let path = path.display().to_string();
        match self {
            Failure::Syntax(message) => ConfigError::Syntax { path, message },
            Failure::Rejected(message) => ConfigError::Rejected { path, message },
            Failure::Crash(message) => ConfigError::Crash { path, message },
        }
    }
}

/// A configuration, decoded, defaulted and validated.
#[derive(Clone, Debug)]
pub struct Configuration {
    pub profiles: Vec<Profile>,
    /// The extenders, in the order kube-scheduler calls them.
    pub extenders: Vec<ExtenderConfig>,
    /// The global `percentageOfNodesToScore`.
    pub percentage_of_nodes_to_score: Option<i32>,
}

/// One `pluginConfig` entry with its arguments typed.
#[derive(Clone, Debug)]
pub struct PluginConfig {
    pub name: String,
    raw: Option<Node>,
    pub args: Args,
}

/// A defaulted profile (the internal `KubeSchedulerProfile`).
#[derive(Clone, Debug)]
pub struct Profile {
    pub scheduler_name: String,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub plugins: ProfilePlugins,
    pub plugin_config: Vec<PluginConfig>,
}

/// A configuration's text, as kube-scheduler of `release` reads it.
pub fn from_text(text: &str, release: ReleaseChoice) -> Result<Configuration, Failure> {
    let doc = node::parse(text).map_err(Failure::Syntax)?;
    let (cfg, profiles) = decode_and_default(text, &doc, release).map_err(Failure::Rejected)?;
    let features = release.features();
    let errs = validation::validate(&cfg, &profiles, &features);
    if !errs.is_empty() {
        return Err(Failure::Rejected(crate::model::field::aggregate(&errs)));
    }
    Ok(Configuration {
        profiles,
        extenders: extender::scheduler_order(cfg.extenders),
        percentage_of_nodes_to_score: cfg.percentage_of_nodes_to_score,
    })
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
