//! Message queues (`[[queues]]`, a call with `via`): at-least-once delivery
//! with SQS semantics. A call through a queue publishes a message (the
//! publish always succeeds, at once) and is done. A visible message is
//! delivered as soon as a worker of its consumer service is free: the
//! delivery travels the call's edge like any request and is processed by
//! the consumer's plan (its commit, with the call's `dedup`). The
//! consumer's answer `ok` is the acknowledgement; it deletes the message
//! when it reaches the queue within the delivery's visibility timeout and
//! no later delivery was made. Otherwise, at the end of the visibility
//! timeout, the message is visible again and delivered again (while the
//! earlier delivery may still run), unless it has been delivered
//! `max_receives` times: then it goes to the dead-letter queue (a lost
//! effect). A message still in the queue after `retention` is dropped (a
//! lost effect). The intent stays open until its messages are gone.

use super::*;

/// One message in a queue.
#[derive(Clone, Debug)]
pub(super) struct Message {
    pub(super) intent: Id,
    /// The call's edge (publisher → consumer): its deliveries travel on it.
    pub(super) edge: u32,
    pub(super) operation: u32,
    pub(super) idem_key: Option<u64>,
    pub(super) fingerprint: u64,
    pub(super) queue: u32,
    pub(super) published: Nanos,
    /// Deliveries so far; the latest is the only one whose acknowledgement counts.
    pub(super) receives: u32,
    /// Visible in its queue (else a delivery of it is under way).
    pub(super) visible: bool,
    /// Its latest delivery has not reached the consumer yet.
    pub(super) in_transit: bool,
}

/// A queue: its visible messages in order, and deliveries on their way to
/// the consumer (counted against its free workers).
#[derive(Clone, Debug, Default)]
pub(super) struct QueueState {
    visible: VecDeque<Id>,
    in_transit: u32,
    /// Messages in the queue (published and not gone), and since when.
    depth: u32,
    since: Nanos,
}

