//! Turns a deserialized policy table into a typed, checked [`crate::Policy`].
//! Every error names the file, the field path and what is allowed; the
//! simulator reports policies inlined in experiments with the same words,
//! and checks the rest of an experiment with the same scaffold ([`V`],
//! [`first_extra`]).

mod budget;
mod policy;

pub use policy::policy;

use crate::error::{InputError, InputResult};
use crate::time::{NEVER, Nanos};
use crate::units::parse_duration;

/// Why `"never"` is refused where a finite duration is needed.
pub const NEVER_NOT_HERE: &str = "\"never\" is not allowed here: give a duration such as \"250ms\" or \"2s\" (\"never\" is for per_try_timeout, deadline, max_retry_after, backoff.cap, a fault's duration, and a ledger's ttl and lease)";

/// The first field that is present but not among `allowed`.
pub fn first_extra<'a>(present: &[(&'a str, bool)], allowed: &[&str]) -> Option<&'a str> {
    present.iter().find(|(name, here)| *here && !allowed.contains(name)).map(|(name, _)| *name)
}

/// Validation context: the file errors are reported against, and the
/// checks of single fields, each failing with the field's path and what
/// is allowed.
pub struct V<'a> {
    /// The file errors name.
    pub file: &'a str,
}

impl V<'_> {
    /// An error at `field`.
    pub fn err(&self, field: &str, msg: impl Into<String>) -> InputError {
        InputError::field(self.file, field, msg)
    }

    /// A duration; `"never"` is refused (see [`V::dur_or_never`]).
    pub fn dur(&self, field: &str, v: Option<&String>, default: Nanos) -> InputResult<Nanos> {
        match v {
            None => Ok(default),
            Some(s) if s.trim() == "never" => Err(self.err(field, NEVER_NOT_HERE)),
            Some(s) => parse_duration(s).map_err(|m| self.err(field, m)),
        }
    }

    /// A duration or `"never"` (no limit).
    pub fn dur_or_never(&self, field: &str, v: Option<&String>, default: Nanos) -> InputResult<Nanos> {
        match v {
            Some(s) if s.trim() == "never" => Ok(NEVER),
            _ => self.dur(field, v, default),
        }
    }

    /// A duration longer than 0; `"never"` is refused.
    pub fn positive_dur(&self, field: &str, v: Option<&String>, default: Nanos) -> InputResult<Nanos> {
        let d = self.dur(field, v, default)?;
        if d == 0 {
            return Err(self.err(field, "must be longer than 0"));
        }
        Ok(d)
    }

    /// [`V::positive_dur`] that also takes `"never"`.
    pub fn positive_dur_or_never(&self, field: &str, v: Option<&String>, default: Nanos) -> InputResult<Nanos> {
        let d = self.dur_or_never(field, v, default)?;
        if d == 0 {
            return Err(self.err(field, "must be longer than 0"));
        }
        Ok(d)
    }

    /// An integer from `lo` to `hi`.
    pub fn int_in(&self, field: &str, v: Option<i64>, default: i64, lo: i64, hi: i64) -> InputResult<i64> {
        let x = v.unwrap_or(default);
        if x < lo || x > hi {
            return Err(self.err(field, format!("must be an integer from {lo} to {hi}, got {x}")));
        }
        Ok(x)
    }

    /// A probability from 0 to 1.
    pub fn prob(&self, field: &str, v: Option<f64>, default: f64) -> InputResult<f64> {
        let x = v.unwrap_or(default);
        if !(0.0..=1.0).contains(&x) {
            return Err(self.err(field, format!("must be a probability from 0 to 1, got {x}")));
        }
        Ok(x)
    }

    /// An HTTP status code from 100 to 599, as an integer or a string.
    pub fn status(&self, field: &str, v: Option<&toml::Value>, default: u16) -> InputResult<u16> {
        let Some(v) = v else { return Ok(default) };
        let code = match v {
            toml::Value::Integer(i) => Some(*i),
            toml::Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        };
        match code {
            Some(c) if (100..600).contains(&c) => Ok(c as u16),
            _ => Err(self.err(field, format!("must be an HTTP status code from 100 to 599, got {v}"))),
        }
    }

    /// A name of letters, digits, `_` and `-`.
    pub fn name(&self, field: &str, name: &str) -> InputResult<()> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(self.err(field, format!("\"{name}\" is not a valid name: use letters, digits, '_' and '-'")));
        }
        Ok(())
    }
}
