//! Listing what the scheduler reads, every kind at once, page by page, strictly with GET.

use super::config::Target;
use super::error::{Fail, LiveError, describe};
use super::progress::{self, Indicator, Progress};
use crate::source::split::{ListSplitter, drop_managed_fields};
use crate::source::{Dump, SnapshotMeta, events, protobuf};
use http_body_util::BodyExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Event, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController,
    Service,
};
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroup, APIResourceList, ListMeta};
use k8s_openapi::apimachinery::pkg::version::Info;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::de::DeserializeOwned;
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;

/// Objects per page, as informers ask for.
pub const PAGE_SIZE: u32 = 500;
/// How often a list whose continue token expired (410) is started again.
const MAX_RESTARTS: usize = 3;
/// Terminated pods hold no resources and the scheduler ignores them.
pub const POD_FIELD_SELECTOR: &str = "status.phase!=Succeeded,status.phase!=Failed";

/// What to read beyond the objects every command needs.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// The pod `explain` names (namespace, name): read it even if it has finished, with its
    /// FailedScheduling events.
    pub pod: Option<(String, String)>,
    /// The FailedScheduling events of every pending pod (`explain --all-pending`).
    pub pending_events: bool,
    /// Everything a snapshot saves: also leases, lease candidates, Deployments, DaemonSets, Jobs
    /// and CronJobs, the FailedScheduling events of pending pods, and when the read ended by the
    /// server's clock.
    pub snapshot: bool,
    /// The Deployments, DaemonSets, Jobs and CronJobs of this namespace, whose pods `explain
    /// TYPE/NAME` finds through owner references.
    pub controllers_of: Option<String>,
    /// Ask for the pods list as protobuf (`source::protobuf`), which a real API server sends
    /// sooner and which types cheaper. Only where no field `k8s-pb` lacks can matter: not for a
    /// snapshot (a faithful dump) nor when extenders are sent pods whole.
    pub pods_as_protobuf: bool,

    /// Draw the progress line (stderr is a terminal).
    pub progress: bool,
}

/// Pods selected by label and field selectors, in one namespace or all.
#[derive(Clone, Debug, Default)]
pub struct PodSelection {
    pub namespace: Option<String>,
    pub labels: Option<String>,
    pub fields: Option<String>,
}

/// What an unreadable optional kind costs, as the warning says it.
fn consequence(plural: &str) -> &'static str {
    match plural {
        "namespaces" => "pod affinity terms with a namespaceSelector match no namespace",
        "priorityclasses" => {
            "a whatif pod's priorityClassName cannot be resolved and no globalDefault class applies"
        }
        "poddisruptionbudgets" => "preemption ignores PDBs",
        "persistentvolumeclaims" => {
            "pods with PersistentVolumeClaims look as if their claims were missing"
        }
        "persistentvolumes" => "bound claims' volumes are unknown to VolumeBinding and VolumeZone",
        "storageclasses" => {
            "unbound claims' binding mode and topology are unknown to VolumeBinding"
        }
        "csinodes" => "CSI volume limits per node are unknown to NodeVolumeLimits",
        "csidrivers" => "which CSI drivers track storage capacity is unknown to VolumeBinding",
        "csistoragecapacities" => {
            "storage capacity of drivers that track it is unknown to VolumeBinding"
        }
        "volumeattachments" => "volumes attached without a pod are unknown to NodeVolumeLimits",
        "deviceclasses" => "pods with resource claims look as if their device classes were missing",
        "resourceslices" => {
            "no devices are known: pods with unallocated resource claims fit nowhere"
        }
        "resourceclaims" => {
            "pods with resource claims look as if their claims were missing, and allocated devices look free"
        }
        "resourceclaimtemplates" => "workload replicas cannot get claims from their templates",
        "services" | "replicationcontrollers" | "replicasets" | "statefulsets" => {
            "default topology spreading does not see the pods' owners and services"
        }
        "runtimeclasses" => "a whatif pod naming a runtimeClassName cannot be admitted",
        "deployments" | "daemonsets" | "jobs" | "cronjobs" => {
            "explain TYPE/NAME finds a workload's pods through what else is read (its ReplicaSets or Jobs, the pods' owners)"
        }
        "events" => "the real scheduler's FailedScheduling messages are not shown",
        "leases" => "the lease command has no leases to show",
        "pods" => "lease holders are not matched to their pods",
        "nodes" => "whether each node is Ready is not shown",
        _ => "some checks are incomplete",
    }
}

/// A list once its items are cut out (`ListSplitter`): its metadata, and items that must still
/// be a list.
#[derive(serde::Deserialize)]
struct ListShell {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default, rename = "items")]
    _items: Vec<serde::de::IgnoredAny>,
}

/// Pods are handed on in batches of this many: what is in flight is a batch, not the list.
const POD_BATCH: usize = 1024;

/// How the API server encoded an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Json,
    Protobuf,
}

/// A batch of the pods list as it streams in, for the reader of `read`'s pods.
#[derive(Debug)]
pub enum PodBatch {
    /// Items of the list, in order, not yet checked beyond where they start and end: JSON
    /// objects without kind and apiVersion (the list says them), or protobuf Pods.
    Items(Vec<Vec<u8>>, Wire),
    /// The list starts again from its first page (its continue token expired): the items of
    /// this list handed on so far are void.
    Restart,
}

/// Where `read` sends the pods: a bounded channel, so a slow reader slows the list down rather
/// than letting it pile up in memory.
pub type PodFeed = tokio::sync::mpsc::Sender<PodBatch>;

/// What a pod item that does not decode means, said as a list that does not decode is.
pub fn pod_decode_error(target: &Target, e: serde_json::Error) -> LiveError {
    describe(Fail::Decode(e), target, "list pods")
}

