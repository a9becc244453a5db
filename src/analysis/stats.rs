//! Means and Student-t confidence intervals over replications, kept inside
//! the range the metric can take.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// A metric summarised over replications: mean and 95% CI over the
/// replications that have a value, and every replication's value.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub mean: Option<f64>,
    pub ci95: Option<(f64, f64)>,
    pub values: Vec<Option<f64>>,
}

impl Summary {
    /// Half the width of the CI.
    pub fn half_width(&self) -> Option<f64> {
        self.ci95.map(|(lo, hi)| (hi - lo) / 2.0)
    }
}

/// The two-sided Student-t quantile for confidence `level` with `df` degrees of freedom.
pub fn t_quantile(level: f64, df: f64) -> f64 {
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(0.5 + level / 2.0),
        Err(_) => f64::NAN,
    }
}

/// Mean, sample standard deviation and count of the values present.
pub fn mean_sd(values: &[Option<f64>]) -> (usize, f64, f64) {
    let xs: Vec<f64> = values.iter().flatten().copied().collect();
    let n = xs.len();
    if n == 0 {
        return (0, f64::NAN, f64::NAN);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd =
        if n > 1 { (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { f64::NAN };
    (n, mean, sd)
}

/// Summarises one metric's per-replication values with a `level` CI
/// (Student t). With fewer than two values the CI is `None`.
pub fn summarize_at(values: Vec<Option<f64>>, level: f64) -> Summary {
    let (n, mean, sd) = mean_sd(&values);
    if n == 0 {
        return Summary { mean: None, ci95: None, values };
    }
    let ci = (n > 1).then(|| {
        let h = t_quantile(level, (n - 1) as f64) * sd / (n as f64).sqrt();
        (mean - h, mean + h)
    });
    Summary { mean: Some(mean), ci95: ci, values }
}

/// [`summarize_at`] with a 95% CI.
pub fn summarize(values: Vec<Option<f64>>) -> Summary {
    summarize_at(values, 0.95)
}

/// The values a metric can take, which its confidence interval respects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// A share: [0, 1].
    Share,
    /// A count, a rate, a time or a latency: [0, ∞).
    NonNegative,
    /// A paired difference of two shares: [-1, 1].
    ShareDifference,
    /// Anything (a paired difference of non-negative metrics).
    Any,
}

impl Range {
    /// The range of metric `name` (a headline, client, edge, service or
    /// side-effect metric): shares are the `*_fraction`, `*_rate`,
    /// `utilization`, `hedge_wins` and `duplicate_deliveries` metrics; every
    /// other metric is a count, rate, time or latency.
    pub fn of(name: &str) -> Range {
        let share = name.ends_with("_fraction")
            || name.ends_with("_rate")
            || matches!(name, "utilization" | "hedge_wins" | "duplicate_deliveries");
        if share { Range::Share } else { Range::NonNegative }
    }

    /// The range of a paired difference of two values in this range.
    pub fn difference(self) -> Range {
        match self {
            Range::Share | Range::ShareDifference => Range::ShareDifference,
            Range::NonNegative | Range::Any => Range::Any,
        }
    }

    /// The bounds (lo, hi).
    pub fn bounds(self) -> (f64, f64) {
        match self {
            Range::Share => (0.0, 1.0),
            Range::NonNegative => (0.0, f64::INFINITY),
            Range::ShareDifference => (-1.0, 1.0),
            Range::Any => (f64::NEG_INFINITY, f64::INFINITY),
        }
    }
}

/// [`summarize`] with the CI intersected with `range`: the Student-t
/// interval truncated to the values the metric can take. The true mean lies
/// in the range, so the truncated interval covers it exactly when the
/// Student-t interval does: the same 95% coverage, never a bound the metric
/// cannot have (a success rate above 1, a negative count). The interval may
/// then be asymmetric about the mean.
pub fn summarize_in(values: Vec<Option<f64>>, range: Range) -> Summary {
    clip(summarize(values), range)
}

/// Truncates a summary's CI to `range`.
pub fn clip(mut s: Summary, range: Range) -> Summary {
    let (lo, hi) = range.bounds();
    s.ci95 = s.ci95.map(|(a, b)| (a.clamp(lo, hi), b.clamp(lo, hi)));
    s
}

/// Metrics that are yes (1) or no (0) per replication: the share of
/// replications that recovered, or that were degraded.
pub fn yes_no(name: &str) -> bool {
    matches!(name, "recovered_fraction" | "degraded_fraction")
}

/// [`summarize_in`] with the range of metric `name` ([`Range::of`]); a
/// yes/no metric ([`yes_no`]) gets the exact Clopper–Pearson interval of
/// its share instead of a Student-t one (5 of 5 is [47.8%, 100%], not
/// 100% ± 0).
pub fn summarize_metric(name: &str, values: Vec<Option<f64>>) -> Summary {
    if yes_no(name) {
        let (n, k) = values.iter().flatten().fold((0u64, 0u64), |(n, k), &x| (n + 1, k + u64::from(x >= 0.5)));
        if n == 0 {
            return Summary { mean: None, ci95: None, values };
        }
        let ci95 = super::exact::clopper_pearson(k, n);
        return Summary { mean: Some(k as f64 / n as f64), ci95, values };
    }
    summarize_in(values, Range::of(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_interval_matches_tables() {
        // t(0.975, 4) = 2.776 (standard tables).
        assert!((t_quantile(0.95, 4.0) - 2.7764).abs() < 1e-3);
        let s = summarize(vec![Some(1.0), Some(2.0), Some(3.0), Some(4.0), Some(5.0)]);
        assert_eq!(s.mean, Some(3.0));
        let (lo, hi) = s.ci95.unwrap();
        // sd = 1.5811, se = 0.7071, h = 2.7764 * 0.7071 = 1.9632
        assert!((hi - 3.0 - 1.9632).abs() < 1e-3 && (3.0 - lo - 1.9632).abs() < 1e-3);
    }

    #[test]
    fn nulls_are_skipped_and_all_null_is_null() {
        let s = summarize(vec![Some(2.0), None, Some(4.0)]);
        assert_eq!(s.mean, Some(3.0));
        assert_eq!(s.values.len(), 3);
        let e = summarize(vec![None, None]);
        assert_eq!((e.mean, e.ci95), (None, None));
        assert_eq!(summarize(vec![Some(1.0)]).ci95, None);
    }

    #[test]
    fn intervals_stay_in_the_metric_range() {
        // A success rate near 1: the t interval goes past 1, the kept one stops there.
        let near_one = vec![Some(1.0), Some(0.99998), Some(1.0), Some(0.99996), Some(1.0)];
        let t = summarize(near_one.clone()).ci95.unwrap();
        assert!(t.1 > 1.0, "the plain t interval leaves [0, 1]: {t:?}");
        let s = summarize_metric("success_rate", near_one);
        let (lo, hi) = s.ci95.unwrap();
        assert_eq!(hi, 1.0);
        assert_eq!(lo, t.0, "the lower bound is the t interval's");
        // A count that is mostly 0: no negative lower bound.
        let orphans = vec![Some(0.0), Some(0.0), Some(2.0), Some(0.0), Some(0.0)];
        assert!(summarize(orphans.clone()).ci95.unwrap().0 < 0.0);
        let s = summarize_metric("orphan_commits", orphans);
        assert_eq!(s.ci95.unwrap().0, 0.0);
        assert_eq!(s.mean, Some(0.4), "the mean is not touched");
        // Ranges by name.
        for share in ["success_rate", "wasted_fraction", "recovered_fraction", "utilization"] {
            assert_eq!(Range::of(share), Range::Share, "{share}");
        }
        for other in ["latency_p99_s", "collapse_time_s", "goodput_per_s", "amplification", "queue_len"] {
            assert_eq!(Range::of(other), Range::NonNegative, "{other}");
        }
        // Differences of shares stay in [-1, 1]; of counts they are free.
        let a = vec![Some(0.0), Some(0.0), Some(0.0)];
        let b = vec![Some(1.0), Some(0.98), Some(1.0)];
        let d = paired_metric("success_rate", &a, &b);
        assert!(d.ci95.unwrap().1 <= 1.0 && paired_at(&a, &b, 0.95).ci95.unwrap().1 > 1.0);
        let d = paired_metric("orphan_commits", &b, &a);
        assert_eq!(d.ci95, paired_at(&b, &a, 0.95).ci95);
    }
}

/// The paired difference `b - a` over the replications both have values
/// for (replication r of every variant shares its random numbers, so the
/// pairs are matched), with a `level` Student-t CI (not truncated: see
/// [`paired_metric`]).
pub fn paired_at(a: &[Option<f64>], b: &[Option<f64>], level: f64) -> Summary {
    let diffs: Vec<Option<f64>> = a
        .iter()
        .zip(b)
        .map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => Some(y - x),
            _ => None,
        })
        .collect();
    summarize_at(diffs, level)
}

/// [`paired_at`] at 95% for metric `name`, its CI truncated to the range of
/// a difference of two values of that metric (a difference of shares stays
/// in [-1, 1]; a difference of counts or times is not bounded).
pub fn paired_metric(name: &str, a: &[Option<f64>], b: &[Option<f64>]) -> Summary {
    clip(paired_at(a, b, 0.95), Range::of(name).difference())
}

/// Whether a CI excludes zero (a difference that is significant).
pub fn significant(s: &Summary) -> bool {
    s.ci95.is_some_and(|(lo, hi)| lo > 0.0 || hi < 0.0)
}

#[cfg(test)]
mod paired_tests {
    use super::*;

    #[test]
    fn pairing_removes_the_shared_noise() {
        // Common noise n_r plus a constant effect of 1.
        let noise = [5.0, -3.0, 8.0, 0.5, -6.0, 2.0];
        let a: Vec<Option<f64>> = noise.iter().map(|n| Some(10.0 + n)).collect();
        let b: Vec<Option<f64>> = noise.iter().enumerate().map(|(i, n)| Some(11.0 + n + 0.01 * i as f64)).collect();
        let p = paired_at(&a, &b, 0.95);
        assert!((p.mean.unwrap() - 1.025).abs() < 1e-9);
        assert!(p.half_width().unwrap() < 0.05);
        assert!(significant(&p));
        let unpaired = summarize(b.clone()).half_width().unwrap() + summarize(a.clone()).half_width().unwrap();
        assert!(unpaired > 10.0 * p.half_width().unwrap());
        let zero = paired_at(&a, &a, 0.95);
        assert_eq!(zero.mean, Some(0.0));
        assert!(!significant(&zero), "a difference of zero is not significant");
    }
}
