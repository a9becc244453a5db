//! A hedged call (a policy with `[hedging]`) in production, with the
//! simulator's rules: the first copy goes out like any first attempt;
//! each further copy goes after the hedging delay, or at once after a
//! non-fatal answer or a copy's per-try timeout; the first final answer
//! ends the call and cancels the copies still out (or leaves them to
//! finish, `cancel = false`). A copy whose per-try timeout passed stays in
//! the race; such copies are given up only when no further copy may go,
//! and the call fails when no copy is left. The steps are
//! [`CallState`]'s hedging steps, the ones the simulator takes.

use crate::call::CallState;
use crate::decision::{DenyReason, attempt_timeout};
use crate::random::Random;
use crate::state::{Admit, Decision, Draws, Shared, gate_attempt};
use crate::time::{Nanos, duration};
use crate::{Outcome, Policy};
use std::time::{Duration, Instant};

mod copies;

#[doc(hidden)]
pub use copies::{LiveCopies, LiveCopy};

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
    call: CallState,
    /// The copies out, and how many were sent.
    live: LiveCopies<()>,
    due_at: Option<Nanos>,
}

impl<R: Random> HedgedState<R> {
    /// A call starting at `now` on an idempotent operation. `None` when
    /// the policy does not hedge.
    pub fn new(shared: Shared, now: Instant, rng: R) -> Option<Self> {
        shared.policy().hedging.as_ref()?;
        let t = shared.at(now);
        let call = CallState::new(CallState::deadline_from(shared.policy(), t), t, true, false);
        Some(Self { shared, draws: Draws::new(rng), call, live: LiveCopies::new(), due_at: None })
    }

    /// Declares the operation: idempotent or not, and whether an
    /// idempotency key is sent.
    pub fn operation(mut self, idempotent: bool, key_sent: bool) -> Self {
        self.call.idempotent = idempotent;
        self.call.key_sent = key_sent;
        self
    }

    /// When the next copy is due by the hedging delay, if one is: call
    /// [`HedgedState::on_hedge_due`] then.
    pub fn hedge_due_at(&self) -> Option<Instant> {
        self.due_at.map(|t| self.shared.instant(t))
    }

    /// The copies still out.
    pub fn live(&self) -> Vec<u32> {
        self.live.numbers().collect()
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
        let now = self.shared.at(now);
        let shared = self.shared.clone();
        let (policy, spec) = policy_and_spec(&shared);
        let mut s = shared.lock();
        let s = &mut *s;
        if let Some(wait) = gate_attempt(&mut self.call, policy, s, now, true, &mut self.draws)? {
            return Ok(Admit::Wait(Duration::from_nanos(wait)));
        }
        let timeout = self.call.on_send(policy, s, now);
        self.live.push(now, ());
        self.due_at = self.call.hedge_started(spec, s, now).map(|d| now.saturating_add(d));
        Ok(Admit::Send { timeout: duration(timeout) })
    }

    /// The hedging delay is over ([`HedgedState::hedge_due_at`]): sends the
    /// next copy if it may go (and arms the delay for the one after).
    pub fn on_hedge_due(&mut self, now: Instant) -> Result<Sent, DenyReason> {
        self.due_at = None;
        let now = self.shared.at(now);
        self.try_hedge(now, None)
    }

    /// Copy `copy` answered `outcome` at `now`.
    pub fn on_copy_outcome(&mut self, copy: u32, outcome: Outcome, now: Instant) -> Step {
        let now = self.shared.at(now);
        let Some(c) = self.live.take(|c| c.copy == copy) else {
            return Step::default(); // not out (any more): nothing to learn
        };
        let shared = self.shared.clone();
        let (policy, spec) = policy_and_spec(&shared);
        let mut s = shared.lock();
        CallState::learn_copy(policy, spec, &mut *s, now, c.copy, c.sent, outcome, true);
        if !spec.is_non_fatal(outcome) {
            let rest = self.live.take_all();
            for r in &rest {
                CallState::learn_copy(policy, spec, &mut *s, now, r.copy, r.sent, Outcome::Timeout, false);
            }
            self.due_at = None;
            let decision =
                if outcome == Outcome::Ok { Decision::Done } else { Decision::GiveUp(DenyReason::NotRetryable) };
            return Step { end: Some(decision), cancel: rest.iter().map(|r| r.copy).collect(), ..Step::default() };
        }
        drop(s);
        self.hedge_or_settle(now, outcome)
    }

    /// Copy `copy`'s per-try timeout passed at `now`.
    pub fn on_copy_expired(&mut self, copy: u32, now: Instant) -> Step {
        let now = self.shared.at(now);
        if !self.live.expire(|c| c.copy == copy) {
            return Step::default();
        }
        self.hedge_or_settle(now, Outcome::Timeout)
    }

    fn try_hedge(&mut self, now: Nanos, trigger: Option<Outcome>) -> Result<Sent, DenyReason> {
        let shared = self.shared.clone();
        let (policy, spec) = policy_and_spec(&shared);
        let mut s = shared.lock();
        let s = &mut *s;
        self.call.hedge_gate(policy, spec, s, now, self.live.sent(), trigger, self.draws.draw())?;
        let timeout = self.call.on_send(policy, s, now);
        debug_assert_eq!(timeout, attempt_timeout(policy, now, self.call.deadline_at));
        let copy = self.live.push(now, ());
        self.due_at = CallState::next_hedge(spec, s, now, self.live.sent()).map(|d| now.saturating_add(d));
        Ok(Sent { copy, timeout: duration(timeout) })
    }

    fn hedge_or_settle(&mut self, now: Nanos, trigger: Outcome) -> Step {
        let reason = match self.try_hedge(now, Some(trigger)) {
            Ok(sent) => return Step { hedge: Some(Ok(sent)), ..Step::default() },
            Err(reason) => reason,
        };
        let gone = self.live.take_expired();
        let shared = self.shared.clone();
        let (policy, spec) = policy_and_spec(&shared);
        let mut s = shared.lock();
        for c in &gone {
            CallState::learn_copy(policy, spec, &mut *s, now, c.copy, c.sent, Outcome::Timeout, true);
        }
        let given_up = gone.iter().map(|c| c.copy).collect();
        let end = self.live.is_empty().then_some(Decision::GiveUp(reason));
        if end.is_some() {
            self.due_at = None;
        }
        Step { end, hedge: Some(Err(reason)), given_up, cancel: Vec::new() }
    }
}

/// The policy and its `[hedging]` (checked by [`HedgedState::new`]).
fn policy_and_spec(shared: &Shared) -> (&Policy, &crate::hedge::HedgeSpec) {
    let policy = shared.policy();
    (policy, policy.hedging.as_ref().expect("HedgedState::new checked [hedging]"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hedge::{HedgeDelay, HedgeSpec};
    use crate::{NEVER, RetryOn, SplitMix};

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
