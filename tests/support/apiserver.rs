//! A fake Kubernetes API server for the integration tests: HTTPS on loopback with a CA generated
//! per server, serving fixture objects with the API's list semantics (pagination with continue
//! tokens, field and label selectors, resourceVersion), get, watch (initial events, history after
//! a resourceVersion, live changes, bookmarks, 410 for compacted versions), discovery and
//! `/version`. It records every request, authenticates bearer tokens and client certificates,
//! and injects faults (error statuses, delays) per resource. Pods lists (and their errors) are
//! answered in protobuf to a client that accepts it, as a real API server answers them.
//!
//! It runs on its own tokio runtime, so both plain `#[test]`s that start the binary and async
//! tests that use a client in-process can use it.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;

/// A resource the server serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
}

impl Resource {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const fn r(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> Resource {
    Resource {
        group,
        version,
        kind,
        plural,
        namespaced,
    }
}

/// Everything the scheduler reads, plus Secrets (so tests can prove they are never asked for).
pub const RESOURCES: &[Resource] = &[
    r("", "v1", "Node", "nodes", false),
    r("", "v1", "Pod", "pods", true),
    r("", "v1", "Namespace", "namespaces", false),
    r(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
    ),
    r("", "v1", "PersistentVolume", "persistentvolumes", false),
    r("", "v1", "Service", "services", true),
    r(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        true,
    ),
    r("", "v1", "Event", "events", true),
    r("", "v1", "Secret", "secrets", true),
    r("", "v1", "ConfigMap", "configmaps", true),
    r("apps", "v1", "ReplicaSet", "replicasets", true),
    r("apps", "v1", "StatefulSet", "statefulsets", true),
    r("apps", "v1", "Deployment", "deployments", true),
    r("apps", "v1", "DaemonSet", "daemonsets", true),
    r("batch", "v1", "Job", "jobs", true),
    r("batch", "v1", "CronJob", "cronjobs", true),
    r(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        true,
    ),
    r(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        false,
    ),
    r(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        false,
    ),
    r("storage.k8s.io", "v1", "CSINode", "csinodes", false),
    r("storage.k8s.io", "v1", "CSIDriver", "csidrivers", false),
    r(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "csistoragecapacities",
        true,
    ),
    r(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        false,
    ),
    r("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", false),
    r(
        "resource.k8s.io",
        "v1",
        "DeviceClass",
        "deviceclasses",
        false,
    ),
    r(
        "resource.k8s.io",
        "v1",
        "ResourceSlice",
        "resourceslices",
        false,
    ),
    r(
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        "resourceclaims",
        true,
    ),
    r(
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        true,
    ),
    r("coordination.k8s.io", "v1", "Lease", "leases", true),
    r(
        "coordination.k8s.io",
        "v1beta1",
        "LeaseCandidate",
        "leasecandidates",
        true,
    ),
];

/// One request as received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    /// Who the request authenticated as (bearer token or client certificate), if anyone.
    pub user: Option<String>,
    pub user_agent: Option<String>,
    pub accept: Option<String>,
}

impl Recorded {
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }
}

/// Which requests a fault applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On {
    Any,
    /// A list without a continue token.
    FirstPage,
    /// A list with a continue token.
    Continue,
    Get,
    Watch,
}

/// An injected failure or delay.
#[derive(Clone, Debug)]
pub struct Fault {
    /// A resource plural, or a path such as "/version"; `*` for every request.
    pub target: String,
    pub on: On,
    pub status: Option<u16>,
    pub delay: Duration,
    /// How many matching requests it applies to (`None`: all).
    pub times: Option<usize>,
}

impl Fault {
    pub fn status(target: &str, code: u16) -> Fault {
        Fault {
            target: target.into(),
            on: On::Any,
            status: Some(code),
            delay: Duration::ZERO,
            times: None,
        }
    }
    pub fn delay(target: &str, delay: Duration) -> Fault {
        Fault {
            target: target.into(),
            on: On::Any,
            status: None,
            delay,
            times: None,
        }
    }
    pub fn on(mut self, on: On) -> Fault {
        self.on = on;
        self
    }
    pub fn times(mut self, n: usize) -> Fault {
        self.times = Some(n);
        self
    }
}

#[derive(Clone, Debug)]
pub struct WatchEvent {
    pub rv: u64,
    pub kind: &'static str,
    pub resource: Resource,
    pub object: Value,
}

#[derive(Default)]
struct Store {
    rv: u64,
    /// (group, plural, namespace, name) → object.
    objects: BTreeMap<(String, String, String, String), Value>,
    history: Vec<WatchEvent>,
    /// Watches from versions older than this get 410 Gone.
    compacted: u64,
}

