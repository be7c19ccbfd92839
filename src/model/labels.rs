//! Label sets and selectors with the semantics of `k8s.io/apimachinery/pkg/labels`: requirements
//! with In/NotIn/Exists/DoesNotExist/Gt/Lt, `metav1.LabelSelectorAsSelector` (nil selects nothing,
//! empty selects everything) and the validation the API server applies to them.

use super::intern::{Interner, Str};
use std::collections::BTreeMap;

/// Labels of an object, sorted by key. Lookups compare interned pointers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels(Vec<(Str, Str)>);

impl Labels {
    pub fn from_map(map: &BTreeMap<String, String>, strings: &Interner) -> Labels {
        // BTreeMap iterates in key order already.
        Labels(
            map.iter()
                .map(|(k, v)| (strings.intern(k), strings.intern(v)))
                .collect(),
        )
    }

    pub fn from_pairs(mut pairs: Vec<(Str, Str)>) -> Labels {
        pairs.sort_by_key(|p| p.0);
        pairs.dedup_by(|a, b| a.0 == b.0);
        Labels(pairs)
    }

    pub fn get(&self, key: Str) -> Option<Str> {
        self.0.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
    }

    /// Looks a key up by text; for keys that come from outside the interned world.
    pub fn get_str(&self, key: &str) -> Option<Str> {
        self.0
            .iter()
            .find(|(k, _)| k.as_str() == key)
            .map(|&(_, v)| v)
    }

    pub fn contains_key(&self, key: Str) -> bool {
        self.get(key).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = (Str, Str)> + '_ {
        self.0.iter().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn insert(&mut self, key: Str, value: Str) {
        match self.0.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (key, value)),
        }
    }

    /// Removes a key; its value, or `None` when there was no such key.
    pub fn remove(&mut self, key: Str) -> Option<Str> {
        let i = self.0.binary_search_by(|(k, _)| k.cmp(&key)).ok()?;
        Some(self.0.remove(i).1)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

impl Operator {
    /// The operators of a label selector's `matchExpressions`.
    pub fn from_label_selector(op: &str) -> Option<Operator> {
        match op {
            "In" => Some(Operator::In),
            "NotIn" => Some(Operator::NotIn),
            "Exists" => Some(Operator::Exists),
            "DoesNotExist" => Some(Operator::DoesNotExist),
            _ => None,
        }
    }

    /// The operators of a node selector requirement: the label selector's, plus Gt and Lt.
    pub fn from_node_selector(op: &str) -> Option<Operator> {
        match op {
            "Gt" => Some(Operator::Gt),
            "Lt" => Some(Operator::Lt),
            other => Operator::from_label_selector(other),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Gt => "Gt",
            Operator::Lt => "Lt",
        }
    }
}

/// One `key op values` requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub key: Str,
    pub op: Operator,
    pub values: Vec<Str>,
    /// The integer of a Gt/Lt requirement.
    bound: i64,
}

impl Requirement {
    /// Builds a requirement as `labels.NewRequirement` does, with its validation.
    pub fn new(
        key: &str,
        op: Operator,
        values: &[String],
        strings: &Interner,
    ) -> Result<Requirement, String> {
        let bound = check_requirement(key, op, values)?;
        Ok(Requirement {
            key: strings.intern(key),
            op,
            values: values.iter().map(|v| strings.intern(v)).collect(),
            bound,
        })
    }

    /// An equality requirement from a `nodeSelector` or `matchLabels` entry.
    pub fn equals(key: Str, value: Str) -> Requirement {
        Requirement {
            key,
            op: Operator::In,
            values: vec![value],
            bound: 0,
        }
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        let value = labels.get(self.key);
        match self.op {
            Operator::In => value.is_some_and(|v| self.values.contains(&v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.contains(&v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::Gt | Operator::Lt => match value.and_then(|v| v.parse::<i64>().ok()) {
                Some(n) if self.op == Operator::Gt => n > self.bound,
                Some(n) => n < self.bound,
                None => false,
            },
        }
    }
}

/// kubectl's selector notation: `app=web`, `tier in (a,b)`, `env notin (x)`, `key`, `!key`,
/// `n>3`.
impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let values = || {
            let mut v: Vec<&str> = self.values.iter().map(|v| v.as_str()).collect();
            v.sort_unstable();
            v.join(",")
        };
        match self.op {
            Operator::In if self.values.len() == 1 => write!(f, "{}={}", self.key, self.values[0]),
            Operator::In => write!(f, "{} in ({})", self.key, values()),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, values()),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::Gt => write!(f, "{}>{}", self.key, values()),
            Operator::Lt => write!(f, "{}<{}", self.key, values()),
        }
    }
}

