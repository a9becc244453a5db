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
        r.abandoned = true;
        if r.lost {
            // Its answer was lost: nothing left at the service.
            self.leave(id);
            return;
        }
        let svc = r.service as usize;
        if r.at_service {
            let (executed, start, demand, intent) = (r.executed, r.work_start, r.demand, r.intent);
            let held = r.ledger_key.filter(|_| !r.committed);
            r.at_service = false;
            r.killed = true;
            if executed && now < start.saturating_add(demand) {
                // Stopped in its own work: what it did is wasted, the rest is saved.
                let done = now - start;
                if let Some(it) = self.intents.get(intent).filter(|it| it.in_window) {
                    let class = &mut self.m.classes[it.client as usize];
                    class.work_ns += done as f64;
                    class.wasted_ns += done as f64;
                    class.cancelled_ns += (demand - done) as f64;
                    self.m.service_work_ns[svc] += done as f64;
                    self.m.service_wasted_ns[svc] += done as f64;
                }
                self.m.series.at(now).wasted[svc] += 1;
            } else if !executed {
                // A duplicate waiting in the ledger for the original.
                for waiting in self.services[svc].waiters.values_mut() {
                    waiting.retain(|&w| w != id);
                }
            }
            self.touch_service(svc, now);
            self.services[svc].busy -= 1;
            self.leave(id);
            if let Some(key) = held {
                self.release_placeholder(svc, key);
            }
            self.fill_workers(svc);
            return;
        }
        if let Some(pos) = self.services[svc].queue.iter().position(|&(q, _)| q == id) {
            self.touch_service(svc, now);
            let st = &mut self.services[svc];
            st.queue.remove(pos);
            if st.queue.is_empty() {
                st.last_empty = now;
            }
            self.leave(id);
            return;
        }
        if !r.answered {
            // Neither at the service nor answered: still on its way there.
            r.cancelled = true;
        }
        // Otherwise its answer is on the way back: it leaves when it arrives.
    }
}
