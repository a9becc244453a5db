//! Heavy-tailed and data-driven distributions against their means and
//! quantiles: the sample mean within 5 standard errors of the analytic mean,
//! and the sample q-quantile where the analytic CDF is q within 5 binomial
//! standard errors (sqrt(q (1 - q) / n)).

use super::*;

const N: u64 = 400_000;

fn draws(d: &Dist) -> Vec<f64> {
    let r = KeyedRandom::for_replication(17, 0);
    let mut xs: Vec<f64> = (0..N).map(|i| to_secs_f64(d.sample(&r, &[13, i]))).collect();
    xs.sort_by(f64::total_cmp);
    xs
}

fn check_mean(d: &Dist, xs: &[f64], var: f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let se = (var / n).sqrt();
    assert!((m - d.mean_secs()).abs() < 5.0 * se, "{d:?}: mean {m} vs {} (se {se})", d.mean_secs());
}

fn check_quantiles(xs: &[f64], cdf: impl Fn(f64) -> f64, qs: &[f64]) {
    let n = xs.len() as f64;
    for &q in qs {
        let x = xs[(q * n) as usize];
        let tol = 5.0 * (q * (1.0 - q) / n).sqrt() + 1e-6;
        assert!((cdf(x) - q).abs() < tol, "q {q}: sample quantile {x} has cdf {} (tol {tol})", cdf(x));
    }
}

fn sample_var(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0)
}

#[test]
fn pareto_matches_its_mean_and_quantiles() {
    let (scale, shape) = (0.01, 3.0);
    let d = Dist::Pareto { scale, shape };
    let xs = draws(&d);
    assert!((d.mean_secs() - 0.015).abs() < 1e-12);
    let var = scale * scale * shape / ((shape - 1.0).powi(2) * (shape - 2.0));
    check_mean(&d, &xs, var);
    assert!(xs[0] >= scale, "never below the scale");
    check_quantiles(&xs, |x| 1.0 - (scale / x).powf(shape), &[0.5, 0.9, 0.99, 0.999]);
}

#[test]
fn mixture_matches_its_mean_and_quantiles() {
    // 99% exponential around 10 ms, 1% a slow mode of exactly 1 s.
    let d = Dist::Mixture(Arc::new(
        Mixture::new(vec![(99.0, Dist::Exp { mean: 0.01 }), (1.0, Dist::Const(1_000_000_000))]).unwrap(),
    ));
    assert!((d.mean_secs() - (0.99 * 0.01 + 0.01)).abs() < 1e-12);
    let xs = draws(&d);
    check_mean(&d, &xs, sample_var(&xs));
    let cdf = |x: f64| 0.99 * (1.0 - (-x / 0.01).exp()) + if x >= 1.0 { 0.01 } else { 0.0 };
    check_quantiles(&xs, cdf, &[0.5, 0.9, 0.98]);
    // Above 0.99 the slow mode is all there is.
    let n = xs.len() as f64;
    assert_eq!(xs[(0.995 * n) as usize], 1.0);
    let slow = xs.iter().filter(|&&x| x == 1.0).count() as f64 / n;
    assert!((slow - 0.01).abs() < 5.0 * (0.01f64 * 0.99 / n).sqrt(), "slow share {slow}");
    assert!(Mixture::new(vec![]).is_err());
    assert!(Mixture::new(vec![(-1.0, Dist::Const(1)), (2.0, Dist::Const(2))]).is_err());
}

#[test]
fn empirical_samples_are_drawn_uniformly() {
    let data: Vec<f64> = (1..=100).map(|i| i as f64 / 1000.0).collect();
    let d = Dist::Empirical(Arc::new(Empirical::Samples(data)));
    assert!((d.mean_secs() - 0.0505).abs() < 1e-12);
    let xs = draws(&d);
    check_mean(&d, &xs, sample_var(&xs));
    // Each sample is drawn with probability 1/100: the empirical CDF at
    // each sample value is within 5 binomial standard errors of its share.
    let n = xs.len() as f64;
    for k in [10, 25, 50, 90, 99] {
        let at_most = xs.iter().filter(|&&x| x <= k as f64 / 1000.0 + 1e-9).count() as f64 / n;
        let q = k as f64 / 100.0;
        assert!((at_most - q).abs() < 5.0 * (q * (1.0 - q) / n).sqrt(), "P(X <= {k} ms) = {at_most}");
    }
}

#[test]
fn empirical_quantile_tables_are_interpolated() {
    let e = Empirical::Quantiles(vec![(0.0, 0.01), (0.5, 0.02), (0.99, 0.05), (1.0, 0.5)]);
    assert_eq!(e.quantile(0.25), 0.015);
    assert_eq!(e.quantile(0.0), 0.01);
    assert_eq!(e.quantile(1.0), 0.5);
    let mean = 0.5 * 0.015 + 0.49 * 0.035 + 0.01 * 0.275;
    assert!((e.mean() - mean).abs() < 1e-12);
    let d = Dist::Empirical(Arc::new(e));
    let xs = draws(&d);
    check_mean(&d, &xs, sample_var(&xs));
    let cdf = |x: f64| {
        if x <= 0.02 {
            (x - 0.01) / 0.01 * 0.5
        } else if x <= 0.05 {
            0.5 + (x - 0.02) / 0.03 * 0.49
        } else {
            0.99 + (x - 0.05) / 0.45 * 0.01
        }
    };
    check_quantiles(&xs, cdf, &[0.1, 0.5, 0.9, 0.995]);
}
