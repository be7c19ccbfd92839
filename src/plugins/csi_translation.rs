//! The parts of `k8s.io/csi-translation-lib` the scheduler uses: which in-tree volume plugin a
//! volume belongs to, its CSI driver, and what a migrated volume becomes (driver, volume handle,
//! node affinity with the driver's topology key).

use super::storage::{
    LABEL_FAILURE_DOMAIN_BETA_REGION, LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE, MULTI_ZONE_DELIMITER, label,
};
use k8s_openapi::api::core::v1 as k8s;
use std::collections::BTreeSet;

/// An in-tree volume plugin with a CSI replacement.
#[derive(Debug, PartialEq, Eq)]
pub struct InTree {
    /// The in-tree plugin name (`kubernetes.io/aws-ebs`, …).
    pub plugin: &'static str,
    /// The CSI driver that replaces it.
    pub driver: &'static str,
    /// The scheduler treats volumes of this plugin as CSI volumes when the node migrated it
    /// (`isCSIMigrationOnForPlugin` with the v1.34 default feature gates).
    pub migrated: bool,
    /// NodeVolumeLimits counts it as CSI only when the CSINode lists it as migrated; the other
    /// migrated plugins count whenever the node has a CSINode (`isCSIMigrationOn`).
    pub limits_need_annotation: bool,
}

pub const AWS_EBS: InTree = InTree {
    plugin: "kubernetes.io/aws-ebs",
    driver: "ebs.csi.aws.com",
    migrated: true,
    limits_need_annotation: false,
};
pub const GCE_PD: InTree = InTree {
    plugin: "kubernetes.io/gce-pd",
    driver: "pd.csi.storage.gke.io",
    migrated: true,
    limits_need_annotation: false,
};
const CINDER: InTree = InTree {
    plugin: "kubernetes.io/cinder",
    driver: "cinder.csi.openstack.org",
    migrated: true,
    limits_need_annotation: false,
};
const AZURE_DISK: InTree = InTree {
    plugin: "kubernetes.io/azure-disk",
    driver: "disk.csi.azure.com",
    migrated: true,
    limits_need_annotation: false,
};
const PORTWORX: InTree = InTree {
    plugin: "kubernetes.io/portworx-volume",
    driver: "pxd.portworx.com",
    migrated: true,
    limits_need_annotation: true,
};
const AZURE_FILE: InTree = InTree {
    plugin: "kubernetes.io/azure-file",
    driver: "file.csi.azure.com",
    migrated: false,
    limits_need_annotation: false,
};
const VSPHERE: InTree = InTree {
    plugin: "kubernetes.io/vsphere-volume",
    driver: "csi.vsphere.vmware.com",
    migrated: false,
    limits_need_annotation: false,
};

const ALL: [&InTree; 7] = [
    &GCE_PD,
    &AWS_EBS,
    &CINDER,
    &AZURE_DISK,
    &AZURE_FILE,
    &VSPHERE,
    &PORTWORX,
];

const GCE_PD_TOPOLOGY_KEY: &str = "topology.gke.io/zone";
const AWS_EBS_TOPOLOGY_KEY: &str = "topology.ebs.csi.aws.com/zone";
const CINDER_TOPOLOGY_KEY: &str = "topology.cinder.csi.openstack.org/zone";
const UNSPECIFIED: &str = "UNSPECIFIED";

/// `GetInTreePluginNameFromSpec` for a PV (`IsPVMigratable` when `Some`).
pub fn pv_plugin(pv: &k8s::PersistentVolume) -> Option<&'static InTree> {
    let s = pv.spec.as_ref()?;
    Some(if s.gce_persistent_disk.is_some() {
        &GCE_PD
    } else if s.aws_elastic_block_store.is_some() {
        &AWS_EBS
    } else if s.cinder.is_some() {
        &CINDER
    } else if s.azure_disk.is_some() {
        &AZURE_DISK
    } else if s.azure_file.is_some() {
        &AZURE_FILE
    } else if s.vsphere_volume.is_some() {
        &VSPHERE
    } else if s.portworx_volume.is_some() {
        &PORTWORX
    } else {
        return None;
    })
}

/// `GetInTreePluginNameFromSpec` for an inline volume (`IsInlineMigratable` when `Some`).
pub fn inline_plugin(v: &k8s::Volume) -> Option<&'static InTree> {
    Some(if v.gce_persistent_disk.is_some() {
        &GCE_PD
    } else if v.aws_elastic_block_store.is_some() {
        &AWS_EBS
    } else if v.cinder.is_some() {
        &CINDER
    } else if v.azure_disk.is_some() {
        &AZURE_DISK
    } else if v.azure_file.is_some() {
        &AZURE_FILE
    } else if v.vsphere_volume.is_some() {
        &VSPHERE
    } else if v.portworx_volume.is_some() {
        &PORTWORX
    } else {
        return None;
    })
}

