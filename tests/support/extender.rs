//! The fake scheduler extender of `fixtures/conformance/README.md` ("Scheduler extenders"): it
//! serves every `http://127.0.0.1:PORT/<name>` of a configuration on one loopback port, answers
//! as an `extenders.yaml` describes, and records every request it receives.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The placeholder for the fake's address in configurations and expectations.
pub const PLACEHOLDER: &str = "127.0.0.1:PORT";

/// One request the fake received: the urlPrefix as the configuration writes it, the verb, and
/// the node names sent, sorted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub extender: String,
    pub verb: String,
    pub nodes: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Verb {
    Filter,
    Prioritize,
    Preempt,
}

impl Verb {
    fn key(self) -> &'static str {
        match self {
            Verb::Filter => "filter",
            Verb::Prioritize => "prioritize",
            Verb::Preempt => "preempt",
        }
    }
}

/// How one verb of one extender answers.
#[derive(Clone, Debug, Default)]
struct Answer {
    failed: BTreeMap<String, String>,
    unresolvable: BTreeMap<String, String>,
    error: Option<String>,
    http_status: Option<u16>,
    delay: Duration,
    scores: BTreeMap<String, i64>,
    drop_nodes: Vec<String>,
    /// Test-only: this body with status 200 instead of a well-formed answer.
    raw: Option<String>,
}

struct State {
    /// (name, verb path) → (verb, urlPrefix as written).
    routes: BTreeMap<(String, String), (Verb, String)>,
    answers: Mutex<BTreeMap<(String, Verb), Answer>>,
    requests: Mutex<Vec<Recorded>>,
}

pub struct FakeExtender {
    pub addr: SocketAddr,
    state: Arc<State>,
    runtime: Option<tokio::runtime::Runtime>,
}

/// TLS for the fake: its certificate and key (PEM), and the CA whose client certificates it
/// requires, if any.
pub struct ServerTls {
    pub cert_pem: String,
    pub key_pem: String,
    pub client_ca_pem: Option<String>,
}

fn duration(text: &str) -> Duration {
    let (number, unit) = text
        .find(|c: char| c.is_ascii_alphabetic())
        .map(|i| text.split_at(i))
        .unwrap_or_else(|| panic!("duration without a unit: {text:?}"));
    let n: f64 = number
        .parse()
        .unwrap_or_else(|_| panic!("bad duration {text:?}"));
    let seconds = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => panic!("unsupported duration unit in {text:?}"),
    };
    Duration::from_secs_f64(seconds)
}

fn string_map(v: &Value, at: &str) -> BTreeMap<String, String> {
    v.as_object()
        .unwrap_or_else(|| panic!("{at}: not a map"))
        .iter()
        .map(|(k, v)| {
            let reason = v
                .as_str()
                .unwrap_or_else(|| panic!("{at}.{k}: not a string"));
            (k.clone(), reason.to_string())
        })
        .collect()
}

/// One verb's entry of `extenders.yaml`; a key under the wrong verb is an error.
fn answer(verb: Verb, spec: &Value, at: &str) -> Answer {
    let mut a = Answer::default();
    for (key, v) in spec
        .as_object()
        .unwrap_or_else(|| panic!("{at}: not a map"))
    {
        let at = format!("{at}.{key}");
        match (verb, key.as_str()) {
            (_, "httpStatus") => a.http_status = Some(v.as_u64().expect("httpStatus") as u16),
            (_, "delay") => a.delay = duration(v.as_str().expect("delay")),
            (Verb::Filter, "failedNodes") => a.failed = string_map(v, &at),
            (Verb::Filter, "failedAndUnresolvableNodes") => a.unresolvable = string_map(v, &at),
            (Verb::Filter, "error") => a.error = Some(v.as_str().expect("error").to_string()),
            (Verb::Prioritize, "scores") => {
                for (node, s) in v.as_object().unwrap_or_else(|| panic!("{at}: not a map")) {
                    let s = s
                        .as_i64()
                        .unwrap_or_else(|| panic!("{at}.{node}: not a number"));
                    assert!(
                        (0..=10).contains(&s),
                        "{at}.{node}: score {s} outside 0..10"
                    );
                    a.scores.insert(node.clone(), s);
                }
            }
            (Verb::Preempt, "dropNodes") => {
                a.drop_nodes = v
                    .as_array()
                    .unwrap_or_else(|| panic!("{at}: not a list"))
                    .iter()
                    .map(|n| n.as_str().expect("node name").to_string())
                    .collect()
            }
            _ => panic!("{at}: not a key of {}", verb.key()),
        }
    }
    a
}

