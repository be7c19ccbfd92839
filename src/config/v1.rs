//! `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration: decoding (field names and Go
//! types as `k8s.io/kube-scheduler/config/v1` declares them) and v1 defaulting
//! (`SetDefaults_KubeSchedulerConfiguration`, `mergePlugins`).

use super::decode::{Field, Obj, Res, Strict};
use super::extender::{ExtenderConfig, ManagedResource, TlsConfig};
use super::node::Node;
use super::profile::{self, ExtensionPoint, PluginRef, PluginSet, ProfilePlugins};
use crate::model::pod::DEFAULT_SCHEDULER_NAME;
use crate::release::ReleaseChoice;

pub const GROUP_VERSION: &str = "kubescheduler.config.k8s.io/v1";
pub const KIND: &str = "KubeSchedulerConfiguration";

#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeaderElection {
    pub leader_elect: Option<bool>,
    /// Durations in nanoseconds; 0 is unset.
    pub lease_duration: i64,
    pub renew_deadline: i64,
    pub retry_period: i64,
    pub resource_lock: String,
    pub resource_name: String,
    pub resource_namespace: String,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct PluginConfig {
    pub name: String,
    /// The arguments as written; typed per plugin later (`decodeNestedObjects`).
    pub args: Option<Node>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    pub scheduler_name: Option<String>,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub plugins: Option<ProfilePlugins>,
    pub plugin_config: Vec<PluginConfig>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Configuration {
    pub parallelism: Option<i32>,
    pub leader_election: LeaderElection,
    pub client_connection_burst: i32,
    pub percentage_of_nodes_to_score: Option<i32>,
    pub pod_initial_backoff_seconds: Option<i64>,
    pub pod_max_backoff_seconds: Option<i64>,
    pub profiles: Vec<Profile>,
    pub extenders: Vec<ExtenderConfig>,
}

/// Decodes the document (its `apiVersion` and `kind` already checked); unknown and repeated
/// fields go to `strict`.
pub fn decode(node: &Node, strict: &mut Strict) -> Res<Configuration> {
    let mut o = Obj::root(node, KIND)?;
    o.type_meta()?;
    let mut c = Configuration {
        parallelism: o.i32("parallelism")?,
        ..Configuration::default()
    };
    if let Some(le) = o.with("leaderElection", |f| leader_election(f, strict))? {
        c.leader_election = le;
    }
    c.client_connection_burst = o
        .with("clientConnection", |f| client_connection(f, strict))?
        .unwrap_or(0);
    o.bool("enableProfiling")?;
    o.bool("enableContentionProfiling")?;
    c.percentage_of_nodes_to_score = o.i32("percentageOfNodesToScore")?;
    c.pod_initial_backoff_seconds = o.i64("podInitialBackoffSeconds")?;
    c.pod_max_backoff_seconds = o.i64("podMaxBackoffSeconds")?;
    c.profiles = o
        .with("profiles", |f| {
            f.items("[]v1.KubeSchedulerProfile")?
                .iter()
                .map(|i| profile(i.field(), strict))
                .collect()
        })?
        .unwrap_or_default();
    c.extenders = o
        .with("extenders", |f| {
            f.items("[]v1.Extender")?
                .iter()
                .map(|i| extender(i.field(), strict))
                .collect()
        })?
        .unwrap_or_default();
    o.bool("delayCacheUntilActive")?;
    o.finish(strict);
    Ok(c)
}

fn leader_election(f: Field, strict: &mut Strict) -> Res<LeaderElection> {
    let mut o = f.object(
        "LeaderElectionConfiguration",
        "v1alpha1.LeaderElectionConfiguration",
    )?;
    let le = LeaderElection {
        leader_elect: o.bool("leaderElect")?,
        lease_duration: o.duration("leaseDuration")?.unwrap_or(0),
        renew_deadline: o.duration("renewDeadline")?.unwrap_or(0),
        retry_period: o.duration("retryPeriod")?.unwrap_or(0),
        resource_lock: o.string("resourceLock")?.unwrap_or_default(),
        resource_name: o.string("resourceName")?.unwrap_or_default(),
        resource_namespace: o.string("resourceNamespace")?.unwrap_or_default(),
    };
    o.finish(strict);
    Ok(le)
}

fn client_connection(f: Field, strict: &mut Strict) -> Res<i32> {
    let mut o = f.object(
        "ClientConnectionConfiguration",
        "v1alpha1.ClientConnectionConfiguration",
    )?;
    o.string("kubeconfig")?;
    o.string("acceptContentTypes")?;
    o.string("contentType")?;
    o.with("qps", |f| f.f64("float32"))?;
    let burst = o.i32("burst")?.unwrap_or(0);
    o.finish(strict);
    Ok(burst)
}

fn profile(f: Field, strict: &mut Strict) -> Res<Profile> {
    let mut o = f.object("KubeSchedulerProfile", "v1.KubeSchedulerProfile")?;
    let p = Profile {
        scheduler_name: o.string("schedulerName")?,
        percentage_of_nodes_to_score: o.i32("percentageOfNodesToScore")?,
        plugins: o.with("plugins", |f| plugins(f, strict))?,
        plugin_config: o
            .with("pluginConfig", |f| {
                f.items("[]v1.PluginConfig")?
                    .iter()
                    .map(|i| {
                        let mut o = i.field().object("PluginConfig", "v1.PluginConfig")?;
                        let pc = PluginConfig {
                            name: o.string("name")?.unwrap_or_default(),
                            args: o.with("args", |f| Ok(f.node.clone()))?,
                        };
                        o.finish(strict);
                        Ok(pc)
                    })
                    .collect()
            })?
            .unwrap_or_default(),
    };
    o.finish(strict);
    Ok(p)
}

fn plugins(f: Field, strict: &mut Strict) -> Res<ProfilePlugins> {
    let mut o = f.object("Plugins", "v1.Plugins")?;
    let mut p = ProfilePlugins::default();
    for e in ExtensionPoint::ALL {
        if let Some(set) = o.with(e.field(), |f| plugin_set(f, strict))? {
            *p.point_mut(e) = set;
        }
    }
    if let Some(set) = o.with("multiPoint", |f| plugin_set(f, strict))? {
        p.multi_point = set;
    }
    o.finish(strict);
    Ok(p)
}

fn plugin_set(f: Field, strict: &mut Strict) -> Res<PluginSet> {
    let mut o = f.object("PluginSet", "v1.PluginSet")?;
    let mut list = |o: &mut Obj, key: &str| -> Res<Vec<PluginRef>> {
        Ok(o.with(key, |f| {
            f.items("[]v1.Plugin")?
                .iter()
                .map(|i| {
                    let mut o = i.field().object("Plugin", "v1.Plugin")?;
                    let p = PluginRef {
                        name: o.string("name")?.unwrap_or_default(),
                        weight: o.i32("weight")?,
                    };
                    o.finish(strict);
                    Ok(p)
                })
                .collect()
        })?
        .unwrap_or_default())
    };
    let set = PluginSet {
        enabled: list(&mut o, "enabled")?,
        disabled: list(&mut o, "disabled")?
            .into_iter()
            .map(|p| p.name)
            .collect(),
    };
    o.finish(strict);
    Ok(set)
}

fn extender(f: Field, strict: &mut Strict) -> Res<ExtenderConfig> {
    let mut o = f.object("Extender", "v1.Extender")?;
    let mut e = ExtenderConfig {
        url_prefix: o.string("urlPrefix")?.unwrap_or_default(),
        filter_verb: o.string("filterVerb")?.unwrap_or_default(),
        preempt_verb: o.string("preemptVerb")?.unwrap_or_default(),
        prioritize_verb: o.string("prioritizeVerb")?.unwrap_or_default(),
        weight: o.i64("weight")?.unwrap_or(0),
        bind_verb: o.string("bindVerb")?.unwrap_or_default(),
        enable_https: o.bool("enableHTTPS")?.unwrap_or(false),
        ..ExtenderConfig::default()
    };
    e.tls_config = o.with("tlsConfig", |f| {
        let mut t = f.object("ExtenderTLSConfig", "v1.ExtenderTLSConfig")?;
        let mut text = |key: &str| t.string(key).map(Option::unwrap_or_default);
        let mut tls = TlsConfig {
            server_name: text("serverName")?,
            cert_file: text("certFile")?,
            key_file: text("keyFile")?,
            ca_file: text("caFile")?,
            ..TlsConfig::default()
        };
        tls.insecure = t.bool("insecure")?.unwrap_or(false);
        tls.cert_data = t.bytes("certData")?.unwrap_or_default();
        tls.key_data = t.bytes("keyData")?.unwrap_or_default();
        tls.ca_data = t.bytes("caData")?.unwrap_or_default();
        t.finish(strict);
        Ok(tls)
    })?;
    e.http_timeout = o.duration("httpTimeout")?.unwrap_or(0);
    e.node_cache_capable = o.bool("nodeCacheCapable")?.unwrap_or(false);
    e.managed_resources = o
        .with("managedResources", |f| {
            f.items("[]v1.ExtenderManagedResource")?
                .iter()
                .map(|i| {
                    let mut r = i
                        .field()
                        .object("ExtenderManagedResource", "v1.ExtenderManagedResource")?;
                    let m = ManagedResource {
                        name: r.string("name")?.unwrap_or_default(),
                        ignored_by_scheduler: r.bool("ignoredByScheduler")?.unwrap_or(false),
                    };
                    r.finish(strict);
                    Ok(m)
                })
                .collect()
        })?
        .unwrap_or_default();
    e.ignorable = o.bool("ignorable")?.unwrap_or(false);
    o.finish(strict);
    Ok(e)
}

/// `mergePluginSet`: the defaults less the disabled ones (all with `*`), a default the custom
/// set re-enables replaced in place, then the other custom plugins.
fn merge_plugin_set(default: &PluginSet, custom: &PluginSet) -> PluginSet {
    let disabled: Vec<String> = custom
        .disabled
        .iter()
        .chain(&default.disabled)
        .cloned()
        .collect();
    let mut enabled = Vec::new();
    let mut replaced = vec![false; custom.enabled.len()];
    if !disabled.iter().any(|d| d == "*") {
        for d in &default.enabled {
            if disabled.contains(&d.name) {
                continue;
            }
            // The last custom entry of a name wins, as a Go map keeps the last one written.
            match custom.enabled.iter().rposition(|c| c.name == d.name) {
                Some(i) => {
                    replaced[i] = true;
                    enabled.push(custom.enabled[i].clone());
                }
                None => enabled.push(d.clone()),
            }
        }
    }
    enabled.extend(
        custom
            .enabled
            .iter()
            .zip(&replaced)
            .filter(|(_, r)| !**r)
            .map(|(c, _)| c.clone()),
    );
    PluginSet { enabled, disabled }
}

/// `mergePlugins` with the release's default plugins.
pub fn merge_with_defaults(
    custom: Option<&ProfilePlugins>,
    release: ReleaseChoice,
) -> ProfilePlugins {
    let mut merged = profile::default_plugins(release);
    if let Some(custom) = custom {
        merged.multi_point = merge_plugin_set(&merged.multi_point, &custom.multi_point);
        for e in ExtensionPoint::ALL {
            *merged.point_mut(e) = merge_plugin_set(merged.point(e), custom.point(e));
        }
    }
    merged
}

const NS: i64 = 1_000_000_000;

impl Configuration {
    /// `SetDefaults_KubeSchedulerConfiguration`, less the per-profile plugin arguments.
    pub fn set_defaults(&mut self, release: ReleaseChoice) {
        self.parallelism.get_or_insert(16);
        if self.profiles.is_empty() {
            self.profiles.push(Profile::default());
        }
        if let [only] = self.profiles.as_mut_slice() {
            only.scheduler_name
                .get_or_insert_with(|| DEFAULT_SCHEDULER_NAME.to_string());
        }
        for p in &mut self.profiles {
            p.plugins = Some(merge_with_defaults(p.plugins.as_ref(), release));
        }
        self.percentage_of_nodes_to_score.get_or_insert(0);
        let le = &mut self.leader_election;
        if le.resource_lock.is_empty() {
            le.resource_lock = "leases".into();
        }
        if le.resource_namespace.is_empty() {
            le.resource_namespace = "kube-system".into();
        }
        if le.resource_name.is_empty() {
            le.resource_name = "kube-scheduler".into();
        }
        for (d, default) in [
            (&mut le.lease_duration, 15),
            (&mut le.renew_deadline, 10),
            (&mut le.retry_period, 2),
        ] {
            if *d == 0 {
                *d = default * NS;
            }
        }
        le.leader_elect.get_or_insert(true);
        if self.client_connection_burst == 0 {
            self.client_connection_burst = 100;
        }
        self.pod_initial_backoff_seconds.get_or_insert(1);
        self.pod_max_backoff_seconds.get_or_insert(10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(enabled: &[(&str, Option<i32>)], disabled: &[&str]) -> PluginSet {
        PluginSet {
            enabled: enabled.iter().map(|&(n, w)| PluginRef::new(n, w)).collect(),
            disabled: disabled.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn merge_replaces_in_place_and_appends() {
        let default = set(&[("A", None), ("B", Some(2)), ("C", None)], &[]);
        let custom = set(&[("D", None), ("B", Some(5))], &["C"]);
        let merged = merge_plugin_set(&default, &custom);
        assert_eq!(
            merged,
            set(&[("A", None), ("B", Some(5)), ("D", None)], &["C"])
        );
    }

    #[test]
    fn merge_star_drops_every_default() {
        let default = set(&[("A", None), ("B", None)], &[]);
        let custom = set(&[("B", Some(3))], &["*"]);
        assert_eq!(
            merge_plugin_set(&default, &custom),
            set(&[("B", Some(3))], &["*"])
        );
    }

    #[test]
    fn defaults_name_a_single_profile_only() {
        let mut one = Configuration::default();
        one.set_defaults(crate::release::Release::OLDEST.into());
        assert_eq!(
            one.profiles[0].scheduler_name.as_deref(),
            Some("default-scheduler")
        );
        assert_eq!(one.parallelism, Some(16));
        assert_eq!(one.leader_election.lease_duration, 15 * NS);
        let mut two = Configuration {
            profiles: vec![Profile::default(), Profile::default()],
            ..Configuration::default()
        };
        two.set_defaults(crate::release::Release::OLDEST.into());
        assert!(two.profiles.iter().all(|p| p.scheduler_name.is_none()));
    }
}
