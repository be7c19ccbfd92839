//! What a node offers each request of a claim, device by device, and why a device cannot serve
//! it: for the explanation, not the decision.

use super::constraints::applies;
use super::pools::scope_matches;
use super::search::{Candidate, RequestData, Search};
use super::{AllocatorFeatures, ClaimInput, NodeRef};
use crate::model::dra::objects::{
    AllocatedState, AllocationMode, Constraint, DeviceId, Dra, ExactRequest, RequestKind,
};
use crate::model::intern::Str;

/// What one request of a claim finds on a node: for the explanation, not the decision.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestCensus {
    pub claim: Str,
    /// `<request>` or `<request>/<subrequest>`.
    pub request: String,
    pub device_class: Str,
    /// How many devices it asks for: a count, or `All`.
    pub wants: String,
    /// Free devices that pass every check of the request on their own.
    pub usable: Vec<String>,
    /// The other devices the node can see, each with why it cannot serve the request.
    pub excluded: Vec<ExcludedDevice>,
    /// The claim's constraints that bind this request's devices to others.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constraints: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ExcludedDevice {
    /// `driver/pool/device`.
    pub device: String,
    pub reason: String,
}

/// For each request of `claim`, the devices `node` offers and why each is or is not usable,
/// checking what the allocator checks device by device (constraints between devices aside).
/// `holder` names who holds an allocated device.
pub fn census(
    dra: &Dra,
    features: AllocatorFeatures,
    allocated: &AllocatedState,
    node: NodeRef,
    claim: ClaimInput,
    holder: &dyn Fn(&DeviceId) -> String,
) -> Vec<RequestCensus> {
    let claims = [claim];
    let s = Search::new(dra, features, allocated, node, &claims);
    let mut out = Vec::new();
    for request in &claim.spec.requests {
        let (subs, parent): (Vec<&ExactRequest>, Option<Str>) = match &request.kind {
            RequestKind::Exactly(r) => (vec![r], None),
            RequestKind::FirstAvailable(subs) => (subs.iter().collect(), Some(request.name)),
            RequestKind::Unknown => continue,
        };
        for r in subs {
            let Some(class) = dra.classes.get(&r.class) else {
                continue;
            };
            let data = RequestData {
                request: r,
                parent,
                class,
                num_devices: 0,
                all_devices: Vec::new(),
            };
            let mut c = RequestCensus {
                claim: claim.name,
                request: data.name(),
                device_class: r.class,
                wants: match r.mode {
                    AllocationMode::ExactCount(n) => n.to_string(),
                    _ => r.mode_name.clone(),
                },
                usable: Vec::new(),
                excluded: Vec::new(),
                constraints: claim
                    .spec
                    .constraints
                    .iter()
                    .filter_map(|con| {
                        let (kind, requests, attribute) = match con {
                            Constraint::MatchAttribute {
                                requests,
                                attribute,
                            } => ("matchAttribute", requests, attribute),
                            Constraint::DistinctAttribute {
                                requests,
                                attribute,
                            } => ("distinctAttribute", requests, attribute),
                            Constraint::Unknown => return None,
                        };
                        applies(requests, parent.unwrap_or(r.name), parent.map(|_| r.name))
                            .then(|| format!("{kind} {attribute}"))
                    })
                    .collect(),
            };
            for (pi, pool) in s.pools.iter().enumerate() {
                let unusable = if pool.incomplete {
                    Some("its pool is incomplete (some ResourceSlices are missing)".to_string())
                } else {
                    pool.invalid
                        .as_ref()
                        .map(|why| format!("its pool is invalid: {why}"))
                };
                for slice in &pool.slices {
                    for device in &slice.devices {
                        let cand = Candidate {
                            pool: pi,
                            slice,
                            device,
                            id: slice.device_id(device),
                        };
                        let reason = unusable.clone().or_else(|| s.why_not(&data, &cand, holder));
                        match reason {
                            None => c.usable.push(cand.id.to_string()),
                            Some(reason) => c.excluded.push(ExcludedDevice {
                                device: cand.id.to_string(),
                                reason,
                            }),
                        }
                    }
                }
            }
            out.push(c);
        }
    }
    out
}

impl Search<'_> {
    /// Why a device cannot serve a request on its own, in the order the allocator checks.
    pub(super) fn why_not(
        &self,
        data: &RequestData,
        c: &Candidate,
        holder: &dyn Fn(&DeviceId) -> String,
    ) -> Option<String> {
        let request = data.request;
        if !request.admin() && self.allocated.devices.contains_key(&c.id) {
            return Some(format!("allocated to {}", holder(&c.id)));
        }
        if !self.features.binding_and_status && !c.device.binding_conditions.is_empty() {
            return Some("it has binding conditions (DRADeviceBindingConditions is off)".into());
        }
        // The class's selectors, then the request's; named only when one excludes the device.
        let selectors = (data.class.selectors.iter().enumerate())
            .map(|(i, &s)| (true, i, s))
            .chain(
                request
                    .selectors
                    .iter()
                    .enumerate()
                    .map(|(i, &s)| (false, i, s)),
            );
        for (of_class, i, sel) in selectors {
            let what = || {
                if of_class {
                    format!("DeviceClass {} selector #{i}", data.class.name)
                } else {
                    format!("request {} selector #{i}", data.name())
                }
            };
            match self.dra.selector_result(sel, c.device.profile) {
                Ok(true) => {}
                Ok(false) => {
                    let expression = self.dra.selector_expression(sel);
                    return Some(format!("{} is false: {expression}", what()));
                }
                Err(e) => return Some(format!("{} fails: CEL runtime error: {e}", what())),
            }
        }
        if c.slice.per_device_node_selection == Some(true)
            && !c
                .device
                .node_scope
                .as_ref()
                .is_some_and(|sc| scope_matches(sc, self.node))
        {
            return Some("not usable from this node".into());
        }
        if self.features.consumable_capacity && self.capacity_fits(request, c) != Some(true) {
            return Some("not enough capacity left for the request".into());
        }
        if !self.features.partitionable_devices && !c.device.consumes_counters.is_empty() {
            return Some("it consumes shared counters (DRAPartitionableDevices is off)".into());
        }
        if self.features.device_taints
            && let Some(t) = c.device.taints.iter().find(|t| {
                matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
                    && !request.tolerations.iter().any(|tol| tol.tolerates(t))
            })
        {
            return Some(format!(
                "taint {}={}:{} is not tolerated",
                t.key, t.value, t.effect
            ));
        }
        None
    }
}
