//! Reading cluster state from files: YAML or JSON, a `v1 List`, multi-document YAML or single
//! objects, gzip-compressed or not, from a file, a directory of files, or stdin (`-`).

use super::decode::Decoder;
use super::input;
pub use super::input::Limits;
pub use super::load_error::LoadError;
use super::split::{Cut, ListSplitter, Piece};
use super::{Object, Reading};
use crate::model::cluster::{Cluster, ClusterBuilder, ConvertedPod, convert_pod};
use crate::model::error::ObjectError;
use crate::model::parse::{LoadOptions, Parse};
use serde::Deserializer;
use serde::de::{DeserializeOwned, DeserializeSeed};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

/// Reads a path given to `--snapshot` into a cluster, with the default limits.
pub fn load(path: &str) -> Result<Cluster, LoadError> {
    load_with(path, Limits::default(), LoadOptions::default())
}

/// Reads a path given to `--snapshot` into a cluster.
pub fn load_with(path: &str, limits: Limits, options: LoadOptions) -> Result<Cluster, LoadError> {
    if path == "-" {
        return load_stdin(limits, options);
    }
    let files: Vec<String> = input::files_under(Path::new(path))?
        .iter()
        .map(|file| file.display().to_string())
        .collect();
    let streams = files.iter().map(|name| {
        let stream = input::stream_file(name, limits)?;
        Some((name.as_str(), stream))
    });
    if let Some(streamed) = load_streams(path, streams, limits, options) {
        return streamed;
    }
    // Read lazily: one file's bytes in memory at a time.
    let whole = files.into_iter().map(|name| {
        let bytes = input::read_file(&name, limits)?;
        Ok((name, bytes))
    });
    build(path, whole, options)
}

/// Stdin, streamed as a file is from where it is spooled, or read whole.
fn load_stdin(limits: Limits, options: LoadOptions) -> Result<Cluster, LoadError> {
    let whole = |bytes| build("-", [Ok((input::STDIN.to_string(), bytes))], options);
    let spooled = match input::spool_stdin(limits)? {
        input::Stdin::Spooled(spooled) => spooled,
        input::Stdin::Read(bytes) => return whole(bytes),
    };
    if let Some(mut stream) = spooled.stream()
        && let Some(streamed) = load_stream("-", &mut stream, limits, options)
    {
        return streamed;
    }
    whole(spooled.read()?)
}

/// Reads one file's content (`name` labels it in messages) into a cluster.
pub fn load_bytes(name: &str, bytes: Vec<u8>) -> Result<Cluster, LoadError> {
    build(
        name,
        [Ok((name.to_string(), bytes))],
        LoadOptions::default(),
    )
}

/// One input holding one JSON List (what `kubectl get -o json` and `snapshot` write), YAML
/// documents, or one YAML List as `kubectl get -o yaml` lays it out, gzip-compressed or not,
/// read as it streams: its objects are cut out as the text arrives and typed batch by batch, so
/// memory holds a batch of the text, never all of it. `None` for anything else (several JSON
/// documents, a List nested in the List, an anchor used across items) and on any error, however
/// late: the general path then reads the input whole and answers exactly as it always did,
/// errors and their line and column included.
fn load_stream(
    path: &str,
    reader: &mut dyn std::io::Read,
    limits: Limits,
    options: LoadOptions,
) -> Option<Result<Cluster, LoadError>> {
    load_streams(path, [Some((path, reader))], limits, options)
}

/// The inputs `path` stands for (a file, or the files of a directory), each streamed as
/// `load_stream` streams one, in order into one cluster, as `build` reads them whole into one;
/// `None` as soon as one cannot be streamed (`None` among `inputs`: a pipe, a file past the
/// limit) or turns out to need reading whole.
fn load_streams<'n, R: std::io::Read>(
    path: &str,
    inputs: impl IntoIterator<Item = Option<(&'n str, R)>>,
    limits: Limits,
    options: LoadOptions,
) -> Option<Result<Cluster, LoadError>> {
    let mut builder = ClusterBuilder::new(options);
    let mut tally = Tally::default();
    for input in inputs {
        let (name, mut reader) = input?;
        stream_list(&mut builder, &mut tally, name, &mut reader, limits).ok()?;
    }
    tally.warn(&mut builder);
    Some(builder.finish().map_err(|errors| LoadError::Invalid {
        path: path.to_string(),
        errors,
    }))
}

/// Bytes read from a streamed file at a time.
const STREAM_CHUNK: usize = 1 << 20;

/// The most a streamed file's item (or the List around its items, or a line) may hold: far more
/// than any object the API server stores (etcd's limit is 1.5 MiB), so an input that holds more
/// is something else, read by the general path within its own bounds.
const STREAM_HELD: usize = 16 << 20;

/// Says that the input must be read whole; never shown: the general path then says what is
/// wrong with it, if anything.
fn read_whole(path: &str) -> LoadError {
    LoadError::Content {
        path: path.to_string(),
        message: "not a List laid out as kubectl writes one: read whole".into(),
    }
}

/// A streamed file a chunk at a time, within the limit on one input.
struct Chunks<'r> {
    reader: &'r mut dyn std::io::Read,
    chunk: Vec<u8>,
    len: usize,
    total: u64,
    limits: Limits,
    /// The chunk read last is handed out again by the next `next`.
    replay: bool,
}

impl<'r> Chunks<'r> {
    fn new(reader: &'r mut dyn std::io::Read, limits: Limits) -> Self {
        Chunks {
            reader,
            chunk: vec![0u8; STREAM_CHUNK],
            len: 0,
            total: 0,
            limits,
            replay: false,
        }
    }

    fn fill(&mut self, path: &str) -> Result<(), LoadError> {
        self.len = input::read_chunk(self.reader, &mut self.chunk).map_err(|_| read_whole(path))?;
        self.total += self.len as u64;
        if self.total > self.limits.max_input {
            return Err(read_whole(path));
        }
        Ok(())
    }

    /// The first byte with content, left to be read: it says JSON or YAML, as `read_into` has it.
    fn first_byte(&mut self, path: &str) -> Result<u8, LoadError> {
        self.fill(path)?;
        self.replay = true;
        let first = self.chunk[..self.len]
            .iter()
            .find(|b| !b.is_ascii_whitespace());
        first.copied().ok_or_else(|| read_whole(path))
    }

    /// The next piece of the input; empty at its end.
    fn next(&mut self, path: &str) -> Result<&[u8], LoadError> {
        if !std::mem::take(&mut self.replay) {
            self.fill(path)?;
        }
        Ok(&self.chunk[..self.len])
    }
}

/// The items of the List `reader` holds, JSON or YAML, added to `builder` as they are read.
fn stream_list(
    builder: &mut ClusterBuilder,
    tally: &mut Tally,
    path: &str,
    reader: &mut dyn std::io::Read,
    limits: Limits,
) -> Result<(), LoadError> {
    let mut chunks = Chunks::new(reader, limits);
    match chunks.first_byte(path)? {
        b'{' => stream_json_list(builder, tally, path, &mut chunks),
        b'[' => Err(read_whole(path)),
        _ => stream_yaml_list(builder, tally, path, &mut chunks),
    }
}

/// A JSON List object, its items cut out by the scanner live reads use.
fn stream_json_list(
    builder: &mut ClusterBuilder,
    tally: &mut Tally,
    path: &str,
    chunks: &mut Chunks,
) -> Result<(), LoadError> {
    let item = |i, piece: Piece| {
        if piece.text.len() > STREAM_HELD {
            return Err(read_whole(path));
        }
        let text = std::str::from_utf8(piece.text).map_err(|_| read_whole(path))?;
        // What the general path refuses or reads otherwise is left to it: an item that is no
        // object; a `kind` or `items` written twice, or a key written with escapes (there
        // serde_json's answer is another than a look at the keys); a List among the items,
        // which it flattens.
        if !text.starts_with('{') || !piece.plain_keys {
            return Err(read_whole(path));
        }
        let listed = match top_level_string(text, "kind") {
            Some(kind) => is_list(kind),
            // Absent, not a string, or a string written with escapes: serde_json says which.
            None => {
                let peek: Peek = serde_json::from_str(text).map_err(|_| read_whole(path))?;
                is_list(&peek.kind())
            }
        };
        if listed {
            return Err(read_whole(path));
        }
        // A syntax error is refused when the item is typed or read as a value, and a kind that
        // is skipped is read through.
        json_item(path, i, text)
    };
    let mut splitter = ListSplitter::default();
    let mut cut = Cut::default();
    // Items typed before those in `cut`.
    let mut typed = 0;
    loop {
        let bytes = chunks.next(path)?;
        if bytes.is_empty() {
            break;
        }
        splitter
            .feed_cut(bytes, &mut cut)
            .map_err(|_| read_whole(path))?;
        if splitter.held() > STREAM_HELD {
            return Err(read_whole(path));
        }
        // A batch at a time, as `Batches` types them.
        let mut batched = 0;
        while cut.items().len() - batched >= BATCH {
            typed += add_cut(builder, tally, &cut, batched..batched + BATCH, typed, &item)?;
            batched += BATCH;
        }
        cut.take(batched);
    }
    add_cut(builder, tally, &cut, 0..cut.items().len(), typed, &item)?;
    let shell = splitter.finish().map_err(|_| read_whole(path))?;
    let shell = std::str::from_utf8(&shell).map_err(|_| read_whole(path))?;
    let mut documents = serde_json::Deserializer::from_str(shell).into_iter::<&RawValue>();
    let (Some(Ok(list)), None) = (documents.next(), documents.next()) else {
        return Err(read_whole(path));
    };
    let peek: Peek = serde_json::from_str(list.get()).map_err(|_| read_whole(path))?;
    // The scanner cut the items out, leaving `[]`; items still there were under a key it did not
    // see as `items` (written with escapes), and only the general path reads them.
    let items_cut = peek.items.is_some_and(|items| items.get() == "[]");
    if is_list(&peek.kind()) && items_cut {
        Ok(())
    } else {
        Err(read_whole(path))
    }
}

/// Types the items `range` of `cut`, the first of them the `typed`-th of the input; how many.
fn add_cut(
    builder: &mut ClusterBuilder,
    tally: &mut Tally,
    cut: &Cut,
    range: std::ops::Range<usize>,
    typed: usize,
    item: &(impl Fn(usize, Piece) -> Result<Vec<Item>, LoadError> + Sync),
) -> Result<usize, LoadError> {
    let items = &cut.items()[range];
    add_batched(builder, tally, items, &mut 0, |i, c| {
        item(typed + i, cut.piece(c))
    })?;
    Ok(items.len())
}

