//! The winner confirmed on fresh seeds. The search picks the best of many
//! candidates on the same random numbers, so the winner's numbers on those
//! seeds are biased in its favour (the winner's curse): some of its lead
//! is luck. After choosing, the winner and the runner-up (the best other
//! feasible candidate) run again, as many replications as the search
//! gave each, on seeds the search never used; `tune` reports both and says
//! whether the winner still wins.

use super::evaluate::{Context, Evaluated, evaluate};
use super::judge::{Judged, judge, replication_worst};
use crate::analysis::stats::{Summary, paired_at, summarize};
use crate::engine::random::hash_words;

/// The winner (and runner-up) on fresh seeds.
#[derive(Debug, Clone)]
pub struct Confirmation {
    /// The seed every scenario ran with (`experiment.seed`).
    pub seed: u64,
    /// Replications of each of the two, per scenario.
    pub replications: Vec<u32>,
    /// The winner's index among the evaluated candidates, and the runner-up's.
    pub winner: usize,
    pub runner_up: Option<usize>,
    /// Judged on the fresh runs.
    pub winner_judged: Judged,
    pub runner_up_judged: Option<Judged>,
    /// Per metric of the objective and the constraints: the worst
    /// scenario's summary on the fresh runs, for the winner and the runner-up.
    pub winner_metrics: Vec<(String, Summary)>,
    pub runner_up_metrics: Vec<(String, Summary)>,
    /// Per metric: the paired difference winner − runner-up on the worst
    /// scenario per replication (objective) or on the scenario where the
    /// winner is worst (constraints).
    pub difference: Vec<(String, Summary)>,
    /// The winner is still feasible, and the runner-up is not both feasible
    /// and significantly better on the objective.
    pub still_wins: bool,
}

/// The best feasible candidate other than `winner`, by worst-case objective.
fn runner_up(ctx: &Context, evals: &[Evaluated], judged: &[Judged], winner: usize) -> Option<usize> {
    let better = |a: f64, b: f64| if ctx.spec.maximize { b.total_cmp(&a) } else { a.total_cmp(&b) };
    (0..evals.len()).filter(|&i| i != winner && judged[i].feasible && judged[i].objective.is_some()).min_by(|&a, &b| {
        better(judged[a].objective.unwrap_or(f64::NAN), judged[b].objective.unwrap_or(f64::NAN))
            .then(evals[a].order.cmp(&evals[b].order))
    })
}

/// The worst scenario's summary of `metric` (lowest mean when higher is better).
fn worst(ctx: &Context, e: &Evaluated, metric: &str) -> Summary {
    let higher = super::judge::higher_is_better(metric);
    let mut best: Option<Summary> = None;
    for s in 0..ctx.scenarios.len() {
        let sum = summarize(e.series(ctx, s, metric).iter().map(|x| x.filter(|x| x.is_finite())).collect());
        let Some(m) = sum.mean else { continue };
        let worse = best.as_ref().and_then(|b| b.mean).is_none_or(|b| if higher { m < b } else { m > b });
        if worse {
            best = Some(sum);
        }
    }
    best.unwrap_or(Summary { mean: None, ci95: None, values: Vec::new() })
}

/// Re-runs `winner` and the runner-up on fresh seeds and judges them.
pub fn confirm(
    ctx: &Context,
    evals: &[Evaluated],
    judged: &[Judged],
    winner: usize,
    (seed, replications): (u64, Option<u32>),
    on_run_done: &(dyn Fn() + Sync),
) -> anyhow::Result<Confirmation> {
    let fresh_seed = hash_words(seed, &[0xC0_4F1B, 0x5EED]) >> 40;
    let mut sets = ctx.sets.to_vec();
    sets.push(format!("experiment.seed={fresh_seed}"));
    let fresh = Context {
        spec: ctx.spec,
        sets: &sets,
        metrics: ctx.metrics.clone(),
        scenarios: ctx.scenarios.clone(),
        jobs: ctx.jobs,
    };
    let second = runner_up(ctx, evals, judged, winner);
    let batch: Vec<_> = std::iter::once(winner).chain(second).map(|i| evals[i].candidate.clone()).collect();
    let runs = evaluate(&fresh, batch, 0, replications, on_run_done)?;
    let mut metrics: Vec<String> = vec![ctx.spec.objective.clone()];
    for c in &ctx.spec.constraints {
        if !metrics.contains(&c.metric) {
            metrics.push(c.metric.clone());
        }
    }
    let summaries = |e: &Evaluated| -> Vec<(String, Summary)> {
        metrics.iter().map(|m| (m.clone(), worst(&fresh, e, m))).collect()
    };
    let winner_judged = judge(&fresh, &runs[0]);
    let runner_up_judged = runs.get(1).map(|e| judge(&fresh, e));
    let mut difference = Vec::new();
    if let Some(other) = runs.get(1) {
        for m in &metrics {
            let d = if m == &ctx.spec.objective {
                paired_at(&replication_worst(&fresh, other), &replication_worst(&fresh, &runs[0]), 0.95)
            } else {
                // On the scenario where the winner's mean is worst.
                let higher = super::judge::higher_is_better(m);
                let s = (0..ctx.scenarios.len())
                    .filter_map(|s| summarize(runs[0].series(&fresh, s, m).to_vec()).mean.map(|x| (s, x)))
                    .reduce(|a, b| if (higher && b.1 < a.1) || (!higher && b.1 > a.1) { b } else { a })
                    .map_or(0, |x| x.0);
                paired_at(other.series(&fresh, s, m), runs[0].series(&fresh, s, m), 0.95)
            };
            difference.push((m.clone(), d));
        }
    }
    let objective_gap = difference.first().map(|(_, d)| d.clone());
    let worse = objective_gap.as_ref().is_some_and(|d| super::judge::significantly_worse(&fresh, d));
    // A runner-up that misses a constraint on the fresh seeds is no better
    // choice, however its objective compares.
    let overtaken = worse && runner_up_judged.as_ref().is_some_and(|j| j.feasible);
    let ran: Vec<u32> =
        (0..ctx.scenarios.len()).map(|s| runs[0].series(&fresh, s, &ctx.spec.objective).len() as u32).collect();
    Ok(Confirmation {
        seed: fresh_seed,
        replications: ran,
        winner,
        runner_up: second,
        still_wins: winner_judged.feasible && !overtaken,
        winner_metrics: summaries(&runs[0]),
        runner_up_metrics: runs.get(1).map(summaries).unwrap_or_default(),
        winner_judged,
        runner_up_judged,
        difference,
    })
}
