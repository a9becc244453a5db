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
        let (svc, rkey, intent) = (req.service as usize, req.rkey, req.intent);
        if req.cancelled {
            // Its caller cancelled it on the way.
            self.leave(id);
            return;
        }
        if now < self.services[svc].down_until {
            // The service is down after a crash: the connection is refused.
            self.reply(id, Outcome::ConnectError, None);
            return;
        }
        self.m.reached(svc, now);
        if let Some(it) = self.intents.get(intent).filter(|it| it.in_window) {
            self.m.classes[it.client as usize].service_arrivals[svc] += 1;
        }
        for (fi, f) in self.s.faults.iter().enumerate() {
            if f.target != svc || now < f.start || now >= f.end {
                continue;
            }
            match f.kind {
                FaultKind::Error { status, probability, retry_after }
                    if self.rng.unit(&[purpose::FAULT, rkey, fi as u64]) < probability =>
                {
                    self.reply(id, Outcome::Status(status), retry_after);
                    return;
                }
                FaultKind::Outage => {
                    self.reply(id, Outcome::ConnectError, None);
                    return;
                }
                _ => {}
            }
        }
        if !self.rate_limit_admits(svc) {
            let limit = self.s.services[svc].rate_limit.expect("limited");
            self.reply(id, Outcome::Status(limit.status), limit.retry_after);
            return;
        }
        if self.services[svc].busy < self.workers_now(svc) && self.services[svc].queue.is_empty() {
            self.start(id);
        } else {
            self.enqueue(id);
            self.fill_workers(svc);
        }
    }

    /// Accounts service `svc`'s queue and busy workers up to `now`.
    pub(super) fn touch_service(&mut self, svc: usize, now: Nanos) {
        let st = &mut self.services[svc];
        let (from, qlen, busy) = (st.last_change, st.queue.len(), st.busy);
        st.last_change = now;
        self.m.service_state(svc, from, now, qlen, busy);
    }

    /// A request gets a worker.
    pub(super) fn start(&mut self, id: Id) {
        let now = self.q.now();
        let svc = self.requests.get(id).expect("live request").service as usize;
        self.touch_service(svc, now);
        self.services[svc].busy += 1;
        self.requests.get_mut(id).expect("live").at_service = true;
        self.begin(id);
    }

    /// With a worker: the ledger is consulted, then the request's own work
    /// starts (and, with optimistic concurrency, it reads its row's version).
    pub(super) fn begin(&mut self, id: Id) {
        if !self.ledger_admits(id) {
            return;
        }
        let req = self.requests.get(id).expect("live request");
        let svc = req.service as usize;
        let demand = self.s.services[svc].service_time.sample(&self.rng, &[purpose::SERVICE, req.rkey]);
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
        r.work_start = self.q.now();
        r.executed = true;
        r.row = row;
        r.version = version;
        if matches!(self.s.services[svc].service_time, crate::model::Dist::Const(_)) {
            self.q.schedule_fixed(demand, Event::Done { req: id });
        } else {
            self.q.schedule_in(demand, Event::Done { req: id });
        }
    }

    /// The request's own work is done: account it, then go on with its plan.
    pub(super) fn on_done(&mut self, id: Id) {
        let now = self.q.now();
        // A crash may have reset the request meanwhile.
        let Some(req) = self.requests.get(id).filter(|r| !r.killed) else {
            return;
        };
        let (svc, demand, abandoned, intent) = (req.service as usize, req.demand, req.abandoned, req.intent);
        if let Some(it) = self.intents.get(intent).filter(|it| it.in_window) {
            let class = &mut self.m.classes[it.client as usize];
            class.work_ns += demand as f64;
            self.m.service_work_ns[svc] += demand as f64;
            if abandoned {
                class.wasted_ns += demand as f64;
                self.m.service_wasted_ns[svc] += demand as f64;
            }
        }
        if abandoned {
            self.m.series.at(now).wasted[svc] += 1;
        }
        self.advance(id);
    }

    /// The request is finished at its service: the worker is released and
    /// the answer sent.
    pub(super) fn finish_request(&mut self, id: Id, outcome: Outcome) {
        let now = self.q.now();
        let r = self.requests.get_mut(id).expect("live request");
        r.at_service = false;
        let (svc, held) = (r.service as usize, r.ledger_key.filter(|_| !r.committed));
        self.touch_service(svc, now);
        self.services[svc].busy -= 1;
        self.reply(id, outcome, None);
        if let Some(key) = held {
            self.release_placeholder(svc, key);
        }
        self.fill_workers(svc);
    }

    /// Sends an answer back to the caller. An executed request's answer may
    /// be lost (`response_loss`) or turned into a reset (`reset`).
    pub(super) fn reply(&mut self, id: Id, mut outcome: Outcome, retry_after: Option<Nanos>) {
        let now = self.q.now();
        let req = self.requests.get(id).expect("live request");
        let (svc, rkey, edge, executed) = (req.service as usize, req.rkey, req.edge as usize, req.executed);
        if executed {
            for (fi, f) in self.s.faults.iter().enumerate() {
                if f.target != svc || now < f.start || now >= f.end {
                    continue;
                }
                match f.kind {
                    FaultKind::ResponseLoss { probability }
                        if self.rng.unit(&[purpose::FAULT, rkey, fi as u64]) < probability =>
                    {
                        // The answer never arrives: the request stays until its
                        // caller times out (or leaves now if it already has).
                        let r = self.requests.get_mut(id).expect("live");
                        if r.abandoned {
                            self.leave(id);
                        } else {
                            r.lost = true;
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
        r.answered = true;
        if matches!(self.s.edges[edge].latency, crate::model::Dist::Const(_)) {
            self.q.schedule_fixed(lat, Event::Reply { req: id });
        } else {
            self.q.schedule_in(lat, Event::Reply { req: id });
        }
    }
}
