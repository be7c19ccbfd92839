//! Decoding a generic JSON/YAML value into an API type the way the API server's decoder does, so
//! an object reads the same here as in a cluster: `null` is the field's zero value, an integral
//! float is an integer (kubectl sends YAML's `10.0` as `10`), a field the type does not have is
//! reported with its path and the closest known name, and every error names its field.

use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::RefCell;
use std::fmt;

/// A field of the input that the type does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownField {
    /// Where it is: `spec.containers[0].resources.request`.
    pub path: String,
    /// The known field of the same object closest to it, when one is close.
    pub suggestion: Option<&'static str>,
}

impl fmt::Display for UnknownField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown field {:?}", self.path)?;
        if let Some(s) = self.suggestion {
            write!(f, " (did you mean {s:?}?)")?;
        }
        Ok(())
    }
}

/// Why a value does not fit its type, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The field path; `.` for the object itself.
    pub path: String,
    pub message: String,
    placed: bool,
}

impl Error {
    /// Places an error raised by a visitor at the value it was reading, unless a deeper value
    /// already placed it.
    fn at(mut self, path: &Path) -> Error {
        if !self.placed {
            self.path = path.to_string();
            self.placed = true;
        }
        self
    }
}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error {
            path: String::new(),
            message: msg.to_string(),
            placed: false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for Error {}

/// A value decoded, with the fields of the input its type does not have.
#[derive(Debug)]
pub struct Decoded<T> {
    pub value: T,
    pub unknown: Vec<UnknownField>,
}

/// Decodes `value` as `T`.
pub fn decode<T: de::DeserializeOwned>(value: &Value) -> Result<Decoded<T>, Error> {
    let unknown = RefCell::new(Vec::new());
    let value = T::deserialize(Decoder::new(value, &unknown))?;
    Ok(Decoded {
        value,
        unknown: unknown.into_inner(),
    })
}

/// Where a value is in the object, kept on the stack while decoding descends.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => f.write_str("."),
            Path::Key(Path::Root, key) => f.write_str(key),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(Path::Root, i) => write!(f, "[{i}]"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// The decoder over one value.
pub struct Decoder<'a, 'p> {
    value: &'a Value,
    path: Path<'p>,
    unknown: &'a RefCell<Vec<UnknownField>>,
}

impl<'a> Decoder<'a, 'static> {
    /// Decodes `value`, adding the fields its type does not have to `unknown`.
    pub fn new(value: &'a Value, unknown: &'a RefCell<Vec<UnknownField>>) -> Self {
        Decoder {
            value,
            path: Path::Root,
            unknown,
        }
    }
}

/// Time and MicroTime beyond the range the time library holds (it ends on 9999-12-30) are read
/// as its last instant: the API server stores any year up to 9999.
fn clamped_time(s: &str) -> Option<String> {
    if s.parse::<k8s_openapi::jiff::Timestamp>().is_ok() || !s.starts_with("9999-12-") {
        return None;
    }
    Some(k8s_openapi::jiff::Timestamp::MAX.to_string())
}

/// An integral float as an integer, as kubectl converts YAML to JSON.
fn integral(n: &Number) -> Option<Number> {
    let f = n.as_f64().filter(|_| n.is_f64())?;
    if f.fract() != 0.0 {
        return None;
    }
    if f >= 0.0 && f < u64::MAX as f64 {
        Some(Number::from(f as u64))
    } else if f < 0.0 && f >= i64::MIN as f64 {
        Some(Number::from(f as i64))
    } else {
        None
    }
}

fn visit_number<'de, V: Visitor<'de>>(n: &Number, visitor: V) -> Result<V::Value, Error> {
    if let Some(u) = n.as_u64() {
        visitor.visit_u64(u)
    } else if let Some(i) = n.as_i64() {
        visitor.visit_i64(i)
    } else {
        visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
    }
}

impl<'a, 'p> Decoder<'a, 'p> {
    fn child<'q>(&'q self, value: &'a Value, path: Path<'q>) -> Decoder<'a, 'q> {
        Decoder {
            value,
            path,
            unknown: self.unknown,
        }
    }

    fn place<T>(&self, r: Result<T, Error>) -> Result<T, Error> {
        r.map_err(|e| e.at(&self.path))
    }

    fn any<'de, V: Visitor<'de>>(&self, visitor: V) -> Result<V::Value, Error> {
        let r = match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => visit_number(n, visitor),
            Value::String(s) => visitor.visit_str(s),
            Value::Array(items) => visitor.visit_seq(Seq {
                parent: self,
                items: items.iter().enumerate(),
            }),
            Value::Object(map) => visitor.visit_map(Fields {
                parent: self,
                entries: map.iter(),
                pending: None,
                known: None,
            }),
        };
        self.place(r)
    }

    /// A value read as a number: null is 0, an integral float an integer.
    fn integer<'de, V: Visitor<'de>>(&self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => self.place(visitor.visit_u64(0)),
            Value::Number(n) => match integral(n) {
                Some(i) => self.place(visit_number(&i, visitor)),
                None => self.any(visitor),
            },
            _ => self.any(visitor),
        }
    }

    fn struct_fields<'de, V: Visitor<'de>>(
        &self,
        known: Option<&'static [&'static str]>,
        visitor: V,
    ) -> Result<V::Value, Error> {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        let map = match self.value {
            Value::Null => &*EMPTY,
            Value::Object(map) => map,
            _ => return self.any(visitor),
        };
        self.place(visitor.visit_map(Fields {
            parent: self,
            entries: map.iter(),
            pending: None,
            known,
        }))
    }
}

