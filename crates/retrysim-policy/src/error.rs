//! Errors a user can act on: bad input names the file, the field and what
//! is allowed, and makes the binary exit with status 2.

use std::fmt;

/// Bad input: a file that cannot be read or parsed, or a field whose value
/// is not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file (or command-line argument) the bad input came from.
    pub file: String,
    /// The field, as a dotted path with arrays addressed by name.
    pub field: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl InputError {
    /// An error about a whole file (unreadable, bad syntax).
    pub fn file(file: impl Into<String>, message: impl Into<String>) -> Self {
        Self { file: file.into(), field: None, message: message.into() }
    }

    /// An error about one field of a file.
    pub fn field(file: impl Into<String>, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { file: file.into(), field: Some(field.into()), message: message.into() }
    }

    /// The same error with a context prefix (for example the variant) on its message.
    pub fn context(mut self, prefix: &str) -> Self {
        self.message = format!("{prefix}{}", self.message);
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}: field `{}`: {}", self.file, field, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for InputError {}

/// Result with an [`InputError`].
pub type InputResult<T> = Result<T, InputError>;
