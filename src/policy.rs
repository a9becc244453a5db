//! Retry policies: the typed policy file, backoff formulas and the retry
//! decision. Pure functions and small state machines, tested against the
//! formulas of the design contract.

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod decision;
pub mod file;
pub mod outcome;

pub use backoff::{Backoff, BackoffKind, Jitter};
pub use decision::{Decision, DenyReason, RetryContext, decide};
pub use outcome::{Outcome, RetryOn};

use crate::engine::{NEVER, Nanos};

/// A validated retry policy (DESIGN §2).
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Display name (`name` in the file, else the file stem or "inline").
    pub name: String,
    /// Attempts including the first; 1 means no retries.
    pub max_attempts: u32,
    /// The caller abandons one attempt after this ([`NEVER`] = no per-try timeout).
    pub per_try_timeout: Nanos,
    /// Total time for the intent ([`NEVER`] = none).
    pub deadline: Nanos,
    /// Do not start an attempt with less deadline left than this.
    pub min_attempt_time: Nanos,
    /// Which outcomes may be retried.
    pub retry_on: RetryOn,
    /// Retry outcomes that may have executed on non-idempotent operations sent without a key.
    pub retry_unknown_without_key: bool,
    /// Wait what a 429/503 Retry-After says instead of the backoff.
    pub respect_retry_after: bool,
    /// Give up instead of waiting longer than this: `None` = the deadline,
    /// [`NEVER`] (`"never"`) = no limit.
    pub max_retry_after: Option<Nanos>,
    /// The wait between attempts.
    pub backoff: Backoff,
    /// The retry budget, if any.
    pub budget: Option<budget::BudgetSpec>,
    /// The circuit breaker (per client instance), if any.
    pub breaker: Option<breaker::BreakerSpec>,
}

impl Default for Policy {
    /// One attempt that waits as long as it takes.
    fn default() -> Self {
        Self {
            name: "single attempt".into(),
            max_attempts: 1,
            per_try_timeout: NEVER,
            deadline: NEVER,
            min_attempt_time: 0,
            retry_on: RetryOn::default(),
            retry_unknown_without_key: false,
            respect_retry_after: true,
            max_retry_after: None,
            backoff: Backoff::default(),
            budget: None,
            breaker: None,
        }
    }
}

impl Policy {
    /// The worst-case time an intent can take under this policy, if bounded:
    /// the deadline, else attempts × per-try timeout plus the longest waits.
    pub fn retry_window(&self) -> Option<Nanos> {
        if self.deadline != NEVER {
            return Some(self.deadline);
        }
        if self.per_try_timeout == NEVER {
            return None;
        }
        let mut total = self.per_try_timeout.saturating_mul(self.max_attempts as u64);
        for n in 1..self.max_attempts {
            total = total.saturating_add(self.backoff.max_delay(n));
        }
        Some(total)
    }
}
