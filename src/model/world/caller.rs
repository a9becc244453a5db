//! The caller's side of every edge: sending attempts, timeouts and
//! answers. The steps of the retry decision (breaker, throttle, budget,
//! the decision itself) are the policy crate's [`CallState`] steps, run
//! against the budget, breaker and throttle this world keeps per client
//! instance or per edge.

use super::*;
use crate::metrics::TraceNote;
use crate::policy::call::{Decision, Guards, first_allowed};

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
}

impl<'w> Lent<'w> {
    fn reborrow(&mut self) -> Lent<'_> {
        Lent { clients: &mut *self.clients, edges: &mut *self.edges, g: self.g }
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
}

impl World<'_> {
    /// The guards of a call with guard `g`, lent for one step.
    #[inline]
    pub(super) fn lent(&mut self, g: Guard) -> Lent<'_> {
        Lent { clients: &mut self.clients, edges: &mut self.edges, g }
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

    /// Sends the next attempt of a call on its edge, once its client-side
    /// throttle (if any) lets it.
    pub(super) fn send(&mut self, id: Id) {
        let s = self.s;
        let Some(call) = self.calls.get(id) else {
            return;
        };
        let policy = s.edge_policy(call.edge as usize);
        if policy.throttle.is_some() && !self.admit(id) {
            return;
        }
        let req = self.transmit(id);
        if policy.hedging.is_some() {
            self.start_hedging(id, req);
        } else {
            self.calls.get_mut(id).expect("live").current = Some(req);
        }
    }

    /// Asks the call's throttle (its policy has one) whether its next
    /// attempt may go now. A refused attempt ends the call; one that must
    /// wait for a token is sent when the wait is over.
    fn admit(&mut self, id: Id) -> bool {
        let now = self.q.now();
        let call = self.calls.get(id).expect("live call");
        let g = self.guard(call);
        let (key, next, held) = (call.key, call.st.attempts as u64 + 1, call.st.admitted);
        let class = self.intents.get(call.intent).filter(|it| it.in_window).map(|it| it.client as usize);
        let policy = self.s.edge_policy(g.edge);
        let call = self.calls.get_mut(id).expect("live call");
        if !held {
            call.throttle_wait = 0;
        }
        let rng = &self.rng;
        let mut guards = Lent { clients: &mut self.clients, edges: &mut self.edges, g };
        let note = match call.st.gate(policy, &mut guards, now, || rng.unit(&[purpose::THROTTLE, key, next])) {
            Gate::Send => return true,
            Gate::Refuse { p } => TraceNote::Refused { p },
            Gate::Wait(wait) => {
                call.throttle_wait = wait;
                if let Some(c) = class {
                    self.m.classes[c].throttled += 1;
                }
                self.m.series.at(now).throttled += 1;
                self.q.schedule_in(wait, Event::Retry { call: id });
                return false;
            }
        };
        if let Some(c) = class {
            self.m.classes[c].throttled += 1;
        }
        self.m.series.at(now).throttled += 1;
        self.refuse(id, note);
        false
    }

    /// The throttle refused a call's next attempt: the call ends with the
    /// previous attempt's outcome (503 for a first attempt).
    fn refuse(&mut self, id: Id, note: TraceNote) {
        let call = self.calls.get(id).expect("live call");
        let (last, retry) = (call.last_outcome, call.st.attempts > 0);
        let outcome = last.unwrap_or(Outcome::Status(503));
        self.trace_note(id, call.st.attempts + 1, self.q.now(), note, TraceDecision::Deny(DenyReason::Throttled));
        if retry && self.intents.get(self.calls.get(id).expect("live").intent).is_some_and(|it| it.in_window) {
            *self.m.denials.entry(DenyReason::Throttled).or_insert(0) += 1;
        }
        let label = if retry { format!("{outcome} (throttled)") } else { "throttled".into() };
        self.call_finished(id, outcome, label);
    }

    /// Sends one attempt (or one copy of a hedged call) and returns its request.
    pub(super) fn transmit(&mut self, id: Id) -> Id {
        let now = self.q.now();
        let g = self.guard(self.calls.get(id).expect("live call"));
        let edge = g.edge;
        let policy = self.s.edge_policy(edge);
        let call = self.calls.get_mut(id).expect("live call");
        let timeout = call.st.on_send(policy, &mut Lent { clients: &mut self.clients, edges: &mut self.edges, g }, now);
        let (rkey, tried) = (hash_words(call.key, &[call.st.attempts as u64]), call.tried);
        let callee = self.s.edges[edge].to;
        let host = self.pick_host(callee, tried, rkey);
        let replica = self.hosts[host].replica;
        if self.hosts[host].slot.is_some() && replica < 32 {
            self.calls.get_mut(id).expect("live").tried |= 1 << replica;
        }
        let call = self.calls.get(id).expect("live");
        let req = self.requests.insert(Request {
            call: id,
            intent: call.intent,
            edge: edge as u32,
            service: callee as u32,
            host: host as u32,
            operation: call.operation,
            idem_key: call.idem_key,
            fingerprint: call.fingerprint,
            ledger_key: None,
            rkey,
            expires_at: now.saturating_add(timeout),
            abandoned: false,
            executed: false,
            lost: false,
            at_service: false,
            killed: false,
            committed: false,
            demand: 0,
            done_at: NEVER,
            reached_at: 0,
            inflight_at: 0,
            admitted: false,
            stage: 0,
            row: 0,
            version: 0,
            answer: Outcome::Ok,
            retry_after: None,
            answered: false,
            cancelled: false,
            work_start: 0,
            active: false,
        });
        let intent = call.intent;
        let it = self.intents.get_mut(intent).expect("live intent");
        it.outstanding += 1;
        if it.in_window {
            self.m.edge_attempts[edge] += 1;
        }
        if let Some(slot) = self.hosts[host].slot {
            self.hosts[host].active += 1;
            self.requests.get_mut(req).expect("live").active = true;
            if it.in_window {
                self.m.host_sent[slot as usize - self.s.services.len()] += 1;
            }
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
                    self.requests.get_mut(req).expect("live").lost = true;
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
        let (call, outcome, retry_after) = (req.call, req.answer, req.retry_after);
        if let Some(slot) = self.hosts[req.host as usize].slot
            && !req.abandoned
        {
            let rtt = self.calls.get(call).map_or(0, |c| self.q.now().saturating_sub(c.st.sent_at));
            if outcome == Outcome::Ok && self.intents.get(req.intent).is_some_and(|it| it.in_window) {
                self.m.host_ok[slot as usize - self.s.services.len()] += 1;
            }
            self.host_observed(id, rtt, outcome);
        }
        let (hedged, current) =
            self.calls.get(call).map_or((false, false), |c| (c.hedge.is_some(), c.current == Some(id)));
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
        let (call, lost) = (req.call, req.lost);
        let host = req.host as usize;
        let (hedged, current) =
            self.calls.get(call).map_or((false, false), |c| (c.hedge.is_some(), c.current == Some(id)));
        if hedged {
            self.on_copy_expired(call, id);
        } else if current {
            if self.hosts[host].slot.is_some() {
                let rtt = self.calls.get(call).map_or(0, |c| self.q.now().saturating_sub(c.st.sent_at));
                self.host_observed(id, rtt, Outcome::Timeout);
            }
            self.requests.get_mut(id).expect("live").abandoned = true;
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

    /// The caller learnt the outcome of its current attempt: the policy
    /// crate's step decides, against this call's guards.
    fn on_outcome(&mut self, id: Id, outcome: Outcome, retry_after: Option<Nanos>) {
        let now = self.q.now();
        let call = self.calls.get_mut(id).expect("live call");
        let it = self.intents.get(call.intent).expect("a call's intent is live");
        let g =
            Guard { owner: call.owner, edge: call.edge as usize, client: it.client as usize, instance: it.instance };
        let policy = self.s.edge_policy(g.edge);
        let (key, attempt, intent) = (call.key, call.st.attempts as u64, call.intent);
        // The wait before this attempt, for its trace record.
        let waited = if call.st.attempts > 1 { call.st.prev_wait } else { 0 };
        let rng = &self.rng;
        let mut guards = Lent { clients: &mut self.clients, edges: &mut self.edges, g };
        let draw = || rng.unit(&[purpose::JITTER, key, attempt]);
        match call.st.after_outcome(policy, &mut guards, outcome, now, retry_after, draw) {
            Decision::Done => {
                self.trace(id, outcome, TraceDecision::Done, waited);
                self.call_finished(id, Outcome::Ok, String::new());
            }
            Decision::Retry { wait } => {
                self.trace(id, outcome, TraceDecision::Retry, waited);
                self.calls.get_mut(id).expect("live").last_outcome = Some(outcome);
                if wait == 0 {
                    self.send(id);
                } else {
                    self.q.schedule_in(wait, Event::Retry { call: id });
                }
            }
            Decision::GiveUp(reason) => {
                if self.intents.get(intent).is_some_and(|it| it.in_window) {
                    *self.m.denials.entry(reason).or_insert(0) += 1;
                }
                self.trace(id, outcome, TraceDecision::Deny(reason), waited);
                let label = if reason == DenyReason::NotRetryable {
                    format!("{outcome}")
                } else {
                    format!("{outcome} ({reason})")
                };
                self.call_finished(id, outcome, label);
            }
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
                if let Some(it) = self.intents.get_mut(call.intent) {
                    if !ok {
                        it.lost = it.lost.saturating_add(1);
                    }
                    it.outstanding -= 1;
                }
                self.try_settle(call.intent);
            }
        }
    }
}
