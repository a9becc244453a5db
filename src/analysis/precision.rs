//! Replications until precise: keep adding replications in deterministic
//! batches until every headline metric's 95% CI half-width is below a share
//! of its mean (or an absolute floor near zero), or a cap is reached.

use super::replicate::{RunSet, run_ranges};
use super::stats::summarize;
use crate::config::Scenario;
use crate::model::RunOptions;

/// The metrics `--precision` watches, with the absolute floor under which
/// a half-width counts as precise whatever the mean (counts: half an
/// event; shares and seconds: 1e-4).
pub const WATCHED: [(&str, f64); 10] = [
    ("success_rate", 1e-4),
    ("goodput_per_s", 1e-4),
    ("attempts_per_intent", 1e-4),
    ("amplification", 1e-4),
    ("latency_p50_s", 1e-4),
    ("latency_p99_s", 1e-4),
    ("latency_p999_s", 1e-4),
    ("wasted_fraction", 1e-4),
    ("duplicate_intents", 0.5),
    ("orphan_commits", 0.5),
];

/// How a precision-driven run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum PrecisionOutcome {
    /// Every watched metric is precise after this many replications.
    Reached { replications: u32 },
    /// The cap was reached; the least precise (variant, metric, relative half-width).
    Capped { replications: u32, worst: (String, String, f64) },
}

/// The least precise watched metric of a run set, as (variant, metric,
/// half-width / |mean|), if any is not yet precise at `share`.
pub fn imprecise(set: &RunSet, share: f64) -> Option<(String, String, f64)> {
    let mut worst: Option<(String, String, f64)> = None;
    // Amplification at the one service the summary takes it at.
    let amp = set.amplification_service(0);
    for v in &set.variants {
        for (metric, floor) in WATCHED {
            let values: Vec<Option<f64>> = v
                .runs
                .iter()
                .map(|r| match (metric, &amp) {
                    ("amplification", Some(svc)) => r
                        .services
                        .iter()
                        .find(|(n, _)| n == svc)
                        .and_then(|(_, m)| m.get("requests_per_intent").copied().flatten()),
                    _ => r.metrics.get(metric).copied().flatten(),
                })
                .collect();
            let s = summarize(values);
            let (Some(mean), Some(h)) = (s.mean, s.half_width()) else {
                if s.mean.is_some() && v.runs.len() < 2 {
                    return Some((v.scenario.variant.clone(), metric.to_string(), f64::INFINITY));
                }
                continue;
            };
            if h <= floor || h <= share * mean.abs() {
                continue;
            }
            let rel = if mean.abs() > 0.0 { h / mean.abs() } else { f64::INFINITY };
            if worst.as_ref().is_none_or(|w| rel > w.2) {
                worst = Some((v.scenario.variant.clone(), metric.to_string(), rel));
            }
        }
    }
    worst
}

/// Runs the scenarios' own replications, then adds batches (half the
/// replications so far, at least 2) until precise or `max` replications.
pub fn run_until_precise(
    scenarios: &[Scenario],
    share: f64,
    max: u32,
    jobs: usize,
    options: RunOptions,
    on_run_done: &(dyn Fn() + Sync),
) -> anyhow::Result<(RunSet, PrecisionOutcome)> {
    let first = scenarios.iter().map(|s| s.replications).max().unwrap_or(2).clamp(2, max.max(2));
    let ranges: Vec<_> = scenarios.iter().map(|_| 0..first).collect();
    let mut set = run_ranges(scenarios, &ranges, jobs, options, on_run_done)?;
    let mut done = first;
    loop {
        match imprecise(&set, share) {
            None => return Ok((set, PrecisionOutcome::Reached { replications: done })),
            Some(worst) if done >= max => {
                return Ok((set, PrecisionOutcome::Capped { replications: done, worst }));
            }
            Some(_) => {
                let next = (done + (done / 2).max(2)).min(max);
                let ranges: Vec<_> = scenarios.iter().map(|_| done..next).collect();
                set.extend(run_ranges(scenarios, &ranges, jobs, options, on_run_done)?);
                done = next;
            }
        }
    }
}
