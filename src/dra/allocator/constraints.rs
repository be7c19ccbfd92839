//! A claim's `matchAttribute` and `distinctAttribute` constraints while devices are added and
//! removed (`constraint.go`).

use super::search::Candidate;
use crate::model::dra::cel::Attribute;
use crate::model::dra::objects::Device;
use crate::model::intern::Str;
use std::collections::HashMap;

/// The state of a constraint while devices are added and removed.
pub(super) enum ConstraintState {
    Match {
        requests: Vec<Str>,
        attribute: String,
        value: Option<Attribute>,
        count: usize,
    },
    Distinct {
        requests: Vec<Str>,
        attribute: String,
        values: HashMap<Str, Attribute>,
        count: usize,
    },
}

pub(super) fn applies(requests: &[Str], request: Str, sub: Option<Str>) -> bool {
    if requests.is_empty() {
        return true;
    }
    requests.contains(&request)
        || sub.is_some_and(|s| {
            let full = format!("{request}/{s}");
            requests.iter().any(|r| r.as_str() == full)
        })
}

/// `lookupAttribute`: the fully qualified name, or its id when the domain is the driver.
pub fn lookup_attribute<'a>(device: &'a Device, driver: Str, name: &str) -> Option<&'a Attribute> {
    if let Some(a) = device.attributes.get(name) {
        return Some(a);
    }
    let (domain, id) = name.split_once('/')?;
    if domain != driver.as_str() {
        return None;
    }
    device.attributes.get(id)
}

pub(super) fn same_value(a: &Attribute, b: &Attribute) -> bool {
    match (a, b) {
        (Attribute::Int(x), Attribute::Int(y)) => x == y,
        (Attribute::Bool(x), Attribute::Bool(y)) => x == y,
        (Attribute::String(x), Attribute::String(y)) => x == y,
        (Attribute::Version(x), Attribute::Version(y)) => x == y,
        _ => false,
    }
}

impl ConstraintState {
    pub(super) fn add(&mut self, request: Str, sub: Option<Str>, c: &Candidate) -> bool {
        match self {
            ConstraintState::Match {
                requests,
                attribute,
                value,
                count,
            } => {
                if !applies(requests, request, sub) {
                    return true;
                }
                let Some(a) = lookup_attribute(c.device, c.id.driver, attribute) else {
                    return false;
                };
                if *count == 0 {
                    *value = Some(a.clone());
                    *count = 1;
                    return true;
                }
                let matches = match (a, value.as_ref()) {
                    (Attribute::Unsupported, _) | (_, None) => false,
                    (a, Some(v)) => same_value(a, v),
                };
                if matches {
                    *count += 1;
                }
                matches
            }
            ConstraintState::Distinct {
                requests,
                attribute,
                values,
                count,
            } => {
                if !applies(requests, request, sub) {
                    return true;
                }
                let Some(a) = lookup_attribute(c.device, c.id.driver, attribute) else {
                    return false;
                };
                if *count > 0
                    && (matches!(a, Attribute::Unsupported)
                        || values.values().any(|v| same_value(a, v)))
                {
                    return false;
                }
                values.insert(request, a.clone());
                *count += 1;
                true
            }
        }
    }

    pub(super) fn remove(&mut self, request: Str, sub: Option<Str>) {
        match self {
            ConstraintState::Match {
                requests, count, ..
            } => {
                if applies(requests, request, sub) {
                    *count = count.saturating_sub(1);
                }
            }
            ConstraintState::Distinct {
                requests,
                values,
                count,
                ..
            } => {
                if applies(requests, request, sub) {
                    values.remove(&request);
                    *count = count.saturating_sub(1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{EXPERIMENTAL, exactly, gpu_cluster, run};
    use crate::testing::gpu_slice;
    use serde_json::json;

    #[test]
    fn match_attribute_backtracks_to_a_device_with_the_same_value() {
        let dev = |name: &str, root: &str| json!({"name": name, "attributes": {"resource.kubernetes.io/pcieRoot": {"string": root}}});
        let c = gpu_cluster(vec![gpu_slice(
            "node-1",
            json!([dev("gpu-0", "a"), dev("gpu-1", "b"), dev("gpu-2", "b")]),
        )]);
        let claim = json!({
            "requests": [exactly("first", json!({})), exactly("second", json!({"selectors": [
                {"cel": {"expression": "device.attributes[\"resource.kubernetes.io\"].pcieRoot == \"b\""}}]}))],
            "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]});
        assert_eq!(
            run(&c, EXPERIMENTAL, claim).unwrap(),
            Some(vec!["first=gpu-1".into(), "second=gpu-2".into()])
        );
    }

    #[test]
    fn a_match_attribute_of_the_driver_domain_finds_the_bare_attribute() {
        let dev = |name: &str, model: &str| json!({"name": name, "attributes": {"model": {"string": model}}});
        let c = gpu_cluster(vec![gpu_slice(
            "node-1",
            json!([
                dev("gpu-0", "a100"),
                dev("gpu-1", "h100"),
                dev("gpu-2", "h100")
            ]),
        )]);
        let claim = json!({"requests": [exactly("r", json!({"count": 2}))],
            "constraints": [{"matchAttribute": "gpu.example.com/model"}]});
        assert_eq!(
            run(&c, EXPERIMENTAL, claim).unwrap(),
            Some(vec!["r=gpu-1".into(), "r=gpu-2".into()])
        );
        let other_domain = json!({"requests": [exactly("r", json!({"count": 2}))],
            "constraints": [{"matchAttribute": "other.example.com/model"}]});
        assert_eq!(run(&c, EXPERIMENTAL, other_domain).unwrap(), None);
    }
}
