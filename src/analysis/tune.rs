//! `retrysim tune`: the best policy for one call edge under an objective and
//! constraints, judged on the worst of several scenarios, with constraints
//! checked on the 95% CI bound so the winner stays feasible on fresh seeds.

use super::replicate::run_all_with;
use super::stats::summarize;
use crate::config::{Scenario, load_experiment};
use crate::engine::random::{hash_words, unit_open};
use crate::error::{InputError, InputResult};
use crate::model::RunOptions;
use std::path::{Path, PathBuf};

/// A comparison in a constraint.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    pub metric: String,
    pub op: String,
    pub value: f64,
    pub text: String,
}

/// The `[tune]` table.
#[derive(Debug, Clone)]
pub struct TuneSpec {
    /// The override key of the tuned policy (e.g. `clients.web.policy`).
    pub edge: String,
    pub maximize: bool,
    pub objective: String,
    pub constraints: Vec<Constraint>,
    /// Scenario experiment files (absolute or relative to the working directory).
    pub scenarios: Vec<PathBuf>,
    /// Policy field → candidate values (TOML text).
    pub space: Vec<(String, Vec<String>)>,
}

fn metric_name(file: &str, field: &str, m: &str) -> InputResult<String> {
    if crate::metrics::METRICS.contains(&m) {
        Ok(m.to_string())
    } else {
        Err(InputError::field(
            file,
            field,
            format!("unknown metric \"{m}\"; allowed: {}", crate::metrics::METRICS.join(", ")),
        ))
    }
}

/// Reads `[tune]` from the experiment's source text.
pub fn parse_spec(exp_path: &Path, source: &str) -> InputResult<TuneSpec> {
    let file = exp_path.display().to_string();
    let doc: toml::Table = source.parse().map_err(|e| InputError::file(&file, format!("not valid TOML: {e}")))?;
    let tune = doc.get("tune").and_then(|t| t.as_table()).ok_or_else(|| {
        InputError::field(
            &file,
            "tune",
            "`retrysim tune` needs a [tune] table (edge, objective, constraints, scenarios, [tune.space])",
        )
    })?;
    for k in tune.keys() {
        if !["edge", "objective", "constraints", "scenarios", "space"].contains(&k.as_str()) {
            return Err(InputError::field(
                &file,
                format!("tune.{k}"),
                "unknown key: [tune] takes edge, objective, constraints, scenarios, space",
            ));
        }
    }
    let edge = tune.get("edge").and_then(|v| v.as_str()).ok_or_else(|| {
        InputError::field(
            &file,
            "tune.edge",
            "required: the override key of the tuned policy, such as \"clients.web.policy\"",
        )
    })?;
    let objective = tune.get("objective").and_then(|v| v.as_str()).unwrap_or("maximize success_rate");
    let (dir, metric) = objective.split_once(' ').ok_or_else(|| {
        InputError::field(&file, "tune.objective", "expected \"maximize METRIC\" or \"minimize METRIC\"")
    })?;
    let maximize = match dir {
        "maximize" => true,
        "minimize" => false,
        _ => {
            return Err(InputError::field(
                &file,
                "tune.objective",
                "expected \"maximize METRIC\" or \"minimize METRIC\"",
            ));
        }
    };
    let objective = metric_name(&file, "tune.objective", metric.trim())?;
    let mut constraints = Vec::new();
    for (i, c) in tune.get("constraints").and_then(|v| v.as_array()).cloned().unwrap_or_default().iter().enumerate() {
        let field = format!("tune.constraints[{i}]");
        let text = c.as_str().ok_or_else(|| {
            InputError::field(&file, &field, "each constraint is a string such as \"amplification <= 1.3\"")
        })?;
        let op = ["<=", ">=", "==", "<", ">"].into_iter().find(|op| text.contains(op)).ok_or_else(|| {
            InputError::field(&file, &field, "expected METRIC OP NUMBER with OP one of <=, >=, ==, <, >")
        })?;
        let (m, v) = text.split_once(op).expect("found");
        let value: f64 = v
            .trim()
            .parse()
            .map_err(|_| InputError::field(&file, &field, format!("\"{}\" is not a number", v.trim())))?;
        constraints.push(Constraint {
            metric: metric_name(&file, &field, m.trim())?,
            op: op.to_string(),
            value,
            text: text.to_string(),
        });
    }
    let base = exp_path.parent().map(Path::to_path_buf).unwrap_or_default();
    let scenarios: Vec<PathBuf> = match tune.get("scenarios").and_then(|v| v.as_array()) {
        None => vec![exp_path.to_path_buf()],
        Some(list) => list
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.as_str().map(|s| base.join(s)).ok_or_else(|| {
                    InputError::field(
                        &file,
                        format!("tune.scenarios[{i}]"),
                        "each scenario is a path to an experiment file",
                    )
                })
            })
            .collect::<InputResult<_>>()?,
    };
    let space_table = tune.get("space").and_then(|v| v.as_table()).ok_or_else(|| {
        InputError::field(
            &file,
            "tune.space",
            "required: candidate values per policy field, such as max_attempts = [1, 2, 3]",
        )
    })?;
    let mut space = Vec::new();
    for (k, v) in space_table {
        let values = v.as_array().filter(|a| !a.is_empty()).ok_or_else(|| {
            InputError::field(&file, format!("tune.space.\"{k}\""), "a non-empty list of candidate values")
        })?;
        space.push((k.clone(), values.iter().map(|x| x.to_string()).collect()));
    }
    if space.is_empty() {
        return Err(InputError::field(&file, "tune.space", "at least one policy field to tune"));
    }
    Ok(TuneSpec { edge: edge.to_string(), maximize, objective, constraints, scenarios, space })
}