/// YAML documents, or one List laid out as `kubectl get -o yaml` writes it, cut line by line as
/// the text arrives the way `split_documents`, `list_items` and `list_entries` cut it whole:
/// documents at their markers; a List's items at the `- ` that starts each at column 0, after an
/// `items:` at column 0. Each piece is typed with the line it starts on.
fn stream_yaml_list(
    builder: &mut ClusterBuilder,
    tally: &mut Tally,
    path: &str,
    chunks: &mut Chunks,
) -> Result<(), LoadError> {
    let mut batches = Batches::new(builder, tally, |i, piece: &YamlPiece| {
        let unit = Unit {
            text: &piece.text,
            line: piece.line,
            entry: piece.entry,
        };
        unit_items(path, &unit, looks_for_unknown(i))
    });
    let mut yaml = YamlStream::default();
    let mut partial = Vec::new();
    loop {
        let bytes = chunks.next(path)?;
        let end = bytes.is_empty();
        partial.extend_from_slice(bytes);
        let complete = if end {
            partial.len()
        } else {
            memchr::memrchr(b'\n', &partial).map_or(0, |i| i + 1)
        };
        if partial.len() - complete > STREAM_HELD {
            return Err(read_whole(path));
        }
        let text = std::str::from_utf8(&partial[..complete]).map_err(|_| read_whole(path))?;
        for line in text.split_inclusive('\n') {
            if let Some(piece) = yaml.line(line).ok_or_else(|| read_whole(path))? {
                batches.push(piece)?;
            }
        }
        partial.drain(..complete);
        if end {
            break;
        }
    }
    let (last, list) = yaml.finish().ok_or_else(|| read_whole(path))?;
    if let Some(last) = last {
        batches.push(last)?;
    }
    batches.flush()?;
    let Some(list) = list else {
        return Ok(());
    };
    let rest: Value = serde_saphyr::from_str_with_options(&list, unit_options(list.len()))
        .map_err(|_| read_whole(path))?;
    if is_list(str_field(&rest, "kind")) {
        Ok(())
    } else {
        Err(read_whole(path))
    }
}

/// A document, or a List's item, of a streamed YAML input.
struct YamlPiece {
    text: String,
    /// The 0-based line it starts on.
    line: u64,
    /// A List item, behind its `- `.
    entry: bool,
}

/// Where a streamed YAML input is: in a document (before a List's `items:`), in a List's items,
/// or after them.
#[derive(Default, PartialEq)]
enum YamlStage {
    #[default]
    Document,
    Items,
    After,
}

#[derive(Default)]
struct YamlStream {
    stage: YamlStage,
    /// The 0-based line the next line is.
    line: u64,
    /// A document marker was read: the input is documents, not one List.
    markers: bool,
    /// A line held something (`holds_no_document`): an input of nothing is refused, not empty.
    content: bool,
    /// The document being read; in a List, what it holds besides its items.
    doc: String,
    doc_line: u64,
    /// A List's item being read (a blank or comment line before the first belongs to it).
    entry: String,
    entry_line: u64,
    in_item: bool,
}

impl YamlStream {
    /// Reads one line (with its line break): the document or item it ends, if any; `None` when
    /// the input must be read whole (a directive, a List among documents or with a marker,
    /// `items:` with a value on its line, a piece held past the bound).
    fn line(&mut self, line: &str) -> Option<Option<YamlPiece>> {
        let n = self.line;
        self.line += 1;
        let bare = line.trim_end_matches(['\n', '\r']);
        if line.starts_with('%') || (n > 0 && line.starts_with('\u{feff}')) {
            return None;
        }
        if self.doc.len() > STREAM_HELD || self.entry.len() > STREAM_HELD {
            return None;
        }
        self.content |= !holds_nothing(line.as_bytes());
        let marker = is_marker(bare, "---") || is_marker(bare, "...");
        match self.stage {
            _ if marker && self.stage != YamlStage::Document => None,
            YamlStage::Document if marker => {
                self.markers = true;
                let piece = |text, line| YamlPiece {
                    text,
                    line,
                    entry: false,
                };
                if bare.starts_with("...") {
                    // Ends the document it closes, itself included.
                    self.doc.push_str(line);
                    let ended = piece(std::mem::take(&mut self.doc), self.doc_line);
                    self.doc_line = n + 1;
                    return Some(Some(ended));
                }
                // Starts a document, unless the one being read holds nothing yet.
                let ended = (!self.doc.is_empty())
                    .then(|| piece(std::mem::take(&mut self.doc), self.doc_line));
                if ended.is_some() {
                    self.doc_line = n;
                }
                self.doc.push_str(line);
                Some(ended)
            }
            YamlStage::Document => {
                self.doc.push_str(line);
                if line.starts_with("items:") {
                    if self.markers || line.trim_end() != "items:" {
                        return None;
                    }
                    self.stage = YamlStage::Items;
                    self.entry_line = n + 1;
                }
                Some(None)
            }
            YamlStage::Items if bare.starts_with("- ") || bare == "-" => {
                let ended = self.in_item.then(|| YamlPiece {
                    text: std::mem::take(&mut self.entry),
                    line: std::mem::replace(&mut self.entry_line, n),
                    entry: true,
                });
                self.in_item = true;
                self.entry.push_str(line);
                Some(ended)
            }
            YamlStage::Items
                if blank_or_comment(bare) || (self.in_item && bare.starts_with(' ')) =>
            {
                self.entry.push_str(line);
                Some(None)
            }
            YamlStage::Items | YamlStage::After => {
                self.stage = YamlStage::After;
                self.doc.push_str(line);
                Some(None)
            }
        }
    }

    /// At the end: the last document or item, and for a List, what it holds besides its items;
    /// `None` for an input of nothing, or a List without items.
    fn finish(self) -> Option<(Option<YamlPiece>, Option<String>)> {
        if !self.content {
            return None;
        }
        if self.stage == YamlStage::Document {
            let last = (!self.doc.is_empty()).then_some(YamlPiece {
                text: self.doc,
                line: self.doc_line,
                entry: false,
            });
            return Some((last, None));
        }
        let last = YamlPiece {
            text: self.entry,
            line: self.entry_line,
            entry: true,
        };
        self.in_item.then_some((Some(last), Some(self.doc)))
    }
}

fn build(
    path: &str,
    files: impl IntoIterator<Item = Result<(String, Vec<u8>), LoadError>>,
    options: LoadOptions,
) -> Result<Cluster, LoadError> {
    let mut builder = ClusterBuilder::new(options);
    let mut tally = Tally::default();
    for file in files {
        let (name, bytes) = file?;
        if holds_no_document(&bytes) {
            return Err(LoadError::Content {
                path: name,
                message: "holds no object (an empty cluster is a List with `items: []`)".into(),
            });
        }
        read_into(&mut builder, &mut tally, &name, bytes)?;
    }
    tally.warn(&mut builder);
    builder.finish().map_err(|errors| LoadError::Invalid {
        path: path.to_string(),
        errors,
    })
}

/// Whether an input holds nothing but blank lines, comments, document markers and nulls: a
/// failed `kubectl get > dump.yaml` or a closed pipe, which must not read as an empty cluster.
/// Stops at the first line with content, so it costs nothing on real input.
fn holds_no_document(bytes: &[u8]) -> bool {
    bytes.split(|&b| b == b'\n').all(holds_nothing)
}

/// A line of nothing: blank, a comment, a document marker, a null.
fn holds_nothing(line: &[u8]) -> bool {
    let line = line.trim_ascii();
    let line = [b"---".as_slice(), b"..."]
        .iter()
        .find_map(|m| {
            line.strip_prefix(*m)
                .filter(|rest| rest.first().is_none_or(u8::is_ascii_whitespace))
        })
        .unwrap_or(line)
        .trim_ascii();
    line.is_empty() || line.starts_with(b"#") || matches!(line, b"~" | b"null" | b"Null" | b"NULL")
}

fn looks_like_json(bytes: &[u8]) -> bool {
    matches!(
        bytes.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{') | Some(b'[')
    )
}

/// Parses a file's documents (gzip-compressed or not) into generic values, JSON or YAML.
pub fn parse_documents(path: &str, bytes: Vec<u8>) -> Result<Vec<Value>, LoadError> {
    let bytes = input::read_bytes(path, bytes, Limits::default())?;
    if looks_like_json(&bytes) {
        let mut docs = Vec::new();
        for v in serde_json::Deserializer::from_slice(&bytes).into_iter::<Value>() {
            let v = v.map_err(|e| LoadError::Syntax {
                path: path.to_string(),
                line: Some((e.line() as u64, e.column() as u64)),
                message: format!("invalid JSON: {e}"),
            })?;
            match v {
                Value::Array(items) => docs.extend(items),
                other => docs.push(other),
            }
        }
        return Ok(docs);
    }
    parse_yaml(path, utf8(path, &bytes)?, 0)
}

fn utf8<'a>(path: &str, bytes: &'a [u8]) -> Result<&'a str, LoadError> {
    std::str::from_utf8(bytes).map_err(|e| LoadError::Content {
        path: path.to_string(),
        message: format!("not UTF-8 text: {e}"),
    })
}

/// Budgets that grow with the input but stop alias expansion ("billion laughs") from turning a
/// small file into gigabytes.
fn yaml_options(size: usize) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_events = (2 * size).max(1_000_000);
    budget.max_nodes = size.max(250_000);
    budget.max_total_scalar_bytes = size.max(64 << 20);
    budget.max_documents = (size / 8).max(1_024);
    budget.max_reader_input_bytes = None;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// For one document (or List item) of many: those are parsed BATCH at a time, so each may expand
/// aliases only as far as its size warrants, never further than a whole file may.
fn unit_options(size: usize) -> serde_saphyr::Options {
    let mut options = yaml_options(size);
    let replays = &mut options.alias_limits.max_total_replayed_events;
    *replays = (2 * size).clamp(4_096, *replays);
    options
}

/// An error in a part of a file that starts on the file's 0-based line `offset`, placed in the file.
fn yaml_error(path: &str, e: &serde_saphyr::Error, offset: u64) -> LoadError {
    LoadError::Syntax {
        path: path.to_string(),
        line: e
            .location()
            .filter(|l| l.line() > 0)
            .map(|l| (l.line() + offset, l.column())),
        message: format!(
            "invalid YAML: {}",
            first_line(&e.render_with_options(serde_saphyr::render_options! {
                line_offset: offset,
            }))
        ),
    }
}

