//! Reading cluster state from files: YAML or JSON, a `v1 List`, multi-document YAML or single
//! objects, gzip-compressed or not, from a file, a directory of files, or stdin (`-`).

use super::{Fields, Object, TypeError};
use crate::model::cluster::{Cluster, ClusterBuilder, ConvertedPod, convert_pod};
use crate::model::error::{ObjectError, ObjectErrors};
use serde::de::DeserializeOwned;
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
    let text = std::str::from_utf8(&bytes).map_err(|e| LoadError::Content {
        path: path.to_string(),
        message: format!("not UTF-8 text: {e}"),
    })?;
    parse_yaml(path, text)
}

/// YAML with budgets that grow with the input but stop alias expansion ("billion laughs") from
/// turning a small file into gigabytes.
fn parse_yaml(path: &str, text: &str) -> Result<Vec<Value>, LoadError> {
    let size = text.len();
    let mut budget = serde_saphyr::Budget::default();
    budget.max_events = (2 * size).max(1_000_000);
    budget.max_nodes = size.max(250_000);
    budget.max_total_scalar_bytes = size.max(64 << 20);
    budget.max_documents = (size / 8).max(1_024);
    budget.max_reader_input_bytes = None;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    let docs: Vec<Value> =
        serde_saphyr::from_multiple_with_options(text, options).map_err(|e| LoadError::Syntax {
            path: path.to_string(),
            line: e
                .location()
                .filter(|l| l.line() > 0)
                .map(|l| (l.line(), l.column())),
            message: format!("invalid YAML: {}", first_line(&e.to_string())),
        })?;
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
    fn add_to(self, builder: &mut ClusterBuilder, skipped: &mut BTreeMap<String, usize>) {
        match self {
            Item::Object(o) => builder.add(o),
            Item::Pod(p) => builder.add_pod(*p),
            Item::Skipped(kind) => *skipped.entry(kind).or_insert(0) += 1,
        }
    }
}

/// Types one object; pods are converted on the spot so their API form is never all in memory.
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
    Ok(
        match Object::deserialize(kind, api_version, d, Fields::Named).map_err(object_error)? {
            Some(Object::Pod(p)) => Item::Pod(Box::new(convert_pod(*p))),
            Some(o) => Item::Object(o),
            None => Item::Skipped(kind.to_string()),
        },
    )
}

/// Items are converted in parallel in batches of this size, keeping memory bounded.
const BATCH: usize = 4096;

fn read_into(
    builder: &mut ClusterBuilder,
    skipped: &mut BTreeMap<String, usize>,
    path: &str,
    bytes: Vec<u8>,
) -> Result<(), LoadError> {
    use rayon::prelude::*;
    let bytes = decompress(path, bytes)?;
    if looks_like_json(&bytes) {
        return read_json_into(builder, skipped, path, &bytes);
    }
    let mut values = Vec::new();
    for doc in parse_documents(path, bytes)? {
        flatten_value(path, doc, &mut values)?;
    }
    for chunk in values.chunks(BATCH) {
        let items: Vec<Result<Item, LoadError>> = chunk
            .par_iter()
            .map(|v| {
                let kind = str_field(v, "kind");
                item(path, kind, str_field(v, "apiVersion"), || object_name(v), v)
            })
            .collect();
        for i in items {
            i?.add_to(builder, skipped);
        }
    }
    Ok(())
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
    use rayon::prelude::*;
    let syntax = |e: serde_json::Error| LoadError::Syntax {
        path: path.to_string(),
        line: Some((e.line() as u64, e.column() as u64)),
        message: format!("invalid JSON: {e}"),
    };
    let mut raws: Vec<&RawValue> = Vec::new();
    for doc in serde_json::Deserializer::from_slice(bytes).into_iter::<&RawValue>() {
        collect_raw(doc.map_err(syntax)?, &mut raws).map_err(syntax)?;
    }
    for chunk in raws.chunks(BATCH) {
        let items: Vec<Result<Item, LoadError>> = chunk
            .par_iter()
            .map(|raw| {
                let text = raw.get();
                let name =
                    || object_name(&serde_json::from_str::<Value>(text).unwrap_or(Value::Null));
                // kubectl writes apiVersion and kind first: finding them by a scan avoids a
                // second full parse of every object; anything unusual takes the general path.
                let scanned =
                    top_level_string(text, "kind").zip(top_level_string(text, "apiVersion"));
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
            })
            .collect();
        for i in items {
            i?.add_to(builder, skipped);
        }
    }
    Ok(())
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

/// Reads the one object of a `-f` file (a Pod), from a path or `-` for stdin.
pub fn load_single(path: &str) -> Result<(String, Value), LoadError> {
    let (display, bytes) = if path == "-" {
        ("<stdin>".to_string(), read_stdin()?)
    } else {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
            path: path.to_string(),
            source,
        })?;
        (path.to_string(), bytes)
    };
    let mut docs = parse_documents(&display, bytes)?;
    // A List of one item is what `kubectl get pod x -o yaml` sometimes wraps.
    if docs.len() == 1 && str_field(&docs[0], "kind") == "List" {
        if let Some(Value::Array(items)) = docs[0].get_mut("items").map(Value::take) {
            docs = items;
        }
    }
    match docs.len() {
        1 => Ok((display, docs.pop().expect("one document"))),
        0 => Err(LoadError::Content {
            path: display,
            message: "the file holds no object".into(),
        }),
        n => Err(LoadError::Content {
            path: display,
            message: format!("expected one object, found {n}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_list_and_multi_document() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n";
        let mut builder = ClusterBuilder::new();
        let mut skipped = BTreeMap::new();
        read_into(
            &mut builder,
            &mut skipped,
            "t.yaml",
            text.as_bytes().to_vec(),
        )
        .unwrap();
        let cluster = builder.finish().unwrap();
        assert_eq!(cluster.nodes.len(), 1);
        assert_eq!(cluster.namespaces.len(), 1);
        assert_eq!(skipped.get("Deployment"), Some(&1));
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
