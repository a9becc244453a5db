//! Ending intents: the client's report, the trace, and side effects counted
//! once every request of the intent has left.

use super::*;

impl World<'_> {
    /// A request leaves the system: the intent may now be settled.
    pub(super) fn leave(&mut self, id: Id) {
        let Some(req) = self.requests.remove(id) else {
            return;
        };
        let Some(it) = self.intents.get_mut(req.intent) else {
            return;
        };
        it.outstanding -= 1;
        if it.done && it.outstanding == 0 {
            let it = self.intents.remove(req.intent).expect("live");
            self.settle_effects(&it);
        }
    }

    /// Records the current attempt of a traced intent.
    pub(super) fn trace(&mut self, id: Id, outcome: Outcome, decision: TraceDecision) {
        let it = self.intents.get(id).expect("live intent");
        if !it.traced {
            return;
        }
        let edge = self.s.clients[it.client as usize].edge as u32;
        let remaining_deadline =
            (it.deadline_at != NEVER).then(|| it.deadline_at.saturating_sub(it.sent_at));
        let (client, instance) = (it.client as usize, it.instance);
        let budget = self.clients[client]
            .budget(instance)
            .and_then(|b| b.level());
        let record = TraceRecord {
            client: it.client,
            intent: it.seq,
            edge,
            attempt: it.attempts,
            sent: it.sent_at,
            wait: if it.attempts > 1 { it.prev_wait } else { 0 },
            trigger: it.last_outcome,
            remaining_deadline,
            outcome,
            decision,
            budget,
        };
        self.m.trace.push(record);
    }

    /// The intent has ended, as the client reports it.
    pub(super) fn finish(&mut self, id: Id, ok: bool, failure: String) {
        let now = self.q.now();
        let it = self.intents.get_mut(id).expect("live intent");
        it.done = true;
        it.ok = ok;
        let latency = now - it.arrived;
        let (in_window, settled) = (it.in_window, it.outstanding == 0);
        let (client, instance) = (it.client as usize, it.instance);
        if ok {
            self.m.series.record_success(now, latency);
        }
        if in_window {
            if ok {
                self.m.ok += 1;
                self.m.latency.record(latency);
            } else {
                *self.m.failures.entry(failure).or_insert(0) += 1;
            }
        }
        if settled {
            let it = self.intents.remove(id).expect("live");
            self.settle_effects(&it);
        }
        if matches!(
            self.s.clients[client].mode,
            crate::config::ClientMode::Closed { .. }
        ) {
            let round = self.clients[client].rounds[instance as usize];
            self.schedule_think(client, instance, round);
        }
    }

    /// Counts an intent's side effects once all of its requests have left.
    pub(super) fn settle_effects(&mut self, it: &Intent) {
        if !it.in_window || it.commits == 0 {
            return;
        }
        let op = self.s.clients[it.client as usize].operation;
        if it.commits > 1 && !self.s.operations[op].idempotent {
            self.m.duplicates += 1;
        }
        if !it.ok {
            self.m.orphan_commits += it.commits as u64;
        }
    }
}
