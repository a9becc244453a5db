//! [`Call`]: the call machine with the public units — feed it what
//! happened ([`CallInput`]) at the [`Instant`] it happened, carry out what it
//! says ([`CallAction`]).

use super::{Action, Admission, End, Fate, Machine, Slot, Then};
use crate::Outcome;
use crate::call::{CallState, first_allowed};
use crate::decision::DenyReason;
use crate::hedged::LiveCopy;
use crate::random::Random;
use crate::state::{Draws, Shared};
use crate::time::{duration, nanos};
use std::time::{Duration, Instant};

/// What happened to a call.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallInput {
    /// The call starts.
    Start,
    /// The time the last [`CallAction::WakeAt`] named has come.
    Timer,
    /// Copy `copy` (for a call without hedging, attempt `copy + 1`) answered.
    Answer {
        /// The copy.
        copy: u32,
        /// How it ended.
        outcome: Outcome,
        /// The server's Retry-After, if any.
        retry_after: Option<Duration>,
    },
    /// Copy `copy`'s per-try timeout (the `timeout` of its [`CallAction::Send`]) passed.
    Timeout {
        /// The copy.
        copy: u32,
    },
}

/// What the driver does, in order.
#[must_use = "the steps say what the caller must do next"]
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallAction {
    /// Send copy `copy` now, and report [`CallInput::Timeout`] after `timeout`
    /// (`None`: no timeout) unless it answered first.
    Send {
        /// The copy: 0, 1, 2, … in the order sent.
        copy: u32,
        /// Its per-try timeout clipped to the deadline left.
        timeout: Option<Duration>,
    },
    /// Send a status query as copy `copy` now instead of the operation
    /// (`on_unknown = "query"`, after an outcome that may have executed):
    /// ask the target whether the call's operation committed, by its key,
    /// and report [`CallInput::Timeout`] after `timeout` unless it answered
    /// first. Report its answer as [`CallInput::Answer`]: [`Outcome::Ok`]
    /// when it committed (the call finishes with that result),
    /// `Outcome::Status(404)` when the target has no record (the operation
    /// goes again), or the query's failure.
    Query {
        /// The copy: 0, 1, 2, … in the order sent (queries count as attempts).
        copy: u32,
        /// Its per-try timeout clipped to the deadline left.
        timeout: Option<Duration>,
    },
    /// Report [`CallInput::Timer`] at this instant (a backoff, a throttle
    /// token, or the next hedge's delay); it replaces any earlier one.
    WakeAt(Instant),
    /// Stop waiting for copy `copy`: another copy won, or it was given up
    /// after its per-try timeout. `cancel`: cancel it at the server (reset
    /// the stream, close the connection); otherwise leave it to finish.
    Abandon {
        /// The copy.
        copy: u32,
        /// Cancel it at the server.
        cancel: bool,
    },
    /// The call is over: `Ok` with the last answer, or why the policy gave
    /// up (with the last answer, if any).
    Finish(Result<(), DenyReason>),
}

/// One call under a policy as a sans-IO state machine: the same machine
/// the simulator runs, in [`Instant`]s and [`Duration`]s. It owns what it
/// holds, so it lives in `'static` futures.
///
/// ```
/// use retrysim_policy::{Call, CallInput, Outcome, Policy, Shared, SplitMix, CallAction};
/// use std::time::{Duration, Instant};
///
/// let policy = Policy::builder()
///     .max_attempts(3)
///     .per_try_timeout(Duration::from_millis(100))
///     .retry_on(["503"])
///     .build()?;
/// let client = Shared::new(policy);
/// let t0 = Instant::now();
/// let mut call = Call::new(client, SplitMix::new(1));
/// assert_eq!(call.handle(CallInput::Start, t0), [CallAction::Send { copy: 0, timeout: Some(Duration::from_millis(100)) }]);
/// let answer = CallInput::Answer { copy: 0, outcome: Outcome::Status(503), retry_after: None };
/// // No backoff in this policy: the retry goes at once.
/// assert_eq!(call.handle(answer, t0), [CallAction::Send { copy: 1, timeout: Some(Duration::from_millis(100)) }]);
/// let answer = CallInput::Answer { copy: 1, outcome: Outcome::Ok, retry_after: None };
/// assert_eq!(call.handle(answer, t0), [CallAction::Finish(Ok(()))]);
/// # Ok::<(), retrysim_policy::PolicyError>(())
/// ```
pub struct Call<R: Random> {
    shared: Shared,
    draws: Draws<R>,
    machine: Machine<()>,
    /// What [`CallInput::Timer`] means: the next attempt, or copy k's hedging delay.
    timer: Option<Timer>,
    /// The attempt out, for a call without hedging.
    current: Option<u32>,
    over: bool,
    /// A deadline from upstream (a propagated deadline): the call's
    /// deadline is at most this.
    upstream: Option<Instant>,
    /// Attempts the client-side throttle held back or refused.
    throttled: u32,
    out: Vec<Action<()>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    NextAttempt,
    Hedge(u32),
}

