//! Time distributions (service times, latencies) sampled from keyed draws.

use crate::engine::random::hash_words;
use crate::engine::{KeyedRandom, Nanos, from_secs_f64, to_secs_f64};
use rand_distr::Distribution;
use std::sync::Arc;

/// The first word of a mixture part's key (after the part is picked).
const MIXTURE_PART: u64 = 0x4D49_5854;

/// The 0.99 quantile of the standard normal distribution.
pub const Z99: f64 = 2.326_347_874_040_841;

/// A validated distribution of durations.
#[derive(Debug, Clone, PartialEq)]
pub enum Dist {
    /// Always `value`.
    Const(Nanos),
    /// Exponential with this mean (seconds).
    Exp { mean: f64 },
    /// Uniform on [min, max] (seconds).
    Uniform { min: f64, max: f64 },
    /// exp(N(mu, sigma)) seconds.
    LogNormal { mu: f64, sigma: f64 },
    /// Gamma with this shape and scale (seconds).
    Gamma { shape: f64, scale: f64 },
    /// Pareto (type I): `scale * U^(-1/shape)` seconds, at least `scale`.
    Pareto { scale: f64, shape: f64 },
    /// One of several distributions, picked by weight for each draw.
    Mixture(Arc<Mixture>),
    /// Drawn from observed data.
    Empirical(Arc<Empirical>),
}

/// The parts of a [`Dist::Mixture`]: cumulative weights (summing to 1) and
/// distributions.
#[derive(Debug, Clone, PartialEq)]
pub struct Mixture {
    parts: Vec<(f64, Dist)>,
}

impl Mixture {
    /// A mixture of `(weight, dist)` parts; weights are normalised to sum 1.
    pub fn new(parts: Vec<(f64, Dist)>) -> Result<Mixture, String> {
        let total: f64 = parts.iter().map(|(w, _)| *w).sum();
        if parts.is_empty() || !(total.is_finite() && total > 0.0) || parts.iter().any(|(w, _)| w.is_nan() || *w < 0.0)
        {
            return Err("a mixture needs parts with non-negative weights that sum to more than 0".into());
        }
        let mut acc = 0.0;
        let parts = parts
            .into_iter()
            .map(|(w, d)| {
                acc += w / total;
                (acc, d)
            })
            .collect();
        Ok(Mixture { parts })
    }

    /// (weight, dist) of each part, weights normalised.
    pub fn parts(&self) -> impl Iterator<Item = (f64, &Dist)> {
        let mut prev = 0.0;
        self.parts.iter().map(move |(c, d)| {
            let w = c - prev;
            prev = *c;
            (w, d)
        })
    }
}

/// Observed durations: samples drawn uniformly, or a quantile table
/// interpolated linearly (seconds).
#[derive(Debug, Clone, PartialEq)]
pub enum Empirical {
    /// Samples, sorted.
    Samples(Vec<f64>),
    /// (quantile, value) points from quantile 0 to 1, both increasing.
    Quantiles(Vec<(f64, f64)>),
}

impl Empirical {
    /// The value at quantile `q` (the inverse of the empirical CDF).
    pub fn quantile(&self, q: f64) -> f64 {
        match self {
            Empirical::Samples(xs) => xs[((q * xs.len() as f64) as usize).min(xs.len() - 1)],
            Empirical::Quantiles(points) => {
                let i = points.partition_point(|(p, _)| *p < q).clamp(1, points.len() - 1);
                let ((q0, v0), (q1, v1)) = (points[i - 1], points[i]);
                if q1 <= q0 { v1 } else { v0 + (v1 - v0) * ((q - q0) / (q1 - q0)).clamp(0.0, 1.0) }
            }
        }
    }

    /// The mean, in seconds.
    pub fn mean(&self) -> f64 {
        match self {
            Empirical::Samples(xs) => xs.iter().sum::<f64>() / xs.len() as f64,
            Empirical::Quantiles(points) => {
                points.windows(2).map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0).sum()
            }
        }
    }
}

impl Dist {
    /// Lognormal parameters from a mean and a 99th percentile: solves
    /// `mean = exp(mu + s²/2)` and `p99 = exp(mu + z s)` for the smaller `s`.
    pub fn lognormal_from_mean_p99(mean: f64, p99: f64) -> Result<Dist, String> {
        if !(mean > 0.0 && p99 > mean) {
            return Err("lognormal needs 0 < mean < p99".into());
        }
        let d = (p99 / mean).ln();
        let disc = Z99 * Z99 - 2.0 * d;
        if disc < 0.0 {
            return Err(format!(
                "no lognormal has p99/mean = {:.2}: the ratio must be at most {:.1}",
                p99 / mean,
                (Z99 * Z99 / 2.0).exp()
            ));
        }
        let sigma = Z99 - disc.sqrt();
        let mu = mean.ln() - sigma * sigma / 2.0;
        Ok(Dist::LogNormal { mu, sigma })
    }