/// All documents of a YAML text that starts on the file's 0-based line `offset`.
fn parse_yaml(path: &str, text: &str, offset: u64) -> Result<Vec<Value>, LoadError> {
    let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(text, yaml_options(text.len()))
        .map_err(|e| yaml_error(path, &e, offset))?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// One object of the input: typed (a pod converted as soon as it is typed) or of a kind the tool
/// skips; or the fields of the object before it that the tool does not know.
enum Item {
    Object(Object),
    Pod(Box<Result<ConvertedPod, ObjectError>>),
    Skipped(String),
    /// An object of a version Kubernetes no longer serves, read as the current one.
    Converted(&'static super::RemovedVersion),
    Unknown {
        kind: String,
        object: String,
        paths: Vec<String>,
    },
}

impl Item {
    /// The items of a typed object.
    fn typed(
        kind: &str,
        object: Option<Object>,
        unknown: Vec<String>,
        name: impl Fn() -> String,
    ) -> Vec<Item> {
        let item = match object {
            Some(o) => Item::Object(o),
            None => Item::Skipped(kind.to_string()),
        };
        if unknown.is_empty() {
            return vec![item];
        }
        vec![
            item,
            Item::Unknown {
                kind: kind.to_string(),
                object: name(),
                paths: unknown,
            },
        ]
    }

    /// A pod converted on the spot (on the thread that typed it), so its API form is never all
    /// in memory; any other item as it is.
    fn converted(self, parse: &Parse) -> Item {
        match self {
            Item::Object(Object::Pod(p)) => Item::Pod(Box::new(convert_pod(*p, parse))),
            other => other,
        }
    }

    fn add_to(self, builder: &mut ClusterBuilder, tally: &mut Tally) {
        match self {
            Item::Object(o) => builder.add(o),
            Item::Pod(p) => builder.add_pod(*p),
            Item::Skipped(kind) => *tally.skipped.entry(kind).or_insert(0) += 1,
            Item::Converted(removed) => {
                tally
                    .converted
                    .entry((removed.kind, removed.api_version))
                    .or_insert((removed, 0))
                    .1 += 1
            }
            Item::Unknown {
                kind,
                object,
                paths,
            } => {
                for path in paths {
                    let seen = tally
                        .unknown
                        .entry((kind.clone(), without_indices(&path)))
                        .or_insert_with(|| (0, object.clone()));
                    seen.0 += 1;
                }
            }
        }
    }
}

/// What is said once per input rather than per object: kinds skipped, fields not known.
#[derive(Default)]
struct Tally {
    skipped: BTreeMap<String, usize>,
    /// Objects of removed versions read as the current one, by kind and version.
    converted: BTreeMap<(&'static str, &'static str), (&'static super::RemovedVersion, usize)>,
    /// (kind, field path without list indices) → (objects, the first of them).
    unknown: BTreeMap<(String, String), (usize, String)>,
}

impl Tally {
    fn warn(self, builder: &mut ClusterBuilder) {
        for (removed, n) in self.converted.into_values() {
            builder.warn(removed.warning(n));
        }
        for (kind, n) in self.skipped {
            builder.warn(format!(
                "skipped {n} {kind} object(s): kubectl-sched does not read this kind"
            ));
        }
        for ((kind, path), (n, first)) in self.unknown {
            let others = match n {
                1 => String::new(),
                n => format!(" and {} other {kind} object(s)", n - 1),
            };
            builder.warn(format!(
                "{kind} {first}{others}: unknown field {path:?}, ignored (a typo in an edited dump, or a field newer than this tool)"
            ));
        }
    }
}

/// `spec.containers[0].x` as `spec.containers[].x`: one warning for every container.
fn without_indices(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push_str("[]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            c => out.push(c),
        }
    }
    out
}

/// The path of a field serde_ignored reports, written as the decoder writes paths.
fn ignored_path(p: &serde_ignored::Path) -> String {
    use serde_ignored::Path;
    match p {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", ignored_path(parent)),
        Path::Map { parent, key } => match ignored_path(parent) {
            p if p.is_empty() => key.clone(),
            p => format!("{p}.{key}"),
        },
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => ignored_path(parent),
    }
}

/// Whether an object is read at all: `Ok(Some(name))` for a kind the tool skips; an apiVersion
/// Kubernetes does not serve the kind in is an error.
fn check_kind(
    path: &str,
    kind: &str,
    api_version: &str,
    name: impl Fn() -> String,
) -> Result<Option<String>, LoadError> {
    let error = |field: &str, message: String| LoadError::Object {
        path: path.to_string(),
        kind: if kind.is_empty() { "object" } else { kind }.to_string(),
        object: name(),
        field: field.to_string(),
        message,
    };
    if kind.is_empty() {
        return Err(error("kind", "required field is missing".into()));
    }
    match super::reading(kind, api_version) {
        Reading::Read => Ok(None),
        Reading::Skip(name) => Ok(Some(name)),
        Reading::Removed(_) => Ok(None),
        Reading::Unsupported(message) => Err(error("apiVersion", message)),
    }
}

/// Types one object from its text, straight into its API type: fast, but names no field and
/// reads `null` and a few other spellings as the API server would not. `None` when that fails;
/// the generic path then decides. With `unknown`, also the paths of fields the type does not have.
fn fast_item<'de, D: Deserializer<'de>>(
    kind: &str,
    d: D,
    unknown: bool,
) -> Option<(Option<Object>, Vec<String>)> {
    if !unknown {
        return Some((Object::deserialize(kind, d).ok()?, Vec::new()));
    }
    let mut paths = Vec::new();
    let mut record = |p: serde_ignored::Path| paths.push(ignored_path(&p));
    let object =
        Object::deserialize(kind, serde_ignored::Deserializer::new(d, &mut record)).ok()?;
    Some((object, paths))
}

/// Whether the fast path looks for unknown fields in the object at this index of its input:
/// in the first BATCH objects, then in one in 64. Tracking fields costs an allocation per key;
/// a field a newer API server adds is in every object of its kind, and a hand-edited dump is
/// small. (The generic path, which every object that does not type cleanly takes, always looks.)
fn looks_for_unknown(index: usize) -> bool {
    index < BATCH || index % 64 == 0
}

/// Items are converted in parallel in batches of this size, keeping memory bounded.
const BATCH: usize = 4096;

fn read_into(
    builder: &mut ClusterBuilder,
    tally: &mut Tally,
    path: &str,
    bytes: Vec<u8>,
) -> Result<(), LoadError> {
    if looks_like_json(&bytes) {
        return read_json_into(builder, tally, path, &bytes);
    }
    read_yaml_into(builder, tally, path, utf8(path, &bytes)?)
}

/// Turns pieces into objects in parallel, BATCH at a time to keep memory bounded, and adds those
/// in input order, counting them in `added` (which says, on failure, how many went in before).
fn add_batched<T: Sync, I: IntoIterator<Item = Item> + Send>(
    builder: &mut ClusterBuilder,
    tally: &mut Tally,
    pieces: &[T],
    added: &mut usize,
    objects: impl Fn(usize, &T) -> Result<I, LoadError> + Sync,
) -> Result<(), LoadError> {
    use rayon::prelude::*;
    for (c, chunk) in pieces.chunks(BATCH).enumerate() {
        let parse = builder.parse();
        let parsed: Vec<Result<Vec<Item>, LoadError>> = chunk
            .par_iter()
            .enumerate()
            .map(|(i, piece)| {
                let items = objects(c * BATCH + i, piece)?;
                Ok(items.into_iter().map(|i| i.converted(&parse)).collect())
            })
            .collect();
        for items in parsed {
            for i in items? {
                *added += usize::from(!matches!(i, Item::Unknown { .. } | Item::Converted(_)));
                i.add_to(builder, tally);
            }
        }
    }
    Ok(())
}

/// Pieces of an input (documents, List items, JSON objects) typed as they come, BATCH at a time:
/// memory holds one batch of them, not the whole input split, and a piece that will be refused is
/// refused with its batch.
struct Batches<'b, T, F> {
    builder: &'b mut ClusterBuilder,
    tally: &'b mut Tally,
    objects: F,
    pending: Vec<T>,
    /// Pieces typed before the pending ones: the index of the first of them in the input.
    seen: usize,
    /// Objects added (on failure, how many went in before).
    added: usize,
}

impl<'b, T, F, I> Batches<'b, T, F>
where
    T: Sync,
    I: IntoIterator<Item = Item> + Send,
    F: Fn(usize, &T) -> Result<I, LoadError> + Sync,
{
    fn new(builder: &'b mut ClusterBuilder, tally: &'b mut Tally, objects: F) -> Self {
        Batches {
            builder,
            tally,
            objects,
            pending: Vec::new(),
            seen: 0,
            added: 0,
        }
    }

    fn push(&mut self, piece: T) -> Result<(), LoadError> {
        self.pending.push(piece);
        if self.pending.len() >= BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), LoadError> {
        let seen = self.seen;
        self.seen += self.pending.len();
        let objects = &self.objects;
        let result = add_batched(
            self.builder,
            self.tally,
            &self.pending,
            &mut self.added,
            |i, piece| objects(seen + i, piece),
        );
        self.pending.clear();
        result
    }
}

/// Generic values, typed the way they come.
fn add_values(
    builder: &mut ClusterBuilder,
    tally: &mut Tally,
    path: &str,
    values: &[Value],
) -> Result<(), LoadError> {
    add_batched(builder, tally, values, &mut 0, |_, v| value_item(path, v))
}

/// Types one object from its generic value as the API server decodes it; errors name the object
/// and the field.
fn value_item(path: &str, v: &Value) -> Result<Vec<Item>, LoadError> {
    let string = |key: &str| match v.get(key) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(other) => Err(LoadError::Object {
            path: path.to_string(),
            kind: "object".into(),
            object: object_name(v),
            field: key.to_string(),
            message: format!("expected a string, found {}", type_name(other)),
        }),
    };
    let (kind, api_version) = (string("kind")?, string("apiVersion")?);
    // Missing, it is taken as the kind's; written empty, it is no version the API serves.
    if api_version.is_empty()
        && v.get("apiVersion").is_some_and(Value::is_string)
        && let Some(message) = super::unsupported_version(kind, "")
    {
        return Err(LoadError::Object {
            path: path.to_string(),
            kind: kind.to_string(),
            object: object_name(v),
            field: "apiVersion".into(),
            message,
        });
    }
    if let Some(skipped) = check_kind(path, kind, api_version, || object_name(v))? {
        return Ok(vec![Item::Skipped(skipped)]);
    }
    let removed = match super::reading(kind, api_version) {
        Reading::Removed(r) => Some(r),
        _ => None,
    };
    let converted = removed.map(|r| r.convert(v));
    let v = converted.as_ref().unwrap_or(v);
    let unknown = RefCell::new(Vec::new());
    let object =
        Object::deserialize(kind, Decoder::new(v, &unknown)).map_err(|e| LoadError::Object {
            path: path.to_string(),
            kind: kind.to_string(),
            object: object_name(v),
            field: e.path,
            message: e.message,
        })?;
    let unknown = unknown.into_inner().into_iter().map(|u| u.path).collect();
    let mut items = Item::typed(kind, object, unknown, || object_name(v));
    items.extend(removed.map(Item::Converted));
    Ok(items)
}

