//! Metastability metrics (DESIGN §5): whether and when the ratio of
//! goodput to offered intents came back after the last disturbance, and
//! when goodput first collapsed below half its pre-trigger level.

use crate::config::{ClientMode, Scenario};
use crate::engine::{NEVER, Nanos, to_secs_f64};

/// What the recovery analysis found for one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recovery {
    /// Seconds from the end of the last disturbance to recovery; `None`
    /// when there is no disturbance, no baseline, or no recovery by `duration`.
    pub recovery_time_s: Option<f64>,
    /// 1 if the run recovered, 0 if not; `None` when undefined.
    pub recovered: Option<f64>,
    /// 1 if the users were served again (the goodput ratio came back) but
    /// the system's state did not (a backlog, busy workers, wasted work or
    /// a slow p99 stayed), 0 otherwise; `None` when undefined.
    pub degraded: Option<f64>,
    /// For a degraded run, the condition that kept it from recovering most
    /// often in the windows where the users were served.
    pub degraded_by: Option<Condition>,
    /// Seconds from the first disturbance until goodput first fell below
    /// half its pre-trigger level; `None` when it never did or is undefined.
    pub collapse_time_s: Option<f64>,
    /// The baseline window was itself overloaded (a service got more than
    /// it can serve, or goodput was below 95% of offered intents): there is
    /// no healthy state to recover to, and both recovery metrics are `None`.
    pub never_healthy: bool,
    /// The last disturbance lasts to the end of the arrivals: there is no
    /// after to recover in, and both recovery metrics are `None`.
    pub to_the_end: bool,
}

impl Recovery {
    const UNDEFINED: Recovery = Recovery {
        recovery_time_s: None,
        recovered: None,
        degraded: None,
        degraded_by: None,
        collapse_time_s: None,
        never_healthy: false,
        to_the_end: false,
    };
}

/// The share of offered intents the baseline window must turn into goodput
/// to count as healthy.
pub const HEALTHY_RATIO: f64 = 0.95;

/// The baseline window of `s`: the whole bins in [warmup, first
/// disturbance), as [start, end) in nanoseconds; `None` without a
/// disturbance or without such a bin.
pub fn baseline_span(s: &Scenario) -> Option<(Nanos, Nanos)> {
    let first = disturbances(s).iter().map(|d| d.0).min()?;
    let (lo, hi) = (s.warmup.div_ceil(s.bin), first / s.bin);
    (hi > lo).then(|| (lo * s.bin, hi * s.bin))
}

/// Disturbance windows of a scenario: fault windows and changes of a
/// client's arrival rate (schedule steps, bursts), as (start, end).
///
/// A fault in force from the end of the warm-up (or before) to the end of
/// the run is not a disturbance: it is part of the baseline (a steady
/// error rate, a host down throughout), and recovery is measured with it.
pub fn disturbances(s: &Scenario) -> Vec<(Nanos, Nanos)> {
    let background = |f: &&crate::config::FaultSpec| f.start <= s.warmup && f.end >= s.duration;
    let mut out: Vec<(Nanos, Nanos)> = s.faults.iter().filter(|f| !background(f)).map(|f| (f.start, f.end)).collect();
    for c in &s.clients {
        match &c.mode {
            ClientMode::Open(schedule) => out.extend(schedule.0.iter().skip(1).map(|&(at, _)| (at, at))),
            ClientMode::Burst { at, spread } => out.push((*at, at + spread)),
            ClientMode::Closed { .. } => {}
        }
    }
    out
}

/// Bins in a row that must all be back near the baseline (the window).
pub const WINDOW_BINS: usize = 5;

/// A condition of recovery that can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Condition {
    /// Requests waiting in queues, over every service.
    Queue,
    /// Busy workers, over every service (a backlog being worked off).
    Busy,
    /// Work done for callers that had already given up.
    Wasted,
    /// The p99 latency of the intents that succeeded.
    Latency,
}