#[derive(Default)]
struct Config {
    faults: Vec<(Fault, usize)>,
    require_auth: bool,
    tokens: HashMap<String, String>,
    /// Client certificate DER → user.
    certs: HashMap<Vec<u8>, String>,
    /// The most objects one page holds, whatever the client's limit (servers may return fewer).
    max_page: Option<usize>,
    /// Resources (plural) the server pretends not to serve.
    hidden: Vec<String>,
    clock_skew: Duration,
    clock_ahead: bool,
    /// Longest a watch stays open.
    max_watch: Duration,
    /// What `/version` reports as gitVersion (default v1.34.1).
    git_version: Option<String>,
    /// List bodies are sent in frames of this many bytes, as a large answer arrives.
    list_frames: Option<usize>,
    /// A resource (plural) whose lists break off after this many bytes, the connection lost.
    broken_list: Option<(String, usize)>,
    /// Answers JSON even to a client that asks for protobuf, as a server without it would.
    json_only: bool,
}

struct State {
    store: Mutex<Store>,
    config: Mutex<Config>,
    requests: Mutex<Vec<Recorded>>,
    changed: Notify,
    /// Connections still being served: a client that exits early (on a 401, say) may leave
    /// requests that are read and recorded after it has gone.
    open_connections: AtomicUsize,
}

/// Counts a connection as served when its task ends, however it ends.
struct ConnectionClosed(Arc<State>);

