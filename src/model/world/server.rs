//! The service's side: admission (faults, workers, queue, overload),
//! execution and answers.

use super::*;

impl World<'_> {
    /// Key words identifying a request for random draws: (client, seq, edge, attempt).
    pub(super) fn key_of(&self, req: &Request) -> [u64; 4] {
        let it = self
            .intents
            .get(req.intent)
            .expect("a request's intent lives until the request has left");
        [
            it.client as u64,
            it.seq,
            req.edge as u64,
            req.attempt as u64,
        ]
    }

    pub(super) fn on_reach(&mut self, id: Id) {
        let now = self.q.now();
        let Some(req) = self.requests.get(id) else {
            return;
        };
        let svc = req.service as usize;
        let key = self.key_of(req);
        if self.intents.get(req.intent).is_some_and(|it| it.in_window) {
            self.m.service_arrivals[svc] += 1;
        }
        for (fi, f) in self.s.faults.iter().enumerate() {
            if f.target != svc || now < f.start || now >= f.end {
                continue;
            }
            match f.kind {
                FaultKind::Error {
                    status,
                    probability,
                    retry_after,
                } => {
                    let u =
                        self.rng
                            .unit(&[purpose::FAULT, key[0], key[1], key[2], key[3], fi as u64]);
                    if u < probability {
                        self.reply(id, Outcome::Status(status), retry_after);
                        return;
                    }
                }
            }
        }
        let spec = &self.s.services[svc];
        if self.services[svc].busy < spec.workers {
            self.start(id);
        } else if spec
            .queue_limit
            .is_none_or(|l| self.services[svc].queue.len() < l as usize)
        {
            self.touch_service(svc, now);
            self.services[svc].queue.push_back(id);
        } else {
            self.reply(
                id,
                Outcome::Status(spec.overload.status),
                spec.overload.retry_after,
            );
        }
    }

    /// Accounts service `svc`'s queue and busy workers up to `now`.
    pub(super) fn touch_service(&mut self, svc: usize, now: Nanos) {
        let st = &mut self.services[svc];
        let (from, qlen, busy) = (st.last_change, st.queue.len(), st.busy);
        st.last_change = now;
        self.m.service_state(svc, from, now, qlen, busy);
    }

    pub(super) fn start(&mut self, id: Id) {
        let now = self.q.now();
        let req = self.requests.get(id).expect("live request");
        let svc = req.service as usize;
        let key = self.key_of(req);
        let demand = self.s.services[svc].service_time.sample(
            &self.rng,
            &[purpose::SERVICE, key[0], key[1], key[2], key[3]],
        );
        self.requests.get_mut(id).expect("live").demand = demand;
        self.touch_service(svc, now);
        self.services[svc].busy += 1;
        self.q.schedule_in(demand, Event::Done { req: id });
    }

    pub(super) fn on_done(&mut self, id: Id) {
        let now = self.q.now();
        let req = self.requests.get(id).expect("a request in service is live");
        let (svc, demand, abandoned, intent) =
            (req.service as usize, req.demand, req.abandoned, req.intent);
        self.touch_service(svc, now);
        self.services[svc].busy -= 1;
        let it = self.intents.get_mut(intent).expect("live intent");
        if self.s.services[svc].commits.is_some() {
            it.commits += 1;
        }
        if it.in_window {
            self.m.service_work_ns[svc] += demand as f64;
            if abandoned {
                self.m.service_wasted_ns[svc] += demand as f64;
            }
        }
        if abandoned {
            self.m.series.at(now).wasted[svc] += 1;
        }
        self.reply(id, Outcome::Ok, None);
        self.next_from_queue(svc);
    }

    pub(super) fn next_from_queue(&mut self, svc: usize) {
        let now = self.q.now();
        while let Some(next) = self.services[svc].queue.front().copied() {
            self.touch_service(svc, now);
            self.services[svc].queue.pop_front();
            let expired = self.requests.get(next).is_some_and(|r| r.abandoned);
            if self.s.services[svc].drop_expired && expired {
                self.leave(next);
                continue;
            }
            self.start(next);
            return;
        }
    }

    /// Sends an answer back to the caller.
    pub(super) fn reply(&mut self, id: Id, outcome: Outcome, retry_after: Option<Nanos>) {
        let req = self.requests.get(id).expect("live request");
        let key = self.key_of(req);
        let edge = req.edge as usize;
        let lat = self.s.edges[edge].latency.sample(
            &self.rng,
            &[purpose::LATENCY_BACK, key[0], key[1], key[2], key[3]],
        );
        let r = self.requests.get_mut(id).expect("live");
        r.answer = outcome;
        r.retry_after = retry_after;
        self.q.schedule_in(lat, Event::Reply { req: id });
    }
}
