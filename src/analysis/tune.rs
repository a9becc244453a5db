//! `retrysim tune`: the best policy for one or several call edges under an
//! objective and constraints, judged on the worst of several scenarios,
//! with constraints checked on the 95% CI bound so the winner stays
//! feasible on fresh seeds, and the winner chosen by paired differences
//! under common random numbers rather than by the mean alone.
//!
//! - [`spec`]: the `[tune]` table, read strictly;
//! - [`space`]: candidates made one at a time (grid or Latin hypercube);
//! - [`optimize`]: spaces with ranges, searched by TPE;
//! - [`evaluate`]: the runs, and the per-replication values kept;
//! - [`judge`]: worst cases, constraints, the best, the pairs;
//! - [`prefer`]: among ties, fewer lint findings and the gentler policy.

pub mod confirm;
pub mod evaluate;
pub mod judge;
pub mod optimize;
pub mod prefer;
pub mod range;
pub mod space;
pub mod spec;

pub use evaluate::{Context, Evaluated, ScenarioInfo, as_written, evaluate, load_scenarios};
pub use judge::{Judged, judge, pareto};
pub use space::{Candidate, Method, grid_size, method};
pub use spec::{Constraint, Dim, Domain, Op, TuneSpec, parse_spec};

use crate::config::{Experiment, Scenario, load_experiment};
use crate::error::{InputError, InputResult};
use crate::policy::Policy;

/// The policy an override key such as `clients.web.policy` or
/// `services.api.calls.db.policy` names.
pub fn policy_at<'a>(s: &'a Scenario, key: &str) -> Option<&'a Policy> {
    let parts: Vec<&str> = key.split('.').collect();
    match parts.as_slice() {
        ["clients", name, "policy"] => s.clients.iter().find(|c| c.name == *name).map(|c| &c.policy),
        ["services", svc, "calls", to, "policy"] => {
            let si = s.services.iter().position(|x| x.name == *svc)?;
            s.services[si].calls.iter().find(|c| s.services[c.to].name == *to).map(|c| &c.policy)
        }
        _ => None,
    }
}

