//! The retry policy of retrysim (a simulator of retries under overload) as
//! a runtime for production code: load a policy file or build one in code,
//! and run its whole decision — which outcomes are retried and in what
//! order of checks, backoff and jitter, Retry-After, per-try timeouts and
//! deadlines, retry budgets, circuit breakers, client-side throttles and
//! hedged requests — with the same code the simulator runs.
//!
//! The decision is a small state machine: it never reads a clock or draws
//! a random number on its own. Every step takes the [`Instant`](std::time::Instant)
//! it happens at, waits and timeouts are [`Duration`]s, and the random
//! draws come from a [`Random`] source you choose (seed it for tests).
//!
//! - [`Policy`]: [`Policy::load`] a file, [`Policy::from_toml`], or
//!   [`Policy::builder`]; errors are [`PolicyError`]s that name the field.
//! - [`Shared`]: one per client instance — the policy and the budget,
//!   breaker, throttle and hedging clock its calls share.
//! - [`RetryState`]: one call, step by step ([`Admit`] before each
//!   attempt, [`Decision`] after each outcome); [`HedgedState`] for a
//!   policy with `[hedging]`.
//! - [`Call`]: the sans-IO machine underneath them, which the simulator
//!   runs too: [`CallInput`]s in (start, timer, answer or timeout of copy
//!   k), [`CallAction`]s out (send copy k, wake at t, abandon copy k,
//!   finish).
//! - [`retry`] / [`retry_with`]: the loop for blocking code.
//! - Feature `tower`: `tower::RetryLayer` and `tower::HedgeLayer` wrap any
//!   tower `Service` (reqwest, tonic, hyper clients).
//!
//! One call, driven by hand:
//!
//! ```
//! use retrysim_policy::{Admit, Decision, Outcome, Policy, Shared, SplitMix};
//! use std::time::{Duration, Instant};
//!
//! let policy = Policy::builder()
//!     .max_attempts(3)
//!     .per_try_timeout(Duration::from_millis(200))
//!     .retry_on(["503"])
//!     .build()?;
//! let client = Shared::new(policy); // one per client, cloned into every call
//! let mut call = client.call(Instant::now(), SplitMix::new(7));
//! let mut answers = [503, 503, 200].into_iter();
//! let ended = loop {
//!     match call.before_attempt(Instant::now()) {
//!         Ok(Admit::Send { timeout }) => assert_eq!(timeout, Some(Duration::from_millis(200))),
//!         Ok(Admit::Wait(wait)) => { std::thread::sleep(wait); continue; }
//!         Ok(_) => unreachable!("a later version's admission"),
//!         Err(refused) => break Err(refused), // breaker open, or throttled
//!     }
//!     // Send the request here, giving it up after `timeout`.
//!     let outcome = match answers.next() { Some(200) => Outcome::Ok, Some(code) => Outcome::Status(code), None => Outcome::Timeout };
//!     match call.after_outcome(outcome, Instant::now(), None) {
//!         Decision::Done => break Ok(call.attempts()),
//!         Decision::Retry { wait } => std::thread::sleep(wait),
//!         Decision::GiveUp(reason) => break Err(reason),
//!         _ => unreachable!("a later version's decision"),
//!     }
//! };
//! assert_eq!(ended, Ok(3));
//! # Ok::<(), retrysim_policy::PolicyError>(())
//! ```
//!
//! Three example clients run under a policy file, each proven by a test of
//! the same name against a scripted server on 127.0.0.1:
//!
//! ```sh
//! cargo run -p retrysim-policy --example http_get -- policies/aws-standard.toml 127.0.0.1:8080
//! cargo run -p retrysim-policy --features tower --example reqwest_client -- policies/tuned-example.toml http://127.0.0.1:8080/
//! cargo run -p retrysim-policy --features tower --example tonic_client -- policies/grpc-default.toml http://127.0.0.1:50051
//! ```
//!
//! Feature `simulator` makes public (hidden from these docs) retrysim's
//! own plumbing: the file format's parts and the nanosecond clock its
//! simulator runs the same machine on. It is not part of the crate's
//! stable API; without it no public function takes or returns raw
//! nanoseconds.

#![deny(missing_docs)]
// Without `simulator`, the parts of the plumbing only retrysim's engine
// calls are unused here.
#![cfg_attr(not(feature = "simulator"), allow(dead_code))]

/// The modules of retrysim's own plumbing: public (and hidden from these
/// docs) only with the `simulator` feature, which the simulator enables.
macro_rules! plumbing {
    ($($name:ident),* $(,)?) => {
        $(
            #[cfg(feature = "simulator")]
            #[doc(hidden)]
            pub mod $name;
            #[cfg(not(feature = "simulator"))]
            mod $name;
        )*
    };
}

plumbing!(
    backoff, breaker, budget, call, decision, error, file, hedge, load, machine, messages, outcome, random, raw, state,
    throttle, time, units, validate,
);
mod builder;
pub mod hedged;
mod retry;
#[cfg(feature = "tower")]
pub mod tower;
#[cfg(feature = "vectors")]
#[doc(hidden)]
pub mod vectors;