impl World<'_> {
    /// The call `id` publishes a message to queue `q` instead of calling:
    /// the message carries what the call would send.
    pub(super) fn publish(&mut self, id: Id, q: usize) {
        let now = self.q.now();
        let call = self.calls.get(id).expect("live call");
        let message = Message {
            intent: call.intent,
            edge: call.edge,
            operation: call.operation,
            idem_key: call.idem_key,
            fingerprint: call.fingerprint,
            queue: q as u32,
            published: now,
            receives: 0,
            visible: true,
            in_transit: false,
        };
        if let Some(it) = self.intents.get_mut(call.intent) {
            it.outstanding += 1;
        }
        self.queue_depth(q, 1);
        let m = self.messages.insert(message);
        let tally = self.tally(self.messages.get(m).expect("live").intent);
        self.m.counts(tally).queue_published[q] += 1;
        let retention = self.s.queues[q].retention;
        if retention != NEVER {
            self.q.schedule_in(retention, Event::Retention { message: m });
        }
        self.queues[q].visible.push_back(m);
        self.deliver_visible(q);
    }

    /// Delivers visible messages of queue `q` while its consumer has free
    /// workers (not counting those deliveries on their way will take).
    pub(super) fn deliver_visible(&mut self, q: usize) {
        let consumer = self.s.queues[q].consumer;
        let first = self.services[consumer].first_host as usize;
        let hosts = first..first + self.s.services[consumer].hosts.replicas as usize;
        loop {
            let (mut taken, mut workers) = (self.queues[q].in_transit as usize, 0usize);
            for h in hosts.clone() {
                taken += self.hosts[h].busy as usize + self.hosts[h].queue.len();
                workers += self.workers_now(h) as usize;
            }
            if taken >= workers {
                return;
            }
            let Some(m) = self.queues[q].visible.pop_front() else {
                return;
            };
            // Dropped by its retention while it waited.
            if self.messages.get(m).is_some_and(|msg| msg.visible) {
                self.deliver(m);
            }
        }
    }

    /// Delivers message `m`: a request on its edge, given up by the queue
    /// (not cancelled) at the visibility timeout.
    fn deliver(&mut self, m: Id) {
        let now = self.q.now();
        let msg = self.messages.get_mut(m).expect("live message");
        msg.receives += 1;
        msg.visible = false;
        msg.in_transit = true;
        let (q, receipt, intent) = (msg.queue as usize, msg.receives, msg.intent);
        let visibility = self.s.queues[q].visibility_timeout;
        self.queues[q].in_transit += 1;
        let tally = self.tally(intent);
        self.m.counts(tally).queue_deliveries[q] += 1;
        let msg = self.messages.get(m).expect("live message");
        let idempotent = self.s.operations[msg.operation as usize].idempotent;
        let call = self.calls.insert(Call {
            intent,
            edge: msg.edge,
            owner: Owner::Delivery { message: m, receipt },
            operation: msg.operation,
            idem_key: msg.idem_key,
            fingerprint: msg.fingerprint,
            key: hash_words(msg.fingerprint, &[purpose::DELIVERY, msg.published, receipt as u64]),
            machine: Machine::new(CallState::new(NEVER, now, idempotent, msg.idem_key.is_some()), false),
            current: None,
            tried: 0,
            fill: NO_FILL,
            throttle_wait: 0,
            committed: false,
            undo: false,
        });
        self.calls.get_mut(call).expect("live").machine.st.attempts = 1;
        let req = self.transmit(call, visibility);
        self.calls.get_mut(call).expect("live").current = Some(req);
        self.q.schedule_in(visibility, Event::Visible { message: m, receipt });
    }

    /// A delivery of message `m` reached its consumer.
    pub(super) fn delivery_arrived(&mut self, m: Id) {
        if let Some(msg) = self.messages.get_mut(m).filter(|msg| msg.in_transit) {
            msg.in_transit = false;
            let q = msg.queue as usize;
            self.queues[q].in_transit -= 1;
        }
    }

    /// Delivery `receipt` of message `m` was answered with `outcome` (the
    /// answer reached the queue): `ok` from the latest delivery, within its
    /// visibility timeout, deletes the message.
    pub(super) fn delivery_answered(&mut self, call: Id, m: Id, receipt: u32, outcome: Outcome) {
        let now = self.q.now();
        self.calls.remove(call);
        let Some(msg) = self.messages.get(m) else {
            return;
        };
        if outcome != Outcome::Ok || msg.receives != receipt || msg.visible {
            // Failed, late or superseded: the visibility timeout decides.
            return;
        }
        let msg = self.messages.remove(m).expect("live message");
        let q = msg.queue as usize;
        self.queue_depth(q, -1);
        let tally = self.tally(msg.intent);
        let counts = self.m.counts(tally);
        counts.queue_acked[q] += 1;
        counts.queue_redelivered[q] += u64::from(msg.receives > 1);
        counts.queue_age[q].record(now.saturating_sub(msg.published));
        self.message_gone(msg.intent);
    }

    /// The queue gave delivery `call` of message `m` up at its visibility
    /// timeout: the request stays at the consumer if it got there (its
    /// work goes on, unheard).
    pub(super) fn delivery_expired(&mut self, call: Id, m: Id) {
        self.calls.remove(call);
        self.delivery_arrived(m);
    }

    /// The visibility timeout of delivery `receipt` of message `m` is over.
    pub(super) fn on_visible(&mut self, m: Id, receipt: u32) {
        let Some(msg) = self.messages.get(m).filter(|msg| msg.receives == receipt && !msg.visible) else {
            return;
        };
        let q = msg.queue as usize;
        if self.s.queues[q].max_receives.is_some_and(|max| msg.receives >= max) {
            // Received as often as allowed: to the dead-letter queue.
            let msg = self.messages.remove(m).expect("live message");
            self.queue_depth(q, -1);
            let tally = self.tally(msg.intent);
            let counts = self.m.counts(tally);
            counts.queue_dead_letters[q] += 1;
            counts.queue_redelivered[q] += u64::from(msg.receives > 1);
            if let Some(it) = self.intents.get_mut(msg.intent) {
                it.lost = it.lost.saturating_add(1);
            }
            self.message_gone(msg.intent);
            return;
        }
        self.messages.get_mut(m).expect("live").visible = true;
        self.queues[q].visible.push_back(m);
        self.deliver_visible(q);
    }

    /// Message `m`'s retention is over: still in its queue, it is dropped.
    pub(super) fn on_retention(&mut self, m: Id) {
        let Some(msg) = self.messages.remove(m) else {
            return;
        };
        let q = msg.queue as usize;
        self.queue_depth(q, -1);
        if msg.in_transit {
            self.queues[q].in_transit -= 1;
        }
        let tally = self.tally(msg.intent);
        let counts = self.m.counts(tally);
        counts.queue_dropped[q] += 1;
        counts.queue_redelivered[q] += u64::from(msg.receives > 1);
        if let Some(it) = self.intents.get_mut(msg.intent) {
            it.lost = it.lost.saturating_add(1);
        }
        self.message_gone(msg.intent);
    }

    /// Queue `q` gains (`+1`) or loses (`-1`) a message now: the time
    /// series learns its depth so far.
    fn queue_depth(&mut self, q: usize, change: i32) {
        self.queue_depth_to(q, self.q.now());
        let st = &mut self.queues[q];
        st.depth = st.depth.saturating_add_signed(change);
    }

    /// The time series learns queue `q`'s depth up to `now`.
    pub(super) fn queue_depth_to(&mut self, q: usize, now: Nanos) {
        let st = &mut self.queues[q];
        let (from, depth) = (st.since, st.depth);
        st.since = now;
        self.m.series.accumulate_queue(q, from, now, depth);
    }

    /// A message of intent `intent` left its queue.
    fn message_gone(&mut self, intent: Id) {
        if let Some(it) = self.intents.get_mut(intent) {
            it.outstanding -= 1;
        }
        self.try_settle(intent);
    }

    /// A worker of service `svc` may be free: the queues it consumes deliver.
    #[inline]
    pub(super) fn consumer_free(&mut self, svc: usize) {
        if self.consumers.get(svc).is_some_and(|qs| !qs.is_empty()) {
            for i in 0..self.consumers[svc].len() {
                let q = self.consumers[svc][i];
                self.deliver_visible(q);
            }
        }
    }
}
