//! Judging candidates: worst-case objective, constraints on the 95% CI
//! bound of every scenario, the best candidate, and the paired differences
//! (common random numbers: replication r of every candidate shares its
//! seeds) that decide which candidates tie with it.

use super::evaluate::{Context, Evaluated};
use super::spec::{Constraint, Op};
use crate::analysis::stats::{Summary, summarize, t_quantile};

/// One candidate judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// The worst scenario's mean of the objective; `None` when no scenario
    /// has a finite value.
    pub objective: Option<f64>,
    /// Worst scenario's mean of success (lowest), amplification and p99 (highest).
    pub success: Option<f64>,
    pub amplification: Option<f64>,
    pub p99: Option<f64>,
    /// Per constraint: how far it is missed on its worst scenario (≤ 0:
    /// met), relative to its limit (absolute for a limit of 0); infinite
    /// when it cannot be checked.
    pub violations: Vec<f64>,
    /// Per constraint: the scenario where it is closest to failing.
    pub binding: Vec<Option<usize>>,
    pub feasible: bool,
}

/// Whether higher values of `metric` are better (for worst cases).
pub fn higher_is_better(metric: &str) -> bool {
    matches!(metric, "success_rate" | "goodput_per_s" | "recovered_fraction" | "intents")
}

/// The scenarios where `metric` applies: recovery only where a scenario can measure it.
fn applies(ctx: &Context, s: usize, metric: &str) -> bool {
    metric != "recovery_time_s" || ctx.scenarios[s].measures_recovery
}

/// The worst mean of `metric` over the scenarios that have a value.
fn worst_mean(ctx: &Context, e: &Evaluated, metric: &str, higher_better: bool) -> Option<f64> {
    let means = (0..ctx.scenarios.len())
        .filter(|&s| applies(ctx, s, metric))
        .filter_map(|s| summarize(e.series(ctx, s, metric).to_vec()).mean);
    if higher_better { means.reduce(f64::min) } else { means.reduce(f64::max) }
}

/// How much `c` is missed on scenario `s` (≤ 0: met), or `None` where it does not apply.
pub fn violation(ctx: &Context, e: &Evaluated, c: &Constraint, s: usize) -> Option<f64> {
    if !applies(ctx, s, &c.metric) {
        return None;
    }
    let values = e.series(ctx, s, &c.metric);
    if values.iter().flatten().any(|x| !x.is_finite()) {
        return Some(f64::INFINITY);
    }
    let sum = summarize(values.to_vec());
    let Some(mean) = sum.mean else { return Some(f64::INFINITY) };
    let (lo, hi) = sum.ci95.unwrap_or((mean, mean));
    // Relative to the limit, or absolute (in the metric's units) for a limit of 0.
    let scale = if c.value.abs() < 1e-9 { 1.0 } else { c.value.abs() };
    Some(match c.op {
        Op::Le | Op::Lt => (hi - c.value) / scale,
        Op::Ge | Op::Gt => (c.value - lo) / scale,
        Op::Eq => (hi - c.value).abs().max((lo - c.value).abs()) / scale,
    })
}

/// Whether a constraint missed by `v` holds.
pub fn met(c: &Constraint, v: f64) -> bool {
    match c.op {
        Op::Lt | Op::Gt => v < 0.0,
        Op::Eq => v <= 1e-12,
        Op::Le | Op::Ge => v <= 0.0,
    }
}

/// Judges one candidate.
pub fn judge(ctx: &Context, e: &Evaluated) -> Judged {
    let spec = ctx.spec;
    let mut violations = Vec::new();
    let mut binding = Vec::new();
    for c in &spec.constraints {
        let worst = (0..ctx.scenarios.len())
            .filter_map(|s| violation(ctx, e, c, s).map(|v| (s, v)))
            .fold(None, |a: Option<(usize, f64)>, x| if a.is_none_or(|a| x.1 > a.1) { Some(x) } else { a });
        // A constraint no scenario can check is never met.
        violations.push(worst.map_or(f64::INFINITY, |w| w.1));
        binding.push(worst.map(|w| w.0));
    }
    let feasible = spec.constraints.iter().zip(&violations).all(|(c, &v)| met(c, v));
    let objective = worst_mean(ctx, e, &spec.objective, spec.maximize).filter(|x| x.is_finite());
    Judged {
        objective,
        success: worst_mean(ctx, e, "success_rate", true),
        amplification: worst_mean(ctx, e, "amplification", false),
        p99: worst_mean(ctx, e, "latency_p99_s", false),
        violations,
        binding,
        feasible,
    }
}

