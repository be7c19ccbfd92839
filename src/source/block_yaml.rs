//! The YAML that `kubectl get -o yaml` and the API server write, rewritten as JSON so the JSON
//! typing path (several times faster than a general YAML parser) can read it: block mappings and
//! sequences, plain scalars whose type is beyond doubt, single-line quoted scalars, literal block
//! scalars, `{}` and `[]`. Anything else (anchors, tags, flow collections, folded or multi-line
//! scalars, a plain scalar a YAML schema might read as a number, a boolean or a date, a key
//! written twice) gives `None`, and the caller parses the text with the full parser, which
//! decides and words any error. The property test beside it holds both to the same values.

/// The JSON value of a YAML document, or of the one entry of a sequence (`entry`: a List item
/// still behind its `- `).
pub fn to_json(text: &str, entry: bool) -> Option<String> {
    let mut p = Parser {
        lines: text.split('\n').map(Line::new).collect(),
        at: 0,
        out: String::with_capacity(text.len() + text.len() / 4),
    };
    p.skip_document_markers()?;
    let (indent, content) = p.peek()?;
    if entry {
        if indent != 0 || !is_entry(content) {
            return None;
        }
        p.entry(0)?;
        if p.peek().is_some_and(|(i, c)| i == 0 && is_entry(c)) {
            return None;
        }
    } else {
        if indent != 0 {
            return None;
        }
        p.block(0)?;
    }
    p.skip_end_marker();
    p.peek().is_none().then_some(p.out)
}

/// A line: its indentation (spaces) and the rest, without the line break.
#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    content: &'a str,
}

impl<'a> Line<'a> {
    fn new(line: &'a str) -> Self {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let content = line.trim_start_matches(' ');
        Line {
            indent: line.len() - content.len(),
            content,
        }
    }

    /// Blank, or only a comment: no node. (A tab there is no indentation YAML allows.)
    fn is_empty(&self) -> bool {
        let rest = self.content.trim_end_matches(' ');
        rest.is_empty() || rest.starts_with('#')
    }
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
    out: String,
}

fn is_entry(content: &str) -> bool {
    content == "-" || content.starts_with("- ")
}

impl<'a> Parser<'a> {
    /// The next line holding a node, as (indent, content).
    fn peek(&mut self) -> Option<(usize, &'a str)> {
        while let Some(line) = self.lines.get(self.at) {
            if !line.is_empty() {
                return Some((line.indent, line.content));
            }
            self.at += 1;
        }
        None
    }

    fn skip_document_markers(&mut self) -> Option<()> {
        if let Some((0, content)) = self.peek()
            && content.starts_with("---")
        {
            if content.trim_end() != "---" {
                return None;
            }
            self.at += 1;
        }
        Some(())
    }

    fn skip_end_marker(&mut self) {
        if let Some((0, content)) = self.peek()
            && content.trim_end() == "..."
        {
            self.at += 1;
        }
    }

    /// The block collection whose first line is the next one, at `indent`.
    fn block(&mut self, indent: usize) -> Option<()> {
        let (_, content) = self.peek()?;
        if is_entry(content) {
            self.sequence(indent)
        } else {
            self.mapping(indent)
        }
    }

    fn sequence(&mut self, indent: usize) -> Option<()> {
        self.out.push('[');
        let mut first = true;
        while let Some((i, content)) = self.peek() {
            if i < indent || (i == indent && !is_entry(content)) {
                break;
            }
            if i > indent {
                return None;
            }
            if !first {
                self.out.push(',');
            }
            first = false;
            self.entry(indent)?;
        }
        self.out.push(']');
        Some(())
    }

    /// One `- ` entry of a sequence at `indent`, the current line.
    fn entry(&mut self, indent: usize) -> Option<()> {
        let content = self.lines[self.at].content;
        let rest = content[1..].trim_start_matches(' ');
        if rest.is_empty() || rest.starts_with('#') {
            self.at += 1;
            return self.nested(indent);
        }
        if is_entry(rest) {
            return None;
        }
        let column = indent + (content.len() - rest.len());
        if key_split(rest).is_some() {
            // A mapping that starts on the entry's line: its keys line up with the first.
            self.lines[self.at] = Line {
                indent: column,
                content: rest,
            };
            return self.mapping(column);
        }
        self.at += 1;
        self.inline(rest, indent)
    }

