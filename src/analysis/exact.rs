//! Intervals and tests that fit what they are applied to: exact
//! (Clopper–Pearson) intervals of a share of replications, the rule of
//! three for counts that were all zero, the paired t test's p-value, the
//! sign test, and Holm's step-down adjustment of a family of p-values.

use statrs::distribution::{Beta, Binomial, ContinuousCDF, DiscreteCDF, StudentsT};

/// The exact (Clopper–Pearson) 95% interval of a share: `k` of `n`
/// replications. Clopper and Pearson (1934): the bounds are Beta quantiles,
/// B(α/2; k, n−k+1) and B(1−α/2; k+1, n−k), with 0 and 1 at the ends.
pub fn clopper_pearson(k: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    let q = |a: f64, b: f64, p: f64| Beta::new(a, b).map(|d| d.inverse_cdf(p)).unwrap_or(f64::NAN);
    let (k, n) = (k as f64, n as f64);
    let lo = if k == 0.0 { 0.0 } else { q(k, n - k + 1.0, 0.025) };
    let hi = if k == n { 1.0 } else { q(k + 1.0, n - k, 0.975) };
    Some((lo, hi))
}

/// The rule of three: with no event in `n` independent runs, the 95% upper
/// bound of the rate per run is −ln(0.05)/n ≈ 3/n (Poisson; Hanley and
/// Lippman-Hand 1983).
pub fn rule_of_three(n: u64) -> f64 {
    if n == 0 { f64::INFINITY } else { -(0.05f64.ln()) / n as f64 }
}

/// Two-sided p-value of the paired t test of `diffs` (their mean against
/// 0). With every difference equal the test is degenerate: p = 1 when they
/// are all 0, else 0. `None` below two values.
pub fn paired_t_p(diffs: &[f64]) -> Option<f64> {
    let n = diffs.len();
    if n < 2 {
        return None;
    }
    let mean = diffs.iter().sum::<f64>() / n as f64;
    let var = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    if var <= 1e-24 * (1.0 + mean * mean) {
        return Some(if mean.abs() < 1e-15 { 1.0 } else { 0.0 });
    }
    let t = mean / (var / n as f64).sqrt();
    let dist = StudentsT::new(0.0, 1.0, (n - 1) as f64).ok()?;
    Some((2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0))
}

/// The p-value of two one-sided paired t tests (TOST, Schuirmann 1987)
/// that the mean difference lies inside (−margin, +margin): below 0.05
/// exactly when the 90% t interval of the mean lies inside the margin.
/// `None` with fewer than two differences or a margin that is not positive.
pub fn tost_p(diffs: &[f64], margin: f64) -> Option<f64> {
    let n = diffs.len();
    if n < 2 || margin.is_nan() || margin <= 0.0 {
        return None;
    }
    let mean = diffs.iter().sum::<f64>() / n as f64;
    let var = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    if var <= 1e-24 * (1.0 + mean * mean) {
        return Some(if mean.abs() < margin { 0.0 } else { 1.0 });
    }
    let se = (var / n as f64).sqrt();
    let dist = StudentsT::new(0.0, 1.0, (n - 1) as f64).ok()?;
    let above_lower = 1.0 - dist.cdf((mean + margin) / se);
    let below_upper = dist.cdf((mean - margin) / se);
    Some(above_lower.max(below_upper).clamp(0.0, 1.0))
}

/// Two-sided p-value of the sign test: `plus` pairs one way, `minus` the
/// other (ties left out), under Binomial(plus + minus, 1/2). 1 without a
/// pair that differs.
pub fn sign_test_p(plus: u64, minus: u64) -> f64 {
    let n = plus + minus;
    if n == 0 {
        return 1.0;
    }
    let b = Binomial::new(0.5, n).expect("a fair coin");
    let k = plus.min(minus);
    (2.0 * b.cdf(k)).min(1.0)
}

