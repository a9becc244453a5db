//! Hedged calls: further copies after the hedging delay (or at once after a
//! non-fatal answer), the first final answer wins, and the other copies are
//! cancelled at their service or left to finish as wasted work.
//!
//! A copy's per-try timeout does not end it (Envoy's
//! `hedge_on_per_try_timeout`): it sends the next copy and stays in the
//! race. Copies whose timeout has passed are given up only when no further
//! copy can be sent (copies, deadline, breaker, budget, extra-load cap or
//! throttle refuse), and the call fails when no copy is left.

use super::caller::{Guard, Lent};
use super::settle::TracedAttempt;
use super::*;
use crate::metrics::TraceNote;
use crate::policy::hedge::HedgeSpec;
use retrysim_policy::hedged::{LiveCopies, LiveCopy};

/// What the simulator keeps beside a copy in flight.
#[derive(Debug, Clone, Copy)]
pub(super) struct CopyRequest {
    req: Id,
    /// What made the caller send it (`None`: the first copy, or the hedging delay).
    trigger: Option<Outcome>,
}

/// One copy of a hedged call in flight.
type HedgeCopy = LiveCopy<CopyRequest>;

/// The copies of a hedged call: the ones out, and how many were sent.
pub(super) type HedgeCall = LiveCopies<CopyRequest>;

