//! The policy at run time in production: [`Shared`] holds the policy and
//! what many calls of one client share (the budget, the circuit breaker,
//! the client-side throttle) behind one lock; [`RetryState`] is one call:
//! its [`CallState`], the shared handle and a random source. The steps and
//! their order are [`crate::call`]'s, the same the simulator takes.

use crate::breaker::{Breaker, BreakerState};
use crate::budget::Budget;
use crate::call::{CallState, Guards, first_allowed};
use crate::decision::DenyReason;
use crate::hedge::Hedger;
use crate::machine::{Admission, End, Machine, Then};
use crate::random::Random;
use crate::throttle::Throttle;
use crate::time::{Nanos, duration, nanos};
use crate::{Outcome, Policy};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a client's calls share.
#[doc(hidden)]
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

/// A client's policy and the state its calls share: clone it into every
/// call. One per client instance; a `scope = "shared"` budget or throttle
/// is shared by giving every instance of the class clones of one handle.
///
/// Cloning is cheap (two reference counts) and every clone sees the same
/// budget, breaker, throttle and hedging clock. Times are [`Instant`]s;
/// the state measures them from the handle's origin ([`Shared::origin`]),
/// so an instant before it counts as the origin itself.
#[derive(Debug, Clone)]
pub struct Shared {
    policy: Arc<Policy>,
    inner: Arc<Mutex<SharedState>>,
    origin: Instant,
}

impl Shared {
    /// Fresh shared state for `policy`; its origin is now.
    pub fn new(policy: impl Into<Arc<Policy>>) -> Self {
        Self::with_origin(policy, Instant::now())
    }

    /// Fresh shared state for `policy` with the given origin (tests that
    /// replay times exactly build instants as `origin + offset`).
    pub fn with_origin(policy: impl Into<Arc<Policy>>, origin: Instant) -> Self {
        let policy = policy.into();
        let state = SharedState {
            budget: policy.budget.map(|b| Budget::new(b.kind)),
            breaker: policy.breaker.map(Breaker::new),
            throttle: policy.throttle.as_ref().map(Throttle::new),
            hedger: policy.hedging.as_ref().map(Hedger::new),
        };
        Self { policy, inner: Arc::new(Mutex::new(state)), origin }
    }

    /// The policy.
    pub fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The instant times are measured from.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// A new call starting at `now` (on an idempotent operation; see
    /// [`RetryState::operation`]).
    pub fn call<R: Random>(&self, now: Instant, rng: R) -> RetryState<R> {
        RetryState::new(self.clone(), now, rng)
    }

    /// The budget's tokens or quota left (token bucket and quota budgets).
    pub fn budget_level(&self) -> Option<f64> {
        self.lock().budget.as_ref().and_then(Budget::level)
    }

    /// Whether the breaker refuses new calls at `now` (`None`: the policy
    /// has no breaker).
    pub fn breaker_open(&self, now: Instant) -> Option<bool> {
        self.breaker_state(now).map(|s| matches!(s, BreakerState::Open { .. }))
    }

    /// The breaker's state at `now`, on the state's nanosecond clock.
    pub(crate) fn breaker_state(&self, now: Instant) -> Option<BreakerState> {
        let t = self.at(now);
        self.lock().breaker.as_mut().map(|b| b.state(t))
    }

    /// Locks the state (a poisoned lock is taken over: the state is plain data).
    pub(crate) fn lock(&self) -> MutexGuard<'_, SharedState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `now` on the state's clock.
    pub(crate) fn at(&self, now: Instant) -> Nanos {
        nanos(now.saturating_duration_since(self.origin))
    }

    /// The instant `t` on the state's clock.
    pub(crate) fn instant(&self, t: Nanos) -> Instant {
        self.origin + Duration::from_nanos(t)
    }
}

/// What to do before an attempt.
#[must_use = "the decision says what the caller must do next"]
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Send the attempt now and give it up after `timeout`.
    Send {
        /// The per-try timeout clipped to the deadline left; `None` = wait as
        /// long as it takes.
        timeout: Option<Duration>,
    },
    /// The throttle holds a token for it: wait this long, then call
    /// [`RetryState::before_attempt`] again.
    Wait(Duration),
    /// Send a status query now instead of the operation (`on_unknown =
    /// "query"` after an outcome that may have executed): ask the target
    /// whether this call's operation committed, by its key, and give the
    /// query up after `timeout`. Report [`Outcome::Ok`] when it did (the
    /// call then ends with the committed result), `Outcome::Status(404)`
    /// when the target has no record of it (the operation goes again), or
    /// the query's failure.
    Query {
        /// The per-try timeout clipped to the deadline left; `None` = wait as
        /// long as it takes.
        timeout: Option<Duration>,
    },
}

