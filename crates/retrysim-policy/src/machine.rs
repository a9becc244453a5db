//! One call's whole life under a policy, as a sans-IO state machine: the
//! simulator and every runtime driver ([`crate::RetryState`],
//! [`crate::HedgedState`], the tower layers) feed it the same inputs and
//! carry out the actions it returns, so the rules exist once.
//!
//! Inputs (methods of [`Machine`]): the next attempt may go (the call's
//! start, or a wait that ended), the answer or per-try timeout of an
//! attempt, the answer or per-try timeout of hedged copy k, the hedging
//! delay of copy k. What comes out: for the next attempt an [`Admission`]
//! (send it with its timeout, wait for a throttle token, or refused); for
//! an attempt's end a [`Decided`] (its end, then wait and retry, or
//! finish); for a hedged call's inputs [`Action`]s in the order the
//! driver must carry them out (send copy k, arm the hedging delay, a copy
//! ended and what it means — hedge on, give up, cancel, leave it running
//! —, a copy refused, the call finished). The plain steps return a value
//! rather than a list: they are the simulator's hot path.
//!
//! The machine holds the call's own state ([`CallState`]) and its copies
//! out; the state it shares with other calls (budget, breaker, throttle,
//! hedging clock) is lent to each input as [`Guards`], and every random
//! number comes from the driver's `draw`, asked for by [`Purpose`] and
//! attempt number (the simulator keys its draws by them).

mod driven;
mod hedge;

pub use driven::{Call, CallAction, CallInput};

use crate::call::{CallState, Gate, Guards, Next};
use crate::decision::DenyReason;
use crate::hedged::{LiveCopies, LiveCopy};
use crate::time::Nanos;
use crate::{Outcome, Policy};

/// What a random draw is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The throttle's admission of attempt `n` (counting from 1).
    Throttle,
    /// The jitter of the wait after attempt `n`.
    Jitter,
}

/// What an attempt's or a copy's end means for the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// It succeeded and ended the call.
    Done,
    /// It failed and the call retries.
    Retry,
    /// It failed and the call gives up, for this reason (a hedged copy's
    /// fatal answer: `not_retryable`).
    Deny(DenyReason),
    /// A hedged copy's non-fatal answer: the race goes on.
    Hedge,
    /// A hedged copy past its per-try timeout, given up because no further
    /// copy could go (for `reason`); `last`: no copy is left, the call fails.
    GivenUp {
        /// Why no further copy could go.
        reason: DenyReason,
        /// No copy is left: the call fails.
        last: bool,
    },
    /// Another copy ended the call: cancel this one at its service.
    Cancelled,
    /// Another copy ended the call: leave this one to finish (`cancel = false`).
    Left,
}

/// An attempt or copy that ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ended<T> {
    /// Its number among the call's copies (hedged calls; 0 = the first), or
    /// the attempt number less one.
    pub copy: u32,
    /// Its attempt number, counting from 1.
    pub attempt: u32,
    /// When it was sent.
    pub sent: Nanos,
    /// What made the caller send it: the previous attempt's outcome, or the
    /// copy's trigger (`None`: the first, or the hedging delay).
    pub trigger: Option<Outcome>,
    /// The wait before it (a retry's backoff; 0 for copies).
    pub waited: Nanos,
    /// What the driver bound to the copy ([`Machine::bind`]); `None` for an
    /// attempt of a call without hedging.
    pub with: Option<T>,
    /// How it ended (a timeout for a copy given up, cancelled or left).
    pub outcome: Outcome,
    /// What it means for the call.
    pub fate: Fate,
    /// The budget's level once the guards learnt it (if the driver records
    /// ends, [`Guards::records_ends`]).
    pub budget: Option<f64>,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// It succeeded.
    Done,
    /// A hedged copy's fatal answer ended it.
    Fatal,
    /// The policy gave up, for this reason.
    GaveUp(DenyReason),
}

