//! The service's side: admission (faults, workers, queue, overload), its
//! own work, releasing the worker, and answers (which faults may lose or
//! reset).

use super::*;

impl World<'_> {
    pub(super) fn on_reach(&mut self, id: Id) {
        let now = self.q.now();
        let Some(req) = self.requests.get(id) else {
            return;
        };
        let (svc, h, rkey, intent) = (req.service as usize, req.host as usize, req.rkey, req.intent);
        if req.phase() == Phase::Cancelled {
            // Its caller cancelled it on the way.
            self.leave(id);
            return;
        }
        if !self.queues.is_empty()
            && let Some(&Call { owner: Owner::Delivery { message, .. }, .. }) = self.calls.get(req.call)
        {
            self.delivery_arrived(message);
        }
        if now < self.hosts[h].down_until {
            // The host is down after a crash: the connection is refused.
            self.reply(id, Outcome::ConnectError, None);
            return;
        }
        self.m.reached(svc, now);
        let tally = self.tally(intent);
        let counts = self.m.counts(tally);
        counts.classes[tally.client()].service_arrivals[svc] += 1;
        if let Some(slot) = self.hosts[h].slot {
            counts.host_arrivals[slot as usize - self.s.services.len()] += 1;
        }
        let replica = self.hosts[h].replica;
        for (fi, f) in self.s.faults.iter().enumerate() {
            if !f.hits(svc, replica, now) {
                continue;
            }
            match f.kind {
                FaultKind::Error { status, probability, retry_after }
                    if self.rng.unit(&[purpose::FAULT, rkey, fi as u64]) < probability =>
                {
                    self.reply(id, Outcome::Status(status), retry_after);
                    return;
                }
                FaultKind::Outage | FaultKind::HostDown => {
                    self.reply(id, Outcome::ConnectError, None);
                    return;
                }
                _ => {}
            }
        }
        let spec = &self.s.services[svc];
        if self.services[svc].sheds && self.shed_by_priority(id, h) {
            // Prioritized shedding: this class is turned away while the host is this busy.
            self.reply(id, Outcome::Status(spec.overload.status), spec.overload.retry_after);
            return;
        }
        if !self.rate_limit_admits(h) {
            let limit = self.s.services[svc].rate_limit.expect("limited");
            self.reply(id, Outcome::Status(limit.status), limit.retry_after);
            return;
        }
        if self.hosts[h].limiter.is_some() && !self.limit_admits(h, id) {
            let overload = self.s.services[svc].overload;
            self.reply(id, Outcome::Status(overload.status), overload.retry_after);
            return;
        }
        if self.hosts[h].busy < self.workers_now(h) && self.hosts[h].queue.is_empty() {
            self.start(id);
        } else {
            self.enqueue(id);
            self.fill_workers(h);
            if let Some(memory) = self.s.services[svc].memory
                && self.hosts[h].queue.len() > memory.queued as usize
            {
                // Out of memory: the host crashes as a `crash` fault makes it.
                self.m.counts_at(now).memory_crashes[svc] += 1;
                self.crash_host(h, now.saturating_add(memory.restart_after));
            }
        }
    }

    /// Whether request `id`'s class is shed at host `h` now: more of the
    /// workers left are busy than its class's threshold allows.
    fn shed_by_priority(&self, id: Id, h: usize) -> bool {
        let req = self.requests.get(id).expect("live request");
        let spec = &self.s.services[req.service as usize].hosts;
        let priority =
            self.intents.get(req.intent).map_or(Default::default(), |it| self.s.clients[it.client as usize].priority);
        self.hosts[h].busy as f64 > spec.shed_above[priority as usize] * self.workers_now(h) as f64
    }

    /// Accounts host `h`'s queue and busy workers up to `now` (for its
    /// service, and for itself when the service has replicas).
    #[inline(never)]
    pub(super) fn touch_host(&mut self, h: usize, now: Nanos) {
        let st = &mut self.hosts[h];
        let (from, qlen, busy) = (st.last_change, st.queue.len(), st.busy);
        st.last_change = now;
        // Nothing to add: no time has passed, or nothing was there (the
        // areas would grow by exactly 0).
        if from == now || (qlen == 0 && busy == 0) {
            return;
        }
        let slot = st.slot;
        self.m.service_state(st.service as usize, from, now, qlen, busy);
        if let Some(slot) = slot {
            self.touch_host_slot(slot as usize, from, now, qlen, busy);
        }
    }

    /// [`World::touch_host`] for the host's own metrics slot.
    #[inline(never)]
    fn touch_host_slot(&mut self, slot: usize, from: Nanos, now: Nanos, qlen: usize, busy: u32) {
        self.m.service_state(slot, from, now, qlen, busy);
    }

    /// A request gets a worker.
    pub(super) fn start(&mut self, id: Id) {
        let now = self.q.now();
        let h = self.requests.get(id).expect("live request").host as usize;
        self.touch_host(h, now);
        self.hosts[h].busy += 1;
        self.requests.get_mut(id).expect("live").to(Phase::Holding);
        self.begin(id);
    }

    /// With a worker: the ledger is consulted, then the request's own work
    /// starts (and, with optimistic concurrency, it reads its row's version).
    pub(super) fn begin(&mut self, id: Id) {
        if self.requests.get(id).expect("live request").ask != request::Ask::Operation {
            self.begin_query(id);
            return;
        }
        if !self.ledger_admits(id) {
            return;
        }
        let req = self.requests.get(id).expect("live request");
        let (svc, h) = (req.service as usize, req.host as usize);
        let spec = &self.s.services[svc];
        let mut demand = spec.service_time.sample(&self.rng, &[purpose::SERVICE, req.rkey]);
        let fixed = matches!(spec.service_time, crate::model::Dist::Const(_));
        if spec.per_inflight > 0 {
            // Contention: slower the more other requests are in service.
            let others = self.hosts[h].busy.saturating_sub(1) as u64;
            demand = demand.saturating_add(spec.per_inflight.saturating_mul(others));
        }
        demand = self.slowed(h, demand);
        let row = match self.s.services[svc].occ_rows {
            Some(rows) => {
                let it = self.intents.get(req.intent).expect("live intent");
                (hash_words(0, &[purpose::ROW, it.client as u64, it.seq]) % rows as u64) as u32
            }
            None => 0,
        };
        let version = self.services[svc].versions.get(row as usize).copied().unwrap_or(0);
        let r = self.requests.get_mut(id).expect("live");
        r.demand = demand;
        r.to(Phase::Working);
        r.row = row;
        r.version = version;
        r.done_at = self.q.now().saturating_add(demand);
        if fixed {
            self.q.schedule_fixed(demand, Event::Done { req: id });
        } else {
            self.q.schedule_in(demand, Event::Done { req: id });
        }
    }

    /// A status query or a compensation with a worker: it looks its call's
    /// record up (and undoes it) for its operation's `status_time` (slowed
    /// down as any work), without the ledger, and does nothing else.
    fn begin_query(&mut self, id: Id) {
        let req = self.requests.get(id).expect("live request");
        let h = req.host as usize;
        let demand = self.slowed(h, self.s.operations[req.operation as usize].status_time);
        let r = self.requests.get_mut(id).expect("live");
        r.demand = demand;
        r.to(Phase::Working);
        r.done_at = self.q.now().saturating_add(demand);
        self.q.schedule_in(demand, Event::Done { req: id });
    }

    /// `demand` of own work at host `h`, stretched by the slowdowns in force.
    #[inline]
    fn slowed(&self, h: usize, demand: Nanos) -> Nanos {
        if !self.has_slowdowns() {
            return demand;
        }
        let speed = self.slowdown_at(h);
        if speed != 1.0 { from_secs_f64(demand as f64 * speed / 1e9) } else { demand }
    }

    /// The request's own work is done: account it, then go on with its plan.
    pub(super) fn on_done(&mut self, id: Id) {
        let now = self.q.now();
        // A crash may have reset the request meanwhile.
        // A slowdown may have moved the end of its work: this event is stale.
        let Some(req) = self.requests.get_mut(id).filter(|r| r.phase().executed() && r.done_at == now) else {
            return;
        };
        req.done_at = NEVER;
        let (svc, demand, abandoned, intent) = (req.service as usize, req.demand, req.abandoned(), req.intent);
        let slot = self.hosts[req.host as usize].slot;
        let tally = self.tally(intent);
        let work = crate::engine::nanos_f64(demand);
        self.m.work_done(tally, svc, slot.map(|k| k as usize), work, abandoned, now);
        self.advance(id);
    }

    /// The request is finished at its service: the worker is released and
    /// the answer sent.
    pub(super) fn finish_request(&mut self, id: Id, outcome: Outcome) {
        let now = self.q.now();
        let r = self.requests.get(id).expect("live request");
        let (h, held) = (r.host as usize, r.ledger_key.filter(|_| r.phase() != Phase::Committed));
        self.touch_host(h, now);
        self.hosts[h].busy -= 1;
        self.reply(id, outcome, None);
        if let Some(key) = held {
            self.release_placeholder(h, key);
        }
        self.fill_workers(h);
    }

    /// Sends an answer back to the caller. An executed request's answer may
    /// be lost (`response_loss`) or turned into a reset (`reset`).
    pub(super) fn reply(&mut self, id: Id, mut outcome: Outcome, retry_after: Option<Nanos>) {
        let now = self.q.now();
        let mut req = self.requests.get(id).expect("live request");
        if req.limit.is_some() {
            self.limit_sample(id, outcome);
            req = self.requests.get(id).expect("live request");
        }
        let (svc, rkey, edge, executed) = (req.service as usize, req.rkey, req.edge as usize, req.phase().executed());
        let replica = self.hosts[req.host as usize].replica;
        if executed {
            for (fi, f) in self.s.faults.iter().enumerate() {
                if !f.hits(svc, replica, now) {
                    continue;
                }
                match f.kind {
                    FaultKind::ResponseLoss { probability }
                        if self.rng.unit(&[purpose::FAULT, rkey, fi as u64]) < probability =>
                    {
                        // The answer never arrives: the request stays until its
                        // caller times out (or leaves now if it already has).
                        let r = self.requests.get_mut(id).expect("live");
                        if r.abandoned() {
                            self.leave(id);
                        } else {
                            r.to(Phase::Lost);
                        }
                        return;
                    }
                    FaultKind::Reset { probability }
                        if self.rng.unit(&[purpose::FAULT, rkey, fi as u64]) < probability =>
                    {
                        outcome = Outcome::Reset;
                    }
                    _ => {}
                }
            }
        }
        let lat = self.s.edges[edge].latency.sample(&self.rng, &[purpose::LATENCY_BACK, rkey]);
        let r = self.requests.get_mut(id).expect("live");
        r.answer = outcome;
        r.retry_after = retry_after;
        r.to(Phase::Answered);
        if lat == 0 {
            // No latency: no event; it reaches its caller right after this step.
            self.immediate.push_back(Event::Reply { req: id });
        } else if matches!(self.s.edges[edge].latency, crate::model::Dist::Const(_)) {
            self.q.schedule_fixed(lat, Event::Reply { req: id });
        } else {
            self.q.schedule_in(lat, Event::Reply { req: id });
        }
    }
}