/// The candidates: the full grid when it has at most `budget` points, else
/// a Latin-hypercube sample of `budget` points (deterministic for `seed`).
pub fn candidates(spec: &TuneSpec, budget: usize, seed: u64) -> Vec<Vec<usize>> {
    let sizes: Vec<usize> = spec.space.iter().map(|(_, v)| v.len()).collect();
    let total: usize = sizes.iter().product();
    if total <= budget {
        let mut out = vec![Vec::new()];
        for &k in &sizes {
            out =
                out.into_iter().flat_map(|c: Vec<usize>| (0..k).map(move |i| [c.clone(), vec![i]].concat())).collect();
        }
        return out;
    }
    let n = budget.max(1);
    let mut columns: Vec<Vec<usize>> = Vec::new();
    for (d, &k) in sizes.iter().enumerate() {
        // A random permutation of strata, one value per stratum.
        let mut order: Vec<(f64, usize)> =
            (0..n).map(|i| (unit_open(hash_words(seed, &[0x7E, d as u64, i as u64])), i)).collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0));
        columns.push(
            order
                .iter()
                .enumerate()
                .map(|(i, &(_, stratum))| {
                    let u = unit_open(hash_words(seed, &[0x7F, d as u64, i as u64]));
                    (((stratum as f64 + u) / n as f64) * k as f64).floor().min(k as f64 - 1.0) as usize
                })
                .collect(),
        );
    }
    let mut out: Vec<Vec<usize>> = (0..n).map(|i| columns.iter().map(|c| c[i]).collect()).collect();
    out.sort();
    out.dedup();
    out
}

/// A mean and its 95% CI, either possibly missing.
type MeanCi = (Option<f64>, Option<(f64, f64)>);

/// One candidate's results: per scenario, per metric, (mean, lo, hi).
#[derive(Debug, Clone)]
pub struct Evaluated {
    pub choice: Vec<usize>,
    pub overrides: Vec<String>,
    /// Worst over scenarios of each metric's mean: (metric → value).
    pub worst: Vec<(String, Option<f64>)>,
    /// How much each constraint is violated on its worst scenario (≤ 0: met).
    pub violations: Vec<f64>,
    pub feasible: bool,
    pub objective: Option<f64>,
}

