//! Adaptive concurrency limits at a host's door, after Netflix
//! concurrency-limits (`AIMDLimit`, `VegasLimit`, `Gradient2Limit`): a
//! request that arrives while the host holds `limit` admitted requests
//! (queued or in service) is shed with the service's `overload` answer.
//! Every admitted request that finishes is one sample (its time at the
//! host, the requests admitted when it arrived, and whether it was a
//! drop), applied at once (no sample window).

use super::*;
use crate::config::{LimitKind, LimitSpec};

/// One host's limit and the state of its update rule.
#[derive(Debug, Clone)]
pub(super) struct Limiter {
    spec: LimitSpec,
    /// The estimated limit (a float, as in the Java code; the door uses its floor).
    estimate: f64,
    /// Vegas: the no-load RTT, probes so far, and this probe's jitter.
    rtt_noload: f64,
    probe_count: u32,
    probes: u64,
    probe_jitter: f64,
    /// Gradient2: the long-term RTT average and its warm-up.
    long_rtt: f64,
    long_sum: f64,
    long_count: u32,
}

/// `Log10RootFunction.create(0)`: max(1, floor(log10 x)) below 1000, else floor(sqrt x).
fn log10_root(x: i64) -> i64 {
    if x < 1000 { (x.max(1) as f64).log10().floor().max(1.0) as i64 } else { (x as f64).sqrt() as i64 }
}

impl Limiter {
    pub(super) fn new(spec: LimitSpec) -> Self {
        Self {
            spec,
            estimate: spec.initial,
            rtt_noload: 0.0,
            probe_count: 0,
            probes: 0,
            probe_jitter: 0.75,
            long_rtt: 0.0,
            long_sum: 0.0,
            long_count: 0,
        }
    }

    /// Requests the host may hold now.
    pub(super) fn limit(&self) -> u32 {
        self.estimate as u32
    }

    /// Sets Vegas' probe jitter (a draw in [0.5, 1)).
    fn jitter(&mut self, u: f64) {
        self.probe_jitter = 0.5 + 0.5 * u;
    }

    /// One sample: `rtt` in ns, `inflight` when it arrived, `drop`.
    /// `u` is a uniform draw for Vegas' next probe jitter.
    pub(super) fn sample(&mut self, rtt: f64, inflight: u32, drop: bool, u: impl FnOnce(u64) -> f64) {
        let rtt = rtt.max(1.0);
        let inflight = inflight as f64;
        let (min, max) = (self.spec.min, self.spec.max);
        let limit = self.estimate;
        let next = match self.spec.kind {
            LimitKind::Aimd { backoff_ratio, timeout } => {
                let current = limit.floor();
                if drop || rtt > timeout as f64 {
                    (current - 1.0).min((current * backoff_ratio).floor()).max(1.0)
                } else if inflight * 2.0 >= current {
                    current + 1.0
                } else {
                    return;
                }
            }
            LimitKind::Vegas { smoothing, probe_multiplier } => {
                self.probe_count += 1;
                if self.probe_jitter * probe_multiplier as f64 * limit <= self.probe_count as f64 {
                    // Probe: take this RTT as the new no-load RTT.
                    self.probes += 1;
                    self.jitter(u(self.probes));
                    self.probe_count = 0;
                    self.rtt_noload = rtt;
                    return;
                }
                if self.rtt_noload == 0.0 || rtt < self.rtt_noload {
                    self.rtt_noload = rtt;
                    return;
                }
                let queue = (limit * (1.0 - self.rtt_noload / rtt)).ceil();
                let l = limit as i64;
                let decrease = limit - log10_root(l) as f64;
                let new = if drop {
                    decrease
                } else if inflight * 2.0 < limit {
                    return;
                } else {
                    let (alpha, beta, threshold) = (3 * log10_root(l), 6 * log10_root(l), log10_root(l));
                    if queue <= threshold as f64 {
                        limit + beta as f64
                    } else if queue < alpha as f64 {
                        limit + log10_root(l) as f64
                    } else if queue > beta as f64 {
                        decrease
                    } else {
                        return;
                    }
                };
                let new = new.clamp(1.0, max);
                (1.0 - smoothing) * limit + smoothing * new
            }
            LimitKind::Gradient2 { smoothing, long_window, queue_size } => {
                let short = rtt;
                // ExpAvgMeasurement(long_window, warmup 10).
                if self.long_count < 10 {
                    self.long_count += 1;
                    self.long_sum += rtt;
                    self.long_rtt = self.long_sum / self.long_count as f64;
                } else {
                    let factor = 2.0 / (long_window as f64 + 1.0);
                    self.long_rtt = self.long_rtt * (1.0 - factor) + rtt * factor;
                }
                if self.long_rtt / short > 2.0 {
                    self.long_rtt *= 0.9;
                }
                if inflight < limit / 2.0 {
                    return;
                }
                let gradient = (self.long_rtt / short).clamp(0.5, 1.0);
                let new = limit * gradient + queue_size;
                limit * (1.0 - smoothing) + new * smoothing
            }
        };
        self.estimate = next.clamp(min, max);
    }
}