impl Drop for ConnectionClosed {
    fn drop(&mut self) {
        self.0.open_connections.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Keys and certificates of the server's CA.
pub struct Pki {
    pub ca_pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl Pki {
    pub fn new(name: &str) -> Pki {
        let key = rcgen::KeyPair::generate().expect("CA key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).expect("CA certificate");
        Pki {
            ca_pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A certificate signed by this CA: (certificate PEM, key PEM, certificate DER).
    pub fn issue(
        &self,
        names: &[&str],
        common_name: &str,
        client: bool,
    ) -> (String, String, Vec<u8>) {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, common_name);
        params.extended_key_usages = vec![if client {
            rcgen::ExtendedKeyUsagePurpose::ClientAuth
        } else {
            rcgen::ExtendedKeyUsagePurpose::ServerAuth
        }];
        let cert = params.signed_by(&key, &self.issuer).expect("certificate");
        (cert.pem(), key.serialize_pem(), cert.der().to_vec())
    }
}

pub struct ApiServer {
    pub addr: SocketAddr,
    pub pki: Pki,
    state: Arc<State>,
    runtime: Option<tokio::runtime::Runtime>,
}

type Body = BoxBody<Bytes, std::io::Error>;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed()
}

/// A body in frames of `size` bytes, broken off (the connection lost) after `cut` bytes.
fn framed(bytes: Vec<u8>, size: usize, cut: Option<usize>) -> Body {
    let bytes = Bytes::from(bytes);
    let end = cut.map_or(bytes.len(), |c| c.min(bytes.len()));
    let mut frames: Vec<Result<Frame<Bytes>, std::io::Error>> = (0..end)
        .step_by(size.max(1))
        .map(|at| Ok(Frame::data(bytes.slice(at..(at + size.max(1)).min(end)))))
        .collect();
    if cut.is_some() {
        frames.push(Err(std::io::Error::other("connection lost")));
    }
    StreamBody::new(futures::stream::iter(frames)).boxed()
}

impl ApiServer {
    /// Starts a server on a free loopback port, with a new CA.
    pub fn start() -> ApiServer {
        let pki = Pki::new("fake-apiserver-ca");
        let (cert_pem, key_pem, _) =
            pki.issue(&["127.0.0.1", "localhost"], "fake-apiserver", false);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for c in rustls_pemfile(&pki.ca_pem) {
            roots.add(c).expect("CA into root store");
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .allow_unauthenticated()
        .build()
        .expect("client verifier");
        let key = rustls::pki_types::PrivateKeyDer::try_from(pem_der(&key_pem, "PRIVATE KEY"))
            .expect("server key");
        let tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_client_cert_verifier(verifier)
            .with_single_cert(rustls_pemfile(&cert_pem), key)
            .expect("server certificate");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("server runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local address");
        let state = Arc::new(State {
            store: Mutex::new(Store::default()),
            config: Mutex::new(Config {
                max_watch: Duration::from_secs(30),
                ..Default::default()
            }),
            requests: Mutex::new(Vec::new()),
            changed: Notify::new(),
            open_connections: Default::default(),
        });
        let accept_state = state.clone();
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                let state = accept_state.clone();
                state.open_connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let _closed = ConnectionClosed(state.clone());
                    // Handshakes a client refuses (an untrusted CA) just end the connection.
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let peer = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .map(|c| c.to_vec());
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        let peer = peer.clone();
                        async move { Ok::<_, Infallible>(handle(state, req, peer).await) }
                    });
                    let mut builder = hyper::server::conn::http1::Builder::new();
                    builder.auto_date_header(false);
                    let _ = builder.serve_connection(TokioIo::new(tls), service).await;
                });
            }
        });
        ApiServer {
            addr,
            pki,
            state,
            runtime: Some(runtime),
        }
    }

    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    // ---- objects ----

    /// Loads every object of a YAML or JSON file (Lists and multi-document files included).
    pub fn load(&self, path: &std::path::Path) {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let docs = kubectl_sched::source::file::parse_documents(&path.display().to_string(), bytes)
            .expect("fixture parses");
        for doc in docs {
            self.add_document(doc);
        }
    }

    fn add_document(&self, doc: Value) {
        if doc
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"))
        {
            if let Some(items) = doc.get("items").and_then(Value::as_array) {
                for item in items.clone() {
                    self.add_document(item);
                }
            }
            return;
        }
        if resource_of(&doc).is_some() {
            self.apply(doc);
        }
    }

    /// Creates or replaces an object (by apiVersion, kind, namespace, name) and records a watch
    /// event; returns its new resourceVersion.
    pub fn apply(&self, mut object: Value) -> u64 {
        let res = resource_of(&object).unwrap_or_else(|| panic!("no resource serves {object}"));
        let mut store = self.state.store.lock().unwrap();
        store.rv += 1;
        let rv = store.rv;
        let meta = object
            .as_object_mut()
            .expect("an object")
            .entry("metadata")
            .or_insert_with(|| json!({}));
        if res.namespaced
            && meta
                .get("namespace")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            meta["namespace"] = json!("default");
        }
        meta["resourceVersion"] = json!(rv.to_string());
        let key = object_key(&res, &object);
        let kind = if store.objects.insert(key, object.clone()).is_some() {
            "MODIFIED"
        } else {
            "ADDED"
        };
        store.history.push(WatchEvent {
            rv,
            kind,
            resource: res,
            object,
        });
        drop(store);
        self.state.changed.notify_waiters();
        rv
    }

    /// Deletes an object; returns the deletion's resourceVersion, or `None` if it did not exist.
    pub fn delete(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<u64> {
        let res = RESOURCES
            .iter()
            .find(|r| r.plural == plural)
            .expect("known resource")
            .clone();
        let mut store = self.state.store.lock().unwrap();
        let key = (
            res.group.to_string(),
            res.plural.to_string(),
            namespace.unwrap_or("").to_string(),
            name.to_string(),
        );
        let mut object = store.objects.remove(&key)?;
        store.rv += 1;
        let rv = store.rv;
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        store.history.push(WatchEvent {
            rv,
            kind: "DELETED",
            resource: res,
            object,
        });
        drop(store);
        self.state.changed.notify_waiters();
        Some(rv)
    }

    pub fn object(&self, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        let res = RESOURCES.iter().find(|r| r.plural == plural)?;
        let key = (
            res.group.to_string(),
            res.plural.to_string(),
            namespace.unwrap_or("").to_string(),
            name.to_string(),
        );
        self.state.store.lock().unwrap().objects.get(&key).cloned()
    }

    pub fn resource_version(&self) -> u64 {
        self.state.store.lock().unwrap().rv
    }

    /// Forgets history up to now: watches from older versions get 410 Gone.
    pub fn compact(&self) {
        let mut store = self.state.store.lock().unwrap();
        store.compacted = store.rv;
        store.history.clear();
    }

    // ---- behaviour ----

    pub fn fault(&self, fault: Fault) {
        self.state.config.lock().unwrap().faults.push((fault, 0));
    }

    pub fn clear_faults(&self) {
        self.state.config.lock().unwrap().faults.clear();
    }

    /// The gitVersion `/version` reports, e.g. "v1.36.2-eks-4a2b".
    pub fn git_version(&self, v: &str) {
        self.state.config.lock().unwrap().git_version = Some(v.into());
    }

    /// Caps every page at `n` objects.
    /// Sends list bodies in frames of `size` bytes: items, strings and escapes split across
    /// frames, as a large answer arrives.
    /// Answers JSON even to a client that asks for protobuf.
    pub fn json_only(&self) {
        self.state.config.lock().unwrap().json_only = true;
    }

    pub fn list_frames(&self, size: usize) {
        self.state.config.lock().unwrap().list_frames = Some(size);
    }

    /// Breaks off every list of `plural` after `bytes` bytes of its body, the connection lost.
    pub fn break_lists(&self, plural: &str, bytes: usize) {
        self.state.config.lock().unwrap().broken_list = Some((plural.to_string(), bytes));
    }

    pub fn max_page(&self, n: usize) {
        self.state.config.lock().unwrap().max_page = Some(n);
    }

    /// Stops serving a resource (discovery and requests answer 404).
    pub fn hide(&self, plural: &str) {
        self.state.config.lock().unwrap().hidden.push(plural.into());
    }

    /// Requests without a known token or client certificate get 401.
    pub fn require_auth(&self) {
        self.state.config.lock().unwrap().require_auth = true;
    }

    pub fn add_token(&self, token: &str, user: &str) {
        self.state
            .config
            .lock()
            .unwrap()
            .tokens
            .insert(token.into(), user.into());
    }

    /// Issues a client certificate for `user`: (certificate PEM, key PEM).
    pub fn client_cert(&self, user: &str) -> (String, String) {
        let (cert, key, der) = self.pki.issue(&[], user, true);
        self.state
            .config
            .lock()
            .unwrap()
            .certs
            .insert(der, user.into());
        (cert, key)
    }

    /// The server's clock runs this far ahead of (or behind) the real one.
    pub fn clock_skew(&self, skew: Duration, ahead: bool) {
        let mut c = self.state.config.lock().unwrap();
        c.clock_skew = skew;
        c.clock_ahead = ahead;
    }

    pub fn max_watch(&self, d: Duration) {
        self.state.config.lock().unwrap().max_watch = d;
    }

    // ---- what was asked ----

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn requests_to(&self, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// Forgets what was asked, once every connection of the runs before has been served.
    pub fn clear_requests(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.state.open_connections.load(Ordering::SeqCst) > 0
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.state.requests.lock().unwrap().clear();
    }

    /// The tool is strictly read-only.
    pub fn assert_only_gets(&self) {
        for r in self.requests() {
            assert_eq!(r.method, "GET", "a request that is not a GET: {r:?}");
        }
        for r in self.requests() {
            assert!(
                !r.path.contains("/secrets"),
                "Secrets must never be read: {r:?}"
            );
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn rustls_pemfile(pem: &str) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    vec![rustls::pki_types::CertificateDer::from(pem_der(
        pem,
        "CERTIFICATE",
    ))]
}

/// The DER inside a single-block PEM.
fn pem_der(pem: &str, label: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    match label {
        "CERTIFICATE" => rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
            .expect("certificate PEM")
            .to_vec(),
        _ => rustls::pki_types::PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .expect("key PEM")
            .secret_der()
            .to_vec(),
    }
}

fn resource_of(object: &Value) -> Option<Resource> {
    let api_version = object.get("apiVersion").and_then(Value::as_str)?;
    let kind = object.get("kind").and_then(Value::as_str)?;
    RESOURCES
        .iter()
        .find(|r| r.kind == kind && r.api_version() == api_version)
        .cloned()
}

fn object_key(res: &Resource, object: &Value) -> (String, String, String, String) {
    let meta = &object["metadata"];
    let ns = if res.namespaced {
        meta["namespace"].as_str().unwrap_or("default")
    } else {
        ""
    };
    (
        res.group.to_string(),
        res.plural.to_string(),
        ns.to_string(),
        meta["name"].as_str().unwrap_or("").to_string(),
    )
}

// ---- request handling ----

enum Route {
    Version,
    CoreVersions,
    CoreResources,
    Groups,
    Group(String),
    GroupResources(String, String),
    Collection(Resource, Option<String>),
    Object(Resource, Option<String>, String),
    NotFound,
}

fn route(path: &str, hidden: &[String]) -> Route {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Route::Version,
        ["api"] => return Route::CoreVersions,
        ["api", "v1"] => return Route::CoreResources,
        ["apis"] => return Route::Groups,
        ["apis", g] => return Route::Group(g.to_string()),
        ["apis", g, v] => return Route::GroupResources(g.to_string(), v.to_string()),
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Route::NotFound,
    };
    let find = |plural: &str| {
        RESOURCES
            .iter()
            .find(|r| {
                r.group == group
                    && r.version == version
                    && r.plural == plural
                    && !hidden.iter().any(|h| h == plural)
            })
            .cloned()
    };
    match rest {
        [plural] => find(plural).map_or(Route::NotFound, |r| Route::Collection(r, None)),
        [plural, name] => match find(plural) {
            Some(r) if !r.namespaced => Route::Object(r, None, name.to_string()),
            _ => Route::NotFound,
        },
        ["namespaces", ns, plural] => match find(plural) {
            Some(r) if r.namespaced => Route::Collection(r, Some(ns.to_string())),
            _ => Route::NotFound,
        },
        ["namespaces", ns, plural, name] => match find(plural) {
            Some(r) if r.namespaced => Route::Object(r, Some(ns.to_string()), name.to_string()),
            _ => Route::NotFound,
        },
        _ => Route::NotFound,
    }
}

fn status_body(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code,
    })
}

