//! The inputs of a hedged call: the hedging delay of copy k, the answer
//! and the per-try timeout of copy k. The first final answer ends the
//! call; a non-fatal answer or a per-try timeout sends the next copy at
//! once if it may go; a copy past its timeout stays in the race until no
//! further copy may go, and the call fails when no copy is left.

use super::{Action, End, Fate, Machine, Slot, ended, level};
use crate::call::{CallState, Guards};
use crate::decision::DenyReason;
use crate::hedged::LiveCopy;
use crate::time::Nanos;
use crate::{Outcome, Policy};

use super::Purpose;

impl<T> Machine<T> {
    /// The hedging delay of copy `copy` is over: send it, unless an answer
    /// came first or it went out already (then nothing happens).
    pub fn on_hedge_due<G: Guards>(
        &mut self,
        policy: &Policy,
        guards: &mut G,
        now: Nanos,
        copy: u32,
        draw: impl FnMut(Purpose, u64) -> f64,
        out: &mut Vec<Action<T>>,
    ) {
        let due = self.copies.as_ref().is_some_and(|c| c.sent() == copy);
        if due && self.try_hedge(policy, guards, now, None, draw, out).is_ok() {
            self.schedule_hedge(policy, guards, now, out);
        }
    }

    /// An answer of the copy `which` picks (if it is still out).
    #[allow(clippy::too_many_arguments)]
    pub fn on_copy_answer<G: Guards>(
        &mut self,
        policy: &Policy,
        guards: &mut G,
        now: Nanos,
        which: impl Fn(&LiveCopy<Slot<T>>) -> bool,
        outcome: Outcome,
        draw: impl FnMut(Purpose, u64) -> f64,
        out: &mut Vec<Action<T>>,
    ) {
        let Some(copies) = self.copies.as_mut() else { return };
        let Some(c) = copies.take(which) else { return };
        let spec = policy.hedging.as_ref().expect("a hedged call's policy hedges");
        CallState::learn_copy(policy, spec, guards, now, c.copy, c.sent, outcome, true);
        if !spec.is_non_fatal(outcome) {
            let ok = outcome == Outcome::Ok;
            let fate = if ok { Fate::Done } else { Fate::Deny(DenyReason::NotRetryable) };
            out.push(Action::Ended(ended(c, outcome, fate, level(guards))));
            let rest = copies.take_all();
            let fate = if spec.cancel { Fate::Cancelled } else { Fate::Left };
            for r in rest {
                CallState::learn_copy(policy, spec, guards, now, r.copy, r.sent, Outcome::Timeout, false);
                out.push(Action::Ended(ended(r, Outcome::Timeout, fate, level(guards))));
            }
            out.push(Action::Finish { outcome, end: if ok { End::Done } else { End::Fatal } });
            return;
        }
        out.push(Action::Ended(ended(c, outcome, Fate::Hedge, level(guards))));
        self.last = Some(outcome);
        self.hedge_or_settle(policy, guards, now, outcome, draw, out);
    }

    /// The per-try timeout of the copy `which` picks passed (if it is still out).
    #[allow(clippy::too_many_arguments)]
    pub fn on_copy_timeout<G: Guards>(
        &mut self,
        policy: &Policy,
        guards: &mut G,
        now: Nanos,
        which: impl Fn(&LiveCopy<Slot<T>>) -> bool,
        draw: impl FnMut(Purpose, u64) -> f64,
        out: &mut Vec<Action<T>>,
    ) {
        if !self.copies.as_mut().is_some_and(|c| c.expire(which)) {
            return;
        }
        self.last = Some(Outcome::Timeout);
        self.hedge_or_settle(policy, guards, now, Outcome::Timeout, draw, out);
    }

    /// Sends the next copy if copies are left and the deadline, breaker,
    /// budget, extra-load cap and throttle allow it.
    fn try_hedge<G: Guards>(
        &mut self,
        policy: &Policy,
        guards: &mut G,
        now: Nanos,
        trigger: Option<Outcome>,
        mut draw: impl FnMut(Purpose, u64) -> f64,
        out: &mut Vec<Action<T>>,
    ) -> Result<(), DenyReason> {
        let spec = policy.hedging.as_ref().expect("a hedged call's policy hedges");
        let copies = self.copies.as_mut().expect("a hedged call");
        let (sent, n) = (copies.sent(), self.st.attempts as u64 + 1);
        if let Err(reason) = self.st.hedge_gate(policy, spec, guards, now, sent, trigger, || draw(Purpose::Throttle, n))
        {
            out.push(Action::HedgeRefused(reason));
            return Err(reason);
        }
        let timeout = self.st.on_send(policy, guards, now);
        out.push(Action::Send { copy: sent, timeout });
        copies.push(now, Slot { trigger, with: None });
        Ok(())
    }

    /// Arms the hedging delay for the call's next copy, if it may have one.
    fn schedule_hedge<G: Guards>(&mut self, policy: &Policy, guards: &mut G, now: Nanos, out: &mut Vec<Action<T>>) {
        let spec = policy.hedging.as_ref().expect("a hedged call's policy hedges");
        let copy = self.copies.as_ref().expect("a hedged call").sent();
        if let Some(delay) = CallState::next_hedge(spec, guards, now, copy) {
            out.push(Action::HedgeDue { copy, delay });
        }
    }

    /// After a non-fatal answer or a timeout: send the next copy; if none
    /// may go, give up the copies whose timeout has passed, and fail the
    /// call when no copy is left.
    fn hedge_or_settle<G: Guards>(
        &mut self,
        policy: &Policy,
        guards: &mut G,
        now: Nanos,
        trigger: Outcome,
        draw: impl FnMut(Purpose, u64) -> f64,
        out: &mut Vec<Action<T>>,
    ) {
        let reason = match self.try_hedge(policy, guards, now, Some(trigger), draw, out) {
            Ok(()) => return self.schedule_hedge(policy, guards, now, out),
            Err(reason) => reason,
        };
        let spec = policy.hedging.as_ref().expect("a hedged call's policy hedges");
        let copies = self.copies.as_mut().expect("a hedged call");
        let expired = copies.take_expired();
        let last = copies.is_empty();
        for c in expired {
            CallState::learn_copy(policy, spec, guards, now, c.copy, c.sent, Outcome::Timeout, true);
            out.push(Action::Ended(ended(c, Outcome::Timeout, Fate::GivenUp { reason, last }, level(guards))));
        }
        if last {
            out.push(Action::Finish { outcome: trigger, end: End::GaveUp(reason) });
        }
    }
}
