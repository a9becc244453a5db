//! Replications until precise: keep adding replications in deterministic
//! batches until every watched metric's 95% CI half-width meets the target,
//! or a cap is reached.
//!
//! The target is relative (`0.02`: a half-width of 2% of the mean; for a
//! share, of the smaller of p and 1 − p, so that 99.9% ± 2 points is not
//! "precise") or absolute in points (`0.5pp`: ±0.5 percentage points, for
//! the shares). It applies to each variant's own intervals, or, with
//! `--precision-on differences`, to the paired differences from the
//! baseline that decisions rest on.

use super::replicate::{RunSet, run_ranges};
use super::stats::{paired_at, summarize_metric, yes_no};
use crate::config::Scenario;
use crate::error::InputError;
use crate::model::RunOptions;

/// The metrics `--precision` watches, with the absolute floor under which
/// a half-width counts as precise whatever the mean (counts: half an
/// event; shares and seconds: 1e-4).
pub const WATCHED: [(&str, f64); 11] = [
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
    ("recovered_fraction", 1e-4),
];

/// How precise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// A half-width at most this share of the mean (of min(p, 1 − p) for a share).
    Relative(f64),
    /// A half-width at most this many percentage points, for the shares.
    Points(f64),
}

/// Whose intervals the target applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    /// Each variant's own intervals.
    Variants,
    /// The paired differences of each variant from the baseline.
    Differences,
}

impl Target {
    /// Parses `--precision`: `0.02` or `0.5pp`.
    pub fn parse(text: &str) -> Result<Target, InputError> {
        let t = text.trim();
        let bad = |m: String| InputError::file(format!("--precision {text}"), m);
        if let Some(pp) = t.strip_suffix("pp") {
            let x: f64 = pp.trim().parse().map_err(|_| bad("expected points such as 0.5pp".into()))?;
            if !(x > 0.0 && x < 100.0) {
                return Err(bad(format!("points must be above 0 and below 100, got {x}")));
            }
            return Ok(Target::Points(x));
        }
        let x: f64 = t.parse().map_err(|_| {
            bad("expected a share between 0 and 1 such as 0.02, or percentage points such as 0.5pp".into())
        })?;
        if !(x > 0.0 && x < 1.0) {
            return Err(bad(format!("must be a share between 0 and 1, such as 0.02, got {x}")));
        }
        Ok(Target::Relative(x))
    }

    /// The largest half-width allowed for a metric whose mean (for a
    /// difference: the baseline's mean) is `mean`; `None` when the target
    /// does not apply to it (points to a metric that is no share).
    fn allowed(self, metric: &str, mean: f64, floor: f64) -> Option<f64> {
        let share = super::stats::Range::of(metric) == super::stats::Range::Share;
        match self {
            Target::Points(x) if share => Some(x / 100.0),
            Target::Points(_) => None,
            // A yes/no share is watched in points only: its rarer side is often 0.
            Target::Relative(_) if yes_no(metric) => None,
            // A share is as precise as its rarer side: 99.9% ± 2 points says nothing.
            Target::Relative(r) if share => Some((r * mean.min(1.0 - mean)).max(floor)),
            Target::Relative(r) => Some((r * mean.abs()).max(floor)),
        }
    }

    /// As written in a line of output.
    pub fn label(self) -> String {
        match self {
            Target::Relative(r) => format!("{:.1}% of the mean (of the rarer side of a share)", r * 100.0),
            Target::Points(x) => format!("±{x} points for the shares"),
        }
    }
}

/// How a precision-driven run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum PrecisionOutcome {
    /// Every watched metric is precise after this many replications.
    Reached { replications: u32 },
    /// The cap was reached; the least precise (variant, metric, half-width
    /// over the half-width allowed).
    Capped { replications: u32, worst: (String, String, f64) },
}

/// Every replication's value of `metric` in variant `v` (amplification at
/// the one service the summary takes it at).
fn values(set: &RunSet, v: usize, metric: &str, amp: &Option<String>) -> Vec<Option<f64>> {
    set.variants[v]
        .runs
        .iter()
        .map(|r| match (metric, amp) {
            ("amplification", Some(svc)) => r
                .services
                .iter()
                .find(|(n, _)| n == svc)
                .and_then(|(_, m)| m.get("requests_per_intent").copied().flatten()),
            _ => r.metrics.get(metric).copied().flatten(),
        })
        .collect()
}

/// The least precise watched metric of a run set, as (variant, metric,
/// half-width over the half-width allowed), if any is not yet precise.
pub fn imprecise(set: &RunSet, target: Target, on: On, baseline: usize) -> Option<(String, String, f64)> {
    let mut worst: Option<(String, String, f64)> = None;
    let amp = set.amplification_service(baseline);
    for (vi, v) in set.variants.iter().enumerate() {
        if on == On::Differences && vi == baseline {
            continue;
        }
        for (metric, floor) in WATCHED {
            let mine = values(set, vi, metric, &amp);
            let (h, scale, n) = match on {
                On::Variants => {
                    let s = summarize_metric(metric, mine.clone());
                    (s.half_width(), s.mean, mine.iter().flatten().count())
                }
                On::Differences => {
                    let base = values(set, baseline, metric, &amp);
                    let d = paired_at(&base, &mine, 0.95);
                    let n = d.values.iter().flatten().count();
                    (d.half_width(), summarize_metric(metric, base).mean, n)
                }
            };
            let Some(scale) = scale else { continue };
            let Some(allowed) = target.allowed(metric, scale, floor) else { continue };
            let rel = match h {
                Some(h) => h / allowed,
                None if n < 2 => f64::INFINITY,
                None => continue,
            };
            if rel > 1.0 && worst.as_ref().is_none_or(|w| rel > w.2) {
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
    (target, on, baseline): (Target, On, usize),
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
        match imprecise(&set, target, on, baseline) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_mean_what_they_say() {
        assert_eq!(Target::parse("0.02").unwrap(), Target::Relative(0.02));
        assert_eq!(Target::parse("0.5pp").unwrap(), Target::Points(0.5));
        for bad in ["0", "1", "x", "0pp", "100pp", "-1pp", "2%"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
        // A success of 99.9%: 2% of the mean would allow ±2 points; of the rarer side, ±0.002 points.
        let allowed = Target::Relative(0.02).allowed("success_rate", 0.999, 1e-4).unwrap();
        assert!((allowed - 1e-4).abs() < 1e-12, "{allowed}");
        let allowed = Target::Relative(0.02).allowed("success_rate", 0.5, 1e-4).unwrap();
        assert!((allowed - 0.01).abs() < 1e-12);
        // Points apply to shares only; a latency keeps the relative rule.
        assert_eq!(Target::Points(0.5).allowed("success_rate", 0.9, 1e-4), Some(0.005));
        assert_eq!(Target::Points(0.5).allowed("latency_p99_s", 0.2, 1e-4), None);
        assert!((Target::Relative(0.1).allowed("latency_p99_s", 0.2, 1e-4).unwrap() - 0.02).abs() < 1e-15);
        // A yes/no share is watched in points only.
        assert_eq!(Target::Relative(0.1).allowed("recovered_fraction", 1.0, 1e-4), None);
        assert_eq!(Target::Points(10.0).allowed("recovered_fraction", 1.0, 1e-4), Some(0.1));
    }
}
