//! Watching leases without losing a change: each watch resumes from the last resourceVersion
//! seen (bookmarks keep it current while nothing changes), when the server has compacted that
//! history (410 Gone) the leases are listed again so the caller can compare, and any other
//! failure is retried with backoff — during a control-plane incident the API server restarting
//! is exactly what the watch must live through.

use super::config::Target;
use super::error::{Fail, LiveError, describe};
use futures::{Stream, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use std::pin::Pin;
use std::time::Duration;

/// How long one watch request asks to stay open; the server may end it sooner.
const WATCH_SECONDS: u32 = 290;
/// A watch silent for longer than it asked to stay open (no event, no bookmark, no end) is a
/// dead connection: start another.
const IDLE_LIMIT: Duration = Duration::from_secs(WATCH_SECONDS as u64 + 30);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What a watch reports.
pub enum Update {
    Applied(Lease),
    Deleted(Lease),
    /// The history since the last version seen is gone: every lease, listed again.
    Relisted(Vec<Lease>),
}

type Events = Pin<Box<dyn Stream<Item = kube::Result<WatchEvent<Lease>>> + Send>>;

/// Lists the leases a watch covers.
#[derive(Clone)]
pub struct LeaseLister {
    api: Api<Lease>,
    target: Target,
    field_selector: Option<String>,
}

impl LeaseLister {
    /// Every lease, and the resourceVersion the list was served at.
    pub async fn list(&self) -> Result<(Vec<Lease>, String), LiveError> {
        let mut params = ListParams::default();
        if let Some(f) = &self.field_selector {
            params = params.fields(f);
        }
        let list = self.api.list(&params).await.map_err(|e| self.failed(e))?;
        Ok((
            list.items,
            list.metadata.resource_version.unwrap_or_default(),
        ))
    }

    fn failed(&self, e: kube::Error) -> LiveError {
        match e {
            kube::Error::Api(status) => {
                describe(Fail::Status(status), &self.target, "watch leases")
            }
            e => describe(Fail::Client(e), &self.target, "watch leases"),
        }
    }
}

pub struct LeaseWatcher {
    lister: LeaseLister,
    resource_version: String,
    events: Option<Events>,
    /// Failures in a row: the next attempt waits 1s, 2s, 4s… up to MAX_BACKOFF.
    failures: u32,
}

fn is_gone(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 410)
}

impl LeaseWatcher {
    /// Watches the leases of `namespace` (all namespaces when `None`) that `field_selector`
    /// selects, from `resource_version`, the version the caller's list was served at. Must be
    /// called on the runtime that will drive it (the client's connections live there).
    pub fn new(
        target: &Target,
        namespace: Option<&str>,
        field_selector: Option<String>,
        resource_version: String,
    ) -> Result<LeaseWatcher, LiveError> {
        let client = kube::Client::try_from(target.config.clone()).map_err(|e| {
            let what = format!("connect to {}", target.server());
            describe(Fail::Client(e), target, &what)
        })?;
        let api = match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        };
        Ok(LeaseWatcher {
            lister: LeaseLister {
                api,
                target: target.clone(),
                field_selector,
            },
            resource_version,
            events: None,
            failures: 0,
        })
    }

    pub fn lister(&self) -> LeaseLister {
        self.lister.clone()
    }

    /// The next change, or the failure that interrupted the watch (the next call retries, after
    /// a backoff, from the last version seen).
    pub async fn next(&mut self) -> Result<Update, LiveError> {
        if self.failures > 0 && self.events.is_none() {
            let backoff = Duration::from_secs(1 << (self.failures - 1).min(5)).min(MAX_BACKOFF);
            tokio::time::sleep(backoff).await;
        }
        // Resuming keeps failing (a version the server will not serve, say): start over from a
        // fresh list, which the caller compares with what it last saw.
        let result = if self.failures >= 2 && self.events.is_none() {
            self.relist().await
        } else {
            self.next_inner().await
        };
        if result.is_err() {
            self.events = None;
            self.failures += 1;
        } else {
            self.failures = 0;
        }
        result
    }

    async fn next_inner(&mut self) -> Result<Update, LiveError> {
        loop {
            let Some(events) = self.events.as_mut() else {
                let mut params = WatchParams::default().timeout(WATCH_SECONDS);
                if let Some(f) = &self.lister.field_selector {
                    params = params.fields(f);
                }
                match self.lister.api.watch(&params, &self.resource_version).await {
                    Ok(stream) => self.events = Some(Box::pin(stream)),
                    Err(e) if is_gone(&e) => return self.relist().await,
                    Err(e) => return Err(self.lister.failed(e)),
                }
                continue;
            };
            let event = match tokio::time::timeout(IDLE_LIMIT, events.next()).await {
                // A half-open connection: start again from the last version seen.
                Err(_) => {
                    self.events = None;
                    continue;
                }
                // The server ended this watch (its timeout): resume where it stopped.
                Ok(None) => {
                    self.events = None;
                    continue;
                }
                Ok(Some(Err(e))) => return Err(self.lister.failed(e)),
                Ok(Some(Ok(event))) => event,
            };
            match event {
                WatchEvent::Added(l) | WatchEvent::Modified(l) => {
                    self.seen(&l);
                    return Ok(Update::Applied(l));
                }
                WatchEvent::Deleted(l) => {
                    self.seen(&l);
                    return Ok(Update::Deleted(l));
                }
                WatchEvent::Bookmark(b) => {
                    self.resource_version = b.metadata.resource_version;
                }
                WatchEvent::Error(status) if status.code == 410 => {
                    self.events = None;
                    return self.relist().await;
                }
                WatchEvent::Error(status) => {
                    return Err(describe(
                        Fail::Status(status),
                        &self.lister.target,
                        "watch leases",
                    ));
                }
            }
        }
    }

    async fn relist(&mut self) -> Result<Update, LiveError> {
        let (items, version) = self.lister.list().await?;
        self.resource_version = version;
        Ok(Update::Relisted(items))
    }

    fn seen(&mut self, lease: &Lease) {
        if let Some(rv) = &lease.metadata.resource_version {
            self.resource_version = rv.clone();
        }
    }
}
