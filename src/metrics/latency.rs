//! End-to-end latency of successful intents in an HDR histogram.

use crate::engine::{Nanos, to_secs_f64};
use hdrhistogram::Histogram;

/// The range of latencies kept: 1 µs to 1 day (values outside are clamped).
const LOWEST_NS: u64 = 1_000;
const HIGHEST_NS: u64 = 86_400_000_000_000;

/// A latency histogram in nanoseconds, 1 µs to 1 day, 3 significant digits.
///
/// Its buckets grow with the largest value recorded (HDR auto-resize)
/// instead of covering a day from the start: a run whose latencies stay
/// under a second allocates about a third of the memory, and a small run
/// does not spend its time zeroing counts it never uses. The buckets, and
/// so every quantile, are the same as with the full range.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    sum_ns: u128,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::with_precision(3)
    }
}

impl LatencyHistogram {
    /// A histogram with `digits` significant decimal digits.
    pub fn with_precision(digits: u8) -> Self {
        let mut hist =
            Histogram::new_with_bounds(LOWEST_NS, 2 * LOWEST_NS, digits).expect("static histogram bounds are valid");
        hist.auto(true);
        Self { hist, sum_ns: 0 }
    }

    /// An empty histogram that holds almost no memory, for results that
    /// keep only their metrics (it reads as empty; merging it adds nothing).
    pub fn unallocated() -> Self {
        Self { hist: Histogram::new(1).expect("a 1-digit histogram is valid"), sum_ns: 0 }
    }

    /// Records one latency (values outside the range are clamped).
    #[inline]
    pub fn record(&mut self, ns: Nanos) {
        // Clamped as `saturating_record` on the full range would.
        self.hist.record(ns.clamp(LOWEST_NS, HIGHEST_NS)).expect("a value within a day fits after a resize");
        self.sum_ns += ns as u128;
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The `q` quantile in seconds, `None` when empty.
    pub fn quantile_s(&self, q: f64) -> Option<f64> {
        (self.count() > 0).then(|| to_secs_f64(self.hist.value_at_quantile(q)))
    }

    /// The quantiles `qs` (ascending) in seconds; empty when nothing was
    /// recorded.
    ///
    /// A few quantiles are looked up one by one: each lookup sums the
    /// buckets eight at a time (vectorised), which takes fewer instructions
    /// than one pass that looks at every bucket. Many (a CDF) take that one
    /// pass. Both give exactly the same values.
    pub fn quantiles_s(&self, qs: &[f64]) -> Vec<f64> {
        /// Quantiles up to which separate chunked lookups are cheaper.
        const ONE_BY_ONE: usize = 4;
        if self.count() == 0 {
            return Vec::new();
        }
        debug_assert!(qs.is_sorted(), "quantiles must be ascending");
        if qs.len() <= ONE_BY_ONE {
            qs.iter().map(|&q| to_secs_f64(self.hist.value_at_quantile(q))).collect()
        } else {
            self.hist.value_at_quantiles(qs.iter().copied()).map(to_secs_f64).collect()
        }
    }

    /// The exact mean in seconds, `None` when empty.
    pub fn mean_s(&self) -> Option<f64> {
        (self.count() > 0).then(|| self.sum_ns as f64 / self.count() as f64 / 1e9)
    }

    /// Adds another histogram's values.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        let same_buckets = self.hist.sigfig() == other.hist.sigfig() && self.hist.low() == other.hist.low();
        if self.count() == 0 && other.count() > 0 && same_buckets {
            // Into an empty histogram with the same buckets: a copy, the
            // same counts as adding them, without growing and zeroing first.
            self.hist = other.hist.clone();
            self.hist.auto(true);
        } else {
            self.hist.add(&other.hist).expect("histograms share bounds");
        }
        self.sum_ns += other.sum_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_precision() {
        let mut h = LatencyHistogram::default();
        for ms in 1..=1000u64 {
            h.record(ms * 1_000_000);
        }
        let p99 = h.quantile_s(0.99).unwrap();
        assert!((p99 - 0.990).abs() < 0.001, "{p99}");
        assert!((h.mean_s().unwrap() - 0.5005).abs() < 1e-9);
        assert_eq!(LatencyHistogram::default().quantile_s(0.5), None);
        let qs = [0.01, 0.5, 0.99, 0.999, 1.0];
        let one_pass = h.quantiles_s(&qs);
        let each: Vec<f64> = qs.iter().map(|&q| h.quantile_s(q).unwrap()).collect();
        assert_eq!(one_pass, each);
        assert!(LatencyHistogram::default().quantiles_s(&qs).is_empty());
    }

    #[test]
    fn a_few_quantiles_one_by_one_equal_the_one_pass() {
        // Latencies over five orders of magnitude, so that the quantiles
        // fall in different buckets and inside chunks of eight.
        let mut h = LatencyHistogram::default();
        let mut x = 12_345u64;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            h.record(1_000 + (x >> 40) % 1_000 * ((x >> 20) % 100_000 + 1));
        }
        let many = [0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];
        let one_pass = h.quantiles_s(&many);
        for (i, w) in many.windows(3).enumerate() {
            assert_eq!(h.quantiles_s(w), one_pass[i..i + 3], "{w:?}");
        }
        assert_eq!(h.quantiles_s(&[1.0]), [*one_pass.last().unwrap()]);
    }

    #[test]
    fn merging_into_an_empty_histogram_equals_adding() {
        let mut a = LatencyHistogram::default();
        let mut b = LatencyHistogram::default();
        for i in 1..=500u64 {
            a.record(i * i * 3_700);
            b.record(i * 91_000);
        }
        let qs: Vec<f64> = (1..100).map(|i| i as f64 / 100.0).chain([0.999, 1.0]).collect();
        let mut copied = LatencyHistogram::default();
        copied.merge(&a);
        copied.merge(&b);
        // The same sum recorded value by value.
        let mut recorded = LatencyHistogram::default();
        for i in 1..=500u64 {
            recorded.record(i * i * 3_700);
            recorded.record(i * 91_000);
        }
        assert_eq!(copied.count(), 1000);
        assert_eq!(copied.quantiles_s(&qs), recorded.quantiles_s(&qs));
        assert_eq!(copied.mean_s(), recorded.mean_s());
        // Merging an empty one, or into one made with other buckets, adds.
        let mut coarse = LatencyHistogram::with_precision(2);
        coarse.merge(&LatencyHistogram::unallocated());
        coarse.merge(&a);
        assert_eq!(coarse.count(), 500);
        assert_eq!(coarse.hist.sigfig(), 2);
        // A copy keeps growing past the largest value it was copied with.
        copied.record(3_600_000_000_000);
        assert_eq!(copied.count(), 1001);
    }
}