impl FakeExtender {
    /// Serves the extenders of `config` (YAML) over HTTP, answering as `answers` (the content of
    /// an `extenders.yaml`, possibly empty) describes.
    pub fn start(config: &str, answers: &str) -> FakeExtender {
        FakeExtender::serve(config, answers, None)
    }

    /// The same over HTTPS.
    pub fn start_tls(config: &str, answers: &str, tls: ServerTls) -> FakeExtender {
        FakeExtender::serve(config, answers, Some(tls))
    }

    fn serve(config: &str, answers: &str, tls: Option<ServerTls>) -> FakeExtender {
        let config: Value = serde_saphyr::from_str(config).expect("config YAML");
        let mut routes = BTreeMap::new();
        let mut names = Vec::new();
        for e in config["extenders"].as_array().into_iter().flatten() {
            let prefix = e["urlPrefix"].as_str().expect("urlPrefix").to_string();
            let name = prefix
                .rsplit('/')
                .find(|s| !s.is_empty())
                .expect("urlPrefix ends in a name")
                .to_string();
            for (key, verb) in [
                ("filterVerb", Verb::Filter),
                ("prioritizeVerb", Verb::Prioritize),
                ("preemptVerb", Verb::Preempt),
            ] {
                if let Some(v) = e[key].as_str() {
                    routes.insert((name.clone(), v.to_string()), (verb, prefix.clone()));
                }
            }
            names.push(name);
        }
        let mut table = BTreeMap::new();
        if !answers.trim().is_empty() {
            let doc: Value = serde_saphyr::from_str(answers).expect("extenders YAML");
            let doc = doc.as_object().expect("extenders.yaml: a map");
            for key in doc.keys() {
                assert_eq!(key, "extenders", "extenders.yaml: unknown key {key}");
            }
            for (name, verbs) in doc["extenders"].as_object().into_iter().flatten() {
                assert!(
                    names.contains(name),
                    "extenders.yaml: no urlPrefix names {name}"
                );
                let empty = Map::new();
                for (key, spec) in verbs.as_object().unwrap_or(&empty) {
                    let verb = match key.as_str() {
                        "filter" => Verb::Filter,
                        "prioritize" => Verb::Prioritize,
                        "preempt" => Verb::Preempt,
                        other => panic!("extenders.{name}: unknown verb {other}"),
                    };
                    let at = format!("extenders.{name}.{key}");
                    table.insert((name.clone(), verb), answer(verb, spec, &at));
                }
            }
        }
        let state = Arc::new(State {
            routes,
            answers: Mutex::new(table),
            requests: Mutex::new(Vec::new()),
        });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("fake extender runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local address");
        let acceptor = tls.map(acceptor);
        let accept_state = state.clone();
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let state = accept_state.clone();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(handle(&state, req).await) }
                    });
                    let http = hyper::server::conn::http1::Builder::new();
                    match acceptor {
                        None => {
                            let _ = http.serve_connection(TokioIo::new(tcp), service).await;
                        }
                        Some(acceptor) => {
                            // A client the fake refuses (no certificate) just loses the connection.
                            if let Ok(tls) = acceptor.accept(tcp).await {
                                let _ = http.serve_connection(TokioIo::new(tls), service).await;
                            }
                        }
                    }
                });
            }
        });
        FakeExtender {
            addr,
            state,
            runtime: Some(runtime),
        }
    }

    /// `config` with the placeholder replaced by this fake's address.
    pub fn configure(&self, config: &str) -> String {
        config.replace(PLACEHOLDER, &self.addr.to_string())
    }

    /// `text` with this fake's address written back as the placeholder.
    pub fn anonymise(&self, text: &str) -> String {
        text.replace(&self.addr.to_string(), PLACEHOLDER)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// From now on, `verb` of extender `name` answers `body` with status 200.
    pub fn answer_raw(&self, name: &str, verb: &str, body: &str) {
        let verb = match verb {
            "filter" => Verb::Filter,
            "prioritize" => Verb::Prioritize,
            "preempt" => Verb::Preempt,
            other => panic!("no verb {other}"),
        };
        let mut answers = self.state.answers.lock().unwrap();
        answers.entry((name.to_string(), verb)).or_default().raw = Some(body.to_string());
    }
}

impl Drop for FakeExtender {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn acceptor(tls: ServerTls) -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("protocol versions");
    let builder = match &tls.client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from_pem_slice(ca.as_bytes()).expect("client CA"))
                .expect("client CA into roots");
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(tls.cert_pem.as_bytes()).expect("certificate")],
            PrivateKeyDer::from_pem_slice(tls.key_pem.as_bytes()).expect("key"),
        )
        .expect("server certificate");
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

