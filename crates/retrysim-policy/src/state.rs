//! The policy at run time: [`Shared`] holds what many calls of one client
//! share (the budget, the circuit breaker, the client-side throttle) behind
//! one handle; [`RetryState`] is one call's own state (its attempts, its
//! deadline, its previous wait). The steps and their order are the
//! simulator's: a first attempt is refused while the breaker is open; the
//! throttle admits every attempt; an outcome updates the budget, then the
//! breaker, then the throttle, and a failure draws the jitter and asks
//! [`decide`] — retryable, safe, attempts left, breaker, Retry-After
//! against `max_retry_after`, the deadline, and the budget last.

use crate::breaker::{Breaker, BreakerState};
use crate::budget::Budget;
use crate::decision::{self, DenyReason, RetryContext, attempt_timeout, decide};
use crate::random::Random;
use crate::throttle::{Admission, Throttle};
use crate::time::{NEVER, Nanos};
use crate::{Outcome, Policy};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// What a client's calls share.
#[derive(Debug)]
pub struct SharedState {
    /// The retry budget, if the policy has one.
    pub budget: Option<Budget>,
    /// The circuit breaker, if the policy has one.
    pub breaker: Option<Breaker>,
    /// The client-side throttle, if the policy has one.
    pub throttle: Option<Throttle>,
}

/// The handle to a client's shared state: clone it into every call. One
/// per client instance; a `scope = "shared"` budget or throttle is shared
/// by giving every instance of the class clones of one handle.
///
/// Times given to the state are nanoseconds since one origin, the same for
/// every call that shares it: [`Shared::now`] reads them from the handle's
/// own monotonic clock, or the caller injects its own.
#[derive(Debug, Clone)]
pub struct Shared {
    inner: Arc<Mutex<SharedState>>,
    origin: Instant,
}

impl Shared {
    /// Fresh shared state for `policy`; its origin (time 0) is now.
    pub fn new(policy: &Policy) -> Self {
        let state = SharedState {
            budget: policy.budget.map(|b| Budget::new(b.kind)),
            breaker: policy.breaker.map(Breaker::new),
            throttle: policy.throttle.as_ref().map(Throttle::new),
        };
        Self { inner: Arc::new(Mutex::new(state)), origin: Instant::now() }
    }

    /// Nanoseconds since the handle was created, by the monotonic clock.
    pub fn now(&self) -> Nanos {
        self.origin.elapsed().as_nanos().min(u128::from(NEVER - 1)) as Nanos
    }

    /// Locks the state (a poisoned lock is taken over: the state is plain data).
    pub fn lock(&self) -> MutexGuard<'_, SharedState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The budget's tokens or quota left (token bucket and quota).
    pub fn budget_level(&self) -> Option<f64> {
        self.lock().budget.as_ref().and_then(Budget::level)
    }

    /// The breaker's state at `now`.
    pub fn breaker_state(&self, now: Nanos) -> Option<BreakerState> {
        self.lock().breaker.as_mut().map(|b| b.state(now))
    }
}

/// What to do before an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Send the attempt now and give it up after `timeout` ([`NEVER`] = no timeout).
    Send {
        /// The per-try timeout clipped to the deadline left.
        timeout: Nanos,
    },
    /// The throttle holds a token for it: wait this long, then call
    /// [`RetryState::before_attempt`] again.
    Wait(Nanos),
}

/// What the caller does after an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The call succeeded.
    Done,
    /// Retry after waiting this long (then [`RetryState::before_attempt`]).
    Retry {
        /// The wait, in nanoseconds.
        wait: Nanos,
    },
    /// Give up with the last outcome, for this reason.
    GiveUp(DenyReason),
}

/// One call's retry state.
pub struct RetryState<'p, R: Random> {
    policy: &'p Policy,
    shared: Shared,
    rng: R,
    idempotent: bool,
    key_sent: bool,
    deadline_at: Nanos,
    attempts: u32,
    sent_at: Nanos,
    prev_wait: Nanos,
    retry_cost: f64,
    admitted: bool,
    last_draw: Option<f64>,
}

impl<'p, R: Random> RetryState<'p, R> {
    /// A call starting at `now` on an idempotent operation; its deadline is
    /// `now + policy.deadline`.
    pub fn new(policy: &'p Policy, shared: Shared, now: Nanos, rng: R) -> Self {
        let deadline_at = if policy.deadline == NEVER { NEVER } else { now.saturating_add(policy.deadline) };
        Self {
            policy,
            shared,
            rng,
            idempotent: true,
            key_sent: false,
            deadline_at,
            attempts: 0,
            sent_at: now,
            prev_wait: 0,
            retry_cost: 0.0,
            admitted: false,
            last_draw: None,
        }
    }

