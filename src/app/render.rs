//! How output looks: colours, table width, and JSON/YAML printing.

use super::Failure;
use crate::cli::{ColorChoice, GlobalArgs, Output};
use crate::term::{Style, TableOptions};
use anyhow::{Context, anyhow};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::IsTerminal;

/// Colours on or off, from `--color`, `NO_COLOR` and the terminal.
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

/// The width tables wrap to: $COLUMNS, else the terminal's, else 80 (wide: no limit), and never
/// less than 40. However narrow, a column is never narrower than its minimum: the table is wider
/// instead.
pub fn table_options(global: &GlobalArgs) -> TableOptions {
    let wide = global.output == Output::Wide;
    // 0 (or anything not a positive number) is how shells say they do not know.
    let from_env = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|&c| c > 0);
    let from_tty = terminal_size::terminal_size_of(std::io::stdout())
        .map(|(w, _)| w.0)
        .filter(|&c| c > 0);
    // Narrower than this, prose would wrap a word or two to a line: a table too wide for the
    // terminal reads better than one three screens high.
    const NARROWEST: u16 = 40;
    let width = from_env
        .or(from_tty)
        .unwrap_or(if wide { 400 } else { 80 })
        .max(NARROWEST);
    TableOptions {
        wide,
        width,
        style: style(global),
        headers: !global.no_headers,
    }
}

/// Prints what a person reads: through the terminal edge (cluster strings escaped, styles made
/// colours or dropped).
pub fn print_text(global: &GlobalArgs, text: &str) {
    print!("{}", crate::term::finish(text, style(global).color));
}

/// A warning on stderr, its cluster strings escaped.
pub fn warn(text: &str) {
    eprintln!("warning: {}", crate::term::escape(text));
}

/// Prints a serialisable value as JSON or YAML, exactly.
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

/// `-o name`: a `TYPE/NAME` line per object, as kubectl get prints them (the names escaped).
pub fn print_names<'a>(kind: &str, names: impl IntoIterator<Item = &'a str>) {
    let mut out = String::new();
    for name in names {
        let _ = writeln!(out, "{kind}/{}", crate::term::escape(name));
    }
    print!("{out}");
}

/// The refusal of `-o name` by a view that names no object of its own (a plan, a comparison).
pub fn refuse_names(global: &GlobalArgs, view: &str) -> Result<(), Failure> {
    if global.output == Output::Name {
        return Err(Failure::bad_input(anyhow!(
            "-o name: {view} names no object of its own; it takes -o table, -o wide, -o json or -o yaml"
        )));
    }
    Ok(())
}
