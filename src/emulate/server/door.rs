//! A host's door, workers and waiting room: the rate limiter, who gets a
//! worker, who waits (FIFO, LIFO or CoDel's adaptive LIFO), who gets the
//! overload answer, who leaves the queue (dropped expired, shed by CoDel,
//! cancelled), and what a crash resets. Every change is under the host's
//! one lock, and each change first accounts the queue length and busy
//! workers up to now. The rules are the model's (docs/model.md, "Arrival
//! at the service").

use super::Host;
use crate::config::{Discipline, FaultKind};
use crate::engine::Nanos;
use crate::model::token_bucket::TokenBucket;
use std::collections::VecDeque;
use tokio::sync::oneshot;

/// Workers busy and the waiting room.
pub(super) struct Door {
    busy: u32,
    queue: VecDeque<Waiter>,
    last_change: Nanos,
    /// Crashes so far: a request admitted before the last one no longer
    /// holds a worker or a place.
    pub epoch: u64,
    /// Until when the host is down after a crash (its listener closed).
    pub down_until: Nanos,
    /// When the queue was last empty (CoDel).
    last_empty: Nanos,
    /// The rate limiter, when the service has one.
    bucket: Option<TokenBucket>,
}

struct Waiter {
    go: oneshot::Sender<Go>,
    attempt: u64,
    /// When it joined the queue.
    at: Nanos,
}

/// How a wait in the queue ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Go {
    /// It has a worker.
    Worker,
    /// Dropped unserved: its caller had stopped waiting (`drop_expired`).
    Dropped,
    /// Shed by CoDel: it gets the overload answer.
    Shed,
}

impl Door {
    pub fn new(bucket: Option<TokenBucket>) -> Door {
        Door { busy: 0, queue: VecDeque::new(), last_change: 0, epoch: 0, down_until: 0, last_empty: 0, bucket }
    }

    /// Workers busy now.
    pub fn busy(&self) -> u32 {
        self.busy
    }

    /// Requests waiting in the room now.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }
}

/// Whether a request got a worker.
pub(super) enum Admitted {
    Now,
    /// The waiting room is full, or the host sheds the request's priority
    /// class at this load (`shed_by_priority`).
    Full,
    /// The rate limiter has no token for it.
    Limited,
    /// It waits for a worker.
    Wait(oneshot::Receiver<Go>),
}

impl Host {
    /// Workers left now by the brownouts in force.
    pub(super) fn workers_now(&self, now: Nanos) -> u32 {
        let workers = self.s.services[self.svc].workers;
        let mut capacity = 1.0;
        for f in &self.s.faults {
            if let FaultKind::Brownout { capacity: c } = f.kind
                && f.hits(self.svc, self.replica, now)
            {
                capacity *= c;
            }
        }
        if capacity == 1.0 { workers } else { (workers as f64 * capacity) as u32 }
    }

    /// Accounts the queue and busy workers up to `now`.
    fn touch(&self, door: &mut Door, now: Nanos) {
        let (from, qlen, busy) = (door.last_change, door.queue.len(), door.busy);
        door.last_change = now;
        if from >= now || (qlen == 0 && busy == 0) {
            return;
        }
        let mut g = self.rec.lock();
        g.m.service_state(self.svc, from, now, qlen, busy);
        if let Some(slot) = self.slot {
            g.m.service_state(slot, from, now, qlen, busy);
        }
    }

    pub(super) fn door(&self) -> std::sync::MutexGuard<'_, Door> {
        self.door.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A token of the rate limiter, then a worker, a place in the waiting
    /// room, or the overload answer; with the crash epoch it was given in.
    /// A queue longer than the service's `memory_limit` crashes the host:
    /// the crash's `until` is returned with it.
    /// `priority`: the request's class's priority (an index of `shed_above`).
    pub(super) fn admit(&self, attempt: u64, priority: usize) -> (Admitted, u64, Option<Nanos>) {
        let now = self.rec.clock.now();
        let spec = &self.s.services[self.svc];
        let mut door = self.door();
        let epoch = door.epoch;
        // Shedding by priority: this class is turned away while the host is this busy.
        if door.busy as f64 > spec.hosts.shed_above[priority] * self.workers_now(now) as f64 {
            return (Admitted::Full, epoch, None);
        }
        if let (Some(limit), Some(bucket)) = (&spec.rate_limit, &mut door.bucket)
            && !bucket.take(limit, now)
        {
            return (Admitted::Limited, epoch, None);
        }
        self.touch(&mut door, now);
        if door.busy < self.workers_now(now) && door.queue.is_empty() {
            door.busy += 1;
            return (Admitted::Now, epoch, None);
        }
        if spec.queue_limit.is_some_and(|l| door.queue.len() >= l as usize) {
            return (Admitted::Full, epoch, None);
        }
        let (go, rx) = oneshot::channel();
        if door.queue.is_empty() {
            door.last_empty = now;
        }
        door.queue.push_back(Waiter { go, attempt, at: now });
        self.dispatch(&mut door, now);
        let oom =
            spec.memory.filter(|m| door.queue.len() > m.queued as usize).map(|m| now.saturating_add(m.restart_after));
        (Admitted::Wait(rx), epoch, oom)
    }