fn collection_path<K: k8s_openapi::Resource>(namespace: Option<&str>) -> String {
    let prefix = if K::GROUP.is_empty() {
        format!("/api/{}", K::VERSION)
    } else {
        format!("/apis/{}", K::API_VERSION)
    };
    match namespace {
        Some(ns) => format!("{prefix}/namespaces/{ns}/{}", K::URL_PATH_SEGMENT),
        None => format!("{prefix}/{}", K::URL_PATH_SEGMENT),
    }
}

struct Reader {
    client: kube::Client,
    target: Target,
    progress: Arc<Progress>,
    /// (kind, warning): sorted by kind at the end, so concurrent lists warn in a stable order.
    warnings: Mutex<Vec<(&'static str, String)>>,
    /// Objects keep their `metadata.managedFields` (a snapshot's, which `--no-redact` writes);
    /// otherwise they are dropped before typing, as from pods: nothing reads them, and typed they
    /// were most of what the other lists held until the cluster was built.
    managed_fields: bool,
}

type Task<T> = JoinHandle<Result<T, LiveError>>;

impl Reader {
    fn connect(
        target: &Target,
        managed_fields: bool,
    ) -> Result<(Arc<Reader>, Arc<Progress>), LiveError> {
        let client = kube::Client::try_from(target.config.clone()).map_err(|e| {
            let what = format!("connect to {}", target.server());
            describe(Fail::Client(e), target, &what)
        })?;
        let progress = Arc::new(Progress::default());
        let reader = Arc::new(Reader {
            client,
            target: target.clone(),
            progress: progress.clone(),
            warnings: Mutex::new(Vec::new()),
            managed_fields,
        });
        Ok((reader, progress))
    }

    async fn fetch(&self, url: &str) -> Result<(http::HeaderMap, bytes::Bytes), Fail> {
        let request = http::Request::get(url)
            .body(kube::client::Body::empty())
            .map_err(|e| Fail::Client(kube::Error::HttpError(e)))?;
        let call = async {
            let response = self.client.send(request).await.map_err(Fail::Client)?;
            let (parts, body) = response.into_parts();
            let bytes = body.collect_bytes().await.map_err(Fail::Client)?;
            if parts.status.is_success() {
                Ok((parts.headers, bytes))
            } else {
                let wire = wire_of(&parts.headers);
                Err(Fail::Status(Box::new(status_of(
                    parts.status,
                    &bytes,
                    wire,
                ))))
            }
        };
        match self.target.request_timeout {
            Some(t) => tokio::time::timeout(t, call)
                .await
                .map_err(|_| Fail::Timeout(t))?,
            None => call.await,
        }
    }

    async fn get<T: DeserializeOwned>(&self, url: &str) -> Result<T, Fail> {
        let (_, body) = self.fetch(url).await?;
        serde_json::from_slice(&body).map_err(Fail::Decode)
    }

    /// Every object of a collection, page by page; a list whose continue token expired starts
    /// again, as client-go's pager does.
    async fn list<T: DeserializeOwned + Send>(
        &self,
        path: &str,
        label: &'static str,
        fields: Option<&str>,
    ) -> Result<Vec<T>, Fail> {
        self.list_at(path, label, Selectors::fields(fields))
            .await
            .map(|(items, _)| items)
    }

    /// `list`, with the resourceVersion the list was served at (where a watch resumes).
    async fn list_at<T: DeserializeOwned + Send>(
        &self,
        path: &str,
        label: &'static str,
        selectors: Selectors<'_>,
    ) -> Result<(Vec<T>, String), Fail> {
        let mut typed = Typed {
            items: Vec::new(),
            managed_fields: self.managed_fields,
        };
        let (resource_version, _) = self
            .list_into(path, label, selectors, &mut typed, None)
            .await?;
        Ok((typed.items, resource_version))
    }

    /// Every object of a collection, page by page, each page's items cut out as its answer
    /// streams in and handed to `items`; a list whose continue token expired starts again, as
    /// client-go's pager does. The resourceVersion the list was served at, and whether the
    /// object `named` (namespace, name) was among the items.
    async fn list_into<I: Items>(
        &self,
        path: &str,
        label: &'static str,
        selectors: Selectors<'_>,
        items: &mut I,
        named: Option<&(String, String)>,
    ) -> Result<(String, bool), Fail> {
        let kind = self.progress.kind(label);
        let mut restarts = 0;
        'restart: loop {
            kind.reset();
            let mut cont: Option<String> = None;
            let mut found = false;
            loop {
                let url = page_url(
                    path,
                    selectors,
                    cont.as_deref(),
                    self.target.consistent_read,
                );
                let (meta, found_here) = match self.page(&url, items, &kind, named).await {
                    Err(Fail::Status(s))
                        if s.code == 410 && cont.is_some() && restarts < MAX_RESTARTS =>
                    {
                        restarts += 1;
                        items.restart().await?;
                        continue 'restart;
                    }
                    other => other?,
                };
                found |= found_here;
                match meta.continue_.filter(|c| !c.is_empty()) {
                    Some(c) => cont = Some(c),
                    None => {
                        kind.finish();
                        return Ok((meta.resource_version.unwrap_or_default(), found));
                    }
                }
            }
        }
    }

