//! Running candidates: each scenario as written first (it fixes the service
//! amplification is measured at), then candidates in batches, keeping only
//! the per-replication values of the metrics tune judges, so memory grows
//! by about a kilobyte per candidate whatever the runs produced.

use super::space::Candidate;
use super::spec::TuneSpec;
use crate::analysis::replicate::run_all_with;
use crate::config::{Scenario, load_experiment};
use crate::error::InputError;
use crate::metrics::RunResult;
use crate::model::RunOptions;
use std::path::PathBuf;

/// One scenario as tune judges it.
#[derive(Debug, Clone)]
pub struct ScenarioInfo {
    pub path: PathBuf,
    /// `[experiment] name`.
    pub name: String,
    /// The replications each candidate runs on it.
    pub replications: u32,
    /// The service where the scenario as written (the edge's own policy)
    /// has the most requests per intent: `amplification` is measured there
    /// for every candidate, so candidates are compared at one service.
    pub amplification_service: String,
    service_index: usize,
    /// Whether recovery is measured (a disturbance after a healthy start).
    pub measures_recovery: bool,
}

/// What the evaluation of candidates needs.
#[derive(Debug)]
pub struct Context<'a> {
    pub spec: &'a TuneSpec,
    /// `--set` (and `--seed`) overrides, applied before the candidate's.
    pub sets: &'a [String],
    /// The metrics kept per run ([`TuneSpec::tracked_metrics`]).
    pub metrics: Vec<String>,
    pub scenarios: Vec<ScenarioInfo>,
    pub jobs: usize,
}

/// One evaluated candidate (or the scenarios as written).
#[derive(Debug, Clone)]
pub struct Evaluated {
    pub candidate: Candidate,
    /// Its place in the order of evaluation (earlier wins exact ties).
    pub order: usize,
    /// `[scenario][metric][replication]`, metrics as in [`Context::metrics`].
    values: Vec<Vec<Vec<Option<f64>>>>,
}

impl Evaluated {
    /// The per-replication values of `metric` on scenario `s`. A
    /// replication that did not recover has an infinite `recovery_time_s`.
    pub fn series(&self, ctx: &Context, s: usize, metric: &str) -> &[Option<f64>] {
        match ctx.metrics.iter().position(|m| m == metric) {
            Some(i) => &self.values[s][i],
            None => &[],
        }
    }

    /// Replications run on scenario `s`.
    pub fn replications(&self, s: usize) -> usize {
        self.values[s].first().map_or(0, Vec::len)
    }
}

/// The value of `metric` in one run, with `amplification` taken at
/// service `service` and a recovery that never came as infinity.
fn read(run: &RunResult, metric: &str, service: usize) -> Option<f64> {
    let get = |m: &str| run.metrics.get(m).copied().flatten();
    match metric {
        "amplification" => run.services.get(service).and_then(|(_, m)| m.get("requests_per_intent").copied().flatten()),
        "recovery_time_s" => match get("recovery_time_s") {
            None if get("recovered_fraction") == Some(0.0) => Some(f64::INFINITY),
            v => v,
        },
        m => get(m),
    }
}

/// Whether a scenario can measure recovery: a disturbance starts after at
/// least one whole bin past the warmup (DESIGN §5).
pub fn measures_recovery(s: &Scenario) -> bool {
    let first = crate::metrics::recovery::disturbances(s).iter().map(|d| d.0).min();
    first.is_some_and(|t| t / s.bin > s.warmup.div_ceil(s.bin))
}

/// Loads one scenario with `sets` and then `overrides`; only its first variant counts.
fn load(path: &std::path::Path, sets: &[String], overrides: &[String]) -> Result<Scenario, InputError> {
    let mut all = sets.to_vec();
    all.extend(overrides.iter().cloned());
    let exp = load_experiment(path, &all)?;
    Ok(exp.variants.into_iter().next().expect("an experiment has a variant"))
}

fn reduce(runs: &[RunResult], metrics: &[String], service: usize) -> Vec<Vec<Option<f64>>> {
    metrics.iter().map(|m| runs.iter().map(|r| read(r, m, service)).collect()).collect()
}

