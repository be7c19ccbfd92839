//! Taints and tolerations with `v1.Toleration.ToleratesTaint` semantics.

use super::intern::{Interner, Str};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl Effect {
    pub fn parse(s: &str) -> Option<Effect> {
        match s {
            "NoSchedule" => Some(Effect::NoSchedule),
            "PreferNoSchedule" => Some(Effect::PreferNoSchedule),
            "NoExecute" => Some(Effect::NoExecute),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Effect::NoSchedule => "NoSchedule",
            Effect::PreferNoSchedule => "PreferNoSchedule",
            Effect::NoExecute => "NoExecute",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taint {
    pub key: Str,
    pub value: Str,
    /// The effect as written; a taint with an effect this version does not know never matches a
    /// filter or score, as upstream compares effects by string.
    pub effect: Option<Effect>,
}

/// kubectl's notation: `key=value:Effect`, or `key:Effect` without a value.
impl std::fmt::Display for Taint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let effect = self.effect.map_or("", Effect::as_str);
        if self.value.is_empty() {
            write!(f, "{}:{effect}", self.key)
        } else {
            write!(f, "{}={}:{effect}", self.key, self.value)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TolerationOperator {
    Equal,
    Exists,
    /// Anything else tolerates nothing (upstream's `default: return false`).
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toleration {
    /// Empty matches every key.
    pub key: Str,
    pub operator: TolerationOperator,
    pub value: Str,
    /// `None` matches every effect; `Some(None)` is an effect string this version does not know.
    pub effect: Option<Option<Effect>>,
    /// `tolerationSeconds`: how long a NoExecute taint is tolerated before the pod is evicted.
    pub seconds: Option<i64>,
}

impl Toleration {
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if let Some(effect) = self.effect
            && effect != taint.effect
        {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            TolerationOperator::Equal => self.value == taint.value,
            TolerationOperator::Exists => true,
            TolerationOperator::Unknown => false,
        }
    }

    pub fn from_k8s(t: &k8s_openapi::api::core::v1::Toleration, strings: &Interner) -> Toleration {
        let operator = match t.operator.as_deref() {
            None | Some("") | Some("Equal") => TolerationOperator::Equal,
            Some("Exists") => TolerationOperator::Exists,
            Some(_) => TolerationOperator::Unknown,
        };
        let effect = match t.effect.as_deref() {
            None | Some("") => None,
            Some(e) => Some(Effect::parse(e)),
        };
        Toleration {
            key: strings.intern(t.key.as_deref().unwrap_or("")),
            operator,
            value: strings.intern(t.value.as_deref().unwrap_or("")),
            effect,
            seconds: t.toleration_seconds,
        }
    }
}

/// `TolerationsTolerateTaint`.
pub fn tolerated(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| t.tolerates(taint))
}

/// The NoSchedule and NoExecute taints the tolerations do not tolerate, in the node's order.
pub fn untolerated_do_not_schedule<'a>(
    taints: &'a [Taint],
    tolerations: &'a [Toleration],
) -> impl Iterator<Item = &'a Taint> {
    taints
        .iter()
        .filter(|t| matches!(t.effect, Some(Effect::NoSchedule | Effect::NoExecute)))
        .filter(|t| !tolerated(tolerations, t))
}

/// `FindMatchingUntoleratedTaint` restricted to NoSchedule and NoExecute taints.
pub fn first_untolerated_do_not_schedule<'a>(
    taints: &'a [Taint],
    tolerations: &'a [Toleration],
) -> Option<&'a Taint> {
    untolerated_do_not_schedule(taints, tolerations).next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: Effect) -> Taint {
        Taint {
            key: Str::new(key),
            value: Str::new(value),
            effect: Some(effect),
        }
    }

    fn tol(key: &str, op: TolerationOperator, value: &str, effect: Option<Effect>) -> Toleration {
        Toleration {
            key: Str::new(key),
            operator: op,
            value: Str::new(value),
            effect: effect.map(Some),
            seconds: None,
        }
    }

    #[test]
    fn toleration_rules() {
        let t = taint("dedicated", "gpu", Effect::NoSchedule);
        assert!(tol("dedicated", TolerationOperator::Equal, "gpu", None).tolerates(&t));
        assert!(!tol("dedicated", TolerationOperator::Equal, "cpu", None).tolerates(&t));
        assert!(tol("dedicated", TolerationOperator::Exists, "", None).tolerates(&t));
        assert!(tol("", TolerationOperator::Exists, "", None).tolerates(&t));
        assert!(
            !tol(
                "dedicated",
                TolerationOperator::Exists,
                "",
                Some(Effect::NoExecute)
            )
            .tolerates(&t)
        );
        assert!(!tol("dedicated", TolerationOperator::Unknown, "gpu", None).tolerates(&t));
    }
}