    /// Declares the operation: idempotent or not, and whether an
    /// idempotency key is sent with every attempt.
    pub fn operation(mut self, idempotent: bool, key_sent: bool) -> Self {
        self.idempotent = idempotent;
        self.key_sent = key_sent;
        self
    }

    /// The call's absolute deadline ([`NEVER`] = none).
    pub fn deadline_at(&self) -> Nanos {
        self.deadline_at
    }

    /// Attempts sent so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The last random draw consumed (by the throttle or the jitter), if any.
    pub fn take_draw(&mut self) -> Option<f64> {
        self.last_draw.take()
    }

    /// The shared handle.
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    fn draw(&mut self) -> f64 {
        let u = self.rng.unit();
        self.last_draw = Some(u);
        u
    }

    /// Before each attempt (the first, and each retry after its wait):
    /// whether and when it may go. `Err` ends the call: the breaker is open
    /// (first attempt) or the throttle refused it.
    pub fn before_attempt(&mut self, now: Nanos) -> Result<Admit, DenyReason> {
        let first = self.attempts == 0;
        let shared = self.shared.clone();
        let mut s = shared.lock();
        if first && !self.admitted && s.breaker.as_mut().is_some_and(|b| !b.allows_first(now)) {
            return Err(DenyReason::BreakerOpen);
        }
        if s.throttle.is_some() && !self.admitted {
            let u = self.draw();
            let t = s.throttle.as_mut().expect("checked above");
            match t.admit(now, u) {
                Admission::Send => {}
                Admission::Refuse { .. } => return Err(DenyReason::Throttled),
                Admission::Wait(wait) => {
                    let in_time = self.deadline_at == NEVER
                        || now.saturating_add(wait).saturating_add(self.policy.min_attempt_time) < self.deadline_at;
                    if !in_time {
                        t.release();
                        return Err(DenyReason::Throttled);
                    }
                    self.admitted = true;
                    return Ok(Admit::Wait(wait));
                }
            }
        }
        self.admitted = false;
        self.attempts += 1;
        self.sent_at = now;
        let retry = self.attempts > 1;
        if let Some(b) = s.budget.as_mut() {
            b.on_send(now, retry);
        }
        if let Some(b) = s.breaker.as_mut() {
            b.on_send(now);
        }
        Ok(Admit::Send { timeout: attempt_timeout(self.policy, now, self.deadline_at) })
    }

    /// After each attempt: its outcome at `now` (a timeout when the caller
    /// gave up at the attempt's timeout) and the server's Retry-After, if any.
    pub fn after_outcome(&mut self, outcome: Outcome, now: Nanos, retry_after: Option<Nanos>) -> Decision {
        let policy = self.policy;
        let retryable = policy.retry_on.contains(outcome);
        let (retry, refund) = (self.attempts > 1, self.retry_cost);
        let latency = now.saturating_sub(self.sent_at);
        let shared = self.shared.clone();
        let mut s = shared.lock();
        let budget_grants = match s.budget.as_mut() {
            Some(b) => {
                b.on_outcome(outcome, retry, retryable, refund);
                outcome == Outcome::Ok || b.grants(now, outcome)
            }
            None => true,
        };
        let breaker_closed = match s.breaker.as_mut() {
            Some(b) => {
                b.on_outcome(now, outcome, latency);
                b.allows(now)
            }
            None => true,
        };
        if let Some(t) = s.throttle.as_mut() {
            t.on_outcome(now, outcome);
        }
        if outcome == Outcome::Ok {
            return Decision::Done;
        }
        drop(s);
        let u = self.draw();
        let ctx = RetryContext {
            outcome,
            idempotent: self.idempotent,
            key_sent: self.key_sent,
            attempts_made: self.attempts,
            now,
            deadline_at: self.deadline_at,
            retry_after,
            backoff_wait: policy.backoff.delay_after(outcome, self.attempts, self.prev_wait, u),
            breaker_closed,
            budget_grants,
        };
        match decide(policy, &ctx) {
            decision::Decision::Retry { wait } => {
                let mut s = shared.lock();
                self.retry_cost = s.budget.as_mut().map_or(0.0, |b| b.spend_retry(outcome));
                self.prev_wait = wait;
                Decision::Retry { wait }
            }
            decision::Decision::Deny(reason) => Decision::GiveUp(reason),
        }
    }
}
