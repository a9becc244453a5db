//! A hedged call (a policy with `[hedging]`) in production, with the
//! simulator's rules: the first copy goes out like any first attempt;
//! each further copy goes after the hedging delay, or at once after a
//! non-fatal answer or a copy's per-try timeout; the first final answer
//! ends the call and cancels the copies still out (or leaves them to
//! finish, `cancel = false`). A copy whose per-try timeout passed stays in
//! the race; such copies are given up only when no further copy may go,
//! and the call fails when no copy is left. The steps are the
//! call machine's hedging inputs, the ones the simulator runs.

use crate::Outcome;
use crate::call::{CallState, first_allowed};
use crate::decision::DenyReason;
use crate::machine::{Action, Admission, End, Fate, Machine, Slot};
use crate::random::Random;
use crate::state::{Admit, Decision, Draws, Shared};
use crate::time::{Nanos, duration};
use std::time::{Duration, Instant};

mod copies;

#[cfg(feature = "simulator")]
#[doc(hidden)]
pub use copies::{LiveCopies, LiveCopy};
#[cfg(not(feature = "simulator"))]
pub(crate) use copies::{LiveCopies, LiveCopy};

/// A copy that was just sent.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Its number (0 = the first copy).
    pub copy: u32,
    /// Give it up after this (`None` = no timeout); it stays in the race.
    pub timeout: Option<Duration>,
}

/// What happened after a copy's answer or per-try timeout.
#[must_use = "the step says which copies to send and cancel, and whether the call is over"]
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Step {
    /// The call is over: [`Decision::Done`], or [`Decision::GiveUp`] with
    /// `not_retryable` (a fatal answer) or why no copy could follow.
    pub end: Option<Decision>,
    /// The copy sent at once (a non-fatal answer or a timeout triggers
    /// one), or why none could go; `None` when the answer ended the call.
    pub hedge: Option<Result<Sent, DenyReason>>,
    /// Copies whose per-try timeout had passed, given up because no copy
    /// could follow (they count as timeouts).
    pub given_up: Vec<u32>,
    /// Copies still out when the call ended: cancel them (or, with
    /// `cancel = false`, leave them to finish and ignore them).
    pub cancel: Vec<u32>,
}

/// One hedged call's state. It owns what it needs (`'static` when `R`
/// is), so it can live in a spawned future.
pub struct HedgedState<R: Random> {
    shared: Shared,
    draws: Draws<R>,
    machine: Machine<()>,
    due_at: Option<Nanos>,
    out: Vec<Action<()>>,
}

impl<R: Random> HedgedState<R> {
    /// A call starting at `now` on an idempotent operation. `None` when
    /// the policy does not hedge.
    pub fn new(shared: Shared, now: Instant, rng: R) -> Option<Self> {
        shared.policy().hedging.as_ref()?;
        let t = shared.at(now);
        let call = CallState::new(CallState::deadline_from(shared.policy(), t), t, true, false);
        Some(Self { shared, draws: Draws::new(rng), machine: Machine::new(call, true), due_at: None, out: Vec::new() })
    }

    /// Declares the operation: idempotent or not, and whether an
    /// idempotency key is sent.
    pub fn operation(mut self, idempotent: bool, key_sent: bool) -> Self {
        self.machine.st.idempotent = idempotent;
        self.machine.st.key_sent = key_sent;
        self
    }

    /// When the next copy is due by the hedging delay, if one is: call
    /// [`HedgedState::on_hedge_due`] then.
    pub fn hedge_due_at(&self) -> Option<Instant> {
        self.due_at.map(|t| self.shared.instant(t))
    }

    /// The copies still out.
    pub fn live(&self) -> Vec<u32> {
        self.machine.live().collect()
    }

    /// The last random draw consumed (by the throttle), if any.
    pub fn take_draw(&mut self) -> Option<f64> {
        self.draws.take()
    }

