//! Multilevel splitting for rare collapses (forward flux sampling, as in
//! Allen, Warren & ten Wolde 2005, and the splitting DesCartes uses).
//!
//! The score is the queue length at the first client's target service.
//! The healthy basin is a queue of at most `basin`; levels
//! `L1 < L2 < … < Lk` lie between it and collapse. Then
//!
//! collapses per hour = Φ₁ · P(L2 | L1) · … · P(collapse | Lk)
//!
//! where Φ₁ is the rate at which runs leave the basin and reach L1
//! (counted in ordinary runs, whose states at those moments are kept), and
//! P(next | level) is the share of branches started from the states kept
//! at a level that reach the next level (or, from the last, a collapse as
//! defined in [`super`]) before falling back into the basin. A branch is a
//! clone of the run at an event boundary with its random numbers re-keyed
//! ([`crate::model::World::branch`]): the same past, an independent future.
//! Its 95% interval is lognormal with the relative variance
//! 1/N₁ + Σ (1 − pᵢ)/(pᵢ nᵢ) (binomial stages, independent).

use super::{Rate, low_run, span_bins};
use crate::config::Scenario;
use crate::engine::random::hash_words;
use crate::engine::{Nanos, to_secs_f64};
use crate::model::{RunOptions, World};
use rayon::prelude::*;

/// The plan of a splitting estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The service whose queue is the score.
    pub service: usize,
    /// A queue of at most this is healthy.
    pub basin: usize,
    /// The levels, ascending, all above `basin`.
    pub levels: Vec<usize>,
    /// Branches per level (and crossings of the first level to collect).
    pub trials: usize,
    /// How often the score is looked at.
    pub check: Nanos,
    /// A branch that has neither gone on nor fallen back after this long fails.
    pub branch_limit: Nanos,
}

/// One stage of the estimate: from a level to the next (or to a collapse).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stage {
    /// The queue length it starts from.
    pub from: usize,
    /// The queue length it must reach, or `None` for a collapse.
    pub to: Option<usize>,
    pub trials: u64,
    pub successes: u64,
}

/// What splitting found.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Splitting {
    pub rate: Rate,
    /// Crossings of the first level per hour of healthy time (Φ₁), and how many were seen.
    pub flux_per_hour: f64,
    pub crossings: u64,
    /// Healthy hours of the ordinary runs that measured the flux.
    pub flux_hours: f64,
    pub basin: usize,
    pub stages: Vec<Stage>,
}

/// Where a branch (or an ordinary run) ended up.
enum End<'s> {
    /// It reached the target: its state there.
    Reached(Box<World<'s>>),
    Failed,
}

/// Advances `world` by `check` steps until its score reaches `to` (or, with
/// `to = None`, it collapses), it falls back into the basin, or the limit.
fn advance<'s>(mut world: World<'s>, plan: &Plan, to: Option<usize>, s: &Scenario) -> (End<'s>, u64, Nanos) {
    let start_events = world.events();
    let start = world.now();
    let limit = start.saturating_add(plan.branch_limit);
    let (bin, span) = (s.bin, span_bins(s));
    let first = s.warmup.div_ceil(bin) as usize;
    let mut t = start;
    loop {
        t = (t / plan.check + 1) * plan.check;
        let goes_on = world.advance_to(t);
        let q = world.queue_len(plan.service);
        let spent = world.events() - start_events;
        let took = t - start;
        match to {
            Some(level) if q >= level => return (End::Reached(Box::new(world)), spent, took),
            None if t.is_multiple_of(bin) && low_run(world.series(), first, (t / bin) as usize) >= span => {
                return (End::Reached(Box::new(world)), spent, took);
            }
            _ => {}
        }
        if q <= plan.basin || t >= limit || !goes_on {
            return (End::Failed, spent, took);
        }
    }
}

/// One ordinary run of the flux phase: the states at which it left the
/// basin and reached the first level (at most `keep`), the crossings, the
/// healthy time and the events.
fn flux_run<'s>(
    s: &'s Scenario,
    rep: u32,
    plan: &Plan,
    observe_to: Nanos,
    keep: usize,
) -> (Vec<World<'s>>, u64, Nanos, u64) {
    let mut world = World::new(s, rep, RunOptions::metrics_only());
    let (bin, span) = (s.bin, span_bins(s));
    let first = s.warmup.div_ceil(bin) as usize;
    let (mut kept, mut crossings, mut armed) = (Vec::new(), 0u64, true);
    let mut t = s.warmup;
    while t < observe_to {
        t = (t / plan.check + 1) * plan.check;
        world.advance_to(t);
        let q = world.queue_len(plan.service);
        if armed && q >= plan.levels[0] {
            crossings += 1;
            armed = false;
            if kept.len() < keep {
                kept.push(world.clone());
            }
        } else if q <= plan.basin {
            armed = true;
        }
        if t.is_multiple_of(bin) && low_run(world.series(), first, (t / bin) as usize) >= span {
            // A collapse during the flux phase: healthy time ends at its onset.
            let onset = t - span as u64 * bin;
            return (kept, crossings, onset.saturating_sub(s.warmup), world.events());
        }
    }
    (kept, crossings, observe_to - s.warmup, world.events())
}

