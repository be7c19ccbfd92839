//! What a terminal is shown: styles, tables laid out to a width, and the one rule for strings from
//! outside (a Lease's holderIdentity, an event's message, names in a dump, an extender's error, a
//! file name): they are anyone's to write, so every character of them that a terminal does not
//! print as itself is shown escaped, never sent to the terminal. Control characters are shown as
//! kubectl shows them (`\x1b`, `\r`); format and bidirectional controls, private-use, surrogate and
//! unassigned code points, line and paragraph separators and the tag characters as `\u{202e}`, so
//! a name can neither reorder nor hide text, nor read as another.
//!
//! Styles are zero-width markers that become colour codes only in `finish`, the edge every text
//! view passes through. A marker is a tag character followed by a key drawn at random when the
//! process starts: text from outside, written before the key existed, cannot hold one, so
//! whatever it contains is escaped at that edge and a cluster string can neither carry nor forge
//! a style or an escape sequence. Widths are measured as the text will be shown: markers take no
//! column, an escaped character the columns of its escape.

use std::borrow::Cow;
use std::fmt::Write;
use std::sync::OnceLock;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
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
/// Tag characters of the key: 7 bits each, 84 bits in all.
const KEY_CHARS: usize = 12;

/// What starts every marker of this process: `OPEN` or `CLOSE`, then the key.
struct Prefixes {
    open: String,
    close: String,
}

fn prefixes() -> &'static Prefixes {
    static PREFIXES: OnceLock<Prefixes> = OnceLock::new();
    PREFIXES.get_or_init(|| {
        use std::hash::BuildHasher;
        // std seeds RandomState from the operating system's random source.
        let state = std::hash::RandomState::new();
        let bits = u128::from(state.hash_one(0u8)) << 64 | u128::from(state.hash_one(1u8));
        let key: String = (0..KEY_CHARS)
            .map(|i| {
                let low = ((bits >> (7 * i)) & 0x7f) as u32;
                char::from_u32(0xE0000 + low).expect("a tag character")
            })
            .collect();
        Prefixes {
            open: format!("{OPEN}{key}"),
            close: format!("{CLOSE}{key}"),
        }
    })
}

impl Style {
    fn mark(&self, s: &str, mark: Mark) -> String {
        if !self.color {
            return s.to_string();
        }
        let p = prefixes();
        let tag = mark.tag();
        let mut out = String::with_capacity(s.len() + 2 * (p.open.len() + 4));
        out.push_str(&p.open);
        out.push(tag);
        out.push_str(s);
        out.push_str(&p.close);
        out.push(tag);
        out
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
    /// The column-header line; `--no-headers` turns it off, as on kubectl get.
    pub headers: bool,
}

impl TableOptions {
    /// These options for a table that is never widened by `-o wide` (it has no wide columns).
    pub fn narrow(self) -> TableOptions {
        TableOptions {
            wide: false,
            ..self
        }
    }
}

/// Whether a terminal shows `c` as itself. Newlines are the layout's; every other control,
/// format (bidirectional and zero-width controls, tag characters), private-use, surrogate or
/// unassigned code point, and the line and paragraph separators, are not.
pub fn shows_as_itself(c: char) -> bool {
    c == '\n'
        || !matches!(
            c.general_category(),
            GeneralCategory::Control
                | GeneralCategory::Format
                | GeneralCategory::PrivateUse
                | GeneralCategory::Surrogate
                | GeneralCategory::Unassigned
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        )
}

/// A character as kubectl-style text: `\x1b`, `\r`, `\u{202e}`.
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

/// `c` as the terminal is to show it.
fn push_shown(c: char, out: &mut String) {
    if shows_as_itself(c) {
        out.push(c);
    } else {
        escaped(c, out);
    }
}

/// The columns `c` takes once shown.
fn shown_width(c: char) -> usize {
    match c {
        '\n' => 0,
        c if shows_as_itself(c) => c.width().unwrap_or(0),
        '\r' | '\t' => 2,
        c if (c as u32) < 0x80 => 4,
        // `\u{` + hex digits + `}`
        c => 4 + (32 - (c as u32).leading_zeros()).div_ceil(4) as usize,
    }
}

/// Text without styles (an error, a warning) with every character from outside that a terminal
/// does not show as itself escaped.
pub fn escape(s: &str) -> Cow<'_, str> {
    if s.chars().all(shows_as_itself) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        push_shown(c, &mut out);
    }
    Cow::Owned(out)
}

/// A piece of marked text: a style marker of this process, or one character of text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Open(Mark),
    Close(Mark),
    Char(char),
}