    /// One page of a list, its items cut out as the answer streams in and handed on in batches;
    /// the list's metadata, and whether the object `named` was among the items.
    async fn page<I: Items>(
        &self,
        url: &str,
        items: &mut I,
        kind: &progress::Kind,
        named: Option<&(String, String)>,
    ) -> Result<(ListMeta, bool), Fail> {
        let mut request = http::Request::get(url);
        if items.asks_protobuf() {
            // As client-go asks when told to prefer protobuf: JSON from a server that has none.
            let accept = format!("{}, application/json", protobuf::MEDIA_TYPE);
            request = request.header(http::header::ACCEPT, accept);
        }
        let request = request
            .body(kube::client::Body::empty())
            .map_err(|e| Fail::Client(kube::Error::HttpError(e)))?;
        // The name as the API server writes it in an object's metadata: only items holding it
        // are decoded to compare namespace and name.
        let needle = named.map(|(_, name)| format!("\"name\":{}", serde_json::json!(name)));
        let call = async {
            let response = self.client.send(request).await.map_err(Fail::Client)?;
            let (parts, mut body) = response.into_parts();
            let wire = wire_of(&parts.headers);
            if !parts.status.is_success() {
                let bytes = body.collect_bytes().await.map_err(Fail::Client)?;
                return Err(Fail::Status(Box::new(status_of(
                    parts.status,
                    &bytes,
                    wire,
                ))));
            }
            let mut splitter = Splitter::new(wire);
            let mut batch = Vec::new();
            let mut found = false;
            loop {
                let frame = body.frame().await.transpose().map_err(Fail::Client)?;
                let Some(frame) = frame else { break };
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                let before = batch.len();
                splitter.feed(&data, &mut batch)?;
                if let (Some(needle), Some((ns, name))) = (&needle, named) {
                    found |= batch[before..]
                        .iter()
                        .any(|item| is_named(item, wire, needle, ns, name));
                }
                if batch.len() >= I::BATCH {
                    kind.add(batch.len());
                    items.take(std::mem::take(&mut batch), wire).await?;
                }
            }
            if !batch.is_empty() {
                kind.add(batch.len());
                items.take(batch, wire).await?;
            }
            Ok((splitter.finish()?, found))
        };
        match self.target.request_timeout {
            Some(t) => tokio::time::timeout(t, call)
                .await
                .map_err(|_| Fail::Timeout(t))?,
            None => call.await,
        }
    }

    fn warn(&self, plural: &'static str, message: String) {
        let mut w = self.warnings.lock().expect("warnings lock");
        if !w.iter().any(|(_, m)| *m == message) {
            w.push((plural, message));
        }
    }

    /// A kind the pipeline cannot do without: any failure ends the read.
    async fn required<K>(&self, fields: Option<&str>) -> Result<Vec<K>, LiveError>
    where
        K: k8s_openapi::Resource + DeserializeOwned + Send,
    {
        let plural = K::URL_PATH_SEGMENT;
        self.list(&collection_path::<K>(None), plural, fields)
            .await
            .map_err(|f| self.required_failed(plural, f))
    }

    fn required_failed(&self, plural: &str, f: Fail) -> LiveError {
        match f {
            Fail::Status(s) if s.code == 403 => {
                let user = self
                    .target
                    .user
                    .as_deref()
                    .map(|u| format!("user {u:?}"))
                    .unwrap_or_else(|| "this user".into());
                LiveError {
                    message: format!(
                        "permission denied: {user} may not list {plural} (403 Forbidden); kubectl-sched needs the \"list\" verb on \"nodes\" and \"pods\" (API group \"\") in all namespaces, plus \"get\" on pods for explain: docs/live.md has a read-only ClusterRole"
                    ),
                    detail: Some(s.message),
                }
            }
            f => describe(f, &self.target, &format!("list {plural}")),
        }
    }

    /// The pods that hold resources, handed to `feed` batch by batch as their list streams
    /// in (as protobuf if the server has it and `protobuf` asks); whether the pod `named`
    /// (namespace, name) was among them.
    async fn stream_pods(
        &self,
        feed: &PodFeed,
        protobuf: bool,
        named: Option<&(String, String)>,
    ) -> Result<bool, LiveError> {
        let selectors = Selectors::fields(Some(POD_FIELD_SELECTOR));
        self.list_into(
            &collection_path::<Pod>(None),
            "pods",
            selectors,
            &mut Fed(feed, protobuf),
            named,
        )
        .await
        .map(|(_, found)| found)
        .map_err(|f| self.required_failed("pods", f))
    }

    /// A kind whose absence only makes some checks incomplete: an error answer becomes a warning
    /// saying which. Failures to reach the server still end the read.
    async fn optional<T: DeserializeOwned + Send>(
        &self,
        path: &str,
        plural: &'static str,
        fields: Option<&str>,
    ) -> Result<Vec<T>, LiveError> {
        match self.list(path, plural, fields).await {
            Ok(items) => Ok(items),
            Err(Fail::Status(s)) if s.code != 401 => {
                let why = match s.code {
                    403 => "403 Forbidden".to_string(),
                    404 => "the API server does not serve them".to_string(),
                    code => format!("{code} {}", s.reason).trim_end().to_string(),
                };
                self.warn(
                    plural,
                    format!("cannot list {plural} ({why}): {}", consequence(plural)),
                );
                self.progress.kind(plural).finish();
                Ok(Vec::new())
            }
            Err(f) => Err(describe(f, &self.target, &format!("list {plural}"))),
        }
    }

    async fn optional_kind<K: k8s_openapi::Resource + DeserializeOwned + Send>(
        &self,
    ) -> Result<Vec<K>, LiveError> {
        self.optional_in(None).await
    }