    /// The shared handle.
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Before the first copy, as [`crate::RetryState::before_attempt`]:
    /// refused while the breaker is open or by the throttle; a copy sent
    /// arms the hedging delay.
    pub fn before_first(&mut self, now: Instant) -> Result<Admit, DenyReason> {
        let t = self.shared.at(now);
        let shared = self.shared.clone();
        let mut s = shared.lock();
        let s = &mut *s;
        if !self.machine.st.admitted && !first_allowed(s, t) {
            return Err(DenyReason::BreakerOpen);
        }
        let mut draw = self.draws.draw();
        match self.machine.next_attempt(shared.policy(), s, t, |_, _| draw()) {
            Admission::Hold { wait } => Ok(Admit::Wait(Duration::from_nanos(wait))),
            Admission::Send { timeout, hedge_due, .. } => {
                self.due_at = hedge_due.map(|d| t.saturating_add(d));
                Ok(Admit::Send { timeout: duration(timeout) })
            }
            Admission::Refused { .. } => Err(DenyReason::Throttled),
        }
    }

    /// The hedging delay is over ([`HedgedState::hedge_due_at`]): sends the
    /// next copy if it may go (and arms the delay for the one after).
    pub fn on_hedge_due(&mut self, now: Instant) -> Result<Sent, DenyReason> {
        self.due_at = None;
        let t = self.shared.at(now);
        let shared = self.shared.clone();
        let mut s = shared.lock();
        self.out.clear();
        let mut draw = self.draws.draw();
        let copy = self.machine.copies_sent();
        self.machine.on_hedge_due(shared.policy(), &mut *s, t, copy, |_, _| draw(), &mut self.out);
        drop(draw);
        self.step(t).hedge.expect("a due copy is sent or refused")
    }

    /// Copy `copy` answered `outcome` at `now`.
    pub fn on_copy_outcome(&mut self, copy: u32, outcome: Outcome, now: Instant) -> Step {
        let t = self.shared.at(now);
        let shared = self.shared.clone();
        let mut s = shared.lock();
        self.out.clear();
        let mut draw = self.draws.draw();
        let which = |c: &LiveCopy<Slot<()>>| c.copy == copy;
        self.machine.on_copy_answer(shared.policy(), &mut *s, t, which, outcome, |_, _| draw(), &mut self.out);
        drop(draw);
        self.step(t)
    }

    /// Copy `copy`'s per-try timeout passed at `now`.
    pub fn on_copy_expired(&mut self, copy: u32, now: Instant) -> Step {
        let t = self.shared.at(now);
        let shared = self.shared.clone();
        let mut s = shared.lock();
        self.out.clear();
        let mut draw = self.draws.draw();
        let which = |c: &LiveCopy<Slot<()>>| c.copy == copy;
        self.machine.on_copy_timeout(shared.policy(), &mut *s, t, which, |_, _| draw(), &mut self.out);
        drop(draw);
        self.step(t)
    }

