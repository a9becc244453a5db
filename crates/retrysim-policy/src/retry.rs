//! A blocking retry loop around any call: the policy decides, the thread
//! sleeps the waits.
//!
//! ```no_run
//! use retrysim_policy::{Failure, Outcome, Policy, retry};
//! let policy = Policy::load("policies/aws-standard.toml".as_ref())?;
//! let answer: Result<String, _> = retry(policy, |attempt| {
//!     // Send the request, giving it up after `attempt.timeout`.
//!     Err(Failure::new(Outcome::Status(503), "busy"))
//! });
//! # Ok::<(), retrysim_policy::PolicyError>(())
//! ```

use crate::decision::DenyReason;
use crate::random::{Random, SplitMix};
use crate::state::{Admit, Decision, Shared};
use crate::{Outcome, Policy};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one attempt is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    /// 1 for the first attempt.
    pub number: u32,
    /// Give the attempt up after this long (the per-try timeout clipped to
    /// the deadline left) and report [`Outcome::Timeout`]; `None` = no limit.
    pub timeout: Option<Duration>,
    /// Send a status query instead of the operation (`on_unknown =
    /// "query"`, after an outcome that may have executed): return `Ok` with
    /// the committed result if the target has the call's record, a
    /// [`Failure`] with `Outcome::Status(404)` if it has none (the
    /// operation then goes again), or the query's own failure.
    pub query: bool,
}

/// A failed attempt: its outcome, the server's Retry-After and the error.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure<E> {
    /// How the attempt ended.
    pub outcome: Outcome,
    /// The Retry-After the server sent, if any.
    pub retry_after: Option<Duration>,
    /// The caller's error value.
    pub error: E,
}

impl<E> Failure<E> {
    /// A failure without Retry-After.
    pub fn new(outcome: Outcome, error: E) -> Self {
        Self { outcome, retry_after: None, error }
    }

    /// The same failure with the server's Retry-After.
    pub fn retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }
}

/// Why [`retry`] gave up.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryError<E> {
    /// The reason of the last decision (`not_retryable`, `max_attempts`, …).
    pub reason: DenyReason,
    /// Attempts sent.
    pub attempts: u32,
    /// The last attempt's failure; `None` when no attempt was sent (the
    /// breaker was open or the throttle refused the first attempt).
    pub last: Option<Failure<E>>,
}

impl<E: fmt::Debug> fmt::Display for RetryError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.last {
            Some(l) => write!(f, "gave up after {} attempt(s): {} ({})", self.attempts, l.outcome, self.reason),
            None => write!(f, "no attempt sent: {}", self.reason),
        }
    }
}

impl<E: fmt::Debug> std::error::Error for RetryError<E> {}

/// Calls `call` until it succeeds or the policy gives up, with fresh
/// shared state (no budget or breaker history). Use [`retry_with`] to share
/// a client's budget, breaker and throttle across calls.
pub fn retry<T, E>(
    policy: impl Into<Arc<Policy>>,
    call: impl FnMut(&Attempt) -> Result<T, Failure<E>>,
) -> Result<T, RetryError<E>> {
    retry_with(&Shared::new(policy), SplitMix::from_time(), call)
}

/// [`retry`] with a client's shared state (its policy, budget, breaker and
/// throttle) and a random source.
pub fn retry_with<T, E, R: Random>(
    shared: &Shared,
    rng: R,
    mut call: impl FnMut(&Attempt) -> Result<T, Failure<E>>,
) -> Result<T, RetryError<E>> {
    let mut state = shared.call(Instant::now(), rng);
    let mut last: Option<Failure<E>> = None;
    loop {
        let (timeout, query) = match state.before_attempt(Instant::now()) {
            Ok(Admit::Send { timeout }) => (timeout, false),
            Ok(Admit::Query { timeout }) => (timeout, true),
            Ok(Admit::Wait(wait)) => {
                std::thread::sleep(wait);
                continue;
            }
            Err(reason) => return Err(RetryError { reason, attempts: state.attempts(), last }),
        };
        let attempt = Attempt { number: state.attempts(), timeout, query };
        let (outcome, retry_after) = match call(&attempt) {
            Ok(value) => {
                let _ = state.after_outcome(Outcome::Ok, Instant::now(), None);
                return Ok(value);
            }
            Err(f) => {
                let o = (f.outcome, f.retry_after);
                last = Some(f);
                o
            }
        };
        match state.after_outcome(outcome, Instant::now(), retry_after) {
            Decision::Retry { wait } => std::thread::sleep(wait),
            Decision::GiveUp(reason) => return Err(RetryError { reason, attempts: state.attempts(), last }),
            // Only a success ends as Done, and a success returned above.
            _ => {}
        }
    }
}