    /// An optional kind in one namespace, or all.
    async fn optional_in<K: k8s_openapi::Resource + DeserializeOwned + Send>(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<K>, LiveError> {
        let path = collection_path::<K>(namespace);
        self.optional(&path, K::URL_PATH_SEGMENT, None).await
    }

    /// Deployments, DaemonSets, Jobs and CronJobs, of one namespace or all.
    async fn controllers(
        &self,
        namespace: Option<String>,
    ) -> Result<(Vec<Deployment>, Vec<DaemonSet>, Vec<Job>, Vec<CronJob>), LiveError> {
        let ns = namespace.as_deref();
        let (deployments, daemon_sets, jobs, cron_jobs) = futures::join!(
            self.optional_in::<Deployment>(ns),
            self.optional_in::<DaemonSet>(ns),
            self.optional_in::<Job>(ns),
            self.optional_in::<CronJob>(ns),
        );
        Ok((deployments?, daemon_sets?, jobs?, cron_jobs?))
    }

    /// The pod `explain` names, whatever its phase; `None` if it does not exist.
    async fn pod(&self, namespace: &str, name: &str) -> Result<Option<Pod>, LiveError> {
        let url = format!("{}/{name}", collection_path::<Pod>(Some(namespace)));
        match self.get(&url).await {
            Ok(p) => Ok(Some(p)),
            // The list already said what this user may see.
            Err(Fail::Status(s)) if s.code == 404 || s.code == 403 => Ok(None),
            Err(f) => Err(describe(
                f,
                &self.target,
                &format!("get pod {namespace}/{name}"),
            )),
        }
    }

    async fn failed_scheduling_events(
        &self,
        pod: Option<&(String, String)>,
    ) -> Result<Vec<Event>, LiveError> {
        match pod {
            Some((ns, name)) => {
                let fields = format!(
                    "involvedObject.kind=Pod,involvedObject.namespace={ns},involvedObject.name={name},reason={}",
                    events::FAILED_SCHEDULING
                );
                self.optional(&collection_path::<Event>(Some(ns)), "events", Some(&fields))
                    .await
            }
            None => {
                let fields = format!("reason={}", events::FAILED_SCHEDULING);
                self.optional(&collection_path::<Event>(None), "events", Some(&fields))
                    .await
            }
        }
    }

    /// LeaseCandidates, in the first version of coordination.k8s.io the server offers them in
    /// (preferred first); none when no version does.
    async fn lease_candidates(&self) -> Result<Vec<serde_json::Value>, LiveError> {
        const GROUP: &str = "coordination.k8s.io";
        let group: APIGroup = match self.get(&format!("/apis/{GROUP}")).await {
            Ok(g) => g,
            Err(Fail::Status(_)) => return Ok(Vec::new()),
            Err(f) => return Err(describe(f, &self.target, "discover coordination.k8s.io")),
        };
        let mut versions: Vec<String> = group
            .preferred_version
            .iter()
            .map(|v| v.version.clone())
            .collect();
        for v in &group.versions {
            if !versions.contains(&v.version) {
                versions.push(v.version.clone());
            }
        }
        for version in versions {
            let resources: APIResourceList = match self
                .get(&format!("/apis/{GROUP}/{version}"))
                .await
            {
                Ok(r) => r,
                Err(Fail::Status(_)) => continue,
                Err(f) => return Err(describe(f, &self.target, "discover coordination.k8s.io")),
            };
            if resources
                .resources
                .iter()
                .any(|r| r.name == "leasecandidates")
            {
                let path = format!("/apis/{GROUP}/{version}/leasecandidates");
                let mut items: Vec<serde_json::Value> =
                    self.optional(&path, "leasecandidates", None).await?;
                for item in &mut items {
                    if let Some(map) = item.as_object_mut() {
                        map.insert("apiVersion".into(), format!("{GROUP}/{version}").into());
                        map.insert("kind".into(), "LeaseCandidate".into());
                    }
                }
                return Ok(items);
            }
        }
        Ok(Vec::new())
    }

    /// The server's Date header and the local time it arrived, when the server sends one.
    async fn server_clock(&self) -> Option<(Timestamp, Timestamp)> {
        let (headers, _) = self.fetch("/version").await.ok()?;
        let local = Timestamp::now();
        let date = headers
            .get(http::header::DATE)?
            .to_str()
            .ok()
            .and_then(|d| k8s_openapi::jiff::fmt::rfc2822::parse(d).ok())?;
        Some((date.timestamp(), local))
    }

    /// The server's version and clock skew, from `/version` and its Date header; `taken_at` is
    /// set when the read ends (`finish_snapshot_meta`).
    async fn server_info(&self) -> Result<(SnapshotMeta, SignedDuration), LiveError> {
        let (headers, body) = self
            .fetch("/version")
            .await
            .map_err(|f| describe(f, &self.target, "read the server version"))?;
        let local = Timestamp::now();
        let info: Option<Info> = serde_json::from_slice(&body).ok();
        // The Date header has whole seconds: its midpoint is the best estimate.
        let skew = headers
            .get(http::header::DATE)
            .and_then(|d| d.to_str().ok())
            .and_then(|d| k8s_openapi::jiff::fmt::rfc2822::parse(d).ok())
            .map(|z| (z.timestamp() + SignedDuration::from_millis(500)).duration_since(local));
        Ok((
            SnapshotMeta {
                server_version: info.map(|i| i.git_version),
                clock_skew_ms: skew.map(|s| s.as_millis() as i64),
                context: self.target.context.clone(),
                ..Default::default()
            },
            skew.unwrap_or_default(),
        ))
    }
}

/// A list's label and field selectors, sent as kubectl sends them.
#[derive(Clone, Copy, Default)]
struct Selectors<'a> {
    labels: Option<&'a str>,
    fields: Option<&'a str>,
}

impl<'a> Selectors<'a> {
    fn fields(fields: Option<&'a str>) -> Selectors<'a> {
        Selectors {
            labels: None,
            fields,
        }
    }
}

/// One page's URL: the continue token carries the resourceVersion of the first page; the first
/// page asks for any version the watch cache holds, as informers list, unless a quorum read is
/// wanted (no resourceVersion).
fn page_url(path: &str, selectors: Selectors, cont: Option<&str>, consistent: bool) -> String {
    let Selectors { labels, fields } = selectors;
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("limit", &PAGE_SIZE.to_string());
    if let Some(l) = labels {
        query.append_pair("labelSelector", l);
    }
    if let Some(f) = fields {
        query.append_pair("fieldSelector", f);
    }
    match cont {
        Some(c) => {
            query.append_pair("continue", c);
        }
        None if !consistent => {
            query.append_pair("resourceVersion", "0");
        }
        None => {}
    }
    format!("{path}?{}", query.finish())
}

fn status_of(code: http::StatusCode, body: &[u8], wire: Wire) -> kube::core::Status {
    let decoded = match wire {
        Wire::Json => serde_json::from_slice::<kube::core::Status>(body).ok(),
        Wire::Protobuf => protobuf::status(body)
            .map(|(reason, message)| kube::core::Status::failure(&message, &reason)),
    };
    let mut status = decoded.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        kube::core::Status::failure(text.trim(), code.canonical_reason().unwrap_or(""))
    });
    status.code = code.as_u16();
    status
}

