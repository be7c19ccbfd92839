//! ResourceClaims as scheduling has assumed them (upstream's assume cache of the DRA manager):
//! the claims that pods placed in a snapshot allocated or had generated, over the cluster's own,
//! and the devices that leaves taken.

use super::allocator::{DeviceLocation, DeviceResult};
use crate::model::dra::objects::{
    AllocatedDevice, AllocatedState, Allocation, Claim, ClaimSpec, Dra, node_name_selector,
};
use crate::model::intern::{Entry, Interner, Str};
use crate::model::pod::{ClaimSource, Pod};
use std::collections::HashMap;
use std::sync::Arc;

/// The name of the in-memory claim for extended resources (`specialClaimInMemName`).
pub const EXTENDED_CLAIM_IN_MEMORY: &str = "<extended-resources>";
pub static EXTENDED_CLAIM_IN_MEMORY_NAME: Entry = Entry::constant(EXTENDED_CLAIM_IN_MEMORY);

/// The devices Reserve would allocate to one claim on the chosen node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimAllocation {
    pub claim: Str,
    pub devices: Vec<DeviceResult>,
}

/// A new, unallocated claim for `pod`'s extended resources, controlled by the pod. Its
/// requests depend on the node, so Filter builds them.
pub fn extended_resource_claim(pod: &Pod, name: Str, uid: Str) -> Claim {
    Claim {
        namespace: pod.namespace,
        name,
        uid,
        controller_uid: Some(pod.uid),
        deleting: false,
        extended_resource_claim: true,
        owner_uids: vec![(pod.uid, true)],
        spec: ClaimSpec {
            requests: Vec::new(),
            constraints: Vec::new(),
        },
        allocation: None,
        reserved_for: Vec::new(),
        device_conditions: Default::default(),
    }
}

/// Claims assumed on top of a cluster's `Dra` objects (passed to each method).
#[derive(Clone, Debug, Default)]
pub struct AssumedClaims {
    /// Claims allocated or generated since the cluster was read, by namespace and name.
    claims: HashMap<(Str, Str), Arc<Claim>>,
    /// The devices taken once those are counted (without and with consumable capacity).
    allocated: Option<Arc<[AllocatedState; 2]>>,
}

impl AssumedClaims {
    /// A ResourceClaim of the namespace, as allocated so far.
    pub fn claim<'a>(&'a self, dra: &'a Dra, namespace: Str, name: Str) -> Option<&'a Arc<Claim>> {
        let key = (namespace, name);
        self.claims.get(&key).or_else(|| dra.claims.get(&key))
    }

    /// The devices claims have taken, those of the assumed claims included.
    pub fn allocated_devices<'a>(
        &'a self,
        dra: &'a Dra,
        consumable_capacity: bool,
    ) -> &'a AllocatedState {
        match &self.allocated {
            Some(states) => &states[usize::from(consumable_capacity)],
            None => dra.allocated(consumable_capacity),
        }
    }

    /// Records what Reserve allocated for `pod` on `node`: the claims become allocated there,
    /// reserved for the pod, and their devices taken.
    pub fn allocate(
        &mut self,
        dra: &Dra,
        strings: &Interner,
        pod: &Pod,
        node: Str,
        allocations: &[ClaimAllocation],
    ) {
        for a in allocations {
            let mut claim = match self.claim(dra, pod.namespace, a.claim) {
                Some(c) => Claim::clone(c),
                // The in-memory claim for extended resources gets a name when PreBind creates it.
                None if a.claim == EXTENDED_CLAIM_IN_MEMORY => extended_resource_claim(
                    pod,
                    strings.intern(format!("{}-extended-resources", pod.name)),
                    strings.intern(format!("{}/extended-resources", pod.uid)),
                ),
                None => continue,
            };
            let node_selectors = if a.devices.iter().any(|d| d.location == DeviceLocation::Node) {
                vec![node_name_selector(node, strings)]
            } else {
                let mut v = Vec::new();
                for d in &a.devices {
                    if let DeviceLocation::Selector(s) = &d.location
                        && !v.contains(s)
                    {
                        v.push(s.clone());
                    }
                }
                v
            };
            claim.allocation = Some(Allocation {
                devices: a
                    .devices
                    .iter()
                    .map(|d| AllocatedDevice {
                        request: strings.intern(&d.request),
                        id: d.id,
                        admin_access: d.admin_access,
                        share_id: d
                            .shared
                            .then(|| strings.intern(format!("{}-{}", pod.name, d.id))),
                        consumed_capacity: d.consumed_capacity.clone(),
                        binding_conditions: Vec::new(),
                        binding_failure_conditions: Vec::new(),
                    })
                    .collect(),
                node_selectors,
                node_selector_errors: Vec::new(),
                timestamp: None,
            });
            claim.reserved_for.push(pod.uid);
            self.claims
                .insert((claim.namespace, claim.name), Arc::new(claim));
        }
        if allocations.is_empty() {
            return;
        }
        let states = [false, true].map(|cc| {
            let mut state = dra.allocated(cc).clone();
            for c in self.claims.values() {
                state.add(c, cc);
            }
            state
        });
        self.allocated = Some(Arc::new(states));
    }

    /// What the resourceclaim controller does for a pod being created: a claim from each
    /// ResourceClaimTemplate the pod names, owned by the pod, recorded in its status. Claims of
    /// a template that does not exist stay missing.
    pub fn generate_template_claims(&mut self, dra: &Dra, pod: &mut Pod) {
        for rc in &mut pod.resource_claims {
            let ClaimSource::Template {
                template,
                generated: generated @ None,
            } = &mut rc.source
            else {
                continue;
            };
            let Some(t) = dra.templates.get(&(pod.namespace, *template)) else {
                continue;
            };
            // The controller adds a random suffix to this name.
            let name = Str::new(format!("{}-{}", pod.name, rc.name));
            let claim = Claim {
                namespace: pod.namespace,
                name,
                uid: Str::new(format!("{}/{}", pod.uid, rc.name)),
                controller_uid: Some(pod.uid),
                deleting: false,
                extended_resource_claim: false,
                owner_uids: vec![(pod.uid, true)],
                spec: t.spec.clone(),
                allocation: None,
                reserved_for: Vec::new(),
                device_conditions: HashMap::new(),
            };
            self.claims.insert((pod.namespace, name), Arc::new(claim));
            *generated = Some(Some(name));
        }
    }
}