    fn mapping(&mut self, indent: usize) -> Option<()> {
        self.out.push('{');
        let start = self.out.len();
        let mut keys: Vec<&str> = Vec::new();
        while let Some((i, content)) = self.peek() {
            if i < indent || (i == indent && is_entry(content)) {
                break;
            }
            if i > indent {
                return None;
            }
            let (key, value) = key_split(content)?;
            if plain_type(key)? != Plain::String || keys.contains(&key) {
                return None;
            }
            keys.push(key);
            if self.out.len() > start {
                self.out.push(',');
            }
            push_string(&mut self.out, key);
            self.out.push(':');
            self.at += 1;
            if value.is_empty() || value.starts_with('#') {
                // The value is on the lines below: deeper, or a sequence at the key's indent.
                match self.peek() {
                    Some((i, c)) if i == indent && is_entry(c) => self.sequence(indent)?,
                    _ => self.nested(indent)?,
                }
            } else {
                self.inline(value, indent)?;
            }
        }
        self.out.push('}');
        Some(())
    }

    /// The node on the lines below a key or an entry at `parent`: deeper, or null.
    fn nested(&mut self, parent: usize) -> Option<()> {
        match self.peek() {
            Some((i, _)) if i > parent => self.block(i),
            _ => {
                self.out.push_str("null");
                Some(())
            }
        }
    }

    /// A node written on its key's (or entry's) line, which is already consumed; its own lines
    /// may follow only as a block scalar's.
    fn inline(&mut self, value: &'a str, parent: usize) -> Option<()> {
        let value = value.trim_end_matches(' ');
        match value.as_bytes()[0] {
            b'"' => push_double_quoted(&mut self.out, value)?,
            b'\'' => push_single_quoted(&mut self.out, value)?,
            b'|' => self.literal(value, parent)?,
            b'{' | b'[' => match value {
                "{}" | "[]" => self.out.push_str(value),
                _ => return None,
            },
            _ => match plain_type(value)? {
                Plain::String => push_string(&mut self.out, value),
                Plain::Integer | Plain::Boolean => self.out.push_str(value),
                Plain::Null => self.out.push_str("null"),
            },
        }
        // A plain scalar continued on the next line, or a node where none may be.
        match self.peek() {
            Some((i, _)) if i > parent => None,
            _ => Some(()),
        }
    }

    /// A literal block scalar (`|` or `|-`) under a key or entry at `parent`.
    fn literal(&mut self, header: &str, parent: usize) -> Option<()> {
        let keep_last = match header {
            "|" => true,
            "|-" => false,
            _ => return None,
        };
        let mut text = String::new();
        let mut indent = None;
        let mut blanks = 0;
        while let Some(line) = self.lines.get(self.at) {
            let raw = &line.content;
            if raw.is_empty() {
                // Leading blank lines may fix the indentation, and spaces past it are content:
                // leave both to the full parser.
                if indent.is_none_or(|k| line.indent > k) {
                    return None;
                }
                blanks += 1;
                self.at += 1;
                continue;
            }
            let k = *indent.get_or_insert(line.indent);
            if line.indent <= parent || line.indent < k {
                break;
            }
            for _ in 0..blanks {
                text.push('\n');
            }
            blanks = 0;
            text.extend(std::iter::repeat_n(' ', line.indent - k));
            text.push_str(raw);
            text.push('\n');
            self.at += 1;
        }
        if indent.is_none_or(|k| k <= parent) {
            return None;
        }
        if !keep_last {
            text.pop();
        }
        push_string(&mut self.out, &text);
        Some(())
    }
}

