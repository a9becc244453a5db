//! The metastability frontier (DESIGN §8.4): for a variant, a load and a
//! trigger length, the smallest trigger size after which the system does
//! not recover within the horizon in at least half of the replications.
//!
//! Each replication is bisected on its own over the sorted list of sizes,
//! under common random numbers: replication r sees the same arrivals,
//! service demands and jitter at every size (DESIGN §4), so its outcome
//! changes with the size only through the trigger, and its own threshold
//! (the smallest listed size it does not recover from) is well defined.
//! The boundary is where P(no recovery | size) crosses ½ on a logistic
//! curve fitted to the replications' thresholds ([`fit`]), with its
//! profile-likelihood interval; the grid's own answer (the smallest listed
//! size at which at least half do not recover, the median threshold) is
//! kept beside it, and used when no curve can be fitted. Every run stops as soon as its verdict is known
//! ([`judge`]): at recovery, or once it has clearly collapsed.

pub mod fit;
pub mod judge;
pub mod trigger;

pub use judge::{Verdict, judge};
pub use trigger::{Trigger, TriggerKind};

use crate::config::Scenario;
use crate::engine::Nanos;

/// How a run is judged and stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judging {
    /// Simulated time after the trigger's end within which the run must recover.
    pub horizon: Nanos,
    /// A run whose goodput ratio stays below half its baseline for this
    /// long after the trigger's end is judged collapsed at once; 0 = run
    /// the whole horizon.
    pub stop_collapsed: Nanos,
}

/// One replication's threshold: the smallest listed size it does not
/// recover from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// It does not recover even without a trigger (or its baseline is not healthy).
    Zero,
    /// The smallest listed size it does not recover from.
    At(f64),
    /// It recovers from every size listed.
    Never,
}

impl Threshold {
    /// The threshold as a number on the size axis (`Never` = +inf, `Zero` = 0).
    pub fn value(self) -> f64 {
        match self {
            Threshold::Zero => 0.0,
            Threshold::At(x) => x,
            Threshold::Never => f64::INFINITY,
        }
    }
}

/// One replication's search: its threshold, the runs it took and their events.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    pub threshold: Threshold,
    pub runs: u32,
    pub events: u64,
}

/// Bisects replication `rep` of `base` over `sizes` (sorted, ascending)
/// with triggers like `trigger` (its size aside).
pub fn search(base: &Scenario, trigger: Trigger, sizes: &[f64], rep: u32, judging: Judging) -> Search {
    let mut runs = 0u32;
    let mut events = 0u64;
    let kind = trigger.kind;
    let mut collapses = |size: f64| -> bool {
        let trigger = Trigger { size, ..trigger };
        let s = trigger.apply(base, judging.horizon);
        let (verdict, n) = judge(&s, rep, trigger.window(), judging);
        runs += 1;
        events += n;
        verdict != Verdict::Recovered
    };
    let last = sizes.len() - 1;
    if !collapses(sizes[last]) {
        return Search { threshold: Threshold::Never, runs, events };
    }
    if last == 0 || collapses(sizes[0]) {
        let identity = kind.identity();
        let threshold =
            if sizes[0] == identity || collapses(identity) { Threshold::Zero } else { Threshold::At(sizes[0]) };
        return Search { threshold, runs, events };
    }
    // sizes[lo] recovers, sizes[hi] does not.
    let (mut lo, mut hi) = (0usize, last);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if collapses(sizes[mid]) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Search { threshold: Threshold::At(sizes[hi]), runs, events }
}

/// The boundary of a set of replications' thresholds and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Boundary {
    /// Where the fitted P(no recovery) crosses ½; the median threshold when
    /// no curve can be fitted. `None` when at least half recover from every
    /// size tried, 0 when at least half do not recover even without a trigger.
    pub boundary: Option<f64>,
    /// `None` when the interval's end is beyond the sizes tried.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// The smallest listed size at which at least half do not recover.
    pub median_threshold: Option<f64>,
    /// The spacing of the listed sizes around the boundary (the resolution
    /// of what the grid can say).
    pub grid_step: Option<f64>,
    /// The fitted logistic scale, when a curve was fitted.
    pub scale: Option<f64>,
}

/// The 1-based ranks (j, k) of the order statistics bounding a median of
/// `n` values with at least 95% coverage: P(j ≤ rank of the median < k)
/// ≥ 0.95 under Binomial(n, 1/2); `j = 0` means no lower bound, `k = n + 1`
/// no upper bound.
pub fn median_ranks(n: usize) -> (usize, usize) {
    use statrs::distribution::{Binomial, DiscreteCDF};
    // The largest j with P(B < j) = P(B ≤ j − 1) ≤ 2.5%, B ~ Binomial(n, 1/2)
    // (statrs sums in logs: 0.5^n underflows for n above about 1074).
    let b = Binomial::new(0.5, n as u64).expect("p = 1/2 is a probability");
    let j = (0..n as u64).take_while(|&i| b.cdf(i) <= 0.025).count();
    (j, n + 1 - j)
}

