//! Reading cluster state from files: YAML or JSON, a `v1 List`, multi-document YAML or single
//! objects, gzip-compressed or not, from a file, a directory of files, or stdin (`-`).

use super::{Fields, Object, TypeError};
use crate::model::cluster::{Cluster, ClusterBuilder, ConvertedPod, convert_pod};
use crate::model::error::{ObjectError, ObjectErrors};
use serde::Deserializer;
use serde::de::{DeserializeOwned, DeserializeSeed};
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}{}: {message}", .line.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
    Syntax {
        path: String,
        line: Option<(u64, u64)>,
        message: String,
    },
    #[error("{path}: {kind} {object}: {field}: {message}")]
    Object {
        path: String,
        kind: String,
        object: String,
        field: String,
        message: String,
    },
    #[error("{path}: {message}")]
    Content { path: String, message: String },
    #[error("{path}: invalid objects:\n{errors}")]
    Invalid { path: String, errors: ObjectErrors },
}

/// Reads a path given to `--snapshot` into a cluster.
pub fn load(path: &str) -> Result<Cluster, LoadError> {
    if path == "-" {
        return load_bytes("<stdin>", read_stdin()?);
    }
    // Read lazily: one file's bytes in memory at a time.
    let files = files_under(Path::new(path))?.into_iter().map(|file| {
        let display = file.display().to_string();
        std::fs::read(&file)
            .map(|bytes| (display.clone(), bytes))
            .map_err(|source| LoadError::Io {
                path: display,
                source,
            })
    });
    build(path, files)
}

fn read_stdin() -> Result<Vec<u8>, LoadError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .map_err(|source| LoadError::Io {
            path: "<stdin>".into(),
            source,
        })?;
    Ok(bytes)
}

/// Reads one file's content (`name` labels it in messages) into a cluster.
pub fn load_bytes(name: &str, bytes: Vec<u8>) -> Result<Cluster, LoadError> {
    build(name, [Ok((name.to_string(), bytes))])
}

fn build(
    path: &str,
    files: impl IntoIterator<Item = Result<(String, Vec<u8>), LoadError>>,
) -> Result<Cluster, LoadError> {
    let mut builder = ClusterBuilder::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    for file in files {
        let (name, bytes) = file?;
        read_into(&mut builder, &mut skipped, &name, bytes)?;
    }
    for (kind, n) in skipped {
        builder.warn(format!(
            "skipped {n} {kind} object(s): kubectl-sched does not read this kind"
        ));
    }
    builder.finish().map_err(|errors| LoadError::Invalid {
        path: path.to_string(),
        errors,
    })
}

fn files_under(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let meta = std::fs::metadata(path).map_err(|source| LoadError::Io {
        path: path.display().to_string(),
        source,
    })?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|source| LoadError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let name = name.strip_suffix(".gz").unwrap_or(name);
            p.is_file()
                && (name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(LoadError::Content {
            path: path.display().to_string(),
            message: "no .yaml, .yml or .json files (optionally .gz) in this directory".into(),
        });
    }
    Ok(files)
}

/// Decompresses gzip input (by its magic bytes, whatever the file is called).
pub fn decompress(path: &str, bytes: Vec<u8>) -> Result<Vec<u8>, LoadError> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::with_capacity(bytes.len() * 8);
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(|e| LoadError::Content {
                path: path.to_string(),
                message: format!("cannot decompress gzip data: {e}"),
            })?;
        Ok(out)
    } else {
        Ok(bytes)
    }
}

