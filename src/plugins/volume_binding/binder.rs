//! The volume binder (`binder.go`): what PreFilter learns of the pod's claims, and per node
//! `FindPodVolumes` — bound claims' PV node affinity, delayed claims matched to PVs or
//! provisioned within allowed topologies and tracked capacity — and what it would bind there.

use super::*;

#[derive(Debug)]
pub(super) struct Claims {
    pub(super) bound: Vec<BoundClaim>,
    /// Unbound claims of classes that wait for the first consumer, in the pod's volume order.
    pub(super) delayed: Vec<DelayedClaim>,
    /// The PVs some delayed claim could bind to.
    pub(super) volumes: Vec<Volume>,
}

#[derive(Debug)]
pub(super) struct BoundClaim {
    /// The claim as the explanation shows it.
    pub(super) fact: ClaimFact,
    /// `None`: the PV the claim names does not exist.
    pub(super) volume: Option<BoundVolume>,
}

#[derive(Debug)]
pub(super) struct BoundVolume {
    pub(super) affinity: Option<NodeSelector>,
    /// An in-tree PV of a plugin the scheduler migrates: read as its CSI translation on nodes
    /// whose CSINode lists the plugin as migrated (`tryTranslatePVToCSI`).
    pub(super) migrated: Option<(&'static InTree, Result<Option<NodeSelector>, String>)>,
}

#[derive(Debug)]
pub(super) struct DelayedClaim {
    pub(super) key: String,
    /// The claim as the explanation shows it.
    pub(super) fact: ClaimFact,
    pub(super) size: Quantity,
    /// `volume.kubernetes.io/selected-node`: provisioning was already started for that node.
    pub(super) selected_node: Option<String>,
    /// The candidate PVs, or the error matching them gives.
    pub(super) matching: Result<Matching, String>,
    pub(super) provision: Result<Provision, String>,
}

#[derive(Debug)]
pub(super) enum Provision {
    /// The class has no provisioner (or `kubernetes.io/no-provisioner`).
    Unsupported,
    Dynamic {
        class: String,
        provisioner: String,
        topology: TopologyTerms,
        capacity: Capacity,
    },
}

#[derive(Debug)]
pub(super) enum Capacity {
    Unchecked,
    /// The driver tracks capacity: the CSIStorageCapacities big enough, in list order, by their
    /// node topology, with the capacity each reports (what capacity scoring reads).
    Tracked(Vec<(Selector, i64)>),
}

/// What the node would get (`PodVolumes`).
pub(super) struct PodVolumes<'s> {
    /// Claim (index into `delayed`) and the PV it would bind to.
    pub(super) static_bindings: Vec<(usize, usize)>,
    /// Claims (index into `delayed`) the provisioner would create a PV for, with the capacity
    /// of the CSIStorageCapacity that made room for it, when the driver tracks capacity.
    pub(super) dynamic_provisions: Vec<(usize, Option<i64>)>,
    pub(super) reasons: Vec<&'static str>,
    /// The bound claim (index into `bound`) whose PV is missing or out of the node's reach.
    pub(super) failed_bound: Option<usize>,
    /// The claim (index into `delayed`) that can be neither matched nor provisioned here.
    pub(super) failed_delayed: Option<usize>,
    pub(super) claims: &'s Claims,
}

/// `IsDelayBindingMode`.
pub(super) fn delay_binding(
    cluster: &Cluster,
    pvc: &k8s::PersistentVolumeClaim,
) -> Result<bool, String> {
    let class_name = claim_class(pvc);
    if class_name.is_empty() {
        return Ok(false);
    }
    let Some(class) = cluster
        .strings
        .get(class_name)
        .and_then(|n| cluster.storage_classes.get(&n))
    else {
        return Ok(false);
    };
    match class.volume_binding_mode.as_deref() {
        None => Err(format!(
            "VolumeBindingMode not set for StorageClass {class_name:?}"
        )),
        Some(mode) => Ok(mode == "WaitForFirstConsumer"),
    }
}

