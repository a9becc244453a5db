//! The emulated message broker (`[[queues]]`, a call with `via`), with the
//! model's SQS semantics: a publish always succeeds at once; a visible
//! message is delivered as soon as a worker of its consumer service is
//! free (the broker watches the consumer hosts' busy workers and waiting
//! rooms, and counts the deliveries still on their way); a delivery is one
//! real HTTP request on the call's edge, given up by the broker (not
//! cancelled: the consumer's work goes on) at the visibility timeout; an
//! `ok` answer from the latest delivery within its visibility timeout
//! acknowledges and deletes the message; otherwise, at the end of the
//! visibility timeout, the message is visible again (while the earlier
//! delivery may still run), unless it has been delivered `max_receives`
//! times: then it goes to the dead-letter queue (a lost effect). A message
//! still in its queue after `retention` is dropped (a lost effect).

use super::caller::{Body, Ids, Net};
use super::server::Gauge;
use crate::engine::{NEVER, Nanos};
use crate::policy::Outcome;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

/// What a message carries: what its call would have sent.
#[derive(Debug, Clone, Copy)]
pub struct Message {
    pub intent: u64,
    /// The call's edge (publisher → consumer): its deliveries travel on it.
    pub edge: usize,
    pub operation: usize,
    pub body: Body,
}

/// A message in its queue.
struct Held {
    message: Message,
    published: Nanos,
    /// Deliveries so far; the latest is the only one whose acknowledgement counts.
    receives: u32,
    visible: bool,
}

/// One queue: its messages, the visible ones in order, its deliveries on
/// their way to the consumer (by attempt id), and its depth so far.
#[derive(Default)]
struct Queue {
    held: HashMap<u64, Held>,
    visible: VecDeque<u64>,
    in_transit: std::collections::HashSet<u64>,
    depth: u32,
    since: Nanos,
}

/// Every queue of the experiment.
pub struct Broker {
    queues: Mutex<Vec<Queue>>,
    /// Per queue, woken by a publish or a message made visible again.
    wake: Vec<Notify>,
    next: std::sync::atomic::AtomicU64,
}