    /// The machine's actions at `now` as a [`Step`]; the hedging delay follows them.
    fn step(&mut self, now: Nanos) -> Step {
        let mut step = Step::default();
        for a in &self.out {
            match *a {
                Action::Send { copy, timeout, .. } => {
                    step.hedge = Some(Ok(Sent { copy, timeout: duration(timeout) }));
                    self.due_at = None;
                }
                Action::HedgeRefused(reason) => step.hedge = Some(Err(reason)),
                Action::HedgeDue { delay, .. } => self.due_at = Some(now.saturating_add(delay)),
                Action::Ended(e) => match e.fate {
                    Fate::Cancelled | Fate::Left => step.cancel.push(e.copy),
                    Fate::GivenUp { .. } => step.given_up.push(e.copy),
                    _ => {}
                },
                Action::Finish { end, .. } => {
                    step.end = Some(match end {
                        End::Done => Decision::Done,
                        End::Fatal => Decision::GiveUp(DenyReason::NotRetryable),
                        End::GaveUp(reason) => Decision::GiveUp(reason),
                    });
                    self.due_at = None;
                }
            }
        }
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hedge::{HedgeDelay, HedgeSpec};
    use crate::{NEVER, Policy, RetryOn, SplitMix};

    const MS: Nanos = 1_000_000;

    fn policy(per_try_timeout: Nanos, cancel: bool) -> Policy {
        let hedging = HedgeSpec {
            max_attempts: 3,
            delay: HedgeDelay::Fixed(100 * MS),
            max_extra_load: None,
            non_fatal: RetryOn::of(&["503"]),
            cancel,
        };
        Policy { per_try_timeout, hedging: Some(hedging), ..Policy::default() }
    }

    /// A clock in milliseconds from a fixed origin.
    struct Clock(Instant);

    impl Clock {
        fn at(&self, ms: u64) -> Instant {
            self.0 + Duration::from_millis(ms)
        }
    }

    fn start(p: &Policy) -> (HedgedState<SplitMix>, Clock) {
        let clock = Clock(Instant::now());
        let shared = Shared::with_origin(p.clone(), clock.0);
        let mut h = HedgedState::new(shared, clock.at(0), SplitMix::new(1)).expect("hedged");
        assert_eq!(h.before_first(clock.at(0)), Ok(Admit::Send { timeout: duration(p.per_try_timeout) }));
        (h, clock)
    }

    fn sent(copy: u32, timeout: Option<Duration>) -> Result<Sent, DenyReason> {
        Ok(Sent { copy, timeout })
    }

    #[test]
    fn copies_go_after_each_delay_and_the_first_answer_cancels_the_rest() {
        let p = policy(NEVER, true);
        let (mut h, c) = start(&p);
        assert_eq!(h.hedge_due_at(), Some(c.at(100)));
        assert_eq!(h.on_hedge_due(c.at(100)), sent(1, None));
        assert_eq!(h.on_hedge_due(c.at(200)), sent(2, None));
        assert_eq!(h.hedge_due_at(), None, "three copies out: no further delay");
        let s = h.on_copy_outcome(1, Outcome::Ok, c.at(250));
        assert_eq!(s, Step { end: Some(Decision::Done), cancel: vec![0, 2], ..Step::default() });
        assert!(h.live().is_empty());
    }

    #[test]
    fn a_non_fatal_answer_sends_the_next_copy_at_once_and_the_last_one_fails_the_call() {
        let p = policy(NEVER, true);
        let (mut h, c) = start(&p);
        let s = h.on_copy_outcome(0, Outcome::Status(503), c.at(10));
        assert_eq!(s.hedge, Some(sent(1, None)));
        assert_eq!(h.hedge_due_at(), Some(c.at(110)), "the delay starts again from the copy just sent");
        let _ = h.on_copy_outcome(1, Outcome::Status(503), c.at(20));
        let s = h.on_copy_outcome(2, Outcome::Status(503), c.at(30));
        assert_eq!(s.end, Some(Decision::GiveUp(DenyReason::Attempts)));
        let (mut h, c) = start(&p);
        let s = h.on_copy_outcome(0, Outcome::Status(500), c.at(10));
        assert_eq!(s.end, Some(Decision::GiveUp(DenyReason::NotRetryable)), "500 is fatal");
    }

    #[test]
    fn an_expired_copy_stays_in_the_race_until_no_copy_may_follow() {
        let p = policy(50 * MS, true);
        let fifty = Some(Duration::from_millis(50));
        let (mut h, c) = start(&p);
        assert_eq!(h.on_copy_expired(0, c.at(50)).hedge, Some(sent(1, fifty)));
        assert_eq!(h.on_copy_expired(1, c.at(100)).hedge, Some(sent(2, fifty)));
        // The late first copy still wins.
        let s = h.on_copy_outcome(0, Outcome::Ok, c.at(120));
        assert_eq!(s, Step { end: Some(Decision::Done), cancel: vec![1, 2], ..Step::default() });
        let (mut h, c) = start(&p);
        let _ = h.on_copy_expired(0, c.at(50));
        let _ = h.on_copy_expired(1, c.at(100));
        let s = h.on_copy_expired(2, c.at(150));
        assert_eq!(s.given_up, vec![0, 1, 2]);
        assert_eq!(s.end, Some(Decision::GiveUp(DenyReason::Attempts)));
    }
}