pub(super) fn bound_volume(
    cluster: &Cluster,
    pvc: &k8s::PersistentVolumeClaim,
) -> Option<BoundVolume> {
    let pv = cluster
        .strings
        .get(claim_volume_name(pvc))
        .and_then(|n| cluster.pvs.get(&n))?;
    let spec = pv.spec.as_ref();
    let migrated = csi_translation::pv_plugin(pv)
        .filter(|p| p.migrated)
        .map(|p| {
            let translated = csi_translation::translate_pv(pv)
                .map(|t| parse_volume_node_affinity(t.node_affinity.as_ref(), &cluster.strings))
                .map_err(|e| format!("could not translate pv: {e}"));
            (p, translated)
        });
    Some(BoundVolume {
        affinity: parse_volume_node_affinity(
            spec.and_then(|s| s.node_affinity.as_ref()),
            &cluster.strings,
        ),
        migrated,
    })
}

/// The provisioning part of `checkVolumeProvisions` that does not depend on the node.
pub(super) fn provision(
    cluster: &Cluster,
    pvc: &k8s::PersistentVolumeClaim,
) -> Result<Provision, String> {
    let class_name = claim_class(pvc);
    if class_name.is_empty() {
        return Err(format!("no class for claim {:?}", claim_key(pvc)));
    }
    let class = cluster
        .strings
        .get(class_name)
        .and_then(|n| cluster.storage_classes.get(&n))
        .ok_or_else(|| format!("failed to find storage class {class_name:?}"))?;
    let provisioner = class.provisioner.as_str();
    if provisioner.is_empty() || provisioner == NOT_SUPPORTED_PROVISIONER {
        return Ok(Provision::Unsupported);
    }
    Ok(Provision::Dynamic {
        class: class_name.to_string(),
        provisioner: provisioner.to_string(),
        topology: TopologyTerms::parse(class.allowed_topologies.as_deref(), &cluster.strings),
        capacity: capacity(cluster, pvc, class_name, provisioner),
    })
}

/// `hasEnoughCapacity`, but for the node's labels: only drivers that opt into storage capacity
/// tracking are checked, and only for claims that request a size.
pub(super) fn capacity(
    cluster: &Cluster,
    pvc: &k8s::PersistentVolumeClaim,
    class: &str,
    provisioner: &str,
) -> Capacity {
    let requested = pvc
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .is_some_and(|r| r.contains_key("storage"));
    let tracked = cluster
        .strings
        .get(provisioner)
        .and_then(|n| cluster.csi_drivers.get(&n))
        .is_some_and(|d| d.spec.storage_capacity == Some(true));
    if !requested || !tracked {
        return Capacity::Unchecked;
    }
    let size = claim_request(pvc).value();
    let accessible = cluster
        .csi_storage_capacities
        .iter()
        .filter(|c| c.storage_class_name == class)
        .filter(|c| {
            c.maximum_volume_size
                .as_ref()
                .or(c.capacity.as_ref())
                .and_then(|q| Quantity::parse(&q.0).ok())
                .is_some_and(|q| q.value() >= size)
        })
        .filter_map(|c| {
            let topology =
                Selector::from_label_selector(Some(c.node_topology.as_ref()?), &cluster.strings)
                    .ok()?;
            // A capacity that reports only a maximum volume size offers nothing to score by.
            let reported = c
                .capacity
                .as_ref()
                .and_then(|q| Quantity::parse(&q.0).ok())
                .map_or(0, |q| q.value());
            Some((topology, reported))
        })
        .collect();
    Capacity::Tracked(accessible)
}

