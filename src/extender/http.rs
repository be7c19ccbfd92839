//! `HTTPExtender`: every verb is one `POST <urlPrefix>/<verb>` with a JSON body, bounded by the
//! extender's `httpTimeout` as Go's `Client.Timeout` bounds it (connection, headers and body),
//! and failing with the texts Go's client gives where they reach the scheduler's message.

use super::tls::{self, Tls};
use super::wire;
use crate::config::duration;
use crate::config::extender::ExtenderConfig;
use crate::framework::extender::{
    Extender, FilterResult, HostPriority, MetaVictims, Reply, VictimsOnNode,
};
use crate::model::node_info::NodeInfo;
use crate::model::pod::Pod;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;

/// Answers are JSON about at most every node of a cluster; beyond this one is garbage.
const MAX_ANSWER_BYTES: usize = 512 << 20;

/// An extender reached over HTTP(S).
pub struct HttpExtender {
    config: ExtenderConfig,
    /// Shared by every extender: the calls block the scheduling cycle's thread on it.
    runtime: Arc<Runtime>,
    tls: Option<Tls>,
    /// `--request-timeout`, which cuts calls short of a longer `httpTimeout`.
    request_timeout: Option<Duration>,
}

/// The clients of `extenders`, sharing one runtime. Fails as kube-scheduler fails to start
/// when a `tlsConfig` cannot be loaded; the error names the extender.
pub fn clients(
    extenders: &[ExtenderConfig],
    request_timeout: Option<Duration>,
) -> Result<Vec<Arc<dyn Extender>>, String> {
    if extenders.is_empty() {
        return Ok(Vec::new());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("extender-io")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime for extender calls: {e}"))?;
    let runtime = Arc::new(runtime);
    extenders
        .iter()
        .map(|cfg| {
            let https = cfg
                .url_prefix
                .get(..8)
                .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
            let tls =
                tls::setup(cfg, https).map_err(|e| format!("extender {}: {e}", cfg.url_prefix))?;
            Ok(Arc::new(HttpExtender {
                config: cfg.clone(),
                runtime: runtime.clone(),
                tls,
                request_timeout,
            }) as Arc<dyn Extender>)
        })
        .collect()
}

/// How long a call may take, and whether `--request-timeout` set that limit.
#[derive(Clone, Copy)]
struct Limit {
    after: Duration,
    by_request_timeout: bool,
}

impl HttpExtender {
    fn limit(&self) -> Option<Limit> {
        let http = self.config.timeout();
        match (http, self.request_timeout) {
            (Some(h), Some(r)) if r < h => Some(Limit {
                after: r,
                by_request_timeout: true,
            }),
            (None, Some(r)) => Some(Limit {
                after: r,
                by_request_timeout: true,
            }),
            (Some(h), _) => Some(Limit {
                after: h,
                by_request_timeout: false,
            }),
            (None, None) => None,
        }
    }

    /// Sends `body` to the verb and decodes the answer, timing the whole exchange.
    fn call<T>(
        &self,
        verb: &str,
        body: Result<Vec<u8>, String>,
        decode: impl FnOnce(&[u8]) -> Result<T, String>,
    ) -> Reply<T> {
        let start = Instant::now();
        let result = body
            .and_then(|b| self.runtime.block_on(self.post(verb, b)))
            .and_then(|answer| decode(&answer));
        Reply {
            result,
            elapsed: start.elapsed(),
        }
    }

    async fn post(&self, verb: &str, body: Vec<u8>) -> Result<Bytes, String> {
        let url = format!("{}/{verb}", self.config.url_prefix.trim_end_matches('/'));
        let limit = self.limit();
        let deadline = limit.map(|l| tokio::time::Instant::now() + l.after);
        let timed_out = |reading_body: bool| {
            match limit {
            Some(Limit {
                by_request_timeout: true,
                after,
            }) => format!(
                "Post {url:?}: no answer within --request-timeout {} (kube-scheduler would wait {}, so its answer may differ)",
                duration::format(after.as_nanos() as i64),
                self.config
                    .timeout()
                    .map_or("without a limit".into(), |t| format!(
                        "up to {}",
                        duration::format(t.as_nanos() as i64)
                    )),
            ),
            _ if reading_body => "context deadline exceeded (Client.Timeout or context cancellation while reading body)".into(),
            _ => format!("Post {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"),
        }
        };
        let response = within(deadline, self.request(&url, body))
            .await
            .ok_or_else(|| timed_out(false))??;
        if response.status() != hyper::StatusCode::OK {
            return Err(format!(
                "failed {verb} with extender at URL {url}, code {}",
                response.status().as_u16()
            ));
        }
        let collected = within(
            deadline,
            Limited::new(response.into_body(), MAX_ANSWER_BYTES).collect(),
        )
        .await
        .ok_or_else(|| timed_out(true))?
        .map_err(|e| e.to_string())?;
        Ok(collected.to_bytes())
    }

    /// Connects, sends the request and waits for the response's headers.
    async fn request(&self, url: &str, body: Vec<u8>) -> Result<hyper::Response<Incoming>, String> {
        let fail = |e: String| format!("Post {url:?}: {e}");
        let uri: hyper::Uri = url.parse().map_err(|e| format!("parse {url:?}: {e}"))?;

        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            other => {
                return Err(fail(format!(
                    "unsupported protocol scheme {:?}",
                    other.unwrap_or("")
                )));
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| fail("no Host in request URL".into()))?
            .clone();
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let host_port = authority
            .as_str()
            .rsplit_once('@')
            .map_or(authority.as_str(), |(_, h)| h);
        let port = match host_port.rsplit_once(':') {
            Some((_, p)) if !host_port.ends_with(']') => p
                .parse()
                .map_err(|_| format!("parse {url:?}: invalid port \":{p}\" after host"))?,
            _ if https => 443,
            _ => 80,
        };
        let tcp = connect(host, port).await.map_err(fail)?;
        let request = Request::post(uri.path_and_query().map_or("/", |p| p.as_str()))
            .header(hyper::header::HOST, authority.as_str())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(
                hyper::header::USER_AGENT,
                concat!("kubectl-sched/", env!("CARGO_PKG_VERSION")),
            )
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| fail(e.to_string()))?;
        if !https {
            return exchange(tcp, request).await.map_err(fail);
        }
        let Some(tls) = &self.tls else {
            return Err(fail("no TLS configuration for an https URL".into()));
        };
        let name = tls.server_name.as_deref().unwrap_or(host).to_string();
        let server_name =
            rustls::pki_types::ServerName::try_from(name).map_err(|e| fail(format!("tls: {e}")))?;
        let stream = tokio_rustls::TlsConnector::from(tls.config.clone())
            .connect(server_name, tcp)
            .await
            .map_err(|e| fail(format!("tls: {e}")))?;
        exchange(stream, request).await.map_err(fail)
    }
}

