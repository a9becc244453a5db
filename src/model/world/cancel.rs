//! Cancellation at the service: the caller no longer wants an attempt (a
//! hedge lost the race, or `cancel_on_timeout` reset the stream). Queued
//! work leaves the queue, running work stops and frees its worker, and a
//! request still on its way is dropped when it arrives. What a request
//! committed stays committed. The cancellation reaches the service at
//! once; downstream calls it already made go on.

use super::*;

impl World<'_> {
    /// Cancels request `id` at its service.
    pub(super) fn cancel_request(&mut self, id: Id) {
        let now = self.q.now();
        let Some(r) = self.requests.get_mut(id) else {
            return;
        };
        r.abandon();
        let (svc, h) = (r.service as usize, r.host as usize);
        // A reset stream is no longer active at its host.
        self.release_active(id);
        let r = self.requests.get_mut(id).expect("live");
        let phase = r.phase();
        if phase == Phase::Lost {
            // Its answer was lost: nothing left at the service.
            self.leave(id);
            return;
        }
        if r.limit.is_some() {
            // The concurrency limit lets the slot go without a sample, as
            // Netflix's limiters ignore a cancelled request.
            self.limit_ignore(id);
        }
        let r = self.requests.get_mut(id).expect("live");
        if phase.holds_worker() {
            let (in_own_work, done_at, demand, intent) = (r.in_own_work(), r.done_at, r.demand, r.intent);
            let held = r.ledger_key.filter(|_| phase != Phase::Committed);
            if in_own_work && now < done_at {
                // Stopped in its own work: what it did is wasted, the rest is saved.
                let left = done_at - now;
                let done = demand.saturating_sub(left);
                let slot = self.hosts[h].slot.map(|k| k as usize);
                let tally = self.tally(intent);
                self.m.work_cancelled(tally, svc, slot, done as f64, left as f64, now);
            } else if phase == Phase::Holding {
                // A duplicate waiting in the ledger for the original.
                let l = self.hosts[h].ledger as usize;
                if let Some(ls) = self.services[svc].ledgers.get_mut(l) {
                    for waiting in ls.waiters.values_mut() {
                        waiting.retain(|&w| w != id);
                    }
                }
            }
            self.touch_host(h, now);
            self.hosts[h].busy -= 1;
            self.leave(id);
            if let Some(key) = held {
                self.release_placeholder(h, key);
            }
            self.fill_workers(h);
            return;
        }
        if phase == Phase::Queued {
            let pos = self.hosts[h].queue.iter().position(|&(q, _)| q == id).expect("queued at its host");
            self.touch_host(h, now);
            let st = &mut self.hosts[h];
            st.queue.remove(pos);
            if st.queue.is_empty() {
                st.last_empty = now;
            }
            self.leave(id);
            return;
        }
        if phase == Phase::Travelling {
            // Neither at the service nor answered: still on its way there.
            self.requests.get_mut(id).expect("live").to(Phase::Cancelled);
        }
        // Otherwise its answer is on the way back: it leaves when it arrives.
    }
}
