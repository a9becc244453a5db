//! Retry policies: the typed policy file, backoff formulas and the retry
//! decision. They live in the `retrysim-policy` crate, which production
//! code uses too, so that what is simulated is what ships; this module
//! re-exports it under the paths the simulator has always used.

pub use retrysim_policy::decision::Verdict;
pub use retrysim_policy::{
    Backoff, BackoffKind, DenyReason, Jitter, OnUnknown, Outcome, Policy, RetryContext, RetryOn, backoff, breaker,
    budget, call, decide, decision, file, hedge, outcome, throttle,
};
