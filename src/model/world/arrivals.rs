//! Intents arriving: open-loop Poisson arrivals with a rate schedule.

use super::*;

impl World<'_> {
    pub(super) fn schedule_next_arrival(&mut self, c: usize, from: Nanos) {
        let spec = &self.s.clients[c];
        let mut t = from;
        loop {
            let (rate, next_change) = spec.rate_at(t);
            let r = rate * self.s.load_scale;
            if r > 0.0 {
                let gap = -self.clients[c].arrivals.unit().ln() / r;
                let at = t.saturating_add(from_secs_f64(gap));
                if next_change.is_none_or(|nc| at < nc) {
                    if at < self.s.duration {
                        self.q.schedule_at(at, Event::Arrival { client: c as u32 });
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

    pub(super) fn on_arrival(&mut self, c: usize) {
        let now = self.q.now();
        let spec = &self.s.clients[c];
        let seq = self.clients[c].next_seq;
        self.clients[c].next_seq += 1;
        let in_window = self.m.in_window(now);
        let deadline_at = if spec.policy.deadline == NEVER {
            NEVER
        } else {
            now.saturating_add(spec.policy.deadline)
        };
        let id = self.intents.insert(Intent {
            client: c as u32,
            seq,
            arrived: now,
            deadline_at,
            attempts: 0,
            current: None,
            outstanding: 0,
            done: false,
            ok: false,
            in_window,
            commits: 0,
            prev_wait: 0,
            sent_at: now,
            last_outcome: None,
            instance: if self.clients[c].budgets.len() > 1 {
                (self.rng.unit(&[purpose::INSTANCE, c as u64, seq])
                    * self.clients[c].budgets.len() as f64) as u32
            } else {
                0
            },
            retry_cost: 0.0,
            traced: self.options.trace_fraction > 0.0
                && self.rng.unit(&[purpose::TRACE, c as u64, seq]) < self.options.trace_fraction,
        });
        if in_window {
            self.m.intents += 1;
            self.m.client_intents[c] += 1;
        }
        self.m.series.at(now).offered += 1;
        self.send(id);
        self.schedule_next_arrival(c, now);
    }
}
