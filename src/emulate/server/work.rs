//! A request's work at its host once it has a worker: its own work
//! (slept, stretched by slowdowns), its plan (calls before the commit, the
//! commit with optimistic concurrency and consumer dedup, calls after it,
//! outbox events), and the status queries and compensations that look its
//! intent's records up instead.

use super::*;

impl Host {
    /// The look-up of call `index`'s cache for intent `intent` (the item
    /// is the intent's: its retries ask for the same key): `None` without a
    /// cache, `Some(None)` on a hit, `Some(Some(key))` on a miss.
    fn cache_lookup(&self, intent: u64, index: usize) -> Option<Option<u32>> {
        let cache = self.caches[index].as_ref()?;
        let (client, seq) = self.rec.lock().owner(intent);
        let mut stream = self.rng.stream(&[CACHE_KEY, client as u64, seq, self.svc as u64, index as u64]);
        let now = self.rec.clock.now();
        let (key, hit) = {
            let c = cache.lock().unwrap_or_else(|e| e.into_inner());
            let key = c.key(&mut stream);
            (key, c.hit(key, now))
        };
        let mut g = self.rec.lock();
        let tally = g.tally(intent);
        let counts = g.m.counts(tally);
        counts.cache_lookups[self.svc] += 1;
        counts.cache_hits[self.svc] += hit as u64;
        Some(if hit { None } else { Some(key) })
    }

    /// With optimistic concurrency, the row of request `a`'s intent (by its
    /// client class and number, as the model draws it) and its version now.
    fn read_row(&self, a: &Arrival) -> Option<(usize, u64)> {
        let versions = self.versions.as_ref()?;
        let (client, seq) = self.rec.lock().owner(a.intent);
        let v = versions.lock().unwrap_or_else(|e| e.into_inner());
        let row = (hash_words(0, &[ROW, client as u64, seq]) % v.len() as u64) as usize;
        Some((row, v[row]))
    }

    /// The commit's version check: whether the row read is unchanged (its
    /// version then goes up by one). Without optimistic concurrency, true.
    fn write_row(&self, read: Option<(usize, u64)>) -> bool {
        let (Some(versions), Some((row, version))) = (&self.versions, read) else {
            return true;
        };
        let mut v = versions.lock().unwrap_or_else(|e| e.into_inner());
        if v[row] != version {
            return false;
        }
        v[row] += 1;
        true
    }
    /// The idempotency key a downstream call sends.
    pub(super) fn downstream_key(&self, mode: KeyMode, a: &Arrival, edge: usize) -> Option<u64> {
        match mode {
            KeyMode::Forward => a.body.key,
            KeyMode::Derive => Some(hash_words(a.intent, &[KEY, edge as u64])),
            KeyMode::None => None,
        }
    }

    /// A status query or a compensation with a worker: it looks its
    /// intent's business record up for its operation's `status_time`
    /// (slowed down as any work). A query answers `ok` when a request of
    /// the intent passed its commit here, 404 otherwise; a compensation
    /// undoes what the intent committed here and answers `ok`.
    pub(super) async fn look_up(&self, a: &Arrival, stop: &mut Interrupts) -> Result<Outcome, Stopped> {
        self.own_work(a, self.s.operations[a.operation].status_time, stop).await?;
        if a.undo {
            self.rec.lock().undo(self.svc, a.intent, self.s.services[self.svc].commits);
            return Ok(Outcome::Ok);
        }
        let found = self.rec.lock().has_committed(self.svc, a.intent);
        Ok(if found { Outcome::Ok } else { crate::policy::decision::NOT_FOUND })
    }

    /// Sleeps `demand` of own work (stretched by the slowdowns in force)
    /// and counts it: done, or, when the caller closed the connection,
    /// wasted so far and cancelled for the rest. A crash's unfinished work
    /// does not count.
    pub(super) async fn own_work(&self, a: &Arrival, mut demand: Nanos, stop: &mut Interrupts) -> Result<(), Stopped> {
        let (s, rec) = (&*self.s, &*self.rec);
        let start = rec.clock.now();
        let factor: f64 = s
            .faults
            .iter()
            .filter(|f| f.hits(self.svc, self.replica, start))
            .filter_map(|f| if let FaultKind::Slowdown { factor } = f.kind { Some(factor) } else { None })
            .product();
        if factor != 1.0 {
            demand = (demand as f64 * factor) as Nanos;
        }
        match stop.run(rec.sleep(demand)).await {
            Ok(()) => {}
            Err(Stopped::Crash) => return Err(Stopped::Crash),
            Err(Stopped::Gone) => {
                let now = rec.clock.now();
                let done = now.saturating_sub(start).min(demand);
                let mut g = rec.lock();
                let tally = g.tally(a.intent);
                let (done, left) = (crate::engine::nanos_f64(done), crate::engine::nanos_f64(demand - done));
                g.m.work_cancelled(tally, self.svc, self.slot, done, left, now);
                return Err(Stopped::Gone);
            }
        }
        let worked = rec.clock.now().saturating_sub(start);
        let mut g = rec.lock();
        let (abandoned, tally) = (g.abandoned(a.attempt), g.tally(a.intent));
        g.m.work_done(tally, self.svc, self.slot, crate::engine::nanos_f64(worked), abandoned, start + worked);
        Ok(())
    }

