//! Why reading a cluster's files failed: the file, and the line, object or field at fault.

use crate::model::error::ObjectErrors;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}{}: {message}", .line.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
    Syntax {
        path: String,
        line: Option<(u64, u64)>,
        message: String,
    },
    #[error("{path}: {kind} {object}: {field}: {message}")]
    Object {
        path: String,
        kind: String,
        object: String,
        field: String,
        message: String,
    },
    #[error("{path}: {message}")]
    Content { path: String, message: String },
    #[error("{path}: invalid objects:\n{errors}")]
    Invalid { path: String, errors: ObjectErrors },
}
