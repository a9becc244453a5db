//! Idempotency ledgers at work, and crashes: a request with a key consults
//! its service's ledger before it works; the record completes with the
//! business write (or `record_delay` later when not atomic); a crash resets
//! what is in the service and empties a memory ledger.

use super::*;

impl World<'_> {
    /// Consults the ledger for a request that has a worker. Returns whether
    /// it is to do its work; otherwise it has been answered or is waiting.
    pub(super) fn ledger_admits(&mut self, id: Id) -> bool {
        let now = self.q.now();
        let req = self.requests.get(id).expect("live request");
        let svc = req.service as usize;
        let (Some(key), Some(ledger)) = (req.idem_key, self.services[svc].ledger.as_mut()) else {
            return true;
        };
        let caller = match self.s.edges[req.edge as usize].caller {
            Caller::Client(c) => c as u64,
            Caller::Service { service, .. } => (1 << 32) | service as u64,
        };
        let scope = hash_words(0, &[purpose::SCOPE, caller, req.operation as u64, key]);
        let it = self.intents.get(req.intent).expect("live intent");
        let (in_window, owner) = (it.in_window, (it.client, it.seq));
        let lookup = ledger.lookup(now, scope, req.fingerprint, owner);
        let count = |n: &mut u64| {
            if in_window {
                *n += 1;
            }
        };
        match lookup {
            Lookup::Execute => {}
            Lookup::Recover => count(&mut self.m.ledger_recoveries),
            Lookup::Replay(answer) => {
                count(&mut self.m.ledger_replays);
                self.finish_request(id, answer);
                return false;
            }
            Lookup::Reject => {
                count(&mut self.m.ledger_rejects);
                self.finish_request(id, Outcome::Status(422));
                return false;
            }
            Lookup::Conflict => {
                count(&mut self.m.ledger_conflicts);
                self.finish_request(id, Outcome::Status(409));
                return false;
            }
            Lookup::Wait => {
                self.services[svc].waiters.entry(scope).or_default().push(id);
                return false;
            }
        }
        self.requests.get_mut(id).expect("live").ledger_key = Some(scope);
        true
    }

    /// The business write of the request holding `key` at `svc` happened:
    /// complete the record now (atomic) or after `record_delay`.
    pub(super) fn record_result(&mut self, svc: usize, key: u64) {
        let st = &self.services[svc];
        let Some(ledger) = &st.ledger else { return };
        if ledger.spec().atomic {
            self.complete_record(svc, key);
        } else {
            let delay = ledger.spec().record_delay;
            let write = self.writes.insert(PendingWrite { service: svc as u32, key, epoch: st.epoch });
            self.q.schedule_in(delay, Event::RecordWrite { write });
        }
    }

    pub(super) fn on_record_write(&mut self, write: Id) {
        let Some(w) = self.writes.remove(write) else {
            return;
        };
        let svc = w.service as usize;
        // A crash between the business write and the record loses the record.
        if self.services[svc].epoch == w.epoch {
            self.complete_record(svc, w.key);
        }
    }

    /// Completes a record with `ok` and answers the duplicates waiting for it.
    fn complete_record(&mut self, svc: usize, key: u64) {
        if let Some(l) = self.services[svc].ledger.as_mut() {
            l.complete(key, Outcome::Ok);
        }
        for waiter in self.services[svc].waiters.remove(&key).unwrap_or_default() {
            if self
                .intents
                .get(self.requests.get(waiter).expect("waiting request").intent)
                .is_some_and(|it| it.in_window)
            {
                self.m.ledger_replays += 1;
            }
            self.finish_request(waiter, Outcome::Ok);
        }
    }

    /// A request that held a placeholder finished without its business
    /// write: the placeholder goes and the waiting duplicates try again.
    pub(super) fn release_placeholder(&mut self, svc: usize, key: u64) {
        if let Some(l) = self.services[svc].ledger.as_mut() {
            l.abandon(key);
        }
        for waiter in self.services[svc].waiters.remove(&key).unwrap_or_default() {
            self.begin(waiter);
        }
    }

    /// A `crash` fault: the service resets what it holds and is down until
    /// the fault's window ends; a memory ledger forgets everything.
    pub(super) fn on_crash(&mut self, fault: usize) {
        let now = self.q.now();
        let f = &self.s.faults[fault];
        let svc = f.target;
        self.touch_service(svc, now);
        let st = &mut self.services[svc];
        st.down_until = st.down_until.max(f.end);
        st.epoch += 1;
        st.busy = 0;
        st.waiters.clear();
        if let Some(l) = st.ledger.as_mut() {
            l.crash();
        }
        let queued: Vec<Id> = st.queue.drain(..).map(|(id, _)| id).collect();
        let inside: Vec<Id> = self
            .requests
            .ids()
            .into_iter()
            .filter(|&r| self.requests.get(r).is_some_and(|q| q.service as usize == svc && q.at_service))
            .collect();
        for id in queued.into_iter().chain(inside) {
            let r = self.requests.get_mut(id).expect("live");
            r.killed = true;
            r.at_service = false;
            r.executed = false;
            self.reply(id, Outcome::Reset, None);
        }
    }
}