/// `key: value` or `key:` (value then empty): `None` when the line is no plain key.
fn key_split(content: &str) -> Option<(&str, &str)> {
    let (key, value) = match content.find(": ") {
        Some(at) => (&content[..at], content[at + 2..].trim_start_matches(' ')),
        None => (content.strip_suffix(':')?, ""),
    };
    (!key.is_empty() && !key.ends_with(' ')).then_some((key, value))
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Plain {
    String,
    Integer,
    Boolean,
    Null,
}

/// How every YAML schema kubectl might meet types a plain scalar, when they all agree and the
/// scalar ends on its line; `None` otherwise.
fn plain_type(s: &str) -> Option<Plain> {
    let b = s.as_bytes();
    if b.iter()
        .any(|&c| c < 0x20 || c == b'"' || c == b'\\' || c == 0x7f)
        || s.contains(" #")
        || s.contains(": ")
        || s.ends_with(':')
    {
        return None;
    }
    match s {
        "null" | "Null" | "NULL" | "~" => return Some(Plain::Null),
        // Every schema reads these two so; their other spellings differ between YAML 1.1 and 1.2.
        "true" | "false" => return Some(Plain::Boolean),
        _ => {}
    }
    let first = b[0];
    let second = b.get(1).copied().unwrap_or(b' ');
    if first.is_ascii_alphabetic()
        || first == b'/'
        || (first == b'-' && (second.is_ascii_alphabetic() || second == b'-'))
    {
        const WORDS: [&str; 9] = ["true", "false", "yes", "no", "on", "off", "y", "n", "null"];
        if WORDS.iter().any(|w| s.eq_ignore_ascii_case(w))
            // `.inf` and `.nan` start with a dot; these are their other spellings in YAML 1.1.
            || s.eq_ignore_ascii_case("nan")
            || s.eq_ignore_ascii_case("inf")
        {
            return None;
        }
        return Some(Plain::String);
    }
    let digits = s.strip_prefix('-').unwrap_or(s);
    if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
        // Leading zeros read as octal in YAML 1.1; long ones may not fit.
        let canonical = digits == "0" || (!digits.starts_with('0') && digits.len() <= 18);
        return (canonical && s != "-0").then_some(Plain::Integer);
    }
    if !first.is_ascii_digit() {
        return None;
    }
    // Numbers and dates that start with a digit are written with these alone, past a `0x`,
    // `0o` or `0b`: a character outside them (`100m`, `5d8c7b9f4`) makes a string.
    let numeric = |c: u8| c.is_ascii_digit() || b"._:+- eEtTzZ".contains(&c);
    let radix = first == b'0' && b"xXoObB".contains(&second);
    let string = (!radix && !b.iter().all(|&c| numeric(c))) || is_ipv4(s) || is_uuid(s);
    string.then_some(Plain::String)
}

fn is_ipv4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| (1..=3).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()))
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|p| p.bytes().all(|c| c.is_ascii_hexdigit()))
}

fn push_string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.bytes().enumerate() {
        let escape = match c {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\t' => "\\t",
            c if c < 0x20 || c == 0x7f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            out.push_str(&format!("\\u{c:04x}"));
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// A double-quoted scalar that closes on its line; escapes beyond JSON's are left to the full
/// parser.
fn push_double_quoted(out: &mut String, value: &str) -> Option<()> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    let b = inner.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => return None,
            b'\\' => {
                match b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'n' | b't' | b'r' | b'b' | b'f' => i += 2,
                    b'u' => {
                        let hex = inner.get(i + 2..i + 6)?;
                        let code = u32::from_str_radix(hex, 16).ok()?;
                        // Surrogates pair up differently in YAML and JSON.
                        char::from_u32(code)?;
                        i += 6;
                    }
                    _ => return None,
                }
                continue;
            }
            c if c < 0x20 || c == 0x7f => return None,
            _ => {}
        }
        i += 1;
    }
    out.push_str(value);
    Some(())
}