impl Claims {
    /// `GetPodVolumeClaims` and what each node check needs of them.
    pub(super) fn new(
        cx: &Cx,
        pvcs: Vec<Arc<k8s::PersistentVolumeClaim>>,
    ) -> Result<Claims, Status> {
        let cluster = &*cx.snapshot.cluster;
        let mut bound = Vec::new();
        let mut delayed_pvcs = Vec::new();
        // The first claim that must be bound before scheduling and is not.
        let mut immediate: Option<ClaimFact> = None;
        for pvc in pvcs {
            let volume_name = claim_volume_name(&pvc);
            if !volume_name.is_empty() && annotation(&pvc.metadata, ANN_BIND_COMPLETED).is_some() {
                bound.push(BoundClaim {
                    fact: claim_fact(cx, &pvc),
                    volume: bound_volume(cluster, &pvc),
                });
            } else if delay_binding(cluster, &pvc).map_err(Status::error)? && volume_name.is_empty()
            {
                delayed_pvcs.push(pvc);
            } else if immediate.is_none() {
                immediate = Some(claim_fact(cx, &pvc));
            }
        }
        if let Some(claim) = immediate {
            let status = Status::unresolvable(ERR_UNBOUND_IMMEDIATE);
            return Err(with_claim(cx, status, || claim));
        }
        let mut classes: Vec<&str> = delayed_pvcs.iter().map(|p| claim_class(p)).collect();
        classes.sort_unstable();
        classes.dedup();
        let class_pvs: Vec<&Arc<k8s::PersistentVolume>> = if classes.is_empty() {
            Vec::new()
        } else {
            cluster
                .pvs
                .values()
                .filter(|pv| classes.binary_search(&volume_class(pv)).is_ok())
                .collect()
        };
        // Only the PVs some claim could take are parsed, each once.
        let mut volumes: Vec<Volume> = Vec::new();
        let mut volume_index: HashMap<*const k8s::PersistentVolume, usize> = HashMap::new();
        let mut delayed = Vec::with_capacity(delayed_pvcs.len());
        for pvc in delayed_pvcs {
            let size = claim_request(&pvc);
            let class = claim_class(&pvc);
            let of_class: Vec<&Arc<k8s::PersistentVolume>> = class_pvs
                .iter()
                .copied()
                .filter(|pv| volume_class(pv) == class)
                .collect();
            let matching = candidates(&pvc, size, &of_class, &cluster.strings).map(|found| {
                let candidates = found
                    .into_iter()
                    .map(|(pv, bound_to_claim)| Candidate {
                        volume: *volume_index.entry(Arc::as_ptr(pv)).or_insert_with(|| {
                            volumes.push(Volume::new(pv, &cluster.strings));
                            volumes.len() - 1
                        }),
                        bound_to_claim,
                    })
                    .collect();
                Matching::new(candidates, &volumes)
            });
            delayed.push(DelayedClaim {
                key: claim_key(&pvc),
                fact: ClaimFact {
                    selected_node: annotation(&pvc.metadata, ANN_SELECTED_NODE)
                        .map(|n| cluster.strings.intern(n)),
                    requested: Some(size.value()),
                    ..claim_fact(cx, &pvc)
                },
                size,
                selected_node: annotation(&pvc.metadata, ANN_SELECTED_NODE).map(str::to_string),
                matching,
                provision: provision(cluster, &pvc),
            });
        }
        Ok(Claims {
            bound,
            delayed,
            volumes,
        })
    }

    /// `checkBoundClaims`: (node affinity satisfied, every PV found), and the claim that
    /// failed.
    fn check_bound(
        &self,
        cluster: &Cluster,
        node: &NodeInfo,
        out: &mut PodVolumes,
    ) -> Result<(bool, bool), String> {
        let csi_node = cluster.csi_nodes.get(&node.name()).map(|n| &**n);
        for (i, claim) in self.bound.iter().enumerate() {
            out.failed_bound = Some(i);
            let Some(v) = &claim.volume else {
                return Ok((true, false));
            };
            let affinity = match &v.migrated {
                Some((p, translated)) if migrated_on_node(csi_node, p.plugin) => {
                    translated.as_ref().map_err(String::clone)?
                }
                _ => &v.affinity,
            };
            if !node_affinity_matches(affinity.as_ref(), &node.node.labels) {
                return Ok((false, true));
            }
        }
        out.failed_bound = None;
        Ok((true, true))
    }