fn looks_like_json(bytes: &[u8]) -> bool {
    matches!(
        bytes.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{') | Some(b'[')
    )
}

/// Parses a file's documents into generic values, JSON or YAML.
pub fn parse_documents(path: &str, bytes: Vec<u8>) -> Result<Vec<Value>, LoadError> {
    let bytes = decompress(path, bytes)?;
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

/// One object of the input: typed, a pod already converted, or a kind the tool skips.
enum Item {
    Object(Object),
    Pod(Box<Result<ConvertedPod, ObjectError>>),
    Skipped(String),
}

impl Item {
    /// Pods are converted on the spot so their API form is never all in memory.
    fn new(kind: &str, object: Option<Object>) -> Item {
        match object {
            Some(Object::Pod(p)) => Item::Pod(Box::new(convert_pod(*p))),
            Some(o) => Item::Object(o),
            None => Item::Skipped(kind.to_string()),
        }
    }

    fn add_to(self, builder: &mut ClusterBuilder, skipped: &mut BTreeMap<String, usize>) {
        match self {
            Item::Object(o) => builder.add(o),
            Item::Pod(p) => builder.add_pod(*p),
            Item::Skipped(kind) => *skipped.entry(kind).or_insert(0) += 1,
        }
    }
}

/// Types one object, naming the field at fault if it does not fit.
fn item<'de, D>(
    path: &str,
    kind: &str,
    api_version: &str,
    name: impl Fn() -> String,
    d: D,
) -> Result<Item, LoadError>
where
    D: serde::Deserializer<'de>,
    D::Error: std::fmt::Display,
{
    let object_error = |e: TypeError| LoadError::Object {
        path: path.to_string(),
        kind: kind.to_string(),
        object: name(),
        field: e.field,
        message: e.message,
    };
    if kind.is_empty() {
        return Err(LoadError::Object {
            path: path.to_string(),
            kind: "object".into(),
            object: name(),
            field: "kind".into(),
            message: "required field is missing".into(),
        });
    }
    let object = Object::deserialize(kind, api_version, d, Fields::Named).map_err(object_error)?;
    Ok(Item::new(kind, object))
}

/// Items are converted in parallel in batches of this size, keeping memory bounded.
const BATCH: usize = 4096;

fn read_into(
    builder: &mut ClusterBuilder,
    skipped: &mut BTreeMap<String, usize>,
    path: &str,
    bytes: Vec<u8>,
) -> Result<(), LoadError> {
    let bytes = decompress(path, bytes)?;
    if looks_like_json(&bytes) {
        return read_json_into(builder, skipped, path, &bytes);
    }
    read_yaml_into(builder, skipped, path, utf8(path, &bytes)?)
}

/// Turns pieces into objects in parallel, BATCH at a time to keep memory bounded, and adds those
/// in input order, counting them in `added` (which says, on failure, how many went in before).
fn add_batched<T: Sync, I: IntoIterator<Item = Item> + Send>(
    builder: &mut ClusterBuilder,
    skipped: &mut BTreeMap<String, usize>,
    pieces: &[T],
    added: &mut usize,
    objects: impl Fn(&T) -> Result<I, LoadError> + Sync,
) -> Result<(), LoadError> {
    use rayon::prelude::*;
    for chunk in pieces.chunks(BATCH) {
        let parsed: Vec<Result<I, LoadError>> = chunk.par_iter().map(&objects).collect();
        for items in parsed {
            for i in items? {
                *added += 1;
                i.add_to(builder, skipped);
            }
        }
    }
    Ok(())
}

/// Generic values, typed the way they come.
fn add_values(
    builder: &mut ClusterBuilder,
    skipped: &mut BTreeMap<String, usize>,
    path: &str,
    values: &[Value],
) -> Result<(), LoadError> {
    add_batched(builder, skipped, values, &mut 0, |v| {
        value_item(path, v).map(std::iter::once)
    })
}

fn value_item(path: &str, v: &Value) -> Result<Item, LoadError> {
    let kind = str_field(v, "kind");
    item(path, kind, str_field(v, "apiVersion"), || object_name(v), v)
}

/// YAML in pieces parsed in parallel, as JSON is: the documents of a stream and the items of a
/// List as `kubectl get -o yaml` prints it, each straight into its API type when a scan finds
/// its kind. A stream the splitting cannot vouch for is read whole, into generic values.
fn read_yaml_into(
    builder: &mut ClusterBuilder,
    skipped: &mut BTreeMap<String, usize>,
    path: &str,
    text: &str,
) -> Result<(), LoadError> {
    let Some(docs) = split_documents(text) else {
        let values = flattened(path, parse_yaml(path, text, 0)?)?;
        return add_values(builder, skipped, path, &values);
    };
    let mut plain = Vec::new();
    for doc in docs {
        let Some(items) = list_items(&doc) else {
            plain.push(doc);
            continue;
        };
        add_batched(builder, skipped, &plain, &mut 0, |u| unit_items(path, u))?;
        plain.clear();
        let mut added = 0;
        match add_batched(builder, skipped, &items, &mut added, |u| {
            unit_items(path, u)
        }) {
            // An item may lean on another (an alias of an anchor defined in an earlier one): only
            // the whole document tells whether it is wrong.
            Err(LoadError::Syntax { .. }) => {
                let values = flattened(path, parse_yaml(path, doc.text, doc.line)?)?;
                add_values(builder, skipped, path, &values[added.min(values.len())..])?;
            }
            result => result?,
        }
    }
    add_batched(builder, skipped, &plain, &mut 0, |u| unit_items(path, u))
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
/// holds one there). `None` when directives or byte order marks tie documents to the stream.
fn split_documents(text: &str) -> Option<Vec<Unit<'_>>> {
    let mut docs = Vec::new();
    let (mut start, mut start_line) = (0, 0);
    let mut offset = 0;
    for (n, line) in (0u64..).zip(text.split_inclusive('\n')) {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare.starts_with('%') || (offset > 0 && bare.starts_with('\u{feff}')) {
            return None;
        }
        let end = offset + line.len();
        if is_marker(bare, "---") && offset > start {
            docs.push(Unit {
                text: &text[start..offset],
                line: start_line,
                entry: false,
            });
            (start, start_line) = (offset, n);
        } else if is_marker(bare, "...") {
            docs.push(Unit {
                text: &text[start..end],
                line: start_line,
                entry: false,
            });
            (start, start_line) = (end, n + 1);
        }
        offset = end;
    }
    if start < text.len() {
        docs.push(Unit {
            text: &text[start..],
            line: start_line,
            entry: false,
        });
    }
    Some(docs)
}

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
}

/// The items of a List document laid out as `kubectl get -o yaml` prints it: `items:` at column
/// 0, then each item a line `- ` at column 0 followed by indented lines. `None` for any other
/// layout, or when the rest of the document is not a List.
fn list_items<'a>(doc: &Unit<'a>) -> Option<Vec<Unit<'a>>> {
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
    let mut items = Vec::new();
    let (mut start, mut start_line) = (after, first_line);
    let mut end = after;
    let mut in_item = false;
    for (line, l) in (first_line..).zip(text[after..].split_inclusive('\n')) {
        let bare = l.trim_end_matches(['\n', '\r']);
        if bare.starts_with("- ") || bare == "-" {
            if in_item {
                items.push(Unit {
                    text: &text[start..end],
                    line: start_line,
                    entry: true,
                });
                (start, start_line) = (end, line);
            }
            in_item = true;
        } else if !(blank_or_comment(bare) || (in_item && bare.starts_with(' '))) {
            break;
        }
        end += l.len();
    }
    if !in_item {
        return None;
    }
    items.push(Unit {
        text: &text[start..end],
        line: start_line,
        entry: true,
    });
    let rest = [&text[..after], &text[end..]].concat();
    let rest: Value = serde_saphyr::from_str_with_options(&rest, unit_options(rest.len())).ok()?;
    str_field(&rest, "kind").ends_with("List").then_some(items)
}

