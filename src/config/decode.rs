//! Decoding a `Node` tree into typed values the way kube-scheduler's strict JSON decoder does:
//! the first value of the wrong type aborts with Go's `json: cannot unmarshal …` message, while
//! unknown and repeated fields are collected (`unknown field "profiles[0].foo"`) and reported
//! together once everything else decoded.

use super::duration;
use super::node::Node;
use std::collections::BTreeMap;

pub type Res<T> = Result<T, String>;

/// Unknown and repeated fields, each with its position in the document (entry indices from the
/// root), so they can be listed in the order the decoder meets them.
#[derive(Default)]
pub struct Strict(Vec<(Vec<usize>, String)>);

impl Strict {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The messages in document order.
    pub fn into_messages(mut self) -> Vec<String> {
        self.0.sort_by(|a, b| a.0.cmp(&b.0));
        self.0.into_iter().map(|(_, m)| m).collect()
    }
}

/// One field's value, with what error messages need to name it.
#[derive(Clone, Copy)]
pub struct Field<'a, 'p> {
    pub node: &'a Node,
    /// Where the value is, as strict errors name it (`profiles[0].plugins`).
    json: &'p str,
    /// Where the value is, as type errors name it: field names only (`profiles.plugins`).
    go_field: &'p str,
    /// The Go struct holding the field.
    go_struct: &'static str,
    /// Entry indices from the document's root.
    pos: &'p [usize],
}

impl<'a, 'p> Field<'a, 'p> {
    fn type_error(&self, go_type: &str) -> String {
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{} of type {go_type}",
            self.node.go_kind(),
            self.go_struct,
            self.go_field
        )
    }

    fn int(&self, go_type: &str, min: i128, max: i128) -> Res<i128> {
        // A number that does not fit is named with its text, any other value by its kind.
        let number = |text: String| {
            format!(
                "json: cannot unmarshal number {text} into Go struct field {}.{} of type {go_type}",
                self.go_struct, self.go_field
            )
        };
        match self.node {
            // Go leaves a field it decodes null into at its zero value.
            Node::Null => Ok(0),
            Node::Int(i) if (min..=max).contains(i) => Ok(*i),
            Node::Int(i) => Err(number(i.to_string())),
            Node::Float(f) => Err(number(f.to_string())),
            _ => Err(self.type_error(go_type)),
        }
    }

    pub fn i32(&self) -> Res<i32> {
        self.int("int32", i32::MIN.into(), i32::MAX.into())
            .map(|i| i as i32)
    }

    pub fn i64(&self) -> Res<i64> {
        self.int("int64", i64::MIN.into(), i64::MAX.into())
            .map(|i| i as i64)
    }

    pub fn f64(&self, go_type: &str) -> Res<f64> {
        match self.node {
            Node::Null => Ok(0.0),
            Node::Int(i) => Ok(*i as f64),
            Node::Float(f) => Ok(*f),
            _ => Err(self.type_error(go_type)),
        }
    }

    pub fn bool(&self) -> Res<bool> {
        match self.node {
            Node::Null => Ok(false),
            Node::Bool(b) => Ok(*b),
            _ => Err(self.type_error("bool")),
        }
    }

    pub fn string(&self) -> Res<String> {
        self.string_of("string")
    }

    /// A string into a named string type (`v1.ScoringStrategyType`, …).
    pub fn string_of(&self, go_type: &str) -> Res<String> {
        match self.node {
            Node::Null => Ok(String::new()),
            Node::String(s) => Ok(s.clone()),
            _ => Err(self.type_error(go_type)),
        }
    }

    /// A `[]byte`: base64 text in JSON.
    pub fn bytes(&self) -> Res<Vec<u8>> {
        use base64::Engine;
        match self.node {
            Node::String(s) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| match e {
                    base64::DecodeError::InvalidByte(at, _)
                    | base64::DecodeError::InvalidLastSymbol(at, _) => {
                        format!("illegal base64 data at input byte {at}")
                    }
                    _ => format!("illegal base64 data at input byte {}", s.len()),
                }),
            _ => Err(self.type_error("[]uint8")),
        }
    }

    /// A `metav1.Duration`, in nanoseconds: a string `time.ParseDuration` accepts.
    pub fn duration(&self) -> Res<i64> {
        match self.node {
            Node::String(s) => duration::parse(s),
            other => Err(format!(
                "json: cannot unmarshal {} into Go value of type string",
                other.go_kind()
            )),
        }
    }

    /// A struct; null (`profiles: [null]`) is the zero struct, as Go decodes it.
    pub fn object(&self, go_struct: &'static str, go_type: &str) -> Res<Obj<'a>> {
        let entries: &'a [(String, Node)] = match self.node {
            Node::Map(entries) => entries,
            Node::Null => &[],
            _ => return Err(self.type_error(go_type)),
        };
        Ok(Obj::new(
            entries,
            self.json.to_string(),
            self.go_field.to_string(),
            go_struct,
            self.pos.to_vec(),
        ))
    }

    /// The items of a list, each with its index in the strict path.
    pub fn items(&self, go_type: &str) -> Res<Vec<Item<'a>>> {
        match self.node {
            Node::Seq(items) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, node)| Item {
                    node,
                    json: format!("{}[{i}]", self.json),
                    go_field: self.go_field.to_string(),
                    go_struct: self.go_struct,
                    pos: self.pos.iter().copied().chain([i]).collect(),
                })
                .collect()),
            _ => Err(self.type_error(go_type)),
        }
    }

    pub fn strings(&self) -> Res<Vec<String>> {
        self.items("[]string")?
            .iter()
            .map(|i| i.field().string())
            .collect()
    }

    pub fn string_map(&self) -> Res<BTreeMap<String, String>> {
        match self.node {
            Node::Map(entries) => entries
                .iter()
                .map(|(k, v)| {
                    let f = Field { node: v, ..*self };
                    Ok((k.clone(), f.string()?))
                })
                .collect(),
            _ => Err(self.type_error("map[string]string")),
        }
    }
}

