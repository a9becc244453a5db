//! The world's side of balancing: each service's [`HostPicker`] (one per
//! service, shared by all its callers: a load balancer in front of the
//! hosts) picks the host of an attempt, learns which attempts are out and
//! what came back, and sweeps its ejections on outlier detection's timer.

use super::*;

impl World<'_> {
    /// The host that attempt `rkey` of a call to service `svc` goes to.
    #[inline]
    pub(super) fn pick_host(&mut self, svc: usize, tried: u32, rkey: u64) -> usize {
        let first = self.services[svc].first_host as usize;
        if self.s.services[svc].hosts.replicas == 1 { first } else { self.pick_among_hosts(svc, tried, rkey) }
    }

    /// [`World::pick_host`] for a service with replicas.
    #[inline(never)]
    fn pick_among_hosts(&mut self, svc: usize, tried: u32, rkey: u64) -> usize {
        let now = self.q.now();
        let rng = &self.rng;
        let draw = |i: u64| rng.unit(&[purpose::BALANCE, rkey, i]);
        let st = &mut self.services[svc];
        st.first_host as usize + st.picker.pick(&self.s.services[svc].hosts, tried, now, draw)
    }

    /// Attempt `id` was sent to its host: its caller waits for it there.
    pub(super) fn mark_active(&mut self, id: Id) {
        let r = self.requests.get_mut(id).expect("live");
        r.active = true;
        let h = &self.hosts[r.host as usize];
        self.services[h.service as usize].picker.sent(h.replica as usize);
    }

    /// Host `h` has one attempt fewer whose caller waits for it.
    pub(super) fn host_released(&mut self, h: usize) {
        let host = &self.hosts[h];
        self.services[host.service as usize].picker.released(host.replica as usize);
    }

    /// Attempt `id` is no longer active at its host: answered, timed out,
    /// cancelled, or gone from the system.
    pub(super) fn release_active(&mut self, id: Id) {
        if let Some(r) = self.requests.get_mut(id)
            && std::mem::take(&mut r.active)
        {
            let h = r.host as usize;
            self.host_released(h);
        }
    }

    /// The caller is done waiting for attempt `id` after `rtt` with
    /// `outcome`: the balancer's view of its host is updated.
    pub(super) fn host_observed(&mut self, id: Id, rtt: Nanos, outcome: Outcome) {
        let now = self.q.now();
        let req = self.requests.get(id).expect("live request");
        let (h, svc, intent) = (req.host as usize, req.service as usize, req.intent);
        if self.s.services[svc].hosts.replicas == 1 {
            return;
        }
        self.release_active(id);
        let replica = self.hosts[h].replica as usize;
        if self.services[svc].picker.observed(&self.s.services[svc].hosts, replica, rtt, outcome, now) {
            let tally = self.tally(intent);
            self.m.counts(tally).ejections[svc] += 1;
        }
    }

    /// Outlier detection's interval timer for service `svc`.
    pub(super) fn on_sweep(&mut self, svc: usize) {
        let now = self.q.now();
        let o = self.s.services[svc].hosts.outlier.expect("a sweep has outlier detection");
        self.services[svc].picker.sweep(&o, now);
        if now < self.s.duration.saturating_add(self.s.drain_limit) {
            self.q.schedule_in(o.interval, Event::Sweep { service: svc as u32 });
        }
    }
}
