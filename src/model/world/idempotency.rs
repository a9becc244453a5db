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
        let (svc, l) = (req.service as usize, self.hosts[req.host as usize].ledger as usize);
        let (Some(key), Some(ledger)) = (req.idem_key, self.services[svc].ledgers.get_mut(l).map(|l| &mut l.ledger))
        else {
            return true;
        };
        let caller = match self.s.edges[req.edge as usize].caller {
            Caller::Client(c) => c as u64,
            Caller::Service { service, .. } => (1 << 32) | service as u64,
        };
        let scope = hash_words(0, &[purpose::SCOPE, caller, req.operation as u64, key]);
        let it = self.intents.get(req.intent).expect("live intent");
        let (tally, owner) = (it.tally, (it.client, it.seq));
        let lookup = ledger.lookup(now, scope, req.fingerprint, owner);
        let counts = self.m.counts(tally);
        match lookup {
            Lookup::Execute => {}
            Lookup::Recover => counts.ledger_recoveries += 1,
            Lookup::Replay(answer) => {
                counts.ledger_replays += 1;
                self.finish_request(id, answer);
                return false;
            }
            Lookup::Reject => {
                counts.ledger_rejects += 1;
                self.finish_request(id, Outcome::Status(422));
                return false;
            }
            Lookup::Conflict => {
                counts.ledger_conflicts += 1;
                self.finish_request(id, Outcome::Status(409));
                return false;
            }
            Lookup::Wait => {
                self.services[svc].ledgers[l].waiters.entry(scope).or_default().push(id);
                return false;
            }
        }
        self.requests.get_mut(id).expect("live").ledger_key = Some(scope);
        true
    }

    /// The business write of the request holding `key` at host `h`
    /// happened: complete the record now (atomic) or after `record_delay`.
    pub(super) fn record_result(&mut self, h: usize, key: u64) {
        let host = &self.hosts[h];
        let Some(l) = self.services[host.service as usize].ledgers.get_mut(host.ledger as usize) else { return };
        l.ledger.written(key);
        let l = &self.services[host.service as usize].ledgers[host.ledger as usize];
        if l.ledger.spec().atomic {
            self.complete_record(h, key);
        } else {
            let delay = l.ledger.spec().record_delay;
            let write = self.writes.insert(PendingWrite { host: h as u32, key, epoch: host.epoch });
            self.q.schedule_in(delay, Event::RecordWrite { write });
        }
    }

    pub(super) fn on_record_write(&mut self, write: Id) {
        let Some(w) = self.writes.remove(write) else {
            return;
        };
        let h = w.host as usize;
        // A crash between the business write and the record loses the record.
        if self.hosts[h].epoch == w.epoch {
            self.complete_record(h, w.key);
        }
    }

    /// Completes a record in host `h`'s ledger with `ok` and answers the
    /// duplicates waiting for it.
    fn complete_record(&mut self, h: usize, key: u64) {
        let (svc, l) = (self.hosts[h].service as usize, self.hosts[h].ledger as usize);
        let Some(ls) = self.services[svc].ledgers.get_mut(l) else { return };
        ls.ledger.complete(key, Outcome::Ok);
        for waiter in ls.waiters.remove(&key).unwrap_or_default() {
            let tally = self.tally(self.requests.get(waiter).expect("waiting request").intent);
            self.m.counts(tally).ledger_replays += 1;
            self.finish_request(waiter, Outcome::Ok);
        }
    }

    /// A request that held a placeholder finished without its business
    /// write: the placeholder goes and the waiting duplicates try again.
    pub(super) fn release_placeholder(&mut self, h: usize, key: u64) {
        let (svc, l) = (self.hosts[h].service as usize, self.hosts[h].ledger as usize);
        let Some(ls) = self.services[svc].ledgers.get_mut(l) else { return };
        ls.ledger.abandon(key);
        for waiter in ls.waiters.remove(&key).unwrap_or_default() {
            self.begin(waiter);
        }
    }

    /// A `crash` fault: each host it hits resets what it holds and is down
    /// until the fault's window ends; a memory ledger forgets everything.
    pub(super) fn on_crash(&mut self, fault: usize) {
        let f = &self.s.faults[fault];
        let svc = f.target;
        let first = self.services[svc].first_host as usize;
        for h in first..first + self.s.services[svc].hosts.replicas as usize {
            if f.host.is_none_or(|r| r == self.hosts[h].replica) {
                self.crash_host(h, f.end);
            }
        }
    }

    /// Host `h` crashes now and is down until `until`: what it holds is
    /// reset and a memory ledger forgets everything.
    pub(super) fn crash_host(&mut self, h: usize, until: Nanos) {
        let now = self.q.now();
        self.touch_host(h, now);
        let st = &mut self.hosts[h];
        st.down_until = st.down_until.max(until);
        st.epoch += 1;
        st.busy = 0;
        let (svc, l) = (st.service as usize, st.ledger as usize);
        let queued: Vec<Id> = st.queue.drain(..).map(|(id, _)| id).collect();
        // A shared (durable) ledger survives; its waiters on this host are reset below.
        if let Some(ls) = self.services[svc].ledgers.get_mut(l) {
            if self.s.services[svc].hosts.replicas == 1 || !ls.ledger.spec().durable {
                ls.waiters.clear();
            } else {
                let requests = &self.requests;
                for w in ls.waiters.values_mut() {
                    w.retain(|&r| requests.get(r).is_some_and(|q| q.host as usize != h));
                }
            }
            ls.ledger.crash();
        }
        let inside: Vec<Id> = self
            .requests
            .ids()
            .into_iter()
            .filter(|&r| self.requests.get(r).is_some_and(|q| q.host as usize == h && q.phase().holds_worker()))
            .collect();
        for id in queued.into_iter().chain(inside) {
            let r = self.requests.get_mut(id).expect("live");
            r.to(Phase::Reset);
            r.done_at = NEVER;
            self.reply(id, Outcome::Reset, None);
        }
    }
}
