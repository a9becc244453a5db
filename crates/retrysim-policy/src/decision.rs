//! The retry decision, in its order; each denial has a reason.

use super::{Outcome, Policy};
use crate::time::{NEVER, Nanos};
use std::fmt;

/// Why a retry was not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DenyReason {
    /// The outcome is not in `retry_on`.
    NotRetryable,
    /// The outcome may have executed and repeating is not known to be safe.
    Unsafe,
    /// `max_attempts` reached.
    Attempts,
    /// The circuit breaker is open.
    BreakerOpen,
    /// The server's Retry-After exceeds `max_retry_after`.
    RetryAfterTooLong,
    /// The wait plus `min_attempt_time` would pass the deadline.
    Deadline,
    /// The retry budget refused.
    Budget,
    /// The client-side throttle refused the attempt locally.
    Throttled,
}

impl DenyReason {
    /// Every reason, in decision order.
    pub const ALL: [DenyReason; 8] = [
        DenyReason::NotRetryable,
        DenyReason::Unsafe,
        DenyReason::Attempts,
        DenyReason::BreakerOpen,
        DenyReason::RetryAfterTooLong,
        DenyReason::Deadline,
        DenyReason::Budget,
        DenyReason::Throttled,
    ];

    /// The name used in traces and tables.
    pub fn label(self) -> &'static str {
        match self {
            DenyReason::NotRetryable => "not_retryable",
            DenyReason::Unsafe => "unsafe",
            DenyReason::Attempts => "max_attempts",
            DenyReason::BreakerOpen => "breaker_open",
            DenyReason::RetryAfterTooLong => "retry_after_too_long",
            DenyReason::Deadline => "deadline",
            DenyReason::Budget => "budget",
            DenyReason::Throttled => "throttled",
        }
    }
}

impl fmt::Display for DenyReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// What follows an outcome that may have executed (a timeout, a reset, a
/// 500, 502 or 504): the policy's `on_unknown`.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OnUnknown {
    /// Send the operation again (when `retry_on` and safety allow).
    #[default]
    Retry,
    /// Ask the target for the call's state first (a status query by the
    /// call's key, itself an attempt): finish with the committed result,
    /// or send the operation again after a `not found` (404).
    Query,
    /// End the call: its outcome stays unknown.
    GiveUp,
}

impl OnUnknown {
    /// The name written in a policy file.
    pub fn label(self) -> &'static str {
        match self {
            OnUnknown::Retry => "retry",
            OnUnknown::Query => "query",
            OnUnknown::GiveUp => "give_up",
        }
    }

    /// The value a policy file names, if it is one.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "retry" => Some(OnUnknown::Retry),
            "query" => Some(OnUnknown::Query),
            "give_up" => Some(OnUnknown::GiveUp),
            _ => None,
        }
    }
}

/// A status query's answer that proves nothing committed: `not found`.
pub const NOT_FOUND: Outcome = Outcome::Status(404);

/// What the caller does after a failed attempt.
#[must_use = "the decision says what the caller must do next"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Retry after waiting this long.
    Retry { wait: Nanos },
    /// Give up, for this reason.
    Deny(DenyReason),
}

/// Everything the decision needs to know about the failed attempt.
#[derive(Debug, Clone, Copy)]
pub struct RetryContext {
    pub outcome: Outcome,
    /// The operation is idempotent.
    pub idempotent: bool,
    /// An idempotency key was sent with the request.
    pub key_sent: bool,
    /// Attempts made so far, including the one that just failed.
    pub attempts_made: u32,
    /// Now.
    pub now: Nanos,
    /// The intent's absolute deadline ([`NEVER`] = none).
    pub deadline_at: Nanos,
    /// Retry-After from the server, if any.
    pub retry_after: Option<Nanos>,
    /// The failed attempt was a status query (`on_unknown = "query"`).
    pub query: bool,
    /// The backoff wait drawn for this retry.
    pub backoff_wait: Nanos,
    /// The circuit breaker allows a call now.
    pub breaker_closed: bool,
    /// The retry budget would grant a retry now.
    pub budget_grants: bool,
}

