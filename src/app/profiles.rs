//! The scheduler profiles a command runs: from `--config` or the v1 defaults, and which one
//! serves a pod.

use super::Failure;
use crate::framework::runner::Framework;
use anyhow::anyhow;
use std::path::Path;

/// The profiles: from `--config`, or the v1 default.
pub fn frameworks(config: Option<&Path>, serial: bool) -> Result<Vec<Framework>, Failure> {
    let mut fws = match config {
        None => vec![crate::framework::profile::default_framework()],
        Some(path) if path == Path::new("-") => {
            return Err(Failure::bad_input(anyhow!(
                "--config - is not supported: stdin is for --snapshot and -f; give the configuration's file name"
            )));
        }
        Some(path) => {
            let loaded = crate::config::load(path).map_err(Failure::bad_input)?;
            for w in &loaded.warnings {
                super::render::warn(w);
            }
            loaded.frameworks
        }
    };
    for fw in &mut fws {
        fw.parallel = !serial;
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