impl Condition {
    /// The condition's name in a table or a note.
    pub fn name(self) -> &'static str {
        match self {
            Condition::Queue => "queue",
            Condition::Busy => "busy workers",
            Condition::Wasted => "wasted work",
            Condition::Latency => "p99",
        }
    }
}

/// What recovery looks at in one time bin.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BinState {
    pub goodput: u64,
    pub offered: u64,
    /// Mean requests waiting over the bin, every service.
    pub queue: f64,
    /// Mean busy workers over the bin, every service.
    pub busy: f64,
    /// Executions finished for callers that had given up, every service.
    pub wasted: f64,
    /// The p99 latency (s) of the intents that succeeded in the bin.
    pub p99: Option<f64>,
}

impl BinState {
    /// The state of a time-series row of bins of `bin` nanoseconds.
    pub fn of(row: &super::timeseries::BinRow, bin: Nanos) -> Self {
        let ns = bin as f64;
        BinState {
            goodput: row.goodput,
            offered: row.offered,
            queue: row.queue_area.iter().sum::<f64>() / ns,
            busy: row.busy_area.iter().sum::<f64>() / ns,
            wasted: row.wasted.iter().sum::<u64>() as f64,
            p99: row.latency.as_ref().and_then(|l| l.quantile_s(0.99)),
        }
    }

    /// Goodput over offered intents, at most 1 (a bin of the backlog's
    /// answers cannot make up for a bad one); `None` without an intent.
    fn ratio(&self) -> Option<f64> {
        (self.offered > 0).then(|| (self.goodput as f64 / self.offered as f64).min(1.0))
    }
}