/// Decides whether and when to retry, checking in this order:
/// retryable, safe, attempts left, breaker, the wait against
/// `max_retry_after` and the deadline, and the budget last.
///
/// With `on_unknown`: `give_up` denies an outcome that may have executed
/// as unsafe; `query` makes it safe (the next attempt asks rather than
/// repeats). A status query's `not found` ([`NOT_FOUND`]) proves nothing
/// committed: the operation goes again at once, without `retry_on`; a
/// query's other failures are retried under `retry_on` (a query is a read:
/// always safe).
#[inline]
pub fn decide(policy: &Policy, ctx: &RetryContext) -> Verdict {
    let o = ctx.outcome;
    let not_found = ctx.query && o == NOT_FOUND;
    if !not_found && !policy.retry_on.contains(o) {
        return Verdict::Deny(DenyReason::NotRetryable);
    }
    let unknown = !ctx.query && !o.nothing_executed();
    let safe = match policy.on_unknown {
        _ if ctx.query || !unknown => true,
        OnUnknown::GiveUp => false,
        OnUnknown::Query => true,
        OnUnknown::Retry => ctx.idempotent || ctx.key_sent || policy.retry_unknown_without_key,
    };
    if !safe {
        return Verdict::Deny(DenyReason::Unsafe);
    }
    if ctx.attempts_made >= policy.max_attempts {
        return Verdict::Deny(DenyReason::Attempts);
    }
    if !ctx.breaker_closed {
        return Verdict::Deny(DenyReason::BreakerOpen);
    }
    let respected = if policy.respect_retry_after { ctx.retry_after } else { None };
    let wait = match respected {
        _ if not_found => 0,
        Some(ra) => {
            let limit = policy.max_retry_after.unwrap_or(policy.deadline);
            if ra > limit {
                return Verdict::Deny(DenyReason::RetryAfterTooLong);
            }
            match policy.retry_after_clamp {
                // The AWS SDKs: max(backoff, min(retry_after, backoff + clamp)).
                Some(extra) => ctx.backoff_wait.max(ra.min(ctx.backoff_wait.saturating_add(extra))),
                None => ra,
            }
        }
        None => ctx.backoff_wait,
    };
    if ctx.deadline_at != NEVER {
        let start_by = ctx.now.saturating_add(wait).saturating_add(policy.min_attempt_time);
        if start_by >= ctx.deadline_at {
            return Verdict::Deny(DenyReason::Deadline);
        }
    }
    if !ctx.budget_grants {
        return Verdict::Deny(DenyReason::Budget);
    }
    Verdict::Retry { wait }
}

