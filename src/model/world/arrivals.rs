//! Intents arriving: open-loop Poisson arrivals with a rate schedule,
//! closed-loop instances with think times, and bursts.

use super::caller::Guard;
use super::*;
use crate::config::ClientMode;

impl<'s> World<'s> {
    /// Schedules the first arrivals of client class `c`.
    pub(super) fn schedule_first_arrivals(&mut self, c: usize) {
        let spec = &self.s.clients[c];
        match &spec.mode {
            ClientMode::Open(_) => self.schedule_next_open_arrival(c, 0),
            ClientMode::Closed { .. } => {
                for instance in 0..spec.count {
                    self.schedule_think(c, instance, 0);
                }
            }
            ClientMode::Burst { at, spread } => {
                for instance in 0..spec.count {
                    let u = self.rng.unit(&[purpose::ARRIVAL, c as u64, instance as u64]);
                    let t = at + (u * *spread as f64) as Nanos;
                    self.q.schedule_at(t, Event::Arrival { client: c as u32, instance });
                }
            }
        }
    }

    /// A closed-loop instance thinks before its next intent (round `round`).
    pub(super) fn schedule_think(&mut self, c: usize, instance: u32, round: u32) {
        let ClientMode::Closed { think_time } = &self.s.clients[c].mode else {
            return;
        };
        let think = think_time.sample(&self.rng, &[purpose::THINK, c as u64, instance as u64, round as u64]);
        let at = self.q.now().saturating_add(think);
        if at < self.s.duration {
            self.q.schedule_at(at, Event::Arrival { client: c as u32, instance });
        }
    }

    fn schedule_next_open_arrival(&mut self, c: usize, from: Nanos) {
        let ClientMode::Open(schedule) = &self.s.clients[c].mode else {
            return;
        };
        if let Some(ceiling) = &self.s.clients[c].thinned_from {
            return self.schedule_next_thinned_arrival(c, from, schedule, ceiling);
        }
        let mut t = from;
        loop {
            let (rate, next_change) = schedule.rate_at(t);
            let r = rate * self.s.load_scale;
            if r > 0.0 {
                let gap = -self.clients[c].arrivals.unit().ln() / r;
                let at = t.saturating_add(from_secs_f64(gap));
                if next_change.is_none_or(|nc| at < nc) {
                    if at < self.s.duration {
                        self.q.schedule_at(at, Event::Arrival { client: c as u32, instance: OPEN });
                    }
                    return;
                }
            }
            match next_change {
                Some(nc) if nc < self.s.duration => t = nc,
                _ => return,
            }
        }
    }

    /// The next arrival of a thinned client: candidates of the `ceiling`
    /// process, each kept with probability rate ÷ ceiling at its time; the
    /// intent takes the kept candidate's number.
    fn schedule_next_thinned_arrival(
        &mut self,
        c: usize,
        from: Nanos,
        schedule: &'s crate::config::RateSchedule,
        ceiling: &'s crate::config::RateSchedule,
    ) {
        let mut t = from;
        let mut candidate = self.clients[c].next_seq;
        loop {
            let (top, next_change) = ceiling.rate_at(t);
            let r = top * self.s.load_scale;
            if r > 0.0 {
                let gap = -self.clients[c].arrivals.unit().ln() / r;
                let at = t.saturating_add(from_secs_f64(gap));
                if next_change.is_none_or(|nc| at < nc) {
                    if at >= self.s.duration {
                        return;
                    }
                    let keep = schedule.rate_at(at).0 / top;
                    if keep >= 1.0 || self.rng.unit(&[purpose::THIN, c as u64, candidate]) < keep {
                        self.clients[c].next_seq = candidate;
                        self.q.schedule_at(at, Event::Arrival { client: c as u32, instance: OPEN });
                        return;
                    }
                    candidate += 1;
                    t = at;
                    continue;
                }
            }
            match next_change {
                Some(nc) if nc < self.s.duration => t = nc,
                _ => return,
            }
        }
    }

    /// An intent arrives from client class `c` (`instance` is [`OPEN`] for
    /// open-loop clients, whose instance is drawn).
    pub(super) fn on_arrival(&mut self, c: usize, instance: u32) {
        let now = self.q.now();
        let spec = &self.s.clients[c];
        let (seq, instance) = match spec.mode {
            ClientMode::Open(_) => {
                let seq = self.clients[c].next_seq;
                self.clients[c].next_seq += 1;
                let n = spec.stateful_instances();
                let instance =
                    if n > 1 { (self.rng.unit(&[purpose::INSTANCE, c as u64, seq]) * n as f64) as u32 } else { 0 };
                (seq, instance)
            }
            ClientMode::Closed { .. } => {
                let round = self.clients[c].rounds[instance as usize];
                self.clients[c].rounds[instance as usize] += 1;
                (((instance as u64) << 32) | round as u64, instance)
            }
            ClientMode::Burst { .. } => (instance as u64, instance),
        };
        let tally = self.m.tally(now, c as u32);
        // A client that reuses keys (a bug) sends an earlier intent's key with its own body.
        let reuse = spec.key_reuse_rate > 0.0
            && seq > 0
            && self.rng.unit(&[purpose::REUSE, c as u64, seq]) < spec.key_reuse_rate;
        let key = hash_words(0, &[purpose::KEY, c as u64, if reuse { seq - 1 } else { seq }]);
        let fingerprint = hash_words(0, &[purpose::BODY, c as u64, seq]);
        let intent = self.intents.insert(Intent {
            client: c as u32,
            seq,
            arrived: now,
            instance,
            tally,
            traced: self.options.trace_fraction > 0.0
                && self.rng.unit(&[purpose::TRACE, c as u64, seq]) < self.options.trace_fraction,
            done: false,
            ok: false,
            outstanding: 0,
            effects: [0; MAX_EFFECT_KINDS],
            lost: 0,
            events_sent: 0,
            applied: 0,
            key,
            ended: NEVER,
            unresolved: 0,
            committed_at: 0,
        });
        self.m.class(tally).intents += 1;
        self.m.series.record_arrival(now, c);
        if !self.first_allowed(Guard { owner: Owner::Client, edge: spec.edge, client: c, instance }) {
            // An open breaker fails the intent fast, without sending anything.
            self.finish(intent, false, "breaker_open (failed fast)".into());
        } else {
            let deadline_at =
                if spec.policy.deadline == NEVER { NEVER } else { now.saturating_add(spec.policy.deadline) };
            let idempotent = self.s.operations[spec.operation].idempotent;
            let call = self.calls.insert(Call {
                intent,
                edge: spec.edge as u32,
                owner: Owner::Client,
                operation: spec.operation as u32,
                idem_key: spec.idempotency_key.then_some(key),
                fingerprint,
                key: Self::root_key(c, seq, spec.edge),
                machine: Machine::new(
                    CallState::new(deadline_at, now, idempotent, spec.idempotency_key),
                    self.s.edge_policy(spec.edge).hedging.is_some(),
                ),
                current: None,
                tried: 0,
                fill: NO_FILL,
                throttle_wait: 0,
                committed: false,
                undo: false,
            });
            self.send(call);
        }
        if matches!(spec.mode, ClientMode::Open(_)) {
            self.schedule_next_open_arrival(c, now);
        }
    }
}