fn blank_or_comment(line: &str) -> bool {
    let line = line.trim_start();
    line.is_empty() || line.starts_with('#')
}

/// The objects of one document or List item.
fn unit_items(path: &str, unit: &Unit) -> Result<Vec<Item>, LoadError> {
    if let Some(item) = typed_unit(unit) {
        return Ok(vec![item]);
    }
    let value: Value =
        serde_saphyr::from_str_with_options(unit.text, unit_options(unit.text.len()))
            .map_err(|e| yaml_error(path, &e, unit.line))?;
    let values = match value {
        Value::Null => Vec::new(),
        Value::Array(entries) if unit.entry => flattened(path, entries)?,
        v => flattened(path, vec![v])?,
    };
    values.iter().map(|v| value_item(path, v)).collect()
}

/// An object whose kind and apiVersion a scan finds, parsed straight into its API type. `None`
/// when that fails: the generic path then says what is wrong, naming the object and field.
fn typed_unit(unit: &Unit) -> Option<Item> {
    let kind = top_level_scalar(unit, "kind")?;
    let api_version = top_level_scalar(unit, "apiVersion")?;
    if kind.ends_with("List") {
        return None;
    }
    let seed = TypedSeed { kind, api_version };
    let options = unit_options(unit.text.len());
    serde_saphyr::with_deserializer_from_str_with_options(unit.text, options, |de| {
        if unit.entry {
            de.deserialize_seq(seed)
        } else {
            seed.deserialize(de)
        }
    })
    .ok()?
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
        let value = line.strip_prefix(key)?.strip_prefix(':')?.trim();
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

/// Types an object with the kind and apiVersion found for it, as a document or as the one entry
/// of a sequence (a List item).
#[derive(Clone, Copy)]
struct TypedSeed<'a> {
    kind: &'a str,
    api_version: &'a str,
}

