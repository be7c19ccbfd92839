//! The configuration's scheduler extenders (`schedulerapi.Extender`): what each one is sent,
//! which verbs it serves and how it is reached.

use crate::model::intern::Str;
use crate::model::pod::Pod;
use std::sync::OnceLock;
use std::time::Duration;

/// `DefaultExtenderTimeout`: the `httpTimeout` of an extender that sets none.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(5);

/// `extenders[].managedResources[]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagedResource {
    pub name: String,
    /// NodeResourcesFit ignores the resource: the extender accounts for it.
    pub ignored_by_scheduler: bool,
}

/// `extenders[].tlsConfig`; the `*Data` fields are the bytes the configuration's base64 holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsConfig {
    pub insecure: bool,
    pub server_name: String,
    pub cert_file: String,
    pub key_file: String,
    pub ca_file: String,
    pub cert_data: Vec<u8>,
    pub key_data: Vec<u8>,
    pub ca_data: Vec<u8>,
}

/// One entry of the configuration's `extenders`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtenderConfig {
    pub url_prefix: String,
    pub filter_verb: String,
    pub preempt_verb: String,
    pub prioritize_verb: String,
    pub weight: i64,
    pub bind_verb: String,
    pub enable_https: bool,
    pub tls_config: Option<TlsConfig>,
    /// `httpTimeout` in nanoseconds; 0 (unset) means `DEFAULT_HTTP_TIMEOUT`.
    pub http_timeout: i64,
    pub node_cache_capable: bool,
    pub managed_resources: Vec<ManagedResource>,
    pub ignorable: bool,
    /// `url_prefix` as the `'static` name statuses and scores carry, made once.
    pub(crate) name: OnceLock<&'static str>,
}

impl ExtenderConfig {
    /// `Name()`: upstream names an extender by its URL prefix, in scores and statuses alike.
    pub fn name(&self) -> &'static str {
        self.name
            .get_or_init(|| Str::new(&self.url_prefix).as_str())
    }

    pub fn is_filter(&self) -> bool {
        !self.filter_verb.is_empty()
    }

    pub fn is_prioritizer(&self) -> bool {
        !self.prioritize_verb.is_empty()
    }

    pub fn supports_preemption(&self) -> bool {
        !self.preempt_verb.is_empty()
    }

    pub fn is_binder(&self) -> bool {
        !self.bind_verb.is_empty()
    }

    /// The HTTP client's timeout: `Client.Timeout` waits forever when it is negative.
    pub fn timeout(&self) -> Option<Duration> {
        match self.http_timeout {
            0 => Some(DEFAULT_HTTP_TIMEOUT),
            t if t < 0 => None,
            t => Some(Duration::from_nanos(t as u64)),
        }
    }

    /// `IsInterested`: an extender with managed resources only hears about pods whose containers
    /// or init containers name one of them. Requests stand for limits too: API defaulting copies
    /// every limit into the requests.
    pub fn is_interested(&self, pod: &Pod) -> bool {
        if self.managed_resources.is_empty() {
            return true;
        }
        let r = &pod.resources;
        r.containers
            .iter()
            .chain(&r.init_containers)
            .flat_map(|c| c.requests.iter())
            .any(|(name, _)| {
                self.managed_resources
                    .iter()
                    .any(|m| m.name == name.as_str())
            })
    }
}

/// The extenders in the order kube-scheduler calls them (`buildExtenders`): as configured, the
/// ignorable ones moved to the end.
pub fn scheduler_order(mut extenders: Vec<ExtenderConfig>) -> Vec<ExtenderConfig> {
    extenders.sort_by_key(|e| e.ignorable);
    extenders
}