/// How an answer is encoded, by its `Content-Type` (JSON when it names none).
fn wire_of(headers: &http::HeaderMap) -> Wire {
    let protobuf = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|t| t.to_str().ok())
        .is_some_and(protobuf::is_media_type);
    if protobuf { Wire::Protobuf } else { Wire::Json }
}

/// Cuts a list answer into its items as it streams in, in the answer's encoding.
enum Splitter {
    Json(ListSplitter),
    Protobuf(protobuf::ListSplitter),
}

impl Splitter {
    fn new(wire: Wire) -> Splitter {
        match wire {
            Wire::Json => Splitter::Json(ListSplitter::default()),
            Wire::Protobuf => Splitter::Protobuf(protobuf::ListSplitter::default()),
        }
    }

    fn feed(&mut self, data: &[u8], batch: &mut Vec<Vec<u8>>) -> Result<(), Fail> {
        match self {
            Splitter::Json(s) => s.feed(data, batch).map_err(Fail::Decode),
            Splitter::Protobuf(s) => s.feed(data, batch).map_err(protobuf_failure),
        }
    }

    /// The list's metadata, once the answer has ended.
    fn finish(self) -> Result<ListMeta, Fail> {
        match self {
            Splitter::Json(s) => {
                let shell = s.finish().map_err(Fail::Decode)?;
                let list: ListShell = serde_json::from_slice(&shell).map_err(Fail::Decode)?;
                Ok(list.metadata)
            }
            Splitter::Protobuf(s) => s.finish().map_err(protobuf_failure),
        }
    }
}

fn protobuf_failure(message: String) -> Fail {
    Fail::Decode(serde::de::Error::custom(message))
}

/// Whether a list item is the object `namespace/name`; `needle` (its name as JSON writes it)
/// spares decoding the JSON items that cannot be.
fn is_named(item: &[u8], wire: Wire, needle: &str, namespace: &str, name: &str) -> bool {
    match wire {
        Wire::Json => {
            memchr::memmem::find(item, needle.as_bytes()).is_some()
                && serde_json::from_slice::<Named>(item).is_ok_and(|o| {
                    o.metadata.namespace.as_deref() == Some(namespace)
                        && o.metadata.name.as_deref() == Some(name)
                })
        }
        Wire::Protobuf => {
            protobuf::object_key(item) == Some((namespace.as_bytes(), name.as_bytes()))
        }
    }
}

/// Where the items of a streamed list go.
trait Items {
    /// Items are handed on once this many are cut out.
    const BATCH: usize;
    /// Whether the list is asked for as protobuf (`Plan::pods_as_protobuf`).
    fn asks_protobuf(&self) -> bool {
        false
    }
    /// Takes items of the list, in order, as the answer encoded them.
    fn take(
        &mut self,
        items: Vec<Vec<u8>>,
        wire: Wire,
    ) -> impl Future<Output = Result<(), Fail>> + Send;
    /// The list starts again from its first page: the items taken so far are void.
    fn restart(&mut self) -> impl Future<Output = Result<(), Fail>> + Send;
}

/// Items typed one by one as they are cut out, so the answer is never held whole.
struct Typed<T> {
    items: Vec<T>,
    /// `Reader::managed_fields`.
    managed_fields: bool,
}

impl<T: DeserializeOwned + Send> Items for Typed<T> {
    const BATCH: usize = 1;

    /// Never asks for protobuf: a server that sends it unasked is not a Kubernetes API server.
    fn take(
        &mut self,
        items: Vec<Vec<u8>>,
        wire: Wire,
    ) -> impl Future<Output = Result<(), Fail>> + Send {
        if wire == Wire::Protobuf {
            let unasked = "an answer in protobuf, which was not asked for".to_string();
            return std::future::ready(Err(protobuf_failure(unasked)));
        }
        let typed = items.into_iter().try_for_each(|mut item| {
            if !self.managed_fields {
                drop_managed_fields(&mut item);
            }
            self.items
                .push(serde_json::from_slice(&item).map_err(Fail::Decode)?);
            Ok(())
        });
        std::future::ready(typed)
    }

    fn restart(&mut self) -> impl Future<Output = Result<(), Fail>> + Send {
        self.items.clear();
        std::future::ready(Ok(()))
    }
}

/// Items sent on to the reader of the pods, untyped; whether to ask for them as protobuf.
struct Fed<'f>(&'f PodFeed, bool);

impl Items for Fed<'_> {
    const BATCH: usize = POD_BATCH;

    fn asks_protobuf(&self) -> bool {
        self.1
    }

    async fn take(&mut self, items: Vec<Vec<u8>>, wire: Wire) -> Result<(), Fail> {
        self.send(PodBatch::Items(items, wire)).await
    }

    async fn restart(&mut self) -> Result<(), Fail> {
        self.send(PodBatch::Restart).await
    }
}

impl Fed<'_> {
    async fn send(&self, batch: PodBatch) -> Result<(), Fail> {
        self.0
            .send(batch)
            .await
            .map_err(|_| Fail::Decode(serde::de::Error::custom("the reader of the pods stopped")))
    }
}

fn spawn<T, F, Fut>(reader: &Arc<Reader>, f: F) -> Task<T>
where
    T: Send + 'static,
    F: FnOnce(Arc<Reader>) -> Fut,
    Fut: std::future::Future<Output = Result<T, LiveError>> + Send + 'static,
{
    tokio::spawn(f(reader.clone()))
}