/// `IsMigratableIntreePluginByName` and `GetCSINameFromInTreeName`.
pub fn by_plugin_name(name: &str) -> Option<&'static InTree> {
    ALL.into_iter().find(|p| p.plugin == name)
}

/// A PV as `TranslateInTreePVToCSI` leaves it, in the parts the scheduler reads.
#[derive(Clone, Debug)]
pub struct CsiVolume {
    pub driver: &'static str,
    pub handle: String,
    pub node_affinity: Option<k8s::VolumeNodeAffinity>,
}

fn not_translated(p: &InTree) -> String {
    format!(
        "in-tree plugin {} is not migrated by the scheduler",
        p.plugin
    )
}

/// `TranslateInTreePVToCSI` for the plugins the scheduler migrates.
pub fn translate_pv(pv: &k8s::PersistentVolume) -> Result<CsiVolume, String> {
    let name = pv.metadata.name.as_deref().unwrap_or("");
    let (spec, plugin) = match (pv.spec.as_ref(), pv_plugin(pv)) {
        (Some(s), Some(p)) => (s, p),
        _ => {
            return Err(format!(
                "could not find in-tree plugin translation logic for {name:?}"
            ));
        }
    };
    let mut affinity = spec.node_affinity.clone();
    let handle = if let Some(gce) = &spec.gce_persistent_disk {
        let zones_label = label(&pv.metadata, LABEL_FAILURE_DOMAIN_BETA_ZONE)
            .filter(|z| !z.is_empty())
            .or_else(|| label(&pv.metadata, LABEL_TOPOLOGY_ZONE))
            .unwrap_or("");
        let zones: Vec<&str> = zones_label.split(MULTI_ZONE_DELIMITER).collect();
        let handle = if zones.len() > 1 {
            let region = gce_region_from_zones(&zones)
                .map_err(|e| format!("failed to get region from zones: {e}"))?;
            format!(
                "projects/{UNSPECIFIED}/regions/{region}/disks/{}",
                gce.pd_name
            )
        } else {
            let zone = if zones[0].is_empty() {
                UNSPECIFIED
            } else {
                zones[0]
            };
            format!("projects/{UNSPECIFIED}/zones/{zone}/disks/{}", gce.pd_name)
        };
        translate_topology(pv, &mut affinity, GCE_PD_TOPOLOGY_KEY);
        handle
    } else if let Some(ebs) = &spec.aws_elastic_block_store {
        let handle = ebs_volume_id(&ebs.volume_id)
            .map_err(|e| format!("failed to translate Kubernetes ID to EBS Volume ID {e}"))?;
        translate_topology(pv, &mut affinity, AWS_EBS_TOPOLOGY_KEY);
        handle
    } else if let Some(cinder) = &spec.cinder {
        translate_topology(pv, &mut affinity, CINDER_TOPOLOGY_KEY);
        cinder.volume_id.clone()
    } else if let Some(disk) = &spec.azure_disk {
        azure_disk_kind_supported(disk.kind.as_deref())?;
        disk.disk_uri.clone()
    } else if let Some(px) = &spec.portworx_volume {
        px.volume_id.clone()
    } else {
        return Err(not_translated(plugin));
    };
    Ok(CsiVolume {
        driver: plugin.driver,
        handle,
        node_affinity: affinity,
    })
}

/// `TranslateInTreeInlineVolumeToCSI` for the plugins the scheduler migrates: driver and handle.
pub fn translate_inline(v: &k8s::Volume) -> Result<(&'static str, String), String> {
    let plugin = inline_plugin(v).ok_or_else(|| {
        format!(
            "could not find in-tree plugin translation logic for {:?}",
            v.name
        )
    })?;
    let handle = if let Some(gce) = &v.gce_persistent_disk {
        format!(
            "projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{}",
            gce.pd_name
        )
    } else if let Some(ebs) = &v.aws_elastic_block_store {
        ebs_volume_id(&ebs.volume_id)
            .map_err(|e| format!("failed to translate Kubernetes ID to EBS Volume ID {e}"))?
    } else if let Some(cinder) = &v.cinder {
        cinder.volume_id.clone()
    } else if let Some(disk) = &v.azure_disk {
        azure_disk_kind_supported(disk.kind.as_deref())?;
        disk.disk_uri.clone()
    } else if let Some(px) = &v.portworx_volume {
        px.volume_id.clone()
    } else {
        return Err(not_translated(plugin));
    };
    Ok((plugin.driver, handle))
}

