//! Errors about objects: every one names the object (kind, namespace/name) and the field.

use super::field::FieldError;
use std::fmt;

/// A field error of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectError {
    pub kind: &'static str,
    /// `namespace/name`, or `name` for cluster-scoped objects.
    pub object: String,
    /// The field (a JSON-path-like `spec.containers[0].resources.requests.cpu`) and its error.
    pub error: FieldError,
}

impl ObjectError {
    pub fn new(
        kind: &'static str,
        object: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ObjectError::of(kind, object, FieldError::new(field, message))
    }

    pub fn of(kind: &'static str, object: impl Into<String>, error: FieldError) -> Self {
        ObjectError {
            kind,
            object: object.into(),
            error,
        }
    }
}

impl fmt::Display for ObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.kind, self.object, self.error)
    }
}

impl std::error::Error for ObjectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

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