fn text(status: u16, body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("Content-Type", "text/plain")
        .body(Full::new(Bytes::from(body)))
        .expect("response")
}

fn json_response(value: &Value) -> Response<Full<Bytes>> {
    Response::builder()
        .header("Content-Type", "application/json")
        .body(Full::new(Bytes::from(value.to_string())))
        .expect("response")
}

/// The node names of a filter or prioritize request, in request order.
fn request_nodes(args: &Value) -> Vec<String> {
    match args["NodeNames"].as_array() {
        Some(names) => names
            .iter()
            .map(|n| n.as_str().unwrap_or_default().to_string())
            .collect(),
        None => args["Nodes"]["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| {
                n["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect(),
    }
}

async fn handle(state: &State, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut segments = path.trim_start_matches('/').splitn(2, '/');
    let key = (
        segments.next().unwrap_or_default().to_string(),
        segments.next().unwrap_or_default().to_string(),
    );
    let Some((verb, prefix)) = state.routes.get(&key).cloned() else {
        state.requests.lock().unwrap().push(Recorded {
            extender: String::new(),
            verb: format!("unknown path {path}"),
            nodes: Vec::new(),
        });
        return text(404, "no such verb".into());
    };
    let args: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let victims_key = if args["NodeNameToMetaVictims"].is_object() {
        "NodeNameToMetaVictims"
    } else {
        "NodeNameToVictims"
    };
    let mut nodes = match verb {
        Verb::Preempt => args[victims_key]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default(),
        _ => request_nodes(&args),
    };
    let in_order = nodes.clone();
    nodes.sort();
    state.requests.lock().unwrap().push(Recorded {
        extender: prefix,
        verb: verb.key().to_string(),
        nodes,
    });
    let answer = state
        .answers
        .lock()
        .unwrap()
        .get(&(key.0.clone(), verb))
        .cloned()
        .unwrap_or_default();
    if !answer.delay.is_zero() {
        tokio::time::sleep(answer.delay).await;
    }
    if let Some(status) = answer.http_status {
        return text(status, format!("fake extender answers {status}"));
    }
    if let Some(raw) = answer.raw {
        return Response::new(Full::new(Bytes::from(raw)));
    }
    match verb {
        Verb::Filter => {
            if let Some(e) = answer.error {
                return json_response(&json!({"Error": e}));
            }
            let listed = |map: &BTreeMap<String, String>| -> Map<String, Value> {
                map.iter()
                    .filter(|(n, _)| in_order.contains(n))
                    .map(|(n, r)| (n.clone(), json!(r)))
                    .collect()
            };
            let unresolvable = listed(&answer.unresolvable);
            let failed: Map<String, Value> = listed(&answer.failed)
                .into_iter()
                .filter(|(n, _)| !unresolvable.contains_key(n))
                .collect();
            let passes = |n: &str| !failed.contains_key(n) && !unresolvable.contains_key(n);
            let mut out =
                json!({"FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable});
            if let Some(names) = args["NodeNames"].as_array() {
                let kept: Vec<&Value> = names
                    .iter()
                    .filter(|n| passes(n.as_str().unwrap_or_default()))
                    .collect();
                out["NodeNames"] = json!(kept);
            } else {
                let items: Vec<&Value> = args["Nodes"]["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|n| passes(n["metadata"]["name"].as_str().unwrap_or_default()))
                    .collect();
                out["Nodes"] = json!({"metadata": {}, "items": items});
            }
            json_response(&out)
        }
        Verb::Prioritize => {
            let list: Vec<Value> = in_order
                .iter()
                .map(|n| json!({"Host": n, "Score": answer.scores.get(n).copied().unwrap_or(0)}))
                .collect();
            json_response(&Value::Array(list))
        }
        Verb::Preempt => {
            let mut meta = Map::new();
            for (node, v) in args[victims_key].as_object().into_iter().flatten() {
                if answer.drop_nodes.contains(node) {
                    continue;
                }
                let uids: Vec<Value> = v["Pods"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        let uid = p
                            .get("UID")
                            .or_else(|| p.pointer("/metadata/uid"))
                            .cloned()
                            .unwrap_or(Value::Null);
                        json!({"UID": uid})
                    })
                    .collect();
                meta.insert(
                    node.clone(),
                    json!({"Pods": uids, "NumPDBViolations": v["NumPDBViolations"]}),
                );
            }
            json_response(&json!({"NodeNameToMetaVictims": meta}))
        }
    }
}
