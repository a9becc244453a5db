//! Spreading a service's requests over its hosts: round robin, random,
//! least request (Envoy's power of two choices on active requests) and
//! peak EWMA (Finagle / tower: power of two choices on latency × pending),
//! `retry_other_host` (Envoy previous_hosts), and Envoy's consecutive-5xx
//! outlier detection with its ejection backoff.
//!
//! A [`HostPicker`] is one caller's view of a service's hosts: the
//! simulator keeps one per service (a load balancer in front of the
//! hosts, shared by every caller), the emulator one per service as well.
//! It knows nothing of requests: it is told when an attempt is sent to a
//! host and when its caller is done with it.

use crate::config::{Balancer, HostsSpec, OutlierSpec};
use crate::engine::Nanos;
use crate::policy::Outcome;

/// A host's peak-EWMA latency estimate (tower `load::peak_ewma::RttEstimate`).
#[derive(Debug, Clone, Copy)]
pub struct Ewma {
    rtt_ns: f64,
    update_at: Nanos,
}

/// How fast a peak-EWMA estimate decays (Finagle's and linkerd's default, 10 s).
const EWMA_DECAY_NS: f64 = 10e9;

impl Ewma {
    pub fn new(default_rtt_ns: f64) -> Self {
        Self { rtt_ns: default_rtt_ns, update_at: 0 }
    }

    /// Takes one observed latency: a peak replaces the estimate, a lower
    /// one is blended in by how long it has been since the last update.
    pub fn update(&mut self, now: Nanos, rtt_ns: f64) -> f64 {
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
    pub fn decayed(&mut self, now: Nanos) -> f64 {
        self.update(now, 0.0)
    }
}

/// A host's outlier-detection state (Envoy `DetectorHostMonitorImpl`).
#[derive(Debug, Clone, Copy, Default)]
struct OutlierHost {
    /// 5xx answers in a row.
    consecutive: u32,
    ejected: bool,
    /// Multiplies `base_ejection`: up by one per ejection, down by one per
    /// interval spent healthy after an unejection.
    backoff: u32,
    last_ejection: Nanos,
    last_unejection: Option<Nanos>,
}

/// What the picker knows of one host.
#[derive(Debug, Clone, Copy)]
struct HostView {
    /// Attempts sent to it whose caller still waits.
    active: u32,
    ewma: Ewma,
    outlier: OutlierHost,
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

/// One view of a service's hosts, and how it picks among them.
#[derive(Debug, Clone)]
pub struct HostPicker {
    hosts: Vec<HostView>,
    /// Round robin's next host.
    next_rr: u32,
    /// Hosts ejected by outlier detection now.
    ejected: u32,
}

impl HostPicker {
    /// A view of `replicas` hosts whose latency is first estimated at
    /// `default_rtt_ns` (peak EWMA).
    pub fn new(replicas: u32, default_rtt_ns: f64) -> HostPicker {
        let view = HostView { active: 0, ewma: Ewma::new(default_rtt_ns.max(1.0)), outlier: OutlierHost::default() };
        HostPicker { hosts: vec![view; replicas as usize], next_rr: 0, ejected: 0 }
    }

    /// Attempts out at host `replica` whose caller still waits.
    pub fn active(&self, replica: usize) -> u32 {
        self.hosts[replica].active
    }

    /// Whether no attempt is out at any host.
    pub fn idle(&self) -> bool {
        self.hosts.iter().all(|h| h.active == 0)
    }

    /// Whether host `replica` is ejected by outlier detection now.
    pub fn ejected(&self, replica: usize) -> bool {
        self.hosts[replica].outlier.ejected
    }