fn push_single_quoted(out: &mut String, value: &str) -> Option<()> {
    let inner = value.strip_prefix('\'')?.strip_suffix('\'')?;
    if inner.split("''").any(|part| part.contains('\''))
        || inner.bytes().any(|c| c < 0x20 || c == 0x7f)
    {
        return None;
    }
    push_string(out, &inner.replace("''", "'"));
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    /// What the full parser reads in a text: a document, or the one entry of a sequence.
    fn full(text: &str, entry: bool) -> Option<Value> {
        match serde_saphyr::from_str::<Value>(text).ok()? {
            Value::Array(mut entries) if entry => (entries.len() == 1).then(|| entries.remove(0)),
            _ if entry => None,
            v => Some(v),
        }
    }

    fn fast(text: &str, entry: bool) -> Option<Value> {
        to_json(text, entry).map(|json| serde_json::from_str(&json).unwrap())
    }

    const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      {"apiVersion":"v1","kind":"Pod"}
    note: |-
      two
      # not a comment

      lines
  creationTimestamp: "2026-11-01T00:00:00Z"
  labels:
    app: web
    pod-template-hash: 5d8c7b9f4
  name: web-5d8c7b9f4-x2x8q
  namespace: shop
  ownerReferences:
  - apiVersion: apps/v1
    blockOwnerDeletion: true
    controller: true
    kind: ReplicaSet
    name: web-5d8c7b9f4
    uid: 0a1b2c3d-4e5f-6789-abcd-ef0123456789
  resourceVersion: "123456"
spec:
  containers:
  - args:
    - --port=8080
    - 'it''s'
    image: registry.example.com/team/web:v1
    ports:
    - containerPort: 8080
      protocol: TCP
    resources:
      limits:
        memory: 256Mi
      requests:
        cpu: 100m
        memory: 1.5Gi
    volumeMounts:
    - mountPath: /var/run/secrets
      name: token
      readOnly: true
  nodeName: ip-10-0-0-1.eu-west-1.compute.internal
  priority: -1
  tolerations:
  - effect: NoExecute
    key: node.kubernetes.io/not-ready
    operator: Exists
    tolerationSeconds: 300
  volumes:
  - emptyDir: {}
    name: scratch
status:
  hostIP: 10.0.0.1
  phase: Running
  podIPs:
  - ip: 10.244.1.5
  startTime: null
  message: "a \"quoted\" \u00e9 word\ttab"
"#;

    #[test]
    fn kubectl_output_is_read_as_the_full_parser_reads_it() {
        let value = fast(POD, false).expect("the fast path reads kubectl's YAML");
        assert_eq!(Some(value), full(POD, false));
        let entry: String = POD
            .lines()
            .enumerate()
            .map(|(i, l)| match (i, l) {
                (0, l) => format!("- {l}\n"),
                (_, "") => "\n".to_string(),
                (_, l) => format!("  {l}\n"),
            })
            .collect();
        assert_eq!(fast(&entry, true), full(&entry, true));
        assert!(fast(&entry, true).is_some());
    }

    #[test]
    fn what_it_cannot_vouch_for_is_left_to_the_full_parser() {
        for text in [
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a: {b: c}\n",
            "a: [1, 2]\n",
            "a: 08\n",
            "a: y\n",
            "a: 1.5\n",
            "a: 1e3\n",
            "a: 2026-11-01\n",
            "a: b\n  c\n",
            "a: \"b\n  c\"\n",
            "a: >\n  folded\n",
            "a: 1\na: 2\n",
            "on: 1\n",
            "? a\n: b\n",
            "a: b # comment\n",
            "a: |2\n   x\n",
            "%YAML 1.2\n---\na: 1\n",
        ] {
            assert_eq!(to_json(text, false), None, "{text}");
        }
    }

    /// A scalar as a YAML text may spell it, plain or not: mostly as kubectl writes them, often
    /// in ways a schema reads as something else or the fast path leaves alone.
    fn scalar() -> impl Strategy<Value = String> {
        let usual = prop::sample::select(vec![
            "web",
            "100m",
            "1.5Gi",
            "5d8c7b9f4",
            "10.0.0.1",
            "-1",
            "0",
            "42",
            "true",
            "false",
            "null",
            "\"q\"",
            "'it''s'",
            "--port=80",
            "/path",
            "é",
            "Running",
            "\"\"",
            "0a1b2c3d-4e5f-6789-abcd-ef0123456789",
            "\"2026-11-01T00:00:00Z\"",
            "a:b",
            "v1.2",
        ]);
        let odd = prop::sample::select(vec![
            "08",
            "y",
            "Y",
            "10.0",
            "1e1",
            "010",
            "Null",
            "~",
            "False",
            "1E",
            "2e3",
            "1.2.3",
            "0x1F",
            "12:30",
            "2026-11-01",
            "a #b",
            "a# b",
            "a: b",
            "x:",
            "\"a\\\"b\\u00e9\\x41\"",
            "\"a\\/b\\n\"",
            "'a'b'",
            "\"open",
            "-0",
            "+1",
            "-",
            "- x",
            "? x",
            "&a",
            "*a",
            "!x",
            "%x",
            "@x",
            "`x",
            "{}",
            "[]",
            "{a: 1}",
            "[1]",
            ".inf",
            "nan",
            "NaN",
            "Yes",
            "OFF",
            "1234567890123456789012",
            "<<",
            "a\tb",
            "",
            "0b1",
            "0o17",
            "0x1f",
            "1_000",
            "3s",
            "-x",
            "-.inf",
            "-1.5",
            "1:30",
            "2026-11-01T00:00:00Z",
            "1.",
            "8080/TCP",
        ]);
        prop_oneof![3 => usual, 2 => odd].prop_map(str::to_string)
    }

    #[derive(Clone, Debug)]
    enum Node {
        Scalar(String),
        /// Text of lines, written as a literal block scalar with this header.
        Block(&'static str, Vec<String>),
        Map(Vec<(String, Node)>),
        Seq(Vec<Node>),
    }

    fn key() -> impl Strategy<Value = String> {
        let usual = prop::sample::select(vec!["a", "b", "c", "kind", "b.c/d", "x y", "a:b"]);
        let odd = prop::sample::select(vec!["on", "y", "1", "null", "\"q\"", "-k", "a "]);
        prop_oneof![6 => usual, 1 => odd].prop_map(str::to_string)
    }

    fn node() -> impl Strategy<Value = Node> {
        let block = (
            prop::sample::select(vec!["|", "|-", "|", "|-", "|+", ">", "|2"]),
            prop::collection::vec(
                prop::sample::select(vec!["x", "", "  y", "# z", "a: b", "- c"])
                    .prop_map(str::to_string),
                1..4,
            ),
        )
            .prop_map(|(h, lines)| Node::Block(h, lines));
        let leaf = prop_oneof![4 => scalar().prop_map(Node::Scalar), 1 => block];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec((key(), inner.clone()), 0..4).prop_map(Node::Map),
                prop::collection::vec(inner, 0..4).prop_map(Node::Seq),
            ]
        })
    }

    /// Writes what follows a key's `:` (or an entry's `-`) at `indent`, block style as kubectl
    /// does, sequences under a key at the key's indent when `compact`.
    fn write(n: &Node, indent: usize, compact: bool, out: &mut String) {
        let pad = |width: usize| " ".repeat(width);
        match n {
            Node::Scalar(s) => {
                out.push(' ');
                out.push_str(s);
                out.push('\n');
            }
            Node::Block(header, lines) => {
                out.push_str(&format!(" {header}\n"));
                for l in lines {
                    out.push_str(&format!("{}{l}\n", pad(indent + 2)));
                }
            }
            Node::Map(m) if m.is_empty() => out.push_str(" {}\n"),
            Node::Seq(s) if s.is_empty() => out.push_str(" []\n"),
            Node::Map(m) => {
                out.push('\n');
                for (k, v) in m {
                    out.push_str(&format!("{}{k}:", pad(indent + 2)));
                    write(v, indent + 2, compact, out);
                }
            }
            Node::Seq(s) => {
                out.push('\n');
                let at = if compact { indent } else { indent + 2 };
                for item in s {
                    out.push_str(&format!("{}-", pad(at)));
                    match item {
                        Node::Map(m) if !m.is_empty() => {
                            for (i, (k, v)) in m.iter().enumerate() {
                                let lead = if i == 0 { " ".to_string() } else { pad(at + 2) };
                                out.push_str(&format!("{lead}{k}:"));
                                write(v, at + 2, compact, out);
                            }
                        }
                        other => write(other, at, false, out),
                    }
                }
            }
        }
    }

    fn document(entries: &[(String, Node)], compact: bool) -> String {
        let mut out = String::new();
        for (k, v) in entries {
            out.push_str(&format!("{k}:"));
            write(v, 0, compact, &mut out);
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]
        /// Whatever the fast path reads, the full parser reads the same, as a document and as a
        /// List item.
        #[test]
        fn agrees_with_the_full_parser(
            entries in prop::collection::vec((key(), node()), 1..5),
            compact in any::<bool>(),
        ) {
            let text = document(&entries, compact);
            if let Some(value) = fast(&text, false) {
                prop_assert_eq!(Some(value), full(&text, false), "{}", text);
            }
            let entry: String = text
                .lines()
                .enumerate()
                .map(|(i, l)| if i == 0 { format!("- {l}\n") } else { format!("  {l}\n") })
                .collect();
            if let Some(value) = fast(&entry, true) {
                prop_assert_eq!(Some(value), full(&entry, true), "{}", entry);
            }
        }
    }
}
