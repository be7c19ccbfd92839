//! The "What would make it fit" section: each suggestion with where the pod lands, what else
//! changes, and the `whatif` flags and pod patch that reproduce it.

use super::Suggestions;
use crate::explain::list_names;
use crate::term::{TableOptions, prose};
use std::fmt::Write;

/// How far a suggestion's details are indented under its number.
const INDENT: usize = 5;

pub fn render(s: &Suggestions, opts: TableOptions) -> String {
    let style = opts.style;
    let mut out = String::new();
    let tried = format!(
        "{} change(s) tried, each verified by the scheduler",
        s.tried
    );
    if s.suggestions.is_empty() {
        let why = s.none_because.as_deref().unwrap_or_default();
        let _ = writeln!(
            out,
            "\n{} {}",
            style.bold("What would make it fit:"),
            prose(&format!("nothing found; {why} ({tried})."), opts.width, 2)
        );
        return out;
    }
    let _ = writeln!(
        out,
        "\n{} {}",
        style.bold("What would make it fit"),
        style.dim(&format!("({tried}):"))
    );
    for (i, sug) in s.suggestions.iter().enumerate() {
        let detail = |text: &str| {
            let width = opts.width.saturating_sub(INDENT as u16);
            format!("{}{}", " ".repeat(INDENT), prose(text, width, INDENT + 2))
        };
        let head = format!("{} [{}]", sug.description, sug.kind.as_str());
        let _ = writeln!(out, "{:>3}. {}", i + 1, &detail(&head)[INDENT..]);
        let mut facts = vec![format!("fits on {}", list_names(&sug.fits_on))];
        if !sug.evicts.is_empty() {
            facts.push(format!("evicts {}", list_names(&sug.evicts)));
        }
        if !sug.also_places.is_empty() {
            facts.push(format!("also places {}", list_names(&sug.also_places)));
        }
        if !sug.stops_placing.is_empty() {
            facts.push(format!(
                "then {} no longer fit",
                list_names(&sug.stops_placing)
            ));
        }
        let _ = writeln!(out, "{}", style.good(&detail(&facts.join("; "))));
        if !sug.edits.is_empty() {
            let flags = format!("whatif -f POD {}", sug.edits.join(" "));
            let _ = writeln!(out, "{}", style.dim(&detail(&flags)));
        }
        if !sug.pod_patch.is_empty() {
            let patch = serde_json::to_string(&sug.pod_patch).unwrap_or_default();
            let _ = writeln!(
                out,
                "{}",
                style.dim(&detail(&format!("pod patch: {patch}")))
            );
        }
    }
    out
}

/// `explain --all-pending`: the cluster changes that place the most pending pods.
pub fn render_pending(s: &super::pending::PendingSuggestions, opts: TableOptions) -> String {
    let style = opts.style;
    let mut out = String::new();
    if s.suggestions.is_empty() {
        if s.tried > 0 {
            let _ = writeln!(
                out,
                "\n{} {}",
                style.bold("What would place them:"),
                prose(
                    &format!(
                        "no cluster change found ({} tried); explain each pod for changes to it.",
                        s.tried
                    ),
                    opts.width,
                    2
                )
            );
        }
        return out;
    }
    let _ = writeln!(
        out,
        "\n{} {}",
        style.bold("What would place them"),
        style.dim(&format!(
            "({} change(s) tried, each verified by the scheduler):",
            s.tried
        ))
    );
    let width = opts.width.saturating_sub(INDENT as u16);
    let detail = |text: &str| format!("{}{}", " ".repeat(INDENT), prose(text, width, INDENT + 2));
    for (i, sug) in s.suggestions.iter().enumerate() {
        let head = format!(
            "{} places {} of {} pending pods [{}]",
            sug.description,
            sug.places.len(),
            sug.of,
            sug.kind.as_str()
        );
        let _ = writeln!(out, "{:>3}. {}", i + 1, &detail(&head)[INDENT..]);
        let mut facts = vec![list_names(&sug.places)];
        if !sug.evicts.is_empty() {
            facts.push(format!("evicts {}", list_names(&sug.evicts)));
        }
        let _ = writeln!(out, "{}", style.good(&detail(&facts.join("; "))));
        let flags = format!("explain --all-pending {}", sug.edits.join(" "));
        let _ = writeln!(out, "{}", style.dim(&detail(&flags)));
    }
    out
}
