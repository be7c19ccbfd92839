//! kubectl's `-l/--selector` and `--field-selector` syntax, parsed as `labels.Parse` and
//! `fields.ParseSelector` parse them, so a selector selects here what it selects in a cluster.
//! Label selectors become the model's `Selector` (the same requirements and validation as the
//! selectors of API objects); field selectors are terms on the fields the API server lets pods
//! be selected by.

use super::intern::Interner;
use super::labels::{Operator, Requirement, Selector};
use super::pod::{Phase, Pod};
use std::borrow::Cow;

/// A token of the label selector syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    End,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier(String),
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
    /// A run of symbols that is no operator.
    Error(String),
}

impl Token {
    /// The text upstream's messages quote for a token.
    fn literal(&self) -> &str {
        match self {
            Token::End => "",
            Token::ClosedPar => ")",
            Token::Comma => ",",
            Token::DoesNotExist => "!",
            Token::DoubleEquals => "==",
            Token::Equals => "=",
            Token::GreaterThan => ">",
            Token::Identifier(s) | Token::Error(s) => s,
            Token::In => "in",
            Token::LessThan => "<",
            Token::NotEquals => "!=",
            Token::NotIn => "notin",
            Token::OpenPar => "(",
        }
    }

    /// In a list of values, `in` and `notin` are values like any other.
    fn into_value(self) -> Token {
        match self {
            Token::In | Token::NotIn => Token::Identifier(self.literal().to_string()),
            t => t,
        }
    }
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn symbol(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

/// Splits a selector into tokens as upstream's lexer does: the longest run of symbols that is
/// an operator, identifiers up to a symbol or a space, `in`/`notin` as keywords.
fn tokens(s: &str) -> Vec<Token> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && is_space(b[i]) {
            i += 1;
        }
        if i == b.len() {
            out.push(Token::End);
            return out;
        }
        let start = i;
        if is_special(b[i]) {
            let mut best = None;
            while i < b.len() && is_special(b[i]) {
                match symbol(&s[start..=i]) {
                    Some(t) => best = Some((t, i + 1)),
                    None if best.is_some() => break,
                    None => {}
                }
                i += 1;
            }
            match best {
                Some((t, end)) => {
                    out.push(t);
                    i = end;
                }
                None => {
                    out.push(Token::Error(format!(
                        "error expected: keyword found '{}'",
                        &s[start..i]
                    )));
                    i = b.len();
                }
            }
        } else {
            while i < b.len() && !is_special(b[i]) && !is_space(b[i]) {
                i += 1;
            }
            out.push(match &s[start..i] {
                "in" => Token::In,
                "notin" => Token::NotIn,
                word => Token::Identifier(word.to_string()),
            });
        }
    }
}

struct Parser<'s> {
    tokens: Vec<Token>,
    at: usize,
    /// Where the selector's keys and values are stored.
    strings: &'s Interner,
}

