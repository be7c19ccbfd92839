//! Conversion between k8s-pb's `Pod` (what the API server sends as `application/vnd.kubernetes.protobuf`)
//! and k8s-openapi's `Pod` (what the model reads).
//!
//! Every type reachable from `Pod` is converted by `convert!`, which destructures the source struct
//! exhaustively and builds the target with a struct literal, so a field added to either crate, or one
//! this table misses, is a compile error.
//!
//! The result is what the API server's JSON gives for the same object, not merely an equivalent value:
//! - an empty list or map is `None` (JSON omits them);
//! - a Go value field with `omitempty` (a `string`, `bool` or integer that is not a pointer) is written
//!   by the server's protobuf even when zero, but omitted from its JSON: those fields (the `zero` groups
//!   below) turn a zero into `None`, and going back write the zero again, as the server does;
//! - a `metav1.Time` that is not a pointer is written as an empty message when unset (JSON `null`): it
//!   is in the `zero` groups too;
//! - Go's embedded structs (`LocalObjectReference` in the config map and secret references,
//!   `ProbeHandler` in `Probe`, `VolumeSource` in `Volume`, `EphemeralContainerCommon` in
//!   `EphemeralContainer`) are a nested message in protobuf and flattened in JSON (`embedded` groups).
//!
//! k8s-pb 0.9 is Kubernetes 1.35 and k8s-openapi's `latest` is 1.37, so some fields exist on one side
//! only: they are `None` coming from protobuf and dropped going to it.
//! - k8s-openapi only: `ClusterTrustBundleProjection.user`, `ConfigMapVolumeSource.default_user`,
//!   `DownwardAPIVolumeFile.user`, `DownwardAPIVolumeSource.default_user`, `EmptyDirVolumeSource.mode`,
//!   `GRPCAction.mode`, `HTTPGetAction.protocol`, `KeyToPath.user`, `PodCertificateProjection.user`,
//!   `PodSpec.eviction_responders`, `PodSpec.scheduling_group`,
//!   `PodStatus.node_allocatable_resource_claim_statuses`, `PodStatus.volume_health`,
//!   `ProjectedVolumeSource.default_user`, `ResourceHealth.message`, `SecretVolumeSource.default_user`,
//!   `ServiceAccountTokenProjection.user`, `VolumeMount.bind_mount_options`,
//!   `VolumeMountStatus.volume_status`.
//! - k8s-pb only: `PodSpec.workload_ref`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as core_v1;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta_v1;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use k8s_pb::api::core::v1 as pb_core_v1;
use k8s_pb::apimachinery::pkg::api::resource as pb_resource;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta_v1;
use k8s_pb::apimachinery::pkg::util::intstr as pb_intstr;

/// Converts a pod the API server sent as protobuf. `managed_fields: false` drops
/// `metadata.managedFields` unconverted, as kube-scheduler's informer does.
///
/// Fails only on what k8s-openapi cannot hold (a time out of range, a `fieldsV1` that is not JSON),
/// naming the field.
pub fn from_protobuf(
    mut pod: pb_core_v1::Pod,
    managed_fields: bool,
) -> Result<core_v1::Pod, String> {
    if !managed_fields && let Some(metadata) = pod.metadata.as_mut() {
        metadata.managed_fields = Vec::new();
    }
    let mut converted = core_v1::Pod::default();
    Convert::fill(&mut pod, &mut converted)
        .map_err(|failure| format!("{}: {}", failure.path, failure.reason))?;
    Ok(converted)
}

/// The reverse of [`from_protobuf`], as the API server would write the pod: the fake API server of the
/// tests serves pods with it, and the round-trip tests check [`from_protobuf`] against it.
pub fn to_protobuf(pod: core_v1::Pod) -> pb_core_v1::Pod {
    pod.into_pb()
}

/// Why a field could not be converted, and where (`spec.containers[0].name`).
#[derive(Debug)]
struct Failure {
    path: String,
    reason: String,
}

/// Boxed, so that the success path carries one word, not a `Failure`.
type Outcome = Result<(), Box<Failure>>;

impl Failure {
    #[cold]
    fn new(reason: String) -> Box<Self> {
        Box::new(Failure {
            path: String::new(),
            reason,
        })
    }

    #[cold]
    fn at(mut self: Box<Self>, step: &str) -> Box<Self> {
        self.path = match self.path.as_bytes().first() {
            None | Some(b'[') => format!("{step}{}", self.path),
            Some(_) => format!("{step}.{}", self.path),
        };
        self
    }
}

/// A k8s-openapi value (`Self`) and the shape of its k8s-pb counterpart `P`.
///
/// k8s-pb's messages are large and unboxed (a `Volume` is 3 KB), so converting by value moved them
/// again at every level of nesting, through each `Result` and struct literal: `fill` takes the
/// message by reference, takes its strings and lists out of it, and writes into a target already in
/// place, so nothing large is moved. A fresh target holds what an absent or empty source converts to
/// (`None`, empty, the Go zero), which is why an absent source leaves it as it is.
trait Convert<P>: Sized {
    /// What an absent or zero `P` converts to; the target `fill` writes into.
    fn fresh() -> Self;
    fn fill(pb: &mut P, out: &mut Self) -> Outcome;
    fn into_pb(self) -> P;

    fn fill_vec(pb: &mut Vec<P>, out: &mut Vec<Self>) -> Outcome {
        out.reserve_exact(pb.len());
        for (index, item) in pb.iter_mut().enumerate() {
            let slot = out.len();
            out.push(Self::fresh());
            Self::fill(item, &mut out[slot])
                .map_err(|failure| failure.at(&format!("[{index}]")))?;
        }
        Ok(())
    }