impl World<'_> {
    /// Whether host `h`'s concurrency limit admits one more request.
    pub(super) fn limit_admits(&mut self, h: usize, id: Id) -> bool {
        let now = self.q.now();
        let host = &mut self.hosts[h];
        let Some(l) = &host.limiter else { return true };
        if host.admitted >= l.limit() {
            return false;
        }
        host.admitted += 1;
        let inflight = host.admitted;
        self.requests.get_mut(id).expect("live").limit = Some(LimitSlot { reached_at: now, inflight_at: inflight });
        true
    }

    /// An admitted request was cancelled: its place under the limit is
    /// free again, and it is no sample.
    pub(super) fn limit_ignore(&mut self, id: Id) {
        let r = self.requests.get_mut(id).expect("live");
        if r.limit.take().is_some() {
            self.hosts[r.host as usize].admitted -= 1;
        }
    }

    /// An admitted request leaves its host with `outcome`: one sample.
    /// A 5xx answer is a drop; other failures (4xx) are not sampled.
    pub(super) fn limit_sample(&mut self, id: Id, outcome: Outcome) {
        let now = self.q.now();
        let r = self.requests.get_mut(id).expect("live");
        let Some(slot) = r.limit.take() else {
            return;
        };
        let (h, rtt, inflight) = (r.host as usize, now.saturating_sub(slot.reached_at), slot.inflight_at);
        let rng = self.rng;
        let host = &mut self.hosts[h];
        host.admitted -= 1;
        let drop = match outcome {
            Outcome::Ok => false,
            Outcome::Status(s) if s >= 500 => true,
            _ => return,
        };
        let hk = h as u64;
        if let Some(l) = host.limiter.as_mut() {
            l.sample(rtt as f64, inflight, drop, |n| rng.unit(&[purpose::LIMIT_PROBE, hk, n]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: LimitKind, initial: f64, min: f64, max: f64) -> LimitSpec {
        LimitSpec { kind, initial, min, max }
    }

    #[test]
    fn aimd_adds_one_and_backs_off_as_aimd_limit() {
        let mut l =
            Limiter::new(spec(LimitKind::Aimd { backoff_ratio: 0.9, timeout: 5_000_000_000 }, 10.0, 1.0, 200.0));
        // inflight * 2 >= limit: +1.
        l.sample(1e6, 5, false, |_| 0.5);
        assert_eq!(l.limit(), 11);
        // App-limited (inflight * 2 < limit): unchanged.
        l.sample(1e6, 2, false, |_| 0.5);
        assert_eq!(l.limit(), 11);
        // A drop: max(1, min(limit - 1, floor(limit * 0.9))) = 9.
        l.sample(1e6, 10, true, |_| 0.5);
        assert_eq!(l.limit(), 9);
        // An RTT above the timeout is a drop too: min(8, floor(8.1)) = 8.
        l.sample(6e9, 10, false, |_| 0.5);
        assert_eq!(l.limit(), 8);
    }

    #[test]
    fn vegas_follows_its_queue_estimate() {
        let mut l = Limiter::new(spec(LimitKind::Vegas { smoothing: 1.0, probe_multiplier: 1000 }, 20.0, 1.0, 1000.0));
        // The first sample sets rtt_noload.
        l.sample(10e6, 20, false, |_| 0.5);
        assert_eq!(l.limit(), 20);
        // No queueing (rtt = noload): queue 0 <= threshold 1: + beta = 6 * log10(20) = 6.
        l.sample(10e6, 20, false, |_| 0.5);
        assert_eq!(l.limit(), 26);
        // rtt = 2 * noload: queue = ceil(26 * 0.5) = 13 > beta 6: - log10 = 25.
        l.sample(20e6, 26, false, |_| 0.5);
        assert_eq!(l.limit(), 25);
        // queue = ceil(25 * (1 - 10/11)) = 3: not <= 1, not < alpha 3, not > 6: unchanged.
        l.sample(11e6, 25, false, |_| 0.5);
        assert_eq!(l.limit(), 25);
        // A drop: limit - log10(limit).
        l.sample(11e6, 25, true, |_| 0.5);
        assert_eq!(l.limit(), 24);
        // App-limited: unchanged.
        l.sample(10e6, 5, false, |_| 0.5);
        assert_eq!(l.limit(), 24);
    }

    #[test]
    fn gradient2_applies_the_long_over_short_gradient() {
        let mut l = Limiter::new(spec(
            LimitKind::Gradient2 { smoothing: 0.2, long_window: 600, queue_size: 4.0 },
            20.0,
            20.0,
            200.0,
        ));
        // Steady RTT: gradient 1, new = 20 + 4, smoothed 20 * 0.8 + 24 * 0.2 = 20.8.
        l.sample(10e6, 20, false, |_| 0.5);
        assert!((l.estimate - 20.8).abs() < 1e-9, "{}", l.estimate);
        // Warm-up average of 10 and 30 ms = 20 ms; short 30: gradient 2/3.
        l.sample(30e6, 20, false, |_| 0.5);
        let g = 20.0 / 30.0;
        let expect: f64 = 20.8 * 0.8 + (20.8 * g + 4.0) * 0.2;
        assert!((l.estimate - expect.max(20.0)).abs() < 1e-9, "{} vs {expect}", l.estimate);
        // A slow sample: long = (10 + 30 + 1000) / 3 ms, gradient floored at
        // 0.5, new = 20.2 * 0.5 + 4, smoothed below 20: held at min = 20.
        l.sample(1e9, 30, false, |_| 0.5);
        assert_eq!(l.estimate, 20.0);
        // App-limited (inflight < limit / 2): unchanged.
        l.sample(1e6, 5, false, |_| 0.5);
        assert_eq!(l.estimate, 20.0);
    }

    #[test]
    fn log10_root_matches_netflix() {
        assert_eq!(log10_root(0), 1);
        assert_eq!(log10_root(9), 1);
        assert_eq!(log10_root(20), 1);
        assert_eq!(log10_root(100), 2);
        assert_eq!(log10_root(999), 2);
        assert_eq!(log10_root(1600), 40);
    }
}
