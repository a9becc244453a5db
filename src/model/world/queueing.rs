//! A host's door and waiting room: rate limiting, workers left by
//! brownouts, and the queue disciplines (FIFO, LIFO, adaptive LIFO with
//! CoDel) with `drop_expired`.

use super::*;
use crate::config::Discipline;

impl World<'_> {
    /// Workers available now at host `h`: the service's workers times the
    /// capacity left by every brownout in force there.
    #[inline(always)]
    pub(super) fn workers_now(&self, h: usize) -> u32 {
        if self.brownouts {
            self.workers_in_brownout(h)
        } else {
            self.s.services[self.hosts[h].service as usize].workers
        }
    }

    /// [`World::workers_now`] when some fault is a brownout.
    fn workers_in_brownout(&self, h: usize) -> u32 {
        let (svc, replica) = (self.hosts[h].service as usize, self.hosts[h].replica);
        let now = self.q.now();
        let mut capacity = 1.0;
        for f in &self.s.faults {
            if let FaultKind::Brownout { capacity: c } = f.kind
                && f.hits(svc, replica, now)
            {
                capacity *= c;
            }
        }
        // Truncation is the floor of a non-negative product, without a libm call.
        if capacity == 1.0 {
            self.s.services[svc].workers
        } else {
            (self.s.services[svc].workers as f64 * capacity) as u32
        }
    }

    /// Takes a token from host `h`'s rate limiter; false when empty.
    pub(super) fn rate_limit_admits(&mut self, h: usize) -> bool {
        let Some(limit) = self.s.services[self.hosts[h].service as usize].rate_limit else { return true };
        let now = self.q.now();
        self.hosts[h].bucket.take(&limit, now)
    }

    /// Puts a request in the waiting room, or answers the overload status
    /// when it is full.
    pub(super) fn enqueue(&mut self, id: Id) {
        let now = self.q.now();
        let req = self.requests.get(id).expect("live request");
        let (svc, h) = (req.service as usize, req.host as usize);
        let spec = &self.s.services[svc];
        if spec.queue_limit.is_none_or(|l| self.hosts[h].queue.len() < l as usize) {
            self.touch_host(h, now);
            let st = &mut self.hosts[h];
            if st.queue.is_empty() {
                st.last_empty = now;
            }
            st.queue.push_back((id, now));
            self.requests.get_mut(id).expect("live").to(Phase::Queued);
        } else {
            self.reply(id, Outcome::Status(spec.overload.status), spec.overload.retry_after);
        }
    }

    /// Starts queued requests while workers are free, in the service's
    /// discipline; drops expired work (`drop_expired`) and sheds what CoDel
    /// says has waited too long.
    ///
    /// A request that starts may be answered at once (a ledger replay, 409
    /// or 422), and that answer frees its worker and asks for the queue to
    /// be served again. The loop running here does exactly that next, so a
    /// nested call leaves the work to it: the queue is served iteratively,
    /// however many answered-at-once requests it holds, in the same order
    /// as if each answer had served the queue itself.
    pub(super) fn fill_workers(&mut self, h: usize) {
        if self.hosts[h].filling {
            return;
        }
        self.hosts[h].filling = true;
        self.serve_queue(h);
        self.hosts[h].filling = false;
        let svc = self.hosts[h].service as usize;
        self.consumer_free(svc);
    }

    /// The loop of [`World::fill_workers`].
    fn serve_queue(&mut self, h: usize) {
        let now = self.q.now();
        let svc = self.hosts[h].service as usize;
        while self.hosts[h].busy < self.workers_now(h) {
            self.touch_host(h, now);
            let spec = &self.s.services[svc];
            let st = &mut self.hosts[h];
            let standing = now.saturating_sub(st.last_empty);
            let picked = match spec.discipline {
                Discipline::Fifo => st.queue.pop_front(),
                Discipline::Lifo => st.queue.pop_back(),
                Discipline::Codel { target, interval } => {
                    // Overloaded when the queue has not been empty for `interval`:
                    // serve newest first and shed what waited longer than `target`.
                    let (overloaded, limit) = if standing > interval { (true, target) } else { (false, interval) };
                    let mut shed = Vec::new();
                    while let Some(&(old, at)) = st.queue.front() {
                        if now.saturating_sub(at) > limit {
                            st.queue.pop_front();
                            shed.push(old);
                        } else {
                            break;
                        }
                    }
                    let picked = if overloaded { st.queue.pop_back() } else { st.queue.pop_front() };
                    if st.queue.is_empty() {
                        st.last_empty = now;
                    }
                    for old in shed {
                        self.reply(old, Outcome::Status(spec.overload.status), spec.overload.retry_after);
                    }
                    picked
                }
            };
            let Some((next, _)) = picked else {
                self.hosts[h].last_empty = now;
                return;
            };
            if self.hosts[h].queue.is_empty() {
                self.hosts[h].last_empty = now;
            }
            let expired = self.requests.get(next).is_some_and(|r| r.abandoned());
            if spec.drop_expired && expired {
                if self.requests.get(next).is_some_and(|r| r.limit.is_some()) {
                    self.limit_sample(next, Outcome::Timeout);
                }
                self.leave(next);
                continue;
            }
            self.start(next);
        }
    }
}