/// The overrides of one candidate.
pub fn overrides(spec: &TuneSpec, choice: &[usize]) -> Vec<String> {
    spec.space.iter().zip(choice).map(|((field, values), &i)| format!("{}.{field}={}", spec.edge, values[i])).collect()
}

/// Evaluates every candidate on every scenario (all runs in parallel).
pub fn evaluate(
    spec: &TuneSpec,
    cands: &[Vec<usize>],
    sets: &[String],
    replications: Option<u32>,
    jobs: usize,
    on_run_done: &(dyn Fn() + Sync),
) -> anyhow::Result<Vec<Evaluated>> {
    let mut scenarios: Vec<Scenario> = Vec::new();
    for c in cands {
        let over = overrides(spec, c);
        for path in &spec.scenarios {
            let mut all = sets.to_vec();
            all.extend(over.iter().cloned());
            let exp =
                load_experiment(path, &all).map_err(|e| e.context(&format!("candidate {}: ", over.join(", "))))?;
            scenarios.push(exp.variants.into_iter().next().expect("an experiment has a variant"));
        }
    }
    // Only the metrics count: lean runs keep the memory flat in candidates.
    let set = run_all_with(&scenarios, replications, jobs, RunOptions::metrics_only(), on_run_done)?;
    let k = spec.scenarios.len();
    let mut out = Vec::new();
    for (ci, c) in cands.iter().enumerate() {
        let runs = &set.variants[ci * k..(ci + 1) * k];
        let stat = |metric: &str| -> Vec<MeanCi> {
            runs.iter()
                .map(|v| {
                    let s = summarize(v.runs.iter().map(|r| r.metrics.get(metric).copied().flatten()).collect());
                    (s.mean, s.ci95)
                })
                .collect()
        };
        let worst_of = |metric: &str, higher_is_better: bool| -> Option<f64> {
            let means: Vec<f64> = stat(metric).into_iter().filter_map(|x| x.0).collect();
            if means.is_empty() {
                return None;
            }
            Some(if higher_is_better {
                means.iter().copied().fold(f64::INFINITY, f64::min)
            } else {
                means.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            })
        };
        let violations: Vec<f64> = spec
            .constraints
            .iter()
            .map(|con| {
                stat(&con.metric)
                    .into_iter()
                    .map(|(mean, ci)| {
                        let Some(mean) = mean else { return f64::INFINITY };
                        let (lo, hi) = ci.unwrap_or((mean, mean));
                        // Relative to the limit, or absolute for a limit of 0.
                        let scale = if con.value.abs() < 1e-9 { 1.0 } else { con.value.abs() };
                        match con.op.as_str() {
                            "<=" | "<" => (hi - con.value) / scale,
                            ">=" | ">" => (con.value - lo) / scale,
                            _ => ((hi - con.value).abs().max((lo - con.value).abs())) / scale,
                        }
                    })
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect();
        let feasible = spec.constraints.iter().zip(&violations).all(|(con, v)| match con.op.as_str() {
            "<" | ">" => *v < 0.0,
            "==" => *v <= 1e-12,
            _ => *v <= 0.0,
        });
        let worst = ["success_rate", "amplification", "latency_p99_s", "attempts_per_intent", "duplicate_intents"]
            .iter()
            .map(|m| (m.to_string(), worst_of(m, *m == "success_rate")))
            .collect();
        out.push(Evaluated {
            choice: c.clone(),
            overrides: overrides(spec, c),
            worst,
            violations,
            feasible,
            objective: worst_of(&spec.objective, spec.maximize),
        });
    }
    Ok(out)
}

/// The best feasible candidate: best worst-case objective, then lower
/// amplification, then the earlier candidate.
pub fn winner<'a>(spec: &TuneSpec, evals: &'a [Evaluated]) -> Option<&'a Evaluated> {
    let amp =
        |e: &Evaluated| e.worst.iter().find(|w| w.0 == "amplification").and_then(|w| w.1).unwrap_or(f64::INFINITY);
    evals.iter().filter(|e| e.feasible && e.objective.is_some()).min_by(|a, b| {
        let (x, y) = (a.objective.unwrap_or(f64::NAN), b.objective.unwrap_or(f64::NAN));
        let by_obj = if spec.maximize { y.total_cmp(&x) } else { x.total_cmp(&y) };
        by_obj.then(amp(a).total_cmp(&amp(b)))
    })
}