/// What the caller does after an attempt's outcome.
#[must_use = "the decision says what the caller must do next"]
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The call succeeded.
    Done,
    /// Retry after waiting this long (then [`RetryState::before_attempt`]).
    Retry {
        /// The wait: backoff with jitter, or the server's Retry-After.
        wait: Duration,
    },
    /// Give up with the last outcome, for this reason.
    GiveUp(DenyReason),
}

/// One call's retry state: its own attempts and deadline, run against the
/// client's [`Shared`] state and a random source. It owns what it needs
/// (`'static` when `R` is), so it can live in a spawned future.
pub struct RetryState<R: Random> {
    shared: Shared,
    draws: Draws<R>,
    machine: Machine<()>,
}

impl<R: Random> RetryState<R> {
    /// A call starting at `now` on an idempotent operation; its deadline is
    /// `now` plus the policy's deadline. A policy with `[hedging]` runs as
    /// single attempts here (use [`crate::HedgedState`] to hedge).
    pub fn new(shared: Shared, now: Instant, rng: R) -> Self {
        let t = shared.at(now);
        let call = CallState::new(CallState::deadline_from(&shared.policy, t), t, true, false);
        Self { shared, draws: Draws::new(rng), machine: Machine::new(call, false) }
    }

    /// Declares the operation: idempotent or not, and whether an
    /// idempotency key is sent with every attempt.
    pub fn operation(mut self, idempotent: bool, key_sent: bool) -> Self {
        self.machine.st.idempotent = idempotent;
        self.machine.st.key_sent = key_sent;
        self
    }

    /// The call's deadline, if it has one.
    pub fn deadline(&self) -> Option<Instant> {
        duration(self.machine.st.deadline_at).map(|d| self.shared.origin + d)
    }

    /// Attempts sent so far.
    pub fn attempts(&self) -> u32 {
        self.machine.st.attempts
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
    pub fn before_attempt(&mut self, now: Instant) -> Result<Admit, DenyReason> {
        let t = self.shared.at(now);
        let shared = self.shared.clone();
        let mut s = shared.lock();
        let s = &mut *s;
        let st = &self.machine.st;
        if st.attempts == 0 && !st.admitted && !first_allowed(s, t) {
            return Err(DenyReason::BreakerOpen);
        }
        let mut draw = self.draws.draw();
        match self.machine.next_attempt(&shared.policy, s, t, |_, _| draw()) {
            Admission::Hold { wait } => Ok(Admit::Wait(Duration::from_nanos(wait))),
            Admission::Send { timeout, .. } if self.machine.st.querying => Ok(Admit::Query { timeout: duration(timeout) }),
            Admission::Send { timeout, .. } => Ok(Admit::Send { timeout: duration(timeout) }),
            Admission::Refused { .. } => Err(DenyReason::Throttled),
        }
    }

    /// After each attempt: its outcome at `now` (a timeout when the caller
    /// gave up at the attempt's timeout) and the server's Retry-After, if any.
    pub fn after_outcome(&mut self, outcome: Outcome, now: Instant, retry_after: Option<Duration>) -> Decision {
        let t = self.shared.at(now);
        let shared = self.shared.clone();
        let mut s = shared.lock();
        let mut draw = self.draws.draw();
        let ra = retry_after.map(nanos);
        match self.machine.on_outcome(&shared.policy, &mut *s, t, outcome, ra, |_, _| draw()).then {
            Then::Wait { wait } => Decision::Retry { wait: Duration::from_nanos(wait) },
            Then::Finish { end: End::GaveUp(reason), .. } => Decision::GiveUp(reason),
            Then::Finish { .. } => Decision::Done,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitMix;

    #[test]
    fn a_call_owns_its_policy_and_moves_to_another_thread() {
        let policy = Policy::builder()
            .max_attempts(2)
            .per_try_timeout(Duration::from_millis(100))
            .retry_on(["503"])
            .build()
            .unwrap();
        let shared = Shared::new(policy);
        let start = Instant::now();
        let mut call = shared.call(start, SplitMix::new(1));
        // `thread::spawn` needs `Send + 'static`: the call borrows nothing.
        let decision = std::thread::spawn(move || {
            assert_eq!(call.before_attempt(start), Ok(Admit::Send { timeout: Some(Duration::from_millis(100)) }));
            call.after_outcome(Outcome::Status(503), start + Duration::from_millis(5), None)
        })
        .join()
        .unwrap();
        assert_eq!(decision, Decision::Retry { wait: Duration::ZERO });
        assert_eq!(shared.breaker_open(start), None, "no breaker in this policy");
    }
}
