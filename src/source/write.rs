//! Writing a dump back in the format `--snapshot` reads: a JSON `v1 List` (one object per line)
//! or multi-document YAML, gzip-compressed when the name ends in `.gz` (in members of about a
//! megabyte, compressed in parallel), led by the SnapshotInfo record. A live snapshot's pods are
//! written as their list streams in, never all in memory. Redaction drops what the scheduler
//! never reads but a snapshot should not leak.

use super::Dump;
use super::{SNAPSHOT_INFO_API_VERSION, SNAPSHOT_INFO_KIND};
use k8s_openapi::api::core::v1::{
    Container, EnvVar, EphemeralContainer, Pod, PodSpec, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use std::io::Write;

/// Annotations longer than this (in bytes) are dropped by redaction: they are payloads such as
/// kubectl's last-applied-configuration, never scheduling inputs.
pub const LARGE_ANNOTATION: usize = 256;
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// What an env var's value becomes.
pub const REDACTED: &str = "(redacted)";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

/// The format a file name asks for (`.yaml`/`.yml`, else JSON) and whether it is gzipped.
pub fn format_of(path: &str) -> (Format, bool) {
    let gz = path.ends_with(".gz");
    let base = path.strip_suffix(".gz").unwrap_or(path);
    let format = if base.ends_with(".yaml") || base.ends_with(".yml") {
        Format::Yaml
    } else {
        Format::Json
    };
    (format, gz)
}

fn redact_meta(m: &mut ObjectMeta) {
    m.managed_fields = None;
    if let Some(a) = m.annotations.as_mut() {
        a.retain(|k, v| k != LAST_APPLIED && v.len() <= LARGE_ANNOTATION);
        if a.is_empty() {
            m.annotations = None;
        }
    }
}

fn redact_env(env: Option<&mut Vec<EnvVar>>) {
    for var in env.into_iter().flatten() {
        if var.value.is_some() {
            var.value = Some(REDACTED.into());
        }
    }
}

fn redact_spec(spec: &mut PodSpec) {
    let containers = spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten());
    containers.for_each(|c: &mut Container| redact_env(c.env.as_mut()));
    spec.ephemeral_containers
        .iter_mut()
        .flatten()
        .for_each(|c: &mut EphemeralContainer| redact_env(c.env.as_mut()));
}

fn redact_template(t: Option<&mut PodTemplateSpec>) {
    if let Some(t) = t {
        if let Some(m) = t.metadata.as_mut() {
            redact_meta(m);
        }
        if let Some(s) = t.spec.as_mut() {
            redact_spec(s);
        }
    }
}

fn redact_value_meta(v: &mut serde_json::Value) {
    if let Some(meta) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("managedFields");
        if let Some(a) = meta.get_mut("annotations").and_then(|a| a.as_object_mut()) {
            a.retain(|k, v| {
                k != LAST_APPLIED && v.as_str().is_none_or(|s| s.len() <= LARGE_ANNOTATION)
            });
        }
    }
}

/// Drops a pod's env values, large annotations and managedFields.
pub fn redact_pod(pod: &mut Pod) {
    redact_meta(&mut pod.metadata);
    if let Some(spec) = pod.spec.as_mut() {
        redact_spec(spec);
    }
}

