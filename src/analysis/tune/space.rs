//! Candidates of the space, made one at a time: the grid decoded from an
//! index, or a Latin-hypercube sample whose strata come from a keyed
//! permutation, so no list of candidates is ever built up front.

use super::spec::{Domain, TuneSpec};
use crate::engine::random::{hash_words, unit_open};
use std::collections::HashSet;

/// One point of the space: per field, the index into its list of values,
/// or the (rounded) value of its range (nanoseconds for durations).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate(pub Vec<f64>);

impl Candidate {
    /// The overrides that apply it (`clients.web.policy.max_attempts=3`).
    pub fn overrides(&self, spec: &TuneSpec) -> Vec<String> {
        spec.space.iter().zip(&self.0).map(|(d, &x)| format!("{}={}", d.target, d.render(x))).collect()
    }

    /// Its values as (key as written in `[tune.space]`, value as TOML).
    pub fn values(&self, spec: &TuneSpec) -> Vec<(String, String)> {
        spec.space.iter().zip(&self.0).map(|(d, &x)| (d.key.clone(), d.render(x))).collect()
    }

    /// `key=value` pairs joined by spaces, for the text output.
    pub fn label(&self, spec: &TuneSpec) -> String {
        self.values(spec).iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }

    /// A key that identifies the point exactly.
    pub fn key(&self) -> Vec<u64> {
        self.0.iter().map(|x| x.to_bits()).collect()
    }
}

/// How the space is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Every point of the grid (`total` of them).
    Grid { total: u64 },
    /// A Latin-hypercube sample of `n` points (fewer after merging repeats).
    Sample { n: u64 },
    /// The TPE optimizer, `n` evaluations (the space has ranges).
    Optimizer { n: u64 },
}

impl Method {
    /// The most candidates it evaluates.
    pub fn candidates(self) -> u64 {
        match self {
            Method::Grid { total } => total,
            Method::Sample { n } | Method::Optimizer { n } => n,
        }
    }

    /// Its name in the outputs.
    pub fn label(self) -> &'static str {
        match self {
            Method::Grid { .. } => "grid",
            Method::Sample { .. } => "latin_hypercube",
            Method::Optimizer { .. } => "tpe",
        }
    }
}

/// The number of grid points, or `None` when the space has a range or the
/// product does not fit in 64 bits.
pub fn grid_size(spec: &TuneSpec) -> Option<u64> {
    spec.space.iter().try_fold(1u64, |acc, d| acc.checked_mul(d.count()? as u64))
}

/// The search for at most `budget` candidates.
pub fn method(spec: &TuneSpec, budget: u64) -> Method {
    match grid_size(spec) {
        _ if spec.has_ranges() => Method::Optimizer { n: budget },
        Some(total) if total <= budget => Method::Grid { total },
        _ => Method::Sample { n: budget },
    }
}

/// Grid point `index`: the first field varies slowest, the last fastest.
pub fn grid_point(spec: &TuneSpec, mut index: u64) -> Candidate {
    let mut coords = vec![0.0; spec.space.len()];
    for (i, d) in spec.space.iter().enumerate().rev() {
        let k = d.count().expect("a grid has lists only") as u64;
        coords[i] = (index % k) as f64;
        index /= k;
    }
    Candidate(coords)
}

/// A bijection of [0, n) keyed by `key`: a four-round Feistel network on
/// the smallest even number of bits that holds n, with cycle walking.
pub fn permute(i: u64, n: u64, key: u64) -> u64 {
    debug_assert!(i < n);
    let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
    let half = bits.div_ceil(2);
    let mask = (1u64 << half) - 1;
    let mut x = i;
    loop {
        let (mut l, mut r) = (x >> half, x & mask);
        for round in 0..4 {
            let f = hash_words(key, &[round, r]) & mask;
            (l, r) = (r, l ^ f);
        }
        x = (l << half) | r;
        if x < n {
            return x;
        }
    }
}

