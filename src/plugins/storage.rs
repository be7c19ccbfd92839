//! What the volume plugins share: `component-helpers/storage/{volume,ephemeral}`, the listers'
//! not-found texts and `MatchTopologySelectorTerms`.

use crate::framework::facts::{ClaimFact, Detail};
use crate::framework::plugin::Cx;
use crate::framework::status::Status;
use crate::model::intern::{Interner, Str};
use crate::model::labels::{Labels, Operator, Requirement, Selector};
use crate::model::node_selector::NodeSelector;
use crate::model::pod::Pod;
use crate::model::quantity::Quantity;
use k8s_openapi::api::core::v1 as k8s;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
pub const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";
const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
pub const MIGRATED_PLUGINS_ANNOTATION: &str = "storage.alpha.kubernetes.io/migrated-plugins";

pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
pub const LABEL_TOPOLOGY_REGION: &str = "topology.kubernetes.io/region";
pub const LABEL_FAILURE_DOMAIN_BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
pub const LABEL_FAILURE_DOMAIN_BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
/// `LabelMultiZoneDelimiter`: a volume label listing several zones separates them with this.
pub const MULTI_ZONE_DELIMITER: &str = "__";

/// Whether the pod mounts a PersistentVolumeClaim: replicas of it share the claim, which one
/// placement can bind or take (ReadWriteOncePod) for all of them.
pub fn replicas_share_claims(pod: &Pod) -> bool {
    pod.claim_names().next().is_some()
}

pub fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations.as_ref()?.get(key).map(String::as_str)
}

pub fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

pub fn name(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or("")
}

/// `namespace/name` of a claim (`getPVCName`, `claimToClaimKey`).
pub fn claim_key(pvc: &k8s::PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        pvc.metadata.namespace.as_deref().unwrap_or(""),
        name(&pvc.metadata)
    )
}

/// `status` with the claim behind it as its fact, when the cycle explains.
pub fn with_claim(cx: &Cx, status: Status, fact: impl FnOnce() -> ClaimFact) -> Status {
    cx.with_fact(status, || Detail::Claim(Box::new(fact())))
}

/// A claim of the pod by name, with nothing else known of it yet.
pub fn claim_named(cx: &Cx, name: &str) -> ClaimFact {
    ClaimFact {
        claim: cx.snapshot.cluster.strings.intern(name),
        ..ClaimFact::default()
    }
}

/// A claim of the pod with the names of its volume and class, where it has them.
pub fn claim_fact(cx: &Cx, pvc: &k8s::PersistentVolumeClaim) -> ClaimFact {
    let strings = &cx.snapshot.cluster.strings;
    let some = |s: &str| (!s.is_empty()).then(|| strings.intern(s));
    ClaimFact {
        volume: some(claim_volume_name(pvc)),
        storage_class: some(claim_class(pvc)),
        ..claim_named(cx, name(&pvc.metadata))
    }
}

/// The listers' NotFound error texts (`errors.NewNotFound`).
pub fn pvc_not_found(name: &str) -> String {
    format!("persistentvolumeclaim {name:?} not found")
}

pub fn pv_not_found(name: &str) -> String {
    format!("persistentvolume {name:?} not found")
}

pub fn storage_class_not_found(name: &str) -> String {
    format!("storageclass.storage.k8s.io {name:?} not found")
}

/// `GetPersistentVolumeClaimClass`: the beta annotation wins over `spec.storageClassName`.
pub fn claim_class(pvc: &k8s::PersistentVolumeClaim) -> &str {
    annotation(&pvc.metadata, BETA_STORAGE_CLASS_ANNOTATION)
        .or_else(|| pvc.spec.as_ref()?.storage_class_name.as_deref())
        .unwrap_or("")
}

/// `GetPersistentVolumeClass`.
pub fn volume_class(pv: &k8s::PersistentVolume) -> &str {
    annotation(&pv.metadata, BETA_STORAGE_CLASS_ANNOTATION)
        .or_else(|| pv.spec.as_ref()?.storage_class_name.as_deref())
        .unwrap_or("")
}

pub fn claim_volume_name(pvc: &k8s::PersistentVolumeClaim) -> &str {
    pvc.spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or("")
}

/// The claim's `resources.requests.storage` (zero when absent, as a missing map entry reads).
pub fn claim_request(pvc: &k8s::PersistentVolumeClaim) -> Quantity {
    pvc.spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| Quantity::parse(&q.0).ok())
        .unwrap_or(Quantity::ZERO)
}

pub fn volume_capacity(pv: &k8s::PersistentVolume) -> Quantity {
    pv.spec
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| Quantity::parse(&q.0).ok())
        .unwrap_or(Quantity::ZERO)
}

pub fn claim_access_modes(pvc: &k8s::PersistentVolumeClaim) -> &[String] {
    pvc.spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or(&[])
}

/// `IsVolumeBoundToClaim`: the PV's claimRef names the claim (and its UID, when set).
pub fn volume_bound_to_claim(pv: &k8s::PersistentVolume, pvc: &k8s::PersistentVolumeClaim) -> bool {
    let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) else {
        return false;
    };
    if r.name.as_deref().unwrap_or("") != name(&pvc.metadata)
        || r.namespace.as_deref().unwrap_or("") != pvc.metadata.namespace.as_deref().unwrap_or("")
    {
        return false;
    }
    let uid = r.uid.as_deref().unwrap_or("");
    uid.is_empty() || uid == pvc.metadata.uid.as_deref().unwrap_or("")
}