impl<'de> DeserializeSeed<'de> for TypedSeed<'_> {
    type Value = Option<Item>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let object = Object::deserialize(self.kind, self.api_version, d, Fields::Unnamed);
        Ok(object.ok().map(|o| Item::new(self.kind, o)))
    }
}

impl<'de> serde::de::Visitor<'de> for TypedSeed<'_> {
    type Value = Option<Item>;

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
    if !v.is_object() {
        return Err(LoadError::Content {
            path: path.to_string(),
            message: format!(
                "expected a Kubernetes object or a List, found {}",
                type_name(&v)
            ),
        });
    }
    let kind = str_field(&v, "kind");
    if kind == "List" || (kind.ends_with("List") && v.get("items").is_some_and(Value::is_array)) {
        let Value::Object(mut map) = v else {
            unreachable!("checked is_object above")
        };
        if let Some(Value::Array(items)) = map.remove("items") {
            for i in items {
                flatten_value(path, i, out)?;
            }
        }
        return Ok(());
    }
    out.push(v);
    Ok(())
}

/// What the JSON fast path reads of a document before parsing it for real.
#[derive(serde::Deserialize)]
struct Peek<'a> {
    #[serde(default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "apiVersion")]
    api_version: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    items: Option<Vec<&'a RawValue>>,
}