/// Point `i` of an `n`-point Latin hypercube in [0, 1)^dims: along every
/// axis each of the n strata holds exactly one point.
pub fn hypercube_point(i: u64, n: u64, dims: usize, seed: u64) -> Vec<f64> {
    (0..dims)
        .map(|d| {
            let stratum = permute(i, n, hash_words(seed, &[0x7E, d as u64]));
            let u = unit_open(hash_words(seed, &[0x7F, d as u64, i]));
            (stratum as f64 + u) / n as f64
        })
        .collect()
}

/// The candidate at `u` in [0, 1)^dims: lists by stratum, ranges on their scale.
pub fn at_unit(spec: &TuneSpec, u: &[f64]) -> Candidate {
    Candidate(
        spec.space
            .iter()
            .zip(u)
            .map(|(d, &u)| match &d.domain {
                Domain::List(v) => (u * v.len() as f64).floor().clamp(0.0, v.len() as f64 - 1.0),
                Domain::Range(r) => r.at(u),
            })
            .collect(),
    )
}

/// The candidates of a grid or a sample, made on demand in order; a sample
/// skips points that repeat an earlier one.
#[derive(Debug)]
pub struct Points<'a> {
    spec: &'a TuneSpec,
    method: Method,
    seed: u64,
    next: u64,
    seen: HashSet<Vec<u64>>,
}

impl<'a> Points<'a> {
    /// The points of a grid or sample `method` (not the optimizer's).
    pub fn new(spec: &'a TuneSpec, method: Method, seed: u64) -> Self {
        Self { spec, method, seed, next: 0, seen: HashSet::new() }
    }
}

impl Iterator for Points<'_> {
    type Item = Candidate;

    fn next(&mut self) -> Option<Candidate> {
        match self.method {
            Method::Grid { total } => {
                let i = self.next;
                (i < total).then(|| {
                    self.next += 1;
                    grid_point(self.spec, i)
                })
            }
            Method::Sample { n } | Method::Optimizer { n } => {
                while self.next < n {
                    let u = hypercube_point(self.next, n, self.spec.space.len(), self.seed);
                    self.next += 1;
                    let c = at_unit(self.spec, &u);
                    if self.seen.insert(c.key()) {
                        return Some(c);
                    }
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tune::spec::parse_spec;
    use std::path::Path;

    fn spec(space: &str) -> TuneSpec {
        parse_spec(Path::new("t.toml"), &format!("[tune]\nedge = \"clients.web.policy\"\n[tune.space]\n{space}"))
            .unwrap()
    }

    #[test]
    fn the_permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let mut seen: Vec<u64> = (0..n).map(|i| permute(i, n, 99)).collect();
            seen.sort();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n = {n}");
        }
    }

    #[test]
    fn each_stratum_of_each_axis_holds_one_point() {
        let n = 50;
        for d in 0..3 {
            let mut strata: Vec<u64> = (0..n).map(|i| (hypercube_point(i, n, 3, 7)[d] * n as f64) as u64).collect();
            strata.sort();
            assert_eq!(strata, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn the_grid_is_decoded_first_field_slowest() {
        let s = spec("a = [1, 2]\nb = [10, 20, 30]\n");
        let all: Vec<Vec<f64>> = Points::new(&s, method(&s, 100), 1).map(|c| c.0).collect();
        assert_eq!(all.len(), 6);
        assert_eq!(all[0], vec![0.0, 0.0]);
        assert_eq!(all[1], vec![0.0, 1.0]);
        assert_eq!(all[5], vec![1.0, 2.0]);
    }

    #[test]
    fn a_huge_space_is_sampled_lazily_without_repeats() {
        // 10^20 grid points: more than u64 holds.
        let s = spec(&(0..20).map(|i| format!("f{i:02} = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n")).collect::<String>());
        assert_eq!(grid_size(&s), None);
        let m = method(&s, 1_000_000);
        assert_eq!(m, Method::Sample { n: 1_000_000 });
        let first: Vec<Candidate> = Points::new(&s, m, 3).take(5).collect();
        assert_eq!(first.len(), 5);
        assert_ne!(first[0], first[1]);
    }
}