/// The tokens of `s` with their byte lengths.
fn tokens(s: &str) -> impl Iterator<Item = (Token, usize)> + '_ {
    let mut rest = s;
    std::iter::from_fn(move || {
        let c = rest.chars().next()?;
        let marker = (c == OPEN || c == CLOSE)
            .then(|| {
                let p = prefixes();
                let (prefix, open) = if c == OPEN {
                    (&p.open, true)
                } else {
                    (&p.close, false)
                };
                let tag = rest.strip_prefix(prefix.as_str())?.chars().next()?;
                let mark = Mark::from_tag(tag)?;
                let token = if open {
                    Token::Open(mark)
                } else {
                    Token::Close(mark)
                };
                Some((token, prefix.len() + tag.len_utf8()))
            })
            .flatten();
        let (token, len) = marker.unwrap_or((Token::Char(c), c.len_utf8()));
        rest = &rest[len..];
        Some((token, len))
    })
}

/// Text ready for the terminal: style markers turned into colour codes (or dropped when colour is
/// off), and every other character that a terminal does not show as itself escaped, a tag
/// character that is not a marker of this process included.
pub fn finish(text: &str, color: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for (token, _) in tokens(text) {
        match token {
            Token::Open(mark) if color => out.push_str(mark.codes().0),
            Token::Close(mark) if color => out.push_str(mark.codes().1),
            Token::Open(_) | Token::Close(_) => {}
            Token::Char(c) => push_shown(c, &mut out),
        }
    }
    out
}

fn token_width(token: Token) -> usize {
    match token {
        Token::Char(c) => shown_width(c),
        Token::Open(_) | Token::Close(_) => 0,
    }
}