    /// The request's own work, then its plan: calls before the commit, the
    /// commit, calls after it. Returns the answer's outcome, or why it
    /// stopped first (a cancelled request's placeholder is gone and its
    /// work counted; a crash's is left as the crash left it).
    pub(super) async fn work(
        &self,
        a: &Arrival,
        scope: Option<u64>,
        stop: &mut Interrupts,
    ) -> Result<Outcome, Stopped> {
        let (intent, operation) = (a.intent, a.operation);
        let (s, rec) = (&*self.s, &*self.rec);
        let spec = &s.services[self.svc];
        // Optimistic concurrency: the intent's row and its version as read now.
        let read = self.read_row(a);
        let mut demand = spec.service_time.sample(&self.rng, &[SERVICE, a.draw]);
        if spec.per_inflight > 0 {
            let others = self.door().busy().saturating_sub(1) as u64;
            demand = demand.saturating_add(spec.per_inflight.saturating_mul(others));
        }
        if let Err(why) = self.own_work(a, demand, stop).await {
            // Stopped in its own work by its caller: its placeholder goes.
            if why == Stopped::Gone {
                self.forget(scope);
            }
            return Err(why);
        }
        let net = self.net.get().expect("connected before the first arrival").clone();
        // A downstream call goes on when the request that made it stops.
        let call = |index: usize, call: &crate::config::CallSpec| {
            // A look-aside cache first: a hit skips the call; a miss that
            // succeeds fills the entry.
            let fill = self.cache_lookup(a.intent, index);
            let hit = fill == Some(None);
            let caches = self.caches.clone();
            let body = Body {
                key: self.downstream_key(call.key, a, call.edge),
                fingerprint: hash_words(a.body.fingerprint, &[call.edge as u64]),
            };
            let (net, edge, op) = (net.clone(), call.edge, call.operation.unwrap_or(operation));
            let upstream = if call.propagate_deadline { a.expires } else { None };
            let via = call.via;
            tokio::spawn(async move {
                let outcome = match via {
                    _ if hit => return Outcome::Ok,
                    // Through a queue: the call publishes, and is done.
                    Some(q) => {
                        net.publish(q, crate::emulate::broker::Message { intent, edge, operation: op, body });
                        Outcome::Ok
                    }
                    None => net.downstream(edge, intent, op, body, upstream).await,
                };
                if outcome == Outcome::Ok
                    && let Some(Some(key)) = fill
                    && let Some(cache) = &caches[index]
                {
                    let now = net.rec.clock.now();
                    cache.lock().unwrap_or_else(|e| e.into_inner()).fill(key, now);
                }
                outcome
            })
        };
        for (i, c) in spec.calls.iter().enumerate().filter(|(_, c)| c.when == crate::config::When::BeforeCommit) {
            let outcome = match stop.run(call(i, c)).await {
                Ok(done) => done.unwrap_or(Outcome::Reset),
                Err(why) => {
                    if why == Stopped::Gone {
                        self.forget(scope);
                    }
                    return Err(why);
                }
            };
            if outcome != Outcome::Ok {
                self.forget(scope);
                // No commit; the failure travels up as the model maps it.
                return Ok(match outcome {
                    Outcome::Timeout => Outcome::Status(504),
                    Outcome::Status(503) | Outcome::Status(429) => Outcome::Status(503),
                    _ => Outcome::Status(502),
                });
            }
        }
        if !self.write_row(read) {
            // Another write landed on the row since this request read it.
            self.forget(scope);
            return Ok(Outcome::Status(412));
        }
        let applied = {
            let mut g = rec.lock();
            g.committed_at(self.svc, intent);
            // A deduplicating consumer applies an event id once: checked
            // and recorded with the commit, under one lock.
            let dedup = s.services.iter().flat_map(|sv| &sv.calls).any(|c| c.edge == a.edge && c.dedup);
            let fresh = !dedup || g.apply(intent, a.edge);
            if fresh
                && let Some(kind) = spec.commits
                && !s.operations[operation].idempotent
            {
                g.commit(intent, kind);
            }
            fresh
        };
        if let Some(scope) = scope {
            self.record(scope);
        }
        if applied {
            self.relay_outbox(a);
        }
        for (i, c) in spec.calls.iter().enumerate().filter(|(_, c)| c.when == crate::config::When::AfterCommit) {
            // Stopped, it no longer learns whether the call failed: no lost effect.
            if stop.run(call(i, c)).await?.unwrap_or(Outcome::Reset) != Outcome::Ok {
                let mut g = rec.lock();
                g.lose(intent);
                if !spec.reconcilers.is_empty() {
                    let body = Body {
                        key: self.downstream_key(c.key, a, c.edge),
                        fingerprint: hash_words(a.body.fingerprint, &[c.edge as u64]),
                    };
                    let what = Unresolved { intent, edge: c.edge, operation: c.operation.unwrap_or(operation), body };
                    g.unresolved(self.svc, rec.clock.now(), what);
                }
            }
        }
        Ok(Outcome::Ok)
    }
}