/// Checks the spec against the tune file itself (`exp`, loaded with
/// `sets`): every edge names a policy, and the candidates are ones the
/// policy accepts. A grid or a sample (`method`, drawn with `seed`) is
/// of up to 1000 candidates is checked candidate by candidate, so a value
/// that needs another field (`backoff.kind = "exponential"` needs a
/// `backoff.base`) is fine when the space supplies it, and an invalid
/// combination is named. For the optimizer, whose candidates depend on the
/// results, and for larger spaces, every value (each range's ends) must be
/// accepted on its own or beside one value of another field; a candidate
/// that is still invalid is named when it is made. A recovery constraint's
/// scenario is checked later.
pub fn check_values(spec: &TuneSpec, exp: &Experiment, sets: &[String], method: Method, seed: u64) -> InputResult<()> {
    for (i, e) in spec.edges.iter().enumerate() {
        if policy_at(&exp.variants[0], e).is_none() {
            let field = if spec.edges.len() == 1 { "tune.edge".to_string() } else { format!("tune.edges[{i}]") };
            return Err(InputError::field(
                &spec.file,
                field,
                format!(
                    "\"{e}\" names no policy of this experiment: use clients.NAME.policy or services.NAME.calls.CALLEE.policy"
                ),
            ));
        }
    }
    let loads = |over: &[String]| -> Result<(), InputError> {
        let mut all = sets.to_vec();
        all.extend(over.iter().cloned());
        load_experiment(&exp.path, &all).map(|_| ())
    };
    let why = |e: &InputError| match &e.field {
        Some(f) => format!("{f}: {}", e.message),
        None => e.message.clone(),
    };
    // Up to this many candidates (a second or so of loading) are checked one
    // by one; a larger grid or sample, value by value as for the optimizer.
    const CHECKED_ONE_BY_ONE: u64 = 1000;
    if !matches!(method, Method::Optimizer { .. }) && method.candidates() <= CHECKED_ONE_BY_ONE {
        for c in space::Points::new(spec, method, seed) {
            let over = c.overrides(spec);
            let Err(e) = loads(&over) else { continue };
            // A value that fails on its own, as the whole candidate does, is named alone.
            for ((key, text), own) in c.values(spec).into_iter().zip(&over) {
                if loads(std::slice::from_ref(own)).is_err_and(|alone| why(&alone) == why(&e)) {
                    return Err(InputError::field(
                        &spec.file,
                        format!("tune.space.\"{key}\""),
                        format!("the value {text} is not allowed: {}", why(&e)),
                    ));
                }
            }
            return Err(InputError::field(
                &spec.file,
                "tune.space",
                format!("the candidate {} is not allowed: {}", c.label(spec), why(&e)),
            ));
        }
        return Ok(());
    }
    let texts = |d: &Dim| -> Vec<String> {
        match &d.domain {
            Domain::List(values) => values.iter().map(ToString::to_string).collect(),
            Domain::Range(r) => vec![r.render(r.lo), r.render(r.hi)],
        }
    };
    for (di, d) in spec.space.iter().enumerate() {
        for text in texts(d) {
            let own = format!("{}={text}", d.target);
            let Err(e) = loads(std::slice::from_ref(&own)) else { continue };
            let partnered = spec.space.iter().enumerate().filter(|(oi, _)| *oi != di).any(|(_, other)| {
                texts(other).iter().any(|t| loads(&[own.clone(), format!("{}={t}", other.target)]).is_ok())
            });
            if !partnered {
                return Err(InputError::field(
                    &spec.file,
                    format!("tune.space.\"{}\"", d.key),
                    format!(
                        "the value {text} is not allowed, on its own or beside any one value of another field: {}",
                        why(&e)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A recovery constraint or objective needs a scenario that measures
/// recovery (`scenarios` as loaded by [`evaluate::load_scenarios`]).
pub fn check_recovery(spec: &TuneSpec, scenarios: &[Scenario]) -> InputResult<()> {
    let uses = |m: &str| m == "recovery_time_s";
    let field = if uses(&spec.objective) {
        Some("tune.objective".to_string())
    } else {
        spec.constraints.iter().position(|c| uses(&c.metric)).map(|i| format!("tune.constraints[{i}]"))
    };
    match field {
        Some(field) if !scenarios.iter().any(evaluate::measures_recovery) => Err(InputError::field(
            &spec.file,
            field,
            "recovery_time_s is measured after a disturbance (a fault or a rate change) that starts after a healthy stretch past the warmup; no scenario has one (a fault from t = 0 leaves no baseline)",
        )),
        _ => Ok(()),
    }
}

/// How to search.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub method: Method,
    /// Replications per candidate and scenario; `None`: each scenario's own.
    pub replications: Option<u32>,
    /// Successive halving (lists only).
    pub halving: bool,
    /// Seeds the sample and the optimizer.
    pub seed: u64,
}

/// Candidates run together (memory stays flat in the number of candidates).
const BATCH: usize = 16;
/// Points the optimizer proposes between updates (fixed, so that results
/// do not depend on --jobs).
const TPE_BATCH: usize = 8;

/// Every candidate evaluated, in order, and the runs made.
#[derive(Debug)]
pub struct Outcome {
    pub evaluated: Vec<Evaluated>,
    pub runs: u64,
}

/// The runs behind `evals`.
fn runs_of(ctx: &Context, evals: &[Evaluated]) -> u64 {
    evals.iter().map(|e| (0..ctx.scenarios.len()).map(|s| e.replications(s) as u64).sum::<u64>()).sum()
}

/// Searches the space (see [`Options`]).
pub fn search(ctx: &Context, options: Options, on_run_done: &(dyn Fn() + Sync)) -> anyhow::Result<Outcome> {
    let count = |e: &[Evaluated]| runs_of(ctx, e);
    let spec = ctx.spec;
    let mut out = Vec::new();
    let mut runs = 0;
    match options.method {
        Method::Optimizer { n } => {
            let n = n as usize;
            let mut tpe = optimize::Tpe::new(spec, options.seed);
            let mut seen = std::collections::HashSet::new();
            // A space-filling start, then the optimizer.
            let startup = n.min((3 * spec.space.len()).max(10));
            let first: Vec<Candidate> =
                space::Points::new(spec, Method::Optimizer { n: startup as u64 }, options.seed).collect();
            let mut batch = first;
            while !batch.is_empty() {
                for c in &batch {
                    seen.insert(c.key());
                }
                let evals = evaluate(ctx, batch, out.len() + 1, options.replications, on_run_done)?;
                runs += count(&evals);
                for e in &evals {
                    tpe.tell(spec, &e.candidate, judge::score(ctx, &judge(ctx, e)))?;
                }
                out.extend(evals);
                batch = Vec::new();
                let mut tries = 0;
                while batch.len() < TPE_BATCH.min(n - out.len()) && tries < 50 * TPE_BATCH {
                    tries += 1;
                    let c = tpe.ask(spec)?;
                    if !seen.contains(&c.key()) && !batch.contains(&c) {
                        batch.push(c);
                    }
                }
            }
        }
        m if options.halving => {
            let (evals, r) = successive_halving(ctx, m, options, on_run_done)?;
            out = evals;
            runs = r;
        }
        m => {
            let mut points = space::Points::new(spec, m, options.seed);
            loop {
                let batch: Vec<Candidate> = points.by_ref().take(BATCH).collect();
                if batch.is_empty() {
                    break;
                }
                let evals = evaluate(ctx, batch, out.len() + 1, options.replications, on_run_done)?;
                runs += count(&evals);
                out.extend(evals);
            }
        }
    }
    Ok(Outcome { evaluated: out, runs })
}

/// Successive halving: every candidate with 2 replications, keep the
/// better half (feasible first, then the worst-case objective), double the
/// replications, and so on until at most 4 candidates are left or the
/// replications reach the final count; the survivors then run with it.
fn successive_halving(
    ctx: &Context,
    method: Method,
    options: Options,
    on_run_done: &(dyn Fn() + Sync),
) -> anyhow::Result<(Vec<Evaluated>, u64)> {
    let final_reps =
        options.replications.unwrap_or_else(|| ctx.scenarios.iter().map(|s| s.replications).max().unwrap_or(1)).max(2);
    let mut survivors: Vec<Candidate> = space::Points::new(ctx.spec, method, options.seed).collect();
    let mut reps = 2u32.min(final_reps);
    let mut runs = 0u64;
    let per = |n: usize, r: u32| (n * ctx.scenarios.len()) as u64 * r as u64;
    while survivors.len() > 4 && reps < final_reps {
        let mut evals = Vec::new();
        for chunk in survivors.chunks(BATCH) {
            evals.extend(evaluate(ctx, chunk.to_vec(), evals.len() + 1, Some(reps), on_run_done)?);
        }
        runs += per(survivors.len(), reps);
        let mut ranked: Vec<(f64, usize)> =
            evals.iter().map(|e| (judge::score(ctx, &judge(ctx, e)), e.order)).collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let keep = survivors.len().div_ceil(2);
        let mut kept: Vec<usize> = ranked.into_iter().take(keep).map(|(_, o)| o - 1).collect();
        kept.sort();
        survivors = kept.into_iter().map(|i| survivors[i].clone()).collect();
        reps *= 2;
    }
    let mut evals = Vec::new();
    for chunk in survivors.chunks(BATCH) {
        evals.extend(evaluate(ctx, chunk.to_vec(), evals.len() + 1, Some(final_reps), on_run_done)?);
    }
    runs += per(survivors.len(), final_reps);
    Ok((evals, runs))
}

/// The most rounds of [`settle`].
const SETTLE_ROUNDS: usize = 3;

/// The most candidates [`settle`] may add to a search of `spec`.
pub fn settle_budget(spec: &TuneSpec) -> u64 {
    let neighbours: usize = spec.space.iter().filter_map(|d| d.count()).map(|k| k - 1).sum();
    (SETTLE_ROUNDS * neighbours) as u64
}

/// The judged search and its choice, once no candidate one list value
/// away from the winner has fewer lint findings without being evaluated:
/// those are run (with the same seeds) and the choice made again, so a
/// sample or the optimizer cannot leave a warning the space could avoid
/// at no cost. A grid has tried every combination already.
pub fn settle(
    ctx: &Context,
    options: Options,
    mut outcome: Outcome,
    assessor: &mut prefer::Assessor,
    on_run_done: &(dyn Fn() + Sync),
) -> anyhow::Result<(Outcome, Vec<Judged>, Option<prefer::Choice>)> {
    let replications = if options.halving {
        let most = ctx.scenarios.iter().map(|s| s.replications).max().unwrap_or(1);
        Some(options.replications.unwrap_or(most).max(2))
    } else {
        options.replications
    };
    let mut round = 0;
    loop {
        let judged: Vec<Judged> = outcome.evaluated.iter().map(|e| judge(ctx, e)).collect();
        let Some(best) = judge::best(ctx, &outcome.evaluated, &judged) else { return Ok((outcome, judged, None)) };
        let choice = prefer::choose(ctx, &outcome.evaluated, &judged, best, assessor)?;
        if matches!(options.method, Method::Grid { .. }) || round == SETTLE_ROUNDS {
            return Ok((outcome, judged, Some(choice)));
        }
        round += 1;
        let seen: std::collections::HashSet<Vec<u64>> = outcome.evaluated.iter().map(|e| e.candidate.key()).collect();
        let extra = prefer::gentler_neighbours(ctx, &outcome.evaluated, choice.winner, &seen, assessor)?;
        if extra.is_empty() {
            return Ok((outcome, judged, Some(choice)));
        }
        let first = outcome.evaluated.len() + 1;
        let evals = evaluate(ctx, extra, first, replications, on_run_done)?;
        outcome.runs += runs_of(ctx, &evals);
        outcome.evaluated.extend(evals);
    }
}