impl<R: Random> Call<R> {
    /// A call of the client `shared` on an idempotent operation; a policy
    /// with `[hedging]` hedges. Its deadline runs from [`CallInput::Start`].
    pub fn new(shared: Shared, rng: R) -> Self {
        let hedged = shared.policy().hedging.is_some();
        let st = CallState::new(0, 0, true, false);
        let machine = Machine::new(st, hedged);
        Self { shared, draws: Draws::new(rng), machine, timer: None, current: None, over: false, upstream: None, throttled: 0, out: Vec::new() }
    }

    /// Declares the operation: idempotent or not, and whether an
    /// idempotency key is sent with every attempt.
    pub fn operation(mut self, idempotent: bool, key_sent: bool) -> Self {
        self.machine.st.idempotent = idempotent;
        self.machine.st.key_sent = key_sent;
        self
    }

    /// Ends the call by `at` at the latest, whatever the policy's own
    /// deadline: a deadline propagated from upstream (the caller of the
    /// request this call is made for gives up then). Each attempt's
    /// timeout is clipped to it; when it has already passed, the first
    /// attempt still goes with a timeout of zero (it fails at once).
    pub fn deadline_at(mut self, at: Instant) -> Self {
        self.upstream = Some(at);
        self
    }

    /// Makes the call's first attempt a status query
    /// ([`CallAction::Query`]): a reconciler repairing an effect whose
    /// outcome is unknown asks the target first and sends the operation
    /// only after a `not found`. Without hedging only.
    pub fn ask_first(mut self) -> Self {
        if !self.machine.hedged() {
            self.machine.st.querying = true;
        }
        self
    }

    /// Attempts (copies) sent so far.
    pub fn attempts(&self) -> u32 {
        self.machine.st.attempts
    }

    /// How many times the client-side throttle held an attempt (or a
    /// hedged copy) back or refused it, so far.
    pub fn throttled(&self) -> u32 {
        self.throttled
    }

    /// Whether the call is over (every further input is ignored).
    pub fn is_over(&self) -> bool {
        self.over
    }

    /// Takes `input`, which happened at `now`, and returns what to do.
    pub fn handle(&mut self, input: CallInput, now: Instant) -> Vec<CallAction> {
        let mut steps = Vec::new();
        if self.over {
            return steps;
        }
        let t = self.shared.at(now);
        let shared = self.shared.clone();
        let policy = shared.policy();
        let mut guard = shared.lock();
        let s = &mut *guard;
        self.out.clear();
        let mut draw = self.draws.draw();
        let m = &mut self.machine;
        // A plain step's answer: the next attempt's admission, or what follows an attempt.
        let mut plain: Option<Result<Admission, Then>> = None;
        match input {
            CallInput::Start => {
                if m.st.attempts > 0 {
                    return steps;
                }
                let mut deadline = CallState::deadline_from(policy, t);
                if let Some(at) = self.upstream {
                    deadline = deadline.min(self.shared.at(at));
                }
                let ask = m.st.querying;
                m.st = CallState::new(deadline, t, m.st.idempotent, m.st.key_sent);
                m.st.querying = ask;
                if !first_allowed(s, t) {
                    self.over = true;
                    steps.push(CallAction::Finish(Err(DenyReason::BreakerOpen)));
                    return steps;
                }
                plain = Some(Ok(m.next_attempt(policy, s, t, |_, _| draw())));
            }
            CallInput::Timer => match self.timer.take() {
                Some(Timer::NextAttempt) => plain = Some(Ok(m.next_attempt(policy, s, t, |_, _| draw()))),
                Some(Timer::Hedge(copy)) => m.on_hedge_due(policy, s, t, copy, |_, _| draw(), &mut self.out),
                None => {}
            },
            CallInput::Answer { copy, outcome, retry_after } => {
                if m.hedged() {
                    let which = |c: &LiveCopy<Slot<()>>| c.copy == copy;
                    m.on_copy_answer(policy, s, t, which, outcome, |_, _| draw(), &mut self.out);
                } else if self.current == Some(copy) {
                    self.current = None;
                    let ra = retry_after.map(nanos);
                    plain = Some(Err(m.on_outcome(policy, s, t, outcome, ra, |_, _| draw()).then));
                }
            }
            CallInput::Timeout { copy } => {
                if m.hedged() {
                    let which = |c: &LiveCopy<Slot<()>>| c.copy == copy;
                    m.on_copy_timeout(policy, s, t, which, |_, _| draw(), &mut self.out);
                } else if self.current == Some(copy) {
                    self.current = None;
                    steps.push(CallAction::Abandon { copy, cancel: policy.cancel_on_timeout });
                    plain = Some(Err(m.on_outcome(policy, s, t, Outcome::Timeout, None, |_, _| draw()).then));
                }
            }
        }
        drop(draw);
        drop(guard);
        match plain {
            Some(Ok(admission)) => self.admitted(admission, now, &mut steps),
            Some(Err(then)) => self.then(then, now, &mut steps),
            None => self.carry_out(now, &mut steps),
        }
        steps
    }

