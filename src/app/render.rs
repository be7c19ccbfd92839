//! How output looks: colours, table width, and JSON/YAML printing.

use super::Failure;
use crate::cli::{ColorChoice, GlobalArgs, Output};
use crate::term::{Style, TableOptions};
use anyhow::{Context, anyhow};
use serde::Serialize;
use std::fmt::Write as _;
use std::io::IsTerminal;

/// Narrower than this, prose would wrap a word or two to a line: a table too wide for the
/// terminal reads better than one three screens high.
const NARROWEST: u16 = 40;

/// `$COLUMNS`; 0 (or anything not a positive number) is how shells say they do not know.
fn columns_from_env() -> Option<u16> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|&c| c > 0)
}

fn terminal_width(stream: impl std::os::fd::AsFd) -> Option<u16> {
    terminal_size::terminal_size_of(stream)
        .map(|(w, _)| w.0)
        .filter(|&c| c > 0)
}

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
    let width = columns_from_env()
        .or_else(|| terminal_width(std::io::stdout()))
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
    say("warning", text);
}

/// What is said on stderr (`warning: …`, `note: …`, `error: …`), its cluster strings escaped. On
/// a terminal it wraps to the terminal's width, under its text; to a file or a pipe each stays
/// one line, for `grep`.
pub fn say(label: &str, text: &str) {
    let stderr = std::io::stderr();
    let width = stderr
        .is_terminal()
        .then(|| columns_from_env().or_else(|| terminal_width(&stderr)))
        .flatten();
    eprintln!("{}", said(label, text, width));
}

fn said(label: &str, text: &str, width: Option<u16>) -> String {
    let text = crate::term::escape(text);
    let Some(width) = width else {
        return format!("{label}: {text}");
    };
    // The text wraps apart from its label, so that a long first word (a path) starts beside it.
    let indent = label.len() + 2;
    let lines = crate::term::prose(&text, width.max(NARROWEST).saturating_sub(indent as u16), 0);
    format!(
        "{label}: {}",
        lines.replace('\n', &format!("\n{}", " ".repeat(indent)))
    )
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

#[cfg(test)]
mod tests {
    use super::said;

    const TEXT: &str = "kube-scheduler v1.36.2 inferred from the kubelets of 5,000 nodes and the \
        holder of kube-system/kube-scheduler; pass --scheduler-version to say which release runs";

    #[test]
    fn on_a_terminal_it_wraps_under_its_text() {
        let s = said("warning", TEXT, Some(80));
        assert!(s.lines().count() > 1, "{s}");
        assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");
        assert!(
            s.lines()
                .skip(1)
                .all(|l| l.starts_with(&" ".repeat(9)) && !l[9..].starts_with(' ')),
            "{s}"
        );
        let words = |t: &str| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(words(&s), words(&format!("warning: {TEXT}")));
    }

    #[test]
    fn to_a_file_or_a_pipe_it_stays_one_line() {
        assert_eq!(said("warning", TEXT, None), format!("warning: {TEXT}"));
    }

    #[test]
    fn cluster_strings_are_escaped_before_they_wrap() {
        let s = said(
            "error",
            &format!("node \u{1b}]0;owned\u{7} {TEXT}"),
            Some(40),
        );
        assert!(!s.contains('\u{1b}') && !s.contains('\u{7}'), "{s}");
        assert!(s.lines().all(|l| l.chars().count() <= 40), "{s}");
    }
}