/// Drops env values, large annotations and managedFields everywhere.
pub fn redact(dump: &mut Dump) {
    macro_rules! metas {
        ($($field:ident),*) => {
            $(dump.$field.iter_mut().for_each(|o| redact_meta(&mut o.metadata));)*
        };
    }
    dump.pods.iter_mut().for_each(redact_pod);
    metas!(
        nodes,
        namespaces,
        priority_classes,
        pdbs,
        pvcs,
        pvs,
        storage_classes,
        csi_nodes,
        csi_drivers,
        csi_storage_capacities,
        volume_attachments,
        services,
        replication_controllers,
        replica_sets,
        stateful_sets,
        deployments,
        daemon_sets,
        jobs,
        cron_jobs,
        runtime_classes,
        leases,
        events,
        device_classes,
        resource_slices,
        resource_claims,
        resource_claim_templates
    );
    dump.lease_candidates.iter_mut().for_each(redact_value_meta);
    for rc in &mut dump.replication_controllers {
        redact_template(rc.spec.as_mut().and_then(|s| s.template.as_mut()));
    }
    for rs in &mut dump.replica_sets {
        redact_template(rs.spec.template.as_mut());
    }
    for ss in &mut dump.stateful_sets {
        redact_template(Some(&mut ss.spec.template));
    }
    for d in &mut dump.deployments {
        redact_template(Some(&mut d.spec.template));
    }
    for ds in &mut dump.daemon_sets {
        redact_template(Some(&mut ds.spec.template));
    }
    for job in &mut dump.jobs {
        redact_template(job.spec.as_mut().map(|s| &mut s.template));
    }
    for cj in &mut dump.cron_jobs {
        redact_template(cj.spec.job_template.spec.as_mut().map(|s| &mut s.template));
    }
    dump.meta.redacted = true;
}

/// How many objects of each kind a dump holds, for the summary line.
pub fn counts(dump: &Dump) -> Vec<(&'static str, usize)> {
    vec![
        ("nodes", dump.nodes.len()),
        ("pods", dump.pods.len()),
        ("namespaces", dump.namespaces.len()),
        ("priorityclasses", dump.priority_classes.len()),
        ("poddisruptionbudgets", dump.pdbs.len()),
        ("persistentvolumeclaims", dump.pvcs.len()),
        ("persistentvolumes", dump.pvs.len()),
        ("storageclasses", dump.storage_classes.len()),
        ("csinodes", dump.csi_nodes.len()),
        ("csidrivers", dump.csi_drivers.len()),
        ("csistoragecapacities", dump.csi_storage_capacities.len()),
        ("volumeattachments", dump.volume_attachments.len()),
        ("services", dump.services.len()),
        ("replicationcontrollers", dump.replication_controllers.len()),
        ("replicasets", dump.replica_sets.len()),
        ("statefulsets", dump.stateful_sets.len()),
        ("deployments", dump.deployments.len()),
        ("daemonsets", dump.daemon_sets.len()),
        ("jobs", dump.jobs.len()),
        ("cronjobs", dump.cron_jobs.len()),
        ("runtimeclasses", dump.runtime_classes.len()),
        ("leases", dump.leases.len()),
        ("leasecandidates", dump.lease_candidates.len()),
        ("events", dump.events.len()),
        ("deviceclasses", dump.device_classes.len()),
        ("resourceslices", dump.resource_slices.len()),
        ("resourceclaims", dump.resource_claims.len()),
        (
            "resourceclaimtemplates",
            dump.resource_claim_templates.len(),
        ),
    ]
}

/// Objects are written in pieces of about this many bytes; compressed, each is a gzip member of
/// its own, so pieces compress in parallel (a gzip file may hold several members: gzip, zcat and
/// `--snapshot` read them as one).
const PIECE: usize = 1 << 20;

/// Where a snapshot goes once written whole.
enum Destination {
    Stdout,
    /// A device or a pipe, written to directly.
    Device(std::fs::File),
    /// A regular file, replaced by the one written beside it.
    Replace {
        file: std::fs::File,
        temp: tempfile::TempPath,
        target: std::path::PathBuf,
    },
}

/// A snapshot being written as it is read: a live read's pods as their list streams in
/// (`pods`), then everything else (`finish`), which puts the pods in their place, after the
/// SnapshotInfo record, namespaces, priority classes and nodes. The pods wait in a file of their
/// own, so a list read again from its start rewinds them (`rewind`); a regular file is written
/// beside its destination and renamed over it, so a failed write leaves no half file.
pub struct SnapshotFile {
    format: Format,
    gz: bool,
    path: String,
    pods: std::io::BufWriter<std::fs::File>,
    destination: Destination,
}