/// The timeout for an attempt starting now: the per-try timeout clipped to
/// the remaining deadline. [`NEVER`] when neither is set.
#[inline]
pub fn attempt_timeout(policy: &Policy, now: Nanos, deadline_at: Nanos) -> Nanos {
    let remaining = if deadline_at == NEVER { NEVER } else { deadline_at.saturating_sub(now) };
    policy.per_try_timeout.min(remaining)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RetryOn;

    const MS: Nanos = 1_000_000;

    fn policy() -> Policy {
        Policy { max_attempts: 3, deadline: 1000 * MS, retry_on: RetryOn::of(&["timeout", "503"]), ..Policy::default() }
    }

    fn ctx(outcome: Outcome) -> RetryContext {
        RetryContext {
            outcome,
            idempotent: false,
            key_sent: false,
            attempts_made: 1,
            now: 100 * MS,
            deadline_at: 1000 * MS,
            retry_after: None,
            query: false,
            backoff_wait: 50 * MS,
            breaker_closed: true,
            budget_grants: true,
        }
    }

    #[test]
    fn order_of_checks() {
        let p = policy();
        assert_eq!(decide(&p, &ctx(Outcome::Status(500))), Verdict::Deny(DenyReason::NotRetryable));
        // A timeout on a non-idempotent operation without a key is unsafe…
        assert_eq!(decide(&p, &ctx(Outcome::Timeout)), Verdict::Deny(DenyReason::Unsafe));
        // …but safe with a key, or when the operation is idempotent.
        assert_eq!(
            decide(&p, &RetryContext { key_sent: true, ..ctx(Outcome::Timeout) }),
            Verdict::Retry { wait: 50 * MS }
        );
        // 503 proves nothing executed.
        assert_eq!(decide(&p, &ctx(Outcome::Status(503))), Verdict::Retry { wait: 50 * MS });
        let spent = RetryContext { attempts_made: 3, ..ctx(Outcome::Status(503)) };
        assert_eq!(decide(&p, &spent), Verdict::Deny(DenyReason::Attempts));
        let open = RetryContext { breaker_closed: false, ..ctx(Outcome::Status(503)) };
        assert_eq!(decide(&p, &open), Verdict::Deny(DenyReason::BreakerOpen));
        let broke = RetryContext { budget_grants: false, ..ctx(Outcome::Status(503)) };
        assert_eq!(decide(&p, &broke), Verdict::Deny(DenyReason::Budget));
    }

    #[test]
    fn retry_after_longer_than_the_deadline_gives_up_at_once() {
        let p = policy();
        let c = RetryContext { retry_after: Some(2000 * MS), ..ctx(Outcome::Status(503)) };
        assert_eq!(decide(&p, &c), Verdict::Deny(DenyReason::RetryAfterTooLong));
        let c = RetryContext { retry_after: Some(950 * MS), ..ctx(Outcome::Status(503)) };
        assert_eq!(decide(&p, &c), Verdict::Deny(DenyReason::Deadline));
        let c = RetryContext { retry_after: Some(200 * MS), ..ctx(Outcome::Status(503)) };
        assert_eq!(decide(&p, &c), Verdict::Retry { wait: 200 * MS });
        let ignoring = Policy { respect_retry_after: false, ..policy() };
        let c = RetryContext { retry_after: Some(2000 * MS), ..ctx(Outcome::Status(503)) };
        assert_eq!(decide(&ignoring, &c), Verdict::Retry { wait: 50 * MS });
    }

    #[test]
    fn max_retry_after_never_lifts_the_limit() {
        let unlimited = Policy { max_retry_after: Some(NEVER), deadline: NEVER, ..policy() };
        let c = RetryContext { retry_after: Some(2000 * MS), deadline_at: NEVER, ..ctx(Outcome::Status(503)) };
        assert_eq!(decide(&unlimited, &c), Verdict::Retry { wait: 2000 * MS });
        let capped = Policy { max_retry_after: Some(1500 * MS), deadline: NEVER, ..policy() };
        assert_eq!(decide(&capped, &c), Verdict::Deny(DenyReason::RetryAfterTooLong));
    }

    #[test]
    fn retry_after_is_clamped_around_the_backoff_as_the_aws_sdks_do() {
        let p = Policy { retry_after_clamp: Some(5000 * MS), deadline: NEVER, ..policy() };
        let c = |ra: Nanos| RetryContext {
            retry_after: Some(ra * MS),
            deadline_at: NEVER,
            backoff_wait: 300 * MS,
            ..ctx(Outcome::Status(503))
        };
        assert_eq!(decide(&p, &c(100)), Verdict::Retry { wait: 300 * MS }, "never below the backoff");
        assert_eq!(decide(&p, &c(2000)), Verdict::Retry { wait: 2000 * MS });
        assert_eq!(decide(&p, &c(60_000)), Verdict::Retry { wait: 5300 * MS }, "at most backoff + 5 s");
    }

    #[test]
    fn min_attempt_time_counts_against_the_deadline() {
        let p = Policy { min_attempt_time: 900 * MS, ..policy() };
        assert_eq!(decide(&p, &ctx(Outcome::Status(503))), Verdict::Deny(DenyReason::Deadline));
    }

    #[test]
    fn timeout_is_clipped_to_the_deadline() {
        let p = Policy { per_try_timeout: 400 * MS, ..policy() };
        assert_eq!(attempt_timeout(&p, 0, 1000 * MS), 400 * MS);
        assert_eq!(attempt_timeout(&p, 800 * MS, 1000 * MS), 200 * MS);
        assert_eq!(attempt_timeout(&Policy::default(), 5, NEVER), NEVER);
    }
}
