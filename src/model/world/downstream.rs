//! A request's plan at its service after its own work: `before_commit`
//! calls in order, the commit (with optimistic concurrency and consumer
//! dedup), `after_commit` calls, outbox relays, then the answer. The worker
//! is held throughout, as a thread-per-request server does.

use super::*;

/// Where a request is in its service's plan.
enum Step {
    /// Make downstream call `index` and wait for it.
    Call(usize),
    /// Commit.
    Commit,
    /// Everything done: answer `ok`.
    Answer,
}

impl World<'_> {
    fn step(&self, svc: usize, stage: usize) -> Step {
        let plan = &self.services[svc].plan;
        let before = plan.before.len();
        if stage < before {
            Step::Call(plan.before[stage])
        } else if stage == before {
            Step::Commit
        } else if let Some(&i) = plan.after.get(stage - before - 1) {
            Step::Call(i)
        } else {
            Step::Answer
        }
    }

    /// Goes on with a request's plan until it waits for a call or answers.
    pub(super) fn advance(&mut self, id: Id) {
        let req = self.requests.get(id).expect("live request");
        match req.ask {
            request::Ask::Operation => {}
            request::Ask::Status => {
                // The business record carries the call's key: found or not.
                let svc = req.service as usize;
                let committed = self.calls.get(req.call).is_some_and(|c| c.committed)
                    || (svc < 64 && self.intents.get(req.intent).is_some_and(|it| it.committed_at & (1 << svc) != 0));
                self.finish_request(id, if committed { Outcome::Ok } else { crate::policy::decision::NOT_FOUND });
                return;
            }
            request::Ask::Undo => {
                // Undone or never there: either way nothing of it is left.
                let (svc, intent) = (req.service as usize, req.intent);
                self.undo_commits(svc, intent);
                self.finish_request(id, Outcome::Ok);
                return;
            }
        }
        loop {
            let req = self.requests.get(id).expect("live request");
            let svc = req.service as usize;
            match self.step(svc, req.stage as usize) {
                Step::Call(index) => {
                    self.start_child(id, index);
                    return;
                }
                Step::Commit => {
                    if !self.commit(id) {
                        // Another write landed since this request read its row.
                        self.finish_request(id, Outcome::Status(412));
                        return;
                    }
                    self.requests.get_mut(id).expect("live").stage += 1;
                }
                Step::Answer => {
                    self.finish_request(id, Outcome::Ok);
                    return;
                }
            }
        }
    }

    /// A downstream call of request `id` finished with `outcome`.
    pub(super) fn child_done(&mut self, id: Id, outcome: Outcome) {
        // The request may have been reset by a crash while it waited.
        let Some(req) = self.requests.get(id).filter(|r| r.phase().executed()) else {
            return;
        };
        let (svc, stage, intent) = (req.service as usize, req.stage as usize, req.intent);
        let before_commit = stage < self.services[svc].plan.before.len();
        if outcome != Outcome::Ok {
            if before_commit {
                // No commit; the failure travels up (DESIGN §4).
                let answer = match outcome {
                    Outcome::Timeout => Outcome::Status(504),
                    Outcome::Status(503) | Outcome::Status(429) => Outcome::Status(503),
                    _ => Outcome::Status(502),
                };
                self.finish_request(id, answer);
                return;
            }
            // after_commit: the answer stays ok, the effect is lost (until a
            // reconciler of this service repairs it).
            let index = self.services[svc].plan.after[stage - self.services[svc].plan.before.len() - 1];
            let call = &self.s.services[svc].calls[index];
            let req = self.requests.get(id).expect("live request");
            let what = reconcile::Unresolved {
                intent,
                edge: call.edge as u32,
                operation: call.operation.map_or(req.operation, |o| o as u32),
                idem_key: self.downstream_key(call.key, req.idem_key, intent, call.edge),
                fingerprint: hash_words(req.fingerprint, &[call.edge as u64]),
            };
            self.effect_failed(svc, what);
        }
        self.requests.get_mut(id).expect("live").stage += 1;
        self.advance(id);
    }

    /// Makes downstream call `index` of request `id`'s service.
    fn start_child(&mut self, id: Id, index: usize) {
        let now = self.q.now();
        let req = self.requests.get(id).expect("live request");
        let s = self.s;
        let spec = &s.services[req.service as usize].calls[index];
        let intent = req.intent;
        let Some(fill) = self.cache_lookup(id, index) else {
            // A cache hit: the call is not made.
            self.child_done(id, Outcome::Ok);
            return;
        };
        if !self.breaker_allows(Owner::Parent(id), spec.edge, intent) {
            // An open breaker fails the call fast, as an overload answer.
            self.child_done(id, Outcome::Status(503));
            return;
        }
        let req = self.requests.get(id).expect("live request");
        let own = if spec.policy.deadline == NEVER { NEVER } else { now.saturating_add(spec.policy.deadline) };
        let deadline_at = if spec.propagate_deadline { own.min(req.expires_at) } else { own };
        let operation = spec.operation.map_or(req.operation, |o| o as u32);
        let idem_key = self.downstream_key(spec.key, req.idem_key, req.intent, spec.edge);
        let idempotent = self.s.operations[operation as usize].idempotent;
        let call = Call {
            intent: req.intent,
            edge: spec.edge as u32,
            owner: Owner::Parent(id),
            operation,
            idem_key,
            fingerprint: hash_words(req.fingerprint, &[spec.edge as u64]),
            key: hash_words(req.rkey, &[purpose::CHILD, index as u64]),
            machine: Machine::new(
                CallState::new(deadline_at, now, idempotent, idem_key.is_some()),
                self.s.edge_policy(spec.edge).hedging.is_some(),
            ),
            current: None,
            tried: 0,
            fill,
            throttle_wait: 0,
            committed: false,
            undo: false,
        };
        let call = self.calls.insert(call);
        self.send(call);
    }

    /// Commits request `id` at its service: checks the row version
    /// (optimistic concurrency), records the side effect (unless a
    /// deduplicating consumer has applied this event already) and writes
    /// the outbox. Returns false on a version conflict.
    fn commit(&mut self, id: Id) -> bool {
        let now = self.q.now();
        let req = self.requests.get(id).expect("live request");
        let (svc, req_host) = (req.service as usize, req.host as usize);
        let spec = &self.s.services[svc];
        if spec.occ_rows.is_some() {
            let row = req.row as usize;
            if self.services[svc].versions[row] != req.version {
                return false;
            }
            self.services[svc].versions[row] += 1;
        }
        let (intent, rkey, operation, edge) = (req.intent, req.rkey, req.operation as usize, req.edge as usize);
        let (idem_key, fingerprint, ledger_key, call) = (req.idem_key, req.fingerprint, req.ledger_key, req.call);
        self.requests.get_mut(id).expect("live").to(Phase::Committed);
        if let Some(call) = self.calls.get_mut(call) {
            call.committed = true;
        }
        if svc < 64
            && let Some(it) = self.intents.get_mut(intent)
        {
            it.committed_at |= 1 << svc;
        }
        if let Some(key) = ledger_key {
            self.record_result(req_host, key);
        }
        let it = self.intents.get_mut(intent).expect("live intent");
        if let Some(slot) = self.edges[edge].dedup_slot {
            if it.applied & (1 << slot) != 0 {
                // The consumer has this event id already: nothing to apply.
                return true;
            }
            it.applied |= 1 << slot;
        }
        if let Some(kind) = spec.commits
            && !self.s.operations[operation].idempotent
        {
            it.effects[kind] = it.effects[kind].saturating_add(1);
        }
        for k in 0..self.services[svc].plan.outbox.len() {
            let index = self.services[svc].plan.outbox[k];
            let call = &spec.calls[index];
            let it = self.intents.get_mut(intent).expect("live intent");
            it.events_sent = it.events_sent.saturating_add(1);
            it.outstanding += 1;
            let key = hash_words(rkey, &[purpose::RELAY, index as u64]);
            let deadline_at =
                if call.policy.deadline == NEVER { NEVER } else { now.saturating_add(call.policy.deadline) };
            let relay_operation = call.operation.map_or(operation as u32, |o| o as u32);
            let relay_key = self.downstream_key(call.key, idem_key, intent, call.edge);
            let idempotent = self.s.operations[relay_operation as usize].idempotent;
            let relay = self.calls.insert(Call {
                intent,
                edge: call.edge as u32,
                owner: Owner::Relay,
                operation: relay_operation,
                idem_key: relay_key,
                fingerprint: hash_words(fingerprint, &[call.edge as u64]),
                key,
                machine: Machine::new(
                    CallState::new(deadline_at, now, idempotent, relay_key.is_some()),
                    self.s.edge_policy(call.edge).hedging.is_some(),
                ),
                current: None,
                tried: 0,
                fill: NO_FILL,
                throttle_wait: 0,
                committed: false,
                undo: false,
            });
            let delay = call.relay_delay.sample(&self.rng, &[purpose::RELAY_DELAY, key]);
            self.q.schedule_in(delay, Event::Retry { call: relay });
        }
        true
    }

    /// The idempotency key a downstream call or relay on `edge` sends.
    fn downstream_key(&self, mode: KeyMode, forwarded: Option<u64>, intent: Id, edge: usize) -> Option<u64> {
        match mode {
            KeyMode::Forward => forwarded,
            KeyMode::Derive => {
                let it = self.intents.get(intent).expect("live intent");
                Some(hash_words(it.key, &[purpose::KEY, edge as u64]))
            }
            KeyMode::None => None,
        }
    }
}
