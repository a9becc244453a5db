//! Spreading a service's requests over its hosts: round robin, random,
//! least request (Envoy's power of two choices on active requests) and
//! peak EWMA (Finagle / tower: power of two choices on latency × pending),
//! `retry_other_host` (Envoy previous_hosts), and Envoy's consecutive-5xx
//! outlier detection with its ejection backoff.
//!
//! There is one balancer per service, shared by all its callers: a load
//! balancer in front of the hosts.

use super::*;
use crate::config::Balancer;

/// A host's peak-EWMA latency estimate (tower `load::peak_ewma::RttEstimate`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Ewma {
    rtt_ns: f64,
    update_at: Nanos,
}

/// How fast a peak-EWMA estimate decays (Finagle's and linkerd's default, 10 s).
const EWMA_DECAY_NS: f64 = 10e9;

impl Ewma {
    pub(super) fn new(default_rtt_ns: f64) -> Self {
        Self { rtt_ns: default_rtt_ns, update_at: 0 }
    }

    /// Takes one observed latency: a peak replaces the estimate, a lower
    /// one is blended in by how long it has been since the last update.
    pub(super) fn update(&mut self, now: Nanos, rtt_ns: f64) -> f64 {
        self.rtt_ns = if self.rtt_ns < rtt_ns {
            rtt_ns
        } else {
            let elapsed = now.saturating_sub(self.update_at) as f64;
            let decay = (-elapsed / EWMA_DECAY_NS).exp();
            self.rtt_ns * decay + rtt_ns * (1.0 - decay)
        };
        self.update_at = now;
        self.rtt_ns
    }

    /// The estimate decayed to `now` (tower updates with a zero latency).
    pub(super) fn decayed(&mut self, now: Nanos) -> f64 {
        self.update(now, 0.0)
    }
}

/// A host's outlier-detection state (Envoy `DetectorHostMonitorImpl`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct OutlierHost {
    /// 5xx answers in a row.
    consecutive: u32,
    pub(super) ejected: bool,
    /// Multiplies `base_ejection`: up by one per ejection, down by one per
    /// interval spent healthy after an unejection.
    backoff: u32,
    last_ejection: Nanos,
    last_unejection: Option<Nanos>,
}

/// Whether an outcome counts as a 5xx for outlier detection: 5xx answers,
/// and the locally originated errors Envoy maps to 5xx when it does not
/// split them (connect failure 503, timeout 504, reset).
fn is_5xx(outcome: Outcome) -> bool {
    match outcome {
        Outcome::Status(s) => (500..600).contains(&s),
        Outcome::ConnectError | Outcome::Timeout | Outcome::Reset => true,
        _ => false,
    }
}