/// The boundary of replications' thresholds found over `sizes` (ascending;
/// `identity` is the size that means no trigger; see [`Boundary`]).
pub fn boundary(thresholds: &[Threshold], sizes: &[f64], identity: f64) -> Boundary {
    let grid = median_boundary(thresholds);
    let step = |b: f64| {
        let below = sizes.iter().copied().rev().find(|&x| x < b).or((identity < b).then_some(identity));
        let above = sizes.iter().copied().find(|&x| x >= b);
        below.zip(above).map(|(l, u)| u - l)
    };
    match grid.boundary {
        Some(m) if m > 0.0 => match fit::logistic(thresholds, sizes, identity) {
            Some(f) => Boundary {
                boundary: Some(f.boundary),
                lo: Some(f.lo),
                hi: f.hi,
                grid_step: step(f.boundary),
                scale: Some(f.scale),
                ..grid
            },
            None => Boundary { grid_step: step(m), ..grid },
        },
        _ => grid,
    }
}

/// The median threshold and its distribution-free interval from order statistics.
fn median_boundary(thresholds: &[Threshold]) -> Boundary {
    let mut v: Vec<f64> = thresholds.iter().map(|t| t.value()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let none = Boundary { boundary: None, lo: None, hi: None, median_threshold: None, grid_step: None, scale: None };
    if n == 0 {
        return none;
    }
    let finite = |x: f64| x.is_finite().then_some(x);
    // The smallest size at which at least half (ceil(n/2)) do not recover.
    let median = finite(v[n.div_ceil(2) - 1]);
    let (j, k) = median_ranks(n);
    let lo = if j == 0 { Some(0.0) } else { finite(v[j - 1]) };
    let hi = if k > n { None } else { finite(v[k - 1]) };
    Boundary { boundary: median, lo, hi, median_threshold: median, ..none }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_interval_ranks_match_the_binomial_tables() {
        // n = 10: P(B <= 1) = 0.0107, P(B <= 2) = 0.0547: ranks 2 and 9.
        assert_eq!(median_ranks(10), (2, 9));
        // n = 20: P(B <= 5) = 0.0207, P(B <= 6) = 0.0577: ranks 6 and 15.
        assert_eq!(median_ranks(20), (6, 15));
        // n = 5: even the extremes have P = 1/32 > 2.5%: no bounds.
        assert_eq!(median_ranks(5), (0, 6));
        assert_eq!(median_ranks(6), (1, 6));
        // n = 4000 (0.5^n underflows): the normal approximation n/2 ∓ 1.96 √n / 2 ≈ 1938, 2062.
        let (j, k) = median_ranks(4000);
        assert!((1936..=1940).contains(&j) && k == 4001 - j, "{j} {k}");
    }

    #[test]
    fn the_grid_boundary_is_where_half_do_not_recover() {
        let t = |x: f64| Threshold::At(x);
        let b = median_boundary(&[
            t(2.0),
            t(1.0),
            t(3.0),
            Threshold::Never,
            t(1.5),
            t(2.5),
            t(1.2),
            t(2.2),
            t(1.8),
            t(2.8),
        ]);
        // Sorted: 1, 1.2, 1.5, 1.8, 2, 2.2, 2.5, 2.8, 3, inf: 5th = 2.
        assert_eq!(b.boundary, Some(2.0));
        assert_eq!((b.lo, b.hi), (Some(1.2), Some(3.0)));
        let sizes = [1.5, 2.0, 4.0];
        let never = boundary(&[Threshold::Never, Threshold::Never, t(1.5)], &sizes, 1.0);
        assert_eq!(never.boundary, None);
        let zero = boundary(&[Threshold::Zero, Threshold::Zero, Threshold::Zero, t(4.0)], &sizes, 1.0);
        assert_eq!(zero.boundary, Some(0.0));
    }

    #[test]
    fn the_fitted_boundary_lies_in_the_grid_cell_where_half_stop_recovering() {
        let t = |x: f64| Threshold::At(x);
        let sizes = [1.5, 2.0, 2.5, 3.0, 3.5];
        let b = boundary(&[t(2.0), t(2.5), t(2.5), t(3.0), t(2.5), t(3.0), Threshold::Never, t(2.0)], &sizes, 1.0);
        assert_eq!(b.median_threshold, Some(2.5));
        let x = b.boundary.unwrap();
        assert!(x > 2.0 && x <= 2.6, "{b:?}");
        assert!(b.lo.unwrap() < x && b.hi.unwrap() > x, "{b:?}");
        assert_eq!(b.grid_step, Some(0.5));
    }
}
