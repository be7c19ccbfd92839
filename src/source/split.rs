//! Cutting a JSON List into its items while it streams in (a live list response, or a snapshot
//! file): a byte scanner that follows JSON strings, escapes and nesting across chunk boundaries, so
//! the items of a 150,000-pod list are typed batch by batch as they arrive and the text is never
//! held whole. The scanner only finds where each item starts and ends; serde_json reads (and
//! validates) each item and what is left of the list (its `kind`, `metadata`, and `items` emptied).

use memchr::memchr2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the list object's `{`.
    Start,
    /// In the list object, outside its items: copied to the shell.
    Shell,
    /// In the items array between items; `item_read` once an item has been read and its comma not.
    Between { item_read: bool, comma: bool },
    /// In an item: copied to the item.
    Item,
    /// After the list object's `}`.
    End,
}

/// Where a body is not the JSON a list is: said the way serde_json says it, so it reads as the
/// answer's decoding error it is.
pub fn syntax(what: &str) -> serde_json::Error {
    serde::de::Error::custom(format!("{what} in the list's items"))
}

/// Splits a JSON list object, fed piece by piece, into the texts of its `items` and the rest.
pub struct ListSplitter {
    state: State,
    /// Nesting depth in the shell: 1 for the list's own fields.
    depth: usize,
    /// Nesting depth in an item.
    item_depth: usize,
    in_string: bool,
    /// The last piece ended in a backslash inside a string: the next byte is escaped.
    escaped: bool,
    /// In the shell at depth 1, where the string being read (a key, maybe) starts in `shell`.
    key_start: Option<usize>,
    /// The last complete string at depth 1 was `"items"`, and then its colon was read.
    items_key: bool,
    items_value: bool,
    shell: Vec<u8>,
    item: Vec<u8>,
    /// The length of the last item: the next is likely alike.
    last_len: usize,
}

impl Default for ListSplitter {
    fn default() -> Self {
        ListSplitter {
            state: State::Start,
            depth: 0,
            item_depth: 0,
            in_string: false,
            escaped: false,
            key_start: None,
            items_key: false,
            items_value: false,
            shell: Vec::new(),
            item: Vec::new(),
            last_len: 0,
        }
    }
}