    fn fill_map(pb: &mut BTreeMap<String, P>, out: &mut BTreeMap<String, Self>) -> Outcome {
        *out = std::mem::take(pb)
            .into_iter()
            .map(|(key, mut value)| {
                let mut converted = Self::fresh();
                match Self::fill(&mut value, &mut converted) {
                    Ok(()) => Ok((key, converted)),
                    Err(failure) => Err(failure.at(&format!("[{key:?}]"))),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(())
    }
}

impl<O: Convert<P>, P> Convert<Option<P>> for Option<O> {
    fn fresh() -> Self {
        None
    }
    fn fill(pb: &mut Option<P>, out: &mut Self) -> Outcome {
        match pb {
            Some(pb) => O::fill(pb, out.insert(O::fresh())),
            None => Ok(()),
        }
    }
    fn into_pb(self) -> Option<P> {
        self.map(O::into_pb)
    }
}

impl<O: Convert<P>, P> Convert<Vec<P>> for Vec<O> {
    fn fresh() -> Self {
        Vec::new()
    }
    fn fill(pb: &mut Vec<P>, out: &mut Self) -> Outcome {
        O::fill_vec(pb, out)
    }
    fn into_pb(self) -> Vec<P> {
        self.into_iter().map(O::into_pb).collect()
    }
}

/// JSON omits an empty list: protobuf cannot tell it from an absent one.
impl<O: Convert<P>, P> Convert<Vec<P>> for Option<Vec<O>> {
    fn fresh() -> Self {
        None
    }
    fn fill(pb: &mut Vec<P>, out: &mut Self) -> Outcome {
        if pb.is_empty() {
            Ok(())
        } else {
            O::fill_vec(pb, out.insert(Vec::new()))
        }
    }
    fn into_pb(self) -> Vec<P> {
        self.unwrap_or_default().into_pb()
    }
}

impl<O: Convert<P>, P> Convert<BTreeMap<String, P>> for Option<BTreeMap<String, O>> {
    fn fresh() -> Self {
        None
    }
    fn fill(pb: &mut BTreeMap<String, P>, out: &mut Self) -> Outcome {
        if pb.is_empty() {
            Ok(())
        } else {
            O::fill_map(pb, out.insert(BTreeMap::new()))
        }
    }
    fn into_pb(self) -> BTreeMap<String, P> {
        self.unwrap_or_default()
            .into_iter()
            .map(|(key, value)| (key, value.into_pb()))
            .collect()
    }
}

/// A field k8s-openapi requires and protobuf may omit: absent is the default, as in Go.
macro_rules! required {
    ($($openapi:ty => $pb:ty),* $(,)?) => {$(
        impl Convert<Option<$pb>> for $openapi {
            fn fresh() -> Self {
                Self::default()
            }
            fn fill(pb: &mut Option<$pb>, out: &mut Self) -> Outcome {
                match pb {
                    Some(pb) => <Self as Convert<$pb>>::fill(pb, out),
                    None => Ok(()),
                }
            }
            fn into_pb(self) -> Option<$pb> {
                Some(self.into_pb())
            }
        }
    )*};
}

/// The same type on both sides: taken out of the source whole, lists and maps too.
macro_rules! scalars {
    ($($scalar:ty),*) => {$(
        impl Convert<$scalar> for $scalar {
            fn fresh() -> Self {
                Self::default()
            }
            fn fill(pb: &mut $scalar, out: &mut Self) -> Outcome {
                *out = std::mem::take(pb);
                Ok(())
            }
            fn into_pb(self) -> $scalar {
                self
            }
            fn fill_vec(pb: &mut Vec<$scalar>, out: &mut Vec<Self>) -> Outcome {
                *out = std::mem::take(pb);
                Ok(())
            }
            fn fill_map(
                pb: &mut BTreeMap<String, $scalar>,
                out: &mut BTreeMap<String, Self>,
            ) -> Outcome {
                *out = std::mem::take(pb);
                Ok(())
            }
        }
        required!($scalar => $scalar);
    )*};
}

scalars!(String, bool, i32, i64);

/// A Go value field with `omitempty`: the server's protobuf holds its zero, its JSON omits it.
fn zero_is_absent<O: Convert<P>, P: Default + PartialEq>(
    pb: &mut Option<P>,
    out: &mut Option<O>,
) -> Outcome {
    match pb {
        Some(pb) if *pb != P::default() => O::fill(pb, out.insert(O::fresh())),
        _ => Ok(()),
    }
}

fn zero_when_absent<O: Convert<P>, P: Default>(value: Option<O>) -> Option<P> {
    Some(value.map_or_else(P::default, O::into_pb))
}

impl Convert<pb_resource::Quantity> for Quantity {
    fn fresh() -> Self {
        Self::default()
    }
    fn fill(pb: &mut pb_resource::Quantity, out: &mut Self) -> Outcome {
        out.0 = pb.string.take().unwrap_or_default();
        Ok(())
    }
    fn into_pb(self) -> pb_resource::Quantity {
        pb_resource::Quantity {
            string: Some(self.0),
        }
    }
}

/// The API server writes whole seconds; nanoseconds, if a client sent some, are kept.
impl Convert<pb_meta_v1::Time> for meta_v1::Time {
    fn fresh() -> Self {
        meta_v1::Time(Timestamp::UNIX_EPOCH)
    }
    fn fill(pb: &mut pb_meta_v1::Time, out: &mut Self) -> Outcome {
        let pb_meta_v1::Time { seconds, nanos } = *pb;
        out.0 = Timestamp::new(seconds.unwrap_or_default(), nanos.unwrap_or_default())
            .map_err(|error| Failure::new(format!("time out of range: {error}")))?;
        Ok(())
    }
    fn into_pb(self) -> pb_meta_v1::Time {
        pb_meta_v1::Time {
            seconds: Some(self.0.as_second()),
            nanos: Some(self.0.subsec_nanosecond()),
        }
    }
}

impl Convert<pb_meta_v1::FieldsV1> for meta_v1::FieldsV1 {
    fn fresh() -> Self {
        Self::default()
    }
    fn fill(pb: &mut pb_meta_v1::FieldsV1, out: &mut Self) -> Outcome {
        let pb_meta_v1::FieldsV1 { raw } = pb;
        out.0 = serde_json::from_slice(raw.as_deref().unwrap_or_default())
            .map_err(|error| Failure::new(format!("not JSON: {error}")))?;
        Ok(())
    }
    fn into_pb(self) -> pb_meta_v1::FieldsV1 {
        pb_meta_v1::FieldsV1 {
            raw: Some(self.0.to_string().into_bytes()),
        }
    }
}

/// Protobuf's `type` is 0 for an integer, 1 for a string; the server writes all three fields.
impl Convert<pb_intstr::IntOrString> for IntOrString {
    fn fresh() -> Self {
        Self::default()
    }
    fn fill(pb: &mut pb_intstr::IntOrString, out: &mut Self) -> Outcome {
        let pb_intstr::IntOrString {
            r#type,
            int_val,
            str_val,
        } = pb;
        *out = match r#type.unwrap_or_default() {
            0 => IntOrString::Int(int_val.unwrap_or_default()),
            1 => IntOrString::String(str_val.take().unwrap_or_default()),
            other => return Err(Failure::new(format!("IntOrString of unknown type {other}"))),
        };
        Ok(())
    }
    fn into_pb(self) -> pb_intstr::IntOrString {
        let (r#type, int_val, str_val) = match self {
            IntOrString::Int(int) => (0, int, String::new()),
            IntOrString::String(string) => (1, 0, string),
        };
        pb_intstr::IntOrString {
            r#type: Some(r#type),
            int_val: Some(int_val),
            str_val: Some(str_val),
        }
    }
}

required!(IntOrString => pb_intstr::IntOrString);

macro_rules! fill_field {
    (zero $field:ident, $out:expr) => {
        zero_is_absent($field, &mut $out.$field)
            .map_err(|failure| failure.at(stringify!($field)))?
    };
    ($field:ident, $out:expr) => {
        Convert::fill($field, &mut $out.$field).map_err(|failure| failure.at(stringify!($field)))?
    };
}

macro_rules! field_into_pb {
    (zero $field:ident) => {
        zero_when_absent($field)
    };
    ($field:ident) => {
        $field.into_pb()
    };
}

/// One line per type: `openapi = pb { fields; zero { .. }; renamed { openapi: pb [as zero] };
/// embedded { pb_field: PbType { fields; zero { .. } } }; openapi_only { .. }; pb_only { .. } }`.
///
/// Both sides are destructured without `..`, so a field missing from a line is a compile error; the
/// target's destructuring binds nothing, it only checks that the line names all its fields.
macro_rules! convert {
    ($(
        $omod:ident :: $oty:ident = $pmod:ident :: $pty:ident {
            $($f:ident),* $(,)?
            $(; zero { $($z:ident),* $(,)? })?
            $(; renamed { $($ro:ident : $rp:ident $(as $rmode:ident)?),* $(,)? })?
            $(; embedded { $($e:ident : $emod:ident :: $ety:ident {
                $($ef:ident),* $(,)? $(; zero { $($ez:ident),* $(,)? })?
            }),* $(,)? })?
            $(; openapi_only { $($oo:ident),* $(,)? })?
            $(; pb_only { $($po:ident),* $(,)? })?
        }
    )*) => {$(
        impl Convert<$pmod::$pty> for $omod::$oty {
            fn fresh() -> Self {
                Self::default()
            }

            fn fill(pb: &mut $pmod::$pty, out: &mut Self) -> Outcome {
                let $pmod::$pty {
                    $($f,)*
                    $($($z,)*)?
                    $($($rp: $ro,)*)?
                    $($($e,)*)?
                    $($($po: _,)*)?
                } = pb;
                let $omod::$oty {
                    $($f: _,)*
                    $($($z: _,)*)?
                    $($($ro: _,)*)?
                    $($($($ef: _,)* $($($ez: _,)*)?)*)?
                    $($($oo: _,)*)?
                } = *out;
                $($(
                    let $emod::$ety { $($ef,)* $($($ez,)*)? } =
                        $e.get_or_insert_with(Default::default);
                )*)?
                $(fill_field!($f, out);)*
                $($(fill_field!(zero $z, out);)*)?
                $($(fill_field!($($rmode)? $ro, out);)*)?
                $($(
                    $(fill_field!($ef, out);)*
                    $($(fill_field!(zero $ez, out);)*)?
                )*)?
                Ok(())
            }

            fn into_pb(self) -> $pmod::$pty {
                let $omod::$oty {
                    $($f,)*
                    $($($z,)*)?
                    $($($ro,)*)?
                    $($($($ef,)* $($($ez,)*)?)*)?
                    $($($oo: _,)*)?
                } = self;
                $pmod::$pty {
                    $($f: field_into_pb!($f),)*
                    $($($z: field_into_pb!(zero $z),)*)?
                    $($($rp: field_into_pb!($($rmode)? $ro),)*)?
                    $($(
                        $e: Some($emod::$ety {
                            $($ef: field_into_pb!($ef),)*
                            $($($ez: field_into_pb!(zero $ez),)*)?
                        }),
                    )*)?
                    $($($po: Default::default(),)*)?
                }
            }
        }

        required!($omod::$oty => $pmod::$pty);
    )*};
}

convert! {
    core_v1::AWSElasticBlockStoreVolumeSource = pb_core_v1::AwsElasticBlockStoreVolumeSource {
        volume_id;
        zero { fs_type, partition, read_only }
    }
    core_v1::Affinity = pb_core_v1::Affinity { node_affinity, pod_affinity, pod_anti_affinity }
    core_v1::AppArmorProfile = pb_core_v1::AppArmorProfile {
        localhost_profile;
        renamed { type_: r#type }
    }
    core_v1::AzureDiskVolumeSource = pb_core_v1::AzureDiskVolumeSource {
        caching_mode, disk_name, disk_uri, fs_type, kind, read_only
    }
    core_v1::AzureFileVolumeSource = pb_core_v1::AzureFileVolumeSource {
        secret_name, share_name;
        zero { read_only }
    }
    core_v1::CSIVolumeSource = pb_core_v1::CSIVolumeSource {
        driver, fs_type, node_publish_secret_ref, read_only, volume_attributes
    }
    core_v1::Capabilities = pb_core_v1::Capabilities { add, drop }
    core_v1::CephFSVolumeSource = pb_core_v1::CephFsVolumeSource {
        monitors, secret_ref;
        zero { path, read_only, secret_file, user }
    }
    core_v1::CinderVolumeSource = pb_core_v1::CinderVolumeSource {
        secret_ref, volume_id;
        zero { fs_type, read_only }
    }
    core_v1::ClusterTrustBundleProjection = pb_core_v1::ClusterTrustBundleProjection {
        label_selector, name, optional, path, signer_name;
        openapi_only { user }
    }
    core_v1::ConfigMapEnvSource = pb_core_v1::ConfigMapEnvSource {
        optional;
        embedded { local_object_reference: pb_core_v1::LocalObjectReference { name } }
    }
    core_v1::ConfigMapKeySelector = pb_core_v1::ConfigMapKeySelector {
        key, optional;
        embedded { local_object_reference: pb_core_v1::LocalObjectReference { name } }
    }
    core_v1::ConfigMapProjection = pb_core_v1::ConfigMapProjection {
        items, optional;
        embedded { local_object_reference: pb_core_v1::LocalObjectReference { name } }
    }
    core_v1::ConfigMapVolumeSource = pb_core_v1::ConfigMapVolumeSource {
        default_mode, items, optional;
        embedded { local_object_reference: pb_core_v1::LocalObjectReference { name } };
        openapi_only { default_user }
    }
    core_v1::Container = pb_core_v1::Container {
        args, command, env, env_from, lifecycle, liveness_probe, name, ports, readiness_probe,
            resize_policy, resources, restart_policy, restart_policy_rules, security_context,
            startup_probe, volume_devices, volume_mounts;
        zero { image, image_pull_policy, stdin, stdin_once, termination_message_path,
            termination_message_policy, tty, working_dir }
    }
    core_v1::ContainerExtendedResourceRequest = pb_core_v1::ContainerExtendedResourceRequest {
        container_name, request_name, resource_name
    }
    core_v1::ContainerPort = pb_core_v1::ContainerPort {
        container_port;
        zero { host_ip, host_port, name, protocol }
    }
    core_v1::ContainerResizePolicy = pb_core_v1::ContainerResizePolicy {
        resource_name, restart_policy
    }
    core_v1::ContainerRestartRule = pb_core_v1::ContainerRestartRule { action, exit_codes }
    core_v1::ContainerRestartRuleOnExitCodes = pb_core_v1::ContainerRestartRuleOnExitCodes {
        operator, values
    }
    core_v1::ContainerState = pb_core_v1::ContainerState { running, terminated, waiting }
    core_v1::ContainerStateRunning = pb_core_v1::ContainerStateRunning { ; zero { started_at } }
    core_v1::ContainerStateTerminated = pb_core_v1::ContainerStateTerminated {
        exit_code;
        zero { container_id, finished_at, message, reason, signal, started_at }
    }
    core_v1::ContainerStateWaiting = pb_core_v1::ContainerStateWaiting {
        ; zero { message, reason }
    }
    core_v1::ContainerStatus = pb_core_v1::ContainerStatus {
        allocated_resources, allocated_resources_status, image, image_id, last_state, name, ready,
            resources, restart_count, started, state, stop_signal, user, volume_mounts;
        zero { container_id }
    }
    core_v1::ContainerUser = pb_core_v1::ContainerUser { linux }
    core_v1::DownwardAPIProjection = pb_core_v1::DownwardAPIProjection { items }
    core_v1::DownwardAPIVolumeFile = pb_core_v1::DownwardAPIVolumeFile {
        field_ref, mode, path, resource_field_ref;
        openapi_only { user }
    }
    core_v1::DownwardAPIVolumeSource = pb_core_v1::DownwardAPIVolumeSource {
        default_mode, items;
        openapi_only { default_user }
    }
    core_v1::EmptyDirVolumeSource = pb_core_v1::EmptyDirVolumeSource {
        size_limit;
        zero { medium };
        openapi_only { mode }
    }
    core_v1::EnvFromSource = pb_core_v1::EnvFromSource {
        config_map_ref, secret_ref;
        zero { prefix }
    }
    core_v1::EnvVar = pb_core_v1::EnvVar { name, value_from; zero { value } }
    core_v1::EnvVarSource = pb_core_v1::EnvVarSource {
        config_map_key_ref, field_ref, file_key_ref, resource_field_ref, secret_key_ref
    }
    core_v1::EphemeralContainer = pb_core_v1::EphemeralContainer {
        ; zero { target_container_name };
        embedded { ephemeral_container_common: pb_core_v1::EphemeralContainerCommon { args, command,
            env, env_from, lifecycle, liveness_probe, name, ports, readiness_probe, resize_policy,
            resources, restart_policy, restart_policy_rules, security_context, startup_probe,
            volume_devices, volume_mounts;
        zero { image, image_pull_policy, stdin, stdin_once, termination_message_path,
            termination_message_policy, tty, working_dir } } }
    }
    core_v1::EphemeralVolumeSource = pb_core_v1::EphemeralVolumeSource { volume_claim_template }
    core_v1::ExecAction = pb_core_v1::ExecAction { command }
    core_v1::FCVolumeSource = pb_core_v1::FcVolumeSource {
        lun, wwids;
        zero { fs_type, read_only };
        renamed { target_wwns: target_ww_ns }
    }
    core_v1::FileKeySelector = pb_core_v1::FileKeySelector { key, optional, path, volume_name }
    core_v1::FlexVolumeSource = pb_core_v1::FlexVolumeSource {
        driver, options, secret_ref;
        zero { fs_type, read_only }
    }
    core_v1::FlockerVolumeSource = pb_core_v1::FlockerVolumeSource {
        ; zero { dataset_name, dataset_uuid }
    }
    core_v1::GCEPersistentDiskVolumeSource = pb_core_v1::GcePersistentDiskVolumeSource {
        pd_name;
        zero { fs_type, partition, read_only }
    }
    core_v1::GRPCAction = pb_core_v1::GrpcAction { port, service; openapi_only { mode } }
    core_v1::GitRepoVolumeSource = pb_core_v1::GitRepoVolumeSource {
        repository;
        zero { directory, revision }
    }
    core_v1::GlusterfsVolumeSource = pb_core_v1::GlusterfsVolumeSource {
        endpoints, path;
        zero { read_only }
    }
    core_v1::HTTPGetAction = pb_core_v1::HttpGetAction {
        http_headers, port;
        zero { host, path, scheme };
        openapi_only { protocol }
    }
    core_v1::HTTPHeader = pb_core_v1::HttpHeader { name, value }
    core_v1::HostAlias = pb_core_v1::HostAlias { hostnames, ip }
    core_v1::HostIP = pb_core_v1::HostIp { ip }
    core_v1::HostPathVolumeSource = pb_core_v1::HostPathVolumeSource {
        path;
        renamed { type_: r#type }
    }
    core_v1::ISCSIVolumeSource = pb_core_v1::IscsiVolumeSource {
        initiator_name, iqn, lun, portals, secret_ref, target_portal;
        zero { chap_auth_discovery, chap_auth_session, fs_type, iscsi_interface, read_only }
    }
    core_v1::ImageVolumeSource = pb_core_v1::ImageVolumeSource { ; zero { pull_policy, reference } }
    core_v1::KeyToPath = pb_core_v1::KeyToPath { key, mode, path; openapi_only { user } }
    meta_v1::LabelSelector = pb_meta_v1::LabelSelector { match_expressions, match_labels }
    meta_v1::LabelSelectorRequirement = pb_meta_v1::LabelSelectorRequirement {
        key, operator, values
    }
    core_v1::Lifecycle = pb_core_v1::Lifecycle { post_start, pre_stop, stop_signal }
    core_v1::LifecycleHandler = pb_core_v1::LifecycleHandler { exec, http_get, sleep, tcp_socket }
    core_v1::LinuxContainerUser = pb_core_v1::LinuxContainerUser { gid, supplemental_groups, uid }
    core_v1::LocalObjectReference = pb_core_v1::LocalObjectReference { name }
    meta_v1::ManagedFieldsEntry = pb_meta_v1::ManagedFieldsEntry {
        fields_v1, time;
        zero { api_version, fields_type, manager, operation, subresource }
    }
    core_v1::NFSVolumeSource = pb_core_v1::NfsVolumeSource { path, server; zero { read_only } }
    core_v1::NodeAffinity = pb_core_v1::NodeAffinity {
        preferred_during_scheduling_ignored_during_execution,
            required_during_scheduling_ignored_during_execution
    }
    core_v1::NodeSelector = pb_core_v1::NodeSelector { node_selector_terms }
    core_v1::NodeSelectorRequirement = pb_core_v1::NodeSelectorRequirement { key, operator, values }
    core_v1::NodeSelectorTerm = pb_core_v1::NodeSelectorTerm { match_expressions, match_fields }
    core_v1::ObjectFieldSelector = pb_core_v1::ObjectFieldSelector {
        field_path;
        zero { api_version }
    }
    meta_v1::ObjectMeta = pb_meta_v1::ObjectMeta {
        annotations, deletion_grace_period_seconds, deletion_timestamp, finalizers, labels,
            managed_fields, owner_references;
        zero { creation_timestamp, generate_name, generation, name, namespace, resource_version,
            self_link, uid }
    }
    meta_v1::OwnerReference = pb_meta_v1::OwnerReference {
        api_version, block_owner_deletion, controller, kind, name, uid
    }
    core_v1::PersistentVolumeClaimSpec = pb_core_v1::PersistentVolumeClaimSpec {
        access_modes, data_source, data_source_ref, resources, selector, storage_class_name,
            volume_attributes_class_name, volume_mode;
        zero { volume_name }
    }
    core_v1::PersistentVolumeClaimTemplate = pb_core_v1::PersistentVolumeClaimTemplate {
        metadata, spec
    }
    core_v1::PersistentVolumeClaimVolumeSource = pb_core_v1::PersistentVolumeClaimVolumeSource {
        claim_name;
        zero { read_only }
    }
    core_v1::PhotonPersistentDiskVolumeSource = pb_core_v1::PhotonPersistentDiskVolumeSource {
        pd_id;
        zero { fs_type }
    }
    core_v1::Pod = pb_core_v1::Pod { metadata, spec, status }
    core_v1::PodAffinity = pb_core_v1::PodAffinity {
        preferred_during_scheduling_ignored_during_execution,
            required_during_scheduling_ignored_during_execution
    }
    core_v1::PodAffinityTerm = pb_core_v1::PodAffinityTerm {
        label_selector, match_label_keys, mismatch_label_keys, namespace_selector, namespaces,
            topology_key
    }
    core_v1::PodAntiAffinity = pb_core_v1::PodAntiAffinity {
        preferred_during_scheduling_ignored_during_execution,
            required_during_scheduling_ignored_during_execution
    }
    core_v1::PodCertificateProjection = pb_core_v1::PodCertificateProjection {
        key_type, max_expiration_seconds, signer_name, user_annotations;
        zero { certificate_chain_path, credential_bundle_path, key_path };
        openapi_only { user }
    }
    core_v1::PodCondition = pb_core_v1::PodCondition {
        status;
        zero { last_probe_time, last_transition_time, message, observed_generation, reason };
        renamed { type_: r#type }
    }
    core_v1::PodDNSConfig = pb_core_v1::PodDnsConfig { nameservers, options, searches }
    core_v1::PodDNSConfigOption = pb_core_v1::PodDnsConfigOption { value; zero { name } }
    core_v1::PodExtendedResourceClaimStatus = pb_core_v1::PodExtendedResourceClaimStatus {
        request_mappings, resource_claim_name
    }
    core_v1::PodIP = pb_core_v1::PodIp { ip }
    core_v1::PodOS = pb_core_v1::PodOs { name }
    core_v1::PodReadinessGate = pb_core_v1::PodReadinessGate { condition_type }
    core_v1::PodResourceClaim = pb_core_v1::PodResourceClaim {
        name, resource_claim_name, resource_claim_template_name
    }
    core_v1::PodResourceClaimStatus = pb_core_v1::PodResourceClaimStatus {
        name, resource_claim_name
    }
    core_v1::PodSchedulingGate = pb_core_v1::PodSchedulingGate { name }
    core_v1::PodSecurityContext = pb_core_v1::PodSecurityContext {
        app_armor_profile, fs_group, fs_group_change_policy, run_as_group, run_as_non_root,
            run_as_user, se_linux_change_policy, se_linux_options, seccomp_profile,
            supplemental_groups, supplemental_groups_policy, sysctls, windows_options
    }
    core_v1::PodSpec = pb_core_v1::PodSpec {
        active_deadline_seconds, affinity, automount_service_account_token, containers, dns_config,
            enable_service_links, ephemeral_containers, host_aliases, host_users, hostname_override,
            image_pull_secrets, init_containers, node_selector, os, overhead, preemption_policy,
            priority, readiness_gates, resource_claims, resources, runtime_class_name,
            scheduling_gates, security_context, set_hostname_as_fqdn, share_process_namespace,
            termination_grace_period_seconds, tolerations, topology_spread_constraints, volumes;
        zero { dns_policy, host_ipc, host_network, host_pid, hostname, node_name,
            priority_class_name, restart_policy, scheduler_name, service_account,
            service_account_name, subdomain };
        openapi_only { eviction_responders, scheduling_group };
        pb_only { workload_ref }
    }
    core_v1::PodStatus = pb_core_v1::PodStatus {
        allocated_resources, conditions, container_statuses, ephemeral_container_statuses,
            extended_resource_claim_status, host_ips, init_container_statuses, pod_ips,
            resource_claim_statuses, resources, start_time;
        zero { host_ip, message, nominated_node_name, observed_generation, phase, pod_ip, qos_class,
            reason, resize };
        openapi_only { node_allocatable_resource_claim_statuses, volume_health }
    }
    core_v1::PortworxVolumeSource = pb_core_v1::PortworxVolumeSource {
        volume_id;
        zero { fs_type, read_only }
    }
    core_v1::PreferredSchedulingTerm = pb_core_v1::PreferredSchedulingTerm { preference, weight }
    core_v1::Probe = pb_core_v1::Probe {
        termination_grace_period_seconds;
        zero { failure_threshold, initial_delay_seconds, period_seconds, success_threshold,
            timeout_seconds };
        embedded { handler: pb_core_v1::ProbeHandler { exec, grpc, http_get, tcp_socket } }
    }
    core_v1::ProjectedVolumeSource = pb_core_v1::ProjectedVolumeSource {
        default_mode, sources;
        openapi_only { default_user }
    }
    core_v1::QuobyteVolumeSource = pb_core_v1::QuobyteVolumeSource {
        registry, volume;
        zero { group, read_only, tenant, user }
    }
    core_v1::RBDVolumeSource = pb_core_v1::RbdVolumeSource {
        image, monitors, secret_ref;
        zero { fs_type, keyring, pool, read_only, user }
    }
    core_v1::ResourceClaim = pb_core_v1::ResourceClaim { name; zero { request } }
    core_v1::ResourceFieldSelector = pb_core_v1::ResourceFieldSelector {
        divisor, resource;
        zero { container_name }
    }
    core_v1::ResourceHealth = pb_core_v1::ResourceHealth {
        resource_id;
        zero { health };
        openapi_only { message }
    }
    core_v1::ResourceRequirements = pb_core_v1::ResourceRequirements { claims, limits, requests }
    core_v1::ResourceStatus = pb_core_v1::ResourceStatus { name, resources }
    core_v1::SELinuxOptions = pb_core_v1::SeLinuxOptions {
        ; zero { level, role, user };
        renamed { type_: r#type as zero }
    }
    core_v1::ScaleIOVolumeSource = pb_core_v1::ScaleIoVolumeSource {
        gateway, secret_ref, system;
        zero { fs_type, protection_domain, read_only, ssl_enabled, storage_mode, storage_pool,
            volume_name }
    }
    core_v1::SeccompProfile = pb_core_v1::SeccompProfile {
        localhost_profile;
        renamed { type_: r#type }
    }
    core_v1::SecretEnvSource = pb_core_v1::SecretEnvSource {
        optional;
        embedded { local_object_reference: pb_core_v1::LocalObjectReference { name } }
    }
    core_v1::SecretKeySelector = pb_core_v1::SecretKeySelector {
        key, optional;
        embedded { local_object_reference: pb_core_v1::LocalObjectReference { name } }
    }
    core_v1::SecretProjection = pb_core_v1::SecretProjection {
        items, optional;
        embedded { local_object_reference: pb_core_v1::LocalObjectReference { name } }
    }
    core_v1::SecretVolumeSource = pb_core_v1::SecretVolumeSource {
        default_mode, items, optional;
        zero { secret_name };
        openapi_only { default_user }
    }
    core_v1::SecurityContext = pb_core_v1::SecurityContext {
        allow_privilege_escalation, app_armor_profile, capabilities, privileged, proc_mount,
            read_only_root_filesystem, run_as_group, run_as_non_root, run_as_user, se_linux_options,
            seccomp_profile, windows_options
    }
    core_v1::ServiceAccountTokenProjection = pb_core_v1::ServiceAccountTokenProjection {
        expiration_seconds, path;
        zero { audience };
        openapi_only { user }
    }
    core_v1::SleepAction = pb_core_v1::SleepAction { seconds }
    core_v1::StorageOSVolumeSource = pb_core_v1::StorageOsVolumeSource {
        secret_ref;
        zero { fs_type, read_only, volume_name, volume_namespace }
    }
    core_v1::Sysctl = pb_core_v1::Sysctl { name, value }
    core_v1::TCPSocketAction = pb_core_v1::TcpSocketAction { port; zero { host } }
    core_v1::Toleration = pb_core_v1::Toleration {
        toleration_seconds;
        zero { effect, key, operator, value }
    }
    core_v1::TopologySpreadConstraint = pb_core_v1::TopologySpreadConstraint {
        label_selector, match_label_keys, max_skew, min_domains, node_affinity_policy,
            node_taints_policy, topology_key, when_unsatisfiable
    }
    core_v1::TypedLocalObjectReference = pb_core_v1::TypedLocalObjectReference {
        api_group, kind, name
    }
    core_v1::TypedObjectReference = pb_core_v1::TypedObjectReference {
        api_group, kind, name, namespace
    }
    core_v1::Volume = pb_core_v1::Volume {
        name;
        embedded { volume_source: pb_core_v1::VolumeSource { aws_elastic_block_store, azure_disk,
            azure_file, cephfs, cinder, config_map, csi, downward_api, empty_dir, ephemeral, fc,
            flex_volume, flocker, gce_persistent_disk, git_repo, glusterfs, host_path, image, iscsi,
            nfs, persistent_volume_claim, photon_persistent_disk, portworx_volume, projected,
            quobyte, rbd, scale_io, secret, storageos, vsphere_volume } }
    }
    core_v1::VolumeDevice = pb_core_v1::VolumeDevice { device_path, name }
    core_v1::VolumeMount = pb_core_v1::VolumeMount {
        mount_path, mount_propagation, name, recursive_read_only;
        zero { read_only, sub_path, sub_path_expr };
        openapi_only { bind_mount_options }
    }
    core_v1::VolumeMountStatus = pb_core_v1::VolumeMountStatus {
        mount_path, name, recursive_read_only;
        zero { read_only };
        openapi_only { volume_status }
    }
    core_v1::VolumeProjection = pb_core_v1::VolumeProjection {
        cluster_trust_bundle, config_map, downward_api, pod_certificate, secret,
            service_account_token
    }
    core_v1::VolumeResourceRequirements = pb_core_v1::VolumeResourceRequirements {
        limits, requests
    }
    core_v1::VsphereVirtualDiskVolumeSource = pb_core_v1::VsphereVirtualDiskVolumeSource {
        volume_path;
        zero { fs_type, storage_policy_id, storage_policy_name }
    }
    core_v1::WeightedPodAffinityTerm = pb_core_v1::WeightedPodAffinityTerm {
        pod_affinity_term, weight
    }
    core_v1::WindowsSecurityContextOptions = pb_core_v1::WindowsSecurityContextOptions {
        gmsa_credential_spec, gmsa_credential_spec_name, host_process, run_as_user_name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::file::load_documents;
    use crate::source::input::Limits;
    use prost::Message;
    use serde_json::{Value, json};
    use std::path::Path;

    /// Through the wire and back, as the API server's bytes would come.
    fn round_trip(pod: &core_v1::Pod) -> core_v1::Pod {
        let bytes = to_protobuf(pod.clone()).encode_to_vec();
        let decoded = pb_core_v1::Pod::decode(bytes.as_slice()).expect("our own encoding decodes");
        from_protobuf(decoded, true).expect("a pod read from JSON converts back")
    }

    /// What may differ after a round trip: a field the original held explicitly at its zero (`false`,
    /// `0`, `""`, an empty list or map) can come back absent, as the API server's JSON would give it.
    /// Anything else differing, or a field appearing, is a conversion error.
    fn differences(original: &Value, returned: &Value, path: &str, found: &mut Vec<String>) {
        match (original, returned) {
            (Value::Object(original), Value::Object(returned)) => {
                for (key, value) in original {
                    let at = format!("{path}.{key}");
                    match returned.get(key) {
                        Some(back) => differences(value, back, &at, found),
                        None if is_zero(value) => {}
                        None => found.push(format!("{at} lost")),
                    }
                }
                let added = returned.keys().filter(|key| !original.contains_key(*key));
                found.extend(added.map(|key| format!("{path}.{key} appeared")));
            }
            (Value::Array(original), Value::Array(returned))
                if original.len() == returned.len() =>
            {
                for (index, (value, back)) in original.iter().zip(returned).enumerate() {
                    differences(value, back, &format!("{path}[{index}]"), found);
                }
            }
            _ if original == returned => {}
            _ => found.push(format!("{path}: {original} became {returned}")),
        }
    }

    fn is_zero(value: &Value) -> bool {
        match value {
            Value::Bool(flag) => !flag,
            Value::Number(number) => number.as_f64() == Some(0.0),
            Value::String(text) => text.is_empty(),
            Value::Array(items) => items.is_empty(),
            Value::Object(entries) => entries.is_empty(),
            Value::Null => true,
        }
    }

    fn fixture_pods(dir: &Path, pods: &mut Vec<(String, Value)>) {
        for entry in std::fs::read_dir(dir).expect("fixtures directory reads") {
            let path = entry.expect("fixture entry reads").path();
            let name = path.to_string_lossy().into_owned();
            if path.is_dir() {
                fixture_pods(&path, pods);
            } else if [".yaml", ".yml", ".json", ".gz"].iter().any(|end| name.ends_with(end))
                // The robustness cases are broken on purpose.
                && let Ok((_, documents)) = load_documents(&name, Limits::default())
            {
                let is_pod = |document: &Value| document["kind"] == "Pod";
                pods.extend(
                    documents
                        .into_iter()
                        .filter(is_pod)
                        .map(|pod| (name.clone(), pod)),
                );
            }
        }
    }

    #[test]
    fn every_fixture_pod_survives_the_wire() {
        let mut pods = Vec::new();
        fixture_pods(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
            &mut pods,
        );
        let mut converted = 0;
        let mut found = Vec::new();
        for (file, pod) in pods {
            let Ok(pod) = serde_json::from_value::<core_v1::Pod>(pod) else {
                continue;
            };
            let returned = serde_json::to_value(round_trip(&pod)).unwrap();
            let original = serde_json::to_value(&pod).unwrap();
            let name = pod.metadata.name.unwrap_or_default();
            differences(&original, &returned, &format!("{file} {name}"), &mut found);
            converted += 1;
        }
        assert!(converted > 1000, "only {converted} fixture pods read");
        assert!(found.is_empty(), "{found:#?}");
    }

    /// Every field that both crates have, each with a value of its own, so two fields swapped or one
    /// dropped shows. Fields of k8s-openapi only are left out (they cannot cross); values are
    /// nonzero, as a zero of a Go value field is absent by design.
    #[test]
    fn a_pod_with_every_field_comes_back_equal() {
        let text = include_str!("every-field-pod.json");
        let pod: core_v1::Pod = serde_json::from_str(text).unwrap();
        assert_eq!(round_trip(&pod), pod);
        assert_eq!(
            serde_json::to_value(&pod).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    /// Zeros in pointer fields mean something (`automountServiceAccountToken: false`) and stay;
    /// zeros in Go value fields are what JSON omits, and go.
    #[test]
    fn only_value_field_zeros_become_absent() {
        let pod: core_v1::Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "generation": 0},
            "spec": {
                "automountServiceAccountToken": false,
                "enableServiceLinks": false,
                "hostUsers": false,
                "terminationGracePeriodSeconds": 0,
                "hostNetwork": false,
                "nodeName": "",
                "containers": [{
                    "name": "c",
                    "securityContext": {"privileged": false, "runAsNonRoot": false, "runAsUser": 0},
                    "ports": [{"containerPort": 80, "hostPort": 0}],
                }],
                "nodeSelector": {},
                "tolerations": [],
            },
        }))
        .unwrap();
        let returned = serde_json::to_value(round_trip(&pod)).unwrap();
        assert_eq!(
            returned,
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {
                    "automountServiceAccountToken": false,
                    "enableServiceLinks": false,
                    "hostUsers": false,
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{
                        "name": "c",
                        "securityContext": {"privileged": false, "runAsNonRoot": false, "runAsUser": 0},
                        "ports": [{"containerPort": 80}],
                    }],
                },
            })
        );
    }

    #[test]
    fn fields_of_one_side_do_not_cross() {
        let pod: core_v1::Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [], "schedulingGroup": {"podGroupName": "g"}},
        }))
        .unwrap();
        assert_eq!(round_trip(&pod).spec.unwrap().scheduling_group, None);