/// Candidates not dominated on (success up, amplification down, p99 down).
pub fn pareto(evals: &[Evaluated]) -> Vec<&Evaluated> {
    let key = |e: &Evaluated| {
        let g = |m: &str| e.worst.iter().find(|w| w.0 == m).and_then(|w| w.1);
        (
            g("success_rate").unwrap_or(0.0),
            g("amplification").unwrap_or(f64::INFINITY),
            g("latency_p99_s").unwrap_or(f64::INFINITY),
        )
    };
    let pool: Vec<&Evaluated> = if evals.iter().any(|e| e.feasible) {
        evals.iter().filter(|e| e.feasible).collect()
    } else {
        evals.iter().collect()
    };
    let mut front: Vec<&Evaluated> = pool
        .iter()
        .filter(|a| {
            let (s, m, p) = key(a);
            !pool.iter().any(|b| {
                let (s2, m2, p2) = key(b);
                s2 >= s && m2 <= m && p2 <= p && (s2 > s || m2 < m || p2 < p)
            })
        })
        .copied()
        .collect();
    // Candidates with identical results (e.g. backoff settings with one attempt) appear once.
    let mut seen: Vec<(f64, f64, f64)> = Vec::new();
    front.retain(|e| {
        let k = key(e);
        if seen.contains(&k) {
            false
        } else {
            seen.push(k);
            true
        }
    });
    front.sort_by(|a, b| key(a).1.total_cmp(&key(b).1).then(key(b).0.total_cmp(&key(a).0)));
    front
}

/// Successive halving: evaluate every candidate with 2 replications, keep
/// the better half (feasible first, then the worst-case objective), double
/// the replications, and so on until at most 4 candidates are left or the
/// replications reach `final_reps`; the survivors are then evaluated with
/// `final_reps`. Returns the final evaluations and the number of runs made.
pub fn successive_halving(
    spec: &TuneSpec,
    cands: &[Vec<usize>],
    sets: &[String],
    final_reps: u32,
    jobs: usize,
    on_run_done: &(dyn Fn() + Sync),
) -> anyhow::Result<(Vec<Evaluated>, u64)> {
    let mut survivors: Vec<Vec<usize>> = cands.to_vec();
    let mut reps = 2u32.min(final_reps);
    let mut runs = 0u64;
    while survivors.len() > 4 && reps < final_reps {
        let evals = evaluate(spec, &survivors, sets, Some(reps), jobs, on_run_done)?;
        runs += (survivors.len() * spec.scenarios.len()) as u64 * reps as u64;
        let mut ranked: Vec<&Evaluated> = evals.iter().collect();
        ranked.sort_by(|a, b| {
            let score =
                |e: &Evaluated| e.objective.map(|x| if spec.maximize { -x } else { x }).unwrap_or(f64::INFINITY);
            b.feasible.cmp(&a.feasible).then(score(a).total_cmp(&score(b)))
        });
        let keep = survivors.len().div_ceil(2);
        survivors = ranked.into_iter().take(keep).map(|e| e.choice.clone()).collect();
        survivors.sort();
        reps *= 2;
    }
    let evals = evaluate(spec, &survivors, sets, Some(final_reps), jobs, on_run_done)?;
    runs += (survivors.len() * spec.scenarios.len()) as u64 * final_reps as u64;
    Ok((evals, runs))
}