/// A score to minimise for screening (halving, the optimizer): the
/// objective for feasible candidates, then the infeasible ones by how much
/// they miss, then those without a value.
pub fn score(ctx: &Context, j: &Judged) -> f64 {
    match (j.feasible, j.objective) {
        (true, Some(x)) => {
            if ctx.spec.maximize {
                -x
            } else {
                x
            }
        }
        (false, Some(_)) => 1e15 + j.violations.iter().copied().fold(0.0, f64::max).min(1e12),
        (_, None) => 3e15,
    }
}

/// The best candidate: feasible, best worst-case objective, then lower
/// worst-case amplification, then the earlier one.
pub fn best(ctx: &Context, evals: &[Evaluated], judged: &[Judged]) -> Option<usize> {
    let better = |a: f64, b: f64| if ctx.spec.maximize { b.total_cmp(&a) } else { a.total_cmp(&b) };
    (0..evals.len()).filter(|&i| judged[i].feasible && judged[i].objective.is_some()).min_by(|&a, &b| {
        better(judged[a].objective.unwrap_or(f64::NAN), judged[b].objective.unwrap_or(f64::NAN))
            .then(
                judged[a]
                    .amplification
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&judged[b].amplification.unwrap_or(f64::INFINITY)),
            )
            .then(evals[a].order.cmp(&evals[b].order))
    })
}

/// Per replication r, the worst value of the objective over the scenarios
/// (those that have replication r): the quantity the pairs compare.
pub fn replication_worst(ctx: &Context, e: &Evaluated) -> Vec<Option<f64>> {
    let metric = &ctx.spec.objective;
    let n = (0..ctx.scenarios.len()).filter(|&s| applies(ctx, s, metric)).map(|s| e.replications(s)).min().unwrap_or(0);
    (0..n)
        .map(|r| {
            let xs = (0..ctx.scenarios.len())
                .filter(|&s| applies(ctx, s, metric))
                .filter_map(|s| e.series(ctx, s, metric).get(r).copied().flatten());
            if ctx.spec.maximize { xs.reduce(f64::min) } else { xs.reduce(f64::max) }
        })
        .collect()
}

/// Paired differences from the best candidate, `e − best`, of the
/// per-replication worst objective. Their variance is pooled over every
/// feasible candidate (a randomized block design: the replications are the
/// blocks), so every difference has an interval of the same width for the
/// same replications, the candidates that tie are exactly those whose mean
/// difference lies within it (a candidate is never passed over for one with
/// a worse mean), and 3 replications of 60 candidates give 118 degrees of
/// freedom instead of 2.
#[derive(Debug, Clone)]
pub struct Comparison {
    best: usize,
    best_worst: Vec<Option<f64>>,
    /// Pooled standard deviation of one paired difference, and its degrees of freedom.
    sd: f64,
    df: f64,
}

impl Comparison {
    /// Pools the variance of the paired differences of every feasible
    /// candidate (the best excepted) from `best`.
    pub fn new(ctx: &Context, evals: &[Evaluated], judged: &[Judged], best: usize) -> Self {
        let best_worst = replication_worst(ctx, &evals[best]);
        let (mut ss, mut df) = (0.0, 0.0);
        for i in (0..evals.len()).filter(|&i| i != best && judged[i].feasible && judged[i].objective.is_some()) {
            let d: Vec<f64> = pairs(&best_worst, &replication_worst(ctx, &evals[i]));
            if d.len() > 1 {
                let m = d.iter().sum::<f64>() / d.len() as f64;
                ss += d.iter().map(|x| (x - m).powi(2)).sum::<f64>();
                df += (d.len() - 1) as f64;
            }
        }
        let sd = if df > 0.0 { (ss / df).sqrt() } else { f64::NAN };
        Self { best, best_worst, sd, df }
    }