impl World<'_> {
    /// Whether host `h` can be picked: not ejected (unless fewer than half
    /// the hosts are healthy: Envoy's panic threshold, 50%), and not tried
    /// by this call (unless every eligible host was).
    fn healthy(&self, h: usize, panic: bool) -> bool {
        panic || !self.hosts[h].outlier.ejected
    }

    /// The host that attempt `rkey` of a call to service `svc` goes to.
    #[inline]
    pub(super) fn pick_host(&mut self, svc: usize, tried: u32, rkey: u64) -> usize {
        let first = self.services[svc].first_host as usize;
        if self.s.services[svc].hosts.replicas == 1 { first } else { self.pick_among_hosts(svc, tried, rkey) }
    }

    /// [`World::pick_host`] for a service with replicas.
    #[inline(never)]
    fn pick_among_hosts(&mut self, svc: usize, tried: u32, rkey: u64) -> usize {
        let spec = &self.s.services[svc].hosts;
        let first = self.services[svc].first_host as usize;
        let n = spec.replicas as usize;
        let panic = (n - self.services[svc].ejected as usize) * 2 < n;
        let avoid = if spec.retry_other_host { tried } else { 0 };
        let ok = |w: &World, r: usize, avoid: u32| w.healthy(first + r, panic) && (r >= 32 || avoid & (1 << r) == 0);
        let mut count = (0..n).filter(|&r| ok(self, r, avoid)).count();
        let avoid = if count == 0 {
            count = (0..n).filter(|&r| ok(self, r, 0)).count();
            0
        } else {
            avoid
        };
        if count == 0 {
            // Nothing healthy: every host.
            return first + (self.rng.unit(&[purpose::BALANCE, rkey, 0]) * n as f64) as usize % n;
        }
        // The k-th eligible replica.
        let nth = |w: &World, k: usize| (0..n).filter(|&r| ok(w, r, avoid)).nth(k).expect("k < count");
        let draw =
            |w: &World, i: u64| ((w.rng.unit(&[purpose::BALANCE, rkey, i]) * count as f64) as usize).min(count - 1);
        let replica = match spec.balancer {
            Balancer::RoundRobin => {
                let st = &mut self.services[svc];
                let start = st.next_rr as usize % n;
                let r = (0..n).map(|i| (start + i) % n).find(|&r| ok(self, r, avoid)).expect("count > 0");
                self.services[svc].next_rr = (r + 1) as u32;
                r
            }
            Balancer::Random => nth(self, draw(self, 0)),
            Balancer::LeastRequest => {
                // Envoy: choice_count = 2 draws with replacement; the first wins ties.
                let a = nth(self, draw(self, 0));
                let b = nth(self, draw(self, 1));
                if self.hosts[first + b].active < self.hosts[first + a].active { b } else { a }
            }
            Balancer::PeakEwma => {
                if count == 1 {
                    nth(self, 0)
                } else {
                    // tower p2c: two distinct hosts; the lower cost wins, the first on ties.
                    let i = draw(self, 0);
                    let mut j =
                        ((self.rng.unit(&[purpose::BALANCE, rkey, 1]) * (count - 1) as f64) as usize).min(count - 2);
                    if j >= i {
                        j += 1;
                    }
                    let (a, b) = (nth(self, i), nth(self, j));
                    let now = self.q.now();
                    let cost = |w: &mut World, r: usize| {
                        let h = &mut w.hosts[first + r];
                        h.ewma.decayed(now) * (h.active + 1) as f64
                    };
                    if cost(self, a) <= cost(self, b) { a } else { b }
                }
            }
        };
        first + replica
    }

    /// Attempt `id` is no longer active at its host: answered, timed out,
    /// cancelled, or gone from the system.
    pub(super) fn release_active(&mut self, id: Id) {
        if let Some(r) = self.requests.get_mut(id)
            && std::mem::take(&mut r.active)
        {
            self.hosts[r.host as usize].active -= 1;
        }
    }

    /// The caller is done waiting for attempt `id` after `rtt` with
    /// `outcome`: the balancer's view of its host is updated.
    pub(super) fn host_observed(&mut self, id: Id, rtt: Nanos, outcome: Outcome) {
        let now = self.q.now();
        let req = self.requests.get(id).expect("live request");
        let (h, svc) = (req.host as usize, req.service as usize);
        if self.s.services[svc].hosts.replicas == 1 {
            return;
        }
        self.release_active(id);
        let host = &mut self.hosts[h];
        if self.s.services[svc].hosts.balancer == Balancer::PeakEwma {
            host.ewma.update(now, rtt as f64);
        }
        let Some(o) = self.s.services[svc].hosts.outlier else { return };
        if !is_5xx(outcome) {
            self.hosts[h].outlier.consecutive = 0;
            return;
        }
        let od = &mut self.hosts[h].outlier;
        od.consecutive += 1;
        if od.consecutive < o.consecutive_5xx || od.ejected {
            return;
        }
        od.consecutive = 0;
        // Envoy ejectHost: only while the ejected share stays within max_ejection_percent.
        let n = self.s.services[svc].hosts.replicas as f64;
        if 100.0 * (self.services[svc].ejected + 1) as f64 / n > o.max_ejection_percent {
            return;
        }
        od.ejected = true;
        od.last_ejection = now;
        if (od.backoff as u128) * (o.base_ejection as u128) < o.max_ejection as u128 + o.base_ejection as u128 {
            od.backoff += 1;
        }
        self.services[svc].ejected += 1;
        let tally = self.tally(req_intent(&self.requests, id));
        self.m.counts(tally).ejections[svc] += 1;
    }

    /// Outlier detection's interval timer (Envoy `onIntervalTimer`):
    /// hosts ejected for base_ejection × backoff (at most max_ejection)
    /// come back; hosts healthy for an interval since they came back lose
    /// one step of backoff.
    pub(super) fn on_sweep(&mut self, svc: usize) {
        let now = self.q.now();
        let o = self.s.services[svc].hosts.outlier.expect("a sweep has outlier detection");
        let first = self.services[svc].first_host as usize;
        for h in first..first + self.s.services[svc].hosts.replicas as usize {
            let od = &mut self.hosts[h].outlier;
            if od.ejected {
                let eject_for = (o.base_ejection.saturating_mul(od.backoff as u64)).min(o.max_ejection);
                if eject_for <= now - od.last_ejection {
                    od.ejected = false;
                    od.consecutive = 0;
                    od.last_unejection = Some(now);
                    self.services[svc].ejected -= 1;
                }
            }
        }
        for h in first..first + self.s.services[svc].hosts.replicas as usize {
            let od = &mut self.hosts[h].outlier;
            if !od.ejected && od.last_unejection.is_some_and(|t| now - t >= o.interval) && od.backoff > 0 {
                od.backoff -= 1;
            }
        }
        if now < self.s.duration.saturating_add(self.s.drain_limit) {
            self.q.schedule_in(o.interval, Event::Sweep { service: svc as u32 });
        }
    }
}

fn req_intent(requests: &Slab<Request>, id: Id) -> Id {
    requests.get(id).expect("live request").intent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_ewma_follows_towers_update_rule() {
        // A peak replaces the estimate at once.
        let mut e = Ewma::new(10e6);
        assert_eq!(e.update(0, 20e6), 20e6);
        // A lower latency 100 ms later: decay = exp(-0.1 s / 10 s).
        let decay = (-0.1f64 / 10.0).exp();
        let next = e.update(100_000_000, 5e6);
        assert!((next - (20e6 * decay + 5e6 * (1.0 - decay))).abs() < 1e-6, "{next}");
        // Decaying towards 0 after 1 s more.
        let d = (-1.0f64 / 10.0).exp();
        let decayed = e.decayed(1_100_000_000);
        assert!((decayed - next * d).abs() < 1e-6);
    }

    #[test]
    fn outlier_detection_counts_local_errors_as_5xx() {
        assert!(is_5xx(Outcome::Status(503)) && is_5xx(Outcome::Status(500)));
        assert!(is_5xx(Outcome::Timeout) && is_5xx(Outcome::ConnectError) && is_5xx(Outcome::Reset));
        assert!(!is_5xx(Outcome::Ok) && !is_5xx(Outcome::Status(429)) && !is_5xx(Outcome::Status(409)));
    }
}