/// Estimates the collapse rate of `s` by splitting. `observe` is the length
/// of each ordinary run of the flux phase (the experiment's duration);
/// `s` must run long enough beyond it for branches (`branch_limit`).
/// The flux phase stops with an error after `max_hours` of healthy time
/// without enough crossings of the first level.
pub fn estimate(
    s: &Scenario,
    observe: Nanos,
    plan: &Plan,
    jobs: usize,
    max_hours: f64,
    progress: &indicatif::ProgressBar,
) -> anyhow::Result<Splitting> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
    let mut events = 0u64;
    let mut simulated: Nanos = 0;
    // The flux phase: batches of ordinary runs until `trials` crossings are kept,
    // at most trials/16 from each run (so the start states come from many runs).
    let keep = plan.trials.div_ceil(16).max(1);
    let (mut states, mut crossings, mut healthy, mut rep) = (Vec::new(), 0u64, 0 as Nanos, 0u32);
    // Run time watched, healthy or not: what `max_hours` bounds.
    let mut watched: Nanos = 0;
    while states.len() < plan.trials {
        let reps: Vec<u32> = (rep..rep + super::BATCH).collect();
        rep += super::BATCH;
        let runs: Vec<_> =
            pool.install(|| reps.par_iter().with_max_len(1).map(|&r| flux_run(s, r, plan, observe, keep)).collect());
        crate::interrupt::check()?;
        for (kept, c, h, e) in runs {
            states.extend(kept);
            crossings += c;
            healthy += h;
            events += e;
            simulated += h;
            watched += observe.saturating_sub(s.warmup);
        }
        let hours = to_secs_f64(healthy) / 3600.0;
        let simulated_hours = to_secs_f64(watched) / 3600.0;
        progress.set_message(format!(
            "variant \"{}\": splitting, {} of {} start states at queue {} in {hours:.1} healthy hours (at most {max_hours})",
            s.variant,
            states.len().min(plan.trials),
            plan.trials,
            plan.levels[0]
        ));
        if states.len() < plan.trials && (hours >= max_hours || simulated_hours >= max_hours) {
            anyhow::bail!(
                "the first level (queue {}) was reached {} in {hours:.1} healthy hours ({simulated_hours:.1} simulated), fewer than the {} start states --trials asks for, and --max-hours is {max_hours}: give lower --levels, fewer --trials or more --max-hours",
                plan.levels[0],
                crate::words::plural(crossings as usize, "time"),
                plan.trials
            );
        }
    }
    states.truncate(plan.trials);
    let flux_hours = to_secs_f64(healthy) / 3600.0;
    let flux = crossings as f64 / flux_hours;
    let mut stages = Vec::new();
    let mut probability = 1.0;
    let mut rel_var = 1.0 / crossings as f64;
    let mut zero_bound: Option<f64> = None;
    let targets: Vec<Option<usize>> = plan.levels.iter().skip(1).map(|&l| Some(l)).chain([None]).collect();
    for (i, to) in targets.into_iter().enumerate() {
        let from = plan.levels[i];
        let n = plan.trials;
        progress.set_message(format!(
            "variant \"{}\": splitting, level {} of {}: {n} branches from queue {from}",
            s.variant,
            i + 1,
            plan.levels.len()
        ));
        let branches: Vec<(End, u64, Nanos)> = pool.install(|| {
            (0..n)
                .into_par_iter()
                .with_max_len(1)
                .map(|j| {
                    let start = &states[j % states.len()];
                    let world = start.branch(hash_words(0x5_9117, &[i as u64, j as u64]));
                    advance(world, plan, to, s)
                })
                .collect()
        });
        crate::interrupt::check()?;
        let mut next = Vec::new();
        for (end, spent, took) in branches {
            events += spent;
            simulated += took;
            if let End::Reached(w) = end {
                next.push(*w);
            }
        }
        let successes = next.len() as u64;
        stages.push(Stage { from, to, trials: n as u64, successes });
        if successes == 0 {
            // Nothing got through: the rate is 0, with at most 3/n (the rule of three) at this stage.
            zero_bound = Some(flux * probability * 3.0 / n as f64);
            probability = 0.0;
            break;
        }
        let p = successes as f64 / n as f64;
        probability *= p;
        rel_var += (1.0 - p) / (p * n as f64);
        states = next;
    }
    let rate = flux * probability;
    let ci95 = match zero_bound {
        Some(hi) => [0.0, hi],
        None => {
            let spread = (1.959_963_984_540_054 * rel_var.sqrt()).exp();
            [rate / spread, rate * spread]
        }
    };
    Ok(Splitting {
        rate: Rate { collapses_per_hour: rate, ci95, simulated_hours: to_secs_f64(simulated) / 3600.0, events },
        flux_per_hour: flux,
        crossings,
        flux_hours,
        basin: plan.basin,
        stages,
    })
}
