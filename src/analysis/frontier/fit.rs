//! The boundary as a fitted crossing: P(no recovery | size) modelled as a
//! logistic curve F((x − μ)/s) and fitted by maximum likelihood to the
//! replications' thresholds, each known only to lie between two tried
//! sizes (interval-censored: a replication recovers at the size below its
//! threshold and not at the threshold). μ is where the fitted probability
//! crosses ½; its 95% interval is the profile-likelihood interval
//! (2·(ℓ̂ − ℓ_p(μ)) ≤ χ²₁(0.95) = 3.841, Venzon & Moolgavkar 1988).
//!
//! Fitting the thresholds rather than the curve's points keeps one
//! observation per replication: the points of one replication at several
//! sizes are not independent. When every replication's threshold lies in
//! one grid cell the likelihood is flat inside the cell; the estimate is
//! then the cell's middle and the interval about the cell, which is all
//! the data say.

use super::Threshold;

/// χ²₁ 0.95 quantile.
const CHI2_1_95: f64 = 3.841_458_820_694_124;

/// A logistic fit of P(no recovery | size).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// The size where the fitted probability crosses ½.
    pub boundary: f64,
    /// The profile-likelihood 95% interval; `lo` is never below 0, `hi` is
    /// `None` when the interval runs past the largest size tried.
    pub lo: f64,
    pub hi: Option<f64>,
    /// The logistic scale s at the estimate (size units): the fitted
    /// probability goes from 27% to 73% over μ ± s.
    pub scale: f64,
}

/// An interval (lower, upper] holding some replications' thresholds.
#[derive(Debug, Clone, Copy)]
struct Cell {
    lower: f64,
    upper: f64,
    count: f64,
}

/// The logistic CDF, and its complement, without cancellation.
fn cdf(z: f64) -> f64 {
    if z >= 0.0 { 1.0 / (1.0 + (-z).exp()) } else { z.exp() / (1.0 + z.exp()) }
}

/// log P(lower < T ≤ upper) under Logistic(mu, s).
fn log_mass(c: &Cell, mu: f64, s: f64) -> f64 {
    let f = |x: f64| {
        if x == f64::INFINITY {
            1.0
        } else if x == f64::NEG_INFINITY {
            0.0
        } else {
            cdf((x - mu) / s)
        }
    };
    let g = |x: f64| {
        if x == f64::INFINITY {
            0.0
        } else if x == f64::NEG_INFINITY {
            1.0
        } else {
            cdf((mu - x) / s)
        }
    };
    // Above the middle, differences of survival functions keep their digits.
    let mid = if c.lower.is_finite() && c.upper.is_finite() { (c.lower + c.upper) / 2.0 } else { c.lower.max(c.upper) };
    let p = if mid > mu || c.upper == f64::INFINITY { g(c.lower) - g(c.upper) } else { f(c.upper) - f(c.lower) };
    p.max(1e-300).ln()
}

fn log_lik(cells: &[Cell], mu: f64, s: f64) -> f64 {
    cells.iter().map(|c| c.count * log_mass(c, mu, s)).sum()
}

/// The profile log-likelihood of μ: the likelihood maximised over s in
/// [s_min, s_max] (a log grid, then golden section around its best point).
fn profile(cells: &[Cell], mu: f64, s_min: f64, s_max: f64) -> f64 {
    const GRID: usize = 32;
    let (a, b) = (s_min.ln(), s_max.ln());
    let at = |i: usize| a + (b - a) * i as f64 / (GRID - 1) as f64;
    let ll = |ls: f64| log_lik(cells, mu, ls.exp());
    let best = (0..GRID).max_by(|&i, &j| ll(at(i)).total_cmp(&ll(at(j)))).unwrap_or(0);
    let (mut lo, mut hi) = (at(best.saturating_sub(1)), at((best + 1).min(GRID - 1)));
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let (mut x1, mut x2) = (hi - r * (hi - lo), lo + r * (hi - lo));
    let (mut f1, mut f2) = (ll(x1), ll(x2));
    for _ in 0..40 {
        if f1 < f2 {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + r * (hi - lo);
            f2 = ll(x2);
        } else {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - r * (hi - lo);
            f1 = ll(x1);
        }
    }
    f1.max(f2).max(ll(at(best)))
}