    /// `FindMatchingVolume` on a node: the claim's PV, or the smallest that fits; `None` also
    /// when the PV reserved for the claim is out of the node's reach.
    fn find_matching(&self, m: &Matching, chosen: &[usize], labels: &Labels) -> Option<usize> {
        let mut smallest: Option<usize> = None;
        for c in m.for_node(labels) {
            if chosen.contains(&c.volume) {
                continue;
            }
            let v = &self.volumes[c.volume];
            let reachable = v.reach.matches(labels);
            if c.bound_to_claim {
                return reachable.then_some(c.volume);
            }
            if reachable && smallest.is_none_or(|s| self.volumes[s].size > v.size) {
                smallest = Some(c.volume);
            }
        }
        smallest
    }

    /// `FindPodVolumes`: what the node would get, with the reasons it cannot.
    pub(super) fn find_pod_volumes(
        &self,
        cluster: &Cluster,
        node: &NodeInfo,
    ) -> Result<PodVolumes<'_>, String> {
        let mut out = PodVolumes {
            static_bindings: Vec::new(),
            dynamic_provisions: Vec::new(),
            reasons: Vec::new(),
            failed_bound: None,
            failed_delayed: None,
            claims: self,
        };
        let (bound_satisfied, bound_found) = if self.bound.is_empty() {
            (true, true)
        } else {
            self.check_bound(cluster, node, &mut out)?
        };
        let (unbound_satisfied, storage_sufficient) = self.check_delayed(node, &mut out)?;
        for (failed, reason) in [
            (!bound_satisfied, ERR_REASON_NODE_CONFLICT),
            (!unbound_satisfied, ERR_REASON_BIND_CONFLICT),
            (!storage_sufficient, ERR_REASON_NOT_ENOUGH_SPACE),
            (!bound_found, ERR_REASON_PV_NOT_EXIST),
        ] {
            if failed {
                out.reasons.push(reason);
            }
        }
        Ok(out)
    }

    /// The unbound part of `FindPodVolumes`: (claims satisfied, storage sufficient).
    fn check_delayed(&self, node: &NodeInfo, out: &mut PodVolumes) -> Result<(bool, bool), String> {
        if self.delayed.is_empty() {
            return Ok((true, true));
        }
        let mut to_match: Vec<usize> = Vec::new();
        let mut to_provision: Vec<usize> = Vec::new();
        for (i, c) in self.delayed.iter().enumerate() {
            match &c.selected_node {
                Some(n) if n.as_str() != node.name().as_str() => {
                    out.failed_delayed = Some(i);
                    return Ok((false, true));
                }
                Some(_) => to_provision.push(i),
                None => to_match.push(i),
            }
        }
        let labels = &node.node.labels;
        let mut satisfied = true;
        if !to_match.is_empty() {
            // Smallest request first, so each claim gets the smallest PV that fits.
            to_match.sort_by_key(|&i| self.delayed[i].size);
            let mut chosen: Vec<usize> = Vec::new();
            for i in to_match {
                let candidates = self.delayed[i].matching.as_ref().map_err(String::clone)?;
                match self.find_matching(candidates, &chosen, labels) {
                    Some(v) => {
                        chosen.push(v);
                        out.static_bindings.push((i, v));
                    }
                    None => {
                        to_provision.push(i);
                        satisfied = false;
                    }
                }
            }
        }
        if to_provision.is_empty() {
            return Ok((satisfied, true));
        }
        // `checkVolumeProvisions`: the first claim that cannot be provisioned decides.
        for i in to_provision {
            out.failed_delayed = Some(i);
            match self.delayed[i].provision.as_ref().map_err(String::clone)? {
                Provision::Unsupported => return Ok((false, true)),
                Provision::Dynamic {
                    topology, capacity, ..
                } => {
                    if !topology.matches(labels) {
                        return Ok((false, true));
                    }
                    let node_capacity = match capacity {
                        Capacity::Unchecked => None,
                        Capacity::Tracked(accessible) => {
                            match accessible.iter().find(|(s, _)| s.matches(labels)) {
                                Some(&(_, reported)) => Some(reported),
                                None => {
                                    out.dynamic_provisions.clear();
                                    return Ok((true, false));
                                }
                            }
                        }
                    };
                    out.dynamic_provisions.push((i, node_capacity));
                }
            }
        }
        out.failed_delayed = None;
        Ok((true, true))
    }
}