/// `fut`, unless `deadline` passes first.
async fn within<F: std::future::Future>(
    deadline: Option<tokio::time::Instant>,
    fut: F,
) -> Option<F::Output> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d, fut).await.ok(),
        None => Some(fut.await),
    }
}

/// A TCP connection to the first address of `host` that accepts, worded as Go's dialer.
async fn connect(host: &str, port: u16) -> Result<TcpStream, String> {
    let addrs = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("dial tcp: lookup {host}: {e}"))?;
    let mut last = format!("dial tcp: lookup {host}: no such host");
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(s) => return Ok(s),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                last = format!("dial tcp {addr}: connect: connection refused");
            }
            Err(e) => last = format!("dial tcp {addr}: connect: {e}"),
        }
    }
    Err(last)
}

/// One HTTP/1.1 exchange on a fresh connection.
async fn exchange<S>(
    stream: S,
    request: Request<Full<Bytes>>,
) -> Result<hyper::Response<Incoming>, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    sender.send_request(request).await.map_err(|e| {
        // Go reports a connection closed before any answer as the end of the stream.
        if e.is_incomplete_message() || e.is_canceled() {
            "EOF".to_string()
        } else {
            e.to_string()
        }
    })
}

impl Extender for HttpExtender {
    fn config(&self) -> &ExtenderConfig {
        &self.config
    }

    fn filter(&self, pod: &Pod, nodes: &[&NodeInfo]) -> Reply<FilterResult> {
        self.call(
            &self.config.filter_verb,
            wire::extender_args(pod, nodes, self.config.node_cache_capable),
            wire::filter_result,
        )
    }

    fn prioritize(&self, pod: &Pod, nodes: &[&NodeInfo]) -> Reply<Vec<HostPriority>> {
        self.call(
            &self.config.prioritize_verb,
            wire::extender_args(pod, nodes, self.config.node_cache_capable),
            wire::host_priority_list,
        )
    }

    fn process_preemption(
        &self,
        pod: &Pod,
        candidates: &[VictimsOnNode],
    ) -> Reply<BTreeMap<String, Option<MetaVictims>>> {
        self.call(
            &self.config.preempt_verb,
            wire::preemption_args(pod, candidates, self.config.node_cache_capable),
            wire::preemption_result,
        )
    }
}