fn now_http(config: &Config) -> String {
    let now = SystemTime::now();
    let t = if config.clock_ahead {
        now + config.clock_skew
    } else {
        now - config.clock_skew
    };
    let ts = k8s_openapi::jiff::Timestamp::try_from(t).expect("time in range");
    k8s_openapi::jiff::fmt::rfc2822::DateTimePrinter::new()
        .timestamp_to_rfc9110_string(&ts)
        .expect("HTTP date")
}

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn header(req: &Request<Incoming>, name: &str) -> Option<String> {
    let value = req.headers().get(name)?.to_str().ok()?;
    Some(value.to_string())
}

fn respond(code: u16, body: Body, date: &str) -> Response<Body> {
    respond_as(code, body, date, "application/json")
}

fn respond_as(code: u16, body: Body, date: &str, content_type: &str) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(code).expect("status code"))
        .header("content-type", content_type)
        .header("date", date)
        .body(body)
        .expect("response")
}

fn json_response(code: u16, value: &Value, date: &str) -> Response<Body> {
    respond(code, full(serde_json::to_vec(value).expect("JSON")), date)
}

/// `message` as the API server encodes it: `k8s\0`, then a `runtime.Unknown` holding `raw`.
fn protobuf_answer(kind: &str, raw: Vec<u8>) -> Vec<u8> {
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some("v1".into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [&b"k8s\0"[..], &prost::Message::encode_to_vec(&unknown)].concat()
}

fn protobuf_status(code: u16, reason: &str, message: &str, date: &str) -> Response<Body> {
    let status = k8s_pb::apimachinery::pkg::apis::meta::v1::Status {
        status: Some("Failure".into()),
        message: Some(message.into()),
        reason: Some(reason.into()),
        code: Some(code.into()),
        ..Default::default()
    };
    let body = protobuf_answer("Status", prost::Message::encode_to_vec(&status));
    respond_as(code, full(body), date, PROTOBUF)
}

/// A pods list in protobuf, its objects typed as the API server holds them.
fn protobuf_pods(items: Vec<Value>, list_rv: u64, cont: Option<(String, usize)>) -> Vec<u8> {
    use k8s_pb::apimachinery::pkg::apis::meta::v1::ListMeta;
    let items = items
        .into_iter()
        .map(|o| {
            let pod = serde_json::from_value(o).expect("a Pod the fake server holds");
            kubectl_sched::source::protobuf::pod::to_protobuf(pod)
        })
        .collect();
    let (r#continue, remaining_item_count) = match cont {
        Some((token, remaining)) => (Some(token), Some(remaining as i64)),
        None => (None, None),
    };
    let list = k8s_pb::api::core::v1::PodList {
        metadata: Some(ListMeta {
            resource_version: Some(list_rv.to_string()),
            r#continue,
            remaining_item_count,
            ..Default::default()
        }),
        items,
    };
    protobuf_answer("PodList", prost::Message::encode_to_vec(&list))
}

fn parse_query(q: Option<&str>) -> BTreeMap<String, String> {
    q.map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
    peer: Option<Vec<u8>>,
) -> Response<Body> {
    let path = req.uri().path().to_string();
    let query = parse_query(req.uri().query());
    let (user, date, require_auth, hidden) = {
        let c = state.config.lock().unwrap();
        let bearer = req
            .headers()
            .get("authorization")
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "));
        let user = bearer
            .and_then(|t| c.tokens.get(t).cloned())
            .or_else(|| peer.as_ref().and_then(|p| c.certs.get(p).cloned()));
        (user, now_http(&c), c.require_auth, c.hidden.clone())
    };
    state.requests.lock().unwrap().push(Recorded {
        method: req.method().to_string(),
        path: path.clone(),
        query: query.clone(),
        user: user.clone(),
        user_agent: header(&req, "user-agent"),
        accept: header(&req, "accept"),
    });
    if req.method() != hyper::Method::GET {
        return json_response(
            405,
            &status_body(
                405,
                "MethodNotAllowed",
                "the fake API server only serves GET",
            ),
            &date,
        );
    }
    if require_auth && user.is_none() {
        return json_response(
            401,
            &status_body(401, "Unauthorized", "Unauthorized"),
            &date,
        );
    }

    let route = route(&path, &hidden);
    let is_watch = matches!(query.get("watch").map(String::as_str), Some("true" | "1"));
    // Only pods are converted to protobuf here; a real server has every built-in kind in it.
    let protobuf = !is_watch
        && matches!(&route, Route::Collection(r, _) if r.plural == "pods")
        && header(&req, "accept").is_some_and(|a| a.contains(PROTOBUF))
        && !state.config.lock().unwrap().json_only;
    let (target, on) = match &route {
        Route::Collection(r, _) if is_watch => (r.plural.to_string(), On::Watch),
        Route::Collection(r, _) if query.contains_key("continue") => {
            (r.plural.to_string(), On::Continue)
        }
        Route::Collection(r, _) => (r.plural.to_string(), On::FirstPage),
        Route::Object(r, _, _) => (r.plural.to_string(), On::Get),
        _ => (path.clone(), On::Get),
    };
    // The first matching fault with uses left applies.
    let fault = {
        let mut c = state.config.lock().unwrap();
        c.faults
            .iter_mut()
            .find(|(f, used)| {
                (f.target == "*" || f.target == target)
                    && (f.on == On::Any || f.on == on)
                    && f.times.is_none_or(|t| *used < t)
            })
            .map(|(f, used)| {
                *used += 1;
                f.clone()
            })
    };
    if let Some(f) = fault {
        if !f.delay.is_zero() {
            tokio::time::sleep(f.delay).await;
        }
        if let Some(code) = f.status {
            let (reason, message) = fault_message(code, &route, user.as_deref());
            if protobuf {
                return protobuf_status(code, reason, &message, &date);
            }
            return json_response(code, &status_body(code, reason, &message), &date);
        }
    }

    match route {
        Route::Version => {
            let git_version = (state.config.lock().unwrap().git_version.clone())
                .unwrap_or_else(|| "v1.34.1".into());
            let minor = git_version
                .split('.')
                .nth(1)
                .unwrap_or_default()
                .to_string();
            json_response(
                200,
                &json!({
                    "major": "1", "minor": minor, "gitVersion": git_version, "gitCommit": "fake",
                    "gitTreeState": "clean", "buildDate": "2025-09-09T00:00:00Z", "goVersion": "go1.24.6",
                    "compiler": "gc", "platform": "linux/amd64",
                }),
                &date,
            )
        }
        Route::CoreVersions => json_response(
            200,
            &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}),
            &date,
        ),
        Route::CoreResources => json_response(200, &resource_list("", "v1", &hidden), &date),
        Route::Groups => {
            let mut names: Vec<&str> = RESOURCES
                .iter()
                .map(|r| r.group)
                .filter(|g| !g.is_empty())
                .collect();
            names.dedup();
            let groups: Vec<Value> = names.iter().map(|g| api_group(g)).collect();
            json_response(
                200,
                &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
                &date,
            )
        }
        Route::Group(g) if RESOURCES.iter().any(|r| r.group == g) => {
            json_response(200, &api_group(&g), &date)
        }
        Route::GroupResources(g, v) if RESOURCES.iter().any(|r| r.group == g && r.version == v) => {
            json_response(200, &resource_list(&g, &v, &hidden), &date)
        }
        Route::Collection(res, ns) if is_watch => watch(state, res, ns, query, date).await,
        Route::Collection(res, ns) => list(&state, &res, ns.as_deref(), &query, &date, protobuf),
        Route::Object(res, ns, name) => {
            let key = (
                res.group.to_string(),
                res.plural.to_string(),
                ns.clone().unwrap_or_default(),
                name.clone(),
            );
            match state.store.lock().unwrap().objects.get(&key) {
                Some(o) => json_response(200, o, &date),
                None => json_response(
                    404,
                    &status_body(
                        404,
                        "NotFound",
                        &format!("{} \"{name}\" not found", res.plural),
                    ),
                    &date,
                ),
            }
        }
        _ => json_response(
            404,
            &status_body(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ),
            &date,
        ),
    }
}

