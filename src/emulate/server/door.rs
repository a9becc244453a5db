//! A host's workers and waiting room: who gets a worker, who waits (FIFO
//! or LIFO), who gets the overload answer, who leaves the queue (dropped
//! expired, cancelled), and what a crash resets. Every change is under
//! the host's one lock, and each change first accounts the queue length
//! and busy workers up to now.

use super::Host;
use crate::config::{Discipline, FaultKind};
use crate::engine::Nanos;
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
}

struct Waiter {
    go: oneshot::Sender<bool>,
    attempt: u64,
}

impl Door {
    pub fn new() -> Door {
        Door { busy: 0, queue: VecDeque::new(), last_change: 0, epoch: 0, down_until: 0 }
    }

    /// Workers busy now.
    pub fn busy(&self) -> u32 {
        self.busy
    }
}

/// Whether a request got a worker.
pub(super) enum Admitted {
    Now,
    /// The waiting room is full.
    Full,
    /// It waits: `true` when it gets a worker, `false` when dropped expired.
    Wait(oneshot::Receiver<bool>),
}

impl Host {
    /// Workers left now by the brownouts in force.
    fn workers_now(&self, now: Nanos) -> u32 {
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

    /// A worker, a place in the waiting room, or the overload answer; with
    /// the crash epoch it was given in.
    pub(super) fn admit(&self, attempt: u64) -> (Admitted, u64) {
        let now = self.rec.clock.now();
        let spec = &self.s.services[self.svc];
        let mut door = self.door();
        let epoch = door.epoch;
        self.touch(&mut door, now);
        if door.busy < self.workers_now(now) && door.queue.is_empty() {
            door.busy += 1;
            return (Admitted::Now, epoch);
        }
        if spec.queue_limit.is_some_and(|l| door.queue.len() >= l as usize) {
            return (Admitted::Full, epoch);
        }
        let (go, rx) = oneshot::channel();
        door.queue.push_back(Waiter { go, attempt });
        (Admitted::Wait(rx), epoch)
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
    pub(super) fn leave_queue(&self, attempt: u64, epoch: u64, rx: &mut oneshot::Receiver<bool>) {
        let now = self.rec.clock.now();
        let mut door = self.door();
        if door.epoch != epoch {
            return;
        }
        if let Some(pos) = door.queue.iter().position(|w| w.attempt == attempt) {
            self.touch(&mut door, now);
            door.queue.remove(pos);
            return;
        }
        if rx.try_recv() == Ok(true) {
            self.touch(&mut door, now);
            door.busy -= 1;
            self.dispatch(&mut door, now);
        }
    }

    /// Hands free workers to waiting requests in the queue's discipline;
    /// with `drop_expired`, requests whose caller is gone leave unserved.
    fn dispatch(&self, door: &mut Door, now: Nanos) {
        let spec = &self.s.services[self.svc];
        while door.busy < self.workers_now(now) {
            let next = match spec.discipline {
                Discipline::Lifo => door.queue.pop_back(),
                _ => door.queue.pop_front(),
            };
            let Some(w) = next else { return };
            if spec.drop_expired && self.rec.lock().abandoned(w.attempt) {
                let _ = w.go.send(false);
                continue;
            }
            if w.go.send(true).is_ok() {
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
        door.epoch += 1;
        door.down_until = door.down_until.max(until);
        door.epoch
    }
}
