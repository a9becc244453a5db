//! The paired differences of every variant to the baseline, each with a
//! p-value, and Holm's adjustment over the family the vs-baseline block
//! shows: with (V − 1) × 6 or more comparisons in one table, some would be
//! "significant" by chance at 5% each; Holm keeps the chance of any false
//! one at 5% over the block.
//!
//! - A metric with a value per replication: the paired t test (the same
//!   test its paired Student-t interval inverts).
//! - `recovered_fraction` (recovered or not, per replication): the exact
//!   McNemar test, a sign test over the replications where one variant
//!   recovered and the other did not.
//! - any metric of a variant whose replications split between recovering
//!   and not (the values are two outcomes, not one bell): a sign test.
//! - `recovery_time_s`: a sign test over every replication on which
//!   variant recovered first (a run that did not recover is later than
//!   any that did); the difference shown is that of the Kaplan–Meier
//!   medians. A mean over the replications where both recovered would
//!   drop exactly the replications that tell the variants apart.

use super::VariantSummary;
use crate::analysis::Summary;
use crate::analysis::exact::{holm, paired_t_p, sign_test_p, tost_p};
use crate::analysis::stats::paired_metric;
use crate::config::Margin;

/// The level at which a difference is called significant.
pub const ALPHA: f64 = 0.05;

/// A paired difference to the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// The mean of the differences, its 95% interval and each replication's.
    pub summary: Summary,
    /// The test's two-sided p-value.
    pub p: Option<f64>,
    /// After Holm's adjustment over the family the block shows; `None`
    /// outside that family.
    pub p_adjusted: Option<f64>,
    /// With a margin for the metric (`[experiment] equivalence`): whether
    /// the difference is shown to lie inside it.
    pub equivalence: Option<Equivalence>,
}

/// An equivalence test of a difference (TOST, at [`ALPHA`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Equivalence {
    /// The margin in the metric's unit.
    pub margin: f64,
    /// The larger of the two one-sided tests' p-values; `None` where the
    /// paired t test does not apply (yes/no outcomes, split outcomes,
    /// recovery times).
    pub p: Option<f64>,
}

impl Equivalence {
    /// The difference is shown to lie inside ±margin.
    pub fn equivalent(&self) -> bool {
        self.p.is_some_and(|p| p < ALPHA)
    }
}

impl Difference {
    /// Significant at [`ALPHA`]: by `p_adjusted` in the block's family, by
    /// `p` outside it.
    pub fn significant(&self) -> bool {
        self.p_adjusted.or(self.p).is_some_and(|p| p < ALPHA)
    }
}

/// Whether the variant's replications split between two outcomes: some
/// recovered and some did not.
pub fn split(v: &VariantSummary) -> bool {
    let values = v.metric("recovered_fraction").map(|s| s.values.as_slice()).unwrap_or_default();
    values.contains(&Some(0.0)) && values.contains(&Some(1.0))
}

/// Every pair of a variant's and the baseline's values: `b` the baseline's.
fn pairs(b: &[Option<f64>], v: &[Option<f64>]) -> Vec<(f64, f64)> {
    b.iter().zip(v).filter_map(|(x, y)| Some(((*x)?, (*y)?))).collect()
}