/// Columns of a line as a terminal shows it: style markers take none, an escaped character the
/// width of its escape.
pub fn width(s: &str) -> usize {
    tokens(s).map(|(t, _)| token_width(t)).sum()
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

    /// Adds a row. Its cells may hold strings from outside: the layout measures each character
    /// as `finish` will show it and never splits an escape over two lines.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table within `width` columns if it can be: `Wrap` and `Cut` columns give way, widest
    /// first, down to their minimum. With `wide`, nothing is cut. Without `headers`, the rows are
    /// laid out as with them, so that the output is the headed table's less its header lines.
    pub fn render(&self, opts: TableOptions) -> String {
        let TableOptions {
            width: columns,
            wide,
            headers,
            ..
        } = opts;
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
        let header = headers.then_some(&header);
        for cells in header.into_iter().chain(&self.rows) {
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
    let mut end = 0;
    let mut used = 0;
    for (token, len) in tokens(line) {
        let tw = token_width(token);
        if used + tw + 1 > w {
            break;
        }
        used += tw;
        end += len;
    }
    let mut out = line[..end].to_string();
    close_marks(&mut out);
    out.push('…');
    out
}

/// Where a word too long for its column may break: after these.
fn breaks_after(c: char) -> bool {
    matches!(c, '-' | '_' | '.' | '/' | ':' | ',' | '=')
}

/// Text wrapped to `w` columns: at spaces, and a word longer than a line after a `-`, `_`, `.`,
/// `/`, `:`, `,` or `=`, and only where there is none mid-word.
fn wrap(cell: &str, w: usize) -> Vec<String> {
    wrap_hanging(cell, w, w)
}

/// Prose for a terminal `width` columns wide: wrapped as table cells are, every line after the
/// first indented by `indent` (never to less than 20 columns of text). Strings from outside in it
/// are measured as `finish` will show them, and an escape is never split over two lines.
pub fn prose(text: &str, width: u16, indent: usize) -> String {
    let first = usize::from(width).max(indent + 20);
    let lines = wrap_hanging(text, first, first - indent);
    lines.join(&format!("\n{}", " ".repeat(indent)))
}

/// `wrap`, the first line `first` columns wide and the others `rest`.
fn wrap_hanging(cell: &str, first: usize, rest: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for paragraph in cell.lines() {
        let mut line = String::new();
        for word in paragraph.split(' ') {
            let w = if lines.is_empty() { first } else { rest }.max(1);
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
            let mut left = word;
            loop {
                let w = if lines.is_empty() { first } else { rest }.max(1);
                if width(left) <= w {
                    break;
                }
                let (head, tail) = split_word(left, w);
                lines.push(head.to_string());
                left = tail;
            }
            line.push_str(left);
        }
        lines.push(line);
    }
    carry_marks(&mut lines);
    lines
}

/// A word's first part of at most `w` columns, broken after a separator when there is one.
fn split_word(word: &str, w: usize) -> (&str, &str) {
    let (mut fits, mut used) = (0, 0);
    let mut last_break = None;
    for (token, len) in tokens(word) {
        used += token_width(token);
        if used > w {
            break;
        }
        fits += len;
        if let Token::Char(c) = token
            && breaks_after(c)
        {
            last_break = Some(fits);
        }
    }
    // At least one character, however narrow the column.
    let first_char = tokens(word)
        .scan(0, |end, (token, len)| {
            *end += len;
            Some((token, *end))
        })
        .find(|(t, _)| matches!(t, Token::Char(_)))
        .map_or(word.len(), |(_, end)| end);
    let at = last_break.unwrap_or(fits).max(first_char);
    word.split_at(at)
}

/// The marks a line leaves open, in order.
fn open_marks(line: &str) -> Vec<Mark> {
    let mut open = Vec::new();
    for (token, _) in tokens(line) {
        match token {
            Token::Open(mark) => open.push(mark),
            Token::Close(mark) => {
                if let Some(p) = open.iter().rposition(|&m| m == mark) {
                    open.remove(p);
                }
            }
            Token::Char(_) => {}
        }
    }
    open
}

fn close_marks(line: &mut String) {
    let p = prefixes();
    for mark in open_marks(line).into_iter().rev() {
        line.push_str(&p.close);
        line.push(mark.tag());
    }
}

/// A style running over a line break is closed at the end of the line and opened again on the
/// next, so the padding between columns is never coloured.
fn carry_marks(lines: &mut [String]) {
    let p = prefixes();
    let mut carried: Vec<Mark> = Vec::new();
    for line in lines.iter_mut() {
        let mut reopened = String::new();
        for mark in &carried {
            reopened.push_str(&p.open);
            reopened.push(mark.tag());
        }
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

    /// What a cluster could write to forge, hide or reorder text.
    const HIDDEN: &[char] = &[
        '\u{E0000}',
        '\u{E0001}',
        '\u{E0062}',
        '\u{E007F}',
        '\u{202A}',
        '\u{202E}',
        '\u{2066}',
        '\u{2069}',
        '\u{200B}',
        '\u{200D}',
        '\u{200F}',
        '\u{FEFF}',
        '\u{2028}',
        '\u{2029}',
        '\u{00AD}',
        '\u{E000}',
        '\u{F0000}',
        '\u{0378}',
        '\u{FFFF}',
        '\u{7F}',
        '\u{85}',
    ];

    #[test]
    fn what_a_terminal_does_not_show_as_itself_is_escaped() {
        for &c in HIDDEN {
            let text = format!("a{c}b");
            let shown = format!("a\\u{{{:x}}}b", c as u32);
            let shown = match c {
                '\u{7F}' => "a\\x7fb".to_string(),
                _ => shown,
            };
            assert_eq!(escape(&text), shown, "{c:?}");
            assert_eq!(finish(&text, true), shown, "{c:?}");
            assert_eq!(finish(&text, false), shown, "{c:?}");
            assert_eq!(width(&text), width(&shown), "{c:?}");
        }
        // The whole tag block, whatever the order: no style, only text.
        let tags: String = ('\u{E0000}'..='\u{E007F}').collect();
        let shown = finish(&tags, true);
        assert!(shown.is_ascii() && !shown.contains('\x1b'), "{shown}");
        for kept in [
            "worker-a1",
            "café",
            "日本語",
            "🙂",
            "e\u{301}",
            "\u{a0}x",
            "ünïcødé\n",
        ] {
            assert_eq!(finish(kept, true), escape(kept), "{kept:?}");
            assert!(!finish(kept, true).contains("\\u{"), "{kept:?}");
        }
    }

    #[test]
    fn a_cluster_string_cannot_forge_a_style() {
        // The marker of bold as it was written before markers carried a key, and as they are
        // written now with any key but this run's.
        let old_bold = "evil\u{E0001}\u{E0062}-holder\u{E007F}\u{E0062}";
        assert_eq!(
            finish(old_bold, true),
            "evil\\u{e0001}\\u{e0062}-holder\\u{e007f}\\u{e0062}"
        );
        let p = prefixes();
        let guessed: String = std::iter::once(OPEN)
            .chain(std::iter::repeat_n('\u{E0041}', KEY_CHARS))
            .chain(['\u{E0062}'])
            .collect();
        assert!(!guessed.starts_with(&p.open) || KEY_CHARS == 0);
        assert!(!finish(&format!("x{guessed}y"), true).contains('\x1b'));
        // Inside a style of ours, outside text neither ends it nor opens another.
        let text = ON.bold(&format!("a{old_bold}\u{E007F}\u{E0062}b"));
        let shown = finish(&text, true);
        assert_eq!(shown.matches('\x1b').count(), 2, "{shown:?}");
        assert!(
            shown.starts_with("\x1b[1ma") && shown.ends_with("b\x1b[0m"),
            "{shown:?}"
        );
        // Our own markers are well formed and survive layout.
        assert!(ON.bold("x").starts_with(&p.open) && ON.bold("x").contains(&p.close));
    }

    #[test]
    fn prose_keeps_our_styles_and_measures_escapes_as_shown() {
        let text = format!(
            "{} holder evil\u{E0001}\u{E0062}-\u{202E}x renewed 3s ago by the leader",
            ON.bold("Holder:")
        );
        let laid = prose(&text, 24, 2);
        assert!(laid.lines().all(|l| width(l) <= 24), "{laid:?}");
        let shown = finish(&laid, true);
        assert!(
            shown.starts_with("\x1b[1mHolder:\x1b[0m holder"),
            "{shown:?}"
        );
        assert_eq!(shown.matches('\x1b').count(), 2, "{shown:?}");
        // The word breaks between escapes, never inside one.
        assert!(
            shown.contains("evil\\u{e0001}\\u{e0062}\n  -\\u{202e}x"),
            "{shown:?}"
        );
    }

    #[test]
    fn an_escape_is_never_split_or_cut_and_a_marker_never_broken() {
        let hostile = "ns-\u{202E}elif\u{200B}-a-very-long-name";
        let lines = wrap(hostile, 12);
        for l in &lines {
            let shown = finish(l, false);
            assert!(width(&shown) <= 12, "{shown:?} in {lines:?}");
            assert!(!shown.ends_with('\\'), "{lines:?}");
        }
        assert_eq!(
            lines.iter().map(|l| finish(l, false)).collect::<String>(),
            finish(hostile, false)
        );
        let cell = ON.bad(hostile);
        for w in 1..30 {
            let c = cut(&cell, w);
            let shown = finish(&c, true);
            // A marker cut in two would show as escaped tag characters.
            assert!(!shown.contains("e00"), "{w}: {shown:?}");
            assert_eq!(shown.matches("\x1b[31m").count(), 1, "{w}: {shown:?}");
            assert!(shown.ends_with("\x1b[39m…"), "{w}: {shown:?}");
            let (head, _) = split_word(&cell, w);
            assert!(!finish(head, true).contains("e00"), "{w}: {head:?}");
        }
    }

    fn at(width: u16, wide: bool) -> TableOptions {
        TableOptions {
            wide,
            width,
            style: Style { color: false },
            headers: true,
        }
    }

    #[test]
    fn without_headers_the_rows_are_laid_out_as_under_them() {
        let t = table(&[["worker-a1", "NodeResourcesFit: Insufficient cpu", "7"]]);
        for width in [20, 80] {
            let headed = t.render(at(width, false));
            let headless = t.render(TableOptions {
                headers: false,
                ..at(width, false)
            });
            let header_lines = headed
                .lines()
                .take_while(|l| !l.contains("worker-a1"))
                .count();
            assert!(header_lines >= 1, "{headed}");
            let rest: Vec<&str> = headed.lines().skip(header_lines).collect();
            assert_eq!(headless.lines().collect::<Vec<_>>(), rest, "{width}");
        }
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
        let shown = t.render(at(40, false));
        assert_eq!(
            shown,
            " NAME       REASON                 SCORE\n worker-a1  node(s) had                7\n            untolerated taint\n            {node-role.\n            kubernetes.io/\n            control-plane: }\n n2                                  100\n"
        );
        assert!(shown.lines().all(|l| !l.ends_with(' ') && width(l) <= 40));
        // Wide enough: one line per row.
        assert_eq!(t.render(at(200, false)).lines().count(), 3);
    }

    #[test]
    fn a_narrow_terminal_gets_a_useful_minimum_not_one_letter_per_line() {
        let t = table(&[["worker-a1", "NodeResourcesFit: Insufficient cpu", "7"]]);
        for width in [0, 1, 20] {
            let shown = t.render(at(width, false));
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
            t.render(at(30, false)),
            " NAME            HOLDER\n kube-scheduler  ingress-ngin…\n"
        );
        assert!(
            t.render(at(30, true))
                .contains("ingress-nginx-controller-6c9f7d-x2x8k")
        );
    }

    #[test]
    fn cells_are_measured_as_they_will_be_shown() {
        let mut t = Table::new(vec![
            Column::new("A", Fit::Keep),
            Column::new("B", Fit::Keep),
        ]);
        t.row(vec!["x\x1by".into(), "z".into()]);
        t.row(vec!["long-name".into(), "z".into()]);
        let shown = finish(&t.render(at(80, false)), false);
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
