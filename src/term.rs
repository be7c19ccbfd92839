//! What a terminal is shown: styles, tables laid out to a width, and the one rule for strings from
//! the cluster. Those strings (a Lease's holderIdentity, an event's message, names in a dump) are
//! anyone's to write, so every control character in them is shown escaped, as kubectl shows it,
//! never sent to the terminal: `finish` is the edge every table and detail view passes through.
//! Styles are written as zero-width markers and become colour codes only there, after the
//! escaping, so a cluster string can neither carry nor forge an escape sequence, and widths are
//! measured without colour codes in the way.

use std::borrow::Cow;
use std::fmt::Write;
use unicode_width::UnicodeWidthChar;

/// Colours on or off, decided once from `--color` and the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    pub color: bool,
}

/// The styles text can be marked with, by their tag character.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mark {
    Good,
    Bad,
    Warn,
    Bold,
    Dim,
}

impl Mark {
    const ALL: [Mark; 5] = [Mark::Good, Mark::Bad, Mark::Warn, Mark::Bold, Mark::Dim];

    /// Tag characters (U+E0000 block): invisible, of width zero.
    fn tag(self) -> char {
        match self {
            Mark::Good => '\u{E0067}',
            Mark::Bad => '\u{E0072}',
            Mark::Warn => '\u{E0079}',
            Mark::Bold => '\u{E0062}',
            Mark::Dim => '\u{E0064}',
        }
    }

    fn from_tag(c: char) -> Option<Mark> {
        Mark::ALL.into_iter().find(|m| m.tag() == c)
    }

    /// The SGR codes that start and end the style.
    fn codes(self) -> (&'static str, &'static str) {
        match self {
            Mark::Good => ("\x1b[32m", "\x1b[39m"),
            Mark::Bad => ("\x1b[31m", "\x1b[39m"),
            Mark::Warn => ("\x1b[33m", "\x1b[39m"),
            Mark::Bold => ("\x1b[1m", "\x1b[0m"),
            Mark::Dim => ("\x1b[2m", "\x1b[0m"),
        }
    }
}

const OPEN: char = '\u{E0001}';
const CLOSE: char = '\u{E007F}';

