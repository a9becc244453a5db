//! One call under a policy, step by step, in the order the simulator and
//! production code both follow — the one implementation of that order.
//!
//! A call's own state ([`CallState`]: its attempts, deadline, previous
//! wait, budget refund) is kept apart from what it shares with other calls
//! of the client: the budget, the breaker and the throttle, reached through
//! [`Guards`]. Production code keeps those behind one lock
//! ([`crate::Shared`], used by [`crate::RetryState`]); the simulator keeps
//! them in its own tables and lends them out per step.
//!
//! The steps of a call:
//!
//! 1. [`first_allowed`]: a new call is refused while its breaker is open
//!    (unless the breaker is `retries_only`).
//! 2. [`CallState::gate`] before every attempt: the throttle admits it (SRE:
//!    refuse with its probability; AWS adaptive: wait for a token, or refuse
//!    when the token would come after the deadline minus
//!    `min_attempt_time`). One draw, only when the policy has a throttle and
//!    the attempt does not already hold a token it waited for.
//! 3. [`CallState::on_send`] as the attempt goes: the budget and then the
//!    breaker count it; the attempt's timeout is the per-try timeout clipped
//!    to the deadline left.
//! 4. [`CallState::after_outcome`] when it ends: the budget, then the
//!    breaker, then the throttle learn the outcome; a failure draws one
//!    number for the jitter and [`decide`] checks, in order, `retry_on`,
//!    safety, `max_attempts`, the breaker, Retry-After against
//!    `max_retry_after`, the deadline, and the budget last; a granted retry
//!    spends its budget cost.

mod hedge;

use crate::breaker::Breaker;
use crate::budget::Budget;
use crate::decision::{DenyReason, NOT_FOUND, OnUnknown, RetryContext, Verdict, attempt_timeout, decide};
use crate::hedge::Hedger;
use crate::throttle::{Admission, Throttle};
use crate::time::{NEVER, Nanos};
use crate::{Outcome, Policy};

/// The state a call shares with the other calls of its client, lent to one
/// step. Each method returns `None` when the policy has no such guard.
pub trait Guards {
    /// The retry budget.
    fn budget(&mut self) -> Option<&mut Budget>;
    /// The circuit breaker.
    fn breaker(&mut self) -> Option<&mut Breaker>;
    /// The client-side throttle.
    fn throttle(&mut self) -> Option<&mut Throttle>;
    /// The hedging clock (learnt delay, extra-load cap) of a hedged policy.
    fn hedger(&mut self) -> Option<&mut Hedger> {
        None
    }
    /// Whether the driver records each attempt's end: the machine reports
    /// an [`crate::machine::Ended`] for every attempt of a call without
    /// hedging, and the budget's level with every end. A driver that does
    /// not (a simulation without a trace) saves both.
    fn records_ends(&self) -> bool {
        true
    }
}

/// Whether a new call may start now: its breaker (if any) lets a first
/// attempt through.
#[inline]
pub fn first_allowed<G: Guards>(guards: &mut G, now: Nanos) -> bool {
    guards.breaker().is_none_or(|b| b.allows_first(now))
}

/// What the throttle says before an attempt ([`CallState::gate`]).
#[must_use = "the decision says what the caller must do next"]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gate {
    /// Send it now.
    Send,
    /// The throttle holds a token for it: send it after this wait (then
    /// [`CallState::gate`] lets it through without a draw).
    Wait(Nanos),
    /// Refused locally: with the SRE throttle's rejection probability, or
    /// `None` when the token would come too late for the deadline.
    Refuse {
        /// The probability the draw fell under (SRE).
        p: Option<f64>,
    },
}

/// What the caller does after an outcome, on the nanosecond clock (the
/// public form is [`crate::Decision`]).
#[must_use = "the decision says what the caller must do next"]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The call succeeded.
    Done,
    /// Retry after waiting this long.
    Retry {
        /// The wait, in nanoseconds.
        wait: Nanos,
    },
    /// Give up with the last outcome, for this reason.
    GiveUp(DenyReason),
}

/// One call's own state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallState {
    /// The operation is idempotent.
    pub idempotent: bool,
    /// An idempotency key is sent with every attempt.
    pub key_sent: bool,
    /// The call's absolute deadline ([`NEVER`] = none).
    pub deadline_at: Nanos,
    /// Attempts sent so far.
    pub attempts: u32,
    /// When the current (or last) attempt was sent.
    pub sent_at: Nanos,
    /// The wait granted by the last retry decision.
    pub prev_wait: Nanos,
    /// What the budget charged for the current retry (refunded on success).
    pub retry_cost: f64,
    /// The next attempt holds a throttle token it waited for.
    pub admitted: bool,
    /// The current (or next) attempt is a status query, not the operation
    /// (`on_unknown = "query"` after an outcome that may have executed).
    pub querying: bool,
}

