//! A configuration file as a tree of values that keeps keys in document order and repeated keys,
//! so unknown and duplicate fields are reported in the order kube-scheduler's decoder meets them.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    String(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    /// The JSON kind Go's decoder names in type errors (`cannot unmarshal <kind> into ...`).
    pub fn go_kind(&self) -> String {
        match self {
            Node::Null => "null".into(),
            Node::Bool(_) => "bool".into(),
            Node::Int(_) | Node::Float(_) => "number".into(),
            Node::String(_) => "string".into(),
            Node::Seq(_) => "array".into(),
            Node::Map(_) => "object".into(),
        }
    }

    /// The value as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(i) => i64::try_from(*i)
                .map(Value::from)
                .or_else(|_| u64::try_from(*i).map(Value::from))
                .unwrap_or_else(|_| Value::from(*i as f64)),
            Node::Float(f) => Value::from(*f),
            Node::String(s) => Value::String(s.clone()),
            Node::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Node::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML or JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        Node::deserialize(d)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::Int(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::Int(v.into()))
    }

    fn visit_i128<E>(self, v: i128) -> Result<Node, E> {
        Ok(Node::Int(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Node, E> {
        Ok(i128::try_from(v).map_or(Node::Float(v as f64), Node::Int))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::Float(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Node, E> {
        Ok(Node::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some((k, v)) = map.next_entry::<KeyString, Node>()? {
            entries.push((k.0, v));
        }
        Ok(Node::Map(entries))
    }
}

/// A mapping key: YAML allows scalars of any type there, which JSON conversion turns into text.
struct KeyString(String);

impl<'de> Deserialize<'de> for KeyString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyString, D::Error> {
        let text = match Node::deserialize(d)? {
            Node::String(s) => s,
            Node::Bool(b) => b.to_string(),
            Node::Int(i) => i.to_string(),
            Node::Float(f) => f.to_string(),
            Node::Null => "null".to_string(),
            Node::Seq(_) | Node::Map(_) => {
                return Err(de::Error::custom("a mapping key must be a scalar"));
            }
        };
        Ok(KeyString(text))
    }
}

/// Parses a file's text: JSON if it starts like JSON, YAML otherwise; the first document only.
pub fn parse(text: &str) -> Result<Node, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return serde_json::from_str::<Node>(trimmed).map_err(|e| format!("invalid JSON: {e}"));
    }
    let docs: Vec<Node> = serde_saphyr::from_multiple(text).map_err(|e| {
        format!(
            "invalid YAML: {}",
            e.to_string().lines().next().unwrap_or("")
        )
    })?;
    Ok(docs
        .into_iter()
        .find(|d| *d != Node::Null)
        .unwrap_or(Node::Null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_document_order_and_types() {
        let n = parse("b: 1\na: [x, 2.5, true, null]\n").unwrap();
        let Node::Map(entries) = n else {
            panic!("a map")
        };
        assert_eq!(entries[0], ("b".to_string(), Node::Int(1)));
        assert_eq!(
            entries[1].1,
            Node::Seq(vec![
                Node::String("x".into()),
                Node::Float(2.5),
                Node::Bool(true),
                Node::Null
            ])
        );
        let j = parse(r#"{"z": {"y": 1, "x": 2}}"#).unwrap();
        assert_eq!(j.to_json().to_string(), r#"{"z":{"x":2,"y":1}}"#);
    }

    #[test]
    fn repeated_yaml_keys_are_rejected() {
        assert!(parse("a: 1\na: 2\n").is_err());
    }
}
