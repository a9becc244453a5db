//! Slowdowns (a CPU cut, a noisy neighbour): while a `slowdown` fault is in
//! force every service time at its target is multiplied by its factor, and
//! when one starts or ends, work already in service goes on at the new
//! speed for the rest of its time. All work in service at a host was
//! timed with the host's current factor, which each change re-times.

use super::*;

impl World<'_> {
    /// The product of the factors of the slowdowns in force at host `h` now.
    pub(super) fn slowdown_at(&self, h: usize) -> f64 {
        let now = self.q.now();
        let (svc, replica) = (self.hosts[h].service as usize, self.hosts[h].replica);
        let mut factor = 1.0;
        for f in &self.s.faults {
            if let FaultKind::Slowdown { factor: x } = f.kind
                && f.hits(svc, replica, now)
            {
                factor *= x;
            }
        }
        factor
    }

    /// A slowdown starts or ends: the work in service at its hosts is
    /// re-timed, what is left of it scaled from the old factor to the new.
    pub(super) fn on_speed(&mut self, fault: usize) {
        let now = self.q.now();
        let f = &self.s.faults[fault];
        let svc = f.target;
        let first = self.services[svc].first_host as usize;
        for h in first..first + self.s.services[svc].hosts.replicas as usize {
            if f.host.is_some_and(|r| r != self.hosts[h].replica) {
                continue;
            }
            let factor = self.slowdown_at(h);
            let old = self.hosts[h].speed;
            self.hosts[h].speed = factor;
            let working: Vec<Id> = self
                .requests
                .ids()
                .into_iter()
                .filter(|&r| self.requests.get(r).is_some_and(|q| q.host as usize == h && q.in_own_work()))
                .collect();
            for id in working {
                let r = self.requests.get_mut(id).expect("live");
                let left = r.done_at.saturating_sub(now) as f64 / old;
                let done_at = now.saturating_add(from_secs_f64(left * factor / 1e9));
                // The work's length as it will have been served.
                r.demand = (r.demand as i128 + done_at as i128 - r.done_at as i128).max(0) as Nanos;
                r.done_at = done_at;
                self.q.schedule_at(done_at, Event::Done { req: id });
            }
        }
    }
}