/// `CheckVolumeModeMismatches`: an unset mode is Filesystem.
pub fn volume_mode_mismatch(pvc: &k8s::PersistentVolumeClaim, pv: &k8s::PersistentVolume) -> bool {
    let claim = pvc.spec.as_ref().and_then(|s| s.volume_mode.as_deref());
    let volume = pv.spec.as_ref().and_then(|s| s.volume_mode.as_deref());
    claim.unwrap_or("Filesystem") != volume.unwrap_or("Filesystem")
}

/// `CheckAccessModes`: the PV offers every mode the claim asks for.
pub fn access_modes_match(pvc: &k8s::PersistentVolumeClaim, pv: &k8s::PersistentVolume) -> bool {
    let offered = pv
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or(&[]);
    claim_access_modes(pvc).iter().all(|m| offered.contains(m))
}

/// A PV's required node affinity, parsed; `None` when it has none (every node matches).
pub fn parse_volume_node_affinity(
    affinity: Option<&k8s::VolumeNodeAffinity>,
    strings: &Interner,
) -> Option<NodeSelector> {
    affinity?
        .required
        .as_ref()
        .map(|ns| NodeSelector::parse(ns, strings))
}

/// `CheckNodeAffinity`: the node is built from its labels only, so `matchFields` never match.
pub fn node_affinity_matches(affinity: Option<&NodeSelector>, labels: &Labels) -> bool {
    affinity.is_none_or(|a| a.matches(labels, Str::empty()))
}

/// `ephemeral.VolumeClaimName`.
pub fn ephemeral_claim_name(pod_name: &str, volume_name: &str) -> String {
    format!("{pod_name}-{volume_name}")
}

/// `ephemeral.VolumeIsForPod`: the claim is controlled by the pod.
pub fn ephemeral_claim_is_for_pod(
    pod: &Pod,
    pvc: &k8s::PersistentVolumeClaim,
) -> Result<(), String> {
    let ns = pvc.metadata.namespace.as_deref().unwrap_or("");
    let controlled = pvc
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .is_some_and(|o| o.uid == pod.uid.as_str());
    if ns != pod.namespace.as_str() || !controlled {
        return Err(format!(
            "PVC {ns}/{} was not created for pod {}/{} (pod is not owner)",
            name(&pvc.metadata),
            pod.namespace,
            pod.name
        ));
    }
    Ok(())
}

/// `MatchTopologySelectorTerms` with the terms parsed once: no terms match every node; a term
/// that is empty or does not parse matches none.
#[derive(Clone, Debug, Default)]
pub struct TopologyTerms(Option<Vec<Option<Selector>>>);

impl TopologyTerms {
    pub fn parse(terms: Option<&[k8s::TopologySelectorTerm]>, strings: &Interner) -> TopologyTerms {
        let Some(terms) = terms.filter(|t| !t.is_empty()) else {
            return TopologyTerms(None);
        };
        TopologyTerms(Some(
            terms
                .iter()
                .map(|t| {
                    let exprs = t.match_label_expressions.as_deref().unwrap_or(&[]);
                    if exprs.is_empty() {
                        return None;
                    }
                    let reqs: Result<Vec<Requirement>, String> = exprs
                        .iter()
                        .map(|e| Requirement::new(&e.key, Operator::In, &e.values, strings))
                        .collect();
                    reqs.ok().map(Selector::Requirements)
                })
                .collect(),
        ))
    }

    pub fn matches(&self, labels: &Labels) -> bool {
        match &self.0 {
            None => true,
            Some(terms) => terms.iter().flatten().any(|s| s.matches(labels)),
        }
    }
}

/// The in-tree plugins a CSINode says were migrated to CSI on its node.
pub fn migrated_on_node(
    csi_node: Option<&k8s_openapi::api::storage::v1::CSINode>,
    plugin: &str,
) -> bool {
    csi_node
        .and_then(|n| annotation(&n.metadata, MIGRATED_PLUGINS_ANNOTATION))
        .is_some_and(|a| a.split(',').any(|p| p == plugin))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_pairs(
            pairs
                .iter()
                .map(|(k, v)| (Str::new(k), Str::new(v)))
                .collect(),
        )
    }

    #[test]
    fn topology_terms_empty_list_matches_all_and_empty_term_none() {
        let node = labels(&[("zone", "a")]);
        assert!(TopologyTerms::parse(None, &Interner::new()).matches(&node));
        let terms: Vec<k8s::TopologySelectorTerm> = serde_json::from_value(json!([
            {"matchLabelExpressions": []},
            {"matchLabelExpressions": [{"key": "zone", "values": ["b", "c"]}]}
        ]))
        .unwrap();
        assert!(!TopologyTerms::parse(Some(&terms), &Interner::new()).matches(&node));
        assert!(
            TopologyTerms::parse(Some(&terms), &Interner::new()).matches(&labels(&[("zone", "c")]))
        );
    }

    #[test]
    fn claim_class_prefers_the_beta_annotation() {
        let pvc: k8s::PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": "c", "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
            "spec": {"storageClassName": "new"}
        }))
        .unwrap();
        assert_eq!(claim_class(&pvc), "old");
    }

    #[test]
    fn bound_to_claim_checks_the_uid_only_when_set() {
        let pvc: k8s::PersistentVolumeClaim = serde_json::from_value(json!({
            "metadata": {"name": "c", "namespace": "ns", "uid": "u1"}
        }))
        .unwrap();
        let pv = |uid: Option<&str>| -> k8s::PersistentVolume {
            serde_json::from_value(json!({"metadata": {"name": "pv"},
                "spec": {"claimRef": {"name": "c", "namespace": "ns", "uid": uid}}}))
            .unwrap()
        };
        assert!(volume_bound_to_claim(&pv(None), &pvc));
        assert!(volume_bound_to_claim(&pv(Some("u1")), &pvc));
        assert!(!volume_bound_to_claim(&pv(Some("u2")), &pvc));
    }
}