        let mut pb = to_protobuf(core_v1::Pod::default());
        pb.spec = Some(pb_core_v1::PodSpec {
            workload_ref: Some(Default::default()),
            ..Default::default()
        });
        assert_eq!(
            from_protobuf(pb, false).unwrap().spec,
            Some(Default::default())
        );
    }

    fn with_managed_fields(raw: &[u8]) -> pb_core_v1::Pod {
        let entry = pb_meta_v1::ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            fields_v1: Some(pb_meta_v1::FieldsV1 {
                raw: Some(raw.to_vec()),
            }),
            ..Default::default()
        };
        let mut pod = to_protobuf(core_v1::Pod::default());
        pod.metadata.as_mut().unwrap().managed_fields = vec![entry];
        pod
    }

    #[test]
    fn managed_fields_are_kept_or_dropped_on_request() {
        let kept = from_protobuf(with_managed_fields(br#"{"f:spec":{}}"#), true).unwrap();
        let entries = kept.metadata.managed_fields.unwrap();
        assert_eq!(entries[0].manager.as_deref(), Some("kubectl"));
        assert_eq!(
            entries[0].fields_v1.as_ref().unwrap().0,
            json!({"f:spec": {}})
        );

        let dropped = from_protobuf(with_managed_fields(br#"{"f:spec":{}}"#), false).unwrap();
        assert_eq!(dropped.metadata.managed_fields, None);
    }

    #[test]
    fn fields_v1_that_is_not_json_is_an_error_naming_it() {
        let error = from_protobuf(with_managed_fields(b"{not json"), true).unwrap_err();
        assert!(
            error.starts_with("metadata.managed_fields[0].fields_v1: not JSON: "),
            "{error}"
        );
        // Dropped unread, it cannot fail.
        assert!(from_protobuf(with_managed_fields(b"{not json"), false).is_ok());
    }

    #[test]
    fn times_keep_nanoseconds_and_refuse_what_jiff_cannot_hold() {
        let at = |seconds, nanos| {
            let mut pod = to_protobuf(core_v1::Pod::default());
            pod.metadata.as_mut().unwrap().creation_timestamp = Some(pb_meta_v1::Time {
                seconds: Some(seconds),
                nanos: Some(nanos),
            });
            from_protobuf(pod, false)
        };
        let created = at(1_700_000_000, 250)
            .unwrap()
            .metadata
            .creation_timestamp
            .unwrap();
        assert_eq!(created.0, Timestamp::new(1_700_000_000, 250).unwrap());
        let error = at(i64::MAX, 0).unwrap_err();
        assert!(
            error.starts_with("metadata.creation_timestamp: time out of range"),
            "{error}"
        );
    }

    #[test]
    fn int_or_string_follows_its_type() {
        let port = |r#type, int_val, str_val: &str| {
            let mut pod = pb_core_v1::Pod::default();
            let probe = pb_core_v1::Probe {
                handler: Some(pb_core_v1::ProbeHandler {
                    tcp_socket: Some(pb_core_v1::TcpSocketAction {
                        port: Some(pb_intstr::IntOrString {
                            r#type: Some(r#type),
                            int_val: Some(int_val),
                            str_val: Some(str_val.into()),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            };
            let container = pb_core_v1::Container {
                liveness_probe: Some(probe),
                ..Default::default()
            };
            pod.spec = Some(pb_core_v1::PodSpec {
                containers: vec![container],
                ..Default::default()
            });
            from_protobuf(pod, false).map(|pod| {
                let probe = pod
                    .spec
                    .unwrap()
                    .containers
                    .remove(0)
                    .liveness_probe
                    .unwrap();
                probe.tcp_socket.unwrap().port
            })
        };
        assert_eq!(port(0, 8080, "").unwrap(), IntOrString::Int(8080));
        assert_eq!(
            port(1, 0, "http").unwrap(),
            IntOrString::String("http".into())
        );
        let error = port(2, 0, "").unwrap_err();
        assert!(
            error.starts_with(
                "spec.containers[0].liveness_probe.tcp_socket.port: IntOrString of unknown type 2"
            ),
            "{error}"
        );
    }
}
