//! Cutting a JSON List into its items while it streams in (a live list response, or a snapshot
//! file): a byte scanner that follows JSON strings, escapes and nesting across chunk boundaries, so
//! the items of a 150,000-pod list are typed batch by batch as they arrive and the text is never
//! held whole. The scanner only finds where each item starts and ends; serde_json reads (and
//! validates) each item and what is left of the list (its `kind`, `metadata`, and `items` emptied).

use memchr::memchr2;

/// The top-level keys whose repetition `finish_item` looks for in an item, quotes included;
/// `items` is also the list's own key, which the shell is read for.
const KIND: &[u8] = b"\"kind\"";
const ITEMS: &[u8] = b"\"items\"";

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

/// The items a splitter has cut out, one after another in one buffer: a batch of items costs one
/// allocation, kept from batch to batch, not one each.
#[derive(Default)]
pub struct Cut {
    bytes: Vec<u8>,
    items: Vec<CutItem>,
}

/// Where an item lies in its `Cut`, and what its top-level keys are.
#[derive(Clone, Copy, Debug)]
pub struct CutItem {
    start: usize,
    end: usize,
    plain_keys: bool,
}

/// An item's text, and whether its top-level keys are plain: none written with escapes, and
/// neither `kind` nor `items` written twice. Then a reader looking for those keys in the text
/// finds them where serde_json does, once, and need not parse the item to know.
#[derive(Clone, Copy, Debug)]
pub struct Piece<'c> {
    pub text: &'c [u8],
    pub plain_keys: bool,
}

impl Cut {
    /// The items cut out and not yet taken.
    pub fn items(&self) -> &[CutItem] {
        &self.items
    }

    pub fn piece(&self, item: &CutItem) -> Piece<'_> {
        Piece {
            text: &self.bytes[item.start..item.end],
            plain_keys: item.plain_keys,
        }
    }

    /// Forgets the first `n` items; the item being cut stays.
    pub fn take(&mut self, n: usize) {
        let Some(last) = n.checked_sub(1).map(|i| self.items[i]) else {
            return;
        };
        self.bytes.drain(..last.end);
        self.items.drain(..n);
        for item in &mut self.items {
            item.start -= last.end;
            item.end -= last.end;
        }
    }

    /// Where the item being cut starts.
    fn open(&self) -> usize {
        self.items.last().map_or(0, |i| i.end)
    }
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
    shell_key_start: Option<usize>,
    /// The last complete string at depth 1 was `"items"`, and then its colon was read.
    items_key: bool,
    items_value: bool,
    shell: Vec<u8>,
    /// Bytes of the item being cut, read so far.
    item_len: usize,
    /// In the item's object, the next string is a key.
    expect_key: bool,
    /// Where the top-level key being read starts in the item.
    key_start: Option<usize>,
    /// How many times the item's top-level keys so far are `"kind"` and `"items"`: counted as
    /// each key ends, so an item of a million keys holds no list of them.
    kind_keys: u8,
    items_keys: u8,
    /// A top-level key of the item is written with an escape.
    escaped_key: bool,
    /// Where `feed` cuts items to before handing them out one by one.
    owned: Cut,
}

impl Default for ListSplitter {
    fn default() -> Self {
        ListSplitter {
            state: State::Start,
            depth: 0,
            item_depth: 0,
            in_string: false,
            escaped: false,
            shell_key_start: None,
            items_key: false,
            items_value: false,
            shell: Vec::new(),
            item_len: 0,
            expect_key: false,
            key_start: None,
            kind_keys: 0,
            items_keys: 0,
            escaped_key: false,
            owned: Cut::default(),
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
        let mut cut = std::mem::take(&mut self.owned);
        let fed = self.feed_cut(chunk, &mut cut);
        items.extend(cut.items().iter().map(|i| cut.piece(i).text.to_vec()));
        cut.take(cut.items().len());
        self.owned = cut;
        fed
    }

    /// Reads the next piece of the body; the items it completes are appended to `cut`, where
    /// the item it starts and does not complete is kept too.
    pub fn feed_cut(&mut self, chunk: &[u8], cut: &mut Cut) -> Result<(), serde_json::Error> {
        let mut i = 0;
        while i < chunk.len() {
            match self.state {
                State::Item => i = self.item_bytes(chunk, i, cut),
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
                if let Some(start) = self.shell_key_start.take() {
                    self.items_key = &self.shell[start..] == ITEMS;
                }
            }
            return;
        }
        let value_of_items = std::mem::take(&mut self.items_value);
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 {
                    self.shell_key_start = Some(self.shell.len() - 1);
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
    fn item_bytes(&mut self, chunk: &[u8], mut i: usize, cut: &mut Cut) -> usize {
        let start = i;
        // Where a byte of `chunk` is in the item.
        let in_item = self.item_len.wrapping_sub(start);
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
                            self.escaped_key |= self.key_start.is_some();
                        } else {
                            self.in_string = false;
                            if let Some(key) = self.key_start.take() {
                                self.count_key(cut, chunk, start, key..in_item.wrapping_add(i + 1));
                            }
                        }
                        i += 1;
                    }
                }
                continue;
            }
            match chunk[i] {
                b'"' => {
                    self.in_string = true;
                    if self.item_depth == 1 && std::mem::take(&mut self.expect_key) {
                        self.key_start = Some(in_item.wrapping_add(i));
                    }
                }
                b',' if self.item_depth == 1 => self.expect_key = true,
                b'{' | b'[' => {
                    self.item_depth += 1;
                    self.expect_key = self.item_depth == 1 && chunk[i] == b'{';
                }
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
        cut.bytes.extend_from_slice(&chunk[start..i]);
        self.item_len += i - start;
        if done {
            self.finish_item(cut);
        }
        i
    }