impl Style {
    fn mark(&self, s: &str, mark: Mark) -> String {
        if self.color {
            format!("{OPEN}{}{s}{CLOSE}{}", mark.tag(), mark.tag())
        } else {
            s.to_string()
        }
    }
    pub fn good(&self, s: &str) -> String {
        self.mark(s, Mark::Good)
    }
    pub fn bad(&self, s: &str) -> String {
        self.mark(s, Mark::Bad)
    }
    pub fn warn(&self, s: &str) -> String {
        self.mark(s, Mark::Warn)
    }
    pub fn bold(&self, s: &str) -> String {
        self.mark(s, Mark::Bold)
    }
    pub fn dim(&self, s: &str) -> String {
        self.mark(s, Mark::Dim)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct TableOptions {
    pub wide: bool,
    pub width: u16,
    pub style: Style,
}

/// A control character as kubectl-style text: `\x1b`, `\r`, `\u{9b}`.
fn escaped(c: char, out: &mut String) {
    match c {
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

fn is_control(c: char) -> bool {
    c != '\n' && c.is_control()
}

/// A cluster string with its control characters (all but newlines) shown escaped.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_control(c) {
            escaped(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text ready for the terminal: control characters escaped, style markers turned into colour
/// codes (or dropped when colour is off), and any other tag character shown escaped.
pub fn finish(text: &str, color: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let marker = (c == OPEN || c == CLOSE)
            .then(|| chars.peek().copied().and_then(Mark::from_tag))
            .flatten();
        match marker {
            Some(mark) => {
                chars.next();
                if color {
                    let (open, close) = mark.codes();
                    out.push_str(if c == OPEN { open } else { close });
                }
            }
            None if is_control(c) || ('\u{E0000}'..='\u{E007F}').contains(&c) => {
                escaped(c, &mut out)
            }
            None => out.push(c),
        }
    }
    out
}

/// Columns of a line as a terminal shows it: style markers take none.
pub fn width(s: &str) -> usize {
    s.chars()
        .filter(|c| !('\u{E0000}'..='\u{E007F}').contains(c))
        .map(|c| c.width().unwrap_or(0))
        .sum()
}

/// How a column gives way when the table is wider than the terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// Never narrower than its content: verdicts, numbers, names one acts on.
    Keep,
    /// Wraps at spaces, and a word too long for it at `-`, `_`, `.`, `/`, `:` or `,`; never
    /// narrower than `min`.
    Wrap { min: usize },
    /// One line, cut with `…` (the full value is in `-o wide`); never narrower than `min`.
    Cut { min: usize },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

pub struct Column {
    pub header: String,
    pub fit: Fit,
    pub align: Align,
}

impl Column {
    pub fn new(header: &str, fit: Fit) -> Column {
        Column {
            header: header.to_string(),
            fit,
            align: Align::Left,
        }
    }

    pub fn right(mut self) -> Column {
        self.align = Align::Right;
        self
    }
}

/// A table as kubectl prints them: no borders, a space before the first column and two between
/// columns, no trailing spaces, laid out to a width.
pub struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: Vec<Column>) -> Table {
        Table {
            columns,
            rows: Vec::new(),
        }
    }

    /// Adds a row; its cells are cluster strings, escaped here so the layout measures what will
    /// be shown.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows
            .push(cells.into_iter().map(|c| escape(&c).into_owned()).collect());
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table within `width` columns if it can be: `Wrap` and `Cut` columns give way, widest
    /// first, down to their minimum. With `wide`, nothing is cut.
    pub fn render(&self, columns: u16, wide: bool) -> String {
        let n = self.columns.len();
        let natural: Vec<usize> = (0..n)
            .map(|i| {
                std::iter::once(&self.columns[i].header)
                    .chain(self.rows.iter().map(|r| &r[i]))
                    .flat_map(|c| c.lines())
                    .map(self::width)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let floor = |i: usize| -> usize {
            let header = self::width(&self.columns[i].header);
            match self.columns[i].fit {
                Fit::Keep => natural[i],
                Fit::Cut { .. } if wide => natural[i],
                Fit::Wrap { min } | Fit::Cut { min } => natural[i].min(min.max(header)),
            }
        };
        let budget = (columns as usize).saturating_sub(1 + 2 * n.saturating_sub(1));
        let widths = fit_widths(&natural, &(0..n).map(floor).collect::<Vec<_>>(), budget);
        let mut out = String::new();
        let header: Vec<String> = self.columns.iter().map(|c| c.header.clone()).collect();
        for cells in std::iter::once(&header).chain(&self.rows) {
            let laid: Vec<Vec<String>> = cells
                .iter()
                .zip(&self.columns)
                .zip(&widths)
                .map(|((cell, col), &w)| match col.fit {
                    _ if self::width(cell) <= w && !cell.contains('\n') => vec![cell.clone()],
                    Fit::Cut { .. } if !wide => vec![cut(cell, w)],
                    Fit::Keep | Fit::Cut { .. } => cell.lines().map(str::to_string).collect(),
                    Fit::Wrap { .. } => wrap(cell, w),
                })
                .collect();
            let height = laid.iter().map(Vec::len).max().unwrap_or(1);
            for line in 0..height {
                let mut text = String::from(" ");
                for (i, lines) in laid.iter().enumerate() {
                    let cell = lines.get(line).map_or("", String::as_str);
                    let pad = widths[i].saturating_sub(self::width(cell));
                    if i > 0 {
                        text.push_str("  ");
                    }
                    match self.columns[i].align {
                        Align::Left => {
                            text.push_str(cell);
                            text.push_str(&" ".repeat(pad));
                        }
                        Align::Right => {
                            text.push_str(&" ".repeat(pad));
                            text.push_str(cell);
                        }
                    }
                }
                out.push_str(text.trim_end());
                out.push('\n');
            }
        }
        out
    }
}

/// Column widths within `budget`: the widest columns give way first, none below its floor.
fn fit_widths(natural: &[usize], floor: &[usize], budget: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= budget {
        return natural.to_vec();
    }
    // The largest cap such that every column at min(natural, max(cap, floor)) fits.
    let at = |cap: usize| -> Vec<usize> {
        natural
            .iter()
            .zip(floor)
            .map(|(&n, &f)| n.min(cap.max(f)))
            .collect()
    };
    let (mut lo, mut hi) = (0, natural.iter().copied().max().unwrap_or(0));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if at(mid).iter().sum::<usize>() <= budget {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    at(lo)
}

/// A line cut to `w` columns, ending in `…` when something was left out.
fn cut(cell: &str, w: usize) -> String {
    let line = cell.lines().next().unwrap_or("");
    let more = cell.lines().nth(1).is_some();
    if width(line) <= w && !more {
        return line.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in line.chars() {
        let cw = width(c.encode_utf8(&mut [0; 4]));
        if used + cw + 1 > w {
            break;
        }
        used += cw;
        out.push(c);
    }
    close_marks(&mut out);
    out.push('…');
    out
}

/// Text as lines of at most `width` columns (wrapped as table cells are), every line after the
/// first indented by `indent` spaces; cluster strings escaped.
pub fn paragraph(text: &str, width: u16, indent: usize) -> String {
    let w = usize::from(width).saturating_sub(indent).max(24);
    let pad = " ".repeat(indent);
    wrap(&escape(text), w).join(&format!("\n{pad}"))
}

/// Where a word too long for its column may break: after these.
fn breaks_after(c: char) -> bool {
    matches!(c, '-' | '_' | '.' | '/' | ':' | ',' | '=')
}

/// Text wrapped to `w` columns: at spaces, and a word longer than a line after a `-`, `_`, `.`,
/// `/`, `:`, `,` or `=`, and only where there is none mid-word.
fn wrap(cell: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut lines = Vec::new();
    for paragraph in cell.lines() {
        let mut line = String::new();
        for word in paragraph.split(' ') {
            let sep = usize::from(!line.is_empty());
            if width(&line) + sep + width(word) <= w {
                if sep == 1 {
                    line.push(' ');
                }
                line.push_str(word);
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            let mut rest = word;
            while width(rest) > w {
                let (head, tail) = split_word(rest, w);
                lines.push(head.to_string());
                rest = tail;
            }
            line.push_str(rest);
        }
        lines.push(line);
    }
    carry_marks(&mut lines);
    lines
}

/// A word's first part of at most `w` columns, broken after a separator when there is one.
fn split_word(word: &str, w: usize) -> (&str, &str) {
    let mut fits = 0;
    let mut last_break = None;
    for (i, c) in word.char_indices() {
        let end = i + c.len_utf8();
        if width(&word[..end]) > w {
            break;
        }
        fits = end;
        if breaks_after(c) {
            last_break = Some(end);
        }
    }
    let at = last_break
        .unwrap_or(fits)
        .max(word.chars().next().map_or(1, char::len_utf8));
    word.split_at(at)
}

/// The marks a line leaves open, in order.
fn open_marks(line: &str) -> Vec<char> {
    let mut open = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if (c == OPEN || c == CLOSE)
            && let Some(&tag) = chars.peek()
            && Mark::from_tag(tag).is_some()
        {
            chars.next();
            if c == OPEN {
                open.push(tag);
            } else if let Some(p) = open.iter().rposition(|&t| t == tag) {
                open.remove(p);
            }
        }
    }
    open
}

fn close_marks(line: &mut String) {
    for tag in open_marks(line).into_iter().rev() {
        line.push(CLOSE);
        line.push(tag);
    }
}

/// A style running over a line break is closed at the end of the line and opened again on the
/// next, so the padding between columns is never coloured.
fn carry_marks(lines: &mut [String]) {
    let mut carried: Vec<char> = Vec::new();
    for line in lines.iter_mut() {
        let reopened: String = carried.iter().flat_map(|&t| [OPEN, t]).collect();
        line.insert_str(0, &reopened);
        carried = open_marks(line);
        close_marks(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ON: Style = Style { color: true };

    #[test]
    fn control_characters_are_escaped_and_styles_are_ours() {
        let hostile = "cp-2\x1b]0;PWNED\x07\x1b[2J\r\u{9b}31m_abc";
        assert_eq!(
            finish(hostile, true),
            "cp-2\\x1b]0;PWNED\\x07\\x1b[2J\\r\\u{9b}31m_abc"
        );
        assert_eq!(escape(hostile), finish(hostile, false));
        assert_eq!(escape("plain\nline"), Cow::Borrowed("plain\nline"));
        let text = format!("{} {}", ON.bad("no"), ON.bold(hostile));
        let shown = finish(&text, true);
        assert!(
            shown.starts_with("\x1b[31mno\x1b[39m \x1b[1mcp-2\\x1b"),
            "{shown:?}"
        );
        assert_eq!(shown.matches('\x1b').count(), 4, "{shown:?}");
        assert_eq!(finish(&text, false), format!("no {}", escape(hostile)));
        // A stray tag character is shown, not taken for a style.
        assert_eq!(finish("a\u{E0001}b", true), "a\\u{e0001}b");
    }

    #[test]
    fn styles_take_no_width() {
        assert_eq!(width(&ON.good("fits *")), 6);
        assert_eq!(width("…é"), 2);
    }

    fn table(rows: &[[&str; 3]]) -> Table {
        let mut t = Table::new(vec![
            Column::new("NAME", Fit::Keep),
            Column::new("REASON", Fit::Wrap { min: 12 }),
            Column::new("SCORE", Fit::Keep).right(),
        ]);
        for r in rows {
            t.row(r.iter().map(|c| c.to_string()).collect());
        }
        t
    }

    #[test]
    fn wraps_at_spaces_then_at_separators_never_mid_word() {
        let t = table(&[
            [
                "worker-a1",
                "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }",
                "7",
            ],
            ["n2", "", "100"],
        ]);
        let shown = t.render(40, false);
        assert_eq!(
            shown,
            " NAME       REASON                 SCORE\n worker-a1  node(s) had                7\n            untolerated taint\n            {node-role.\n            kubernetes.io/\n            control-plane: }\n n2                                  100\n"
        );
        assert!(shown.lines().all(|l| !l.ends_with(' ') && width(l) <= 40));
        // Wide enough: one line per row.
        assert_eq!(t.render(200, false).lines().count(), 3);
    }

    #[test]
    fn a_narrow_terminal_gets_a_useful_minimum_not_one_letter_per_line() {
        let t = table(&[["worker-a1", "NodeResourcesFit: Insufficient cpu", "7"]]);
        for width in [0, 1, 20] {
            let shown = t.render(width, false);
            assert!(shown.lines().count() <= 5, "{width}:\n{shown}");
            assert!(
                shown.contains("worker-a1") && shown.contains("NAME"),
                "{shown}"
            );
        }
    }

    #[test]
    fn cut_columns_end_in_an_ellipsis_unless_wide() {
        let mut t = Table::new(vec![
            Column::new("NAME", Fit::Keep),
            Column::new("HOLDER", Fit::Cut { min: 12 }),
        ]);
        t.row(vec![
            "kube-scheduler".into(),
            "ingress-nginx-controller-6c9f7d-x2x8k".into(),
        ]);
        assert_eq!(
            t.render(30, false),
            " NAME            HOLDER\n kube-scheduler  ingress-ngin…\n"
        );
        assert!(
            t.render(30, true)
                .contains("ingress-nginx-controller-6c9f7d-x2x8k")
        );
    }

    #[test]
    fn cells_are_escaped_before_they_are_measured() {
        let mut t = Table::new(vec![
            Column::new("A", Fit::Keep),
            Column::new("B", Fit::Keep),
        ]);
        t.row(vec!["x\x1by".into(), "z".into()]);
        t.row(vec!["long-name".into(), "z".into()]);
        let shown = t.render(80, false);
        assert_eq!(shown, " A          B\n x\\x1by     z\n long-name  z\n");
    }

    #[test]
    fn a_style_across_a_line_break_is_closed_and_reopened() {
        let lines = wrap(&ON.bad("one two three"), 5);
        assert_eq!(lines.len(), 3);
        for l in &lines {
            assert!(open_marks(l).is_empty(), "{l:?}");
            assert_eq!(finish(l, true).matches("\x1b[31m").count(), 1, "{l:?}");
        }
    }
}