/// What the driver does next, in order, after an input of a hedged call
/// ([`Machine::on_hedge_due`], [`Machine::on_copy_answer`],
/// [`Machine::on_copy_timeout`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action<T> {
    /// Send copy `copy` now, and give it up after `timeout`
    /// ([`crate::NEVER`] = none).
    Send {
        /// Its number.
        copy: u32,
        /// Its timeout: the per-try timeout clipped to the deadline left.
        timeout: Nanos,
    },
    /// Copy `copy` is due after `delay`: call [`Machine::on_hedge_due`] then.
    HedgeDue {
        /// The copy that will be due.
        copy: u32,
        /// The hedging delay from now.
        delay: Nanos,
    },
    /// A copy ended (the driver abandons, cancels or forgets it).
    Ended(Ended<T>),
    /// A copy could not go, for this reason (the race goes on).
    HedgeRefused(DenyReason),
    /// The call is over.
    Finish {
        /// Its last outcome.
        outcome: Outcome,
        /// How it ended.
        end: End,
    },
}

/// What [`Machine::next_attempt`] decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Admission {
    /// Send copy `copy` (for a call without hedging, attempt `copy + 1`)
    /// now, and give it up after `timeout` ([`crate::NEVER`] = none).
    Send {
        /// Its number.
        copy: u32,
        /// Its timeout: the per-try timeout clipped to the deadline left.
        timeout: Nanos,
        /// A hedged call's first copy: the next copy is due after this
        /// delay (call [`Machine::on_hedge_due`] for copy 1 then).
        hedge_due: Option<Nanos>,
    },
    /// The throttle holds a token for it: call [`Machine::next_attempt`]
    /// again after this wait.
    Hold {
        /// The wait for the token.
        wait: Nanos,
    },
    /// The throttle refused it: the call ends with `outcome` (the previous
    /// attempt's, or 503 when none was sent).
    Refused {
        /// The attempt refused, counting from 1.
        attempt: u32,
        /// The wait before it (a retry's backoff).
        waited: Nanos,
        /// The previous attempt's outcome.
        trigger: Option<Outcome>,
        /// The SRE throttle's rejection probability (`None`: an adaptive
        /// throttle's token would come too late).
        p: Option<f64>,
        /// The outcome the call ends with.
        outcome: Outcome,
        /// The budget's level (if the driver records ends).
        budget: Option<f64>,
    },
}

/// What [`Machine::on_outcome`] decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decided<T> {
    /// The attempt's end, for a driver that records ends ([`Guards::records_ends`]).
    pub ended: Option<Ended<T>>,
    /// What follows.
    pub then: Then,
}

/// What follows an attempt's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// Retry: call [`Machine::next_attempt`] after this wait (at once when 0).
    Wait {
        /// The backoff (or Retry-After).
        wait: Nanos,
    },
    /// The call is over.
    Finish {
        /// Its last outcome.
        outcome: Outcome,
        /// How it ended.
        end: End,
    },
}

/// A copy out, and what its driver bound to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot<T> {
    trigger: Option<Outcome>,
    with: Option<T>,
}

impl<T> Slot<T> {
    /// What the driver bound to the copy ([`Machine::bind`]), if anything yet.
    pub fn bound(&self) -> Option<&T> {
        self.with.as_ref()
    }
}

/// One call's machine: its own state, its copies out (hedged calls) and
/// the previous attempt's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine<T> {
    /// The call's own state (attempts, deadline, previous wait, budget
    /// refund, a throttle token held).
    pub st: CallState,
    /// The copies out, for a policy with `[hedging]`.
    copies: Option<Box<LiveCopies<Slot<T>>>>,
    /// The previous attempt's outcome.
    last: Option<Outcome>,
}

/// The budget's level, as the guards hold it now (`None` when the driver
/// does not want it).
#[inline]
fn level<G: Guards>(guards: &mut G) -> Option<f64> {
    if !guards.records_ends() {
        return None;
    }
    guards.budget().and_then(|b| b.level())
}

impl<T> Machine<T> {
    /// A call in state `st`; `hedged` when its policy has `[hedging]`.
    pub fn new(st: CallState, hedged: bool) -> Self {
        Self { st, copies: hedged.then(|| Box::new(LiveCopies::new())), last: None }
    }

    /// Whether the call hedges (its policy has `[hedging]`).
    pub fn hedged(&self) -> bool {
        self.copies.is_some()
    }

    /// Copies sent so far by a hedged call (0 without hedging): the number
    /// the next copy gets.
    pub fn copies_sent(&self) -> u32 {
        self.copies.as_ref().map_or(0, |c| c.sent())
    }