impl ListSplitter {
    /// Reads the next piece of the body; the items it completes are appended to `items`.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        items: &mut Vec<Vec<u8>>,
    ) -> Result<(), serde_json::Error> {
        let mut i = 0;
        while i < chunk.len() {
            match self.state {
                State::Item => i = self.item_bytes(chunk, i, items),
                State::Between { item_read, comma } => {
                    let b = chunk[i];
                    match b {
                        b' ' | b'\t' | b'\n' | b'\r' => {}
                        b',' if item_read && !comma => {
                            self.state = State::Between {
                                item_read,
                                comma: true,
                            }
                        }
                        b']' if !comma => {
                            self.shell.push(b']');
                            self.state = State::Shell;
                        }
                        b',' | b']' => return Err(syntax("a misplaced comma")),
                        _ if item_read && !comma => return Err(syntax("a missing comma")),
                        _ => {
                            self.state = State::Item;
                            self.item_depth = 0;
                            self.item = Vec::with_capacity(self.last_len + self.last_len / 8);
                            continue;
                        }
                    }
                    i += 1;
                }
                State::Shell => {
                    self.shell_byte(chunk[i]);
                    i += 1;
                }
                State::Start => {
                    let b = chunk[i];
                    if !b.is_ascii_whitespace() {
                        self.state = State::Shell;
                        if b != b'{' {
                            // Not an object: serde_json says what it is when it reads the shell.
                            self.depth = usize::MAX / 2;
                        }
                        continue;
                    }
                    self.shell.push(b);
                    i += 1;
                }
                State::End => {
                    self.shell.extend_from_slice(&chunk[i..]);
                    i = chunk.len();
                }
            }
        }
        Ok(())
    }

    /// One byte of the list outside its items.
    fn shell_byte(&mut self, b: u8) {
        self.shell.push(b);
        if self.in_string {
            if closes_string(&mut self.escaped, b) {
                self.in_string = false;
                if let Some(start) = self.key_start.take() {
                    self.items_key = &self.shell[start..] == b"\"items\"";
                }
            }
            return;
        }
        let value_of_items = std::mem::take(&mut self.items_value);
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 {
                    self.key_start = Some(self.shell.len() - 1);
                }
                self.items_key = false;
            }
            b':' if self.depth == 1 => {
                self.items_value = std::mem::take(&mut self.items_key);
            }
            b' ' | b'\t' | b'\n' | b'\r' => self.items_value = value_of_items,
            b'[' if value_of_items => {
                self.state = State::Between {
                    item_read: false,
                    comma: false,
                };
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.items_key = false;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                self.items_key = false;
                if self.depth == 0 {
                    self.state = State::End;
                }
            }
            _ => self.items_key = false,
        }
    }

    /// Bytes of an item from `i`; returns where the item's bytes in `chunk` end.
    fn item_bytes(&mut self, chunk: &[u8], mut i: usize, items: &mut Vec<Vec<u8>>) -> usize {
        let start = i;
        let mut done = false;
        while i < chunk.len() {
            if self.escaped {
                self.escaped = false;
                i += 1;
                continue;
            }
            if self.in_string {
                match memchr2(b'"', b'\\', &chunk[i..]) {
                    None => i = chunk.len(),
                    Some(k) => {
                        i += k;
                        if chunk[i] == b'\\' {
                            self.escaped = true;
                        } else {
                            self.in_string = false;
                        }
                        i += 1;
                    }
                }
                continue;
            }
            match chunk[i] {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.item_depth += 1,
                b'}' | b']' if self.item_depth > 0 => {
                    self.item_depth -= 1;
                    if self.item_depth == 0 {
                        i += 1;
                        done = true;
                        break;
                    }
                }
                // The end of a scalar item (a number, true, false, null): the delimiter is
                // read between items.
                b',' | b']' | b' ' | b'\t' | b'\n' | b'\r' if self.item_depth == 0 => {
                    done = true;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        self.item.extend_from_slice(&chunk[start..i]);
        if done {
            self.finish_item(items);
        }
        i
    }

    fn finish_item(&mut self, items: &mut Vec<Vec<u8>>) {
        self.last_len = self.item.len();
        items.push(std::mem::take(&mut self.item));
        self.state = State::Between {
            item_read: true,
            comma: false,
        };
    }

    /// Bytes held between pieces: the item being cut and the list outside its items.
    pub fn held(&self) -> usize {
        self.item.len() + self.shell.len()
    }

    /// At the end of the body: the list with its items emptied, for serde_json to read.
    pub fn finish(self) -> Result<Vec<u8>, serde_json::Error> {
        match self.state {
            State::Between { .. } | State::Item => Err(syntax("an end of the answer")),
            _ => Ok(self.shell),
        }
    }
}

/// Drops an object's `metadata.managedFields` from its text, before it is typed, as
/// kube-scheduler's pod informer drops them: the scheduler never reads them, and they are often
/// half of what the API server sends of a pod.
pub fn drop_managed_fields(item: &mut Vec<u8>) {
    const KEY: &[u8] = b"\"managedFields\"";
    // A quote inside a string is escaped, so these bytes unescaped are a key; the scan vouches
    // that it is one of the object's metadata (depth 2: an unknown field elsewhere is ignored
    // when typed anyway).
    let Some(at) = memchr::memmem::find(item, KEY) else {
        return;
    };
    let mut scan = Scan::default();
    if scan.run(&item[..at]).is_some() || scan.depth != 2 || scan.in_string {
        return;
    }
    let mut colon = at + KEY.len();
    while item.get(colon).is_some_and(u8::is_ascii_whitespace) {
        colon += 1;
    }
    if item.get(colon) != Some(&b':') {
        return;
    }
    // The value ends where the scan is back at depth 2 after it.
    let mut value = Scan {
        depth: 2,
        ..Scan::default()
    };
    let Some(len) = value.run(&item[colon + 1..]) else {
        return;
    };
    let end = colon + 1 + len;
    let mut after = end;
    while item.get(after).is_some_and(u8::is_ascii_whitespace) {
        after += 1;
    }
    match item.get(after) {
        Some(b',') => {
            item.drain(at..=after);
        }
        Some(b'}') => {
            // The last field: its comma is before it.
            let mut before = at;
            while before > 0 && item[before - 1].is_ascii_whitespace() {
                before -= 1;
            }
            if before > 0 && item[before - 1] == b',' {
                item.drain(before - 1..end);
            } else if before > 0 && item[before - 1] == b'{' {
                item.drain(at..end);
            }
        }
        _ => {}
    }
}

/// One byte inside a JSON string (after an escaping backslash when `escaped`): whether it
/// closes the string.
fn closes_string(escaped: &mut bool, b: u8) -> bool {
    if std::mem::take(escaped) {
        return false;
    }
    *escaped = b == b'\\';
    b == b'"'
}

/// Strings and nesting of a JSON text, followed byte by byte.
#[derive(Default)]
struct Scan {
    depth: usize,
    in_string: bool,
    escaped: bool,
    started: bool,
}

impl Scan {
    /// Follows `text`: where a value started at the scan's depth ends (the first byte after
    /// it), or `None` if it does not end in `text`.
    fn run(&mut self, text: &[u8]) -> Option<usize> {
        let base = self.depth;
        for (i, &b) in text.iter().enumerate() {
            if self.in_string {
                if closes_string(&mut self.escaped, b) {
                    self.in_string = false;
                    if self.depth == base && self.started {
                        return Some(i + 1);
                    }
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    self.started = true;
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    self.started = true;
                }
                b'}' | b']' => {
                    if self.depth == base {
                        return self.started.then_some(i);
                    }
                    self.depth -= 1;
                    if self.depth == base {
                        return Some(i + 1);
                    }
                }
                b',' if self.depth == base && self.started => return Some(i),
                b' ' | b'\t' | b'\n' | b'\r' => {}
                _ => self.started = true,
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn split(text: &[u8], cuts: &[usize]) -> Result<(Vec<Value>, Value), serde_json::Error> {
        let mut s = ListSplitter::default();
        let mut items = Vec::new();
        let mut at = 0;
        for &cut in cuts.iter().chain(std::iter::once(&text.len())) {
            let cut = cut.clamp(at, text.len());
            s.feed(&text[at..cut], &mut items)?;
            at = cut;
        }
        let shell: Value = serde_json::from_slice(&s.finish()?)?;
        let items = items
            .iter()
            .map(|i| serde_json::from_slice(i))
            .collect::<Result<_, _>>()?;
        Ok((items, shell))
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            // Quotes, backslashes, brackets and non-ASCII inside strings.
            "[\"\\\\{}\\[\\],: a-zé\u{1F600}\u{0001}]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\"\\\\\\[{]{0,6}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever the chunking and however the list is written (compact or pretty, its items
        /// before or after its metadata), the items are serde_json's and so is the rest.
        #[test]
        fn agrees_with_serde_json(
            items in prop::collection::vec(value(), 0..6),
            meta in value(),
            items_first in any::<bool>(),
            pretty in any::<bool>(),
            cuts in prop::collection::vec(0usize..2000, 0..12),
        ) {
            let mut list = serde_json::Map::new();
            let put = |list: &mut serde_json::Map<String, Value>, first: bool| {
                if first == items_first {
                    list.insert("items".into(), Value::Array(items.clone()));
                } else {
                    list.insert("metadata".into(), json!({"continue": "", "items": meta.clone()}));
                }
            };
            put(&mut list, true);
            put(&mut list, false);
            list.insert("kind".into(), json!("PodList"));
            let list = Value::Object(list);
            let text = if pretty {
                serde_json::to_vec_pretty(&list).unwrap()
            } else {
                serde_json::to_vec(&list).unwrap()
            };
            let mut cuts = cuts;
            cuts.sort();
            let (got, shell) = split(&text, &cuts).unwrap();
            let mut whole: Value = serde_json::from_slice(&text).unwrap();
            prop_assert_eq!(Value::Array(got), whole["items"].take());
            whole["items"] = json!([]);
            prop_assert_eq!(shell, whole);
        }
    }

    #[test]
    fn every_cut_of_a_tricky_list() {
        let text = br#" {"kind":"PodList","metadata":{"items":[1],"continue":"a\"]}"},"items" : [ {"a":"\\\"}]"},"x\\",[[]],-1.5e3 , null,{}],"z":{"items":[2]}} "#;
        let expected: Value = serde_json::from_slice(text).unwrap();
        for a in 0..text.len() {
            for b in a..text.len() {
                let (items, shell) = split(text, &[a, b]).unwrap();
                assert_eq!(Value::Array(items), expected["items"], "cut at {a}, {b}");
                assert_eq!(shell["metadata"], expected["metadata"]);
                assert_eq!(shell["z"], expected["z"]);
            }
        }
    }

    #[test]
    fn managed_fields_are_dropped_from_metadata_only() {
        let cases = [
            (
                r#"{"metadata":{"name":"p","managedFields":[{"manager":"k\"}]","fieldsV1":{"f:spec":{}}}],"uid":"u"},"spec":{}}"#,
                r#"{"metadata":{"name":"p","uid":"u"},"spec":{}}"#,
            ),
            (
                r#"{"metadata":{"name":"p", "managedFields" : [] },"spec":{}}"#,
                r#"{"metadata":{"name":"p" },"spec":{}}"#,
            ),
            (
                r#"{"metadata":{"managedFields":null},"spec":{}}"#,
                r#"{"metadata":{},"spec":{}}"#,
            ),
            // Elsewhere, or inside a string, they stay.
            (
                r#"{"metadata":{"annotations":{"a":"\"managedFields\":[]"}},"spec":{"x":{"managedFields":[]}}}"#,
                r#"{"metadata":{"annotations":{"a":"\"managedFields\":[]"}},"spec":{"x":{"managedFields":[]}}}"#,
            ),
        ];
        for (before, after) in cases {
            let mut item = before.as_bytes().to_vec();
            drop_managed_fields(&mut item);
            assert_eq!(String::from_utf8(item).unwrap(), after);
        }
    }

    #[test]
    fn broken_lists_are_errors() {
        for text in [
            &br#"{"items":[{"a":1}"#[..],
            br#"{"items":[{"a":1},]}"#,
            br#"{"items":[{"a":1} {"b":2}]}"#,
            br#"{"items":[,{"a":1}]}"#,
            br#"{"items":[{"a":"#,
        ] {
            assert!(
                split(text, &[]).is_err(),
                "{}",
                String::from_utf8_lossy(text)
            );
        }
        // Not a list at all: the shell says what it is.
        let (items, shell) = split(b"[1,2]", &[]).unwrap();
        assert!(items.is_empty());
        assert_eq!(shell, json!([1, 2]));
    }
}