/// Fits the logistic curve to the thresholds found over `sizes` (ascending);
/// `identity` is the size that means "no trigger" (a replication whose
/// threshold is the first size recovered there). `None` when the data
/// cannot place a crossing: fewer than two distinct points, or no
/// replication with a finite threshold above `identity`.
pub fn logistic(thresholds: &[Threshold], sizes: &[f64], identity: f64) -> Option<Fit> {
    let first = *sizes.first()?;
    let largest = *sizes.last()?;
    let below = |x: f64| {
        sizes.iter().rev().copied().find(|&y| y < x).unwrap_or(if identity < first {
            identity
        } else {
            f64::NEG_INFINITY
        })
    };
    let mut cells: Vec<Cell> = Vec::new();
    for t in thresholds {
        let (lower, upper) = match *t {
            Threshold::Zero => (f64::NEG_INFINITY, identity.min(first)),
            Threshold::At(x) => (below(x), x),
            Threshold::Never => (largest, f64::INFINITY),
        };
        match cells.iter_mut().find(|c| c.lower == lower && c.upper == upper) {
            Some(c) => c.count += 1.0,
            None => cells.push(Cell { lower, upper, count: 1.0 }),
        }
    }
    if !thresholds.iter().any(|t| matches!(t, Threshold::At(_))) {
        return None;
    }
    let mut points: Vec<f64> = sizes.to_vec();
    if identity < first {
        points.insert(0, identity);
    }
    let span = points.last()? - points.first()?;
    let gap = points.windows(2).map(|w| w[1] - w[0]).filter(|&d| d > 0.0).fold(f64::INFINITY, f64::min);
    if !(span > 0.0 && gap.is_finite()) {
        return None;
    }
    let (s_min, s_max) = (gap / 50.0, span * 2.0);
    let (m_lo, m_hi) = (points[0] - span / 2.0, largest + span / 2.0);
    const STEPS: usize = 800;
    let mu_at = |i: usize| m_lo + (m_hi - m_lo) * i as f64 / STEPS as f64;
    let prof: Vec<f64> = (0..=STEPS).map(|i| profile(&cells, mu_at(i), s_min, s_max)).collect();
    let top = prof.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let prof_at = |m: f64| profile(&cells, m, s_min, s_max);
    // Bisects between a point where `keep` holds and one where it does not.
    let bisect = |keep: &dyn Fn(f64) -> bool, mut x_in: f64, mut x_out: f64| {
        for _ in 0..40 {
            let m = (x_in + x_out) / 2.0;
            if keep(m) {
                x_in = m;
            } else {
                x_out = m;
            }
        }
        x_in
    };
    // The estimate: the middle of the top (a flat top is a cell), its ends
    // found between grid points.
    let on_top = |m: f64| prof_at(m) >= top - 1e-9;
    let at_top: Vec<usize> = (0..=STEPS).filter(|&i| prof[i] >= top - 1e-9).collect();
    let (a, b) = (*at_top.first()?, *at_top.last()?);
    let top_lo = if a > 0 { bisect(&on_top, mu_at(a), mu_at(a - 1)) } else { mu_at(a) };
    let top_hi = if b < STEPS { bisect(&on_top, mu_at(b), mu_at(b + 1)) } else { mu_at(b) };
    let mu = (top_lo + top_hi) / 2.0;
    let inside = |m: f64| 2.0 * (top - prof_at(m)) <= CHI2_1_95;
    // Walk out from the top to the first grid point outside, then bisect.
    let edge = |from: usize, step: isize| -> Option<f64> {
        let mut i = from as isize;
        loop {
            let next = i + step;
            if next < 0 || next > STEPS as isize {
                return None;
            }
            if !inside(mu_at(next as usize)) {
                return Some(bisect(&inside, mu_at(i as usize), mu_at(next as usize)));
            }
            i = next;
        }
    };
    let lo = edge(a, -1).unwrap_or(m_lo).max(0.0);
    let hi = edge(b, 1).filter(|&h| h <= largest);
    // The scale at the estimate.
    let (la, lb) = (s_min.ln(), s_max.ln());
    let scale = (0..=200)
        .map(|i| (la + (lb - la) * i as f64 / 200.0).exp())
        .max_by(|x, y| log_lik(&cells, mu, *x).total_cmp(&log_lik(&cells, mu, *y)))
        .unwrap_or(s_min);
    Some(Fit { boundary: mu, lo, hi, scale })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::random::{hash_words, unit_open};

    /// Thresholds of `n` replications whose latent thresholds are
    /// Logistic(mu, s), seen on `sizes`.
    fn sample(n: usize, mu: f64, s: f64, sizes: &[f64], seed: u64) -> Vec<Threshold> {
        (0..n)
            .map(|i| {
                let u = unit_open(hash_words(seed, &[i as u64]));
                let t = mu + s * (u / (1.0 - u)).ln();
                if t <= 1.0 {
                    Threshold::Zero
                } else {
                    sizes.iter().copied().find(|&x| x >= t).map_or(Threshold::Never, Threshold::At)
                }
            })
            .collect()
    }

    #[test]
    fn the_fit_finds_a_known_crossing_within_its_interval() {
        let sizes: Vec<f64> = (0..12).map(|i| 1.25 + 0.25 * f64::from(i)).collect();
        let mut covered = 0;
        let trials = 40;
        for seed in 0..trials {
            let t = sample(60, 2.1, 0.3, &sizes, seed);
            let f = logistic(&t, &sizes, 1.0).expect("a crossing");
            if f.lo <= 2.1 && f.hi.is_some_and(|h| h >= 2.1) {
                covered += 1;
            }
            assert!((f.boundary - 2.1).abs() < 0.3, "seed {seed}: {f:?}");
        }
        // 95% coverage: at 40 trials, fewer than 34 covered has p < 0.01.
        assert!(covered >= 34, "covered {covered} of {trials}");
        // A large sample pins the scale too.
        let f = logistic(&sample(4000, 2.1, 0.3, &sizes, 99), &sizes, 1.0).unwrap();
        assert!((f.boundary - 2.1).abs() < 0.03 && (f.scale - 0.3).abs() < 0.03, "{f:?}");
    }

    #[test]
    fn one_cell_gives_its_middle_and_an_interval_around_the_cell() {
        let sizes = [1.25, 1.5, 2.0];
        let t = vec![Threshold::At(1.5); 6];
        let f = logistic(&t, &sizes, 1.0).unwrap();
        assert!((f.boundary - 1.375).abs() < 1e-6, "{f:?}");
        // Six of six in one cell put the crossing inside it, short of its
        // edges by what the steepest allowed curve leaves (2·6·ln(1 + e^-z) ≤ 3.84).
        assert!(f.lo > 1.25 && f.lo < 1.3 && f.hi.is_some_and(|h| h > 1.45 && h < 1.5), "{f:?}");
    }

    #[test]
    fn without_a_finite_threshold_there_is_nothing_to_fit() {
        assert_eq!(logistic(&[Threshold::Never, Threshold::Never], &[1.5, 2.0], 1.0), None);
        assert_eq!(logistic(&[Threshold::Zero], &[1.5, 2.0], 1.0), None);
        // Past the largest size the upper end is open.
        let f = logistic(&[Threshold::At(2.0), Threshold::Never, Threshold::At(2.0)], &[1.5, 2.0], 1.0).unwrap();
        assert_eq!(f.hi, None, "{f:?}");
    }
}