    /// The host the next attempt goes to, as a replica index. `tried`: the
    /// hosts (bit r for replica r < 32) this call has already tried, which
    /// `retry_other_host` avoids; `draw(i)`: the attempt's i-th uniform draw.
    pub fn pick(&mut self, spec: &HostsSpec, tried: u32, now: Nanos, draw: impl Fn(u64) -> f64) -> usize {
        let n = self.hosts.len();
        // Envoy's panic threshold, 50%: with fewer healthy, ejection is ignored.
        let panic = (n - self.ejected as usize) * 2 < n;
        let avoid = if spec.retry_other_host { tried } else { 0 };
        let ok = |p: &HostPicker, r: usize, avoid: u32| {
            (panic || !p.hosts[r].outlier.ejected) && (r >= 32 || avoid & (1 << r) == 0)
        };
        let mut count = (0..n).filter(|&r| ok(self, r, avoid)).count();
        let avoid = if count == 0 {
            count = (0..n).filter(|&r| ok(self, r, 0)).count();
            0
        } else {
            avoid
        };
        if count == 0 {
            // Nothing healthy: every host.
            return (draw(0) * n as f64) as usize % n;
        }
        // The k-th eligible replica.
        let nth = |p: &HostPicker, k: usize| (0..n).filter(|&r| ok(p, r, avoid)).nth(k).expect("k < count");
        let pick = |i: u64| ((draw(i) * count as f64) as usize).min(count - 1);
        match spec.balancer {
            Balancer::RoundRobin => {
                let start = self.next_rr as usize % n;
                let r = (0..n).map(|i| (start + i) % n).find(|&r| ok(self, r, avoid)).expect("count > 0");
                self.next_rr = (r + 1) as u32;
                r
            }
            Balancer::Random => nth(self, pick(0)),
            Balancer::LeastRequest => {
                // Envoy: choice_count = 2 draws with replacement; the first wins ties.
                let a = nth(self, pick(0));
                let b = nth(self, pick(1));
                if self.hosts[b].active < self.hosts[a].active { b } else { a }
            }
            Balancer::PeakEwma => {
                if count == 1 {
                    nth(self, 0)
                } else {
                    // tower p2c: two distinct hosts; the lower cost wins, the first on ties.
                    let i = pick(0);
                    let mut j = ((draw(1) * (count - 1) as f64) as usize).min(count - 2);
                    if j >= i {
                        j += 1;
                    }
                    let (a, b) = (nth(self, i), nth(self, j));
                    let mut cost = |r: usize| {
                        let h = &mut self.hosts[r];
                        h.ewma.decayed(now) * (h.active + 1) as f64
                    };
                    if cost(a) <= cost(b) { a } else { b }
                }
            }
        }
    }

    /// An attempt was sent to host `replica`: its caller now waits for it.
    pub fn sent(&mut self, replica: usize) {
        self.hosts[replica].active += 1;
    }

    /// An attempt's caller no longer waits for it at host `replica`
    /// (answered, timed out, cancelled, or gone).
    pub fn released(&mut self, replica: usize) {
        self.hosts[replica].active -= 1;
    }

    /// The caller got `outcome` from host `replica` after `rtt` (or gave
    /// up): peak EWMA and outlier detection learn it. Returns whether the
    /// host was ejected now. The attempt must be [`HostPicker::released`]
    /// separately.
    pub fn observed(&mut self, spec: &HostsSpec, replica: usize, rtt: Nanos, outcome: Outcome, now: Nanos) -> bool {
        let n = self.hosts.len() as f64;
        let host = &mut self.hosts[replica];
        if spec.balancer == Balancer::PeakEwma {
            host.ewma.update(now, rtt as f64);
        }
        let Some(o) = spec.outlier else { return false };
        let od = &mut host.outlier;
        if !is_5xx(outcome) {
            od.consecutive = 0;
            return false;
        }
        od.consecutive += 1;
        if od.consecutive < o.consecutive_5xx || od.ejected {
            return false;
        }
        od.consecutive = 0;
        // Envoy ejectHost: only while the ejected share stays within max_ejection_percent.
        if 100.0 * (self.ejected + 1) as f64 / n > o.max_ejection_percent {
            return false;
        }
        od.ejected = true;
        od.last_ejection = now;
        if (od.backoff as u128) * (o.base_ejection as u128) < o.max_ejection as u128 + o.base_ejection as u128 {
            od.backoff += 1;
        }
        self.ejected += 1;
        true
    }

    /// Outlier detection's interval timer (Envoy `onIntervalTimer`):
    /// hosts ejected for base_ejection × backoff (at most max_ejection)
    /// come back; hosts healthy for an interval since they came back lose
    /// one step of backoff.
    pub fn sweep(&mut self, o: &OutlierSpec, now: Nanos) {
        for h in &mut self.hosts {
            let od = &mut h.outlier;
            if od.ejected {
                let eject_for = (o.base_ejection.saturating_mul(od.backoff as u64)).min(o.max_ejection);
                if eject_for <= now - od.last_ejection {
                    od.ejected = false;
                    od.consecutive = 0;
                    od.last_unejection = Some(now);
                    self.ejected -= 1;
                }
            }
        }
        for h in &mut self.hosts {
            let od = &mut h.outlier;
            if !od.ejected && od.last_unejection.is_some_and(|t| now - t >= o.interval) && od.backoff > 0 {
                od.backoff -= 1;
            }
        }
    }
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