impl SnapshotFile {
    /// Starts a snapshot for `path` (`-` for stdout), in the format and compression its name
    /// asks for. A destination that is a link is written through (the link stays a link); one
    /// that is not a regular file (a device, a pipe) is written to directly; a regular file is
    /// written beside its destination under a random name, created exclusively (never through a
    /// link someone planted), and renamed over it at the end.
    pub fn create(path: &str) -> Result<SnapshotFile, String> {
        let (format, gz) = format_of(path);
        let destination = if path == "-" {
            Destination::Stdout
        } else {
            open_beside(path)?
        };
        let pods = tempfile::tempfile().map_err(|e| fail(path, e))?;
        Ok(SnapshotFile {
            format,
            gz,
            path: path.to_string(),
            pods: std::io::BufWriter::new(pods),
            destination,
        })
    }

    /// Writes pods after those written, serialised (and compressed) in parallel.
    pub fn pods(&mut self, pods: &[Pod]) -> Result<(), String> {
        let (format, gz) = (self.format, self.gz);
        objects(format, gz, false, pods, &mut self.pods).map_err(|e| fail(&self.path, e))
    }

    /// Forgets the pods written: their list is read again from its start.
    pub fn rewind(&mut self) -> Result<(), String> {
        use std::io::{Seek, SeekFrom};
        let rewound = self.pods.flush().and_then(|()| {
            let file = self.pods.get_mut();
            file.set_len(0)?;
            file.seek(SeekFrom::Start(0)).map(|_| ())
        });
        rewound.map_err(|e| fail(&self.path, e))
    }

    /// Writes the snapshot: the SnapshotInfo record, then every object by kind, the pods
    /// written before and then the dump's; and puts it in its place.
    pub fn finish(self, dump: &Dump) -> Result<(), String> {
        let SnapshotFile {
            format,
            gz,
            path,
            pods,
            destination,
        } = self;
        let fail = |e: std::io::Error| fail(&path, e);
        let mut pods = pods.into_inner().map_err(|e| fail(e.into_error()))?;
        match destination {
            Destination::Stdout => {
                let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                write_all(format, gz, dump, &mut pods, &mut out).and_then(|()| out.flush())
            }
            Destination::Device(device) => {
                let mut out = std::io::BufWriter::new(device);
                write_all(format, gz, dump, &mut pods, &mut out).and_then(|()| out.flush())
            }
            Destination::Replace { file, temp, target } => {
                let mut out = std::io::BufWriter::new(file);
                write_all(format, gz, dump, &mut pods, &mut out)
                    .and_then(|()| out.into_inner().map_err(|e| e.into_error()))
                    .and_then(|file| file.sync_all())
                    .and_then(|()| temp.persist(&target).map_err(|e| e.error))
            }
        }
        .map_err(fail)
    }
}

/// Writes objects, serialised (and compressed) in parallel.
fn objects<T: Serialize + Sync>(
    format: Format,
    gz: bool,
    first: bool,
    items: &[T],
    out: &mut impl Write,
) -> std::io::Result<()> {
    use rayon::prelude::*;
    let texts: Vec<Vec<u8>> = items
        .par_iter()
        .enumerate()
        .map(|(i, o)| text(format, first && i == 0, o))
        .collect::<std::io::Result<_>>()?;
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    for t in texts {
        match pieces.last_mut() {
            Some(p) if p.len() < PIECE => p.extend_from_slice(&t),
            _ => pieces.push(t),
        }
    }
    put(gz, pieces, out)
}

/// Writes pieces of the snapshot, each a gzip member of its own when compressed.
fn put(gz: bool, pieces: Vec<Vec<u8>>, out: &mut impl Write) -> std::io::Result<()> {
    use rayon::prelude::*;
    let pieces = if gz {
        pieces
            .into_par_iter()
            .map(|p| {
                // The fastest level: a third of the default's CPU for files 1.8 times larger;
                // a snapshot is taken during an incident.
                let mut enc = flate2::write::GzEncoder::new(
                    Vec::with_capacity(p.len() / 4),
                    flate2::Compression::fast(),
                );
                enc.write_all(&p)?;
                enc.finish()
            })
            .collect::<std::io::Result<Vec<_>>>()?
    } else {
        pieces
    };
    pieces.iter().try_for_each(|p| out.write_all(p))
}