impl Parser<'_> {
    fn peek(&self) -> Token {
        self.tokens[self.at].clone().into_value()
    }

    /// The next token; `in`/`notin` read as values unless an operator is expected.
    fn next(&mut self, operator: bool) -> Token {
        let t = self.tokens[self.at].clone();
        self.at = (self.at + 1).min(self.tokens.len() - 1);
        if operator { t } else { t.into_value() }
    }

    fn selector(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            match self.peek() {
                Token::Identifier(_) | Token::DoesNotExist => {
                    requirements.push(
                        self.requirement()
                            .map_err(|e| format!("unable to parse requirement: {e}"))?,
                    );
                    match self.next(false) {
                        Token::End => return Ok(requirements),
                        Token::Comma => {
                            let after = self.peek();
                            if !matches!(after, Token::Identifier(_) | Token::DoesNotExist) {
                                return Err(format!(
                                    "found '{}', expected: identifier after ','",
                                    after.literal()
                                ));
                            }
                        }
                        t => {
                            return Err(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                t.literal()
                            ));
                        }
                    }
                }
                Token::End => return Ok(requirements),
                t => {
                    return Err(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        t.literal()
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut absent = false;
        let mut t = self.next(false);
        if t == Token::DoesNotExist {
            absent = true;
            t = self.next(false);
        }
        let Token::Identifier(key) = t else {
            return Err(format!("found '{}', expected: identifier", t.literal()));
        };
        super::labels::validate_label_key(&key)?;
        // `!key` takes no operator: what follows is the next requirement's business (and an
        // error unless it is a comma), as upstream reads it.
        if absent {
            return Requirement::new(&key, Operator::DoesNotExist, &[], self.strings);
        }
        if matches!(self.peek(), Token::End | Token::Comma) {
            return Requirement::new(&key, Operator::Exists, &[], self.strings);
        }
        let (op, values) = match self.next(true) {
            Token::In => (Operator::In, self.values()?),
            Token::NotIn => (Operator::NotIn, self.values()?),
            Token::Equals | Token::DoubleEquals => (Operator::In, self.exact_value()?),
            Token::NotEquals => (Operator::NotIn, self.exact_value()?),
            Token::GreaterThan => (Operator::Gt, self.exact_value()?),
            Token::LessThan => (Operator::Lt, self.exact_value()?),
            t => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    t.literal()
                ));
            }
        };
        Requirement::new(&key, op, &values, self.strings)
    }

    /// `(a,b,c)`: a set of values, empty ones included (`(,a)`, `()`).
    fn values(&mut self) -> Result<Vec<String>, String> {
        let t = self.next(false);
        if t != Token::OpenPar {
            return Err(format!("found '{}' expected: '('", t.literal()));
        }
        let mut set: Vec<String> = Vec::new();
        let insert = |v: String, set: &mut Vec<String>| {
            if !set.contains(&v) {
                set.push(v);
            }
        };
        match self.peek() {
            Token::ClosedPar => {
                self.next(false);
                return Ok(vec![String::new()]);
            }
            Token::Identifier(_) | Token::Comma => {}
            t => {
                return Err(format!(
                    "found '{}', expected: ',', ')' or identifier",
                    t.literal()
                ));
            }
        }
        loop {
            match self.next(false) {
                Token::Identifier(v) => {
                    insert(v, &mut set);
                    match self.peek() {
                        Token::Comma => continue,
                        Token::ClosedPar => break,
                        t => {
                            return Err(format!("found '{}', expected: ',' or ')'", t.literal()));
                        }
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        insert(String::new(), &mut set);
                    }
                    match self.peek() {
                        Token::ClosedPar => {
                            insert(String::new(), &mut set);
                            break;
                        }
                        Token::Comma => insert(String::new(), &mut set),
                        _ => {}
                    }
                }
                t => {
                    return Err(format!(
                        "found '{}', expected: ',', or identifier",
                        t.literal()
                    ));
                }
            }
        }
        let closing = self.next(false);
        if closing != Token::ClosedPar {
            return Err(format!("found '{}', expected: ')'", closing.literal()));
        }
        set.sort();
        Ok(set)
    }

    /// The value of `=`, `==`, `!=`, `>`, `<`: empty when the requirement ends there.
    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        if matches!(self.peek(), Token::End | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        match self.next(false) {
            Token::Identifier(v) => Ok(vec![v]),
            t => Err(format!("found '{}', expected: identifier", t.literal())),
        }
    }
}

/// Parses a label selector as `kubectl -l` takes it: `app=web`, `tier!=cache`,
/// `env in (prod,staging)`, `env notin (dev)`, `gpu`, `!spot`, joined by commas (all must hold).
/// The empty selector selects everything.
pub fn parse_label_selector(s: &str, strings: &Interner) -> Result<Selector, String> {
    let mut parser = Parser {
        tokens: tokens(s),
        at: 0,
        strings,
    };
    let mut requirements = parser.selector()?;
    requirements.sort_by(|a, b| a.key.as_str().cmp(b.key.as_str()));
    Ok(Selector::Requirements(requirements))
}

/// One `field=value` or `field!=value` term.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    value: String,
    equals: bool,
}