async fn join<T>(task: Task<T>) -> Result<T, LiveError> {
    match task.await {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(LiveError::new(format!(
            "reading the cluster was interrupted: {e}"
        ))),
    }
}

/// Reads the cluster as `plan` says: the pods that hold resources go to `pods` as their list
/// streams in; the returned dump holds the rest of what the file source would produce (and the
/// pod `plan.pod` names when that list does not hold it), with every FailedScheduling event
/// read: which are the latest of pending pods is for the reader of the pods to say
/// (`events::latest_of_pending`).
pub async fn read(target: &Target, plan: &Plan, pods: PodFeed) -> Result<Dump, LiveError> {
    let (reader, progress) = Reader::connect(target, plan.snapshot)?;
    // Registered up front so the progress line counts every kind from the start.
    let mut kinds = vec![
        "nodes",
        "pods",
        "namespaces",
        "priorityclasses",
        "poddisruptionbudgets",
        "persistentvolumeclaims",
        "persistentvolumes",
        "storageclasses",
        "csinodes",
        "csidrivers",
        "csistoragecapacities",
        "volumeattachments",
        "services",
        "replicationcontrollers",
        "replicasets",
        "statefulsets",
        "runtimeclasses",
        "deviceclasses",
        "resourceslices",
        "resourceclaims",
        "resourceclaimtemplates",
    ];
    if plan.snapshot || plan.pending_events || plan.pod.is_some() {
        kinds.push("events");
    }
    if plan.snapshot {
        kinds.extend(["leases", "leasecandidates"]);
    }
    let controllers = (plan.snapshot || plan.controllers_of.is_some()).then(|| {
        kinds.extend(CONTROLLER_KINDS);
        plan.controllers_of.clone().filter(|_| !plan.snapshot)
    });
    for &k in &kinds {
        progress.kind(k);
    }
    let mut indicator = Indicator::start(progress, plan.progress);

    // The server's version chooses the scheduler release modelled.
    let meta = spawn(&reader, |r| async move { r.server_info().await });
    let nodes = spawn(&reader, |r| async move { r.required::<Node>(None).await });
    let namespaces = spawn(
        &reader,
        |r| async move { r.optional_kind::<Namespace>().await },
    );
    let priority_classes = spawn(&reader, |r| async move {
        r.optional_kind::<PriorityClass>().await
    });
    let pdbs = spawn(&reader, |r| async move {
        r.optional_kind::<PodDisruptionBudget>().await
    });
    let pvcs = spawn(&reader, |r| async move {
        r.optional_kind::<PersistentVolumeClaim>().await
    });
    let pvs = spawn(&reader, |r| async move {
        r.optional_kind::<PersistentVolume>().await
    });
    let storage_classes = spawn(&reader, |r| async move {
        r.optional_kind::<StorageClass>().await
    });
    let csi_nodes = spawn(
        &reader,
        |r| async move { r.optional_kind::<CSINode>().await },
    );
    let csi_drivers = spawn(
        &reader,
        |r| async move { r.optional_kind::<CSIDriver>().await },
    );
    let capacities = spawn(&reader, |r| async move {
        r.optional_kind::<CSIStorageCapacity>().await
    });
    let attachments = spawn(&reader, |r| async move {
        r.optional_kind::<VolumeAttachment>().await
    });
    let services = spawn(
        &reader,
        |r| async move { r.optional_kind::<Service>().await },
    );
    let rcs = spawn(&reader, |r| async move {
        r.optional_kind::<ReplicationController>().await
    });
    let replica_sets = spawn(
        &reader,
        |r| async move { r.optional_kind::<ReplicaSet>().await },
    );
    let stateful_sets = spawn(&reader, |r| async move {
        r.optional_kind::<StatefulSet>().await
    });
    let runtime_classes = spawn(&reader, |r| async move {
        r.optional_kind::<RuntimeClass>().await
    });
    let device_classes = spawn(&reader, |r| async move {
        r.optional_kind::<DeviceClass>().await
    });
    let resource_slices = spawn(&reader, |r| async move {
        r.optional_kind::<ResourceSlice>().await
    });
    let resource_claims = spawn(&reader, |r| async move {
        r.optional_kind::<ResourceClaim>().await
    });
    let resource_claim_templates = spawn(&reader, |r| async move {
        r.optional_kind::<ResourceClaimTemplate>().await
    });
    let the_pod = plan
        .pod
        .clone()
        .map(|(ns, name)| spawn(&reader, |r| async move { r.pod(&ns, &name).await }));
    let events = (plan.snapshot || plan.pending_events || plan.pod.is_some()).then(|| {
        let pod = plan.pod.clone();
        spawn(&reader, |r| async move {
            r.failed_scheduling_events(pod.as_ref()).await
        })
    });
    let leases = plan
        .snapshot
        .then(|| spawn(&reader, |r| async move { r.optional_kind::<Lease>().await }));
    let candidates = plan
        .snapshot
        .then(|| spawn(&reader, |r| async move { r.lease_candidates().await }));
    let controllers = controllers
        .map(|namespace| spawn(&reader, |r| async move { r.controllers(namespace).await }));

    // The pods stream here, on the caller's task, while the other lists run.
    let listing_pods = async {
        let listed = reader
            .stream_pods(&pods, plan.pods_as_protobuf, plan.pod.as_ref())
            .await;
        drop(pods);
        listed
    };
    let (pod_listed, nodes) = futures::join!(listing_pods, join(nodes));
    // Nodes and pods first, so their errors are the ones reported.
    let nodes = nodes?;
    let pod_listed = pod_listed?;
    let mut dump = Dump {
        nodes,
        namespaces: join(namespaces).await?,
        priority_classes: join(priority_classes).await?,
        pdbs: join(pdbs).await?,
        pvcs: join(pvcs).await?,
        pvs: join(pvs).await?,
        storage_classes: join(storage_classes).await?,
        csi_nodes: join(csi_nodes).await?,
        csi_drivers: join(csi_drivers).await?,
        csi_storage_capacities: join(capacities).await?,
        volume_attachments: join(attachments).await?,
        services: join(services).await?,
        replication_controllers: join(rcs).await?,
        replica_sets: join(replica_sets).await?,
        stateful_sets: join(stateful_sets).await?,
        runtime_classes: join(runtime_classes).await?,
        device_classes: join(device_classes).await?,
        resource_slices: join(resource_slices).await?,
        resource_claims: join(resource_claims).await?,
        resource_claim_templates: join(resource_claim_templates).await?,
        ..Default::default()
    };
    if let Some(task) = the_pod
        && let Some(pod) = join(task).await?
        && !pod_listed
    {
        dump.pods.push(pod);
    }
    if let Some(task) = events {
        dump.events = join(task).await?;
    }
    if let Some(task) = leases {
        dump.leases = join(task).await?;
    }
    if let Some(task) = candidates {
        dump.lease_candidates = join(task).await?;
    }
    if let Some(task) = controllers {
        (
            dump.deployments,
            dump.daemon_sets,
            dump.jobs,
            dump.cron_jobs,
        ) = join(task).await?;
    }
    let (meta, skew) = join(meta).await?;
    dump.meta = SnapshotMeta {
        // When the last list came back, by the server's clock: every object read is older.
        taken_at: plan.snapshot.then(|| Timestamp::now() + skew),
        ..meta
    };
    indicator.stop();
    let mut warnings = std::mem::take(&mut *reader.warnings.lock().expect("warnings lock"));
    warnings.sort_by_key(|(kind, _)| kinds.iter().position(|k| k == kind));
    dump.warnings = warnings.into_iter().map(|(_, w)| w).collect();
    Ok(dump)
}

