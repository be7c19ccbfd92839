//! Watching leases without losing a change: each watch resumes from the last resourceVersion
//! seen (bookmarks keep it current while nothing changes), and when the server has compacted
//! that history (410 Gone) the leases are listed again so the caller can compare.

use super::config::Target;
use super::error::{Fail, LiveError, describe};
use futures::{Stream, StreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use std::pin::Pin;

/// How long one watch request asks to stay open; the server may end it sooner.
const WATCH_SECONDS: u32 = 290;

/// What a watch reports.
pub enum Update {
    Applied(Lease),
    Deleted(Lease),
    /// The history since the last version seen is gone: every lease, listed again.
    Relisted(Vec<Lease>),
}

type Events = Pin<Box<dyn Stream<Item = kube::Result<WatchEvent<Lease>>> + Send>>;

pub struct LeaseWatcher {
    api: Api<Lease>,
    target: Target,
    field_selector: Option<String>,
    resource_version: String,
    events: Option<Events>,
}

impl LeaseWatcher {
    /// Watches the leases of `namespace` (all namespaces when `None`) that `field_selector`
    /// selects, from `resource_version`, the version the caller's list was served at.
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
            api,
            target: target.clone(),
            field_selector,
            resource_version,
            events: None,
        })
    }

    /// The next change. Cancel-safe: state changes only once an answer has fully arrived.
    pub async fn next(&mut self) -> Result<Update, LiveError> {
        loop {
            let Some(events) = self.events.as_mut() else {
                let mut params = WatchParams::default().timeout(WATCH_SECONDS);
                if let Some(f) = &self.field_selector {
                    params = params.fields(f);
                }
                let stream = self
                    .api
                    .watch(&params, &self.resource_version)
                    .await
                    .map_err(|e| self.failed(e))?;
                self.events = Some(Box::pin(stream));
                continue;
            };
            match events.next().await {
                // The server ended this watch (its timeout): resume where it stopped.
                None => self.events = None,
                Some(Err(e)) => {
                    self.events = None;
                    return Err(self.failed(e));
                }
                Some(Ok(event)) => match event {
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
                        let mut params = ListParams::default();
                        if let Some(f) = &self.field_selector {
                            params = params.fields(f);
                        }
                        let list = self.api.list(&params).await.map_err(|e| self.failed(e))?;
                        self.resource_version =
                            list.metadata.resource_version.clone().unwrap_or_default();
                        return Ok(Update::Relisted(list.items));
                    }
                    WatchEvent::Error(status) => {
                        self.events = None;
                        return Err(describe(Fail::Status(status), &self.target, "watch leases"));
                    }
                },
            }
        }
    }

    fn seen(&mut self, lease: &Lease) {
        if let Some(rv) = &lease.metadata.resource_version {
            self.resource_version = rv.clone();
        }
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