/// A field selector: every term must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

/// The fields the API server selects pods by (`pod.ToSelectableFields` and the field label
/// conversion, `spec.host` being the old name of `spec.nodeName`).
pub const POD_FIELDS: [&str; 11] = [
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
];

/// The pod fields the cluster model keeps, so a snapshot can be selected by them.
pub const MODELLED_POD_FIELDS: [&str; 7] = [
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.schedulerName",
    "spec.hostNetwork",
    "status.phase",
    "status.nominatedNodeName",
];

/// `fields.UnescapeValue`: `\,`, `\=` and `\\` stand for themselves; a bare `,` or `=` is an
/// error.
fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{e}"
                    ));
                }
                None => return Err("invalid field selector: invalid escape sequence: \\".into()),
            },
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// The terms of a selector split at commas a backslash does not escape.
fn split_terms(s: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                terms.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&s[start..]);
    terms
}

impl FieldSelector {
    /// Parses `--field-selector` as `fields.ParseSelector` does, and checks each field is one
    /// pods can be selected by, as the API server does.
    pub fn parse_for_pods(s: &str) -> Result<FieldSelector, String> {
        let mut terms = Vec::new();
        for term in split_terms(s).into_iter().filter(|t| !t.is_empty()) {
            let (at, op) = ["!=", "==", "="]
                .iter()
                .filter_map(|op| term.find(op).map(|i| (i, *op)))
                .min_by_key(|(i, op)| (*i, std::cmp::Reverse(op.len())))
                .ok_or_else(|| format!("invalid selector: '{s}'; can't understand '{term}'"))?;
            let field = match &term[..at] {
                "spec.host" => "spec.nodeName",
                f => f,
            };
            if !POD_FIELDS.contains(&field) {
                return Err(format!(
                    "field label not supported: {field} (pods are selected by {})",
                    POD_FIELDS.join(", ")
                ));
            }
            terms.push(FieldTerm {
                field: field.to_string(),
                value: unescape(&term[at + op.len()..])?,
                equals: op != "!=",
            });
        }
        Ok(FieldSelector { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The first field the model does not keep, which only the API server can select by.
    pub fn unmodelled_field(&self) -> Option<&str> {
        self.terms
            .iter()
            .map(|t| t.field.as_str())
            .find(|f| !MODELLED_POD_FIELDS.contains(f))
    }

    /// Whether a pod's fields satisfy every term; a field the model does not keep satisfies
    /// nothing (see `unmodelled_field`).
    pub fn matches(&self, pod: &Pod) -> bool {
        self.terms.iter().all(|t| match pod_field(pod, &t.field) {
            Some(v) => (v == t.value) == t.equals,
            None => false,
        })
    }
}

/// A pod's value of a selectable field, as the API server renders it (an unset field is empty).
fn pod_field<'a>(pod: &'a Pod, field: &str) -> Option<Cow<'a, str>> {
    let opt = |s: Option<super::intern::Str>| Cow::Borrowed(s.map_or("", |s| s.as_str()));
    Some(match field {
        "metadata.name" => Cow::Borrowed(pod.name.as_str()),
        "metadata.namespace" => Cow::Borrowed(pod.namespace.as_str()),
        "spec.nodeName" => opt(pod.node_name),
        "spec.schedulerName" => Cow::Borrowed(pod.scheduler_name.as_str()),
        "spec.hostNetwork" => Cow::Borrowed(if pod.host_network { "true" } else { "false" }),
        "status.phase" => Cow::Borrowed(match pod.phase {
            Phase::Pending => "Pending",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Unknown => "Unknown",
        }),
        "status.nominatedNodeName" => opt(pod.nominated_node_name),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::labels::Labels;
    use serde_json::json;

    fn selects(selector: &str, pairs: &[(&str, &str)]) -> bool {
        let labels = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parse_label_selector(selector, &Interner::new())
            .unwrap_or_else(|e| panic!("{selector}: {e}"))
            .matches(&Labels::from_map(&labels, &Interner::new()))
    }

    #[test]
    fn equality_and_set_based_requirements_select_as_upstream() {
        let web = [("app", "web"), ("env", "prod")];
        assert!(selects("app=web", &web));
        assert!(selects("app==web", &web));
        assert!(selects("app = web , env=prod", &web));
        assert!(!selects("app=db", &web));
        assert!(selects("app!=db", &web));
        // `!=` and `notin` select objects without the key too.
        assert!(selects("tier!=cache", &web));
        assert!(selects("tier notin (cache)", &web));
        assert!(selects("env in (prod,staging)", &web));
        assert!(!selects("env notin (prod, staging)", &web));
        assert!(selects("app", &web));
        assert!(!selects("!app", &web));
        assert!(selects("!spot", &web));
        assert!(selects("", &web));
        // `in` and `notin` are values inside a set.
        assert!(selects("app in (in,web)", &web));
        // `=` with nothing after it means the empty value.
        assert!(selects("gpu=", &[("gpu", "")]));
        assert!(!selects("gpu=", &web));
        assert!(selects("x in (,a)", &[("x", "")]));
        assert!(selects("size>3", &[("size", "4")]));
        assert!(!selects("size<3", &[("size", "4")]));
    }

    #[test]
    fn malformed_selectors_say_what_upstream_says() {
        let err = |s: &str| parse_label_selector(s, &Interner::new()).unwrap_err();
        assert_eq!(
            err("app in web"),
            "unable to parse requirement: found 'web' expected: '('"
        );
        assert_eq!(
            err("app in (web"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(err("app=web,"), "found '', expected: identifier after ','");
        assert_eq!(
            err("app=web env=prod"),
            "found 'env', expected: ',' or 'end of string'"
        );
        assert_eq!(
            err("=web"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert!(err("-app=web").starts_with("unable to parse requirement: invalid label key"));
        assert!(err("app=-web").contains("invalid label value"));
        assert!(err("app=!web").contains("found '!', expected: identifier"));
        assert!(err("size>x").contains("must be an integer"));
        assert_eq!(
            err("a=<>b"),
            "unable to parse requirement: found '<', expected: identifier"
        );
    }

    fn pod(name: &str, node: Option<&str>) -> Pod {
        let value = crate::testing::pod(&format!("shop/{name}"), node, "1", 0, json!({}));
        crate::model::cluster::convert_pod(
            serde_json::from_value(value).unwrap(),
            &crate::model::parse::Parse::new(&Interner::new()),
        )
        .unwrap()
        .into_pod()
    }

    #[test]
    fn field_selectors_select_pods_by_the_fields_the_api_server_offers() {
        let pending = pod("web-1", None);
        let running = pod("web-2", Some("n1"));
        let sel = |s: &str| FieldSelector::parse_for_pods(s).unwrap();
        assert!(sel("spec.nodeName=").matches(&pending));
        assert!(!sel("spec.nodeName=").matches(&running));
        assert!(sel("spec.host==n1").matches(&running));
        assert!(sel("status.phase!=Running,metadata.name=web-1").matches(&pending));
        assert!(!sel("status.phase!=Running,metadata.name=web-2").matches(&running));
        assert!(sel("spec.schedulerName=default-scheduler").matches(&pending));
        assert!(sel("").is_empty());
        assert_eq!(
            sel("spec.restartPolicy=Never").unmodelled_field(),
            Some("spec.restartPolicy")
        );
        assert!(
            FieldSelector::parse_for_pods("spec.nodename=n1")
                .unwrap_err()
                .starts_with("field label not supported: spec.nodename")
        );
        assert_eq!(
            FieldSelector::parse_for_pods("status.phase").unwrap_err(),
            "invalid selector: 'status.phase'; can't understand 'status.phase'"
        );
        assert!(
            FieldSelector::parse_for_pods("metadata.name=a=b")
                .unwrap_err()
                .contains("unescaped character")
        );
        assert!(sel(r"metadata.name=a\=b").matches(&pod("a=b", None)));
    }
}
