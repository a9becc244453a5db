//! The caller's side of every edge: sending attempts, timeouts and
//! answers. Each call runs the policy crate's call machine
//! ([`retrysim_policy::machine::Machine`]) against the budget, breaker and
//! throttle this world keeps per client instance or per edge; this file
//! feeds it the call's events and carries out its actions (sending,
//! scheduling, tracing, counting).

use super::settle::TracedAttempt;
use super::*;
use crate::metrics::TraceNote;
use crate::policy::call::{Guards, first_allowed};
use retrysim_policy::machine::{Admission, End, Ended, Fate, Then};

/// The simulator's random-number purpose of a machine's draw.
#[inline]
fn draw_purpose(p: Purpose) -> u64 {
    match p {
        Purpose::Throttle => purpose::THROTTLE,
        Purpose::Jitter => purpose::JITTER,
    }
}

/// Who a call's budget and breaker belong to: the client instance for a
/// client's call, the edge for a service's call or a relay.
#[derive(Clone, Copy)]
pub(super) struct Guard {
    pub(super) owner: Owner,
    pub(super) edge: usize,
    pub(super) client: usize,
    pub(super) instance: u32,
}

/// The guards of one call, lent from the world's tables for one step.
pub(super) struct Lent<'w> {
    pub(super) clients: &'w mut [ClientState],
    pub(super) edges: &'w mut [EdgeState],
    pub(super) g: Guard,
    /// The run writes a trace: the machine reports each attempt's end and
    /// the budget's level.
    pub(super) tracing: bool,
}

impl<'w> Lent<'w> {
    fn reborrow(&mut self) -> Lent<'_> {
        Lent { clients: &mut *self.clients, edges: &mut *self.edges, g: self.g, tracing: self.tracing }
    }

    #[inline]
    fn into_budget(self) -> Option<&'w mut Budget> {
        match self.g.owner {
            Owner::Client => self.clients[self.g.client].budget(self.g.instance),
            _ => self.edges[self.g.edge].budget.as_mut(),
        }
    }

    #[inline]
    fn into_breaker(self) -> Option<&'w mut Breaker> {
        match self.g.owner {
            Owner::Client => self.clients[self.g.client].breaker(self.g.instance),
            _ => self.edges[self.g.edge].breaker.as_mut(),
        }
    }

    #[inline]
    fn into_throttle(self) -> Option<&'w mut Throttle> {
        match self.g.owner {
            Owner::Client => self.clients[self.g.client].throttle(self.g.instance),
            _ => self.edges[self.g.edge].throttle.as_mut(),
        }
    }
}

impl Guards for Lent<'_> {
    #[inline]
    fn budget(&mut self) -> Option<&mut Budget> {
        self.reborrow().into_budget()
    }

    #[inline]
    fn breaker(&mut self) -> Option<&mut Breaker> {
        self.reborrow().into_breaker()
    }

    #[inline]
    fn throttle(&mut self) -> Option<&mut Throttle> {
        self.reborrow().into_throttle()
    }

    #[inline]
    fn hedger(&mut self) -> Option<&mut Hedger> {
        self.edges[self.g.edge].hedger.as_mut()
    }

    #[inline]
    fn records_ends(&self) -> bool {
        self.tracing
    }
}

