//! Scheduler extenders over HTTP (KEP-1819), at the I/O edge: the client the app injects into
//! the framework with `--call-extenders` (`http`, upstream's `HTTPExtender`), the JSON of
//! `k8s.io/kube-scheduler/extender/v1` (`wire`), and TLS as `tlsConfig` sets it up (`tls`).
//! Only the filter, prioritize and preempt verbs are ever called: never bind, since the tool
//! only reads.

mod http;
mod tls;
mod wire;

pub use http::clients;
