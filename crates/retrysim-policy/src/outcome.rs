//! Outcomes of an attempt as the caller sees them, and which prove that
//! nothing executed.

use std::fmt;

/// What one attempt came back with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A successful answer.
    Ok,
    /// The request never reached the service.
    ConnectError,
    /// The caller gave up waiting (per-try timeout or deadline).
    Timeout,
    /// The connection was reset mid-request.
    Reset,
    /// An HTTP-like status answer other than success.
    Status(u16),
}

impl Outcome {
    /// Whether the outcome proves that the service did not execute the request.
    /// Unknown outcomes (timeout, reset, 500, 502, 504 and other 5xx) may have
    /// committed. 4xx answers, 429 and 503 prove nothing ran at that hop.
    #[inline]
    pub fn nothing_executed(self) -> bool {
        match self {
            Outcome::Ok => false,
            Outcome::ConnectError => true,
            Outcome::Timeout | Outcome::Reset => false,
            Outcome::Status(s) => (400..500).contains(&s) || s == 503,
        }
    }

    /// The outcome's name as written in `retry_on` and in traces.
    pub fn label(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok => f.write_str("ok"),
            Outcome::ConnectError => f.write_str("connect_error"),
            Outcome::Timeout => f.write_str("timeout"),
            Outcome::Reset => f.write_str("reset"),
            Outcome::Status(s) => write!(f, "{s}"),
        }
    }
}

/// The set of outcomes a policy retries (`retry_on`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryOn {
    pub connect_error: bool,
    pub timeout: bool,
    pub reset: bool,
    /// Status codes, sorted.
    pub statuses: Vec<u16>,
}

impl Default for RetryOn {
    /// `["connect_error", "503"]`.
    fn default() -> Self {
        Self { connect_error: true, timeout: false, reset: false, statuses: vec![503] }
    }
}

impl RetryOn {
    /// Parses one `retry_on` entry: `connect_error`, `timeout`, `reset` or a
    /// status code 100–599.
    pub fn parse_entry(text: &str) -> Result<RetryOnEntry, String> {
        match text {
            "connect_error" => Ok(RetryOnEntry::ConnectError),
            "timeout" => Ok(RetryOnEntry::Timeout),
            "reset" => Ok(RetryOnEntry::Reset),
            s => match s.parse::<u16>() {
                Ok(code) if (100..600).contains(&code) => Ok(RetryOnEntry::Status(code)),
                _ => Err(format!(
                    "\"{s}\" is not an outcome: allowed are \"connect_error\", \"timeout\", \"reset\" and status codes such as \"503\""
                )),
            },
        }
    }

    /// The set of `entries` written in the code (not read from a file):
    /// an entry that is not an outcome panics.
    #[cfg(any(test, feature = "vectors"))]
    pub(crate) fn of(entries: &[&str]) -> Self {
        let parsed: Vec<_> = entries.iter().map(|e| Self::parse_entry(e).expect("a valid outcome")).collect();
        Self::from_entries(&parsed)
    }

    /// Builds the set from parsed entries.
    pub fn from_entries(entries: &[RetryOnEntry]) -> Self {
        let mut set = Self { connect_error: false, timeout: false, reset: false, statuses: Vec::new() };
        for e in entries {
            match *e {
                RetryOnEntry::ConnectError => set.connect_error = true,
                RetryOnEntry::Timeout => set.timeout = true,
                RetryOnEntry::Reset => set.reset = true,
                RetryOnEntry::Status(s) => set.statuses.push(s),
            }
        }
        set.statuses.sort_unstable();
        set.statuses.dedup();
        set
    }

    /// The empty set.
    pub fn none() -> Self {
        Self::from_entries(&[])
    }

    /// Whether `outcome` is retryable under this set.
    #[inline]
    pub fn contains(&self, outcome: Outcome) -> bool {
        match outcome {
            Outcome::Ok => false,
            Outcome::ConnectError => self.connect_error,
            Outcome::Timeout => self.timeout,
            Outcome::Reset => self.reset,
            Outcome::Status(s) => self.statuses.binary_search(&s).is_ok(),
        }
    }
}

/// One parsed `retry_on` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOnEntry {
    ConnectError,
    Timeout,
    Reset,
    Status(u16),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_table() {
        assert!(Outcome::ConnectError.nothing_executed());
        assert!(Outcome::Status(503).nothing_executed());
        assert!(Outcome::Status(429).nothing_executed());
        assert!(Outcome::Status(409).nothing_executed());
        assert!(!Outcome::Timeout.nothing_executed());
        assert!(!Outcome::Reset.nothing_executed());
        assert!(!Outcome::Status(500).nothing_executed());
        assert!(!Outcome::Status(502).nothing_executed());
        assert!(!Outcome::Status(504).nothing_executed());
    }

    #[test]
    fn retry_on_parsing() {
        let entries: Vec<_> = ["timeout", "503", "429"].iter().map(|s| RetryOn::parse_entry(s).unwrap()).collect();
        let set = RetryOn::from_entries(&entries);
        assert!(set.contains(Outcome::Timeout));
        assert!(set.contains(Outcome::Status(429)));
        assert!(!set.contains(Outcome::ConnectError));
        assert!(!set.contains(Outcome::Status(500)));
        assert!(RetryOn::parse_entry("999").is_err());
        assert!(RetryOn::parse_entry("timeouts").is_err());
    }
}