/// The whole snapshot: the SnapshotInfo record first, then every object by kind, `pods` (pods
/// written before, in this format) before the dump's.
fn write_all(
    format: Format,
    gz: bool,
    dump: &Dump,
    pods: &mut std::fs::File,
    out: &mut impl Write,
) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    let info = serde_json::json!({
        "apiVersion": SNAPSHOT_INFO_API_VERSION,
        "kind": SNAPSHOT_INFO_KIND,
        "metadata": {"name": "snapshot"},
        "spec": dump.meta,
    });
    if format == Format::Json {
        put(
            gz,
            vec![br#"{"apiVersion":"v1","kind":"List","items":["#.to_vec()],
            out,
        )?;
    }
    objects(format, gz, true, &[info], out)?;
    macro_rules! kinds {
        ($($field:ident),*) => {
            $(objects(format, gz, false, &dump.$field, out)?;)*
        };
    }
    kinds!(namespaces, priority_classes, nodes);
    pods.seek(SeekFrom::Start(0))?;
    std::io::copy(pods, out)?;
    kinds!(
        pods,
        pdbs,
        pvcs,
        pvs,
        storage_classes,
        csi_nodes,
        csi_drivers,
        csi_storage_capacities,
        volume_attachments,
        services,
        replication_controllers,
        replica_sets,
        stateful_sets,
        deployments,
        daemon_sets,
        jobs,
        cron_jobs,
        runtime_classes,
        device_classes,
        resource_slices,
        resource_claims,
        resource_claim_templates,
        leases,
        lease_candidates,
        events
    );
    if format == Format::Json {
        put(gz, vec![b"\n]}\n".to_vec()], out)?;
    }
    Ok(())
}

/// One object as the format writes it, after those before it.
fn text<T: Serialize>(format: Format, first: bool, o: &T) -> std::io::Result<Vec<u8>> {
    match format {
        Format::Json => {
            let mut out = if first {
                b"\n".to_vec()
            } else {
                b",\n".to_vec()
            };
            serde_json::to_writer(&mut out, o)?;
            Ok(out)
        }
        Format::Yaml => {
            let text = serde_saphyr::to_string(o).map_err(std::io::Error::other)?;
            let mut out = Vec::with_capacity(text.len() + 5);
            out.extend_from_slice(b"---\n");
            out.extend_from_slice(text.as_bytes());
            if !text.ends_with('\n') {
                out.push(b'\n');
            }
            Ok(out)
        }
    }
}

fn fail(path: &str, e: std::io::Error) -> String {
    if path == "-" {
        format!("cannot write the snapshot to stdout: {e}")
    } else {
        format!("cannot write the snapshot to {path}: {e}")
    }
}

/// Where a snapshot for `path` goes: a device, or a file beside it to rename over it.
fn open_beside(path: &str) -> Result<Destination, String> {
    let fail = |e: std::io::Error| fail(path, e);
    let mut target = std::path::PathBuf::from(path);
    // Through links (`latest.json -> 2026-11-23.json`), as far as the kernel would follow them.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&target) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&target).map_err(fail)?;
                target = match target.parent() {
                    Some(dir) => dir.join(link),
                    None => link,
                };
            }
            _ => break,
        }
    }
    if let Ok(m) = std::fs::metadata(&target)
        && !m.is_file()
    {
        if m.is_dir() {
            return Err(fail(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "a directory",
            )));
        }
        let device = std::fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .map_err(fail)?;
        return Ok(Destination::Device(device));
    }
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let (file, temp) = tempfile::Builder::new()
        .prefix(".kubectl-sched-snapshot.")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(fail)?
        .into_parts();
    Ok(Destination::Replace { file, temp, target })
}

