//! The scheduler a command models: the kube-scheduler release, the profiles from `--config` or
//! the release's defaults, and which profile serves a pod.

use super::Failure;
use super::render::{say, warn};
use super::source::Source;
use crate::cli::{GlobalArgs, SchedulerArgs};
use crate::framework::runner::Framework;
use crate::model::cluster::Cluster;
use crate::model::parse::LoadOptions;
use crate::plugins::registry;
use crate::release::evidence::Evidence;
use crate::release::gates::{GateError, Gates};
use crate::release::{Release, ReleaseChoice, ReleaseError};
use crate::source::{events, live};
use anyhow::anyhow;

/// The release to model: `--scheduler-version`, else the version the live server or the
/// snapshot reports, else what the dump's kubelets and FailedScheduling events point to; with
/// `--feature-gates` read as that release's kube-scheduler reads them. An inferred release, its
/// evidence and any warning are said on stderr.
pub fn release(
    args: &SchedulerArgs,
    source: &Source,
    cluster: &Cluster,
) -> Result<ReleaseChoice, Failure> {
    let mut choice = ReleaseChoice::choose(
        args.scheduler_version.as_deref(),
        cluster.meta.server_version.as_deref(),
        matches!(source, Source::Live(_)),
        evidence(cluster),
    )
    .map_err(|e| match e {
        ReleaseError::Unsupported(_) if args.scheduler_version.is_none() => {
            let reported = match &cluster.meta.server_version {
                Some(v) => format!("the cluster reports {v}"),
                None => "the cluster's kubelets say so".to_string(),
            };
            Failure::bad_input(anyhow!("{reported}: {e}"))
        }
        e => Failure::bad_input(e),
    })?;
    choice.gates = gates(args, choice.release)?;
    match (choice.inferred(), choice.warning()) {
        (true, Some(w)) => warn(&format!("{}: {w}", choice.describe())),
        (true, None) => say("note", &choice.describe()),
        (false, Some(w)) => warn(&w),
        (false, None) => {}
    }
    Ok(choice)
}

/// The gates in force for `release`: `--feature-gates` as its kube-scheduler reads them (its
/// warnings said), and only gates whose effect is modelled (a note for those that cannot change
/// the answer).
pub fn gates(args: &SchedulerArgs, release: Release) -> Result<Gates, Failure> {
    let flag = |e: GateError| {
        Failure::bad_input(anyhow!(
            "--feature-gates {:?}: {e}",
            args.feature_gates.join(",")
        ))
    };
    let (gates, warnings) = Gates::parse(release, &args.feature_gates).map_err(flag)?;
    for w in warnings {
        warn(&format!("kube-scheduler {release} logs: {w}"));
    }
    for note in gates.modelled().map_err(flag)? {
        warn(&note);
    }
    Ok(gates)
}

/// What the cluster says of its release: its nodes' kubelet versions, and its FailedScheduling
/// messages, oldest first.
fn evidence(cluster: &Cluster) -> Evidence {
    let mut failed: Vec<_> = cluster
        .events
        .iter()
        .filter(|e| e.reason.as_deref() == Some(events::FAILED_SCHEDULING))
        .collect();
    failed.sort_by_key(|e| events::last_seen(e));
    Evidence::read(
        cluster
            .nodes
            .iter()
            .filter_map(|n| n.kubelet_version.map(|v| v.as_str())),
        failed.iter().filter_map(|e| e.message.as_deref()),
    )
}

/// How the cluster is parsed: with `--call-extenders`, nodes and pods keep their API objects,
/// which extenders are sent.
pub fn load_options(args: &SchedulerArgs) -> LoadOptions {
    LoadOptions {
        keep_api_objects: args.call_extenders,
    }
}

/// The profiles: from `--config`, or the release's default; with `--call-extenders`, each with
/// the clients of the configuration's extenders.
pub fn frameworks(
    global: &GlobalArgs,
    args: &SchedulerArgs,
    release: ReleaseChoice,
) -> Result<Vec<Framework>, Failure> {
    build_frameworks(global, args, release, true)
}

/// The same profiles under another release, for a comparison: what `frameworks` warned of is
/// not said again.
pub fn frameworks_of(
    global: &GlobalArgs,
    args: &SchedulerArgs,
    release: ReleaseChoice,
) -> Result<Vec<Framework>, Failure> {
    build_frameworks(global, args, release, false)
}

fn build_frameworks(
    global: &GlobalArgs,
    args: &SchedulerArgs,
    release: ReleaseChoice,
    say: bool,
) -> Result<Vec<Framework>, Failure> {
    let mut fws = match &args.config {
        None => vec![registry::default_framework(release)],
        Some(path) if path == std::path::Path::new("-") => {
            return Err(Failure::bad_input(anyhow!(
                "--config - is not supported: stdin is for --snapshot and -f; give the configuration's file name"
            )));
        }
        Some(path) => {
            let cfg = crate::config::load(path, release).map_err(Failure::bad_input)?;
            registry::frameworks(&cfg, release).map_err(|e| Failure::bad_input(e.at(path)))?
        }
    };
    // Every profile has the configuration's extenders.
    let extenders = fws.first().map(|f| f.extenders.clone()).unwrap_or_default();
    let clients = if !args.call_extenders {
        if !extenders.is_empty() && say {
            warn(&format!(
                "the configuration has {} scheduler extender(s), not called without --call-extenders: kube-scheduler's answer may differ",
                extenders.len()
            ));
        }
        Vec::new()
    } else {
        let request_timeout = match &global.request_timeout {
            Some(s) => live::parse_duration(s).map_err(|e| Failure::bad_input(anyhow!(e)))?,
            None => None,
        };
        let path = args.config.as_deref().unwrap_or(std::path::Path::new(""));
        crate::extender::clients(&extenders, request_timeout)
            .map_err(|e| Failure::bad_input(anyhow!("{}: {e}", path.display())))?
    };
    for fw in &mut fws {
        fw.parallel = !args.serial;
        fw.extender_clients = clients.clone();
    }
    Ok(fws)
}

/// The profile that serves `scheduler_name`, as kube-scheduler picks it.
pub fn profile_for<'a>(
    fws: &'a [Framework],
    scheduler_name: &str,
) -> Result<&'a Framework, Failure> {
    fws.iter().find(|f| f.profile == scheduler_name).ok_or_else(|| {
        let names: Vec<&str> = fws.iter().map(|f| f.profile.as_str()).collect();
        Failure::bad_input(anyhow!(
            "the pod's schedulerName {scheduler_name:?} matches no profile ({}): kube-scheduler would ignore this pod",
            names.join(", ")
        ))
    })
}
