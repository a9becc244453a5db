//! Errors a user can act on: bad input names the file, the field and what
//! is allowed, and makes the binary exit with status 2. The type lives in
//! the policy crate, which reports policy files the same way.

pub use retrysim_policy::error::{InputError, InputResult};
