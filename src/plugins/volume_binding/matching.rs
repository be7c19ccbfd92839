//! Which PVs a delayed claim could bind to (`FindMatchingVolume`, upstream's persistentvolume
//! util): the node-independent candidates of a claim, indexed by the label that reaches them.

use super::*;

#[derive(Debug)]
pub(super) struct Volume {
    pub(super) pv: Arc<k8s::PersistentVolume>,
    pub(super) size: Quantity,
    pub(super) reach: Reach,
}

/// Which nodes a PV's node affinity lets use it (`CheckNodeAffinity`).
#[derive(Debug)]
pub(super) enum Reach {
    Everywhere,
    /// A single `key In values`, the way local PVs name their host and zonal ones their zone.
    Label(Str, Vec<Str>),
    Selector(NodeSelector),
}

impl Reach {
    pub(super) fn new(affinity: Option<&k8s::VolumeNodeAffinity>, strings: &Interner) -> Reach {
        if let Some((key, values)) = single_label_reach(affinity, strings) {
            return Reach::Label(key, values);
        }
        match parse_volume_node_affinity(affinity, strings) {
            None => Reach::Everywhere,
            Some(s) => Reach::Selector(s),
        }
    }

    pub(super) fn matches(&self, labels: &Labels) -> bool {
        match self {
            Reach::Everywhere => true,
            Reach::Label(key, values) => labels.get(*key).is_some_and(|v| values.contains(&v)),
            Reach::Selector(s) => node_affinity_matches(Some(s), labels),
        }
    }
}

impl Volume {
    pub(super) fn new(pv: &Arc<k8s::PersistentVolume>, strings: &Interner) -> Volume {
        let affinity = pv.spec.as_ref().and_then(|s| s.node_affinity.as_ref());
        Volume {
            pv: pv.clone(),
            size: volume_capacity(pv),
            reach: Reach::new(affinity, strings),
        }
    }
}

/// The `key In values` a PV's node affinity amounts to, when it is exactly one such requirement
/// (local PVs name their host this way, zonal ones their zone).
pub(super) fn single_label_reach(
    affinity: Option<&k8s::VolumeNodeAffinity>,
    strings: &Interner,
) -> Option<(Str, Vec<Str>)> {
    let [term] = affinity?.required.as_ref()?.node_selector_terms.as_slice() else {
        return None;
    };
    if term.match_fields.as_ref().is_some_and(|f| !f.is_empty()) {
        return None;
    }
    let [req] = term.match_expressions.as_deref()? else {
        return None;
    };
    let values = req.values.as_deref()?;
    if req.operator != "In" || check_requirement(&req.key, Operator::In, values).is_err() {
        return None;
    }
    Some((
        strings.intern(&req.key),
        values.iter().map(|v| strings.intern(v)).collect(),
    ))
}

/// The PVs worth checking for a claim on any node, in the order they are tried, with those a
/// single label value reaches indexed by it so a node only looks at the ones it can reach.
#[derive(Debug)]
pub(super) struct Matching {
    pub(super) candidates: Vec<Candidate>,
    /// Positions in `candidates`, by the (key, value) that reaches them.
    pub(super) by_label: HashMap<(Str, Str), Vec<usize>>,
    pub(super) keys: Vec<Str>,
    /// Positions of the candidates every node must look at.
    pub(super) others: Vec<usize>,
}

impl Matching {
    pub(super) fn new(candidates: Vec<Candidate>, volumes: &[Volume]) -> Matching {
        let mut by_label: HashMap<(Str, Str), Vec<usize>> = HashMap::new();
        let mut keys = Vec::new();
        let mut others = Vec::new();
        for (pos, c) in candidates.iter().enumerate() {
            // A PV reserved for the claim decides even where it does not match, so it is always
            // looked at.
            match &volumes[c.volume].reach {
                Reach::Label(key, values) if !c.bound_to_claim => {
                    if !keys.contains(key) {
                        keys.push(*key);
                    }
                    for &v in values {
                        by_label.entry((*key, v)).or_default().push(pos);
                    }
                }
                _ => others.push(pos),
            }
        }
        Matching {
            candidates,
            by_label,
            keys,
            others,
        }
    }

    /// The candidates a node with these labels may match, in order.
    pub(super) fn for_node(&self, labels: &Labels) -> impl Iterator<Item = &Candidate> {
        let mut positions = self.others.clone();
        for &key in &self.keys {
            if let Some(p) = labels.get(key).and_then(|v| self.by_label.get(&(key, v))) {
                positions.extend_from_slice(p);
            }
        }
        positions.sort_unstable();
        positions.into_iter().map(|p| &self.candidates[p])
    }
}

/// A PV `FindMatchingVolume` would consider for a claim, whatever the node.
#[derive(Clone, Copy, Debug)]
pub(super) struct Candidate {
    pub(super) volume: usize,
    /// The PV is already reserved for this claim: taken if the node matches, else nothing is.
    pub(super) bound_to_claim: bool,
}

/// The node-independent part of `FindMatchingVolume`: the PVs of the claim's class worth
/// checking against a node, each with whether it is reserved for the claim.
pub(super) fn candidates<'a>(
    pvc: &k8s::PersistentVolumeClaim,
    size: Quantity,
    class_pvs: &[&'a Arc<k8s::PersistentVolume>],
    strings: &Interner,
) -> Result<Vec<(&'a Arc<k8s::PersistentVolume>, bool)>, String> {
    let spec = pvc.spec.as_ref();
    let selector = match spec.and_then(|s| s.selector.as_ref()) {
        None => None,
        Some(sel) => Some(
            Selector::from_label_selector(Some(sel), strings).map_err(|e| {
                format!(
                    "error creating internal label selector for claim: {}: {e}",
                    claim_key(pvc)
                )
            })?,
        ),
    };
    let claim_vac = spec
        .and_then(|s| s.volume_attributes_class_name.as_deref())
        .unwrap_or("");
    let mut out = Vec::new();
    for &pv in class_pvs {
        let pv_spec = pv.spec.as_ref();
        let bound_to_claim = volume_bound_to_claim(pv, pvc);
        if pv_spec.is_some_and(|s| s.claim_ref.is_some()) && !bound_to_claim {
            continue;
        }
        let vac = pv_spec
            .and_then(|s| s.volume_attributes_class_name.as_deref())
            .unwrap_or("");
        if volume_capacity(pv) < size
            || volume_mode_mismatch(pvc, pv)
            || vac != claim_vac
            || pv.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        if !bound_to_claim {
            let available =
                pv.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Available");
            let selected = || {
                let labels = pv
                    .metadata
                    .labels
                    .as_ref()
                    .map(|l| Labels::from_map(l, strings));
                selector
                    .as_ref()
                    .is_none_or(|s| s.matches(&labels.unwrap_or_default()))
            };
            if !available || !access_modes_match(pvc, pv) || !selected() {
                continue;
            }
        }
        out.push((pv, bound_to_claim));
    }
    // Upstream lists a class's PVs in no particular order; by name here, so runs repeat.
    out.sort_by(|a, b| name(&a.0.metadata).cmp(name(&b.0.metadata)));
    Ok(out)
}
