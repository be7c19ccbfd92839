//! `ValidateKubeSchedulerConfiguration` on the defaulted configuration.

use super::Profile;
use super::args::Args;
use super::duration;
use super::profile::{ExtensionPoint, PluginSet};
use super::v1::Configuration;
use crate::model::field::{FieldError, Path, Value, qualified_name_errors};
use crate::model::resource;
use crate::release::Features;

/// In-tree plugins removed from v1; naming one is an error.
const REMOVED_PLUGINS: [&str; 4] = [
    "AzureDiskLimits",
    "CinderLimits",
    "EBSLimits",
    "GCEPDLimits",
];

fn removed_plugin(path: &Path, name: &str) -> FieldError {
    let v = super::v1::GROUP_VERSION;
    FieldError::invalid(
        path,
        name,
        &format!("was invalid in version {v:?} (KubeSchedulerConfiguration is version {v:?})"),
    )
}

fn percentage(path: &Path, p: Option<i32>) -> Option<FieldError> {
    p.filter(|p| !(0..=100).contains(p))
        .map(|p| FieldError::invalid(path, p, "not in valid range [0-100]"))
}

fn duration_value(ns: i64) -> Value {
    Value::json(&duration::format(ns))
}

pub fn validate(cfg: &Configuration, profiles: &[Profile], features: &Features) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if cfg.client_connection_burst < 0 {
        errs.push(FieldError::invalid(
            &Path::new("clientConnection").child("burst"),
            cfg.client_connection_burst,
            "must be non-negative",
        ));
    }
    let le = &cfg.leader_election;
    let le_path = Path::new("leaderElection");
    let leader_elect = le.leader_elect.unwrap_or(true);
    if leader_elect {
        for (name, d) in [
            ("leaseDuration", le.lease_duration),
            ("renewDeadline", le.renew_deadline),
            ("retryPeriod", le.retry_period),
        ] {
            if d <= 0 {
                errs.push(FieldError::invalid(
                    &le_path.child(name),
                    duration_value(d),
                    "must be greater than zero",
                ));
            }
        }
        if le.lease_duration <= le.renew_deadline {
            errs.push(FieldError::invalid(
                &le_path.child("leaseDuration"),
                duration_value(le.renew_deadline),
                "must be greater than `RenewDeadline`",
            ));
        }
        if le.resource_lock != "leases" {
            errs.push(FieldError::invalid(
                &le_path.child("resourceLock"),
                &le.resource_lock,
                "resourceLock value must be \"leases\"",
            ));
        }
    }
    let parallelism = cfg.parallelism.unwrap_or(16);
    if parallelism <= 0 {
        errs.push(FieldError::invalid(
            &Path::new("parallelism"),
            parallelism,
            "should be an integer value greater than zero",
        ));
    }

    let profiles_path = Path::new("profiles");
    for (i, p) in profiles.iter().enumerate() {
        let path = profiles_path.index(i);
        if p.scheduler_name.is_empty() {
            errs.push(FieldError::required(&path.child("schedulerName"), ""));
        }
        errs.extend(percentage(
            &path.child("percentageOfNodesToScore"),
            p.percentage_of_nodes_to_score,
        ));
        errs.extend(validate_plugin_config(&path, p, features));
        if profiles[..i]
            .iter()
            .any(|q| q.scheduler_name == p.scheduler_name)
        {
            // The duplicate's value is a field.Path, whose JSON form is an empty object.
            errs.push(FieldError::duplicate(
                &path.child("schedulerName"),
                Value::Json("{}".into()),
            ));
        }
    }
    if !profiles.is_empty() {
        errs.extend(validate_common_queue_sort(&profiles_path, profiles));
    }
    errs.extend(percentage(
        &Path::new("percentageOfNodesToScore"),
        cfg.percentage_of_nodes_to_score,
    ));
    let initial = cfg.pod_initial_backoff_seconds.unwrap_or(1);
    let max = cfg.pod_max_backoff_seconds.unwrap_or(10);
    if initial <= 0 {
        errs.push(FieldError::invalid(
            &Path::new("podInitialBackoffSeconds"),
            initial,
            "must be greater than 0",
        ));
    }
    if max < initial {
        errs.push(FieldError::invalid(
            &Path::new("podMaxBackoffSeconds"),
            max,
            "must be greater than or equal to PodInitialBackoffSeconds",
        ));
    }
    errs.extend(validate_extenders(cfg));
    errs
}

fn validate_plugin_config(path: &Path, p: &Profile, features: &Features) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let plugins_path = path.child("plugins");
    for e in ExtensionPoint::ALL {
        for (i, pl) in p.plugins.point(e).enabled.iter().enumerate() {
            if REMOVED_PLUGINS.contains(&pl.name.as_str()) {
                errs.push(removed_plugin(
                    &plugins_path.child(e.field()).child("enabled").index(i),
                    &pl.name,
                ));
            }
        }
    }
    for (i, c) in p.plugin_config.iter().enumerate() {
        let pc_path = path.child("pluginConfig").index(i);
        if p.plugin_config[..i].iter().any(|prev| prev.name == c.name) {
            errs.push(FieldError::duplicate(&pc_path, &c.name));
        }
        if REMOVED_PLUGINS.contains(&c.name.as_str()) {
            errs.push(removed_plugin(&pc_path, &c.name));
        } else {
            errs.extend(c.args.validate_in_config(&pc_path.child("args"), features));
        }
    }
    errs
}