fn azure_disk_kind_supported(kind: Option<&str>) -> Result<(), String> {
    match kind {
        Some(k) if !k.eq_ignore_ascii_case("Managed") => {
            Err(format!("kind({k}) is not supported in csi migration"))
        }
        _ => Ok(()),
    }
}

/// `KubernetesVolumeIDToEBSVolumeID`: `aws://<zone>/<vol-id>` becomes `<vol-id>`.
fn ebs_volume_id(id: &str) -> Result<String, String> {
    let Some(rest) = id.strip_prefix("aws://") else {
        return Ok(id.to_string());
    };
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    let aws_id = path.trim_matches('/');
    if !aws_id.starts_with("vol-") || aws_id.contains('/') {
        return Err(format!("Invalid format for AWS volume ({id})"));
    }
    Ok(aws_id.to_string())
}

/// `gceGetRegionFromZones`: every zone is `<locale>-<region>-<zone>` of one region.
fn gce_region_from_zones(zones: &[&str]) -> Result<String, String> {
    let mut regions = BTreeSet::new();
    for zone in zones {
        let parts: Vec<&str> = zone.split('-').collect();
        if parts.len() != 3 {
            return Err(format!(
                "zone in unexpected format, expected: {{locale}}-{{region}}-{{zone}}, got: {zone}"
            ));
        }
        regions.insert(parts[..2].join("-"));
    }
    if regions.len() != 1 {
        let set: Vec<String> = regions.iter().map(|r| format!("{r}:{{}}")).collect();
        return Err(format!(
            "multiple or no regions gotten from zones, got: map[{}]",
            set.join(" ")
        ));
    }
    Ok(regions.into_iter().next().unwrap_or_default())
}

fn expressions(
    affinity: &mut Option<k8s::VolumeNodeAffinity>,
) -> impl Iterator<Item = &mut k8s::NodeSelectorRequirement> {
    affinity
        .iter_mut()
        .filter_map(|a| a.required.as_mut())
        .flat_map(|r| r.node_selector_terms.iter_mut())
        .flat_map(|t| t.match_expressions.iter_mut().flatten())
}

fn has_key(affinity: &Option<k8s::VolumeNodeAffinity>, key: &str) -> bool {
    affinity
        .iter()
        .filter_map(|a| a.required.as_ref())
        .flat_map(|r| r.node_selector_terms.iter())
        .flat_map(|t| t.match_expressions.iter().flatten())
        .any(|e| e.key == key)
}

fn has_values(affinity: &Option<k8s::VolumeNodeAffinity>, key: &str) -> bool {
    affinity
        .iter()
        .filter_map(|a| a.required.as_ref())
        .flat_map(|r| r.node_selector_terms.iter())
        .flat_map(|t| t.match_expressions.iter().flatten())
        .any(|e| e.key == key && e.values.as_ref().is_some_and(|v| !v.is_empty()))
}

fn replace_key(affinity: &mut Option<k8s::VolumeNodeAffinity>, old: &str, new: &str) {
    for e in expressions(affinity).filter(|e| e.key == old) {
        e.key = new.to_string();
    }
}

/// `translateTopologyFromInTreeToCSI`: the zone requirement (from the node affinity, else from the
/// PV's zone label) moves to the driver's key; a beta region requirement to the GA key.
fn translate_topology(
    pv: &k8s::PersistentVolume,
    affinity: &mut Option<k8s::VolumeNodeAffinity>,
    csi_key: &str,
) {
    let (zone_label, region_label) = if has_key(affinity, LABEL_TOPOLOGY_ZONE) {
        (LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION)
    } else if has_key(affinity, LABEL_FAILURE_DOMAIN_BETA_ZONE) {
        (
            LABEL_FAILURE_DOMAIN_BETA_ZONE,
            LABEL_FAILURE_DOMAIN_BETA_REGION,
        )
    } else if label(&pv.metadata, LABEL_TOPOLOGY_ZONE).is_some() {
        (LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION)
    } else if label(&pv.metadata, LABEL_FAILURE_DOMAIN_BETA_ZONE).is_some() {
        (
            LABEL_FAILURE_DOMAIN_BETA_ZONE,
            LABEL_FAILURE_DOMAIN_BETA_REGION,
        )
    } else {
        (LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION)
    };
    if has_values(affinity, zone_label) {
        replace_key(affinity, zone_label, csi_key);
    } else if let Some(value) = label(&pv.metadata, zone_label) {
        add_topology(affinity, csi_key, value.split(MULTI_ZONE_DELIMITER));
    }
    if region_label == LABEL_FAILURE_DOMAIN_BETA_REGION && has_values(affinity, region_label) {
        replace_key(affinity, region_label, LABEL_TOPOLOGY_REGION);
    }
}

