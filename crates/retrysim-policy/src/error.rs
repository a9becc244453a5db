//! The error of loading or building a policy: it names the file, the field
//! and what is allowed, and says what kind of problem it is.

use std::fmt;

/// What kind of problem a [`PolicyError`] reports.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyErrorKind {
    /// The file could not be read (missing, not a regular file, too large,
    /// not UTF-8).
    Read,
    /// The text is not valid TOML.
    Syntax,
    /// A field the format does not have (often a misspelling).
    UnknownField,
    /// A field has a value that is not allowed, is missing where it is
    /// required, or contradicts another field.
    Invalid,
}

/// A policy (or another input) that cannot be used: which file, which
/// field, what is wrong and what is allowed.
///
/// ```
/// use retrysim_policy::{Policy, PolicyErrorKind};
/// let err = Policy::from_toml("max_attempts = 0", "inline").unwrap_err();
/// assert_eq!(err.kind, PolicyErrorKind::Invalid);
/// assert_eq!(err.field.as_deref(), Some("max_attempts"));
/// assert!(err.to_string().starts_with("inline: field `max_attempts`: "));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// What kind of problem it is.
    pub kind: PolicyErrorKind,
    /// The file (or other source, such as "builder") the input came from.
    pub file: String,
    /// The field, as a dotted path (`backoff.base`), if the problem is in one.
    pub field: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl PolicyError {
    /// A problem of `kind` with the whole of `file`.
    pub fn new(kind: PolicyErrorKind, file: impl Into<String>, message: impl Into<String>) -> Self {
        Self { kind, file: file.into(), field: None, message: message.into() }
    }

    /// A problem with the whole of `file` ([`PolicyErrorKind::Invalid`]).
    pub fn file(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(PolicyErrorKind::Invalid, file, message)
    }

    /// A value of `field` in `file` that is not allowed ([`PolicyErrorKind::Invalid`]).
    pub fn field(file: impl Into<String>, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::file(file, message).at(field)
    }

    /// The same error, about `field`.
    pub fn at(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The same error with a context prefix (for example the variant) on its message.
    pub fn context(mut self, prefix: &str) -> Self {
        self.message = format!("{prefix}{}", self.message);
        self
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}: field `{}`: {}", self.file, field, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for PolicyError {}

/// The error type the simulator reports every bad input with (experiment
/// files, flags, traces): the same shape, so that a policy inlined in an
/// experiment is reported in the same words.
#[doc(hidden)]
pub type InputError = PolicyError;

/// A result with a [`PolicyError`].
#[doc(hidden)]
pub type InputResult<T> = Result<T, PolicyError>;
