//! The caller's side: sending attempts, timeouts, answers and the retry
//! decision with budgets.

use super::*;

impl World<'_> {
    /// Sends the next attempt of an intent on its client's edge.
    pub(super) fn send(&mut self, intent: Id) {
        let now = self.q.now();
        let Some(it) = self.intents.get_mut(intent) else {
            return;
        };
        let spec = &self.s.clients[it.client as usize];
        it.attempts += 1;
        it.outstanding += 1;
        it.sent_at = now;
        let client_state = &mut self.clients[it.client as usize];
        if let Some(b) = client_state.budget(it.instance) {
            b.on_send(now, it.attempts > 1);
        }
        if let Some(b) = client_state.breaker(it.instance) {
            b.on_send(now);
        }
        let (attempt, seq, client, in_window, deadline_at) = (
            it.attempts,
            it.seq,
            it.client as u64,
            it.in_window,
            it.deadline_at,
        );
        let edge = spec.edge;
        let service = spec.target;
        let req = self.requests.insert(Request {
            intent,
            attempt,
            edge: edge as u32,
            service: service as u32,
            abandoned: false,
            demand: 0,
            answer: Outcome::Ok,
            retry_after: None,
        });
        self.intents.get_mut(intent).expect("live").current = Some(req);
        if in_window {
            self.m.edge_attempts[edge] += 1;
        }
        self.m.series.at(now).attempts += 1;
        let timeout = attempt_timeout(&spec.policy, now, deadline_at);
        if timeout != NEVER {
            self.q.schedule_in(timeout, Event::Expire { req });
        }
        let lat = self.s.edges[edge].latency.sample(
            &self.rng,
            &[
                purpose::LATENCY_OUT,
                client,
                seq,
                edge as u64,
                attempt as u64,
            ],
        );
        self.q.schedule_in(lat, Event::Reach { req });
    }

    pub(super) fn on_reply(&mut self, id: Id) {
        let Some(req) = self.requests.get(id) else {
            return;
        };
        let (intent, outcome, retry_after) = (req.intent, req.answer, req.retry_after);
        let waiting = self
            .intents
            .get(intent)
            .is_some_and(|it| it.current == Some(id));
        if waiting {
            self.intents.get_mut(intent).expect("live").current = None;
            self.on_outcome(intent, outcome, retry_after);
        }
        self.leave(id);
    }

    pub(super) fn on_expire(&mut self, id: Id) {
        let Some(req) = self.requests.get_mut(id) else {
            return;
        };
        let intent = req.intent;
        let waiting = self
            .intents
            .get(intent)
            .is_some_and(|it| it.current == Some(id));
        if waiting {
            self.requests.get_mut(id).expect("live").abandoned = true;
            self.intents.get_mut(intent).expect("live").current = None;
            self.on_outcome(intent, Outcome::Timeout, None);
        }
    }

    /// The caller learnt the outcome of its current attempt.
    pub(super) fn on_outcome(&mut self, id: Id, outcome: Outcome, retry_after: Option<Nanos>) {
        let now = self.q.now();
        let it = self.intents.get(id).expect("live intent");
        let retryable = self.s.clients[it.client as usize]
            .policy
            .retry_on
            .contains(outcome);
        let (retry, refund) = (it.attempts > 1, it.retry_cost);
        let client_state = &mut self.clients[it.client as usize];
        let budget_grants = match client_state.budget(it.instance) {
            Some(b) => {
                b.on_outcome(outcome, retry, retryable, refund);
                outcome == Outcome::Ok || b.grants(now, outcome)
            }
            None => true,
        };
        let breaker_closed = match client_state.breaker(it.instance) {
            Some(b) => {
                b.on_outcome(now, outcome);
                b.allows(now)
            }
            None => true,
        };
        if outcome == Outcome::Ok {
            self.trace(id, outcome, TraceDecision::Done);
            self.finish(id, true, String::new());
            return;
        }
        let it = self.intents.get(id).expect("live intent");
        let spec = &self.s.clients[it.client as usize];
        let policy = &spec.policy;
        let u = self.rng.unit(&[
            purpose::JITTER,
            it.client as u64,
            it.seq,
            spec.edge as u64,
            it.attempts as u64,
        ]);
        let backoff_wait = policy.backoff.delay(it.attempts, it.prev_wait, u);
        let ctx = RetryContext {
            outcome,
            idempotent: self.s.operations[spec.operation].idempotent,
            key_sent: spec.idempotency_key,
            attempts_made: it.attempts,
            now,
            deadline_at: it.deadline_at,
            retry_after,
            backoff_wait,
            breaker_closed,
            budget_grants,
        };
        match decide(policy, &ctx) {
            Decision::Retry { wait } => {
                let (client, instance) = (it.client as usize, it.instance);
                let cost = self.clients[client]
                    .budget(instance)
                    .map_or(0.0, |b| b.spend_retry(outcome));
                self.trace(id, outcome, TraceDecision::Retry);
                let it = self.intents.get_mut(id).expect("live");
                it.retry_cost = cost;
                it.prev_wait = wait;
                it.last_outcome = Some(outcome);
                if wait == 0 {
                    self.send(id);
                } else {
                    self.q.schedule_in(wait, Event::Retry { intent: id });
                }
            }
            Decision::Deny(reason) => {
                if it.in_window {
                    *self.m.denials.entry(reason).or_insert(0) += 1;
                }
                self.trace(id, outcome, TraceDecision::Deny(reason));
                let label = if reason == DenyReason::NotRetryable {
                    format!("{outcome}")
                } else {
                    format!("{outcome} ({reason})")
                };
                self.finish(id, false, label);
            }
        }
    }
}