impl CallState {
    /// A call starting at `now` with the absolute deadline `deadline_at`.
    pub fn new(deadline_at: Nanos, now: Nanos, idempotent: bool, key_sent: bool) -> Self {
        Self {
            idempotent,
            key_sent,
            deadline_at,
            attempts: 0,
            sent_at: now,
            prev_wait: 0,
            retry_cost: 0.0,
            admitted: false,
            querying: false,
        }
    }

    /// The absolute deadline of a call under `policy` starting at `now`.
    #[inline]
    pub fn deadline_from(policy: &Policy, now: Nanos) -> Nanos {
        if policy.deadline == NEVER { NEVER } else { now.saturating_add(policy.deadline) }
    }

    /// Before an attempt: whether the throttle lets it go. `draw` is called
    /// once, only when the policy has a throttle and the attempt does not
    /// hold a token already.
    #[inline]
    pub fn gate<G: Guards>(&mut self, policy: &Policy, guards: &mut G, now: Nanos, draw: impl FnOnce() -> f64) -> Gate {
        if policy.throttle.is_none() || std::mem::take(&mut self.admitted) {
            return Gate::Send;
        }
        let Some(t) = guards.throttle() else {
            return Gate::Send;
        };
        match t.admit(now, draw()) {
            Admission::Send => Gate::Send,
            Admission::Refuse { p } => Gate::Refuse { p: Some(p) },
            Admission::Wait(wait) => {
                let in_time = self.deadline_at == NEVER
                    || now.saturating_add(wait).saturating_add(policy.min_attempt_time) < self.deadline_at;
                if in_time {
                    self.admitted = true;
                    Gate::Wait(wait)
                } else {
                    // The token would come too late for the deadline: give it back.
                    t.release();
                    Gate::Refuse { p: None }
                }
            }
        }
    }

    /// An attempt goes out at `now`: the budget and then the breaker count
    /// it. Returns its timeout, the per-try timeout clipped to the deadline
    /// left ([`NEVER`] = none).
    #[inline]
    pub fn on_send<G: Guards>(&mut self, policy: &Policy, guards: &mut G, now: Nanos) -> Nanos {
        self.attempts += 1;
        self.sent_at = now;
        let retry = self.attempts > 1;
        if let Some(b) = guards.budget() {
            b.on_send(now, retry);
        }
        if let Some(b) = guards.breaker() {
            b.on_send(now);
        }
        attempt_timeout(policy, now, self.deadline_at)
    }