impl PodVolumes<'_> {
    /// Per storage class, the storage the pod's volumes would take on the node and what the
    /// class holds there (`classResourceMap`): the static bindings' PVs if there are any, else
    /// the provisions on capacity-tracking drivers.
    pub(super) fn class_usage(&self) -> HashMap<&str, (i64, i64)> {
        let claims = self.claims;
        let mut usage: HashMap<&str, (i64, i64)> = HashMap::new();
        if !self.static_bindings.is_empty() {
            for &(i, v) in &self.static_bindings {
                let volume = &claims.volumes[v];
                let class = volume
                    .pv
                    .spec
                    .as_ref()
                    .and_then(|s| s.storage_class_name.as_deref())
                    .unwrap_or("");
                let entry = usage.entry(class).or_default();
                entry.0 += claims.delayed[i].size.value();
                entry.1 += volume.size.value();
            }
            return usage;
        }
        for &(i, capacity) in &self.dynamic_provisions {
            let c = &claims.delayed[i];
            if let (Some(capacity), Ok(Provision::Dynamic { class, .. })) = (capacity, &c.provision)
            {
                let entry = usage.entry(class.as_str()).or_default();
                entry.0 += c.size.value();
                // Several claims of one class share the capacity: it is not added up.
                entry.1 = capacity;
            }
        }
        usage
    }

    /// In words, for the explanation.
    pub(super) fn describe(&self, node: &NodeInfo) -> Vec<String> {
        let claims = self.claims;
        let mut out = Vec::new();
        let mut chosen: Vec<usize> = Vec::new();
        for &(i, v) in &self.static_bindings {
            let c = &claims.delayed[i];
            let pv = &claims.volumes[v];
            let capacity = pv
                .pv
                .spec
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .and_then(|c| c.get("storage"))
                .map(|q| format!(" ({})", q.0))
                .unwrap_or_default();
            let mut line = format!(
                "PersistentVolumeClaim {} would bind to PersistentVolume {}{capacity}",
                c.key,
                name(&pv.pv.metadata)
            );
            // The real scheduler takes whichever equally small PV it happens to list first.
            let ties: Vec<&str> = c
                .matching
                .iter()
                .flat_map(|m| m.candidates.iter())
                .filter(|cand| !cand.bound_to_claim && !chosen.contains(&cand.volume))
                .map(|cand| &claims.volumes[cand.volume])
                .filter(|o| o.size == pv.size && o.reach.matches(&node.node.labels))
                .map(|o| name(&o.pv.metadata))
                .collect();
            if ties.len() > 1 {
                line.push_str(&format!(
                    " (equally small here: {}; kube-scheduler may take any of them)",
                    ties.join(", ")
                ));
            }
            chosen.push(v);
            out.push(line);
        }
        for &(i, _) in &self.dynamic_provisions {
            let c = &claims.delayed[i];
            if let Ok(Provision::Dynamic {
                class, provisioner, ..
            }) = &c.provision
            {
                let already = if c.selected_node.is_some() {
                    " (provisioning already started for this node)"
                } else {
                    ""
                };
                out.push(format!(
                    "PersistentVolumeClaim {} would be provisioned by StorageClass {class} (provisioner {provisioner}) for node {}{already}",
                    c.key,
                    node.name()
                ));
            }
        }
        out
    }
}
