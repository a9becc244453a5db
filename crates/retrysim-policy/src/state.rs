//! The policy at run time in production: [`Shared`] holds what many calls
//! of one client share (the budget, the circuit breaker, the client-side
//! throttle) behind one lock; [`RetryState`] is one call: its
//! [`CallState`], the shared handle and a random source. The steps and
//! their order are [`crate::call`]'s, the same the simulator takes.

use crate::breaker::{Breaker, BreakerState};
use crate::budget::Budget;
pub use crate::call::Decision;
use crate::call::{CallState, Gate, Guards, first_allowed};
use crate::decision::DenyReason;
use crate::hedge::Hedger;
use crate::random::Random;
use crate::throttle::Throttle;
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
    /// The hedging clock, if the policy hedges.
    pub hedger: Option<Hedger>,
}

impl Guards for SharedState {
    fn budget(&mut self) -> Option<&mut Budget> {
        self.budget.as_mut()
    }

    fn breaker(&mut self) -> Option<&mut Breaker> {
        self.breaker.as_mut()
    }

    fn throttle(&mut self) -> Option<&mut Throttle> {
        self.throttle.as_mut()
    }

    fn hedger(&mut self) -> Option<&mut Hedger> {
        self.hedger.as_mut()
    }
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
            hedger: policy.hedging.as_ref().map(Hedger::new),
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
#[must_use = "the decision says what the caller must do next"]
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

/// One call's retry state: its [`CallState`], run against the client's
/// [`Shared`] state and a random source.
pub struct RetryState<'p, R: Random> {
    policy: &'p Policy,
    shared: Shared,
    draws: Draws<R>,
    call: CallState,
}

impl<'p, R: Random> RetryState<'p, R> {
    /// A call starting at `now` on an idempotent operation; its deadline is
    /// `now + policy.deadline`.
    pub fn new(policy: &'p Policy, shared: Shared, now: Nanos, rng: R) -> Self {
        let call = CallState::new(CallState::deadline_from(policy, now), now, true, false);
        Self { policy, shared, draws: Draws::new(rng), call }
    }

    /// Declares the operation: idempotent or not, and whether an
    /// idempotency key is sent with every attempt.
    pub fn operation(mut self, idempotent: bool, key_sent: bool) -> Self {
        self.call.idempotent = idempotent;
        self.call.key_sent = key_sent;
        self
    }

    /// The call's absolute deadline ([`NEVER`] = none).
    pub fn deadline_at(&self) -> Nanos {
        self.call.deadline_at
    }

    /// Attempts sent so far.
    pub fn attempts(&self) -> u32 {
        self.call.attempts
    }

    /// The call's own state.
    pub fn call(&self) -> &CallState {
        &self.call
    }

    /// The last random draw consumed (by the throttle or the jitter), if any.
    pub fn take_draw(&mut self) -> Option<f64> {
        self.draws.take()
    }

    /// The shared handle.
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Before each attempt (the first, and each retry after its wait):
    /// whether and when it may go. `Err` ends the call: the breaker is open
    /// (first attempt) or the throttle refused it.
    pub fn before_attempt(&mut self, now: Nanos) -> Result<Admit, DenyReason> {
        let shared = self.shared.clone();
        let mut s = shared.lock();
        let s = &mut *s;
        let first = self.call.attempts == 0;
        match gate_attempt(&mut self.call, self.policy, s, now, first, &mut self.draws)? {
            Some(wait) => Ok(Admit::Wait(wait)),
            None => Ok(Admit::Send { timeout: self.call.on_send(self.policy, s, now) }),
        }
    }

    /// After each attempt: its outcome at `now` (a timeout when the caller
    /// gave up at the attempt's timeout) and the server's Retry-After, if any.
    pub fn after_outcome(&mut self, outcome: Outcome, now: Nanos, retry_after: Option<Nanos>) -> Decision {
        let shared = self.shared.clone();
        let mut s = shared.lock();
        self.call.after_outcome(self.policy, &mut *s, outcome, now, retry_after, self.draws.draw())
    }
}

/// A call's random source, remembering the last number it drew.
pub(crate) struct Draws<R> {
    rng: R,
    last: Option<f64>,
}

impl<R: Random> Draws<R> {
    pub(crate) fn new(rng: R) -> Self {
        Self { rng, last: None }
    }

    /// The `draw` a step of [`CallState`] takes: each call draws one
    /// number and remembers it.
    pub(crate) fn draw(&mut self) -> impl FnMut() -> f64 + '_ {
        move || {
            let u = self.rng.unit();
            self.last = Some(u);
            u
        }
    }

    /// The last number drawn, if any (once).
    pub(crate) fn take(&mut self) -> Option<f64> {
        self.last.take()
    }
}

/// Before an attempt, under the lock: a `first` attempt that does not hold
/// a throttle token yet is refused while the breaker is open; then the
/// throttle's gate. `Ok(None)`: send it now; `Ok(Some(wait))`: the
/// throttle holds a token for it, send it after the wait.
pub(crate) fn gate_attempt<R: Random>(
    call: &mut CallState,
    policy: &Policy,
    s: &mut SharedState,
    now: Nanos,
    first: bool,
    draws: &mut Draws<R>,
) -> Result<Option<Nanos>, DenyReason> {
    if first && !call.admitted && !first_allowed(s, now) {
        return Err(DenyReason::BreakerOpen);
    }
    match call.gate(policy, s, now, draws.draw()) {
        Gate::Send => Ok(None),
        Gate::Wait(wait) => Ok(Some(wait)),
        Gate::Refuse { .. } => Err(DenyReason::Throttled),
    }
}
