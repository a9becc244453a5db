//! Hedged requests: send another copy of a request when the first has not
//! answered within a delay, take the first final answer, cancel the rest.
//!
//! The delay is fixed (gRPC `hedgingDelay`) or a quantile of the edge's
//! observed latency (tower `hedge`, Finagle `BackupRequestFilter`), learnt
//! as the run goes in a [`LatencyWindow`]: two rotating periods, the last
//! complete one read and the current one written, so that the estimate
//! follows the service. No hedge is sent until the read period holds
//! [`MIN_DATA_POINTS`] latencies. `max_extra_load` caps hedges at a share of
//! first attempts over a sliding [`EXTRA_LOAD_TTL`] (Finagle's and brpc's
//! backup-request budget).
//!
//! Like every machine here, the hedger reads no clock: each method takes
//! `now`.

use super::budget::{Budget, BudgetKind};
use super::{Outcome, RetryOn};
use crate::time::Nanos;
use hdrhistogram::Histogram;

/// Length of one period of the [`LatencyWindow`].
pub const LATENCY_PERIOD: Nanos = 5_000_000_000;

/// Latencies the read period needs before a quantile delay is trusted.
pub const MIN_DATA_POINTS: u64 = 20;

/// The sliding window over which `max_extra_load` counts first attempts.
pub const EXTRA_LOAD_TTL: Nanos = 10_000_000_000;

/// When the next copy goes out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HedgeDelay {
    /// After this long without a final answer.
    Fixed(Nanos),
    /// After this quantile (in (0, 1)) of the edge's observed latency.
    Quantile(f64),
}

/// A validated `[hedging]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct HedgeSpec {
    /// Copies in flight at most, the first included.
    pub max_attempts: u32,
    /// The wait before each further copy.
    pub delay: HedgeDelay,
    /// Hedges at most this share of first attempts; `None` = no cap.
    pub max_extra_load: Option<f64>,
    /// Answers that let the other copies go on (and send the next at once).
    pub non_fatal: RetryOn,
    /// The first final answer cancels the other copies at their service.
    pub cancel: bool,
}

impl HedgeSpec {
    /// Whether `outcome` lets the other copies go on: a non-fatal status,
    /// or a copy's own per-try timeout.
    pub fn is_non_fatal(&self, outcome: Outcome) -> bool {
        outcome == Outcome::Timeout || (outcome != Outcome::Ok && self.non_fatal.contains(outcome))
    }
}

/// Latencies over two rotating periods (tower's `RotatingHistogram`).
#[derive(Debug, Clone)]
pub struct LatencyWindow {
    period: Nanos,
    /// Start of the period being written.
    written_since: Nanos,
    read: Histogram<u64>,
    write: Histogram<u64>,
}

impl LatencyWindow {
    /// An empty window with periods of `period`.
    pub fn new(period: Nanos) -> Self {
        let h = || Histogram::new_with_bounds(1, 86_400_000_000_000, 2).expect("static histogram bounds are valid");
        Self { period: period.max(1), written_since: 0, read: h(), write: h() }
    }

    /// Rotates the periods up to `now`.
    pub fn advance(&mut self, now: Nanos) {
        let elapsed = now.saturating_sub(self.written_since);
        if elapsed < self.period {
            return;
        }
        if elapsed >= 2 * self.period {
            // More than a whole period without writes: nothing recent to read.
            self.read.reset();
        } else {
            std::mem::swap(&mut self.read, &mut self.write);
        }
        self.write.reset();
        self.written_since = now - elapsed % self.period;
    }

    /// Records one latency observed at `now`.
    pub fn record(&mut self, now: Nanos, latency: Nanos) {
        self.advance(now);
        self.write.saturating_record(latency.max(1));
    }

    /// The `q` quantile of the last complete period, if it holds enough data.
    pub fn quantile(&self, q: f64) -> Option<Nanos> {
        (self.read.len() >= MIN_DATA_POINTS).then(|| self.read.value_at_quantile(q))
    }
}

/// The hedging state of one call edge: its learnt latency and its
/// extra-load budget.
#[derive(Debug, Clone)]
pub struct Hedger {
    delay: HedgeDelay,
    latency: LatencyWindow,
    extra: Option<Budget>,
}

impl Hedger {
    /// A hedger for `spec` at time 0.
    pub fn new(spec: &HedgeSpec) -> Self {
        let extra = spec
            .max_extra_load
            .map(|ratio| Budget::new(BudgetKind::Ratio { ratio, min_per_sec: 0.0, ttl: EXTRA_LOAD_TTL }));
        Self { delay: spec.delay, latency: LatencyWindow::new(LATENCY_PERIOD), extra }
    }