macro_rules! integers {
    ($($method:ident),*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.integer(visitor)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Decoder<'_, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.any(visitor)
    }

    integers!(
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128
    );

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => self.place(visitor.visit_f64(0.0)),
            _ => self.any(visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => self.place(visitor.visit_bool(false)),
            _ => self.any(visitor),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => self.place(visitor.visit_str("")),
            _ => self.any(visitor),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.any(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => self.place(visitor.visit_none()),
            _ => {
                let path = self.path;
                visitor.visit_some(self).map_err(|e| e.at(&path))
            }
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.any(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.any(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let path = self.path;
        // The zero Quantity; and a time past the last one the time library holds.
        let replaced = match (name, self.value) {
            ("Quantity", Value::Null) => Some("0".to_string()),
            ("Time" | "MicroTime", Value::String(s)) => clamped_time(s),
            _ => None,
        };
        match replaced {
            Some(text) => {
                self.place(visitor.visit_newtype_struct(text.as_str().into_deserializer()))
            }
            None => visitor.visit_newtype_struct(self).map_err(|e| e.at(&path)),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => self.place(visitor.visit_seq(Seq {
                parent: &self,
                items: [].iter().enumerate(),
            })),
            _ => self.any(visitor),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.struct_fields(None, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.struct_fields(Some(fields), visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::String(s) => self.place(visitor.visit_enum(s.as_str().into_deserializer())),
            _ => self.any(visitor),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

struct Seq<'d, 'a, 'p> {
    parent: &'d Decoder<'a, 'p>,
    items: std::iter::Enumerate<std::slice::Iter<'a, Value>>,
}

impl<'de> SeqAccess<'de> for Seq<'_, '_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some((i, value)) = self.items.next() else {
            return Ok(None);
        };
        let path = Path::Index(&self.parent.path, i);
        seed.deserialize(self.parent.child(value, path))
            .map(Some)
            .map_err(|e| e.at(&path))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// The entries of a mapping; for a struct (`known` set), fields set to null are left out, as Go
/// leaves them at their zero value, and fields the struct does not have are recorded.
struct Fields<'d, 'a, 'p> {
    parent: &'d Decoder<'a, 'p>,
    entries: serde_json::map::Iter<'a>,
    pending: Option<(&'a str, &'a Value)>,
    known: Option<&'static [&'static str]>,
}

impl<'de> MapAccess<'de> for Fields<'_, '_, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        for (key, value) in self.entries.by_ref() {
            let Some(known) = self.known else {
                self.pending = Some((key, value));
                return seed.deserialize(key.as_str().into_deserializer()).map(Some);
            };
            if value.is_null() {
                continue;
            }
            if !known.contains(&key.as_str()) {
                self.parent.unknown.borrow_mut().push(UnknownField {
                    path: Path::Key(&self.parent.path, key).to_string(),
                    suggestion: closest(key, known),
                });
                continue;
            }
            self.pending = Some((key, value));
            return seed.deserialize(key.as_str().into_deserializer()).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (key, value) = self
            .pending
            .take()
            .ok_or_else(|| de::Error::custom("a value asked for before its key"))?;
        let path = Path::Key(&self.parent.path, key);
        seed.deserialize(self.parent.child(value, path))
            .map_err(|e| e.at(&path))
    }
}

/// The known name a misspelt one most likely meant: same letters in another case, or at most a
/// third of its letters edited.
fn closest(name: &str, known: &[&'static str]) -> Option<&'static str> {
    if let Some(same) = known.iter().find(|k| k.eq_ignore_ascii_case(name)) {
        return Some(same);
    }
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(name, k), *k))
        .filter(|(d, k)| *d <= name.len().max(k.len()).div_ceil(3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1 as k8s;
    use serde_json::json;

    #[test]
    fn null_is_the_zero_value() {
        let v = json!({
            "metadata": {"name": "n", "labels": {"a": null}},
            "status": {
                "allocatable": {"cpu": null},
                "conditions": [null, {"type": "Ready", "status": null}],
            },
            "spec": null,
        });
        let node = decode::<k8s::Node>(&v).unwrap().value;
        assert_eq!(node.metadata.labels.unwrap()["a"], "");
        let status = node.status.unwrap();
        assert_eq!(status.allocatable.unwrap()["cpu"].0, "0");
        let conditions = status.conditions.unwrap();
        assert_eq!(conditions[0].type_, "");
        assert_eq!(conditions[1].status, "");
        assert!(node.spec.is_none());
    }

    #[test]
    fn integral_floats_are_integers() {
        let v = json!({"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80.0}]}], "priority": 1e1}});
        let pod = decode::<k8s::Pod>(&v).unwrap().value.spec.unwrap();
        assert_eq!(
            pod.containers[0].ports.as_ref().unwrap()[0].container_port,
            80
        );
        assert_eq!(pod.priority, Some(10));
        let v = json!({"spec": {"containers": [], "priority": 1.5}});
        let err = decode::<k8s::Pod>(&v).unwrap_err();
        assert_eq!(err.path, "spec.priority");
    }

    #[test]
    fn unknown_fields_with_the_closest_known_name() {
        let v = json!({"spec": {
            "nodeSelecter": {"a": "b"},
            "afinity": {},
            "containers": [{"name": "c", "resources": {"request": {"cpu": "64"}}}],
            "tolerations": [{"efect": "NoSchedule"}],
            "zzzzzz": 1,
        }});
        let unknown = decode::<k8s::Pod>(&v).unwrap().unknown;
        let said: Vec<String> = unknown.iter().map(ToString::to_string).collect();
        assert_eq!(
            said,
            [
                r#"unknown field "spec.afinity" (did you mean "affinity"?)"#,
                r#"unknown field "spec.containers[0].resources.request" (did you mean "requests"?)"#,
                r#"unknown field "spec.nodeSelecter" (did you mean "nodeSelector"?)"#,
                r#"unknown field "spec.tolerations[0].efect" (did you mean "effect"?)"#,
                r#"unknown field "spec.zzzzzz""#,
            ]
        );
    }

    #[test]
    fn errors_name_the_field() {
        let v = json!({"spec": {"containers": [{"name": "c", "resources": []}]}});
        let err = decode::<k8s::Pod>(&v).unwrap_err();
        assert_eq!(err.path, "spec.containers[0].resources");
        assert!(err.message.contains("invalid type: sequence"), "{err}");
        let err = decode::<k8s::Pod>(&json!({"metadata": {"labels": {"a": 8}}})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "metadata.labels.a: invalid type: integer `8`, expected a string"
        );
        let err = decode::<k8s::Pod>(&json!([1])).unwrap_err();
        assert_eq!(err.path, ".");
    }

    #[test]
    fn far_future_times_are_read_as_the_last_one_held() {
        let v = json!({"metadata": {"creationTimestamp": "9999-12-31T23:59:59.999999Z"}});
        let pod = decode::<k8s::Pod>(&v).unwrap().value;
        assert_eq!(
            pod.metadata.creation_timestamp.unwrap().0,
            k8s_openapi::jiff::Timestamp::MAX
        );
        let v = json!({"metadata": {"creationTimestamp": "not a time"}});
        assert_eq!(
            decode::<k8s::Pod>(&v).unwrap_err().path,
            "metadata.creationTimestamp"
        );
    }
}