fn fault_message(code: u16, route: &Route, user: Option<&str>) -> (&'static str, String) {
    let user = user.unwrap_or("system:anonymous");
    let (plural, group, ns) = match route {
        Route::Collection(r, ns) | Route::Object(r, ns, _) => (r.plural, r.group, ns.clone()),
        _ => ("", "", None),
    };
    let scope = ns.map_or("at the cluster scope".to_string(), |ns| {
        format!("in the namespace \"{ns}\"")
    });
    match code {
        401 => ("Unauthorized", "Unauthorized".into()),
        403 => (
            "Forbidden",
            format!("{plural} is forbidden: User \"{user}\" cannot list resource \"{plural}\" in API group \"{group}\" {scope}"),
        ),
        404 => ("NotFound", "the server could not find the requested resource".into()),
        410 => (
            "Expired",
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.".into(),
        ),
        429 => ("TooManyRequests", "Too many requests, please try again later.".into()),
        500 => ("InternalError", "Internal error occurred: etcdserver: request timed out".into()),
        503 => ("ServiceUnavailable", "the server is currently unable to handle the request".into()),
        _ => ("Unknown", format!("injected status {code}")),
    }
}

fn api_group(group: &str) -> Value {
    let mut versions: Vec<&str> = RESOURCES
        .iter()
        .filter(|r| r.group == group)
        .map(|r| r.version)
        .collect();
    versions.dedup();
    // Stable versions are preferred, as the real server prefers them.
    versions.sort_by_key(|v| (v.contains("alpha") || v.contains("beta"), *v));
    let entries: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries, "preferredVersion": entries[0]})
}