/// YAML in pieces parsed in parallel, as JSON is: the documents of a stream and the items of a
/// List as `kubectl get -o yaml` prints it, each straight into its API type when a scan finds
/// its kind. A stream the splitting cannot vouch for is read whole, into generic values.
fn read_yaml_into(
    builder: &mut ClusterBuilder,
    tally: &mut Tally,
    path: &str,
    text: &str,
) -> Result<(), LoadError> {
    let Some(docs) = split_documents(text) else {
        let values = flattened(path, parse_yaml(path, text, 0)?)?;
        return add_values(builder, tally, path, &values);
    };
    let mut batches = Batches::new(builder, tally, |i, u: &Unit| {
        unit_items(path, u, looks_for_unknown(i))
    });
    for doc in docs {
        let Some(items) = list_items(&doc) else {
            batches.push(doc)?;
            continue;
        };
        batches.flush()?;
        let before = batches.added;
        match items
            .into_iter()
            .try_for_each(|item| batches.push(item))
            .and_then(|()| batches.flush())
        {
            // An item may lean on another (an alias of an anchor defined in an earlier one): only
            // the whole document tells whether it is wrong.
            Err(LoadError::Syntax { .. }) => {
                batches.pending.clear();
                let added = batches.added - before;
                let values = flattened(path, parse_yaml(path, doc.text, doc.line)?)?;
                add_values(
                    batches.builder,
                    batches.tally,
                    path,
                    &values[added.min(values.len())..],
                )?;
            }
            result => result?,
        }
    }
    batches.flush()
}

/// A piece of a YAML file parsed on its own: a document, or an item of a List.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Unit<'a> {
    text: &'a str,
    /// The file's 0-based line the text starts on.
    line: u64,
    /// A List item, still behind its `- `: parsed as a sequence of one, so that columns in
    /// messages are the file's.
    entry: bool,
}

/// Splits a YAML stream at its document markers, which YAML reserves at column 0 (no scalar
/// holds one there), as the documents are wanted. `None` when directives or byte order marks tie
/// documents to the stream.
fn split_documents(text: &str) -> Option<impl Iterator<Item = Unit<'_>>> {
    let tied = (0..)
        .zip(text.split_inclusive('\n'))
        .any(|(n, line)| line.starts_with('%') || (n > 0 && line.starts_with('\u{feff}')));
    if tied {
        return None;
    }
    let mut lines = (0u64..).zip(text.split_inclusive('\n'));
    let (mut start, mut start_line, mut offset) = (0, 0, 0);
    let unit = |text, line| Unit {
        text,
        line,
        entry: false,
    };
    Some(std::iter::from_fn(move || {
        for (n, line) in lines.by_ref() {
            let bare = line.trim_end_matches(['\n', '\r']);
            let (line_start, end) = (offset, offset + line.len());
            offset = end;
            if is_marker(bare, "---") && line_start > start {
                let doc = unit(&text[start..line_start], start_line);
                (start, start_line) = (line_start, n);
                return Some(doc);
            } else if is_marker(bare, "...") {
                let doc = unit(&text[start..end], start_line);
                (start, start_line) = (end, n + 1);
                return Some(doc);
            }
        }
        let last = (start < text.len()).then(|| unit(&text[start..], start_line));
        start = text.len();
        last
    }))
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
}

/// The items of a List document laid out as `kubectl get -o yaml` prints it: `items:` at column
/// 0, then each item a line `- ` at column 0 followed by indented lines. `None` for any other
/// layout, or when the rest of the document is not a List. The items come as they are wanted.
fn list_items<'a>(doc: &Unit<'a>) -> Option<impl Iterator<Item = Unit<'a>> + use<'a>> {
    let text = doc.text;
    let key = if text.starts_with("items:") {
        0
    } else {
        text.find("\nitems:")? + 1
    };
    let after = key + text[key..].find('\n')? + 1;
    if text[key..after].trim_end() != "items:" {
        return None;
    }
    let first_line = doc.line + text[..after].matches('\n').count() as u64;
    let (_, end) = list_entries(text, after, first_line).last()?;
    let rest = [&text[..after], &text[end..]].concat();
    let rest: Value = serde_saphyr::from_str_with_options(&rest, unit_options(rest.len())).ok()?;
    is_list(str_field(&rest, "kind"))
        .then(|| list_entries(text, after, first_line).map(|(unit, _)| unit))
}

/// The entries of a List's `items:` from `after` (on the 0-based line `first_line`), each with
/// where it ends; a blank or comment line before the first belongs to it.
fn list_entries(
    text: &str,
    after: usize,
    first_line: u64,
) -> impl Iterator<Item = (Unit<'_>, usize)> {
    let mut lines = (first_line..).zip(text[after..].split_inclusive('\n'));
    let (mut start, mut start_line, mut end) = (after, first_line, after);
    let mut in_item = false;
    let mut done = false;
    let entry = move |start: usize, end: usize, line| {
        let unit = Unit {
            text: &text[start..end],
            line,
            entry: true,
        };
        (unit, end)
    };
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        for (line, l) in lines.by_ref() {
            let bare = l.trim_end_matches(['\n', '\r']);
            if bare.starts_with("- ") || bare == "-" {
                let previous = in_item.then(|| entry(start, end, start_line));
                if in_item {
                    (start, start_line) = (end, line);
                }
                in_item = true;
                end += l.len();
                if previous.is_some() {
                    return previous;
                }
                continue;
            } else if !(blank_or_comment(bare) || (in_item && bare.starts_with(' '))) {
                break;
            }
            end += l.len();
        }
        done = true;
        in_item.then(|| entry(start, end, start_line))
    })
}

fn blank_or_comment(line: &str) -> bool {
    let line = line.trim_start();
    line.is_empty() || line.starts_with('#')
}

/// The objects of one document or List item.
fn unit_items(path: &str, unit: &Unit, unknown: bool) -> Result<Vec<Item>, LoadError> {
    if let Some(items) = typed_unit(unit, unknown) {
        return Ok(items);
    }
    let value: Value =
        serde_saphyr::from_str_with_options(unit.text, unit_options(unit.text.len()))
            .map_err(|e| yaml_error(path, &e, unit.line))?;
    let values = match value {
        Value::Null => Vec::new(),
        Value::Array(entries) if unit.entry => flattened(path, entries)?,
        v => flattened(path, vec![v])?,
    };
    let mut items = Vec::with_capacity(values.len());
    for v in &values {
        items.extend(value_item(path, v)?);
    }
    Ok(items)
}

/// An object whose kind and apiVersion a scan finds, parsed straight into its API type. `None`
/// when the scans cannot vouch for what they found, or the object does not parse that way: the
/// generic path then decides, and says what is wrong, naming the object and field.
fn typed_unit(unit: &Unit, unknown: bool) -> Option<Vec<Item>> {
    let kind = top_level_scalar(unit, "kind")?;
    let api_version = top_level_scalar(unit, "apiVersion")?;
    if is_list(kind) || !single_line_nodes(unit.text) {
        return None;
    }
    let skipped = match super::reading(kind, api_version) {
        Reading::Read => None,
        Reading::Skip(name) => Some(name),
        Reading::Removed(_) | Reading::Unsupported(_) => return None,
    };
    let seed = TypedSeed {
        kind: if skipped.is_some() { "" } else { kind },
        unknown: unknown && skipped.is_none(),
    };
    // The YAML kubectl writes, rewritten as JSON, types several times faster than through the
    // YAML parser; anything the rewrite cannot vouch for, or that does not type, goes that way.
    let from_json = super::block_yaml::to_json(unit.text, unit.entry).and_then(|json| {
        fast_item(
            seed.kind,
            &mut serde_json::Deserializer::from_str(&json),
            seed.unknown,
        )
    });
    let (object, unknown) = match from_json {
        Some(typed) => typed,
        None => serde_saphyr::with_deserializer_from_str_with_options(
            unit.text,
            typed_options(unit),
            |de| {
                if unit.entry {
                    de.deserialize_seq(seed)
                } else {
                    seed.deserialize(de)
                }
            },
        )
        .ok()??,
    };
    if let Some(name) = skipped {
        return Some(vec![Item::Skipped(name)]);
    }
    Some(Item::typed(kind, object, unknown, || {
        let value: Value =
            serde_saphyr::from_str_with_options(unit.text, unit_options(unit.text.len()))
                .unwrap_or_default();
        match value {
            Value::Array(mut entries) if unit.entry => object_name(&entries.swap_remove(0)),
            v => object_name(&v),
        }
    }))
}

/// Options for parsing straight into API types: a plain scalar that the generic path would read
/// as a number or a boolean (`08`, `y`) is refused rather than taken as a string, so the generic
/// path, which types scalars as kubectl does, decides.
fn typed_options(unit: &Unit) -> serde_saphyr::Options {
    let mut options = unit_options(unit.text.len());
    options.no_schema = true;
    options
}

/// Whether every quoted scalar and flow collection of a unit ends on the line it starts on, so
/// the line scans (for the kind, for where a List item starts) see what a YAML parser sees: a
/// quoted scalar spanning lines can hold one that reads `kind: Secret`. Block scalars may span
/// lines: theirs are indented below their key, where the scans do not look.
fn single_line_nodes(text: &str) -> bool {
    // A block scalar's lines are those indented deeper than this.
    let mut block: Option<usize> = None;
    for line in text.as_bytes().split(|&b| b == b'\n') {
        let indent = line.iter().take_while(|&&b| b == b' ').count();
        let rest = &line[indent..];
        if let Some(parent) = block {
            if indent > parent || rest.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            block = None;
        }
        // Most lines hold nothing that could open a node spanning lines: skip them cheaply.
        if !rest
            .iter()
            .any(|b| matches!(b, b'"' | b'\'' | b'{' | b'[' | b'|' | b'>' | b'?'))
        {
            continue;
        }
        match line_nodes(rest, indent) {
            LineNodes::Closed => {}
            LineNodes::Block(parent) => block = Some(parent),
            LineNodes::Open => return false,
        }
    }
    true
}

enum LineNodes {
    /// Everything that starts on the line ends there.
    Closed,
    /// A block scalar starts: its lines are indented deeper than this column.
    Block(usize),
    /// A quoted scalar or a flow collection goes on past the line (or a line the scan does not
    /// follow, such as a complex key).
    Open,
}

/// What a line (after its indentation, at column `indent`) leaves open.
fn line_nodes(b: &[u8], indent: usize) -> LineNodes {
    let space = |i: usize| i >= b.len() || b[i] == b' ' || b[i] == b'\t';
    // The column of the node the line's last key (or sequence entry) belongs to.
    let mut node = indent;
    let mut i = 0;
    while i < b.len() && b[i] == b'-' && space(i + 1) {
        node = indent + i;
        i += 1;
        while i < b.len() && space(i) {
            i += 1;
        }
    }
    if b.get(i) == Some(&b'?') && space(i + 1) {
        return LineNodes::Open;
    }
    let start = i;
    let mut depth = 0usize;
    while i < b.len() {
        let token_start = i == start
            || space(i - 1)
            || (depth > 0 && matches!(b[i - 1], b',' | b'[' | b'{' | b':'));
        match b[i] {
            b'"' if token_start => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                if i >= b.len() {
                    return LineNodes::Open;
                }
            }
            b'\'' if token_start => loop {
                i += 1;
                match b[i..].iter().position(|&c| c == b'\'') {
                    None => return LineNodes::Open,
                    Some(p) if b.get(i + p + 1) == Some(&b'\'') => i += p + 1,
                    Some(p) => {
                        i += p;
                        break;
                    }
                }
            },
            b'{' | b'[' if token_start || depth > 0 => depth += 1,
            b'}' | b']' if depth > 0 => depth -= 1,
            b'#' if token_start => break,
            b'|' | b'>' if token_start && depth == 0 => return LineNodes::Block(node),
            b':' if depth == 0 && space(i + 1) => node = indent + start,
            _ => {}
        }
        i += 1;
    }
    if depth > 0 {
        LineNodes::Open
    } else {
        LineNodes::Closed
    }
}