/// The states of the first `bins` bins of a series.
pub fn states(series: &super::timeseries::TimeSeries, bins: usize) -> Vec<BinState> {
    let rows = series.rows();
    (0..bins).map(|b| rows.get(b).map_or_else(BinState::default, |r| BinState::of(r, series.bin()))).collect()
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len().max(1) as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 { xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (mean, var.sqrt())
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    (!xs.is_empty()).then(|| xs[xs.len() / 2])
}

/// What "back near the baseline" means, from the baseline window's bins.
/// The tolerances (docs/model.md, section 9) allow for the bin-to-bin
/// noise the baseline itself shows, with a floor for quiet baselines.
#[derive(Debug, Clone, Copy)]
struct Baseline {
    /// The goodput ratio a window's mean must reach.
    ratio_min: f64,
    queue_max: f64,
    busy_max: f64,
    wasted_max: f64,
    p99_max: Option<f64>,
}

impl Baseline {
    fn of(bins: &[BinState]) -> Baseline {
        // The same statistic a window is judged by: the mean of the bins'
        // ratios, each at most 1 (the capping lowers it where goodput and
        // arrivals fall in different bins).
        let ratios: Vec<f64> = bins.iter().filter_map(BinState::ratio).collect();
        let (ratio, sd_r) = mean_sd(&ratios);
        let k = WINDOW_BINS as f64;
        let stat = |f: fn(&BinState) -> f64| mean_sd(&bins.iter().map(f).collect::<Vec<_>>());
        let (q, sd_q) = stat(|b| b.queue);
        let (busy, sd_b) = stat(|b| b.busy);
        let (w, sd_w) = stat(|b| b.wasted);
        Baseline {
            ratio_min: ratio - (3.0 * sd_r / k.sqrt()).max(0.01),
            queue_max: q + (3.0 * sd_q).max(1.0),
            busy_max: busy + (3.0 * sd_b).max(0.05 * busy).max(0.5),
            wasted_max: w + (3.0 * sd_w).max(1.0),
            p99_max: median(bins.iter().filter_map(|b| b.p99).collect()).map(|p| 1.5 * p + 0.001),
        }
    }

    /// Whether the users are served in `window`: its mean goodput ratio.
    fn users_served(&self, window: &[BinState]) -> bool {
        let r: Vec<f64> = window.iter().filter_map(BinState::ratio).collect();
        !r.is_empty() && r.iter().sum::<f64>() / r.len() as f64 >= self.ratio_min
    }

    /// The first condition of the system's state that `window` fails.
    fn state_fails(&self, window: &[BinState]) -> Option<Condition> {
        let n = window.len() as f64;
        let mean = |f: fn(&BinState) -> f64| window.iter().map(f).sum::<f64>() / n;
        if mean(|b| b.queue) > self.queue_max {
            return Some(Condition::Queue);
        }
        if mean(|b| b.busy) > self.busy_max {
            return Some(Condition::Busy);
        }
        if mean(|b| b.wasted) > self.wasted_max {
            return Some(Condition::Wasted);
        }
        if let (Some(max), Some(p)) = (self.p99_max, median(window.iter().filter_map(|b| b.p99).collect()))
            && p > max
        {
            return Some(Condition::Latency);
        }
        None
    }
}

/// Computes the metrics from the per-bin states of a run; `overloaded`:
/// some service got more requests over the baseline window than it can
/// serve.
///
/// The run has recovered at the first window of [`WINDOW_BINS`] whole bins
/// after the last disturbance in which the users are served (the mean
/// goodput ratio, each bin at most 1, back within the baseline's noise of
/// the baseline ratio) **and** the system's state is back: the mean queue,
/// busy workers and wasted work within the baseline's noise of their
/// baseline means, and the median of the bins' p99 at most 1.5 times the
/// baseline's plus 1 ms. A run whose users are served in some window but
/// whose state never comes back is degraded, not recovered.
pub fn recovery(
    bins: &[BinState],
    bin: Nanos,
    warmup: Nanos,
    duration: Nanos,
    disturbances: &[(Nanos, Nanos)],
    overloaded: bool,
) -> Recovery {
    let Some(first) = disturbances.iter().map(|d| d.0).min() else { return Recovery::UNDEFINED };
    let last_end = disturbances.iter().map(|d| d.1).max().unwrap_or(first);
    // Baseline over the whole bins in [warmup, first disturbance).
    let lo = warmup.div_ceil(bin) as usize;
    let hi = ((first / bin) as usize).min(bins.len());
    if hi <= lo {
        return Recovery::UNDEFINED;
    }
    let (g, o) = bins[lo..hi].iter().fold((0u64, 0u64), |(g, o), b| (g + b.goodput, o + b.offered));
    if o == 0 || g == 0 {
        return Recovery::UNDEFINED;
    }
    let ratio = g as f64 / o as f64;
    let baseline_goodput = g as f64 / (hi - lo) as f64;
    let bins_in_run = ((duration / bin) as usize).min(bins.len());
    let collapse = (hi..bins_in_run)
        .find(|&b| (bins[b].goodput as f64) < 0.5 * baseline_goodput)
        .map(|b| to_secs_f64((b as u64 * bin).saturating_sub(first)));
    let undefined = Recovery { collapse_time_s: collapse, ..Recovery::UNDEFINED };
    if overloaded || ratio < HEALTHY_RATIO {
        return Recovery { never_healthy: true, ..undefined };
    }
    if last_end == NEVER || last_end >= duration {
        return Recovery { to_the_end: true, ..undefined };
    }
    let base = Baseline::of(&bins[lo..hi]);
    let start = last_end.div_ceil(bin) as usize;
    let mut fails = [0usize; 4];
    let mut served = false;
    for w in start..(bins_in_run + 1).saturating_sub(WINDOW_BINS) {
        let window = &bins[w..w + WINDOW_BINS];
        if !base.users_served(window) {
            continue;
        }
        served = true;
        match base.state_fails(window) {
            None => {
                let t = (w as u64 * bin).saturating_sub(last_end);
                return Recovery {
                    recovery_time_s: Some(to_secs_f64(t)),
                    recovered: Some(1.0),
                    degraded: Some(0.0),
                    ..undefined
                };
            }
            Some(c) => fails[c as usize] += 1,
        }
    }
    let by = [Condition::Queue, Condition::Busy, Condition::Wasted, Condition::Latency]
        .into_iter()
        .max_by_key(|c| (fails[*c as usize], std::cmp::Reverse(*c as usize)))
        .filter(|_| served);
    Recovery { recovered: Some(0.0), degraded: Some(if served { 1.0 } else { 0.0 }), degraded_by: by, ..undefined }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    /// Bins with these goodput and offered counts and a quiet state.
    fn ratios(goodput: &[u64], offered: &[u64]) -> Vec<BinState> {
        goodput.iter().zip(offered).map(|(&g, &o)| BinState { goodput: g, offered: o, ..BinState::default() }).collect()
    }

    fn recovery(
        g: &[u64],
        o: &[u64],
        bin: Nanos,
        w: Nanos,
        d: Nanos,
        marks: &[(Nanos, Nanos)],
        over: bool,
    ) -> Recovery {
        super::recovery(&ratios(g, o), bin, w, d, marks, over)
    }

    #[test]
    fn recovers_when_the_ratio_is_back_for_five_bins() {
        // 100 offered per bin; goodput 100 until 10 s, 20 during 10-15 s,
        // 50 for 15-18 s, then 100 again.
        let offered = vec![100u64; 40];
        let goodput: Vec<u64> = (0..40)
            .map(|b| {
                if b < 10 {
                    100
                } else if b < 15 {
                    20
                } else if b < 18 {
                    50
                } else {
                    100
                }
            })
            .collect();
        let r = recovery(&goodput, &offered, S, 2 * S, 40 * S, &[(10 * S, 15 * S)], false);
        // Windows from 15 s: [15,20) mean 0.7, [16,21) 0.8, [17,22) 0.9, [18,23) 1.0.
        assert_eq!(r.recovery_time_s, Some(3.0));
        assert_eq!(r.recovered, Some(1.0));
        assert_eq!(r.collapse_time_s, Some(0.0));
    }

    #[test]
    fn undefined_without_disturbance_or_baseline_and_null_without_recovery() {
        let offered = vec![100u64; 20];
        let good = vec![100u64; 20];
        assert_eq!(recovery(&good, &offered, S, 0, 20 * S, &[], false), Recovery::UNDEFINED);
        assert_eq!(recovery(&good, &offered, S, 0, 20 * S, &[(0, 5 * S)], false), Recovery::UNDEFINED);
        let bad: Vec<u64> = (0..20).map(|b| if b < 5 { 100 } else { 10 }).collect();
        let r = recovery(&bad, &offered, S, 0, 20 * S, &[(5 * S, 6 * S)], false);
        assert_eq!((r.recovery_time_s, r.recovered), (None, Some(0.0)));
        assert_eq!(r.collapse_time_s, Some(0.0));
    }

    #[test]
    fn an_overloaded_baseline_is_never_healthy() {
        // 100 offered per bin, 90 succeed before the disturbance (90% < 95%),
        // and the same 90 after it: the ratio is "back" at once, but there
        // was no healthy state to come back to.
        let offered = vec![100u64; 30];
        let goodput = vec![90u64; 30];
        let r = recovery(&goodput, &offered, S, 0, 30 * S, &[(10 * S, 12 * S)], false);
        assert!(r.never_healthy);
        assert_eq!((r.recovery_time_s, r.recovered), (None, None));
        // 96% is healthy: it recovers as soon as it can.
        let goodput = vec![96u64; 30];
        let r = recovery(&goodput, &offered, S, 0, 30 * S, &[(10 * S, 12 * S)], false);
        assert!(!r.never_healthy);
        assert_eq!((r.recovery_time_s, r.recovered), (Some(0.0), Some(1.0)));
        // A service over capacity in the baseline window: never healthy whatever the ratio.
        let r = recovery(&goodput, &offered, S, 0, 30 * S, &[(10 * S, 12 * S)], true);
        assert!(r.never_healthy && r.recovered.is_none());
    }
}