fn resource_list(group: &str, version: &str, hidden: &[String]) -> Value {
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version && !hidden.iter().any(|h| h == r.plural))
        .map(|r| {
            json!({"name": r.plural, "singularName": r.kind.to_lowercase(), "namespaced": r.namespaced,
                   "kind": r.kind, "verbs": ["get", "list", "watch"]})
        })
        .collect();
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
}

/// A field of an object by dotted path, as field selectors read it ("" when absent).
fn field(object: &Value, path: &str) -> String {
    let mut v = object;
    for part in path.split('.') {
        match v.get(part) {
            Some(next) => v = next,
            None => return String::new(),
        }
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `a=b,c!=d,e==f` as the API server evaluates field selectors.
fn field_selector_matches(selector: &str, object: &Value) -> bool {
    selector.split(',').filter(|t| !t.is_empty()).all(|term| {
        if let Some((k, v)) = term.split_once("!=") {
            field(object, k) != v
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            field(object, k) == v
        } else {
            false
        }
    })
}

/// Splits at commas outside parentheses.
fn split_terms(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out.into_iter().filter(|t| !t.is_empty()).collect()
}

/// Label selectors: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`.
fn label_selector_matches(selector: &str, object: &Value) -> bool {
    let labels = object["metadata"]["labels"].as_object();
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let set = |s: &str| -> Vec<String> {
        s.trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(|v| v.trim().to_string())
            .collect()
    };
    split_terms(selector).into_iter().all(|term| {
        if let Some((k, vs)) = term.split_once(" notin ") {
            get(k.trim()).is_none_or(|v| !set(vs).iter().any(|x| x == v))
        } else if let Some((k, vs)) = term.split_once(" in ") {
            get(k.trim()).is_some_and(|v| set(vs).iter().any(|x| x == v))
        } else if let Some((k, v)) = term.split_once("!=") {
            get(k.trim()) != Some(v.trim())
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            get(k.trim()) == Some(v.trim())
        } else if let Some(k) = term.strip_prefix('!') {
            get(k.trim()).is_none()
        } else {
            get(term).is_some()
        }
    })
}

fn selected(object: &Value, ns: Option<&str>, query: &BTreeMap<String, String>) -> bool {
    ns.is_none_or(|ns| object["metadata"]["namespace"].as_str() == Some(ns))
        && query
            .get("fieldSelector")
            .is_none_or(|s| field_selector_matches(s, object))
        && query
            .get("labelSelector")
            .is_none_or(|s| label_selector_matches(s, object))
}

/// Continue tokens: opaque to clients, here "<resourceVersion>/<offset>".
fn list(
    state: &State,
    res: &Resource,
    ns: Option<&str>,
    query: &BTreeMap<String, String>,
    date: &str,
    protobuf: bool,
) -> Response<Body> {
    let (max_page, frames, cut) = {
        let c = state.config.lock().unwrap();
        let cut = c
            .broken_list
            .as_ref()
            .filter(|(plural, _)| plural == res.plural)
            .map(|(_, n)| *n);
        (c.max_page, c.list_frames, cut)
    };
    let store = state.store.lock().unwrap();
    let (list_rv, offset) = match query.get("continue") {
        Some(token) => match token
            .split_once('/')
            .and_then(|(rv, off)| Some((rv.parse::<u64>().ok()?, off.parse::<usize>().ok()?)))
        {
            Some(t) => t,
            None => {
                return json_response(
                    400,
                    &status_body(400, "BadRequest", "invalid continue token"),
                    date,
                );
            }
        },
        None => (store.rv, 0),
    };
    let items: Vec<&Value> = store
        .objects
        .iter()
        .filter(|((g, p, _, _), _)| g == res.group && p == res.plural)
        .map(|(_, o)| o)
        .filter(|o| selected(o, ns, query))
        .collect();
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|&l| l > 0);
    let page_size = match (limit, max_page) {
        (Some(l), Some(m)) => Some(l.min(m)),
        (l, m) => l.or(m),
    };
    let end = page_size.map_or(items.len(), |n| (offset + n).min(items.len()));
    let page: Vec<Value> = items[offset.min(items.len())..end]
        .iter()
        .map(|o| {
            // Items of a typed list carry no apiVersion or kind.
            let mut o = (*o).clone();
            if let Some(m) = o.as_object_mut() {
                m.remove("apiVersion");
                m.remove("kind");
            }
            o
        })
        .collect();
    let cont = (end < items.len()).then(|| (format!("{list_rv}/{end}"), items.len() - end));
    let (body, content_type) = if protobuf {
        (protobuf_pods(page, list_rv, cont), PROTOBUF)
    } else {
        let mut metadata = json!({"resourceVersion": list_rv.to_string()});
        if let Some((token, remaining)) = cont {
            metadata["continue"] = json!(token);
            metadata["remainingItemCount"] = json!(remaining);
        }
        let list = json!({"kind": format!("{}List", res.kind), "apiVersion": res.api_version(), "metadata": metadata, "items": page});
        (serde_json::to_vec(&list).expect("JSON"), "application/json")
    };
    let body = match (frames, cut) {
        (None, None) => full(body),
        (frames, cut) => framed(body, frames.unwrap_or(usize::MAX), cut),
    };
    respond_as(200, body, date, content_type)
}

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": object})).expect("JSON");
    line.push(b'\n');
    Bytes::from(line)
}

