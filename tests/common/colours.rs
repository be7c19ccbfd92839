//! The colour codes kubectl-sched writes, and text without them: any other escape sequence in its
//! output came from its input.

/// `text` with the tool's own SGR codes (bold, dim, reset, red, green, yellow, default colour)
/// taken out.
pub fn without_our_colours(text: &str) -> String {
    ["1", "0", "2", "31", "32", "33", "39"]
        .iter()
        .fold(text.to_string(), |t, code| {
            t.replace(&format!("\x1b[{code}m"), "")
        })
}