/// Loads every scenario as written (with `sets`) and checks that each has
/// the tuned edges.
pub fn load_scenarios(spec: &TuneSpec, sets: &[String]) -> Result<Vec<Scenario>, InputError> {
    let mut loaded = Vec::new();
    for (i, path) in spec.scenarios.iter().enumerate() {
        let s = load(path, sets, &[]).map_err(|e| e.context(&format!("scenario {} of [tune]: ", i + 1)))?;
        for e in &spec.edges {
            if super::policy_at(&s, e).is_none() {
                return Err(InputError::field(
                    &spec.file,
                    format!("tune.scenarios[{i}]"),
                    format!("{} has no policy at {e}: every scenario must have each tuned edge", path.display()),
                ));
            }
        }
        loaded.push(s);
    }
    Ok(loaded)
}

/// Runs every scenario as written (`loaded`, from [`load_scenarios`]) and
/// picks the service amplification is measured at. Returns the context
/// and the scenarios' own results (order 0).
pub fn as_written<'a>(
    spec: &'a TuneSpec,
    sets: &'a [String],
    loaded: &[Scenario],
    replications: Option<u32>,
    jobs: usize,
    on_run_done: &(dyn Fn() + Sync),
) -> anyhow::Result<(Context<'a>, Evaluated)> {
    let set = run_all_with(loaded, replications, jobs, RunOptions::metrics_only(), on_run_done)?;
    let metrics = spec.tracked_metrics();
    let mut scenarios = Vec::new();
    let mut values = Vec::new();
    for (path, v) in spec.scenarios.iter().zip(&set.variants) {
        let n = v.scenario.services.len();
        let mean = |i: usize| {
            let xs: Vec<f64> = v.runs.iter().filter_map(|r| read(r, "amplification", i)).collect();
            if xs.is_empty() { f64::NEG_INFINITY } else { xs.iter().sum::<f64>() / xs.len() as f64 }
        };
        // The busiest; the first of equals.
        let service_index = (0..n).fold(0, |best, i| if mean(i) > mean(best) { i } else { best });
        values.push(reduce(&v.runs, &metrics, service_index));
        scenarios.push(ScenarioInfo {
            path: path.clone(),
            name: v.scenario.name.clone(),
            replications: v.runs.len() as u32,
            amplification_service: v.scenario.services[service_index].name.clone(),
            service_index,
            measures_recovery: measures_recovery(&v.scenario),
        });
    }
    let ctx = Context { spec, sets, metrics, scenarios, jobs };
    Ok((ctx, Evaluated { candidate: Candidate(Vec::new()), order: 0, values }))
}

/// Runs `batch` on every scenario (`replications` per scenario, else each
/// scenario's own) and keeps the judged metrics; orders start at `first`.
pub fn evaluate(
    ctx: &Context,
    batch: Vec<Candidate>,
    first: usize,
    replications: Option<u32>,
    on_run_done: &(dyn Fn() + Sync),
) -> anyhow::Result<Vec<Evaluated>> {
    let k = ctx.spec.scenarios.len();
    let mut scenarios = Vec::with_capacity(batch.len() * k);
    for c in &batch {
        crate::interrupt::check()?;
        let over = c.overrides(ctx.spec);
        for path in &ctx.spec.scenarios {
            scenarios
                .push(load(path, ctx.sets, &over).map_err(|e| e.context(&format!("candidate {}: ", over.join(", "))))?);
        }
    }
    let set = run_all_with(&scenarios, replications, ctx.jobs, RunOptions::metrics_only(), on_run_done)?;
    Ok(batch
        .into_iter()
        .enumerate()
        .map(|(ci, candidate)| {
            let values = (0..k)
                .map(|s| reduce(&set.variants[ci * k + s].runs, &ctx.metrics, ctx.scenarios[s].service_index))
                .collect();
            Evaluated { candidate, order: first + ci, values }
        })
        .collect())
}

#[cfg(test)]
impl Evaluated {
    /// A candidate with these `[scenario][metric][replication]` values.
    pub(crate) fn from_values(order: usize, values: Vec<Vec<Vec<Option<f64>>>>) -> Self {
        Self { candidate: Candidate(vec![order as f64]), order, values }
    }
}

#[cfg(test)]
impl ScenarioInfo {
    /// A scenario named `name` (amplification at its first service).
    pub(crate) fn for_test(name: &str, replications: u32, measures_recovery: bool) -> Self {
        Self {
            path: PathBuf::from(name),
            name: name.into(),
            replications,
            amplification_service: "api".into(),
            service_index: 0,
            measures_recovery,
        }
    }
}