    /// The next attempt's admission as steps.
    fn admitted(&mut self, admission: Admission, now: Instant, steps: &mut Vec<CallAction>) {
        match admission {
            Admission::Send { copy, timeout, hedge_due, .. } => {
                if !self.machine.hedged() {
                    self.current = Some(copy);
                }
                let timeout = duration(timeout);
                steps.push(if self.machine.st.querying {
                    CallAction::Query { copy, timeout }
                } else {
                    CallAction::Send { copy, timeout }
                });
                if let Some(delay) = hedge_due {
                    self.timer = Some(Timer::Hedge(1));
                    steps.push(CallAction::WakeAt(now + Duration::from_nanos(delay)));
                }
            }
            Admission::Hold { wait } => {
                self.throttled += 1;
                self.timer = Some(Timer::NextAttempt);
                steps.push(CallAction::WakeAt(now + Duration::from_nanos(wait)));
            }
            Admission::Refused { .. } => {
                self.throttled += 1;
                self.over = true;
                steps.push(CallAction::Finish(Err(DenyReason::Throttled)));
            }
        }
    }

    /// What follows an attempt, as steps; a retry without a wait goes at once.
    fn then(&mut self, then: Then, now: Instant, steps: &mut Vec<CallAction>) {
        match then {
            Then::Wait { wait } => {
                self.timer = Some(Timer::NextAttempt);
                if wait == 0 {
                    steps.extend(self.handle(CallInput::Timer, now));
                } else {
                    steps.push(CallAction::WakeAt(now + Duration::from_nanos(wait)));
                }
            }
            Then::Finish { end, .. } => steps.push(self.finish(end)),
        }
    }

    /// The call is over.
    fn finish(&mut self, end: End) -> CallAction {
        self.over = true;
        self.timer = None;
        CallAction::Finish(match end {
            End::Done => Ok(()),
            End::Fatal => Err(DenyReason::NotRetryable),
            End::GaveUp(reason) => Err(reason),
        })
    }

    /// A hedged call's actions as steps.
    fn carry_out(&mut self, now: Instant, steps: &mut Vec<CallAction>) {
        let cancel_on_timeout = self.shared.policy().cancel_on_timeout;
        for i in 0..self.out.len() {
            match self.out[i] {
                Action::Send { copy, timeout, .. } => steps.push(CallAction::Send { copy, timeout: duration(timeout) }),
                Action::HedgeDue { copy, delay } => {
                    self.timer = Some(Timer::Hedge(copy));
                    steps.push(CallAction::WakeAt(now + Duration::from_nanos(delay)));
                }
                Action::Ended(e) => match e.fate {
                    Fate::Cancelled => steps.push(CallAction::Abandon { copy: e.copy, cancel: true }),
                    Fate::Left => steps.push(CallAction::Abandon { copy: e.copy, cancel: false }),
                    Fate::GivenUp { .. } => steps.push(CallAction::Abandon { copy: e.copy, cancel: cancel_on_timeout }),
                    _ => {}
                },
                Action::HedgeRefused(reason) => {
                    if reason == DenyReason::Throttled {
                        self.throttled += 1;
                    }
                }
                Action::Finish { end, .. } => {
                    let done = self.finish(end);
                    steps.push(done);
                }
            }
        }
        self.out.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BackoffKind, Policy, SplitMix};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_backoff_is_a_wake_up_and_a_timeout_abandons_the_attempt() {
        let policy = Policy::builder()
            .max_attempts(2)
            .per_try_timeout(ms(100))
            .retry_on(["timeout"])
            .backoff(BackoffKind::Constant, ms(40), ms(40))
            .cancel_on_timeout(true)
            .build()
            .unwrap();
        let t0 = Instant::now();
        let mut call = Call::new(Shared::with_origin(policy, t0), SplitMix::new(1));
        assert_eq!(call.handle(CallInput::Start, t0), [CallAction::Send { copy: 0, timeout: Some(ms(100)) }]);
        let late = CallInput::Answer { copy: 1, outcome: Outcome::Ok, retry_after: None };
        assert!(call.handle(late, t0).is_empty(), "an answer for an attempt not out is ignored");
        assert_eq!(
            call.handle(CallInput::Timeout { copy: 0 }, t0 + ms(100)),
            [CallAction::Abandon { copy: 0, cancel: true }, CallAction::WakeAt(t0 + ms(140))]
        );
        assert_eq!(call.handle(CallInput::Timer, t0 + ms(140)), [CallAction::Send { copy: 1, timeout: Some(ms(100)) }]);
        let steps = call.handle(CallInput::Timeout { copy: 1 }, t0 + ms(240));
        assert_eq!(
            steps,
            [CallAction::Abandon { copy: 1, cancel: true }, CallAction::Finish(Err(DenyReason::Attempts))]
        );
        assert!(call.is_over());
        assert!(call.handle(CallInput::Timer, t0 + ms(300)).is_empty());
    }