/// Any object, for its namespace and name.
#[derive(serde::Deserialize)]
struct Named {
    #[serde(default)]
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
}

/// The kinds read only for their ownership of pods.
const CONTROLLER_KINDS: [&str; 4] = ["deployments", "daemonsets", "jobs", "cronjobs"];

/// The pods a label and field selector select, by namespace and name: the selectors go to the
/// API server as query parameters, as kubectl sends them, so it selects exactly as `kubectl get
/// pods -l … --field-selector …` would.
pub async fn select_pods(
    target: &Target,
    selection: &PodSelection,
) -> Result<Vec<(String, String)>, LiveError> {
    let (reader, _) = Reader::connect(target, false)?;
    let selectors = Selectors {
        labels: selection.labels.as_deref(),
        fields: selection.fields.as_deref(),
    };
    let path = collection_path::<Pod>(selection.namespace.as_deref());
    match reader.list_at::<Named>(&path, "pods", selectors).await {
        Ok((pods, _)) => Ok(pods
            .into_iter()
            .map(|p| {
                (
                    p.metadata.namespace.unwrap_or_default(),
                    p.metadata.name.unwrap_or_default(),
                )
            })
            .collect()),
        Err(Fail::Status(s)) if s.code == 400 => Err(LiveError {
            message: format!("the API server refused the selector: {}", s.message),
            detail: None,
        }),
        Err(f) => Err(describe(f, target, "list pods by selector")),
    }
}

/// The namespaces holding an object of a kind by this name: one list across namespaces,
/// narrowed to the name by the server, for the hint of a "not found" (`found in namespace
/// shop: add -n shop`). Nothing when the list is not allowed.
pub async fn namespaces_holding(
    target: &Target,
    plural: &str,
    name: &str,
) -> Result<Vec<String>, LiveError> {
    let fields = format!("metadata.name={name}");
    let mut namespaces: Vec<String> = names(target, plural, None, Some(&fields))
        .await?
        .into_iter()
        .map(|(ns, _)| ns)
        .collect();
    namespaces.dedup();
    Ok(namespaces)
}

/// The collection of a resource by its plural name, in one namespace or all.
fn path_of(plural: &str, namespace: Option<&str>) -> Option<String> {
    Some(match plural {
        "nodes" => collection_path::<Node>(None),
        "namespaces" => collection_path::<Namespace>(None),
        "pods" => collection_path::<Pod>(namespace),
        "deployments" => collection_path::<Deployment>(namespace),
        "daemonsets" => collection_path::<DaemonSet>(namespace),
        "statefulsets" => collection_path::<StatefulSet>(namespace),
        "replicasets" => collection_path::<ReplicaSet>(namespace),
        "replicationcontrollers" => collection_path::<ReplicationController>(namespace),
        "jobs" => collection_path::<Job>(namespace),
        "cronjobs" => collection_path::<CronJob>(namespace),
        "leases" => collection_path::<Lease>(namespace),
        _ => return None,
    })
}

/// The namespaces and names of a resource's objects (by plural name), sorted, read as metadata
/// only; nothing when the list is not allowed. For completion and hints.
pub async fn names(
    target: &Target,
    plural: &str,
    namespace: Option<&str>,
    fields: Option<&str>,
) -> Result<Vec<(String, String)>, LiveError> {
    let path = path_of(plural, namespace)
        .ok_or_else(|| LiveError::new(format!("no such resource {plural:?}")))?;
    let (reader, _) = Reader::connect(target, false)?;
    match reader.list::<Named>(&path, "objects", fields).await {
        Ok(items) => {
            let mut named: Vec<(String, String)> = items
                .into_iter()
                .map(|o| {
                    (
                        o.metadata.namespace.unwrap_or_default(),
                        o.metadata.name.unwrap_or_default(),
                    )
                })
                .collect();
            named.sort();
            Ok(named)
        }
        Err(Fail::Status(_)) => Ok(Vec::new()),
        Err(f) => Err(describe(f, target, &format!("list {plural}"))),
    }
}