    /// The best candidate compared against.
    pub fn best(&self) -> usize {
        self.best
    }

    /// Degrees of freedom of the pooled variance (0: one replication).
    pub fn df(&self) -> f64 {
        self.df
    }

    /// The mean difference `e − best` with its 95% interval (pooled variance).
    pub fn difference(&self, ctx: &Context, e: &Evaluated) -> Summary {
        let d = pairs(&self.best_worst, &replication_worst(ctx, e));
        let values: Vec<Option<f64>> = d.iter().copied().map(Some).collect();
        if d.is_empty() {
            return Summary { mean: None, ci95: None, values };
        }
        let mean = d.iter().sum::<f64>() / d.len() as f64;
        let ci = (self.df > 0.0 && self.sd.is_finite()).then(|| {
            let h = t_quantile(0.95, self.df) * self.sd / (d.len() as f64).sqrt();
            (mean - h, mean + h)
        });
        Summary { mean: Some(mean), ci95: ci, values }
    }
}

/// `b − a` over the replications both have.
fn pairs(a: &[Option<f64>], b: &[Option<f64>]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .filter_map(|(x, y)| match (x, y) {
            (Some(x), Some(y)) => Some(y - x),
            _ => None,
        })
        .collect()
}

/// Whether a difference `e − best` shows `e` significantly worse. Without
/// an interval (one replication) only an exact tie is not worse.
pub fn significantly_worse(ctx: &Context, d: &Summary) -> bool {
    let worse = |x: f64| if ctx.spec.maximize { x < 0.0 } else { x > 0.0 };
    match (d.mean, d.ci95) {
        (None, _) => true,
        (Some(_), Some((lo, hi))) => {
            if ctx.spec.maximize {
                hi < 0.0
            } else {
                lo > 0.0
            }
        }
        (Some(m), None) => worse(m),
    }
}

/// The feasible candidates not significantly worse than the best (the
/// best included), each with its difference from it.
pub fn ties(ctx: &Context, evals: &[Evaluated], judged: &[Judged], cmp: &Comparison) -> Vec<(usize, Summary)> {
    (0..evals.len())
        .filter(|&i| judged[i].feasible && judged[i].objective.is_some())
        .map(|i| (i, cmp.difference(ctx, &evals[i])))
        .filter(|(_, d)| !significantly_worse(ctx, d))
        .collect()
}

