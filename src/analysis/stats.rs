//! Means and Student-t confidence intervals over replications.

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
}

/// The paired difference `b - a` over the replications both have values
/// for (replication r of every variant shares its random numbers, so the
/// pairs are matched), with a `level` Student-t CI.
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
