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
        Self { period: period.max(1), written_since: 0, read: histogram(), write: histogram() }
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

    /// Latencies in the period read and in the period being written.
    pub fn counts(&self) -> (u64, u64) {
        (self.read.len(), self.write.len())
    }
}

/// One period's histogram: 1 ns to 1 day at 2 significant digits (256
/// sub-buckets: exact below 256 ns, then steps of 2^k from 256 · 2^(k-1)).
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 86_400_000_000_000, 2).expect("static histogram bounds are valid")
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

    /// Latencies learnt in the period read and in the one being written,
    /// for a quantile delay (`None` for a fixed one).
    pub fn latency_counts(&self) -> Option<(u64, u64)> {
        matches!(self.delay, HedgeDelay::Quantile(_)).then(|| self.latency.counts())
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

    // The numbers of the two tests below are also asserted by the Python
    // runtime's tests (sdk/python/tests/test_latency.py): keep both in step.

    #[test]
    fn the_histogram_counts_in_steps_of_two_significant_digits() {
        let h = histogram();
        assert_eq!(h.distinct_values(), 5248, "41 half-buckets of 128");
        let cases: [(u64, u64, u64); 12] = [
            (1, 1, 1),
            (255, 255, 255),
            (256, 256, 257),
            (257, 256, 257),
            (511, 510, 511),
            (512, 512, 515),
            (1023, 1020, 1023),
            (1024, 1024, 1031),
            (134_217_727, 133_693_440, 134_217_727),
            (134_217_728, 134_217_728, 135_266_303),
            (100_000_000, 99_614_720, 100_139_007),
            (86_400_000_000_000, 86_311_662_780_416, 86_861_418_594_303),
        ];
        for (v, low, high) in cases {
            assert_eq!((h.lowest_equivalent(v), h.highest_equivalent(v)), (low, high), "{v}");
        }
    }

    #[test]
    fn the_window_reads_quantiles_as_the_histogram_gives_them() {
        let read = |values: &[Nanos], qs: &[f64]| -> Vec<Option<Nanos>> {
            let mut w = LatencyWindow::new(LATENCY_PERIOD);
            for (i, &v) in values.iter().enumerate() {
                w.record(i as Nanos, v);
            }
            w.advance(LATENCY_PERIOD);
            qs.iter().map(|&q| w.quantile(q)).collect()
        };
        let ms: Vec<Nanos> = (1..=100).map(|i| i * MS).collect();
        assert_eq!(
            read(&ms, &[0.5, 0.9, 0.95, 0.99, 0.999]),
            [50_069_503, 90_177_535, 95_420_415, 99_090_431, 100_139_007].map(Some)
        );
        // ceil(0.5 · 25) = 13th value, 144 568 ns, in a step of 1024.
        let squares: Vec<Nanos> = (0..25).map(|i| 1_000 + 997 * i * i).collect();
        assert_eq!(read(&squares, &[0.5, 0.9, 0.04]), [145_407, 485_375, 1_003].map(Some));
        // 0 counts as 1 ns; 2^50 ns is past the counts and is counted at 1 day.
        let extremes: Vec<Nanos> = [vec![0; 19], vec![1 << 50]].concat();
        assert_eq!(read(&extremes, &[0.5, 0.99]), [1, 86_861_418_594_303].map(Some));
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
