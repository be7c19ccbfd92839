//! Validation errors as apimachinery's `field.Error` prints them (`path: Invalid value: 5: detail`),
//! their aggregation (`[a, b]`), and the name checks whose messages they carry.

use std::fmt;

/// A `field.Path`: `Path::root()` is the nil path plugins validate their arguments with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(String);

impl Path {
    pub fn root() -> Path {
        Path(String::new())
    }

    pub fn new(name: &str) -> Path {
        Path(name.to_string())
    }

    pub fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path::new(name)
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }

    pub fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }

    pub fn key(&self, k: &str) -> Path {
        Path(format!("{}[{k}]", self.0))
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A value as `field.Error` renders it: numbers and booleans plain, strings quoted, anything
/// else as JSON.
pub enum Value {
    Int(i64),
    Str(String),
    Json(String),
}

impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value::Int(v.into())
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Str(v.to_string())
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::Str(v.clone())
    }
}

impl Value {
    pub fn json<T: serde::Serialize + ?Sized>(v: &T) -> Value {
        Value::Json(serde_json::to_string(v).unwrap_or_default())
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Str(s) => f.write_str(&go_quote(s)),
            Value::Json(j) => f.write_str(j),
        }
    }
}

/// Go's `%q` of a string.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A `field.Error`, already rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError(pub String);

impl FieldError {
    pub fn invalid(path: &Path, value: impl Into<Value>, detail: &str) -> FieldError {
        FieldError(with_detail(
            format!("{path}: Invalid value: {}", value.into()),
            detail,
        ))
    }

    pub fn required(path: &Path, detail: &str) -> FieldError {
        FieldError(with_detail(format!("{path}: Required value"), detail))
    }

    pub fn duplicate(path: &Path, value: impl Into<Value>) -> FieldError {
        FieldError(format!("{path}: Duplicate value: {}", value.into()))
    }

    pub fn not_supported(path: &Path, value: impl Into<Value>, valid: &[&str]) -> FieldError {
        let valid: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
        FieldError(with_detail(
            format!("{path}: Unsupported value: {}", value.into()),
            &format!("supported values: {}", valid.join(", ")),
        ))
    }

    pub fn forbidden(path: &Path, detail: &str) -> FieldError {
        FieldError(with_detail(format!("{path}: Forbidden"), detail))
    }
}

fn with_detail(s: String, detail: &str) -> String {
    if detail.is_empty() {
        s
    } else {
        format!("{s}: {detail}")
    }
}

/// `utilerrors.NewAggregate(...).Error()` of flattened errors: one message as is, several
/// deduplicated in brackets.
pub fn aggregate(errors: &[FieldError]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.0.as_str()) {
            seen.push(&e.0);
        }
    }
    if seen.len() == 1 {
        seen[0].to_string()
    } else {
        format!("[{}]", seen.join(", "))
    }
}

const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `validation.RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        examples.join(" or ")
    )
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
            && b.iter()
                .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    })
}

/// `validation.IsQualifiedName`.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 characters".to_string());
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_ERR,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            &format!("({QUALIFIED_NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `metav1validation.ValidateLabelName`.
pub fn validate_label_name(value: &str, path: &Path) -> Vec<FieldError> {
    qualified_name_errors(value)
        .iter()
        .map(|msg| FieldError::invalid(path, value, msg))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_field_error() {
        let p = Path::new("profiles")
            .index(0)
            .child("pluginConfig")
            .index(1)
            .child("args");
        assert_eq!(
            FieldError::invalid(
                &p.child("hardPodAffinityWeight"),
                200,
                "not in valid range [0, 100]"
            )
            .0,
            "profiles[0].pluginConfig[1].args.hardPodAffinityWeight: Invalid value: 200: not in valid range [0, 100]"
        );
        assert_eq!(
            FieldError::required(&Path::new("profiles").index(1).child("schedulerName"), "").0,
            "profiles[1].schedulerName: Required value"
        );
        assert_eq!(
            FieldError::not_supported(&Path::root().child("type"), "X", &["A", "B"]).0,
            "type: Unsupported value: \"X\": supported values: \"A\", \"B\""
        );
        assert_eq!(
            Path::new("values").index(0).key("k").to_string(),
            "values[0][k]"
        );
    }

    #[test]
    fn aggregates_dedupe() {
        let a = FieldError("a".into());
        let b = FieldError("b".into());
        assert_eq!(aggregate(std::slice::from_ref(&a)), "a");
        assert_eq!(aggregate(&[a.clone(), a.clone()]), "a");
        assert_eq!(aggregate(&[a, b]), "[a, b]");
    }

    #[test]
    fn qualified_names() {
        assert!(qualified_name_errors("example.com/gpu").is_empty());
        assert_eq!(
            qualified_name_errors("bad name"),
            [
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        assert_eq!(
            qualified_name_errors("/x"),
            ["prefix part must be non-empty"]
        );
        assert_eq!(qualified_name_errors("a/b/c").len(), 1);
    }
}