/// Writes a dump to `path` (`-` for stdout), in the format and compression its name asks for.
pub fn write_path(dump: &Dump, path: &str) -> Result<(), String> {
    SnapshotFile::create(path)?.finish(dump)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::file;

    fn sample() -> Dump {
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "p", "namespace": "ns",
                "annotations": {LAST_APPLIED: "{}", "small": "x", "big": "y".repeat(LARGE_ANNOTATION + 1)},
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
            },
            "spec": {
                "containers": [{"name": "c", "env": [{"name": "PASSWORD", "value": "hunter2"}, {"name": "FROM", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}],
                "initContainers": [{"name": "i", "env": [{"name": "TOKEN", "value": "abc"}]}],
            },
        }))
        .unwrap();
        let rs: k8s_openapi::api::apps::v1::ReplicaSet = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "rs", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {"containers": [{"name": "c", "env": [{"name": "K", "value": "secret"}]}]}}},
        }))
        .unwrap();
        let mut dump = Dump {
            pods: vec![pod],
            replica_sets: vec![rs],
            lease_candidates: vec![
                serde_json::json!({"apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate", "metadata": {"name": "c", "namespace": "kube-system", "managedFields": []}}),
            ],
            ..Default::default()
        };
        dump.meta.server_version = Some("v1.34.1".into());
        dump.meta.incomplete = vec![
            "cannot list poddisruptionbudgets (403 Forbidden): preemption ignores PDBs".into(),
        ];
        dump
    }

    #[test]
    fn redaction() {
        let mut dump = sample();
        redact(&mut dump);
        let text = serde_json::to_string(&dump.pods[0]).unwrap()
            + &serde_json::to_string(&dump.replica_sets[0]).unwrap();
        for secret in [
            "hunter2",
            "abc",
            "secret",
            "managedFields",
            "last-applied",
            "yyyy",
        ] {
            assert!(!text.contains(secret), "{secret} left in {text}");
        }
        assert!(
            text.contains("\"small\":\"x\"") && text.contains("fieldPath"),
            "{text}"
        );
        assert!(
            dump.lease_candidates[0]["metadata"]
                .get("managedFields")
                .is_none()
        );
        assert!(dump.meta.redacted);
    }

    #[cfg(unix)]
    #[test]
    fn links_and_devices_are_written_through_never_replaced() {
        let dump = sample();
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("2026-11-23.json");
        let latest = dir.path().join("latest.json");
        std::os::unix::fs::symlink("2026-11-23.json", &latest).unwrap();
        for _ in 0..2 {
            write_path(&dump, latest.to_str().unwrap()).unwrap();
            let link = std::fs::symlink_metadata(&latest).unwrap();
            assert!(link.file_type().is_symlink());
            assert_eq!(file::load(real.to_str().unwrap()).unwrap().pods.len(), 1);
        }
        // No temporary file is left, and none has a name anyone could guess and plant.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        use std::os::unix::fs::FileTypeExt;
        write_path(&dump, "/dev/null").unwrap();
        assert!(
            std::fs::metadata("/dev/null")
                .unwrap()
                .file_type()
                .is_char_device()
        );
        assert!(write_path(&dump, dir.path().to_str().unwrap()).is_err());
    }

    #[test]
    fn round_trip_in_every_format() {
        let dump = sample();
        let dir = tempfile::tempdir().unwrap();
        for name in ["s.json", "s.yaml", "s.json.gz", "s.yml.gz", "s.out"] {
            let path = dir.path().join(name);
            write_path(&dump, path.to_str().unwrap()).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(
                bytes.starts_with(&[0x1f, 0x8b]),
                name.ends_with(".gz"),
                "{name}"
            );
            let back = file::load(path.to_str().unwrap()).unwrap();
            assert_eq!(back.pods.len(), 1, "{name}");
            assert_eq!(back.pods[0].key(), "ns/p", "{name}");
            assert_eq!(back.workloads.replica_sets.len(), 1, "{name}");
            assert_eq!(back.lease_candidates, dump.lease_candidates, "{name}");
            assert_eq!(back.meta, dump.meta, "{name}");
        }
        assert_eq!(format_of("x.YAML"), (Format::Json, false));
        assert_eq!(format_of("x.yaml.gz"), (Format::Yaml, true));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            5,
            "no temporary file left behind"
        );
    }
}
