//! The one error type of the crate.

use std::fmt;

/// Why a document is not an acceptable policy.
///
/// The messages of [`PolicyError::Invalid`] use MinIO's wording (for
/// example `unsupported action 's3:Foo'`, `Resource must not be empty`), so
/// a client sees what MinIO would have told it; the S3 gateway returns them
/// as the message of `MalformedPolicy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// The document is longer than the limit it was parsed under.
    TooLarge {
        /// Its length in bytes.
        len: usize,
        /// The limit in bytes.
        max: usize,
    },
    /// Not JSON, or JSON of the wrong shape (a number where a string
    /// belongs, an unknown or repeated field).
    Syntax(String),
    /// Nested deeper, or with more statements or values, than the limits
    /// allow.
    Limit(String),
    /// Well-formed, but not a valid policy.
    Invalid(String),
}

impl PolicyError {
    pub(crate) fn syntax(msg: impl Into<String>) -> Self {
        PolicyError::Syntax(msg.into())
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Self {
        PolicyError::Invalid(msg.into())
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::TooLarge { len, max } => write!(
                f,
                "policy document of {len} bytes exceeds the maximum of {max} bytes"
            ),
            PolicyError::Syntax(m) | PolicyError::Limit(m) | PolicyError::Invalid(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for PolicyError {}