    /// Counts a top-level key of the item, at `range` of it. The item's bytes before this piece
    /// of it are in `cut`; the rest are `chunk`'s from `chunk_start`.
    fn count_key(
        &mut self,
        cut: &Cut,
        chunk: &[u8],
        chunk_start: usize,
        range: std::ops::Range<usize>,
    ) {
        let (count, key) = match range.len() {
            n if n == KIND.len() => (&mut self.kind_keys, KIND),
            n if n == ITEMS.len() => (&mut self.items_keys, ITEMS),
            _ => return,
        };
        let (read_before, item_start) = (self.item_len, cut.open());
        let byte = |at: usize| match at.checked_sub(read_before) {
            None => cut.bytes[item_start + at],
            Some(in_chunk) => chunk[chunk_start + in_chunk],
        };
        if range.zip(key).all(|(at, &b)| byte(at) == b) {
            *count = count.saturating_add(1);
        }
    }

    fn finish_item(&mut self, cut: &mut Cut) {
        let start = cut.open();
        let plain_keys = !self.escaped_key && self.kind_keys <= 1 && self.items_keys <= 1;
        cut.items.push(CutItem {
            start,
            end: cut.bytes.len(),
            plain_keys,
        });
        self.item_len = 0;
        (self.kind_keys, self.items_keys) = (0, 0);
        self.escaped_key = false;
        self.expect_key = false;
        self.state = State::Between {
            item_read: true,
            comma: false,
        };
    }

    /// Bytes held between pieces: the item being cut and the list outside its items.
    pub fn held(&self) -> usize {
        self.item_len + self.shell.len()
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

    /// Whether an item's top-level keys are plain, wherever the pieces are cut.
    #[test]
    fn plain_keys_at_every_cut() {
        let cases = [
            (
                r#"{"kind":"Pod","metadata":{"kind":"x","items":[]},"items":"kind"}"#,
                true,
            ),
            (
                r#"{ "apiVersion" : "v1" , "kind" : "Pod" , "x" : ["kind", "kind"] }"#,
                true,
            ),
            (r#"{"a":"\"kind\"","kind":"Pod","b":{"kind":1}}"#, true),
            (r#"{"kind":"Pod","spec":{},"kind":"Node"}"#, false),
            (r#"{"items":1, "items":2}"#, false),
            (r#"{"k\u0069nd":"Pod"}"#, false),
            (r#"{"a\"b":1}"#, false),
            (r#"{"x":"a\"b","kind":"\u0050od"}"#, true),
            // Keys as long as `"kind"` and `"items"`, which are compared with them.
            (
                r#"{"kinx":1,"kind":"Pod","itemz":2,"kinx":3,"itemz":4}"#,
                true,
            ),
            (r#"{"kinx":1,"kind":"Pod","itemz":2,"kind":"Node"}"#, false),
        ];
        for (item, plain) in cases {
            let text = format!(r#"{{"kind":"List","items":[{item},{{"kind":"Pod"}}]}}"#);
            let text = text.as_bytes();
            for at in 0..text.len() {
                let mut s = ListSplitter::default();
                let mut cut = Cut::default();
                s.feed_cut(&text[..at], &mut cut).unwrap();
                s.feed_cut(&text[at..], &mut cut).unwrap();
                let pieces: Vec<_> = cut.items().iter().map(|i| cut.piece(i)).collect();
                assert_eq!(pieces.len(), 2, "{item} cut at {at}");
                assert_eq!(pieces[0].text, item.as_bytes(), "cut at {at}");
                assert_eq!(pieces[0].plain_keys, plain, "{item} cut at {at}");
                assert!(pieces[1].plain_keys);
            }
        }
    }

    /// The keys of an item still being read are counted, not held: ten thousand of them, and
    /// the counts are those of `kind` and `items`.
    #[test]
    fn keys_are_counted_as_they_end() {
        let keys: String = (0..10_000).map(|i| format!(r#""key{i:05}":1,"#)).collect();
        let text = format!(r#"{{"kind":"List","items":[{{{keys}"kind":"Pod","items":[]"#);
        let mut s = ListSplitter::default();
        s.feed_cut(text.as_bytes(), &mut Cut::default()).unwrap();
        assert_eq!((s.kind_keys, s.items_keys), (1, 1));
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
