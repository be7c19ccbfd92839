//! Errors about objects: every one names the object (kind, namespace/name) and the field.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectError {
    pub kind: &'static str,
    /// `namespace/name`, or `name` for cluster-scoped objects.
    pub object: String,
    /// A JSON-path-like field (`spec.containers[0].resources.requests.cpu`).
    pub field: String,
    pub message: String,
}

impl ObjectError {
    pub fn new(
        kind: &'static str,
        object: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ObjectError {
            kind,
            object: object.into(),
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}: {}",
            self.kind, self.object, self.field, self.message
        )
    }
}

impl std::error::Error for ObjectError {}

/// Collects several problems with objects so a user sees them all at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectErrors(pub Vec<ObjectError>);

impl fmt::Display for ObjectErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ObjectErrors {}