    /// A worker taken in crash epoch `epoch` is free (unless a crash
    /// freed every worker since): the next waiting requests get workers.
    pub(super) fn release(&self, epoch: u64) {
        let now = self.rec.clock.now();
        let mut door = self.door();
        if door.epoch != epoch {
            return;
        }
        self.touch(&mut door, now);
        door.busy -= 1;
        self.dispatch(&mut door, now);
    }

    /// Attempt `attempt`, queued in epoch `epoch` and waiting on `rx`, was
    /// cancelled: it leaves the queue, or frees the worker it was just given.
    pub(super) fn leave_queue(&self, attempt: u64, epoch: u64, rx: &mut oneshot::Receiver<Go>) {
        let now = self.rec.clock.now();
        let mut door = self.door();
        if door.epoch != epoch {
            return;
        }
        if let Some(pos) = door.queue.iter().position(|w| w.attempt == attempt) {
            self.touch(&mut door, now);
            door.queue.remove(pos);
            if door.queue.is_empty() {
                door.last_empty = now;
            }
            return;
        }
        if rx.try_recv() == Ok(Go::Worker) {
            self.touch(&mut door, now);
            door.busy -= 1;
            self.dispatch(&mut door, now);
        }
    }

    /// Hands free workers to waiting requests in the queue's discipline;
    /// CoDel first sheds what waited too long; with `drop_expired`,
    /// requests whose caller is gone leave unserved.
    fn dispatch(&self, door: &mut Door, now: Nanos) {
        let spec = &self.s.services[self.svc];
        while door.busy < self.workers_now(now) {
            let next = match spec.discipline {
                Discipline::Fifo => door.queue.pop_front(),
                Discipline::Lifo => door.queue.pop_back(),
                Discipline::Codel { target, interval } => {
                    // Overloaded when the queue has not been empty for
                    // `interval`: newest first, shedding what waited longer
                    // than `target` (else longer than `interval`).
                    let standing = now.saturating_sub(door.last_empty);
                    let (overloaded, limit) = if standing > interval { (true, target) } else { (false, interval) };
                    while door.queue.front().is_some_and(|w| now.saturating_sub(w.at) > limit) {
                        let w = door.queue.pop_front().expect("a front");
                        let _ = w.go.send(Go::Shed);
                    }
                    if overloaded { door.queue.pop_back() } else { door.queue.pop_front() }
                }
            };
            if door.queue.is_empty() {
                door.last_empty = now;
            }
            let Some(w) = next else { return };
            if spec.drop_expired && self.rec.lock().abandoned(w.attempt) {
                let _ = w.go.send(Go::Dropped);
                continue;
            }
            if w.go.send(Go::Worker).is_ok() {
                door.busy += 1;
            }
        }
    }

    /// Workers came back (a brownout ended): waiting requests get them.
    pub(super) fn capacity_back(&self) {
        let now = self.rec.clock.now();
        let mut door = self.door();
        self.touch(&mut door, now);
        self.dispatch(&mut door, now);
    }

    /// The host crashes now, down until `until`: every worker is free, the
    /// queue is empty (its requests are reset), and a new epoch begins.
    /// Returns the new epoch.
    pub(super) fn crash_door(&self, until: Nanos) -> u64 {
        let now = self.rec.clock.now();
        let mut door = self.door();
        self.touch(&mut door, now);
        door.busy = 0;
        door.queue.clear();
        door.last_empty = now;
        door.epoch += 1;
        door.down_until = door.down_until.max(until);
        door.epoch
    }
}
