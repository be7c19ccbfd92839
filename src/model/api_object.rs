//! The API objects of nodes and pods as JSON, kept only when scheduler extenders will be sent
//! them (`Parse::keep_api_objects`, `--call-extenders`): kube-scheduler sends an extender the
//! whole Pod, and whole Node objects to one that is not `nodeCacheCapable`. Most runs never need
//! them, so by default they are dropped once parsed.

use super::parse::Parse;
use serde::Serialize;
use serde_json::value::RawValue;
use std::sync::Arc;

/// An API object as JSON, as it would be sent.
pub type ApiObject = Arc<RawValue>;

/// `object` as JSON when the parse keeps objects.
pub fn kept<T: Serialize>(object: &T, parse: &Parse) -> Option<ApiObject> {
    if parse.keep_api_objects {
        to_json(object)
    } else {
        None
    }
}

/// `object` as JSON. API types have string keys only, so serialising them cannot fail.
pub fn to_json<T: Serialize>(object: &T) -> Option<ApiObject> {
    serde_json::value::to_raw_value(object).ok().map(Arc::from)
}