/// The plain scalar of a `key: value` line of a unit's top-level mapping (after the `- ` of a
/// List item), found by a scan as the JSON path does; `None` when absent, or written in a way
/// that YAML might read as something other than that string.
fn top_level_scalar<'a>(unit: &Unit<'a>, key: &str) -> Option<&'a str> {
    unit.text.lines().find_map(|line| {
        let line = if unit.entry {
            line.strip_prefix("- ")
                .or_else(|| line.strip_prefix("  "))?
        } else {
            line
        };
        let value = line.strip_prefix(key)?.strip_prefix(':')?;
        // `kind:Node` is a plain scalar, not a key.
        if !(value.is_empty() || value.starts_with([' ', '\t'])) {
            return None;
        }
        let value = value.trim();
        let plain = value.starts_with(|c: char| c.is_ascii_alphabetic())
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"./-_".contains(&b))
            && !["true", "false", "yes", "no", "on", "off", "y", "n", "null"]
                .iter()
                .any(|word| value.eq_ignore_ascii_case(word));
        plain.then_some(value)
    })
}

/// Types an object of a kind read (or reads through one of a kind skipped, `kind` empty), as a
/// document or as the one entry of a sequence (a List item).
#[derive(Clone, Copy)]
struct TypedSeed<'a> {
    kind: &'a str,
    unknown: bool,
}

type Typed = Option<(Option<Object>, Vec<String>)>;

impl<'de> DeserializeSeed<'de> for TypedSeed<'_> {
    type Value = Typed;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        Ok(fast_item(self.kind, d, self.unknown))
    }
}

impl<'de> serde::de::Visitor<'de> for TypedSeed<'_> {
    type Value = Typed;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a sequence of one object")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let item = seq.next_element_seed(self)?.flatten();
        if item.is_some() && seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            return Ok(None);
        }
        Ok(item)
    }
}

fn flattened(path: &str, docs: Vec<Value>) -> Result<Vec<Value>, LoadError> {
    let mut values = Vec::new();
    for doc in docs {
        flatten_value(path, doc, &mut values)?;
    }
    Ok(values)
}

/// The objects of a document: itself, or the items of a List.
fn flatten_value(path: &str, v: Value, out: &mut Vec<Value>) -> Result<(), LoadError> {
    let Value::Object(mut map) = v else {
        return Err(LoadError::Content {
            path: path.to_string(),
            message: format!(
                "expected a Kubernetes object or a List, found {}",
                type_name(&v)
            ),
        });
    };
    let kind = map
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !is_list(&kind) {
        out.push(Value::Object(map));
        return Ok(());
    }
    match map.remove("items") {
        Some(Value::Array(items)) => {
            for i in items {
                flatten_value(path, i, out)?;
            }
            Ok(())
        }
        other => Err(not_a_list(
            path,
            &kind,
            other.as_ref().map_or("nothing", type_name),
        )),
    }
}

/// `List`, and the typed lists (`PodList`) the API server returns.
fn is_list(kind: &str) -> bool {
    kind.ends_with("List")
}

/// A List whose items are not a list: an empty cluster would be a silent wrong answer.
fn not_a_list(path: &str, kind: &str, found: &str) -> LoadError {
    LoadError::Content {
        path: path.to_string(),
        message: format!("{kind}: items: expected a list, found {found}"),
    }
}

/// What the JSON fast path reads of a document before parsing it for real.
#[derive(serde::Deserialize)]
struct Peek<'a> {
    #[serde(default, borrow)]
    kind: Option<&'a RawValue>,
    /// `Some` when written, null included, so `items: null` is said to be null.
    #[serde(default, borrow, deserialize_with = "written")]
    items: Option<&'a RawValue>,
}

impl Peek<'_> {
    /// The kind, decoded (`"L\u0069st"` is `List`); empty when absent or not a string.
    fn kind(&self) -> Cow<'_, str> {
        self.kind
            .and_then(|k| serde_json::from_str::<Cow<str>>(k.get()).ok())
            .unwrap_or_default()
    }
}

fn written<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue as serde::Deserialize>::deserialize(d).map(Some)
}

/// Lists (and arrays) nested deeper than this are refused, as serde_json refuses deeper values:
/// reading them costs time quadratic in the depth and, past it, the stack.
const MAX_NESTING: usize = 128;

fn json_syntax(path: &str, e: &serde_json::Error) -> LoadError {
    LoadError::Syntax {
        path: path.to_string(),
        line: Some((e.line() as u64, e.column() as u64)),
        message: format!("invalid JSON: {e}"),
    }
}

/// JSON without building a generic tree: each object is parsed straight into its API type, the
/// items of a List in parallel, batch by batch as the scan finds them, which is what makes a
/// 150,000-pod snapshot load in seconds.
fn read_json_into(
    builder: &mut ClusterBuilder,
    tally: &mut Tally,
    path: &str,
    bytes: &[u8],
) -> Result<(), LoadError> {
    let mut batches = Batches::new(builder, tally, |i, raw: &&RawValue| {
        json_item(path, i, raw.get())
    });
    for doc in serde_json::Deserializer::from_slice(bytes).into_iter::<&RawValue>() {
        let doc = doc.map_err(|e| json_syntax(path, &e))?;
        collect_raw(path, doc, &mut |raw| batches.push(raw), 0)?;
    }
    batches.flush()
}

/// The items of one JSON object, the `index`-th of its input.
fn json_item(path: &str, index: usize, text: &str) -> Result<Vec<Item>, LoadError> {
    // kubectl writes apiVersion and kind first: finding them by a scan avoids a
    // second full parse of every object; anything unusual takes the general path.
    let Some((kind, api_version)) =
        top_level_string(text, "kind").zip(top_level_string(text, "apiVersion"))
    else {
        let value: Value = serde_json::from_str(text).map_err(|e| json_syntax(path, &e))?;
        let mut items = Vec::new();
        for v in &flattened(path, vec![value])? {
            items.extend(value_item(path, v)?);
        }
        return Ok(items);
    };
    let name = || object_name(&serde_json::from_str::<Value>(text).unwrap_or(Value::Null));
    if let Some(skipped) = check_kind(path, kind, api_version, name)? {
        // Read through all the same: its syntax is the input's (a streamed item has had no
        // other reading).
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| json_syntax(path, &e))?;
        return Ok(vec![Item::Skipped(skipped)]);
    }
    match fast_item(
        kind,
        &mut serde_json::Deserializer::from_str(text),
        looks_for_unknown(index),
    ) {
        Some((object, unknown)) => Ok(Item::typed(kind, object, unknown, name)),
        None => {
            let value: Value = serde_json::from_str(text).map_err(|e| json_syntax(path, &e))?;
            value_item(path, &value)
        }
    }
}

/// One pod of a live list (whose items carry no kind: the list's says it), typed and converted
/// as a dump's pods are; `None` when it does not type.
pub fn list_pod(text: &[u8], parse: &Parse) -> Option<Result<ConvertedPod, ObjectError>> {
    let (object, _) = fast_item(
        "Pod",
        &mut serde_json::Deserializer::from_slice(text),
        false,
    )?;
    match Item::Object(object?).converted(parse) {
        Item::Pod(p) => Some(*p),
        _ => None,
    }
}

/// The value of a top-level string field of a JSON object, found by scanning rather than
/// parsing; `None` when absent or not a plain (unescaped) string.
fn top_level_string<'a>(json: &'a str, key: &str) -> Option<&'a str> {
    let b = json.as_bytes();
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i + 1;
                i = start;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                let end = i.min(b.len());
                i += 1;
                let after = skip_ws(i);
                if depth == 1 && after < b.len() && b[after] == b':' {
                    if &json[start..end] == key {
                        let v = skip_ws(after + 1);
                        if v >= b.len() || b[v] != b'"' {
                            return None;
                        }
                        let value_end = v + 1 + json[v + 1..].find('"')?;
                        let value = &json[v + 1..value_end];
                        return (!value.contains('\\')).then_some(value);
                    }
                    i = after + 1;
                }
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// Where the objects of a JSON document go, one by one as the scan finds them.
type RawSink<'s, 'a> = dyn FnMut(&'a RawValue) -> Result<(), LoadError> + 's;

/// The objects of a JSON document: itself, or the items of a List (or array), however nested.
fn collect_raw<'a>(
    path: &str,
    raw: &'a RawValue,
    out: &mut RawSink<'_, 'a>,
    depth: usize,
) -> Result<(), LoadError> {
    if depth >= MAX_NESTING {
        return Err(LoadError::Syntax {
            path: path.to_string(),
            line: None,
            message: format!(
                "invalid JSON: recursion limit exceeded (Lists or arrays nested more than {MAX_NESTING} deep)"
            ),
        });
    }
    let syntax = |e: serde_json::Error| json_syntax(path, &e);
    let text = raw.get().trim_start();
    if text.starts_with('[') {
        return each_item(path, text, &mut |item| {
            collect_raw(path, item, out, depth + 1)
        });
    }
    if !text.starts_with('{') {
        // Not an object: the general path says what it is.
        return out(raw);
    }
    let peek: Peek = serde_json::from_str(text).map_err(syntax)?;
    let kind = peek.kind();
    if !is_list(&kind) {
        return out(raw);
    }
    match peek.items {
        Some(items) if items.get().trim_start().starts_with('[') => {
            each_item(path, items.get(), &mut |item| {
                collect_raw(path, item, out, depth + 1)
            })
        }
        other => {
            let found = other
                .and_then(|i| serde_json::from_str::<Value>(i.get()).ok())
                .map_or("nothing", |v| type_name(&v));
            Err(not_a_list(path, &kind, found))
        }
    }
}