    /// The current attempt ended at `now` with `outcome` (a timeout when the
    /// caller gave it up at its timeout) and the server's Retry-After. The
    /// budget, the breaker and the throttle learn it; a failure calls `draw`
    /// once for the jitter and is decided.
    #[inline]
    pub fn after_outcome<G: Guards>(
        &mut self,
        policy: &Policy,
        guards: &mut G,
        outcome: Outcome,
        now: Nanos,
        retry_after: Option<Nanos>,
        draw: impl FnOnce() -> f64,
    ) -> Next {
        let (retry, refund) = (self.attempts > 1, self.retry_cost);
        let latency = now.saturating_sub(self.sent_at);
        let budget_grants = match guards.budget() {
            Some(b) => {
                b.on_outcome(outcome, retry, policy.retry_on.contains(outcome), refund);
                outcome == Outcome::Ok || b.grants(now, outcome)
            }
            None => true,
        };
        let breaker_closed = match guards.breaker() {
            Some(b) => {
                b.on_outcome(now, outcome, latency);
                b.allows(now)
            }
            None => true,
        };
        if let Some(t) = guards.throttle() {
            t.on_outcome(now, outcome);
        }
        if outcome == Outcome::Ok {
            return Next::Done;
        }
        let u = draw();
        let ctx = RetryContext {
            outcome,
            idempotent: self.idempotent,
            key_sent: self.key_sent,
            attempts_made: self.attempts,
            now,
            deadline_at: self.deadline_at,
            retry_after,
            query: self.querying,
            backoff_wait: policy.backoff.delay_after(outcome, self.attempts, self.prev_wait, u),
            breaker_closed,
            budget_grants,
        };
        match decide(policy, &ctx) {
            Verdict::Retry { wait } => {
                self.retry_cost = guards.budget().map_or(0.0, |b| b.spend_retry(outcome));
                self.prev_wait = wait;
                // A query's `not found` sends the operation again; its other
                // failures, and an unknown outcome under `query`, a query.
                self.querying = if self.querying {
                    outcome != NOT_FOUND
                } else {
                    policy.on_unknown == OnUnknown::Query && !outcome.nothing_executed()
                };
                Next::Retry { wait }
            }
            Verdict::Deny(reason) => Next::GiveUp(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::breaker::{BreakerKind, BreakerSpec};
    use crate::budget::BudgetKind;
    use crate::hedge::Hedger;
    use crate::{RetryOn, SplitMix, random::Random};

    /// Guards held in separate places, each lent by `&mut`.
    #[derive(Debug, Default)]
    struct Lent<'a> {
        /// The retry budget, if any.
        budget: Option<&'a mut Budget>,
        /// The circuit breaker, if any.
        breaker: Option<&'a mut Breaker>,
        /// The client-side throttle, if any.
        throttle: Option<&'a mut Throttle>,
        /// The hedging clock, if any.
        hedger: Option<&'a mut Hedger>,
    }

    impl Guards for Lent<'_> {
        fn budget(&mut self) -> Option<&mut Budget> {
            self.budget.as_deref_mut()
        }

        fn breaker(&mut self) -> Option<&mut Breaker> {
            self.breaker.as_deref_mut()
        }

        fn throttle(&mut self) -> Option<&mut Throttle> {
            self.throttle.as_deref_mut()
        }

        fn hedger(&mut self) -> Option<&mut Hedger> {
            self.hedger.as_deref_mut()
        }
    }

    const MS: Nanos = 1_000_000;

    fn policy() -> Policy {
        Policy {
            max_attempts: 3,
            per_try_timeout: 400 * MS,
            deadline: 1000 * MS,
            retry_on: RetryOn::of(&["503"]),
            ..Policy::default()
        }
    }

    #[test]
    fn guards_lent_from_separate_places_are_updated_in_place() {
        let p = policy();
        let mut budget = Budget::new(BudgetKind::TokenBucket { max_tokens: 4.0, token_ratio: 0.5 });
        let spec = BreakerSpec {
            kind: BreakerKind::Consecutive { failures: 2 },
            failure_ratio: None,
            window: 0,
            min_requests: 0,
            open_for: 1000 * MS,
            half_open_probes: 1,
            retries_only: false,
        };
        let mut breaker = Breaker::new(spec);
        let mut rng = SplitMix::new(7);
        let mut call = CallState::new(CallState::deadline_from(&p, 0), 0, true, false);
        let mut g = Lent { budget: Some(&mut budget), breaker: Some(&mut breaker), ..Lent::default() };
        assert!(first_allowed(&mut g, 0));
        assert_eq!(call.gate(&p, &mut g, 0, || unreachable!("no throttle, no draw")), Gate::Send);
        assert_eq!(call.on_send(&p, &mut g, 0), 400 * MS);
        let d = call.after_outcome(&p, &mut g, Outcome::Status(503), 10 * MS, None, || rng.unit());
        assert_eq!(d, Next::Retry { wait: 0 });
        assert_eq!(call.on_send(&p, &mut g, 10 * MS), 400 * MS);
        // The second failure in a row opens the breaker: no retry, no new call.
        let d = call.after_outcome(&p, &mut g, Outcome::Status(503), 700 * MS, None, || rng.unit());
        assert_eq!(d, Next::GiveUp(DenyReason::BreakerOpen));
        assert!(!first_allowed(&mut g, 700 * MS));
        assert_eq!(budget.level(), Some(2.0), "each retryable failure takes a token from 4");
        assert_eq!(call.attempts, 2);
        // The last attempt would be clipped to the deadline left.
        assert_eq!(attempt_timeout(&p, 800 * MS, call.deadline_at), 200 * MS);
    }

    #[test]
    fn a_success_draws_nothing() {
        let p = policy();
        let mut call = CallState::new(NEVER, 0, true, false);
        let mut g = Lent::default();
        call.on_send(&p, &mut g, 0);
        let d = call.after_outcome(&p, &mut g, Outcome::Ok, 5, None, || unreachable!("no draw on success"));
        assert_eq!(d, Next::Done);
    }
}