/// JSON without building a generic tree: each object is parsed straight into its API type, the
/// items of a List in parallel, which is what makes a 150,000-pod snapshot load in seconds.
fn read_json_into(
    builder: &mut ClusterBuilder,
    skipped: &mut BTreeMap<String, usize>,
    path: &str,
    bytes: &[u8],
) -> Result<(), LoadError> {
    let syntax = |e: serde_json::Error| LoadError::Syntax {
        path: path.to_string(),
        line: Some((e.line() as u64, e.column() as u64)),
        message: format!("invalid JSON: {e}"),
    };
    let mut raws: Vec<&RawValue> = Vec::new();
    for doc in serde_json::Deserializer::from_slice(bytes).into_iter::<&RawValue>() {
        collect_raw(doc.map_err(syntax)?, &mut raws).map_err(syntax)?;
    }
    add_batched(builder, skipped, &raws, &mut 0, |raw| {
        let text = raw.get();
        let name = || object_name(&serde_json::from_str::<Value>(text).unwrap_or(Value::Null));
        // kubectl writes apiVersion and kind first: finding them by a scan avoids a
        // second full parse of every object; anything unusual takes the general path.
        let scanned = top_level_string(text, "kind").zip(top_level_string(text, "apiVersion"));
        let peek: Peek;
        let (kind, api_version) = match scanned {
            Some(found) => found,
            None => {
                peek = serde_json::from_str(text).map_err(syntax)?;
                (
                    peek.kind.as_deref().unwrap_or(""),
                    peek.api_version.as_deref().unwrap_or(""),
                )
            }
        };
        item(
            path,
            kind,
            api_version,
            name,
            &mut serde_json::Deserializer::from_str(text),
        )
        .map(std::iter::once)
    })
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

fn collect_raw<'a>(
    raw: &'a RawValue,
    out: &mut Vec<&'a RawValue>,
) -> Result<(), serde_json::Error> {
    if raw.get().trim_start().starts_with('[') {
        for item in serde_json::from_str::<Vec<&RawValue>>(raw.get())? {
            collect_raw(item, out)?;
        }
        return Ok(());
    }
    let peek: Peek = serde_json::from_str(raw.get())?;
    let is_list = peek
        .kind
        .as_deref()
        .is_some_and(|k| k == "List" || k.ends_with("List"));
    match peek.items {
        Some(items) if is_list => {
            for item in items {
                collect_raw(item, out)?;
            }
        }
        _ => out.push(raw),
    }
    Ok(())
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

/// Deserialises a generic value into an API type, naming the field that does not fit.
pub fn typed<T: DeserializeOwned>(path: &str, kind: &str, v: Value) -> Result<T, LoadError> {
    let object = object_name(&v);
    serde_path_to_error::deserialize(v).map_err(|e| LoadError::Object {
        path: path.to_string(),
        kind: kind.to_string(),
        object,
        field: e.path().to_string(),
        message: e.inner().to_string(),
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
/// items of a `List` in their place.
pub fn load_documents(path: &str) -> Result<(String, Vec<Value>), LoadError> {
    let (display, bytes) = if path == "-" {
        ("<stdin>".to_string(), read_stdin()?)
    } else {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
            path: path.to_string(),
            source,
        })?;
        (path.to_string(), bytes)
    };
    let mut docs = Vec::new();
    for doc in parse_documents(&display, bytes)? {
        // `kubectl get … -o yaml` wraps what it prints in a List.
        match doc {
            Value::Object(mut m) if m.get("kind").and_then(Value::as_str) == Some("List") => {
                if let Some(Value::Array(items)) = m.remove("items") {
                    docs.extend(items);
                }
            }
            doc => docs.push(doc),
        }
    }
    if docs.is_empty() {
        return Err(LoadError::Content {
            path: display,
            message: "the file holds no object".into(),
        });
    }
    Ok((display, docs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_yaml(text: &str) -> Result<(Cluster, BTreeMap<String, usize>), LoadError> {
        let mut builder = ClusterBuilder::new();
        let mut skipped = BTreeMap::new();
        read_into(&mut builder, &mut skipped, "t.yaml", text.into())?;
        Ok((builder.finish().unwrap(), skipped))
    }

    /// The cluster as read before YAML was split: the whole text into generic values.
    fn read_whole(text: &str) -> Cluster {
        let mut builder = ClusterBuilder::new();
        let values = flattened("t.yaml", parse_yaml("t.yaml", text, 0).unwrap()).unwrap();
        add_values(&mut builder, &mut BTreeMap::new(), "t.yaml", &values).unwrap();
        builder.finish().unwrap()
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
                (&c.events, &c.meta, &c.warnings),
            )
        )
    }

    fn unit(text: &str, line: u64, entry: bool) -> Unit<'_> {
        Unit { text, line, entry }
    }

    #[test]
    fn yaml_list_and_multi_document() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n";
        let (cluster, skipped) = load_yaml(text).unwrap();
        assert_eq!(cluster.nodes.len(), 1);
        assert_eq!(cluster.namespaces.len(), 1);
        assert_eq!(skipped.get("Deployment"), Some(&1));
        assert_eq!(fingerprint(&cluster), fingerprint(&read_whole(text)));
    }

    #[test]
    fn splits_documents_at_markers() {
        let text = "# head\n---\na: 1\n...\n# between\n--- \nb: |\n  ---\n  x\n---\nc: 3\n";
        assert_eq!(
            split_documents(text).unwrap(),
            [
                unit("# head\n", 0, false),
                unit("---\na: 1\n...\n", 1, false),
                unit("# between\n", 4, false),
                unit("--- \nb: |\n  ---\n  x\n", 5, false),
                unit("---\nc: 3\n", 9, false),
            ]
        );
        assert_eq!(
            split_documents("---\r\na: ---\r\n---x: 1").unwrap(),
            [unit("---\r\na: ---\r\n---x: 1", 0, false)]
        );
        assert_eq!(split_documents("%YAML 1.2\n---\na: 1\n"), None);
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
            list_items(&unit(LIST, 10, false)).unwrap(),
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
            "apiVersion: v1\nitems:\nkind: List\n",
            "apiVersion: v1\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: a}}\n\"kind\": [List\n",
        ] {
            assert_eq!(list_items(&unit(text, 0, false)), None, "{text}");
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
        let mut builder = ClusterBuilder::new();
        read_into(&mut builder, &mut BTreeMap::new(), "t.json", json.to_vec()).unwrap();
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
            list_items(&unit(&kubectl, 0, false)).unwrap().len(),
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
            let mut builder = ClusterBuilder::new();
            read_into(&mut builder, &mut BTreeMap::new(), name, bytes).unwrap();
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
            &mut ClusterBuilder::new(),
            &mut BTreeMap::new(),
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
