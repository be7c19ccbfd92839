//! KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): parse, default, validate, and
//! build one `Framework` per profile.

use crate::framework::runner::Framework;
use std::path::Path;

/// Reads a configuration file into its profiles.
pub fn load(path: &Path) -> anyhow::Result<Vec<Framework>> {
    anyhow::bail!(
        "{}: KubeSchedulerConfiguration files are not supported by this build yet",
        path.display()
    )
}