    /// The numbers of the hedged copies out, oldest first (none without hedging).
    pub fn live(&self) -> impl Iterator<Item = u32> + '_ {
        self.copies.iter().flat_map(|c| c.numbers())
    }

    /// Binds the driver's data (a request) to copy `copy`, just sent.
    pub fn bind(&mut self, copy: u32, with: T) {
        if let Some(c) = self.copies.as_mut() {
            c.with_mut(|x| x.copy == copy, |s| s.with = Some(with));
        }
    }

    /// The next attempt may go: the call's first (after its breaker let it
    /// through), or one whose wait ended. The throttle admits it (one
    /// `draw`), the budget and breaker count it, and it is sent; a hedged
    /// call's first copy arms the hedging delay.
    pub fn next_attempt<G: Guards>(
        &mut self,
        policy: &Policy,
        guards: &mut G,
        now: Nanos,
        mut draw: impl FnMut(Purpose, u64) -> f64,
    ) -> Admission {
        if policy.throttle.is_some() {
            let n = self.st.attempts as u64 + 1;
            match self.st.gate(policy, guards, now, || draw(Purpose::Throttle, n)) {
                Gate::Send => {}
                Gate::Wait(wait) => return Admission::Hold { wait },
                Gate::Refuse { p } => {
                    let attempt = self.st.attempts + 1;
                    if attempt > 1
                        && let Some(b) = guards.budget()
                    {
                        // The retry counted when it was decided does not go.
                        b.release_retry();
                    }
                    return Admission::Refused {
                        attempt,
                        waited: if attempt > 1 { self.st.prev_wait } else { 0 },
                        trigger: self.last,
                        p,
                        outcome: self.last.unwrap_or(Outcome::Status(503)),
                        budget: level(guards),
                    };
                }
            }
        }
        let timeout = self.st.on_send(policy, guards, now);
        match self.copies.as_mut() {
            None => Admission::Send { copy: self.st.attempts - 1, timeout, hedge_due: None },
            Some(copies) => {
                let copy = copies.sent();
                copies.push(now, Slot { trigger: None, with: None });
                let spec = policy.hedging.as_ref().expect("a hedged call's policy hedges");
                let hedge_due = self.st.hedge_started(spec, guards, now);
                Admission::Send { copy, timeout, hedge_due }
            }
        }
    }

    /// The current attempt of a call without hedging ended at `now` with
    /// `outcome` (a timeout when the caller gave it up) and the server's
    /// Retry-After: the guards learn it and the policy decides.
    #[allow(clippy::too_many_arguments)]
    pub fn on_outcome<G: Guards>(
        &mut self,
        policy: &Policy,
        guards: &mut G,
        now: Nanos,
        outcome: Outcome,
        retry_after: Option<Nanos>,
        mut draw: impl FnMut(Purpose, u64) -> f64,
    ) -> Decided<T> {
        let st = &mut self.st;
        let (attempt, sent, trigger) = (st.attempts, st.sent_at, self.last);
        let waited = if attempt > 1 { st.prev_wait } else { 0 };
        let n = attempt as u64;
        let next = st.after_outcome(policy, guards, outcome, now, retry_after, || draw(Purpose::Jitter, n));
        let (fate, then) = match next {
            Next::Done => (Fate::Done, Then::Finish { outcome: Outcome::Ok, end: End::Done }),
            Next::Retry { wait } => {
                self.last = Some(outcome);
                (Fate::Retry, Then::Wait { wait })
            }
            Next::GiveUp(reason) => (Fate::Deny(reason), Then::Finish { outcome, end: End::GaveUp(reason) }),
        };
        let ended = guards.records_ends().then(|| {
            let budget = level(guards);
            let copy = attempt.saturating_sub(1);
            Ended { copy, attempt, sent, trigger, waited, with: None, outcome, fate, budget }
        });
        Decided { ended, then }
    }
}

/// A copy taken out of the race, as an [`Ended`] with its fate.
fn ended<T>(c: LiveCopy<Slot<T>>, outcome: Outcome, fate: Fate, budget: Option<f64>) -> Ended<T> {
    Ended {
        copy: c.copy,
        attempt: c.copy + 1,
        sent: c.sent,
        trigger: c.with.trigger,
        waited: 0,
        with: c.with.with,
        outcome,
        fate,
        budget,
    }
}
