//! A pod's volume as the scheduler and the planners read it: its source, reduced to what they
//! look at. A real API server gives every pod a projected ServiceAccount volume, so keeping each
//! as the API type (about 2 KB) was most of a live cluster's model. A volume's name is read only
//! to name an ephemeral volume's claim (and in-tree disks', kept as written): others drop it, and
//! the ServiceAccount volume's name, unique to its pod, is not stored at all.

use super::intern::{Interner, Str};
use k8s_openapi::api::core::v1 as k8s;

#[derive(Clone, Debug)]
pub enum Volume {
    /// `persistentVolumeClaim`, by the claim's name.
    Claim(Str),
    /// A generic `ephemeral` volume, by the volume's name: its claim is named after the pod and
    /// the volume.
    Ephemeral(Str),
    EmptyDir,
    /// A volume with an in-tree disk source (VolumeRestrictions compares them, NodeVolumeLimits
    /// translates them to CSI), or with more than one of the sources read here (the API server
    /// refuses it, a file may hold it): kept as written, so each reader sees what it saw, with
    /// the claim of its `persistentVolumeClaim` source interned.
    AsWritten {
        claim: Option<Str>,
        volume: Box<k8s::Volume>,
    },
    /// Any other source (projected, configMap, secret, hostPath, …): nothing of it is read.
    Other,
}

/// Whether the volume sets one of the in-tree disk sources the volume plugins read.
fn has_in_tree_source(v: &k8s::Volume) -> bool {
    v.gce_persistent_disk.is_some()
        || v.aws_elastic_block_store.is_some()
        || v.rbd.is_some()
        || v.iscsi.is_some()
        || v.cinder.is_some()
        || v.azure_disk.is_some()
        || v.azure_file.is_some()
        || v.vsphere_volume.is_some()
        || v.portworx_volume.is_some()
}

impl Volume {
    pub fn from_k8s(v: &k8s::Volume, strings: &Interner) -> Volume {
        let read = [
            v.persistent_volume_claim.is_some(),
            v.ephemeral.is_some(),
            v.empty_dir.is_some(),
        ];
        let claim = v
            .persistent_volume_claim
            .as_ref()
            .map(|c| strings.intern(&c.claim_name));
        if has_in_tree_source(v) || read.iter().filter(|&&r| r).count() > 1 {
            Volume::AsWritten {
                claim,
                volume: Box::new(v.clone()),
            }
        } else if let Some(c) = claim {
            Volume::Claim(c)
        } else if v.ephemeral.is_some() {
            Volume::Ephemeral(strings.intern(&v.name))
        } else if v.empty_dir.is_some() {
            Volume::EmptyDir
        } else {
            Volume::Other
        }
    }

    /// The claim of a `persistentVolumeClaim` volume.
    pub fn claim(&self) -> Option<Str> {
        match self {
            Volume::Claim(c) => Some(*c),
            Volume::AsWritten { claim, .. } => *claim,
            _ => None,
        }
    }

    /// The name of a generic ephemeral volume.
    pub fn ephemeral_name(&self) -> Option<&str> {
        match self {
            Volume::Ephemeral(name) => Some(name),
            Volume::AsWritten { volume, .. } => {
                volume.ephemeral.as_ref().map(|_| volume.name.as_str())
            }
            _ => None,
        }
    }

    pub fn has_empty_dir(&self) -> bool {
        match self {
            Volume::EmptyDir => true,
            Volume::AsWritten { volume, .. } => volume.empty_dir.is_some(),
            _ => false,
        }
    }

    /// The volume as written when it has an in-tree disk source (or several sources); a volume
    /// without is `None`, and has none of the in-tree sources.
    pub fn as_written(&self) -> Option<&k8s::Volume> {
        match self {
            Volume::AsWritten { volume, .. } => Some(volume),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn volume(v: serde_json::Value) -> Volume {
        Volume::from_k8s(&serde_json::from_value(v).unwrap(), &Interner::new())
    }

    /// What the API server gives every pod keeps nothing.
    #[test]
    fn service_account_volume_keeps_nothing() {
        let v = volume(
            json!({"name": "kube-api-access-x7k2p", "projected": {"sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}),
        );
        assert!(matches!(v, Volume::Other));
        assert_eq!(v.claim(), None);
        assert!(v.ephemeral_name().is_none() && !v.has_empty_dir() && v.as_written().is_none());
    }

    #[test]
    fn claim_ephemeral_and_empty_dir_are_compact() {
        let c = volume(json!({"name": "data",
            "persistentVolumeClaim": {"claimName": "db-0", "readOnly": true}}));
        assert!(matches!(c, Volume::Claim(_)));
        assert_eq!(c.claim().as_deref(), Some("db-0"));
        let e = volume(json!({"name": "scratch",
            "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}));
        assert_eq!(e.ephemeral_name(), Some("scratch"));
        assert!(e.claim().is_none() && !e.has_empty_dir());
        let d = volume(json!({"name": "tmp", "emptyDir": {"medium": "Memory"}}));
        assert!(d.has_empty_dir() && d.ephemeral_name().is_none() && d.claim().is_none());
        assert!([&c, &e, &d].iter().all(|v| v.as_written().is_none()));
    }

    /// Every in-tree source a volume plugin reads keeps the volume as written.
    #[test]
    fn in_tree_disks_are_kept_as_written() {
        for source in [
            json!({"gcePersistentDisk": {"pdName": "pd", "readOnly": true}}),
            json!({"awsElasticBlockStore": {"volumeID": "vol-1"}}),
            json!({"rbd": {"monitors": ["m"], "image": "i"}}),
            json!({"iscsi": {"targetPortal": "t", "iqn": "q", "lun": 0}}),
            json!({"cinder": {"volumeID": "c"}}),
            json!({"azureDisk": {"diskName": "d", "diskURI": "/d"}}),
            json!({"azureFile": {"secretName": "s", "shareName": "f"}}),
            json!({"vsphereVolume": {"volumePath": "/p"}}),
            json!({"portworxVolume": {"volumeID": "px"}}),
        ] {
            let mut v = source.clone();
            v["name"] = json!("disk");
            let kept = volume(v.clone());
            let written = kept.as_written().expect("kept as written");
            assert_eq!(serde_json::to_value(written).unwrap(), v, "{source}");
        }
    }

    /// A volume that sets several sources (a file can) answers as each reader read it.
    #[test]
    fn several_sources_answer_for_each() {
        let v = volume(json!({"name": "odd", "emptyDir": {},
            "persistentVolumeClaim": {"claimName": "c"}}));
        assert_eq!(v.claim().as_deref(), Some("c"));
        assert!(v.has_empty_dir() && v.ephemeral_name().is_none());
        assert!(v.as_written().is_some());
    }
}
