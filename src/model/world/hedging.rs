//! Hedged calls: further copies after the hedging delay (or at once after a
//! non-fatal answer), the first final answer wins, and the other copies are
//! cancelled at their service or left to finish as wasted work.
//!
//! A copy's per-try timeout does not end it (Envoy's
//! `hedge_on_per_try_timeout`): it sends the next copy and stays in the
//! race. Copies whose timeout has passed are given up only when no further
//! copy can be sent (copies, deadline, breaker, budget, extra-load cap or
//! throttle refuse), and the call fails when no copy is left. The rules
//! are the call machine's ([`retrysim_policy::machine`]); this file feeds
//! it a hedged call's events and carries out what a copy's end means here.

use super::settle::TracedAttempt;
use super::*;
use crate::metrics::TraceNote;
use retrysim_policy::hedged::LiveCopy;
use retrysim_policy::machine::{Ended, Fate, Slot};

impl World<'_> {
    /// The hedging delay for copy `copy` is over: send it, unless an answer
    /// came first or it went out already after a non-fatal answer.
    pub(super) fn on_hedge(&mut self, id: Id, copy: u32) {
        self.call_step(id, |m, policy, guards, now, draw, out| m.on_hedge_due(policy, guards, now, copy, draw, out));
    }

    /// An answer arrived for copy `req` of hedged call `id`.
    pub(super) fn on_copy_outcome(&mut self, id: Id, req: Id, outcome: Outcome) {
        let which = move |c: &LiveCopy<Slot<Id>>| c.with.bound() == Some(&req);
        self.call_step(id, |m, policy, guards, now, draw, out| {
            m.on_copy_answer(policy, guards, now, which, outcome, draw, out)
        });
    }

    /// A copy's per-try timeout passed.
    pub(super) fn on_copy_expired(&mut self, id: Id, req: Id) {
        let which = move |c: &LiveCopy<Slot<Id>>| c.with.bound() == Some(&req);
        self.call_step(id, |m, policy, guards, now, draw, out| {
            m.on_copy_timeout(policy, guards, now, which, draw, out)
        });
    }

    /// An attempt or copy ended: a hedged copy's request is given up,
    /// cancelled or left to finish, and its end goes into the trace.
    pub(super) fn ended(&mut self, id: Id, e: Ended<Id>) {
        let Some(req) = e.with else {
            return self.attempt_ended(id, e);
        };
        let (decision, note) = match e.fate {
            Fate::Done => (TraceDecision::Done, None),
            Fate::Deny(reason) => (TraceDecision::Deny(reason), None),
            Fate::Hedge => (TraceDecision::Hedge, None),
            Fate::GivenUp { reason, last } => {
                if let Some(r) = self.requests.get_mut(req) {
                    r.abandon();
                }
                let edge = self.calls.get(id).expect("live call").edge as usize;
                if self.s.edge_policy(edge).cancel_on_timeout {
                    self.cancel_request(req);
                }
                (if last { TraceDecision::Deny(reason) } else { TraceDecision::Hedge }, None)
            }
            Fate::Cancelled | Fate::Left => {
                if let Some(r) = self.requests.get_mut(req) {
                    r.abandon();
                }
                if e.fate == Fate::Cancelled {
                    (TraceDecision::Cancelled, Some(TraceNote::Cancelled))
                } else {
                    (TraceDecision::Abandoned, Some(TraceNote::Unanswered))
                }
            }
            Fate::Retry => unreachable!("a hedged copy is not retried"),
        };
        let traced = TracedAttempt {
            attempt: e.attempt,
            sent: e.sent,
            wait: e.waited,
            trigger: e.trigger,
            copy: Some(e.copy),
            note,
            budget: e.budget,
        };
        self.push_trace(id, traced, e.outcome, decision);
        match e.fate {
            Fate::Cancelled => self.cancel_request(req),
            Fate::Done | Fate::Deny(_) if e.copy > 0 => {
                let call = self.calls.get(id).expect("live call");
                if call.owner == Owner::Client {
                    let tally = self.tally(call.intent);
                    self.m.class(tally).hedge_wins += 1;
                }
            }
            _ => {}
        }
    }
}