/// A conjunction of requirements; `Nothing` matches no label set at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    Nothing,
    Requirements(Vec<Requirement>),
}

/// Requirements joined by `,`; `<none>` for the selector that selects nothing, as kubectl
/// shows it, and the empty string for the one that selects everything.
impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selector::Nothing => write!(f, "<none>"),
            Selector::Requirements(reqs) => {
                for (i, r) in reqs.iter().enumerate() {
                    if i > 0 {
                        write!(f, ",")?;
                    }
                    write!(f, "{r}")?;
                }
                Ok(())
            }
        }
    }
}

impl Selector {
    pub fn everything() -> Selector {
        Selector::Requirements(Vec::new())
    }

    pub fn from_set(labels: &Labels) -> Selector {
        Selector::Requirements(
            labels
                .iter()
                .map(|(k, v)| Requirement::equals(k, v))
                .collect(),
        )
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::Requirements(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }

    /// True for the selector that selects everything (`labels.Selector.Empty()`).
    pub fn is_empty(&self) -> bool {
        matches!(self, Selector::Requirements(r) if r.is_empty())
    }

    pub fn requirements(&self) -> &[Requirement] {
        match self {
            Selector::Nothing => &[],
            Selector::Requirements(r) => r,
        }
    }

    /// `metav1.LabelSelectorAsSelector`: nil selects nothing, `{}` everything.
    pub fn from_label_selector(
        selector: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
        strings: &Interner,
    ) -> Result<Selector, String> {
        let Some(sel) = selector else {
            return Ok(Selector::Nothing);
        };
        // Sized exactly: selectors of services, budgets and pods' terms are kept for the run.
        let mut reqs = Vec::with_capacity(
            sel.match_labels.as_ref().map_or(0, BTreeMap::len)
                + sel.match_expressions.as_ref().map_or(0, Vec::len),
        );
        if let Some(ml) = &sel.match_labels {
            for (k, v) in ml {
                reqs.push(Requirement::new(
                    k,
                    Operator::In,
                    std::slice::from_ref(v),
                    strings,
                )?);
            }
        }
        if let Some(exprs) = &sel.match_expressions {
            for e in exprs {
                let Some(op) = Operator::from_label_selector(&e.operator) else {
                    let other = &e.operator;
                    return Err(format!("{other:?} is not a valid label selector operator"));
                };
                reqs.push(Requirement::new(
                    &e.key,
                    op,
                    e.values.as_deref().unwrap_or(&[]),
                    strings,
                )?);
            }
        }
        reqs.sort_by_key(|r| r.key);
        Ok(Selector::Requirements(reqs))
    }

    /// Adds requirements (all must hold), as `labels.Selector.Add` does.
    pub fn add(&mut self, extra: impl IntoIterator<Item = Requirement>) {
        if let Selector::Requirements(reqs) = self {
            reqs.extend(extra);
            reqs.sort_by_key(|r| r.key);
        }
    }
}

/// `labels.NewRequirement`'s validation; the integer of a Gt/Lt requirement.
pub fn check_requirement(key: &str, op: Operator, values: &[String]) -> Result<i64, String> {
    validate_label_key(key)?;
    let mut bound = 0;
    match op {
        Operator::In | Operator::NotIn => {
            if values.is_empty() {
                return Err("for 'in', 'notin' operators, values set can't be empty".into());
            }
        }
        Operator::Exists | Operator::DoesNotExist => {
            if !values.is_empty() {
                return Err("values set must be empty for exists and does not exist".into());
            }
        }
        Operator::Gt | Operator::Lt => {
            if values.len() != 1 {
                return Err("for 'Gt', 'Lt' operators, exactly one value is required".into());
            }
            bound = values[0].parse::<i64>().map_err(|_| {
                "for 'Gt', 'Lt' operators, the value must be an integer".to_string()
            })?;
        }
    }
    if !matches!(op, Operator::Gt | Operator::Lt) {
        for v in values {
            validate_label_value(v)?;
        }
    }
    Ok(bound)
}

fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

/// `validation.IsValidLabelValue`.
pub fn validate_label_value(v: &str) -> Result<(), String> {
    let b = v.as_bytes();
    if b.len() > 63 {
        return Err(format!(
            "invalid label value: {v:?}: must be no more than 63 characters"
        ));
    }
    let ok = b.is_empty()
        || (is_alnum(b[0])
            && is_alnum(b[b.len() - 1])
            && b.iter()
                .all(|&c| is_alnum(c) || c == b'-' || c == b'_' || c == b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

/// `validation.IsDNS1123Subdomain`: at most 253 characters, of `dns1123SubdomainRegexp`.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && matches_dns1123_subdomain(s)
}

/// `dns1123SubdomainRegexp`: dot-separated lowercase alphanumeric labels, inner dashes allowed.
pub fn matches_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
                && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
                && b.iter()
                    .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        })
}

