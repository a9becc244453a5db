//! retrysim-policy: the retry policy file of retrysim
//! and the decision it describes — the retry decision in its order,
//! backoff and jitter, retry budgets, circuit breakers, client-side
//! throttles and the hedging clock — for the simulator and for production
//! code alike, so that what was simulated is what ships.
//!
//! Nothing here reads a clock or draws a random number on its own: every
//! method takes `now` (nanoseconds since any fixed origin) and every random
//! draw is a uniform number in (0, 1) that the caller supplies ([`Random`]).
//!
//! Production code loads a policy with [`Policy::load`], keeps one
//! [`Shared`] per client (the budget, breaker and throttle that many calls
//! share) and one [`RetryState`] per call:
//!
//! ```no_run
//! use retrysim_policy::{Admit, Decision, Outcome, Policy, RetryState, Shared};
//! let policy = Policy::load("policies/grpc-default.toml".as_ref())?;
//! let shared = Shared::new(&policy); // one per client, cloned into every call
//! let mut call = RetryState::new(&policy, shared.clone(), shared.now(), retrysim_policy::SplitMix::from_time());
//! loop {
//!     match call.before_attempt(shared.now()) {
//!         Ok(Admit::Send { timeout: _ }) => {}
//!         Ok(Admit::Wait(wait)) => {
//!             std::thread::sleep(std::time::Duration::from_nanos(wait));
//!             continue;
//!         }
//!         Err(_reason) => break, // refused locally: breaker open, throttled
//!     }
//!     let outcome = Outcome::Status(503); // send the request here, within `timeout`
//!     match call.after_outcome(outcome, shared.now(), None) {
//!         Decision::Retry { wait } => std::thread::sleep(std::time::Duration::from_nanos(wait)),
//!         _ => break,
//!     }
//! }
//! # Ok::<(), retrysim_policy::InputError>(())
//! ```
//!
//! [`retry()`] wraps that loop for blocking code; behind the `tower` feature,
//! `tower::RetryLayer` wraps any `tower` service, and `tower::HedgeLayer`
//! hedges one under a policy with `[hedging]` (the steps of
//! [`HedgedState`]). Three example clients
//! run under a policy file (`docs/vectors.md`, "Examples"), each proven by
//! a test of the same name against a scripted server on 127.0.0.1:
//!
//! ```sh
//! cargo run -p retrysim-policy --example http_get -- policies/aws-standard.toml 127.0.0.1:8080
//! cargo run -p retrysim-policy --features tower --example reqwest_client -- policies/tuned-example.toml http://127.0.0.1:8080/
//! cargo run -p retrysim-policy --features tower --example tonic_client -- policies/grpc-default.toml http://127.0.0.1:50051
//! ```

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod call;
pub mod decision;
pub mod error;
pub mod file;
pub mod hedge;
pub mod hedged;
pub mod load;
pub mod messages;
pub mod outcome;
pub mod random;
pub mod raw;
pub mod retry;
pub mod state;
pub mod throttle;
pub mod time;
#[cfg(feature = "tower")]
pub mod tower;
pub mod units;
pub mod validate;
#[cfg(feature = "vectors")]
pub mod vectors;

pub use backoff::{Backoff, BackoffKind, Jitter};
pub use call::{CallState, Gate, Guards, Lent, first_allowed};
pub use decision::{DenyReason, RetryContext, decide};
pub use error::{InputError, InputResult};
pub use hedged::HedgedState;
pub use outcome::{Outcome, RetryOn};
pub use random::{Random, SplitMix};
pub use retry::{Attempt, Failure, RetryError, retry, retry_with};
pub use state::{Admit, Decision, RetryState, Shared};
pub use time::{NEVER, Nanos};

/// A validated retry policy, as a policy file describes it.
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
    /// Hedged requests instead of retries, if any.
    pub hedging: Option<hedge::HedgeSpec>,
    /// Adaptive client-side throttling before every attempt, if any.
    pub throttle: Option<throttle::ThrottleSpec>,
    /// A per-try timeout or the deadline cancels the attempt at the server.
    pub cancel_on_timeout: bool,
    /// A respected Retry-After is clamped to [backoff, backoff + this] (the
    /// AWS SDKs: 5 s); `None` = the Retry-After as it is.
    pub retry_after_clamp: Option<Nanos>,
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
            hedging: None,
            throttle: None,
            cancel_on_timeout: false,
            retry_after_clamp: None,
        }
    }
}

impl Policy {
    /// The worst-case time an intent can take under this policy, if bounded:
    /// the deadline, else attempts × per-try timeout plus the longest waits.
    pub fn retry_window(&self) -> Option<Nanos> {
        if let Some(h) = &self.hedging {
            // Hedges run side by side: the last copy starts after its delays.
            return match (self.deadline, self.per_try_timeout, h.delay) {
                (d, _, _) if d != NEVER => Some(d),
                (_, t, _) if t == NEVER => None,
                (_, t, hedge::HedgeDelay::Fixed(delay)) => {
                    Some(t.saturating_add(delay.saturating_mul(h.max_attempts.saturating_sub(1) as u64)))
                }
                (_, t, hedge::HedgeDelay::Quantile(_)) => Some(t.saturating_mul(h.max_attempts as u64)),
            };
        }
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

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
