//! Ending intents: the client's report, the trace, and side effects counted
//! once every request and relay of the intent has left.

use super::*;
use crate::metrics::TraceNote;

/// What the trace says of one attempt besides its outcome and decision.
pub(super) struct TracedAttempt {
    pub(super) attempt: u32,
    pub(super) sent: Nanos,
    pub(super) wait: Nanos,
    pub(super) trigger: Option<Outcome>,
    pub(super) copy: Option<u32>,
    pub(super) note: Option<TraceNote>,
    /// The budget's level once the guards learnt this attempt's end.
    pub(super) budget: Option<f64>,
}

impl World<'_> {
    /// Where the counts of intent `id` go ([`Tally::NOWHERE`] once it is gone).
    #[inline]
    pub(super) fn tally(&self, id: Id) -> Tally {
        self.intents.get(id).map_or(Tally::NOWHERE, |it| it.tally)
    }

    /// A request leaves the system: its intent may now be settled.
    pub(super) fn leave(&mut self, id: Id) {
        let Some((active, host, intent)) = self.requests.remove_with(id, |r| (r.active, r.host, r.intent)) else {
            return;
        };
        if active {
            self.host_released(host as usize);
        }
        if let Some(it) = self.intents.get_mut(intent) {
            it.outstanding -= 1;
        }
        self.try_settle(intent);
    }

    /// Frees an intent whose client has its answer and whose requests and
    /// relays have all left, counting its side effects.
    pub(super) fn try_settle(&mut self, id: Id) {
        if self.intents.get(id).is_some_and(|it| it.done && it.outstanding == 0) {
            let it = self.intents.remove(id).expect("live");
            self.settle_effects(&it);
        }
    }

    /// Whether any intent of this run is traced (without a trace, the
    /// attempt records are not even looked up).
    pub(super) fn tracing(&self) -> bool {
        self.options.trace_fraction > 0.0
    }

    /// Records one attempt of a call of a traced intent.
    pub(super) fn push_trace(&mut self, id: Id, a: TracedAttempt, outcome: Outcome, decision: TraceDecision) {
        if !self.tracing() {
            return;
        }
        let call = self.calls.get(id).expect("live call");
        let it = self.intents.get(call.intent).expect("live intent");
        if !it.traced {
            return;
        }
        let deadline_at = call.machine.st.deadline_at;
        let remaining_deadline = (deadline_at != NEVER).then(|| deadline_at.saturating_sub(a.sent));
        let budget = a.budget;
        let record = TraceRecord {
            client: it.client,
            intent: it.seq,
            edge: call.edge,
            attempt: a.attempt,
            sent: a.sent,
            answered: self.q.now(),
            wait: a.wait,
            trigger: a.trigger,
            remaining_deadline,
            outcome,
            decision,
            budget,
            copy: a.copy,
            note: a.note,
        };
        self.m.trace.push(record);
    }

    /// The intent has ended, as the client reports it.
    pub(super) fn finish(&mut self, id: Id, ok: bool, failure: String) {
        let now = self.q.now();
        let it = self.intents.get_mut(id).expect("live intent");
        it.done = true;
        it.ok = ok;
        it.ended = now;
        let latency = now - it.arrived;
        let (tally, client, instance, owner) = (it.tally, it.client as usize, it.instance, (it.client, it.seq));
        let deadline = self.s.clients[client].policy.deadline;
        self.m.intent_ended(tally, owner, now, latency, ok, failure, deadline);
        self.try_settle(id);
        if matches!(self.s.clients[client].mode, crate::config::ClientMode::Closed { .. }) {
            let round = self.clients[client].rounds[instance as usize];
            self.schedule_think(client, instance, round);
        }
    }

    /// Counts an intent's side effects once all of its requests have left.
    pub(super) fn settle_effects(&mut self, it: &Intent) {
        let settled = crate::metrics::Settled {
            effects: &it.effects[..self.s.effect_kinds.len()],
            ok: it.ok,
            lost: it.lost as u64,
            events_sent: it.events_sent as u64,
            owner: (it.client, it.seq),
        };
        self.m.counts(it.tally).settle(it.tally.client(), settled);
    }
}
