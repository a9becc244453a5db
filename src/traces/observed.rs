//! Estimates with 95% intervals from one sample of observed calls: a
//! quantile (distribution-free, from order statistics), a share (Wilson
//! score interval) and a mean (normal approximation).

/// A value with its 95% interval; `None` without data.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    pub value: Option<f64>,
    pub ci95: Option<(f64, f64)>,
}

const Z: f64 = 1.959963984540054;

/// The `q` quantile of sorted `v` with the order-statistic interval: the
/// ranks n·q ± z·√(n·q·(1−q)).
pub fn quantile(v: &[f64], q: f64) -> Estimate {
    let n = v.len();
    if n == 0 {
        return Estimate::default();
    }
    let nf = n as f64;
    let at = |rank: f64| v[(rank.ceil() as usize).clamp(1, n) - 1];
    let half = Z * (nf * q * (1.0 - q)).sqrt();
    Estimate { value: Some(at(nf * q)), ci95: Some((at(nf * q - half), at(nf * q + half + 1.0))) }
}

/// The share `k` of `n`, with the Wilson score interval.
pub fn share(k: usize, n: usize) -> Estimate {
    if n == 0 {
        return Estimate::default();
    }
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let d = 1.0 + Z * Z / n;
    let centre = (p + Z * Z / (2.0 * n)) / d;
    let half = Z * (p * (1.0 - p) / n + Z * Z / (4.0 * n * n)).sqrt() / d;
    Estimate { value: Some(p), ci95: Some(((centre - half).max(0.0), (centre + half).min(1.0))) }
}

/// The mean of `v` with a normal-approximation interval.
pub fn mean(v: &[f64]) -> Estimate {
    let n = v.len();
    if n == 0 {
        return Estimate::default();
    }
    let m = v.iter().sum::<f64>() / n as f64;
    let sd = if n > 1 { (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { 0.0 };
    let half = Z * sd / (n as f64).sqrt();
    // Attempts and latencies are at least 0.
    Estimate { value: Some(m), ci95: Some(((m - half).max(0.0), m + half)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_cover_the_estimate() {
        let v: Vec<f64> = (1..=1000).map(|i| i as f64).collect();
        let q = quantile(&v, 0.5);
        assert_eq!(q.value, Some(500.0));
        let (lo, hi) = q.ci95.unwrap();
        // ±1.96·√250 ≈ ±31 ranks.
        assert!((468.0..=470.0).contains(&lo) && (531.0..=533.0).contains(&hi), "{lo} {hi}");
        let s = share(90, 100);
        let (lo, hi) = s.ci95.unwrap();
        assert!((lo - 0.8256).abs() < 1e-3 && (hi - 0.9448).abs() < 1e-3, "{lo} {hi}");
        let m = mean(&[1.0, 2.0, 3.0]);
        assert_eq!(m.value, Some(2.0));
        assert_eq!(share(0, 0).value, None);
    }
}