impl World<'_> {
    /// The guards of a call with guard `g`, lent for one step.
    #[inline]
    pub(super) fn lent(&mut self, g: Guard) -> Lent<'_> {
        let tracing = self.tracing();
        Lent { clients: &mut self.clients, edges: &mut self.edges, g, tracing }
    }

    pub(super) fn guard(&self, call: &Call) -> Guard {
        let it = self.intents.get(call.intent).expect("a call's intent is live");
        Guard { owner: call.owner, edge: call.edge as usize, client: it.client as usize, instance: it.instance }
    }

    /// Whether the breaker guarding a new call on `edge` lets it through.
    pub(super) fn breaker_allows(&mut self, owner: Owner, edge: usize, intent: Id) -> bool {
        let Some(it) = self.intents.get(intent) else {
            return false;
        };
        let g = Guard { owner, edge, client: it.client as usize, instance: it.instance };
        self.first_allowed(g)
    }

    /// Whether the breaker guarding a new call with guard `g` lets it through.
    #[inline]
    pub(super) fn first_allowed(&mut self, g: Guard) -> bool {
        let now = self.q.now();
        first_allowed(&mut self.lent(g), now)
    }

    /// The call's next attempt may go (its start, or a wait that ended):
    /// its machine admits and sends it.
    pub(super) fn send(&mut self, id: Id) {
        let Some(call) = self.calls.get_mut(id) else {
            return;
        };
        if let Some(q) = self.edges[call.edge as usize].via {
            // Through a queue: the call publishes, and is done.
            self.publish(id, q as usize);
            self.call_finished(id, Outcome::Ok, String::new());
            return;
        }
        let Some(call) = self.calls.get_mut(id) else {
            return;
        };
        if self.s.edge_policy(call.edge as usize).throttle.is_some() && !call.machine.st.admitted {
            call.throttle_wait = 0;
        }
        let admission = self.with_machine(id, |m, policy, guards, now, draw| m.next_attempt(policy, guards, now, draw));
        match admission {
            Admission::Send { copy, timeout, hedge_due, .. } => {
                self.send_copy(id, copy, timeout);
                if let Some(delay) = hedge_due {
                    self.q.schedule_in(delay, Event::Hedge { call: id, copy: 1 });
                }
            }
            Admission::Hold { wait } => self.held(id, wait),
            Admission::Refused { attempt, waited, trigger, p, outcome, budget } => {
                self.count_throttled(id);
                let traced = TracedAttempt {
                    attempt,
                    sent: self.q.now(),
                    wait: waited,
                    trigger,
                    copy: None,
                    note: Some(TraceNote::Refused { p }),
                    budget,
                };
                self.push_trace(id, traced, Outcome::Status(503), TraceDecision::Deny(DenyReason::Throttled));
                if attempt > 1 {
                    self.count_denial(id, DenyReason::Throttled);
                }
                let label = if attempt > 1 { format!("{outcome} (throttled)") } else { "throttled".into() };
                self.call_finished(id, outcome, label);
            }
        }
    }

    /// The call's machine learnt the outcome of its current attempt (a
    /// call without hedging) and decided, against this call's guards.
    fn on_outcome(&mut self, id: Id, outcome: Outcome, retry_after: Option<Nanos>) {
        let decided = self.with_machine(id, |m, policy, guards, now, draw| {
            m.on_outcome(policy, guards, now, outcome, retry_after, draw)
        });
        if let Some(e) = decided.ended {
            self.attempt_ended(id, e);
        }
        match decided.then {
            Then::Wait { wait: 0 } => self.send(id),
            Then::Wait { wait } => self.q.schedule_in(wait, Event::Retry { call: id }),
            Then::Finish { outcome, end } => self.finish_call(id, outcome, end),
        }
    }

    /// Runs one input of a call's machine against the call's guards, with
    /// the call's keyed draws.
    fn with_machine<R>(
        &mut self,
        id: Id,
        input: impl FnOnce(&mut Machine<Id>, &Policy, &mut Lent<'_>, Nanos, &dyn Fn(Purpose, u64) -> f64) -> R,
    ) -> R {
        let now = self.q.now();
        let g = self.guard(self.calls.get(id).expect("live call"));
        let policy = self.s.edge_policy(g.edge);
        let call = self.calls.get_mut(id).expect("live call");
        let key = call.key;
        let rng = &self.rng;
        let tracing = self.options.trace_fraction > 0.0;
        let mut guards = Lent { clients: &mut self.clients, edges: &mut self.edges, g, tracing };
        let draw = |p: Purpose, n: u64| rng.unit(&[draw_purpose(p), key, n]);
        input(&mut call.machine, policy, &mut guards, now, &draw)
    }

    /// Runs one input of a hedged call's machine (if the call is still
    /// live) and carries out its actions.
    pub(super) fn call_step(
        &mut self,
        id: Id,
        input: impl FnOnce(
            &mut Machine<Id>,
            &Policy,
            &mut Lent<'_>,
            Nanos,
            &dyn Fn(Purpose, u64) -> f64,
            &mut Vec<Action<Id>>,
        ),
    ) {
        if self.calls.get(id).is_none() {
            return;
        }
        let mut out = std::mem::take(&mut self.actions);
        self.with_machine(id, |m, policy, guards, now, draw| input(m, policy, guards, now, draw, &mut out));
        self.carry_out(id, out);
    }

    /// The call is over: count a denial and tell whoever waits for it.
    fn finish_call(&mut self, id: Id, outcome: Outcome, end: End) {
        let label = match end {
            End::Done => String::new(),
            End::Fatal => format!("{outcome}"),
            End::GaveUp(reason) => {
                // A repair's status query that found nothing: the reconciler
                // sends the effect next, nothing was refused.
                let found_nothing = outcome == crate::policy::decision::NOT_FOUND
                    && matches!(self.calls.get(id).map(|c| c.owner), Some(Owner::Reconciler { asked: true, .. }));
                if !found_nothing {
                    self.count_denial(id, reason);
                }
                if reason == DenyReason::NotRetryable { format!("{outcome}") } else { format!("{outcome} ({reason})") }
            }
        };
        self.call_finished(id, outcome, label);
    }

    /// Carries out a hedged call's machine's actions in order (see
    /// [`retrysim_policy::machine`]).
    pub(super) fn carry_out(&mut self, id: Id, mut out: Vec<Action<Id>>) {
        for &a in &out {
            match a {
                Action::Send { copy, timeout, .. } => self.send_copy(id, copy, timeout),
                Action::HedgeDue { copy, delay } => self.q.schedule_in(delay, Event::Hedge { call: id, copy }),
                Action::Ended(e) => self.ended(id, e),
                Action::HedgeRefused(reason) => {
                    if reason == DenyReason::Throttled {
                        self.count_throttled(id);
                    }
                }
                Action::Finish { outcome, end } => self.finish_call(id, outcome, end),
            }
        }
        out.clear();
        self.actions = out;
    }

    /// Sends copy `copy` (attempt `copy + 1` of a call without hedging).
    fn send_copy(&mut self, id: Id, copy: u32, timeout: Nanos) {
        let hedged = self.calls.get(id).expect("live call").machine.hedged();
        if hedged && copy > 0 {
            let tally = self.call_tally(id);
            self.m.class(tally).hedges += 1;
            self.m.series.at(self.q.now()).hedges += 1;
        }
        let req = self.transmit(id, timeout);
        let call = self.calls.get_mut(id).expect("live call");
        if hedged {
            call.machine.bind(copy, req);
        } else {
            call.current = Some(req);
        }
    }

    /// The throttle holds a token for the call's next attempt: it goes when
    /// the wait is over.
    fn held(&mut self, id: Id, wait: Nanos) {
        self.calls.get_mut(id).expect("live call").throttle_wait = wait;
        self.count_throttled(id);
        self.q.schedule_in(wait, Event::Retry { call: id });
    }

    /// Where the counts of call `id` go: its intent's tally.
    fn call_tally(&self, id: Id) -> Tally {
        self.tally(self.calls.get(id).expect("live call").intent)
    }

    /// A throttle held back or refused an attempt of the call.
    fn count_throttled(&mut self, id: Id) {
        let tally = self.call_tally(id);
        self.m.class(tally).throttled += 1;
        self.m.series.at(self.q.now()).throttled += 1;
    }

    /// The call gave up, for `reason`.
    fn count_denial(&mut self, id: Id, reason: DenyReason) {
        let tally = self.call_tally(id);
        *self.m.counts(tally).denials.entry(reason).or_insert(0) += 1;
    }

    /// An attempt of a call without hedging ended: its trace record.
    pub(super) fn attempt_ended(&mut self, id: Id, e: Ended<Id>) {
        if !self.tracing() {
            return;
        }
        let decision = match e.fate {
            Fate::Done => TraceDecision::Done,
            Fate::Retry => TraceDecision::Retry,
            Fate::Deny(reason) => TraceDecision::Deny(reason),
            other => unreachable!("a call without hedging has no {other:?}"),
        };
        let throttle_wait = self.calls.get(id).expect("live call").throttle_wait;
        let traced = TracedAttempt {
            attempt: e.attempt,
            sent: e.sent,
            wait: e.waited,
            trigger: e.trigger,
            copy: None,
            note: (throttle_wait > 0).then_some(TraceNote::Delayed { wait: throttle_wait }),
            budget: e.budget,
        };
        self.push_trace(id, traced, e.outcome, decision);
    }

    /// Sends one attempt (or one copy of a hedged call) and returns its request.
    /// Its machine has counted it and given its `timeout`.
    pub(super) fn transmit(&mut self, id: Id, timeout: Nanos) -> Id {
        let now = self.q.now();
        let g = self.guard(self.calls.get(id).expect("live call"));
        let edge = g.edge;
        let policy = self.s.edge_policy(edge);
        let call = self.calls.get(id).expect("live call");
        let (rkey, tried) = (hash_words(call.key, &[call.machine.st.attempts as u64]), call.tried);
        let callee = self.s.edges[edge].to;
        let host = self.pick_host(callee, tried, rkey);
        let replica = self.hosts[host].replica;
        if self.hosts[host].slot.is_some() && replica < 32 {
            self.calls.get_mut(id).expect("live").tried |= 1 << replica;
        }
        let call = self.calls.get(id).expect("live");
        let req = self.requests.insert(Request::travelling(request::Sent {
            call: id,
            intent: call.intent,
            edge: edge as u32,
            service: callee as u32,
            host: host as u32,
            operation: call.operation,
            idem_key: call.idem_key,
            fingerprint: call.fingerprint,
            rkey,
            expires_at: now.saturating_add(timeout),
            ask: if call.undo {
                request::Ask::Undo
            } else if call.machine.st.querying {
                request::Ask::Status
            } else {
                request::Ask::Operation
            },
        }));
        let (intent, query) = (call.intent, call.machine.st.querying && !call.undo);
        let it = self.intents.get_mut(intent).expect("live intent");
        it.outstanding += 1;
        let counts = self.m.counts(it.tally);
        counts.edge_attempts[edge] += 1;
        if query {
            counts.classes[it.tally.client()].status_queries += 1;
        }
        if let Some(slot) = self.hosts[host].slot {
            counts.host_sent[slot as usize - self.s.services.len()] += 1;
            self.mark_active(req);
        }
        if g.owner == Owner::Client {
            self.m.series.at(now).attempts += 1;
        }
        if timeout == 0 {
            // No time to wait (the deadline has passed): the caller gives up
            // right after this step, before the request can reach its service.
            self.immediate.push_back(Event::Expire { req });
        } else if timeout != NEVER {
            // A full per-try timeout has one length per policy: a FIFO lane.
            if timeout == policy.per_try_timeout {
                self.q.schedule_fixed(timeout, Event::Expire { req });
            } else {
                self.q.schedule_in(timeout, Event::Expire { req });
            }
        }
        let mut lat = self.s.edges[edge].latency.sample(&self.rng, &[purpose::LATENCY_OUT, rkey]);
        for (fi, f) in self.s.faults.iter().enumerate() {
            if now < f.start || now >= f.end {
                continue;
            }
            match &f.kind {
                FaultKind::Latency { extra } if f.hits(callee, replica, now) => {
                    lat = lat.saturating_add(extra.sample(&self.rng, &[purpose::FAULT, rkey, fi as u64]));
                }
                FaultKind::Partition { edge: cut } if *cut == edge => {
                    // The request vanishes on the way: its caller will time out.
                    self.requests.get_mut(req).expect("live").to(Phase::Lost);
                    return req;
                }
                FaultKind::RequestLoss { probability }
                    if f.hits(callee, replica, now)
                        && self.rng.unit(&[purpose::FAULT, rkey, fi as u64]) < *probability =>
                {
                    // Lost before its service: it never executes, and its
                    // caller cannot tell this timeout from a lost answer.
                    self.requests.get_mut(req).expect("live").to(Phase::Lost);
                    return req;
                }
                _ => {}
            }
        }
        if lat == 0 {
            // No latency: no event; it reaches its service right after this step.
            self.immediate.push_back(Event::Reach { req });
        } else if matches!(self.s.edges[edge].latency, crate::model::Dist::Const(c) if c == lat) {
            self.q.schedule_fixed(lat, Event::Reach { req });
        } else {
            self.q.schedule_in(lat, Event::Reach { req });
        }
        req
    }

    pub(super) fn on_reply(&mut self, id: Id) {
        let Some(req) = self.requests.get(id) else {
            return;
        };
        // Only an experiment with queues has deliveries: no look-up otherwise.
        if !self.queues.is_empty()
            && let Some(&Call { owner: Owner::Delivery { message, receipt }, .. }) = self.calls.get(req.call)
        {
            let (call, outcome) = (req.call, req.answer);
            self.delivery_answered(call, message, receipt, outcome);
            self.leave(id);
            return;
        }
        let (call, outcome, retry_after) = (req.call, req.answer, req.retry_after);
        if let Some(slot) = self.hosts[req.host as usize].slot
            && !req.abandoned()
        {
            let rtt = self.calls.get(call).map_or(0, |c| self.q.now().saturating_sub(c.machine.st.sent_at));
            if outcome == Outcome::Ok {
                let tally = self.tally(req.intent);
                self.m.counts(tally).host_ok[slot as usize - self.s.services.len()] += 1;
            }
            self.host_observed(id, rtt, outcome);
        }
        let (hedged, current) =
            self.calls.get(call).map_or((false, false), |c| (c.machine.hedged(), c.current == Some(id)));
        if hedged {
            self.on_copy_outcome(call, id, outcome);
        } else if current {
            self.calls.get_mut(call).expect("live").current = None;
            self.on_outcome(call, outcome, retry_after);
        }
        self.leave(id);
    }

    pub(super) fn on_expire(&mut self, id: Id) {
        let Some(req) = self.requests.get(id) else {
            return;
        };
        if !self.queues.is_empty()
            && let Some(&Call { owner: Owner::Delivery { message, .. }, .. }) = self.calls.get(req.call)
        {
            // The queue stops waiting; the consumer's work goes on.
            let (call, lost) = (req.call, req.phase() == Phase::Lost);
            self.delivery_expired(call, message);
            self.requests.get_mut(id).expect("live").abandon();
            if lost {
                self.leave(id);
            }
            return;
        }
        let (call, lost) = (req.call, req.phase() == Phase::Lost);
        let host = req.host as usize;
        let (hedged, current) =
            self.calls.get(call).map_or((false, false), |c| (c.machine.hedged(), c.current == Some(id)));
        if hedged {
            self.on_copy_expired(call, id);
        } else if current {
            if self.hosts[host].slot.is_some() {
                let rtt = self.calls.get(call).map_or(0, |c| self.q.now().saturating_sub(c.machine.st.sent_at));
                self.host_observed(id, rtt, Outcome::Timeout);
            }
            self.requests.get_mut(id).expect("live").abandon();
            self.calls.get_mut(call).expect("live").current = None;
            if self.s.edge_policy(self.calls.get(call).expect("live").edge as usize).cancel_on_timeout {
                // The stream is reset: the service drops the work.
                self.cancel_request(id);
            }
            self.on_outcome(call, Outcome::Timeout, None);
        }
        if lost {
            self.leave(id);
        }
    }

    /// A call has its final outcome: tell whoever waits for it.
    pub(super) fn call_finished(&mut self, id: Id, outcome: Outcome, failure: String) {
        let call = self.calls.remove(id).expect("live call");
        let ok = outcome == Outcome::Ok;
        if ok
            && call.fill != NO_FILL
            && let Owner::Parent(parent) = call.owner
        {
            self.cache_fill(parent, call.edge as usize, call.fill);
        }
        match call.owner {
            Owner::Client => self.finish(call.intent, ok, failure),
            Owner::Parent(req) => self.child_done(req, outcome),
            Owner::Relay => {
                if !ok && let Caller::Service { service, .. } = self.s.edges[call.edge as usize].caller {
                    let what = reconcile::Unresolved {
                        intent: call.intent,
                        edge: call.edge,
                        operation: call.operation,
                        idem_key: call.idem_key,
                        fingerprint: call.fingerprint,
                    };
                    self.effect_failed(service, what);
                }
                if let Some(it) = self.intents.get_mut(call.intent) {
                    it.outstanding -= 1;
                }
                self.try_settle(call.intent);
            }
            Owner::Reconciler { service, item, asked } => self.repair_done(service as usize, item, asked, outcome),
            // A delivery's end is the queue's (on_reply, on_expire).
            Owner::Delivery { .. } => unreachable!("a delivery is not decided by a policy"),
        }
    }
}