/// Candidates not dominated on (success up, amplification down, p99 down),
/// from the feasible ones when there are any; identical results once.
pub fn pareto(evals: &[Evaluated], judged: &[Judged]) -> Vec<usize> {
    let key = |i: usize| {
        let j = &judged[i];
        (j.success.unwrap_or(0.0), j.amplification.unwrap_or(f64::INFINITY), j.p99.unwrap_or(f64::INFINITY))
    };
    let pool: Vec<usize> = if judged.iter().any(|j| j.feasible) {
        (0..evals.len()).filter(|&i| judged[i].feasible).collect()
    } else {
        (0..evals.len()).collect()
    };
    let mut front: Vec<usize> = pool
        .iter()
        .copied()
        .filter(|&a| {
            let (s, m, p) = key(a);
            !pool.iter().any(|&b| {
                let (s2, m2, p2) = key(b);
                s2 >= s && m2 <= m && p2 <= p && (s2 > s || m2 < m || p2 < p)
            })
        })
        .collect();
    let mut seen: Vec<(f64, f64, f64)> = Vec::new();
    front.retain(|&i| {
        let k = key(i);
        let fresh = !seen.contains(&k);
        seen.push(k);
        fresh
    });
    front.sort_by(|&a, &b| key(a).1.total_cmp(&key(b).1).then(key(b).0.total_cmp(&key(a).0)));
    front
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tune::evaluate::ScenarioInfo;
    use crate::analysis::tune::spec::parse_spec;
    use std::path::Path;

    fn spec(tune: &str) -> crate::analysis::tune::TuneSpec {
        parse_spec(
            Path::new("t.toml"),
            &format!("[tune]\nedge = \"clients.web.policy\"\n{tune}\n[tune.space]\nmax_attempts = [1]\n"),
        )
        .unwrap()
    }

    fn ctx<'a>(spec: &'a crate::analysis::tune::TuneSpec, recovery: bool) -> Context<'a> {
        Context {
            spec,
            sets: &[],
            metrics: spec.tracked_metrics(),
            scenarios: vec![ScenarioInfo::for_test("a", 3, recovery)],
            jobs: 1,
        }
    }

    /// One scenario: success per replication, then the other tracked metrics.
    fn eval(order: usize, ctx: &Context, success: [f64; 3], recovery: [Option<f64>; 3]) -> Evaluated {
        let per_metric = ctx
            .metrics
            .iter()
            .map(|m| match m.as_str() {
                "success_rate" => success.map(Some).to_vec(),
                "recovery_time_s" => recovery.to_vec(),
                _ => vec![Some(1.0); 3],
            })
            .collect();
        Evaluated::from_values(order, vec![per_metric])
    }

    #[test]
    fn a_replication_that_never_recovers_fails_a_recovery_constraint() {
        let s = spec("constraints = [\"recovery_time_s <= 30\"]");
        let c = ctx(&s, true);
        let fine = eval(1, &c, [0.9; 3], [Some(5.0), Some(6.0), Some(7.0)]);
        assert!(judge(&c, &fine).feasible);
        // Two quick recoveries and one that never came: not "5.5 s on average".
        let lost = eval(2, &c, [0.9; 3], [Some(5.0), Some(6.0), Some(f64::INFINITY)]);
        let j = judge(&c, &lost);
        assert!(!j.feasible && j.violations[0].is_infinite(), "{j:?}");
        // A scenario that cannot measure recovery does not count.
        let c = ctx(&s, false);
        assert!(judge(&c, &lost).violations[0].is_infinite(), "no scenario checks it: never met");
    }

    #[test]
    fn pooled_paired_differences_give_every_candidate_the_same_interval() {
        let s = spec("");
        let c = ctx(&s, false);
        // Replication effects shared by every candidate (common random
        // numbers) plus small noise of their own.
        let base = [0.90, 0.80, 0.95];
        let noise = [[0.0, 0.0, 0.0], [0.002, -0.001, -0.001], [0.001, 0.001, -0.002], [-0.02, -0.02, -0.02]];
        let shift = [0.0, -0.001, -0.0015, 0.0];
        let evals: Vec<Evaluated> = (0..4)
            .map(|i| eval(i + 1, &c, std::array::from_fn(|r| base[r] + shift[i] + noise[i][r]), [None; 3]))
            .collect();
        let judged: Vec<Judged> = evals.iter().map(|e| judge(&c, e)).collect();
        assert_eq!(best(&c, &evals, &judged), Some(0));
        let cmp = Comparison::new(&c, &evals, &judged, 0);
        // Differences of candidates 1..3: residual sum of squares over 3 x 2 df.
        let ss: f64 = (1..4)
            .map(|i| {
                let d: Vec<f64> = (0..3).map(|r| shift[i] + noise[i][r]).collect();
                let m = d.iter().sum::<f64>() / 3.0;
                d.iter().map(|x| (x - m).powi(2)).sum::<f64>()
            })
            .sum();
        let h = t_quantile(0.95, 6.0) * (ss / 6.0).sqrt() / 3f64.sqrt();
        let widths: Vec<f64> = (1..4).map(|i| cmp.difference(&c, &evals[i]).half_width().unwrap()).collect();
        for w in &widths {
            assert!((w - h).abs() < 1e-12, "{widths:?} vs {h}");
        }
        // Candidate 3 is 0.02 worse in every replication: significant; 1 and 2 tie.
        let tied: Vec<usize> = ties(&c, &evals, &judged, &cmp).into_iter().map(|t| t.0).collect();
        assert_eq!(tied, [0, 1, 2]);
    }
}