    /// The mean, in seconds.
    pub fn mean_secs(&self) -> f64 {
        match *self {
            Dist::Const(v) => to_secs_f64(v),
            Dist::Exp { mean } => mean,
            Dist::Uniform { min, max } => (min + max) / 2.0,
            Dist::LogNormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
            Dist::Gamma { shape, scale } => shape * scale,
            Dist::Pareto { scale, shape } => shape * scale / (shape - 1.0),
            Dist::Mixture(ref m) => m.parts().map(|(w, d)| w * d.mean_secs()).sum(),
            Dist::Empirical(ref e) => e.mean(),
        }
    }

    /// Whether every draw is zero.
    pub fn is_zero(&self) -> bool {
        matches!(self, Dist::Const(0))
    }

    /// Draws one duration for the given key.
    #[inline(always)]
    pub fn sample(&self, random: &KeyedRandom, key: &[u64]) -> Nanos {
        // A constant (a zero network latency, most often) needs no draw:
        // no call either.
        match *self {
            Dist::Const(v) => v,
            _ => self.draw(random, key),
        }
    }

    /// [`Dist::sample`] for distributions that draw.
    #[inline]
    fn draw(&self, random: &KeyedRandom, key: &[u64]) -> Nanos {
        let secs = match *self {
            Dist::Const(v) => return v,
            Dist::Exp { mean } => -mean * random.unit(key).ln(),
            Dist::Uniform { min, max } => min + (max - min) * random.unit(key),
            Dist::LogNormal { mu, sigma } => {
                let mut s = random.stream(key);
                // Box–Muller: one standard normal from two uniforms.
                let (u1, u2) = (s.unit(), s.unit());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (mu + sigma * z).exp()
            }
            Dist::Gamma { shape, scale } => {
                let mut s = random.stream(key);
                match rand_distr::Gamma::new(shape, scale) {
                    Ok(g) => g.sample(&mut s),
                    Err(_) => shape * scale,
                }
            }
            Dist::Pareto { scale, shape } => scale * random.unit(key).powf(-1.0 / shape),
            Dist::Mixture(ref m) => {
                let u = random.unit(key);
                let i = m.parts.partition_point(|(c, _)| *c < u).min(m.parts.len() - 1);
                return m.parts[i].1.sample(random, &[MIXTURE_PART, hash_words(i as u64, key)]);
            }
            Dist::Empirical(ref e) => e.quantile(random.unit(key)),
        };
        from_secs_f64(secs)
    }
}

#[cfg(test)]
mod heavy_tail_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_mean(d: &Dist, n: u64) -> (f64, Vec<f64>) {
        let r = KeyedRandom::for_replication(3, 0);
        let xs: Vec<f64> = (0..n).map(|i| to_secs_f64(d.sample(&r, &[11, i]))).collect();
        (xs.iter().sum::<f64>() / n as f64, xs)
    }

    #[test]
    fn means_match() {
        let n = 100_000;
        for d in [
            Dist::Exp { mean: 0.01 },
            Dist::Uniform { min: 0.01, max: 0.03 },
            Dist::Gamma { shape: 2.0, scale: 0.005 },
            Dist::lognormal_from_mean_p99(0.015, 0.08).unwrap(),
        ] {
            let (m, xs) = sample_mean(&d, n);
            let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
            let se = (var / n as f64).sqrt();
            assert!((m - d.mean_secs()).abs() < 5.0 * se, "{d:?}: mean {m} vs {}", d.mean_secs());
        }
    }

    #[test]
    fn lognormal_p99_matches() {
        let d = Dist::lognormal_from_mean_p99(0.015, 0.08).unwrap();
        let (_, mut xs) = sample_mean(&d, 200_000);
        xs.sort_by(f64::total_cmp);
        let p99 = xs[(xs.len() as f64 * 0.99) as usize];
        assert!((p99 / 0.08 - 1.0).abs() < 0.03, "p99 {p99}");
        assert!(Dist::lognormal_from_mean_p99(0.015, 0.01).is_err());
        assert!(Dist::lognormal_from_mean_p99(0.001, 1.0).is_err());
    }
}