    #[test]
    fn hedged_copies_race_and_the_winner_cancels_the_rest() {
        let policy = Policy::builder().per_try_timeout(ms(500)).retry_on(["503"]).hedging(3, ms(50)).build().unwrap();
        let t0 = Instant::now();
        let mut call = Call::new(Shared::with_origin(policy, t0), SplitMix::new(1));
        let send = |copy| CallAction::Send { copy, timeout: Some(ms(500)) };
        assert_eq!(call.handle(CallInput::Start, t0), [send(0), CallAction::WakeAt(t0 + ms(50))]);
        assert_eq!(call.handle(CallInput::Timer, t0 + ms(50)), [send(1), CallAction::WakeAt(t0 + ms(100))]);
        let won = CallInput::Answer { copy: 1, outcome: Outcome::Ok, retry_after: None };
        assert_eq!(
            call.handle(won, t0 + ms(80)),
            [CallAction::Abandon { copy: 0, cancel: true }, CallAction::Finish(Ok(()))],
            "copy 1 wins: copy 0 is cancelled, no copy 2 goes"
        );
        assert!(call.handle(CallInput::Timer, t0 + ms(100)).is_empty(), "the call is over");
    }

    #[test]
    fn every_attempt_the_throttle_refuses_is_counted() {
        let text = "max_attempts = 1\nper_try_timeout = \"1s\"\nretry_on = [\"503\"]\n\
                    [throttle]\nkind = \"sre\"\nk = 2.0\nwindow = \"2m\"\n";
        let policy = Policy::from_toml(text, "throttle.toml").unwrap();
        let t0 = Instant::now();
        let client = Shared::with_origin(policy, t0);
        let (mut refused, mut sent) = (0, 0);
        for i in 0..200u64 {
            let now = t0 + ms(i);
            let mut call = Call::new(client.clone(), SplitMix::new(i));
            match call.handle(CallInput::Start, now).as_slice() {
                [CallAction::Send { copy: 0, .. }] => {
                    sent += 1;
                    assert_eq!(call.throttled(), 0);
                    let failed = CallInput::Answer { copy: 0, outcome: Outcome::Status(503), retry_after: None };
                    assert_eq!(call.handle(failed, now), [CallAction::Finish(Err(DenyReason::Attempts))]);
                }
                [CallAction::Finish(Err(DenyReason::Throttled))] => {
                    refused += 1;
                    assert_eq!(call.throttled(), 1, "a refusal is one throttled attempt");
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        // Nothing is ever accepted: the SRE throttle refuses with
        // probability (requests - 2 accepts) / (requests + 1), close to 1.
        assert!(refused > 150 && sent >= 1, "refused {refused}, sent {sent}");
    }

    #[test]
    fn an_unknown_outcome_is_queried_and_a_not_found_sends_the_operation_again() {
        let policy = Policy::builder()
            .max_attempts(4)
            .per_try_timeout(ms(100))
            .retry_on(["timeout", "503"])
            .on_unknown(crate::OnUnknown::Query)
            .build()
            .unwrap();
        let t0 = Instant::now();
        let client = Shared::with_origin(policy, t0);
        let mut call = Call::new(client.clone(), SplitMix::new(1)).operation(false, false);
        let send = |copy| CallAction::Send { copy, timeout: Some(ms(100)) };
        let query = |copy| CallAction::Query { copy, timeout: Some(ms(100)) };
        assert_eq!(call.handle(CallInput::Start, t0), [send(0)]);
        // A timeout on a POST without a key: ask, do not repeat.
        assert_eq!(
            call.handle(CallInput::Timeout { copy: 0 }, t0 + ms(100)),
            [CallAction::Abandon { copy: 0, cancel: false }, query(1)]
        );
        let failed = CallInput::Answer { copy: 1, outcome: Outcome::Status(503), retry_after: None };
        assert_eq!(call.handle(failed, t0 + ms(102)), [query(2)], "a failed query is asked again");
        let not_found = CallInput::Answer { copy: 2, outcome: Outcome::Status(404), retry_after: None };
        assert_eq!(call.handle(not_found, t0 + ms(104)), [send(3)], "nothing committed: the operation goes again");
        let done = CallInput::Answer { copy: 3, outcome: Outcome::Ok, retry_after: None };
        assert_eq!(call.handle(done, t0 + ms(110)), [CallAction::Finish(Ok(()))]);
        // Committed: the query's answer ends the call.
        let mut call = Call::new(client, SplitMix::new(2)).operation(false, false);
        let _ = call.handle(CallInput::Start, t0);
        let _ = call.handle(CallInput::Timeout { copy: 0 }, t0 + ms(100));
        let found = CallInput::Answer { copy: 1, outcome: Outcome::Ok, retry_after: None };
        assert_eq!(call.handle(found, t0 + ms(102)), [CallAction::Finish(Ok(()))]);
        assert_eq!(call.attempts(), 2);
    }

    #[test]
    fn a_call_that_asks_first_sends_the_operation_only_after_not_found() {
        let policy = Policy::builder().max_attempts(3).per_try_timeout(ms(100)).retry_on(["503"]).build().unwrap();
        let t0 = Instant::now();
        let client = Shared::with_origin(policy, t0);
        let mut call = Call::new(client.clone(), SplitMix::new(1)).operation(false, true).ask_first();
        assert_eq!(call.handle(CallInput::Start, t0), [CallAction::Query { copy: 0, timeout: Some(ms(100)) }]);
        let not_found = CallInput::Answer { copy: 0, outcome: Outcome::Status(404), retry_after: None };
        assert_eq!(call.handle(not_found, t0 + ms(2)), [CallAction::Send { copy: 1, timeout: Some(ms(100)) }]);
        // Found at once: nothing is sent again.
        let mut found = Call::new(client, SplitMix::new(2)).ask_first();
        let _ = found.handle(CallInput::Start, t0);
        let ok = CallInput::Answer { copy: 0, outcome: Outcome::Ok, retry_after: None };
        assert_eq!(found.handle(ok, t0 + ms(1)), [CallAction::Finish(Ok(()))]);
    }

    #[test]
    fn a_deadline_from_upstream_clips_the_timeouts_and_one_already_passed_fails_at_once() {
        let policy = Policy::builder()
            .max_attempts(3)
            .per_try_timeout(ms(100))
            .deadline(ms(1000))
            .retry_on(["timeout"])
            .build()
            .unwrap();
        let t0 = Instant::now();
        let client = Shared::with_origin(policy, t0);
        let mut call = Call::new(client.clone(), SplitMix::new(1)).deadline_at(t0 + ms(130));
        assert_eq!(call.handle(CallInput::Start, t0), [CallAction::Send { copy: 0, timeout: Some(ms(100)) }]);
        assert_eq!(
            call.handle(CallInput::Timeout { copy: 0 }, t0 + ms(100)),
            [CallAction::Abandon { copy: 0, cancel: false }, CallAction::Send { copy: 1, timeout: Some(ms(30)) }],
            "the retry gets what is left of the upstream deadline"
        );
        let steps = call.handle(CallInput::Timeout { copy: 1 }, t0 + ms(130));
        assert_eq!(steps.last(), Some(&CallAction::Finish(Err(DenyReason::Deadline))), "{steps:?}");
        // Already passed: the attempt goes with no time at all.
        let mut late = Call::new(client, SplitMix::new(2)).deadline_at(t0 + ms(10));
        assert_eq!(late.handle(CallInput::Start, t0 + ms(20)), [CallAction::Send { copy: 0, timeout: Some(ms(0)) }]);
    }
}