impl Broker {
    /// The queues of an experiment with `n` of them, all empty.
    pub fn new(n: usize) -> Broker {
        Broker {
            queues: Mutex::new((0..n).map(|_| Queue::default()).collect()),
            wake: (0..n).map(|_| Notify::new()).collect(),
            next: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Queue>> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Messages still in a queue, over every queue.
    pub fn held(&self) -> u64 {
        self.lock().iter().map(|q| q.held.len() as u64).sum()
    }

    /// A request of attempt `attempt` reached a server: if it is a
    /// delivery, it is no longer on its way.
    pub fn arrived(&self, attempt: u64) {
        for q in self.lock().iter_mut() {
            if q.in_transit.remove(&attempt) {
                return;
            }
        }
    }
}

impl Net {
    /// Publishes `message` to queue `q` now.
    pub fn publish(self: &Arc<Self>, q: usize, message: Message) {
        let now = self.rec.clock.now();
        let id = self.broker.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        {
            let mut queues = self.broker.lock();
            let queue = &mut queues[q];
            queue.held.insert(id, Held { message, published: now, receives: 0, visible: true });
            queue.visible.push_back(id);
            self.depth(queue, q, now, 1);
            let mut g = self.rec.lock();
            let tally = g.tally(message.intent);
            g.m.counts(tally).queue_published[q] += 1;
        }
        let retention = self.s.queues[q].retention;
        if retention != NEVER {
            let net = self.clone();
            tokio::spawn(async move {
                net.rec.sleep(retention).await;
                net.retention_over(q, id);
            });
        }
        self.broker.wake[q].notify_one();
    }

    /// Queue `q`'s depth changes by `change` at `now`: the time series
    /// learns its depth so far.
    fn depth(&self, queue: &mut Queue, q: usize, now: Nanos, change: i32) {
        let (from, depth) = (queue.since, queue.depth);
        queue.since = now;
        queue.depth = depth.saturating_add_signed(change);
        if from < now {
            self.rec.lock().m.series.accumulate_queue(q, from, now, depth);
        }
    }

    /// Queue `q`'s deliveries, until the run ends: each visible message as
    /// soon as a worker of the consumer (its hosts in `consumer`) is free.
    pub async fn deliver(self: Arc<Self>, q: usize, consumer: Gauge) {
        loop {
            let wake = self.broker.wake[q].notified();
            let next = {
                let mut queues = self.broker.lock();
                let queue = &mut queues[q];
                let (taken, workers) = consumer.taken(self.rec.clock.now());
                if taken + queue.in_transit.len() >= workers as usize { None } else { take_visible(queue) }
            };
            match next {
                Some(id) => self.send_delivery(q, id),
                // Woken by a publish or a message visible again, or in a
                // millisecond to look at the consumer's workers again.
                None => {
                    tokio::select! {
                        _ = wake => {}
                        _ = tokio::time::sleep(Duration::from_millis(1)) => {}
                    }
                }
            }
        }
    }

    /// Sends delivery of message `id` of queue `q`.
    fn send_delivery(self: &Arc<Self>, q: usize, id: u64) {
        let now = self.rec.clock.now();
        let attempt = self.rec.attempt();
        let (message, receipt) = {
            let mut queues = self.broker.lock();
            let queue = &mut queues[q];
            let Some(h) = queue.held.get_mut(&id) else { return };
            h.receives += 1;
            h.visible = false;
            queue.in_transit.insert(attempt);
            (h.message, h.receives)
        };
        {
            let mut g = self.rec.lock();
            let tally = g.tally(message.intent);
            g.m.counts(tally).queue_deliveries[q] += 1;
        }
        self.count_attempt(message.edge, message.intent, false);
        let visibility = self.s.queues[q].visibility_timeout;
        let net = self.clone();
        tokio::spawn(async move {
            let svc = net.s.edges[message.edge].to;
            let host = net.pick(svc, attempt, 0);
            let ids = Ids::operation(message.intent, attempt, message.operation, message.edge, now + visibility);
            let go = net.clone().attempt(host, ids, message.body);
            tokio::pin!(go);
            let answer = tokio::select! {
                a = &mut go => Some(a.outcome),
                _ = net.rec.sleep(visibility) => None,
            };
            net.released(svc, host);
            net.broker.lock()[q].in_transit.remove(&attempt);
            if answer == Some(Outcome::Ok) {
                net.acknowledged(q, id, receipt);
            }
            if answer.is_none() {
                // Given up, not cancelled: the consumer's work goes on unheard.
                go.await;
            }
        });
        let net = self.clone();
        tokio::spawn(async move {
            net.rec.sleep(visibility).await;
            net.visibility_over(q, id, receipt);
        });
    }

    /// Delivery `receipt` of message `id` was answered `ok` in time: the
    /// latest delivery's answer deletes the message.
    fn acknowledged(&self, q: usize, id: u64, receipt: u32) {
        let now = self.rec.clock.now();
        let mut queues = self.broker.lock();
        let queue = &mut queues[q];
        if !queue.held.get(&id).is_some_and(|h| h.receives == receipt && !h.visible) {
            return;
        }
        let h = queue.held.remove(&id).expect("held");
        self.depth(queue, q, now, -1);
        let mut g = self.rec.lock();
        let tally = g.tally(h.message.intent);
        let counts = g.m.counts(tally);
        counts.queue_acked[q] += 1;
        counts.queue_redelivered[q] += u64::from(h.receives > 1);
        counts.queue_age[q].record(now.saturating_sub(h.published));
    }

    /// The visibility timeout of delivery `receipt` of message `id` is
    /// over: visible again, or to the dead-letter queue after `max_receives`.
    fn visibility_over(&self, q: usize, id: u64, receipt: u32) {
        let now = self.rec.clock.now();
        let mut queues = self.broker.lock();
        let queue = &mut queues[q];
        let Some(h) = queue.held.get_mut(&id).filter(|h| h.receives == receipt && !h.visible) else {
            return;
        };
        if self.s.queues[q].max_receives.is_some_and(|max| h.receives >= max) {
            let h = queue.held.remove(&id).expect("held");
            self.depth(queue, q, now, -1);
            let mut g = self.rec.lock();
            let tally = g.tally(h.message.intent);
            let counts = g.m.counts(tally);
            counts.queue_dead_letters[q] += 1;
            counts.queue_redelivered[q] += u64::from(h.receives > 1);
            g.lose(h.message.intent);
            return;
        }
        h.visible = true;
        queue.visible.push_back(id);
        drop(queues);
        self.broker.wake[q].notify_one();
    }

    /// Message `id`'s retention is over: still in its queue, it is dropped.
    fn retention_over(&self, q: usize, id: u64) {
        let now = self.rec.clock.now();
        let mut queues = self.broker.lock();
        let queue = &mut queues[q];
        let Some(h) = queue.held.remove(&id) else { return };
        self.depth(queue, q, now, -1);
        let mut g = self.rec.lock();
        let tally = g.tally(h.message.intent);
        let counts = g.m.counts(tally);
        counts.queue_dropped[q] += 1;
        counts.queue_redelivered[q] += u64::from(h.receives > 1);
        g.lose(h.message.intent);
    }

    /// The depth of every queue up to `end`.
    pub fn queues_until(&self, end: Nanos) {
        let mut queues = self.broker.lock();
        for (q, queue) in queues.iter_mut().enumerate() {
            self.depth(queue, q, end, 0);
        }
    }
}

/// The next visible message still held (a dropped one is skipped).
fn take_visible(queue: &mut Queue) -> Option<u64> {
    while let Some(id) = queue.visible.pop_front() {
        if queue.held.get(&id).is_some_and(|h| h.visible) {
            return Some(id);
        }
    }
    None
}