    /// The wait before the next copy of a call whose copy was sent at
    /// `now`; `None` while a quantile delay has too little data.
    pub fn next_delay(&mut self, now: Nanos) -> Option<Nanos> {
        match self.delay {
            HedgeDelay::Fixed(d) => Some(d),
            HedgeDelay::Quantile(q) => {
                self.latency.advance(now);
                self.latency.quantile(q)
            }
        }
    }

    /// A first attempt was sent.
    pub fn on_first(&mut self, now: Nanos) {
        if let Some(b) = &mut self.extra {
            b.on_send(now, false);
        }
    }

    /// Whether `max_extra_load` leaves room for one more hedge now. Spends nothing.
    pub fn grants(&mut self, now: Nanos) -> bool {
        self.extra.as_mut().is_none_or(|b| b.grants(now, Outcome::Timeout))
    }

    /// First attempts and hedges within the extra-load window at `now`
    /// (`None` without `max_extra_load`).
    pub fn extra_counts(&mut self, now: Nanos) -> Option<(u64, u64)> {
        self.extra.as_mut().map(|b| b.counts(now))
    }

    /// A hedge was sent.
    pub fn on_hedge(&mut self, now: Nanos) {
        if let Some(b) = &mut self.extra {
            b.on_send(now, true);
        }
    }

    /// The latency of a call's first copy (to its answer, or to the moment
    /// it was given up) seen at `now`.
    pub fn record(&mut self, now: Nanos, latency: Nanos) {
        if matches!(self.delay, HedgeDelay::Quantile(_)) {
            self.latency.record(now, latency);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;
    const S: Nanos = 1_000_000_000;

    fn spec(delay: HedgeDelay, max_extra_load: Option<f64>) -> HedgeSpec {
        HedgeSpec { max_attempts: 2, delay, max_extra_load, non_fatal: RetryOn::none(), cancel: true }
    }

    #[test]
    fn a_quantile_delay_waits_for_a_complete_period_then_reads_it() {
        let mut h = Hedger::new(&spec(HedgeDelay::Quantile(0.95), None));
        for i in 0..100 {
            h.record(i * 10 * MS, (i + 1) * MS);
        }
        assert_eq!(h.next_delay(S), None, "the first period is still being written");
        let d = h.next_delay(LATENCY_PERIOD + S).expect("one complete period");
        assert!((d as f64 / (95 * MS) as f64 - 1.0).abs() < 0.02, "p95 of 1..100 ms: {d}");
        // Two periods later with nothing written: no data, no hedge.
        assert_eq!(h.next_delay(3 * LATENCY_PERIOD + S), None);
    }

    #[test]
    fn too_few_points_mean_no_quantile() {
        let mut w = LatencyWindow::new(S);
        for i in 0..(MIN_DATA_POINTS - 1) {
            w.record(i, 5 * MS);
        }
        w.advance(S);
        assert_eq!(w.quantile(0.5), None);
    }

    #[test]
    fn extra_load_caps_hedges_at_a_share_of_first_attempts() {
        let mut h = Hedger::new(&spec(HedgeDelay::Fixed(10 * MS), Some(0.1)));
        for _ in 0..100 {
            h.on_first(0);
        }
        for _ in 0..10 {
            assert!(h.grants(0));
            h.on_hedge(0);
        }
        assert!(!h.grants(0), "11 hedges for 100 first attempts exceed 10%");
        assert!(!h.grants(EXTRA_LOAD_TTL - 1));
        // The window slid past them all: no first attempts, no hedges.
        assert!(!h.grants(EXTRA_LOAD_TTL));
        for _ in 0..10 {
            h.on_first(EXTRA_LOAD_TTL);
        }
        assert!(h.grants(EXTRA_LOAD_TTL));
        assert_eq!(Hedger::new(&spec(HedgeDelay::Fixed(7), None)).next_delay(0), Some(7));
    }

    #[test]
    fn timeouts_and_listed_statuses_are_non_fatal() {
        let s = HedgeSpec { non_fatal: RetryOn::of(&["503"]), ..spec(HedgeDelay::Fixed(1), None) };
        assert!(s.is_non_fatal(Outcome::Status(503)));
        assert!(s.is_non_fatal(Outcome::Timeout));
        assert!(!s.is_non_fatal(Outcome::Status(500)));
        assert!(!s.is_non_fatal(Outcome::Ok));
    }
}