/// Each item of a JSON array in turn, as the scan reaches it: an array of millions of items is
/// never held as a list of them, and an item that will be refused is refused before the rest is
/// scanned.
fn each_item<'a>(path: &str, array: &'a str, f: &mut RawSink<'_, 'a>) -> Result<(), LoadError> {
    struct Items<'f, 's, 'a> {
        f: &'f mut RawSink<'s, 'a>,
        failed: &'f mut Option<LoadError>,
    }
    impl<'a> serde::de::Visitor<'a> for Items<'_, '_, 'a> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: serde::de::SeqAccess<'a>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(item) = seq.next_element::<&'a RawValue>()? {
                if let Err(e) = (self.f)(item) {
                    *self.failed = Some(e);
                    return Err(serde::de::Error::custom("an item was refused"));
                }
            }
            Ok(())
        }
    }
    let mut failed = None;
    let mut de = serde_json::Deserializer::from_str(array);
    let scanned = (&mut de)
        .deserialize_seq(Items {
            f,
            failed: &mut failed,
        })
        .and_then(|()| de.end());
    match failed {
        Some(e) => Err(e),
        None => scanned.map_err(|e| json_syntax(path, &e)),
    }
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `namespace/name` (or `name`) of a generic object, for messages.
pub fn object_name(v: &Value) -> String {
    let meta = v.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>");
    match meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
    {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

/// Decodes a generic value into an API type as the API server does, naming the field that does
/// not fit; fields the type does not have are left out.
pub fn typed<T: DeserializeOwned>(path: &str, kind: &str, v: Value) -> Result<T, LoadError> {
    super::decode::decode(&v)
        .map(|d| d.value)
        .map_err(|e| LoadError::Object {
            path: path.to_string(),
            kind: kind.to_string(),
            object: object_name(&v),
            field: e.path,
            message: e.message,
        })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Reads the objects of a `-f` file, from a path or `-` for stdin: its documents in order, the
/// items of a `List` (what `kubectl get … -o yaml` prints) in their place.
pub fn load_documents(path: &str, limits: Limits) -> Result<(String, Vec<Value>), LoadError> {
    let (display, bytes) = if path == "-" {
        ("<stdin>".to_string(), input::read_stdin(limits)?)
    } else {
        (path.to_string(), input::read_file(path, limits)?)
    };
    let docs = flattened(&display, parse_documents(&display, bytes)?)?;
    if docs.is_empty() {
        return Err(LoadError::Content {
            path: display,
            message: "holds no object".into(),
        });
    }
    Ok((display, docs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_yaml(text: &str) -> Result<(Cluster, BTreeMap<String, usize>), LoadError> {
        let mut builder = ClusterBuilder::new(LoadOptions::default());
        let mut tally = Tally::default();
        read_into(&mut builder, &mut tally, "t.yaml", text.into())?;
        let skipped = tally.skipped.clone();
        tally.warn(&mut builder);
        Ok((builder.finish().unwrap(), skipped))
    }

    /// The cluster as read before YAML was split: the whole text into generic values.
    fn read_whole(text: &str) -> Cluster {
        try_read_whole(text).unwrap()
    }

    /// The full YAML parse: the whole text into generic values, each decoded as the API does.
    fn try_read_whole(text: &str) -> Result<Cluster, LoadError> {
        let mut builder = ClusterBuilder::new(LoadOptions::default());
        let mut tally = Tally::default();
        let values = flattened("t.yaml", parse_yaml("t.yaml", text, 0)?)?;
        add_values(&mut builder, &mut tally, "t.yaml", &values)?;
        tally.warn(&mut builder);
        builder.finish().map_err(|errors| LoadError::Invalid {
            path: "t.yaml".into(),
            errors,
        })
    }

    /// The loader's answer, as the file source gives it (skipped kinds and unknown fields said).
    fn try_load(text: &str) -> Result<Cluster, LoadError> {
        load_bytes("t.yaml", text.as_bytes().to_vec())
    }

    /// A reader handing out its text a few bytes at a time, so items, strings and escapes
    /// are cut across reads.
    struct Trickle<'a> {
        text: &'a [u8],
        piece: usize,
    }

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.piece.min(buf.len()).min(self.text.len());
            buf[..n].copy_from_slice(&self.text[..n]);
            self.text = &self.text[n..];
            Ok(n)
        }
    }

    /// `text` streamed as the file `name`, handed out `piece` bytes at a time.
    fn trickled(name: &str, text: &str, piece: usize) -> Option<Result<Cluster, LoadError>> {
        let mut reader = Trickle {
            text: text.as_bytes(),
            piece,
        };
        load_stream(name, &mut reader, Limits::default(), LoadOptions::default())
    }

    fn answer(r: Result<Cluster, LoadError>) -> Result<String, String> {
        r.map(|c| fingerprint(&c)).map_err(|e| e.to_string())
    }

    mod fast_and_full {
        use super::*;
        use proptest::prelude::*;

        /// A scalar as YAML may spell it: the layouts the line scans must not misread.
        fn scalar() -> impl Strategy<Value = String> {
            // Lines the scans look for, most of the time.
            let text = prop_oneof![
                3 => Just("kind: Secret"),
                2 => Just("- apiVersion: v1"),
                1 => prop::sample::select(vec!["first line", "kind: Node", "items:", "---", "x", ""]),
            ];
            let plain = prop::sample::select(vec![
                "web", "08", "y", "10.0", "1e1", "010", "null", "~", "true", "a:b", "v1.2",
            ]);
            prop_oneof![
                plain.prop_map(str::to_string),
                // Double-quoted, its continuation lines at the item's or the key's indentation.
                (
                    text.clone(),
                    text.clone(),
                    prop::sample::select(vec![0usize, 0, 2, 4, 6])
                )
                    .prop_map(|(a, b, indent)| format!(
                        "\"{a}\n{}{b}\n{}\"",
                        " ".repeat(indent),
                        " ".repeat(indent)
                    )),
                (
                    text.clone(),
                    text.clone(),
                    prop::sample::select(vec![0usize, 0, 2, 4])
                )
                    .prop_map(|(a, b, indent)| format!("'{a}\n{}{b}'", " ".repeat(indent))),
                (text.clone(), text.clone()).prop_map(|(a, b)| format!("|\n      {a}\n      {b}")),
                (text.clone(), text).prop_map(|(a, b)| format!(">-\n      {a}\n\n      {b}")),
                Just("{a: b,\n  kind: Secret}".to_string()),
            ]
        }

        /// A Node or a Namespace whose labels and annotations take such scalars, optionally
        /// sharing an anchor with the object before it.
        /// (Node or Namespace, labels, annotations, anchor, kind after the metadata)
        type Object = (bool, Vec<String>, Vec<String>, u8, bool);

        fn object() -> impl Strategy<Value = Object> {
            (
                any::<bool>(),
                prop::collection::vec(scalar(), 0..3),
                prop::collection::vec(scalar(), 0..3),
                0u8..4,
                any::<bool>(),
            )
        }

        fn render(objects: &[Object], list: bool) -> String {
            let mut docs = Vec::new();
            for (i, (node, labels, annotations, anchor, kind_late)) in objects.iter().enumerate() {
                let kind = if *node { "Node" } else { "Namespace" };
                // The kind after the metadata, where a scalar's lines come before it.
                let kind_line = format!("kind: {kind}\n");
                let (early, late) = if *kind_late {
                    ("", kind_line.as_str())
                } else {
                    (kind_line.as_str(), "")
                };
                let mut o = format!("apiVersion: v1\n{early}metadata:\n  name: o{i}\n");
                match anchor {
                    1 => o.push_str("  labels: &shared\n    team: a\n"),
                    2 if i > 0 => o.push_str("  labels: *shared\n"),
                    _ => {
                        o.push_str("  labels:\n");
                        for (j, v) in labels.iter().enumerate() {
                            o.push_str(&format!("    l{j}: {v}\n"));
                        }
                    }
                }
                o.push_str("  annotations:\n");
                for (j, v) in annotations.iter().enumerate() {
                    o.push_str(&format!("    a{j}: {v}\n"));
                }
                if *node {
                    o.push_str("status: {allocatable: {cpu: \"4\", pods: \"110\"}}\n");
                }
                o.push_str(late);
                docs.push(o);
            }
            if !list {
                return docs.iter().map(|d| format!("---\n{d}")).collect();
            }
            let items: String = docs
                .iter()
                .flat_map(|d| d.lines().enumerate())
                .map(|(i, l)| format!("{}{l}\n", if i == 0 { "- " } else { "  " }))
                .collect();
            format!("apiVersion: v1\nitems:\n{items}kind: List\nmetadata: {{}}\n")
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
            /// The fast loader (split at line scans, typed straight from the text) and the full
            /// parse give the same cluster, or both refuse the input.
            #[test]
            fn agree(objects in prop::collection::vec(object(), 1..5), list in any::<bool>()) {
                let text = render(&objects, list);
                match (try_load(&text), try_read_whole(&text)) {
                    (Ok(fast), Ok(full)) => prop_assert_eq!(fingerprint(&fast), fingerprint(&full), "{}", text),
                    (Err(_), Err(_)) => {}
                    (fast, full) => prop_assert!(false, "{text}\nfast: {:?}\nfull: {:?}", fast.map(|c| fingerprint(&c)), full.map(|c| fingerprint(&c))),
                }
            }

            /// Read as it streams, cut across reads anywhere, a YAML List gives what it gives
            /// read whole; and one whose items parse alone (no alias of another item's anchor)
            /// is read as it streams.
            #[test]
            fn streamed_agrees(objects in prop::collection::vec(object(), 1..5), list in any::<bool>(), piece in 1usize..64) {
                let text = render(&objects, list);
                let streamed = trickled("t.yaml", &text, piece);
                let whole = answer(load_bytes("t.yaml", text.clone().into_bytes()));
                let items_alone = !text.contains('*');
                match streamed {
                    Some(streamed) => prop_assert_eq!(answer(streamed), whole, "{}", text),
                    None => prop_assert!(!list || !items_alone || whole.is_err(), "not streamed: {}", text),
                }
            }
        }
        proptest! {
            #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
            /// A directory's files streamed into one cluster give what they give read whole,
            /// objects of one name in two files included; and they are streamed when each of
            /// them would be alone.
            #[test]
            fn several_streamed_agree(files in prop::collection::vec((prop::collection::vec(object(), 1..4), any::<bool>(), any::<bool>()), 1..4), piece in 1usize..64) {
                let texts: Vec<String> = files
                    .iter()
                    .enumerate()
                    .map(|(i, (objects, list, apart))| {
                        let text = render(objects, *list);
                        // Names of their own, or the names other files use.
                        if *apart { text.replace("  name: o", &format!("  name: f{i}o")) } else { text }
                    })
                    .collect();
                let alone = texts.iter().all(|text| {
                    trickled("t.yaml", text, piece).is_some()
                });
                let (streamed, whole) = several_answers(&texts, piece);
                prop_assert_eq!(streamed.is_some(), alone, "{:?}", texts);
                if let Some(streamed) = streamed {
                    prop_assert_eq!(streamed, whole, "{:?}", texts);
                }
            }
        }
    }

    /// Inputs read into one cluster, a directory's files as a whole: as they stream, each cut
    /// across reads anywhere, or whole.
    fn several_answers(
        texts: &[String],
        piece: usize,
    ) -> (Option<Result<String, String>>, Result<String, String>) {
        let names: Vec<String> = (0..texts.len()).map(|i| format!("d/{i}.yaml")).collect();
        let streams = names.iter().zip(texts).map(|(name, text)| {
            Some((
                name.as_str(),
                Trickle {
                    text: text.as_bytes(),
                    piece,
                },
            ))
        });
        let streamed = load_streams("d", streams, Limits::default(), LoadOptions::default());
        let whole = names
            .iter()
            .zip(texts)
            .map(|(name, text)| Ok((name.clone(), text.clone().into_bytes())));
        let whole = build("d", whole, LoadOptions::default());
        (streamed.map(answer), answer(whole))
    }

    mod streamed_and_whole {
        use super::*;
        use proptest::prelude::*;

        /// Names with what a byte scanner may misread: quotes, escapes, brackets, commas,
        /// the key it looks for, multi-byte characters.
        fn name() -> impl Strategy<Value = String> {
            prop::sample::select(vec![
                "web",
                "a\"b",
                "x\\",
                "}",
                "]",
                ",",
                "items",
                "\"items\":[",
                "é-ü",
                "kind",
            ])
            .prop_map(str::to_string)
        }

        /// An item: (kind, name, label value, shape): shape 0 is a plain object, 1 has no
        /// kind, 2 is a List holding the object, 3 a quantity that does not parse.
        type Item = (u8, String, String, u8);

        fn item() -> impl Strategy<Value = Item> {
            (
                0u8..3,
                name(),
                name(),
                prop_oneof![6 => Just(0u8), 1 => 1u8..4],
            )
        }

        fn object((kind, name, label, shape): &Item, i: usize) -> serde_json::Value {
            let name = format!("o{i}-{}", name.len());
            let mut o = match kind {
                0 => serde_json::json!({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": {"l": label}},
                    "status": {"allocatable": {"cpu": if *shape == 3 { "x" } else { "4" }, "pods": "110"}}}),
                1 => serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "annotations": {"a": label}}}),
                _ => serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "default", "labels": {"l": label}},
                    "spec": {"containers": [{"name": "c", "image": label,
                        "resources": {"requests": {"cpu": if *shape == 3 { "x" } else { "1" }}}}]}}),
            };
            match shape {
                1 => {
                    o.as_object_mut().unwrap().remove("kind");
                    o
                }
                2 => serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [o]}),
                _ => o,
            }
        }

        /// A List as text: its kind, where its items are written, what follows it, and a cut.
        #[derive(Debug, Clone)]
        struct Shape {
            kind: &'static str,
            items_first: bool,
            pretty: bool,
            after: &'static str,
            cut: Option<usize>,
        }

        fn shape() -> impl Strategy<Value = Shape> {
            (
                prop_oneof![6 => Just("List"), 1 => Just("PodList"), 1 => Just("Secret"), 1 => Just("L\\u0069st")],
                any::<bool>(),
                any::<bool>(),
                prop_oneof![6 => Just(""), 1 => Just(" \n"), 1 => Just("{}"), 1 => Just("x")],
                prop_oneof![6 => Just(None), 1 => (0usize..400).prop_map(Some)],
            )
                .prop_map(|(kind, items_first, pretty, after, cut)| Shape { kind, items_first, pretty, after, cut })
        }

        fn render(items: &[Item], shape: &Shape) -> String {
            let items: Vec<serde_json::Value> = items
                .iter()
                .enumerate()
                .map(|(i, it)| object(it, i))
                .collect();
            let items = if shape.pretty {
                serde_json::to_string_pretty(&items).unwrap()
            } else {
                serde_json::to_string(&items).unwrap()
            };
            let kind = format!("\"kind\": \"{}\"", shape.kind);
            let fields = if shape.items_first {
                format!("\"apiVersion\": \"v1\", \"items\": {items}, {kind}, \"metadata\": {{}}")
            } else {
                format!("{kind}, \"apiVersion\": \"v1\", \"items\": {items}")
            };
            let mut text = format!("{{{fields}}}{}", shape.after);
            if let Some(cut) = shape.cut {
                let mut at = cut.min(text.len());
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text.truncate(at);
            }
            text
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
            /// Read as it streams, a List gives the cluster (or the refusal) read whole gives;
            /// and a plain List of plain objects is read as it streams.
            #[test]
            fn agree(items in prop::collection::vec(item(), 0..6), shape in shape(), piece in 1usize..64) {
                let text = render(&items, &shape);
                let whole = answer(load_bytes("t.json", text.clone().into_bytes()));
                let streamed = trickled("t.json", &text, piece);
                let plain = shape.cut.is_none()
                    && ["List", "PodList"].contains(&shape.kind)
                    && shape.after.trim().is_empty()
                    && items.iter().all(|(_, _, _, s)| *s == 0 || *s == 3);
                match streamed {
                    Some(streamed) => prop_assert_eq!(answer(streamed), whole, "{}", text),
                    None => prop_assert!(!plain, "a plain List was not streamed: {}", text),
                }
            }
        }

        #[test]
        fn yaml_documents_and_lists_as_kubectl_writes_them_are_streamed() {
            let documents = "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: a\n---\n# b\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n...\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: c\n";
            let list = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: b\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";
            for text in [documents, list] {
                for piece in [1, 5, STREAM_CHUNK] {
                    let streamed = trickled("t.yaml", text, piece).expect("streamed");
                    let whole = load_bytes("t.yaml", text.as_bytes().to_vec());
                    assert_eq!(answer(streamed), answer(whole));
                }
            }
        }

        /// A second reader's finds: a syntax error in an item of a kind that is skipped
        /// unparsed, a key written twice in an item, `items` written with escapes.
        #[test]
        fn what_only_the_whole_text_tells_is_read_whole() {
            let namespace = r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}"#;
            let texts = [
                format!(r#"{{"kind":"List","items":[{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"c"}},"data":{{"a":"b",}}}},{namespace}]}}"#),
                r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"},"kind":"Pod"}]}"#.to_string(),
                r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"},"items":1,"items":2}]}"#.to_string(),
                format!(r#"{{"kind":"List","\u0069tems":[{namespace}]}}"#),
                // A `kind` written with escapes beside a plain one.
                format!(r#"{{"kind":"List","items":[{namespace},{{"apiVersion":"v1","k\u0069nd":"Namespace","kind":"Namespace","metadata":{{"name":"b"}}}}]}}"#),
                // A List among the items, its kind written with escapes.
                format!(r#"{{"kind":"List","items":[{namespace},{{"kind":"L\u0069st","items":[]}}]}}"#),
                // A syntax error in a field of a typed kind that the type does not have.
                format!(r#"{{"kind":"List","items":[{namespace},{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"b"}},"x":{{"a":1,}}}}]}}"#),
            ];
            for text in texts {
                let streamed = trickled("t.json", &text, 9);
                assert!(streamed.is_none(), "{text}");
            }
        }

        /// `kind` and `items` where the item's own keys are not: in its fields, in strings, as
        /// values; an item of a skipped kind, read through. These are still streamed.
        #[test]
        fn keys_below_the_top_are_streamed() {
            let text = r#"{"kind":"List","items":[
                {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a","annotations":{"kind":"List","items":"[]"}}},
                {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"kind":"x","items":"y"}},
                {"apiVersion":"v1","kind":"Namespace","metadata":{"name":"b","labels":{"kind":"\"kind\""}},"x":"kind"}
            ]}"#;
            for piece in [1, 7, STREAM_CHUNK] {
                let streamed = trickled("t.json", text, piece).expect("streamed");
                let streamed = answer(streamed);
                assert!(streamed.is_ok(), "{streamed:?}");
                assert_eq!(
                    streamed,
                    answer(load_bytes("t.json", text.as_bytes().to_vec()))
                );
            }
        }

        #[test]
        fn an_input_of_nothing_is_read_whole_and_refused() {
            for text in ["# only a comment\n", "---\n# c\n...\n", "null\n"] {
                assert!(trickled("t.yaml", text, 3).is_none());
                assert!(load_bytes("t.yaml", text.as_bytes().to_vec()).is_err());
            }
        }

        #[test]
        fn an_item_past_what_an_object_holds_is_read_whole() {
            let big = "x".repeat(STREAM_HELD + 1);
            let text = format!(
                "{{\"kind\": \"List\", \"items\": [{{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {{\"name\": \"a\", \"annotations\": {{\"a\": \"{big}\"}}}}}}]}}"
            );
            assert!(trickled("t.json", &text, STREAM_CHUNK).is_none());
            assert!(load_bytes("t.json", text.into_bytes()).is_ok());
        }

        #[test]
        fn a_list_past_the_limit_is_read_whole() {
            let text = render(
                &[(0, "web".into(), "a".into(), 0)],
                &Shape {
                    kind: "List",
                    items_first: true,
                    pretty: false,
                    after: "",
                    cut: None,
                },
            );
            let mut reader = Trickle {
                text: text.as_bytes(),
                piece: 7,
            };
            let limits = Limits {
                max_input: text.len() as u64 - 1,
            };
            assert!(load_stream("t.json", &mut reader, limits, LoadOptions::default()).is_none());
            let mut reader = Trickle {
                text: text.as_bytes(),
                piece: 7,
            };
            let limits = Limits {
                max_input: text.len() as u64,
            };
            assert!(load_stream("t.json", &mut reader, limits, LoadOptions::default()).is_some());
        }
    }

    /// Everything read, in an order that does not depend on hashing.
    fn fingerprint(c: &Cluster) -> String {
        fn sorted<K: std::fmt::Debug, V: std::fmt::Debug>(
            m: &std::collections::HashMap<K, V>,
        ) -> Vec<String> {
            let mut entries: Vec<String> = m.iter().map(|e| format!("{e:?}")).collect();
            entries.sort();
            entries
        }
        let w = &c.workloads;
        format!(
            "{:?}",
            (
                (&c.nodes, &c.pods, &c.terminated_pods, sorted(&c.namespaces)),
                (
                    &c.priority_classes,
                    &c.pdbs,
                    sorted(&c.pvcs),
                    sorted(&c.pvs)
                ),
                (sorted(&c.storage_classes), sorted(&c.csi_nodes)),
                (sorted(&c.csi_drivers), &c.csi_storage_capacities),
                (sorted(&c.volume_attachments), sorted(&w.services)),
                (sorted(&w.replication_controllers), sorted(&w.replica_sets)),
                (sorted(&w.stateful_sets), &c.leases, &c.lease_candidates),
                (sorted(&w.controllers), &c.events, &c.meta, &c.warnings),
            )
        )
    }

    fn unit(text: &str, line: u64, entry: bool) -> Unit<'_> {
        Unit { text, line, entry }
    }

    #[test]
    fn yaml_list_and_multi_document() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: d}\n";
        let (cluster, skipped) = load_yaml(text).unwrap();
        assert_eq!(cluster.nodes.len(), 1);
        assert_eq!(cluster.namespaces.len(), 1);
        assert_eq!(skipped.get("HorizontalPodAutoscaler"), Some(&1));
        assert_eq!(fingerprint(&cluster), fingerprint(&read_whole(text)));
    }

    #[test]
    fn splits_documents_at_markers() {
        let text = "# head\n---\na: 1\n...\n# between\n--- \nb: |\n  ---\n  x\n---\nc: 3\n";
        assert_eq!(
            split_documents(text).unwrap().collect::<Vec<_>>(),
            [
                unit("# head\n", 0, false),
                unit("---\na: 1\n...\n", 1, false),
                unit("# between\n", 4, false),
                unit("--- \nb: |\n  ---\n  x\n", 5, false),
                unit("---\nc: 3\n", 9, false),
            ]
        );
        assert_eq!(
            split_documents("---\r\na: ---\r\n---x: 1")
                .unwrap()
                .collect::<Vec<_>>(),
            [unit("---\r\na: ---\r\n---x: 1", 0, false)]
        );
        assert!(split_documents("%YAML 1.2\n---\na: 1\n").is_none());
        assert!(split_documents("a: 1\n---\n\u{feff}b: 2\n").is_none());
    }

    #[test]
    fn empty_documents_are_skipped() {
        let text = "# nothing\n---\n---\n...\n# still nothing\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n...\n--- ~\n";
        let (cluster, _) = load_yaml(text).unwrap();
        assert_eq!(cluster.namespaces.len(), 1);
        assert_eq!(fingerprint(&cluster), fingerprint(&read_whole(text)));
    }

    const LIST: &str = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n# between\n- apiVersion: v1\n  kind: List\n  items:\n  - apiVersion: v1\n    kind: Namespace\n    metadata: {name: ns}\n-\n  apiVersion: v1\n  kind: Namespace\n  metadata: {name: ns2}\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";

    #[test]
    fn splits_list_items() {
        assert_eq!(
            list_items(&unit(LIST, 10, false))
                .unwrap()
                .collect::<Vec<_>>(),
            [
                unit(
                    "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n# between\n",
                    12,
                    true
                ),
                unit(
                    "- apiVersion: v1\n  kind: List\n  items:\n  - apiVersion: v1\n    kind: Namespace\n    metadata: {name: ns}\n",
                    17,
                    true
                ),
                unit(
                    "-\n  apiVersion: v1\n  kind: Namespace\n  metadata: {name: ns2}\n",
                    23,
                    true
                ),
            ]
        );
        let (cluster, _) = load_yaml(LIST).unwrap();
        assert_eq!((cluster.nodes.len(), cluster.namespaces.len()), (1, 2));
        assert_eq!(fingerprint(&cluster), fingerprint(&read_whole(LIST)));
    }

    #[test]
    fn other_list_layouts_are_read_whole() {
        for text in [
            "apiVersion: v1\nitems:\n  - {apiVersion: v1, kind: Node, metadata: {name: a}}\nkind: List\n",
            "apiVersion: v1\nitems: [{apiVersion: v1, kind: Node, metadata: {name: a}}]\nkind: List\n",
            "apiVersion: v1\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: a}}\nkind: Thing\n",
            "apiVersion: v1\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: a}}\n\"kind\": [List\n",
        ] {
            assert!(list_items(&unit(text, 0, false)).is_none(), "{text}");
            match load_yaml(text) {
                Ok((cluster, skipped)) => {
                    let whole = read_whole(text);
                    assert_eq!(fingerprint(&cluster), fingerprint(&whole), "{text}");
                    assert!(skipped.is_empty() || text.contains("Thing"), "{text}");
                }
                Err(e) => assert_eq!(
                    e.to_string(),
                    parse_yaml("t.yaml", text, 0).unwrap_err().to_string()
                ),
            }
        }
    }

    #[test]
    fn items_sharing_anchors_are_read_whole() {
        let text = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: a\n    labels: &labels {zone: z1}\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: b\n    labels: *labels\nkind: List\n";
        let (cluster, _) = load_yaml(text).unwrap();
        assert_eq!(cluster.nodes.len(), 2);
        assert_eq!(fingerprint(&cluster), fingerprint(&read_whole(text)));
    }

    #[test]
    fn errors_carry_the_line_in_the_file() {
        let first = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n";
        for (text, line) in [
            // A later document.
            (
                format!("{first}---\n{first}---\nkind: Namespace\nmetadata: {{name: b]\n"),
                10,
            ),
            // A later item of a List that is a later document.
            (
                format!(
                    "{first}---\napiVersion: v1\nitems:\n- kind: Namespace\n  metadata: {{name: b}}\n- kind: Namespace\n  metadata: {{name: c]\nkind: List\n"
                ),
                10,
            ),
        ] {
            let err = load_yaml(&text).unwrap_err().to_string();
            assert!(err.starts_with(&format!("t.yaml:{line}:")), "{err}");
            assert!(err.contains(": invalid YAML: "), "{err}");
            let whole = parse_yaml("t.yaml", &text, 0).unwrap_err().to_string();
            assert_eq!(err, whole);
        }
    }

    #[test]
    fn scans_top_level_fields_only() {
        let j = r#"{"metadata":{"ownerReferences":[{"kind":"ReplicaSet"}]},"kind":"Pod","apiVersion":"v1"}"#;
        assert_eq!(top_level_string(j, "kind"), Some("Pod"));
        assert_eq!(top_level_string(j, "apiVersion"), Some("v1"));
        assert_eq!(
            top_level_string(r#"{"a":"kind","kind" : "Node"}"#, "kind"),
            Some("Node")
        );
        assert_eq!(top_level_string(r#"{"kind":"N\u006fde"}"#, "kind"), None);
        assert_eq!(top_level_string(r#"{"x":"a\"kind\":\"no"}"#, "kind"), None);
        assert_eq!(top_level_string(r#"{"kind":5}"#, "kind"), None);
    }

    #[test]
    fn json_list_matches_yaml() {
        let json = br#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"}},{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"x"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}"#;
        let mut builder = ClusterBuilder::new(LoadOptions::default());
        read_into(&mut builder, &mut Tally::default(), "t.json", json.to_vec()).unwrap();
        let cluster = builder.finish().unwrap();
        assert_eq!(cluster.nodes.len(), 1);
        assert_eq!(cluster.pods[0].key(), "x/p");

        // The demo cluster as kubectl prints a List, as a stream of documents and as JSON.
        let list = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/clusters/demo.yaml"
        ))
        .unwrap();
        let values = flattened("demo.yaml", parse_yaml("demo.yaml", &list, 0).unwrap()).unwrap();
        let docs: Vec<String> = values
            .iter()
            .map(|v| serde_saphyr::to_string(v).unwrap())
            .collect();
        let stream: String = docs.iter().map(|d| format!("---\n{d}")).collect();
        let items: String = docs
            .iter()
            .flat_map(|d| d.lines().enumerate())
            .map(|(i, l)| format!("{}{l}\n", if i == 0 { "- " } else { "  " }))
            .collect();
        let kubectl = format!("apiVersion: v1\nitems:\n{items}kind: List\nmetadata: {{}}\n");
        assert_eq!(
            list_items(&unit(&kubectl, 0, false)).unwrap().count(),
            docs.len()
        );
        let json = serde_json::to_vec(&values).unwrap();
        let whole = fingerprint(&read_whole(&list));
        for (name, bytes) in [
            ("demo.yaml", list.into_bytes()),
            ("stream.yaml", stream.into_bytes()),
            ("kubectl.yaml", kubectl.into_bytes()),
            ("demo.json", json),
        ] {
            let mut builder = ClusterBuilder::new(LoadOptions::default());
            read_into(&mut builder, &mut Tally::default(), name, bytes).unwrap();
            assert_eq!(fingerprint(&builder.finish().unwrap()), whole, "{name}");
        }
    }

    #[test]
    fn syntax_errors_carry_the_line() {
        let err = parse_documents("bad.yaml", b"a: b\nc: [unclosed\n".to_vec()).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("bad.yaml:"), "{msg}");
        assert!(
            matches!(err, LoadError::Syntax { line: Some(_), .. }),
            "{msg}"
        );
    }

    #[test]
    fn json_errors_carry_the_line() {
        let err = parse_documents("bad.json", b"{\n \"kind\": \"Pod\",\n}".to_vec()).unwrap_err();
        assert!(err.to_string().starts_with("bad.json:3:"), "{err}");
    }

    #[test]
    fn type_errors_name_object_and_field() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: x}\nspec:\n  containers: 5\n";
        let err = read_into(
            &mut ClusterBuilder::new(LoadOptions::default()),
            &mut Tally::default(),
            "p.yaml",
            text.as_bytes().to_vec(),
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("Pod x/p: spec.containers"), "{msg}");
        let item = text
            .lines()
            .fold(String::from("- "), |item, l| item + l + "\n  ");
        let err = load_yaml(&format!("items:\n{item}\nkind: List\n")).unwrap_err();
        assert_eq!(err.to_string(), msg.replace("p.yaml", "t.yaml"));
    }

    #[test]
    fn billion_laughs_is_an_error() {
        let mut text = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let mut prev = 'a';
        for name in ['b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'] {
            text.push_str(&format!("{name}: &{name} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
            prev = name;
        }
        assert!(load_yaml(&text).is_err());
        let item = text
            .lines()
            .fold(String::from("- "), |item, l| item + l + "\n  ");
        assert!(load_yaml(&format!("items:\n{item}\nkind: List\n")).is_err());
        assert!(parse_documents("laughs.yaml", text.into_bytes()).is_err());
    }

    #[test]
    fn what_holds_no_document() {
        for empty in [
            "",
            "\n \n",
            "# c\n---\n...\n",
            "null",
            "--- ~\n",
            "---   # x\n",
        ] {
            assert!(holds_no_document(empty.as_bytes()), "{empty:?}");
        }
        for some in ["{}", "kind: List\nitems: []\n", "--- a\n", "[]"] {
            assert!(!holds_no_document(some.as_bytes()), "{some:?}");
        }
    }

    #[test]
    fn line_scans_vouch_only_for_single_line_nodes() {
        for ok in [
            "a: \"x\" # \"\nb: 'it''s'\nc: {d: [1, \"}\"]}\n",
            "- note: |\n    \"open\n    kind: Secret\n  kind: Node\n",
            "a: it's fine\nb: x\"y\n",
        ] {
            assert!(single_line_nodes(ok), "{ok}");
        }
        for open in [
            "a: \"x\n  kind: Secret\"\n",
            "a: 'x\nkind: Secret'\n",
            "a: {b: c,\n  kind: Secret}\n",
            "? complex\n: key\n",
            "- note: |\n    text\n  ann: \"abc\n  kind: Secret\n  \"\n",
        ] {
            assert!(!single_line_nodes(open), "{open}");
        }
        assert_eq!(
            without_indices("spec.containers[10].x[0]"),
            "spec.containers[].x[]"
        );
    }

    #[test]
    fn gzip_is_detected() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n\"}}")
            .unwrap();
        let docs = parse_documents("x.json.gz", enc.finish().unwrap()).unwrap();
        assert_eq!(docs.len(), 1);
    }
}