/// An element of a list: owns its path.
pub struct Item<'a> {
    pub node: &'a Node,
    json: String,
    go_field: String,
    go_struct: &'static str,
    pos: Vec<usize>,
}

impl<'a> Item<'a> {
    pub fn field(&self) -> Field<'a, '_> {
        Field {
            node: self.node,
            json: &self.json,
            go_field: &self.go_field,
            go_struct: self.go_struct,
            pos: &self.pos,
        }
    }
}

/// An object being decoded: fields are taken by name, the rest are unknown.
pub struct Obj<'a> {
    entries: &'a [(String, Node)],
    used: Vec<bool>,
    json: String,
    go_field: String,
    go_struct: &'static str,
    pos: Vec<usize>,
}

impl<'a> Obj<'a> {
    fn new(
        entries: &'a [(String, Node)],
        json: String,
        go_field: String,
        go_struct: &'static str,
        pos: Vec<usize>,
    ) -> Obj<'a> {
        Obj {
            entries,
            used: vec![false; entries.len()],
            json,
            go_field,
            go_struct,
            pos,
        }
    }

    /// The top of a document decoded into `go_struct`.
    pub fn root(node: &'a Node, go_struct: &'static str) -> Res<Obj<'a>> {
        match node {
            Node::Map(entries) => Ok(Obj::new(
                entries,
                String::new(),
                String::new(),
                go_struct,
                Vec::new(),
            )),
            other => Err(format!(
                "json: cannot unmarshal {} into Go value of type v1.{go_struct}",
                other.go_kind()
            )),
        }
    }

    fn child(parent: &str, key: &str) -> String {
        if parent.is_empty() {
            key.to_string()
        } else {
            format!("{parent}.{key}")
        }
    }

    /// Calls `f` with the field's value unless it is absent or null (Go leaves those at zero).
    pub fn with<T>(
        &mut self,
        key: &str,
        f: impl FnOnce(Field<'a, '_>) -> Res<T>,
    ) -> Res<Option<T>> {
        let mut found = None;
        for (i, (k, v)) in self.entries.iter().enumerate() {
            if k == key {
                self.used[i] = true;
                found = Some((i, v));
            }
        }
        match found {
            None | Some((_, Node::Null)) => Ok(None),
            Some((i, node)) => {
                let json = Obj::child(&self.json, key);
                let go_field = Obj::child(&self.go_field, key);
                let pos: Vec<usize> = self.pos.iter().copied().chain([i]).collect();
                f(Field {
                    node,
                    json: &json,
                    go_field: &go_field,
                    go_struct: self.go_struct,
                    pos: &pos,
                })
                .map(Some)
            }
        }
    }

    pub fn i32(&mut self, key: &str) -> Res<Option<i32>> {
        self.with(key, |f| f.i32())
    }

    pub fn i64(&mut self, key: &str) -> Res<Option<i64>> {
        self.with(key, |f| f.i64())
    }

    pub fn bool(&mut self, key: &str) -> Res<Option<bool>> {
        self.with(key, |f| f.bool())
    }

    pub fn string(&mut self, key: &str) -> Res<Option<String>> {
        self.with(key, |f| f.string())
    }

    pub fn strings(&mut self, key: &str) -> Res<Option<Vec<String>>> {
        self.with(key, |f| f.strings())
    }

    pub fn duration(&mut self, key: &str) -> Res<Option<i64>> {
        self.with(key, |f| f.duration())
    }

    pub fn bytes(&mut self, key: &str) -> Res<Option<Vec<u8>>> {
        self.with(key, |f| f.bytes())
    }

    /// Takes `apiVersion` and `kind` (the inline `TypeMeta`).
    pub fn type_meta(&mut self) -> Res<(Option<String>, Option<String>)> {
        Ok((self.string("apiVersion")?, self.string("kind")?))
    }

    /// Records fields nothing asked for, and fields given twice.
    pub fn finish(self, strict: &mut Strict) {
        for (i, (k, _)) in self.entries.iter().enumerate() {
            let path = Obj::child(&self.json, k);
            let message = if !self.used[i] {
                format!("unknown field {path:?}")
            } else if self.entries[..i].iter().any(|(prev, _)| prev == k) {
                format!("duplicate field {path:?}")
            } else {
                continue;
            };
            strict
                .0
                .push((self.pos.iter().copied().chain([i]).collect(), message));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::node::parse;

    #[test]
    fn type_errors_name_the_go_field() {
        let n = parse("profiles:\n- plugins:\n    score:\n      enabled:\n      - name: X\n        weight: abc\n").unwrap();
        let mut root = Obj::root(&n, "KubeSchedulerConfiguration").unwrap();
        let err = root
            .with("profiles", |f| {
                let items = f.items("[]v1.KubeSchedulerProfile")?;
                let mut p = items[0]
                    .field()
                    .object("KubeSchedulerProfile", "v1.KubeSchedulerProfile")?;
                p.with("plugins", |f| {
                    let mut plugins = f.object("Plugins", "v1.Plugins")?;
                    plugins.with("score", |f| {
                        let mut set = f.object("PluginSet", "v1.PluginSet")?;
                        set.with("enabled", |f| {
                            let items = f.items("[]v1.Plugin")?;
                            let mut pl = items[0].field().object("Plugin", "v1.Plugin")?;
                            pl.i32("weight")
                        })
                    })
                })
            })
            .unwrap_err();
        assert_eq!(
            err,
            "json: cannot unmarshal string into Go struct field Plugin.profiles.plugins.score.enabled.weight of type int32"
        );
    }

    #[test]
    fn unknown_and_repeated_fields_in_document_order() {
        let n = parse(r#"{"b": 1, "a": 2, "c": 3, "a": 4}"#).unwrap();
        let mut o = Obj::root(&n, "T").unwrap();
        assert_eq!(o.i32("a").unwrap(), Some(4));
        let mut strict = Strict::default();
        o.finish(&mut strict);
        assert_eq!(
            strict.into_messages(),
            [
                "unknown field \"b\"",
                "unknown field \"c\"",
                "duplicate field \"a\""
            ]
        );
    }
}
