//! The per-bin time series of one run (DESIGN §5 `timeseries.csv`).

use super::bin_latency::BinLatency;
use crate::engine::{Nanos, nanos_f64, to_secs_f64};

/// Counters of one time bin.
#[derive(Clone, Debug, Default)]
pub struct BinRow {
    /// Intents that arrived.
    pub offered: u64,
    /// Attempts sent on client edges.
    pub attempts: u64,
    /// Intents that ended `ok`.
    pub goodput: u64,
    /// Latency of the intents that ended `ok` in this bin.
    pub latency: Option<BinLatency>,
    /// Per service: ∫ queue length dt (ns).
    pub queue_area: Vec<f64>,
    /// Per service: ∫ busy workers dt (ns).
    pub busy_area: Vec<f64>,
    /// Per service: executions finished for callers that had given up.
    pub wasted: Vec<u64>,
    /// Hedged copies sent (every edge).
    pub hedges: u64,
    /// Attempts a client-side throttle refused or held back (every edge).
    pub throttled: u64,
    /// Per client class, when there are several: intents that arrived and
    /// intents that ended `ok` (empty with one class).
    pub class_offered: Vec<u64>,
    pub class_goodput: Vec<u64>,
    /// Per message queue: ∫ messages in the queue dt (ns); as long as the
    /// highest queue index recorded in this bin (missing entries are 0).
    pub queue_depth_area: Vec<f64>,
}

/// Time series of one run.
#[derive(Clone, Debug)]
pub struct TimeSeries {
    bin: Nanos,
    services: usize,
    /// Client classes counted apart (0 with a single class).
    classes: usize,
    rows: Vec<BinRow>,
    /// The bin last looked up and its span [start, end): most lookups hit it.
    current: usize,
    current_span: (Nanos, Nanos),
}

impl TimeSeries {
    /// An empty series with bins of `bin` for `services` services and
    /// `classes` client classes (counted apart only when there are several).
    pub fn new(bin: Nanos, services: usize, classes: usize) -> Self {
        let classes = if classes > 1 { classes } else { 0 };
        Self { bin, services, classes, rows: Vec::new(), current: 0, current_span: (0, 0) }
    }

    /// The bin width.
    pub fn bin(&self) -> Nanos {
        self.bin
    }

    /// The rows, bin 0 first.
    pub fn rows(&self) -> &[BinRow] {
        &self.rows
    }

    /// The row of the bin containing `t`, created on demand.
    #[inline]
    pub fn at(&mut self, t: Nanos) -> &mut BinRow {
        let (start, end) = self.current_span;
        if start <= t && t < end {
            return &mut self.rows[self.current];
        }
        self.at_other_bin(t)
    }

    /// [`TimeSeries::at`] for a bin other than the last one looked up.
    fn at_other_bin(&mut self, t: Nanos) -> &mut BinRow {
        let i = (t / self.bin) as usize;
        let start = i as Nanos * self.bin;
        self.current = i;
        self.current_span = (start, start.saturating_add(self.bin));
        if i >= self.rows.len() {
            let (services, classes) = (self.services, self.classes);
            self.rows.resize_with(i + 1, || BinRow {
                queue_area: vec![0.0; services],
                busy_area: vec![0.0; services],
                wasted: vec![0; services],
                class_offered: vec![0; classes],
                class_goodput: vec![0; classes],
                ..BinRow::default()
            });
        }
        &mut self.rows[i]
    }

    /// Adds `queue_len` and `busy` held constant over [from, to) to service `s`.
    #[inline(always)]
    pub fn accumulate(&mut self, s: usize, from: Nanos, to: Nanos, queue_len: usize, busy: u32) {
        if to <= from || (queue_len == 0 && busy == 0) {
            return;
        }
        let (queue_len, busy) = (nanos_f64(queue_len as u64), busy as f64);
        let (start, end) = self.current_span;
        if start <= from && to <= end {
            // Within the bin last looked up (most intervals): the first
            // round of the loop below, without the loop.
            let dt = nanos_f64(to - from);
            let row = &mut self.rows[self.current];
            row.queue_area[s] += queue_len * dt;
            row.busy_area[s] += busy * dt;
            return;
        }
        let mut t = from;
        while t < to {
            self.at(t);
            let end = self.current_span.1.min(to);
            let dt = nanos_f64(end - t);
            let row = &mut self.rows[self.current];
            row.queue_area[s] += queue_len * dt;
            row.busy_area[s] += busy * dt;
            t = end;
        }
    }

    /// Adds `depth` messages held in message queue `q` over [from, to).
    pub fn accumulate_queue(&mut self, q: usize, from: Nanos, to: Nanos, depth: u32) {
        let mut t = from;
        while t < to && depth > 0 {
            self.at(t);
            let end = self.current_span.1.min(to);
            let row = &mut self.rows[self.current];
            if row.queue_depth_area.len() <= q {
                row.queue_depth_area.resize(q + 1, 0.0);
            }
            row.queue_depth_area[q] += depth as f64 * nanos_f64(end - t);
            t = end;
        }
    }

    /// Records an intent of client class `class` arriving at `t`.
    #[inline]
    pub fn record_arrival(&mut self, t: Nanos, class: usize) {
        let row = self.at(t);
        row.offered += 1;
        if let Some(n) = row.class_offered.get_mut(class) {
            *n += 1;
        }
    }

    /// Records a successful intent of client class `class` ending at `t` after `latency`.
    pub fn record_success(&mut self, t: Nanos, latency: Nanos, class: usize) {
        let row = self.at(t);
        row.goodput += 1;
        if let Some(n) = row.class_goodput.get_mut(class) {
            *n += 1;
        }
        row.latency.get_or_insert_with(BinLatency::default).record(latency);
    }

    /// Makes sure bins exist up to time `end`.
    pub fn extend_to(&mut self, end: Nanos) {
        if end > 0 {
            self.at(end - 1);
        }
    }

    /// Bin start time in seconds.
    pub fn t_s(&self, i: usize) -> f64 {
        to_secs_f64(i as u64 * self.bin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_split_across_bins() {
        let mut ts = TimeSeries::new(100, 1, 1);
        ts.accumulate(0, 50, 250, 2, 1);
        let q: Vec<f64> = ts.rows().iter().map(|r| r.queue_area[0]).collect();
        assert_eq!(q, vec![100.0, 200.0, 100.0]);
        let b: f64 = ts.rows().iter().map(|r| r.busy_area[0]).sum();
        assert_eq!(b, 200.0);
    }

    #[test]
    fn classes_are_counted_apart_only_when_there_are_several() {
        let mut ts = TimeSeries::new(100, 1, 2);
        ts.record_arrival(10, 0);
        ts.record_arrival(20, 1);
        ts.record_arrival(150, 1);
        ts.record_success(30, 5, 1);
        let r = ts.rows();
        assert_eq!((r[0].offered, r[0].class_offered.clone(), r[1].class_offered.clone()), (2, vec![1, 1], vec![0, 1]));
        assert_eq!((r[0].goodput, r[0].class_goodput.clone()), (1, vec![0, 1]));
        let mut one = TimeSeries::new(100, 1, 1);
        one.record_success(30, 5, 0);
        assert!(one.rows()[0].class_goodput.is_empty() && one.rows()[0].goodput == 1);
    }
}
