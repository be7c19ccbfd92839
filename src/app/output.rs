//! What every command shares: reading the cluster, choosing the profile, colours, and printing.

use super::Failure;
use crate::cli::{ColorChoice, GlobalArgs, Output};
use crate::explain::table::{Style, TableOptions};
use crate::framework::runner::Framework;
use crate::model::cluster::Cluster;
use crate::source::file;
use anyhow::{Context, anyhow};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

/// Reads the cluster from `--snapshot`, printing one warning line per skipped kind.
pub fn load_cluster(global: &GlobalArgs) -> Result<Arc<Cluster>, Failure> {
    let Some(path) = &global.snapshot else {
        return Err(Failure::cluster(anyhow!(
            "no --snapshot given, and this build cannot read a live cluster yet: pass --snapshot FILE"
        )));
    };
    let cluster = file::load(path).map_err(Failure::bad_input)?;
    for w in &cluster.warnings {
        eprintln!("warning: {w}");
    }
    Ok(Arc::new(cluster))
}

/// The profiles: from `--config`, or the v1 default.
pub fn frameworks(config: Option<&Path>, serial: bool) -> Result<Vec<Framework>, Failure> {
    let mut fws = match config {
        None => vec![crate::framework::profile::default_framework()],
        Some(path) => {
            let loaded = crate::config::load(path).map_err(Failure::bad_input)?;
            for w in &loaded.warnings {
                eprintln!("warning: {w}");
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

pub fn style(global: &GlobalArgs) -> Style {
    let color = match global.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::env::var("TERM").map_or(true, |t| t != "dumb")
        }
    };
    Style { color }
}

/// The width tables wrap to: $COLUMNS, else the terminal's, else 80 (wide: no limit).
pub fn table_options(global: &GlobalArgs) -> TableOptions {
    let wide = global.output == Output::Wide;
    let from_env = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<u16>().ok());
    let from_tty = if std::io::stdout().is_terminal() {
        comfy_table::Table::new().width()
    } else {
        None
    };
    let width = from_env.or(from_tty).unwrap_or(if wide { 400 } else { 80 });
    TableOptions {
        wide,
        width,
        style: style(global),
    }
}

/// Prints a serialisable value as JSON or YAML.
pub fn print_structured<T: Serialize>(value: &T, output: Output) -> Result<(), Failure> {
    let text = match output {
        Output::Yaml => serde_saphyr::to_string(value)
            .context("rendering YAML")
            .map_err(Failure::bad_input)?,
        _ => {
            let mut s = serde_json::to_string_pretty(value)
                .context("rendering JSON")
                .map_err(Failure::bad_input)?;
            s.push('\n');
            s
        }
    };
    print!("{text}");
    Ok(())
}
