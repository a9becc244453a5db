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
    /// Seconds from the first disturbance until goodput first fell below
    /// half its pre-trigger level; `None` when it never did or is undefined.
    pub collapse_time_s: Option<f64>,
    /// The baseline window was itself overloaded (a service got more than
    /// it can serve, or goodput was below 95% of offered intents): there is
    /// no healthy state to recover to, and both recovery metrics are `None`.
    pub never_healthy: bool,
}

impl Recovery {
    const UNDEFINED: Recovery =
        Recovery { recovery_time_s: None, recovered: None, collapse_time_s: None, never_healthy: false };
}

/// The share of offered intents the baseline window must turn into goodput
/// to count as healthy (the same 95% recovery is measured against).
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
pub fn disturbances(s: &Scenario) -> Vec<(Nanos, Nanos)> {
    let mut out: Vec<(Nanos, Nanos)> = s.faults.iter().map(|f| (f.start, f.end)).collect();
    for c in &s.clients {
        match &c.mode {
            ClientMode::Open(schedule) => out.extend(schedule.0.iter().skip(1).map(|&(at, _)| (at, at))),
            ClientMode::Burst { at, spread } => out.push((*at, at + spread)),
            ClientMode::Closed { .. } => {}
        }
    }
    out
}

/// Computes the metrics from per-bin goodput and offered counts;
/// `overloaded`: some service got more requests over the baseline window
/// than it can serve.
pub fn recovery(
    goodput: &[u64],
    offered: &[u64],
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
    let hi = (first / bin) as usize;
    if hi <= lo {
        return Recovery::UNDEFINED;
    }
    let count = |v: &[u64], a: usize, b: usize| -> u64 { v.iter().take(b).skip(a).sum() };
    let (g, o) = (count(goodput, lo, hi), count(offered, lo, hi));
    if o == 0 || g == 0 {
        return Recovery::UNDEFINED;
    }
    let baseline = g as f64 / o as f64;
    let baseline_goodput = g as f64 / (hi - lo) as f64;
    let bins_in_run = (duration / bin) as usize;
    let collapse = (hi..bins_in_run)
        .find(|&b| (goodput.get(b).copied().unwrap_or(0) as f64) < 0.5 * baseline_goodput)
        .map(|b| to_secs_f64((b as u64 * bin).saturating_sub(first)));
    if overloaded || baseline < HEALTHY_RATIO {
        return Recovery { recovery_time_s: None, recovered: None, collapse_time_s: collapse, never_healthy: true };
    }
    if last_end == NEVER || last_end >= duration {
        return Recovery {
            recovery_time_s: None,
            recovered: Some(0.0),
            collapse_time_s: collapse,
            never_healthy: false,
        };
    }
    // First window of 5 whole bins after the last disturbance whose mean
    // ratio is back to 95% of the baseline.
    let start = last_end.div_ceil(bin) as usize;
    let ratio = |b: usize| {
        let o = offered.get(b).copied().unwrap_or(0);
        (o > 0).then(|| goodput.get(b).copied().unwrap_or(0) as f64 / o as f64)
    };
    for w in start..bins_in_run.saturating_sub(4) {
        let rs: Vec<f64> = (w..w + 5).filter_map(ratio).collect();
        if !rs.is_empty() && rs.iter().sum::<f64>() / rs.len() as f64 >= 0.95 * baseline {
            let t = (w as u64 * bin).saturating_sub(last_end);
            return Recovery {
                recovery_time_s: Some(to_secs_f64(t)),
                recovered: Some(1.0),
                collapse_time_s: collapse,
                never_healthy: false,
            };
        }
    }
    Recovery { recovery_time_s: None, recovered: Some(0.0), collapse_time_s: collapse, never_healthy: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

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