pub use backoff::{BackoffKind, Jitter};
pub use builder::PolicyBuilder;
pub use decision::{DenyReason, OnUnknown};
pub use error::{PolicyError, PolicyErrorKind};
pub use hedged::HedgedState;
pub use machine::{Call, CallAction, CallInput};
pub use outcome::Outcome;
pub use random::{Random, SplitMix};
pub use retry::{Attempt, Failure, RetryError, retry, retry_with};
pub use state::{Admit, Decision, RetryState, Shared};
use std::time::Duration;
#[cfg(feature = "simulator")]
#[doc(hidden)]
pub use {
    backoff::Backoff,
    call::{CallState, Gate, Guards, first_allowed},
    decision::{RetryContext, decide},
    error::{InputError, InputResult},
    outcome::RetryOn,
    time::{NEVER, Nanos},
};
#[cfg(not(feature = "simulator"))]
use {
    backoff::Backoff,
    outcome::RetryOn,
    time::{NEVER, Nanos},
};

/// A validated retry policy, as a policy file describes it: read one with
/// [`Policy::load`] or [`Policy::from_toml`], or build one with
/// [`Policy::builder`]. The times are read with the methods of the same
/// names ([`Policy::per_try_timeout`], [`Policy::deadline`], ...); the
/// sections (backoff, budget, breaker, throttle, hedging) are written out
/// whole by [`Policy::to_toml`].
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Display name (`name` in the file, else the file stem or "inline").
    pub name: String,
    /// Attempts including the first; 1 means no retries.
    pub max_attempts: u32,
    /// The caller abandons one attempt after this (`NEVER` = no per-try timeout).
    #[doc(hidden)]
    pub per_try_timeout: Nanos,
    /// Total time for the intent (`NEVER` = none).
    #[doc(hidden)]
    pub deadline: Nanos,
    /// Do not start an attempt with less deadline left than this.
    #[doc(hidden)]
    pub min_attempt_time: Nanos,
    /// Which outcomes may be retried.
    #[doc(hidden)]
    pub retry_on: RetryOn,
    /// Retry outcomes that may have executed on non-idempotent operations sent without a key.
    pub retry_unknown_without_key: bool,
    /// What follows an outcome that may have executed (a timeout, a reset,
    /// a 500): retry it, ask the target for the call's state first, or give up.
    pub on_unknown: OnUnknown,
    /// Wait what a 429/503 Retry-After says instead of the backoff.
    pub respect_retry_after: bool,
    /// Give up instead of waiting longer than this: `None` = the deadline,
    /// `NEVER` (`"never"`) = no limit.
    #[doc(hidden)]
    pub max_retry_after: Option<Nanos>,
    /// The wait between attempts.
    #[doc(hidden)]
    pub backoff: Backoff,
    /// The retry budget, if any.
    #[doc(hidden)]
    pub budget: Option<budget::BudgetSpec>,
    /// The circuit breaker (per client instance), if any.
    #[doc(hidden)]
    pub breaker: Option<breaker::BreakerSpec>,
    /// Hedged requests instead of retries, if any.
    #[doc(hidden)]
    pub hedging: Option<hedge::HedgeSpec>,
    /// Adaptive client-side throttling before every attempt, if any.
    #[doc(hidden)]
    pub throttle: Option<throttle::ThrottleSpec>,
    /// A per-try timeout or the deadline cancels the attempt at the server.
    pub cancel_on_timeout: bool,
    /// A respected Retry-After is clamped to [backoff, backoff + this] (the
    /// AWS SDKs: 5 s); `None` = the Retry-After as it is.
    #[doc(hidden)]
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
            on_unknown: OnUnknown::Retry,
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
    /// The policy as a policy file (every field explicit, durations with
    /// units) that [`Policy::from_toml`] reads back to the same policy.
    pub fn to_toml(&self) -> String {
        file::to_toml(self)
    }

    /// Give up one attempt after this long; `None` = no per-try timeout.
    pub fn per_try_timeout(&self) -> Option<Duration> {
        time::duration(self.per_try_timeout)
    }

    /// The time a whole call may take, waits included; `None` = no deadline.
    pub fn deadline(&self) -> Option<Duration> {
        time::duration(self.deadline)
    }

    /// No attempt starts with less deadline left than this.
    pub fn min_attempt_time(&self) -> Duration {
        Duration::from_nanos(self.min_attempt_time)
    }

    /// The longest Retry-After the policy waits before it gives up instead:
    /// `Some(None)` waits any Retry-After, `None` waits one that fits in the
    /// deadline.
    pub fn max_retry_after(&self) -> Option<Option<Duration>> {
        self.max_retry_after.map(time::duration)
    }

    /// A respected Retry-After is clamped to `[backoff, backoff + this]`.
    pub fn retry_after_clamp(&self) -> Option<Duration> {
        self.retry_after_clamp.map(Duration::from_nanos)
    }

    /// The worst-case time a call can take under this policy, if bounded:
    /// the deadline, else attempts × per-try timeout plus the longest waits.
    pub fn worst_case(&self) -> Option<Duration> {
        self.window().and_then(time::duration)
    }

    /// [`Policy::worst_case`] on the nanosecond clock.
    #[cfg(feature = "simulator")]
    #[doc(hidden)]
    pub fn retry_window(&self) -> Option<Nanos> {
        self.window()
    }

    /// [`Policy::worst_case`] on the nanosecond clock.
    fn window(&self) -> Option<Nanos> {
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