/// `validation.IsQualifiedName`: `[prefix/]name` as label keys are written.
pub fn validate_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && !is_dns1123_subdomain(p)
    {
        return Err(format!(
            "invalid label key {key:?}: prefix part must be a lowercase RFC 1123 subdomain"
        ));
    }
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && !name.contains('/')
        && is_alnum(b[0])
        && is_alnum(b[b.len() - 1])
        && b.iter()
            .all(|&c| is_alnum(c) || c == b'-' || c == b'_' || c == b'.');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid label key {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63 characters)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_pairs(
            pairs
                .iter()
                .map(|(k, v)| (Str::new(k), Str::new(v)))
                .collect(),
        )
    }

    #[test]
    fn operators() {
        let l = labels(&[("zone", "a"), ("gen", "5")]);
        let req = |k: &str, op, vals: &[&str]| {
            Requirement::new(
                k,
                op,
                &vals.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                &Interner::new(),
            )
            .unwrap()
        };
        assert!(req("zone", Operator::In, &["a", "b"]).matches(&l));
        assert!(!req("zone", Operator::NotIn, &["a"]).matches(&l));
        assert!(req("missing", Operator::NotIn, &["a"]).matches(&l));
        assert!(req("zone", Operator::Exists, &[]).matches(&l));
        assert!(req("missing", Operator::DoesNotExist, &[]).matches(&l));
        assert!(req("gen", Operator::Gt, &["4"]).matches(&l));
        assert!(!req("gen", Operator::Lt, &["5"]).matches(&l));
        assert!(!req("zone", Operator::Gt, &["1"]).matches(&l));
        assert!(!req("missing", Operator::Lt, &["1"]).matches(&l));
    }

    #[test]
    fn requirement_validation() {
        assert!(Requirement::new("a", Operator::In, &[], &Interner::new()).is_err());
        assert!(Requirement::new("a", Operator::Exists, &["x".into()], &Interner::new()).is_err());
        assert!(Requirement::new("a", Operator::Gt, &["x".into()], &Interner::new()).is_err());
        assert!(Requirement::new("-bad", Operator::Exists, &[], &Interner::new()).is_err());
        assert!(
            Requirement::new("example.com/ok", Operator::Exists, &[], &Interner::new()).is_ok()
        );
        assert!(
            Requirement::new("Example.com/bad", Operator::Exists, &[], &Interner::new()).is_err()
        );
        assert!(
            Requirement::new("a", Operator::In, &["bad value".into()], &Interner::new()).is_err()
        );
    }

    #[test]
    fn nil_and_empty_label_selectors() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
        let l = labels(&[("app", "web")]);
        assert!(
            !Selector::from_label_selector(None, &Interner::new())
                .unwrap()
                .matches(&l)
        );
        assert!(
            Selector::from_label_selector(Some(&LabelSelector::default()), &Interner::new())
                .unwrap()
                .matches(&l)
        );
        assert!(
            Selector::from_label_selector(Some(&LabelSelector::default()), &Interner::new())
                .unwrap()
                .is_empty()
        );
    }
}