/// The difference of metric `k` of a variant to the baseline, with its
/// equivalence test when the metric has a margin.
fn difference(k: &str, base: &VariantSummary, v: &VariantSummary, margin: Option<Margin>) -> Difference {
    let empty = Vec::new();
    let values = |s: &VariantSummary, m: &str| super::answer::lookup(s, m).map_or(&empty, |x| &x.values).clone();
    let (b, x) = (values(base, k), values(v, k));
    let d = paired_metric(k, &b, &x);
    let mut t_applies = !matches!(k, "recovered_fraction" | "recovery_time_s");
    let p = match k {
        "recovered_fraction" => {
            let (mut up, mut down) = (0, 0);
            for (a, c) in pairs(&b, &x) {
                if c > a {
                    up += 1;
                } else if c < a {
                    down += 1;
                }
            }
            (!pairs(&b, &x).is_empty()).then(|| sign_test_p(up, down))
        }
        "recovery_time_s" => {
            // Not recovered (recovered_fraction 0) is later than any recovery.
            let time = |s: &VariantSummary, r: usize| -> Option<f64> {
                let rec = s.metric("recovered_fraction")?.values.get(r).copied().flatten()?;
                if rec == 0.0 { Some(f64::INFINITY) } else { s.metric(k)?.values.get(r).copied().flatten() }
            };
            let n = b.len().min(x.len());
            let (mut sooner, mut later, mut any) = (0, 0, false);
            for r in 0..n {
                if let (Some(a), Some(c)) = (time(base, r), time(v, r)) {
                    any = true;
                    if c < a {
                        sooner += 1;
                    } else if c > a {
                        later += 1;
                    }
                }
            }
            any.then(|| sign_test_p(sooner, later))
        }
        _ => {
            let diffs: Vec<f64> = pairs(&b, &x).into_iter().map(|(a, c)| c - a).collect();
            if split(base) || split(v) {
                t_applies = false;
                // Some replications recovered and some did not: the values
                // come from two outcomes, not one bell; a sign test assumes
                // nothing about their shape.
                let up = diffs.iter().filter(|d| **d > 0.0).count() as u64;
                let down = diffs.iter().filter(|d| **d < 0.0).count() as u64;
                (!diffs.is_empty()).then(|| sign_test_p(up, down))
            } else {
                paired_t_p(&diffs)
            }
        }
    };
    let summary = if k == "recovery_time_s" {
        // The difference of the Kaplan–Meier medians, without an interval.
        let median = |s: &VariantSummary| s.metric("recovery_time_median_s").and_then(|m| m.mean);
        let mean = median(base).zip(median(v)).map(|(a, c)| c - a);
        Summary { mean, ci95: None, ..d }
    } else {
        d
    };
    let equivalence = margin.map(|m| {
        let margin = m.of(super::answer::lookup(base, k).and_then(|s| s.mean).unwrap_or(0.0));
        let diffs: Vec<f64> = pairs(&b, &x).into_iter().map(|(a, c)| c - a).collect();
        Equivalence { margin, p: if t_applies { tost_p(&diffs, margin) } else { None } }
    });
    Difference { summary, p, p_adjusted: None, equivalence }
}

/// Fills every variant's paired differences to variant `baseline`. A
/// metric that has a reason instead of a mean in either variant has no
/// difference either. Then adjusts the p-values of `family` (the metrics
/// the vs-baseline block shows) over every variant by Holm's method.
/// `margins` are the equivalence margins asked for; `paths` are metrics
/// of classes, services, edges or effects compared besides the headline
/// ones (the answer's).
pub fn compare_to_baseline(
    summaries: &mut [VariantSummary],
    baseline: usize,
    family: &[&str],
    margins: &[(String, Margin)],
    paths: &[String],
) {
    let (before, rest) = summaries.split_at_mut(baseline);
    let (base, after) = rest.split_first_mut().expect("the baseline is one of the variants");
    base.baseline = base.name.clone();
    base.vs_baseline.clear();
    let base = &*base;
    for v in before.iter_mut().chain(after.iter_mut()) {
        v.baseline = base.name.clone();
        let keys: Vec<String> =
            v.metrics.iter().map(|(k, _)| k.clone()).chain(paths.iter().filter(|p| p.contains('.')).cloned()).collect();
        v.vs_baseline = keys
            .iter()
            .map(|k| {
                let margin = margins.iter().find(|(m, _)| m == k).map(|(_, m)| *m);
                let d = difference(k, base, v, margin);
                if v.reasons.contains_key(k.as_str()) || base.reasons.contains_key(k.as_str()) {
                    let summary = Summary { mean: None, ci95: None, ..d.summary };
                    (k.clone(), Difference { summary, p: None, p_adjusted: None, equivalence: None })
                } else {
                    (k.clone(), d)
                }
            })
            .collect();
    }
    // Holm over (variant, metric) in the family.
    let mut at = Vec::new();
    let mut ps = Vec::new();
    for (vi, v) in summaries.iter().enumerate() {
        for (mi, (k, d)) in v.vs_baseline.iter().enumerate() {
            if family.contains(&k.as_str()) && d.summary.mean.is_some() {
                at.push((vi, mi));
                ps.push(d.p);
            }
        }
    }
    for ((vi, mi), adjusted) in at.into_iter().zip(holm(&ps)) {
        summaries[vi].vs_baseline[mi].1.p_adjusted = adjusted;
    }
}

/// The number of comparisons in the adjusted family (for the legend).
pub fn family_size(summaries: &[VariantSummary]) -> usize {
    summaries.iter().flat_map(|v| &v.vs_baseline).filter(|(_, d)| d.p_adjusted.is_some()).count()
}