/// `addTopology`: `key In zones` added to every term (one term made if there is none).
fn add_topology<'a>(
    affinity: &mut Option<k8s::VolumeNodeAffinity>,
    key: &str,
    zones: impl Iterator<Item = &'a str>,
) {
    let zones: BTreeSet<&str> = zones.map(str::trim).filter(|z| !z.is_empty()).collect();
    if zones.is_empty() {
        return;
    }
    let required = affinity
        .get_or_insert_with(Default::default)
        .required
        .get_or_insert_with(Default::default);
    if required.node_selector_terms.is_empty() {
        required.node_selector_terms.push(Default::default());
    }
    let requirement = k8s::NodeSelectorRequirement {
        key: key.to_string(),
        operator: "In".to_string(),
        values: Some(zones.iter().map(|z| z.to_string()).collect()),
    };
    for term in &mut required.node_selector_terms {
        term.match_expressions
            .get_or_insert_with(Vec::new)
            .push(requirement.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pv(v: serde_json::Value) -> k8s::PersistentVolume {
        serde_json::from_value(v).unwrap()
    }

    fn keys(a: &Option<k8s::VolumeNodeAffinity>) -> Vec<(String, Vec<String>)> {
        a.iter()
            .filter_map(|a| a.required.as_ref())
            .flat_map(|r| r.node_selector_terms.iter())
            .flat_map(|t| t.match_expressions.iter().flatten())
            .map(|e| (e.key.clone(), e.values.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn gce_pd_zone_label_becomes_driver_topology() {
        let v = pv(json!({"metadata": {"name": "pd", "labels": {
                "failure-domain.beta.kubernetes.io/zone": "us-central1-a__us-central1-b"}},
            "spec": {"gcePersistentDisk": {"pdName": "disk"}}}));
        let t = translate_pv(&v).unwrap();
        assert_eq!(t.driver, "pd.csi.storage.gke.io");
        assert_eq!(
            t.handle,
            "projects/UNSPECIFIED/regions/us-central1/disks/disk"
        );
        assert_eq!(
            keys(&t.node_affinity),
            vec![(
                "topology.gke.io/zone".to_string(),
                vec!["us-central1-a".to_string(), "us-central1-b".to_string()]
            )]
        );
    }

    #[test]
    fn gce_pd_zones_of_two_regions_do_not_translate() {
        let v = pv(json!({"metadata": {"name": "pd", "labels": {
                "topology.kubernetes.io/zone": "us-central1-a__europe-west1-b"}},
            "spec": {"gcePersistentDisk": {"pdName": "disk"}}}));
        assert_eq!(
            translate_pv(&v).unwrap_err(),
            "failed to get region from zones: multiple or no regions gotten from zones, got: map[europe-west1:{} us-central1:{}]"
        );
    }

    #[test]
    fn ebs_affinity_keys_are_replaced() {
        let v = pv(json!({"metadata": {"name": "ebs"},
            "spec": {"awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-123"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "failure-domain.beta.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]},
                    {"key": "failure-domain.beta.kubernetes.io/region", "operator": "In", "values": ["us-east-1"]}]}]}}}}));
        let t = translate_pv(&v).unwrap();
        assert_eq!(t.handle, "vol-123");
        let k: Vec<String> = keys(&t.node_affinity).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            k,
            [
                "topology.ebs.csi.aws.com/zone",
                "topology.kubernetes.io/region"
            ]
        );
        assert!(ebs_volume_id("aws://us-east-1a/disk-1").is_err());
    }

    #[test]
    fn azure_disk_needs_managed_kind() {
        let v: k8s::Volume = serde_json::from_value(json!({"name": "d",
            "azureDisk": {"diskName": "d", "diskURI": "/subs/x", "kind": "Dedicated"}}))
        .unwrap();
        assert_eq!(
            translate_inline(&v).unwrap_err(),
            "kind(Dedicated) is not supported in csi migration"
        );
    }
}