async fn watch(
    state: Arc<State>,
    res: Resource,
    ns: Option<String>,
    query: BTreeMap<String, String>,
    date: String,
) -> Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
    let max_watch = state.config.lock().unwrap().max_watch;
    let timeout = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map_or(max_watch, |t| Duration::from_secs(t).min(max_watch));
    let requested = query.get("resourceVersion").cloned().unwrap_or_default();
    let initial = query.get("sendInitialEvents").is_some_and(|v| v == "true");
    let bookmarks = query
        .get("allowWatchBookmarks")
        .is_some_and(|v| v == "true");
    let kind_matches = move |r: &Resource| r.group == res.group && r.plural == res.plural;
    let res2 = res.clone();
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        // Where the stream starts: a version, or now with the current objects as ADDED events.
        let start = {
            let store = state.store.lock().unwrap();
            match requested.parse::<u64>() {
                Ok(rv) if rv > 0 && !initial && rv < store.compacted => Err(status_body(
                    410,
                    "Expired",
                    &format!("too old resource version: {rv} ({})", store.compacted),
                )),
                Ok(rv) if rv > 0 && !initial => Ok((rv, Vec::new())),
                _ => {
                    let objects: Vec<Value> = store
                        .objects
                        .iter()
                        .filter(|((g, p, _, _), _)| g == res2.group && p == res2.plural)
                        .map(|(_, o)| o.clone())
                        .filter(|o| selected(o, ns.as_deref(), &query))
                        .collect();
                    Ok((store.rv, objects))
                }
            }
        };
        let mut cursor = match start {
            Err(status) => {
                let _ = tx.send(event_line("ERROR", &status)).await;
                return;
            }
            Ok((rv, objects)) => {
                for o in objects {
                    if tx.send(event_line("ADDED", &o)).await.is_err() {
                        return;
                    }
                }
                if initial && bookmarks {
                    let bookmark = json!({
                        "kind": res2.kind, "apiVersion": res2.api_version(),
                        "metadata": {"resourceVersion": rv.to_string(), "annotations": {"k8s.io/initial-events-end": "true"}},
                    });
                    if tx.send(event_line("BOOKMARK", &bookmark)).await.is_err() {
                        return;
                    }
                }
                rv
            }
        };
        loop {
            let notified = state.changed.notified();
            let events: Vec<WatchEvent> = {
                let store = state.store.lock().unwrap();
                store
                    .history
                    .iter()
                    .filter(|e| e.rv > cursor && kind_matches(&e.resource))
                    .cloned()
                    .collect()
            };
            for e in events {
                cursor = e.rv;
                if selected(&e.object, ns.as_deref(), &query)
                    && tx.send(event_line(e.kind, &e.object)).await.is_err()
                {
                    return;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::io::Error>(Frame::data(b)), rx))
    });
    respond(200, StreamBody::new(stream).boxed(), &date)
}
