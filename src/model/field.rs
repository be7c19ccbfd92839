//! Validation errors as apimachinery's `field.Error` prints them (`path: Invalid value: 5: detail`),
//! lists of them as the API server and kube-scheduler report them, and the name checks whose
//! messages they carry. The one field error of every API object and configuration check.

use super::labels::matches_dns1123_subdomain;
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

/// A `field.Error`: the field's path and what is wrong with it (`Invalid value: 5: detail`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for FieldError {}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }

    pub fn invalid(path: &Path, value: impl Into<Value>, detail: &str) -> FieldError {
        FieldError::new(
            path.to_string(),
            with_detail(format!("Invalid value: {}", value.into()), detail),
        )
    }

    pub fn required(path: &Path, detail: &str) -> FieldError {
        FieldError::new(
            path.to_string(),
            with_detail("Required value".into(), detail),
        )
    }

    pub fn duplicate(path: &Path, value: impl Into<Value>) -> FieldError {
        FieldError::new(
            path.to_string(),
            format!("Duplicate value: {}", value.into()),
        )
    }

    pub fn not_supported(path: &Path, value: impl Into<Value>, valid: &[&str]) -> FieldError {
        let valid: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
        FieldError::new(
            path.to_string(),
            with_detail(
                format!("Unsupported value: {}", value.into()),
                &format!("supported values: {}", valid.join(", ")),
            ),
        )
    }

    pub fn forbidden(path: &Path, detail: &str) -> FieldError {
        FieldError::new(path.to_string(), with_detail("Forbidden".into(), detail))
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
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let e = e.to_string();
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    if seen.len() == 1 {
        seen.remove(0)
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
                if !matches_dns1123_subdomain(prefix) {
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

/// Values as the API server lists them in its messages: `"a", "b"`.
pub fn quoted(values: &[&str]) -> String {
    let values: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    values.join(", ")
}

/// The API server's `Unsupported value` message, the supported values in its order.
pub fn not_supported(value: &str, supported: &[&str]) -> String {
    format!(
        "Unsupported value: {value:?}: supported values: {}",
        quoted(supported)
    )
}

/// Field errors, as `field.ErrorList` would print them.
#[derive(Debug, Default)]
pub struct Errors(pub Vec<FieldError>);

impl Errors {
    pub fn push(&mut self, field: &str, msg: impl fmt::Display) {
        self.0.push(FieldError::new(field, msg.to_string()));
    }

    /// `field.NotSupported` unless `value` is one of `supported`.
    /// `field` is written out only for an error (`format_args!` costs nothing before).
    pub fn one_of(&mut self, field: impl fmt::Display, value: &str, supported: &[&str]) {
        if !supported.contains(&value) {
            self.push(&field.to_string(), not_supported(value, supported));
        }
    }

    pub fn result(self) -> Result<(), Errors> {
        if self.0.is_empty() { Ok(()) } else { Err(self) }
    }

    /// The errors of an object embedded at `prefix` (a workload's pod template).
    pub fn within(self, prefix: &str) -> Errors {
        Errors(
            self.0
                .into_iter()
                .map(|e| FieldError {
                    field: format!("{prefix}.{}", e.field),
                    ..e
                })
                .collect(),
        )
    }
}

impl fmt::Display for Errors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Errors {}

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
            .to_string(),
            "profiles[0].pluginConfig[1].args.hardPodAffinityWeight: Invalid value: 200: not in valid range [0, 100]"
        );
        assert_eq!(
            FieldError::required(&Path::new("profiles").index(1).child("schedulerName"), "")
                .to_string(),
            "profiles[1].schedulerName: Required value"
        );
        assert_eq!(
            FieldError::not_supported(&Path::root().child("type"), "X", &["A", "B"]).to_string(),
            "type: Unsupported value: \"X\": supported values: \"A\", \"B\""
        );
        assert_eq!(
            Path::new("values").index(0).key("k").to_string(),
            "values[0][k]"
        );
    }

    /// One subdomain rule: the form, and (for a whole name) at most 253 characters.
    #[test]
    fn dns1123_subdomains() {
        use super::super::labels::is_dns1123_subdomain;
        let long = format!("{}.example.com", "a".repeat(245));
        assert!(matches_dns1123_subdomain(&long));
        assert!(!is_dns1123_subdomain(&long));
        assert!(is_dns1123_subdomain("example.com"));
        for bad in ["", "a..b", "-a", "A.com", "a_b"] {
            assert!(!matches_dns1123_subdomain(bad), "{bad}");
        }
        // A prefix too long is said to be, once, and nothing else.
        let key = format!("{long}/name");
        assert_eq!(
            qualified_name_errors(&key),
            ["prefix part must be no more than 253 characters"]
        );
    }

    #[test]
    fn aggregates_dedupe() {
        let a = FieldError::new("a", "Required value");
        let b = FieldError::new("b", "Required value");
        assert_eq!(aggregate(std::slice::from_ref(&a)), "a: Required value");
        assert_eq!(aggregate(&[a.clone(), a.clone()]), "a: Required value");
        assert_eq!(aggregate(&[a, b]), "[a: Required value, b: Required value]");
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