impl World<'_> {
    fn hedge_spec(&self, edge: usize) -> &'_ HedgeSpec {
        self.s.edge_policy(edge).hedging.as_ref().expect("a hedged edge")
    }

    /// The first copy `req` of call `id` went out: start hedging.
    pub(super) fn start_hedging(&mut self, id: Id, req: Id) {
        let now = self.q.now();
        let call = self.calls.get_mut(id).expect("live call");
        let mut copies = HedgeCall::new();
        copies.push(now, CopyRequest { req, trigger: None });
        call.hedge = Some(Box::new(copies));
        let g = self.guard(self.calls.get(id).expect("live call"));
        let spec = self.s.edge_policy(g.edge).hedging.as_ref().expect("a hedged edge");
        let call = self.calls.get_mut(id).expect("live call");
        let due = call.st.hedge_started(spec, &mut Lent { clients: &mut self.clients, edges: &mut self.edges, g }, now);
        if let Some(delay) = due {
            self.q.schedule_in(delay, Event::Hedge { call: id, copy: 1 });
        }
    }

    /// Arms the hedging delay for the call's next copy, if it may have one.
    fn schedule_hedge(&mut self, id: Id) {
        let now = self.q.now();
        let call = self.calls.get(id).expect("live call");
        let (g, copy) = (self.guard(call), call.hedge.as_ref().expect("hedged").sent());
        let spec = self.s.edge_policy(g.edge).hedging.as_ref().expect("a hedged edge");
        if let Some(delay) = CallState::next_hedge(spec, &mut self.lent(g), now, copy) {
            self.q.schedule_in(delay, Event::Hedge { call: id, copy });
        }
    }

    /// The hedging delay for copy `copy` is over: send it, unless an answer
    /// came first or it went out already after a non-fatal answer.
    pub(super) fn on_hedge(&mut self, id: Id, copy: u32) {
        let due = self.calls.get(id).and_then(|c| c.hedge.as_ref()).is_some_and(|h| h.sent() == copy);
        if due && self.try_hedge(id, None).is_ok() {
            self.schedule_hedge(id);
        }
    }

    /// Sends the call's next copy if copies are left and the deadline,
    /// breaker, budget, extra-load cap and throttle allow it.
    fn try_hedge(&mut self, id: Id, trigger: Option<Outcome>) -> Result<(), DenyReason> {
        let now = self.q.now();
        let call = self.calls.get(id).expect("live call");
        let g = self.guard(call);
        let policy = self.s.edge_policy(g.edge);
        let spec = policy.hedging.as_ref().expect("a hedged edge");
        let (sent, key, next) = (call.hedge.as_ref().expect("hedged").sent(), call.key, call.st.attempts as u64 + 1);
        let class = self.intents.get(call.intent).filter(|it| it.in_window).map(|it| it.client as usize);
        let call = self.calls.get_mut(id).expect("live call");
        let rng = &self.rng;
        let mut guards = Lent { clients: &mut self.clients, edges: &mut self.edges, g };
        let draw = || rng.unit(&[purpose::THROTTLE, key, next]);
        if let Err(reason) = call.st.hedge_gate(policy, spec, &mut guards, now, sent, trigger, draw) {
            if reason == DenyReason::Throttled {
                if let Some(c) = class {
                    self.m.classes[c].throttled += 1;
                }
                self.m.series.at(now).throttled += 1;
            }
            return Err(reason);
        }
        if let Some(c) = class {
            self.m.classes[c].hedges += 1;
        }
        self.m.series.at(now).hedges += 1;
        let req = self.transmit(id);
        self.call_mut(id).hedge.as_mut().expect("hedged").push(now, CopyRequest { req, trigger });
        Ok(())
    }

    /// Takes copy `req` out of the call's live copies.
    fn take_copy(&mut self, id: Id, req: Id) -> Option<HedgeCopy> {
        self.calls.get_mut(id)?.hedge.as_mut()?.take(|c| c.with.req == req)
    }

    /// The guards learn a copy's outcome; the first copy's latency feeds
    /// the edge's latency window (to its answer, or to when it was given up).
    fn learn(&mut self, g: Guard, c: HedgeCopy, outcome: Outcome, counts: bool) {
        let now = self.q.now();
        let policy = self.s.edge_policy(g.edge);
        let spec = policy.hedging.as_ref().expect("a hedged edge");
        CallState::learn_copy(policy, spec, &mut self.lent(g), now, c.copy, c.sent, outcome, counts);
    }

    fn trace_copy(&mut self, id: Id, c: HedgeCopy, outcome: Outcome, decision: TraceDecision, note: Option<TraceNote>) {
        let a = TracedAttempt {
            attempt: c.copy + 1,
            sent: c.sent,
            wait: 0,
            trigger: c.with.trigger,
            copy: Some(c.copy),
            note,
        };
        self.push_trace(id, a, outcome, decision);
    }

    /// An answer arrived for copy `req` of hedged call `id`.
    pub(super) fn on_copy_outcome(&mut self, id: Id, req: Id, outcome: Outcome) {
        let Some(c) = self.take_copy(id, req) else {
            return;
        };
        let g = self.guard(self.calls.get(id).expect("live call"));
        self.learn(g, c, outcome, true);
        if !self.hedge_spec(g.edge).is_non_fatal(outcome) {
            let decision = if outcome == Outcome::Ok {
                TraceDecision::Done
            } else {
                TraceDecision::Deny(DenyReason::NotRetryable)
            };
            self.trace_copy(id, c, outcome, decision, None);
            let call = self.calls.get(id).expect("live call");
            if c.copy > 0
                && call.owner == Owner::Client
                && let Some(it) = self.intents.get(call.intent).filter(|it| it.in_window)
            {
                self.m.classes[it.client as usize].hedge_wins += 1;
            }
            self.end_other_copies(id, g);
            let label = if outcome == Outcome::Ok { String::new() } else { format!("{outcome}") };
            self.call_finished(id, outcome, label);
            return;
        }
        // Non-fatal: the other copies go on, and the next one goes out now.
        self.trace_copy(id, c, outcome, TraceDecision::Hedge, None);
        self.call_mut(id).last_outcome = Some(outcome);
        self.hedge_or_settle(id, outcome);
    }

    /// A copy's per-try timeout passed.
    pub(super) fn on_copy_expired(&mut self, id: Id, req: Id) {
        let Some(h) = self.calls.get_mut(id).and_then(|c| c.hedge.as_mut()) else {
            return;
        };
        if !h.expire(|c| c.with.req == req) {
            return;
        }
        self.call_mut(id).last_outcome = Some(Outcome::Timeout);
        self.hedge_or_settle(id, Outcome::Timeout);
    }

    fn call_mut(&mut self, id: Id) -> &mut Call {
        self.calls.get_mut(id).expect("live call")
    }

    /// After a non-fatal answer or a timeout: send the next copy; if none
    /// may go, give up the copies whose timeout has passed, and fail the
    /// call when no copy is left.
    fn hedge_or_settle(&mut self, id: Id, trigger: Outcome) {
        let reason = match self.try_hedge(id, Some(trigger)) {
            Ok(()) => {
                self.schedule_hedge(id);
                return;
            }
            Err(reason) => reason,
        };
        let g = self.guard(self.calls.get(id).expect("live call"));
        let cancel = self.s.edge_policy(g.edge).cancel_on_timeout;
        let expired = self.call_mut(id).hedge.as_mut().expect("hedged").take_expired();
        for c in expired {
            self.learn(g, c, Outcome::Timeout, true);
            if let Some(r) = self.requests.get_mut(c.with.req) {
                r.abandoned = true;
            }
            if cancel {
                self.cancel_request(c.with.req);
            }
            let decision = if self.call_mut(id).hedge.as_ref().expect("hedged").is_empty() {
                TraceDecision::Deny(reason)
            } else {
                TraceDecision::Hedge
            };
            self.trace_copy(id, c, Outcome::Timeout, decision, None);
        }
        if self.call_mut(id).hedge.as_ref().expect("hedged").is_empty() {
            let intent = self.call_mut(id).intent;
            if self.intents.get(intent).is_some_and(|it| it.in_window) {
                *self.m.denials.entry(reason).or_insert(0) += 1;
            }
            self.call_finished(id, trigger, format!("{trigger} ({reason})"));
        }
    }

    /// The call has its answer: cancel the copies still out (or leave them
    /// to finish as wasted work when the policy does not cancel).
    fn end_other_copies(&mut self, id: Id, g: Guard) {
        let cancel = self.hedge_spec(g.edge).cancel;
        let rest = self.call_mut(id).hedge.as_mut().expect("hedged").take_all();
        for c in rest {
            self.learn(g, c, Outcome::Timeout, false);
            if let Some(r) = self.requests.get_mut(c.with.req) {
                r.abandoned = true;
            }
            if cancel {
                self.trace_copy(id, c, Outcome::Timeout, TraceDecision::Cancelled, Some(TraceNote::Cancelled));
                self.cancel_request(c.with.req);
            } else {
                self.trace_copy(id, c, Outcome::Timeout, TraceDecision::Abandoned, Some(TraceNote::Unanswered));
            }
        }
    }
}
