//! The scheduler a command models: the kube-scheduler release, the profiles from `--config` or
//! the release's defaults, and which profile serves a pod.

use super::Failure;
use super::source::Source;
use crate::cli::{GlobalArgs, SchedulerArgs};
use crate::framework::runner::Framework;
use crate::model::cluster::Cluster;
use crate::model::parse::LoadOptions;
use crate::plugins::registry;
use crate::release::{ReleaseChoice, ReleaseError};
use crate::source::live;
use anyhow::anyhow;

/// The release to model: `--scheduler-version`, else the version the live server or the
/// snapshot reports, else the newest modelled.
pub fn release(
    args: &SchedulerArgs,
    source: &Source,
    cluster: &Cluster,
) -> Result<ReleaseChoice, Failure> {
    ReleaseChoice::choose(
        args.scheduler_version.as_deref(),
        cluster.meta.server_version.as_deref(),
        matches!(source, Source::Live(_)),
    )
    .map_err(|e| match e {
        ReleaseError::Unsupported(_) if args.scheduler_version.is_none() => {
            Failure::bad_input(anyhow!(
                "the cluster reports {}: {e}",
                cluster.meta.server_version.as_deref().unwrap_or_default()
            ))
        }
        e => Failure::bad_input(e),
    })
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
    let mut fws = match &args.config {
        None => vec![registry::default_framework(release)],
        Some(path) if path == std::path::Path::new("-") => {
            return Err(Failure::bad_input(anyhow!(
                "--config - is not supported: stdin is for --snapshot and -f; give the configuration's file name"
            )));
        }
        Some(path) => {
            let cfg = crate::config::load(path, release.release).map_err(Failure::bad_input)?;
            registry::frameworks(&cfg, release).map_err(|e| Failure::bad_input(e.at(path)))?
        }
    };
    // Every profile has the configuration's extenders.
    let extenders = fws.first().map(|f| f.extenders.clone()).unwrap_or_default();
    let clients = if !args.call_extenders {
        if !extenders.is_empty() {
            super::render::warn(&format!(
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