/// What `lease` reads.
#[derive(Clone, Debug, Default)]
pub struct LeasePlan {
    /// Only this namespace's leases (`-n`); all namespaces otherwise.
    pub namespace: Option<String>,
    /// Narrows the lease list (`metadata.name=…`, or leaving out node heartbeats).
    pub field_selector: Option<String>,
    /// Also the nodes, for node heartbeats.
    pub nodes: bool,
    pub progress: bool,
}

/// Leases as read live, with the clock to measure them by.
pub struct LeaseRead {
    /// Leases, LeaseCandidates, the pods of the namespaces holding leader leases (to match
    /// holders), nodes when asked for, and the warnings of the read.
    pub dump: Dump,
    /// The API server's Date header and the local time it was read at.
    pub server_date: Option<(Timestamp, Timestamp)>,
    /// Where a watch of the same leases resumes.
    pub resource_version: String,
}

fn lease_path(namespace: Option<&str>) -> String {
    collection_path::<Lease>(namespace)
}

/// Reads leases for `lease`: the leases first, then concurrently the server's clock, lease
/// candidates, the pods that may hold them and, for `--nodes`, the nodes.
pub async fn read_leases(target: &Target, plan: &LeasePlan) -> Result<LeaseRead, LiveError> {
    let (reader, progress) = Reader::connect(target, false)?;
    let mut indicator = Indicator::start(progress, plan.progress);
    let clock = spawn(&reader, |r| async move { Ok(r.server_clock().await) });
    let candidates = spawn(&reader, |r| async move { r.lease_candidates().await });
    let nodes = plan
        .nodes
        .then(|| spawn(&reader, |r| async move { r.optional_kind::<Node>().await }));
    let path = lease_path(plan.namespace.as_deref());
    let (leases, resource_version): (Vec<Lease>, String) = match reader
        .list_at(
            &path,
            "leases",
            Selectors::fields(plan.field_selector.as_deref()),
        )
        .await
    {
        Ok(listed) => listed,
        Err(Fail::Status(s)) if s.code == 403 => {
            let scope = plan
                .namespace
                .as_deref()
                .map_or("in all namespaces".to_string(), |ns| {
                    format!("in namespace {ns:?}")
                });
            return Err(LiveError {
                message: format!(
                    "permission denied: this user may not list leases {scope} (403 Forbidden); kubectl-sched lease needs \"list\" and \"watch\" on \"leases\" (API group \"coordination.k8s.io\"): docs/live.md has a read-only ClusterRole"
                ),
                detail: Some(s.message),
            });
        }
        Err(f) => return Err(describe(f, target, "list leases")),
    };
    // Holders are pods of the namespaces that hold leader-election leases.
    let mut namespaces: Vec<String> = leases
        .iter()
        .filter_map(|l| l.metadata.namespace.clone())
        .filter(|ns| ns != crate::lease::NODE_LEASE_NAMESPACE)
        .collect();
    namespaces.sort();
    namespaces.dedup();
    let pod_lists: Vec<Task<Vec<Pod>>> = namespaces
        .into_iter()
        .map(|ns| {
            spawn(&reader, move |r| async move {
                let path = collection_path::<Pod>(Some(&ns));
                r.optional(&path, "pods", Some(POD_FIELD_SELECTOR)).await
            })
        })
        .collect();
    let mut dump = Dump {
        leases,
        lease_candidates: join(candidates).await?,
        ..Default::default()
    };
    for task in pod_lists {
        dump.pods.extend(join(task).await?);
    }
    // A holder may run in another namespace than its lease (cert-manager's lives in
    // kube-system): look those pods up by name, across namespaces, one request each.
    let mut unmatched: Vec<String> = dump
        .leases
        .iter()
        .filter(|l| l.metadata.namespace.as_deref() != Some(crate::lease::NODE_LEASE_NAMESPACE))
        .filter_map(crate::lease::holder)
        .map(|id| crate::lease::identity_host(id).to_string())
        .filter(|host| {
            !dump.pods.iter().any(|p| {
                p.metadata.name.as_deref() == Some(host.as_str())
                    || p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(host.as_str())
            })
        })
        .collect();
    unmatched.sort();
    unmatched.dedup();
    let lookups: Vec<Task<Vec<Pod>>> = unmatched
        .into_iter()
        .map(|host| {
            spawn(&reader, move |r| async move {
                let fields = format!("metadata.name={host}");
                r.optional(&collection_path::<Pod>(None), "pods", Some(&fields))
                    .await
            })
        })
        .collect();
    for task in lookups {
        dump.pods.extend(join(task).await?);
    }
    if let Some(task) = nodes {
        dump.nodes = join(task).await?;
    }
    let server_date = join(clock).await?;
    indicator.stop();
    dump.warnings = std::mem::take(&mut *reader.warnings.lock().expect("warnings lock"))
        .into_iter()
        .map(|(_, w)| w)
        .collect();
    Ok(LeaseRead {
        dump,
        server_date,
        resource_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Node;

    fn typed(managed_fields: bool) -> Node {
        let mut typed = Typed::<Node> {
            items: Vec::new(),
            managed_fields,
        };
        let item = br#"{"metadata":{"name":"a","managedFields":[{"manager":"kubectl"}]}}"#;
        assert!(futures::executor::block_on(typed.take(vec![item.to_vec()], Wire::Json)).is_ok());
        typed.items.remove(0)
    }

    #[test]
    fn lists_lose_managed_fields_unless_a_snapshot_keeps_them() {
        let node = typed(false);
        assert_eq!(node.metadata.name.as_deref(), Some("a"));
        assert!(node.metadata.managed_fields.is_none());
        assert_eq!(
            typed(true).metadata.managed_fields.map(|m| m.len()),
            Some(1)
        );
    }
}