/// Holm's step-down adjustment (Holm 1979) of a family of p-values, in the
/// order given: the i-th smallest is multiplied by (m − i + 1), and the
/// adjusted values are made non-decreasing in that order and at most 1.
/// Rejecting where the adjusted p is below α controls the family-wise
/// error at α. `None` entries are not in the family and stay `None`.
pub fn holm(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some_and(|x| x.is_finite())).collect();
    idx.sort_by(|&a, &b| p[a].unwrap().total_cmp(&p[b].unwrap()).then(a.cmp(&b)));
    let m = idx.len();
    let mut out = vec![None; p.len()];
    let mut running = 0.0f64;
    for (rank, &i) in idx.iter().enumerate() {
        let adjusted = (p[i].unwrap() * (m - rank) as f64).min(1.0);
        running = running.max(adjusted);
        out[i] = Some(running);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clopper_pearson_matches_the_exact_values() {
        // 0/5: [0, 1 − 0.025^(1/5)] = [0, 0.52182]; 5/5: [0.025^(1/5), 1] = [0.47818, 1].
        let (lo, hi) = clopper_pearson(0, 5).unwrap();
        assert_eq!(lo, 0.0);
        assert!((hi - (1.0 - 0.025f64.powf(0.2))).abs() < 1e-9, "{hi}");
        let (lo, hi) = clopper_pearson(5, 5).unwrap();
        assert!((lo - 0.025f64.powf(0.2)).abs() < 1e-9 && hi == 1.0, "{lo}");
        assert!((lo - 0.47818).abs() < 1e-5);
        // 3/10: [0.06674, 0.65245] (the tables, e.g. R's binom.test).
        let (lo, hi) = clopper_pearson(3, 10).unwrap();
        assert!((lo - 0.066739).abs() < 1e-5 && (hi - 0.652453).abs() < 1e-5, "{lo} {hi}");
        assert_eq!(clopper_pearson(1, 0), None);
    }

    #[test]
    fn rule_of_three_is_about_three_over_n() {
        assert!((rule_of_three(5) - 0.5991).abs() < 1e-4);
        assert!((rule_of_three(100) * 100.0 - 3.0).abs() < 0.01);
    }

    #[test]
    fn paired_t_and_sign_tests_match_the_tables() {
        // Differences 1, 2, 3, 4, 5: t = 3 / (1.5811 / √5) = 4.2426, df 4: p = 0.01324.
        let p = paired_t_p(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert!((p - 0.013236).abs() < 1e-5, "{p}");
        assert_eq!(paired_t_p(&[0.0, 0.0, 0.0]), Some(1.0));
        assert_eq!(paired_t_p(&[2.0, 2.0, 2.0]), Some(0.0));
        assert_eq!(paired_t_p(&[1.0]), None);
        // 5 of 5 one way: 2 × 1/32 = 0.0625; 8 of 10: 2 × P(B ≤ 2) = 2 × 56/1024.
        assert!((sign_test_p(5, 0) - 0.0625).abs() < 1e-12);
        assert!((sign_test_p(2, 8) - 112.0 / 1024.0).abs() < 1e-12);
        assert_eq!(sign_test_p(0, 0), 1.0);
    }

    #[test]
    fn holm_gives_the_textbook_decisions() {
        // p = 0.01, 0.04, 0.03, 0.005 (m = 4): sorted 0.005×4 = 0.02,
        // 0.01×3 = 0.03, 0.03×2 = 0.06, 0.04×1 = 0.04 → 0.06 (monotone).
        let adj = holm(&[Some(0.01), Some(0.04), Some(0.03), Some(0.005)]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a.unwrap() - w).abs() < 1e-12, "{adj:?}");
        }
        // At α = 0.05: the first and last are rejected, the others not.
        let rejected: Vec<bool> = adj.iter().map(|a| a.unwrap() < 0.05).collect();
        assert_eq!(rejected, [true, false, false, true]);
        // Entries outside the family stay out; the rest is a family of 2.
        assert_eq!(holm(&[None, Some(0.02), Some(0.5)]), vec![None, Some(0.04), Some(0.5)]);
        assert_eq!(holm(&[Some(0.9), Some(0.8)]), vec![Some(1.0), Some(1.0)]);
    }

    #[test]
    fn tost_matches_the_t_distribution_with_two_degrees_of_freedom() {
        // diffs 1, 2, 3: mean 2, se 1/sqrt(3); margin 3: the upper test has
        // t = -sqrt(3), and with 2 df P(T <= t) = 1/2 + t / (2 sqrt(2 + t^2)).
        let p = tost_p(&[1.0, 2.0, 3.0], 3.0).unwrap();
        let t = -(3f64.sqrt());
        assert!((p - (0.5 + t / (2.0 * (2.0 + t * t).sqrt()))).abs() < 1e-9, "{p}");
        // Equivalent at 5% exactly when the 90% interval is inside the margin.
        let d = [0.3, -0.2, 0.5, 0.1, 0.0, 0.4, -0.1, 0.2];
        let n = d.len() as f64;
        let mean = d.iter().sum::<f64>() / n;
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        let reach = mean.abs() + crate::analysis::stats::t_quantile(0.90, n - 1.0) * sd / n.sqrt();
        assert!(tost_p(&d, reach * 1.001).unwrap() < 0.05);
        assert!(tost_p(&d, reach * 0.999).unwrap() > 0.05);
        assert_eq!(tost_p(&d, 0.0), None);
    }
}