/// The internal `PluginSet` as JSON (no json tags: Go field names; disabled weights are 0).
fn plugin_set_json(s: &PluginSet) -> Value {
    let list = |items: Vec<serde_json::Value>| {
        if items.is_empty() {
            serde_json::Value::Null
        } else {
            items.into()
        }
    };
    let enabled = s
        .enabled
        .iter()
        .map(|p| serde_json::json!({"Name": p.name, "Weight": p.weight.unwrap_or(0)}))
        .collect();
    let disabled = s
        .disabled
        .iter()
        .map(|n| serde_json::json!({"Name": n, "Weight": 0}))
        .collect();
    // Field order matters in the message: Enabled, then Disabled.
    Value::Json(format!(
        "{{\"Enabled\":{},\"Disabled\":{}}}",
        list(enabled),
        list(disabled)
    ))
}

fn same_plugin_set(a: &PluginSet, b: &PluginSet) -> bool {
    let weights = |s: &PluginSet| {
        s.enabled
            .iter()
            .map(|p| (p.name.clone(), p.weight.unwrap_or(0)))
            .collect::<Vec<_>>()
    };
    weights(a) == weights(b) && a.disabled == b.disabled
}

fn args_json(a: &Args, raw: Option<&super::node::Node>) -> Value {
    match (a, raw) {
        (_, Some(n)) => Value::Json(n.to_json().to_string()),
        (Args::Raw(None), None) => Value::Json("null".into()),
        (_, None) => Value::Json("{}".into()),
    }
}

fn validate_common_queue_sort(path: &Path, profiles: &[Profile]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let canon = profiles[0].plugins.point(ExtensionPoint::QueueSort);
    let queue_sort = canon.enabled.first().map(|p| p.name.as_str());
    if canon.enabled.len() > 1 {
        errs.push(FieldError::invalid(
            &path
                .index(0)
                .child("plugins")
                .child("queueSort")
                .child("Enabled"),
            canon.enabled.len() as i64,
            "only one queue sort plugin can be enabled",
        ));
    }
    let queue_sort_args = queue_sort
        .and_then(|name| profiles[0].plugin_config.iter().find(|c| c.name == name))
        .map(|c| &c.args);
    for (i, p) in profiles.iter().enumerate().skip(1) {
        let curr = p.plugins.point(ExtensionPoint::QueueSort);
        if !same_plugin_set(canon, curr) {
            errs.push(FieldError::invalid(
                &path.index(i).child("plugins").child("queueSort"),
                plugin_set_json(curr),
                "must be the same for all profiles",
            ));
        }
        for c in &p.plugin_config {
            let nil = Args::Raw(None);
            if c.name == queue_sort.unwrap_or("") && *queue_sort_args.unwrap_or(&nil) != c.args {
                errs.push(FieldError::invalid(
                    &path.index(i).child("pluginConfig").child("args"),
                    args_json(&c.args, c.raw.as_ref()),
                    "queueSort must be the same for all profiles",
                ));
            }
        }
    }
    errs
}

fn validate_extenders(cfg: &Configuration) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("extenders");
    let mut binders = 0;
    let mut managed: Vec<&str> = Vec::new();
    for (i, e) in cfg.extenders.iter().enumerate() {
        let p = path.index(i);
        if !e.prioritize_verb.is_empty() && e.weight <= 0 {
            errs.push(FieldError::invalid(
                &p.child("weight"),
                e.weight,
                "must have a positive weight applied to it",
            ));
        }
        if !e.bind_verb.is_empty() {
            binders += 1;
        }
        for (j, r) in e.managed_resources.iter().enumerate() {
            let np = p.child("managedResources").index(j).child("name");
            let name_errors = qualified_name_errors(&r.name);
            if !name_errors.is_empty() {
                errs.extend(
                    name_errors
                        .iter()
                        .map(|m| FieldError::invalid(&np, &r.name, m)),
                );
            } else if !resource::is_extended(&r.name) {
                errs.push(FieldError::invalid(
                    &np,
                    &r.name,
                    "is an invalid extended resource name",
                ));
            }
            if managed.contains(&r.name.as_str()) {
                errs.push(FieldError::invalid(
                    &np,
                    &r.name,
                    "duplicate extender managed resource name",
                ));
            }
            managed.push(&r.name);
        }
    }
    if binders > 1 {
        errs.push(FieldError::invalid(
            &path,
            Value::Str(format!("found {binders} extenders implementing bind")),
            "only one extender can implement bind",
        ));
    }
    errs
}
