//! The API objects of nodes and pods as JSON, kept only when scheduler extenders will be sent
//! them (`--call-extenders`): kube-scheduler sends an extender the whole Pod, and whole Node
//! objects to one that is not `nodeCacheCapable`. Most runs never need them, so by default they
//! are dropped once parsed.
//!
//! A process-wide switch rather than a loader option: every source converts objects deep inside
//! (pods in parallel), and the app knows before any of them runs whether it will call extenders.

use serde::Serialize;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// An API object as JSON, as it would be sent.
pub type ApiObject = Arc<RawValue>;

static KEEP: AtomicBool = AtomicBool::new(false);

/// From now on, nodes and pods parsed keep their API object.
pub fn keep() {
    KEEP.store(true, Ordering::Relaxed);
}

/// `object` as JSON when objects are kept.
pub fn kept<T: Serialize>(object: &T) -> Option<ApiObject> {
    if KEEP.load(Ordering::Relaxed) {
        to_json(object)
    } else {
        None
    }
}

/// `object` as JSON. API types have string keys only, so serialising them cannot fail.
pub fn to_json<T: Serialize>(object: &T) -> Option<ApiObject> {
    serde_json::value::to_raw_value(object).ok().map(Arc::from)
}
