//! Runs every variant × replication in parallel (each run single-threaded)
//! and collects the results in a fixed order, so outputs do not depend on
//! the number of jobs.

use crate::config::Scenario;
use crate::metrics::RunResult;
use crate::model::{RunOptions, simulate_with};
use rayon::prelude::*;

/// The runs of one variant.
#[derive(Debug, Clone)]
pub struct VariantRuns {
    pub scenario: Scenario,
    /// One result per replication, replication 0 first.
    pub runs: Vec<RunResult>,
}

/// All runs of an experiment, variants in file order.
#[derive(Debug, Clone)]
pub struct RunSet {
    pub variants: Vec<VariantRuns>,
}

impl RunSet {
    /// Appends the runs of `more` (the same variants, later replications).
    pub fn extend(&mut self, more: RunSet) {
        for (v, m) in self.variants.iter_mut().zip(more.variants) {
            v.runs.extend(m.runs);
        }
    }

    /// The service where variant `baseline`'s amplification is largest:
    /// the largest mean `requests_per_intent` over its replications (the
    /// first in file order on a tie); `None` without runs. Every variant's
    /// headline `amplification` is taken there (DESIGN §8.3).
    pub fn amplification_service(&self, baseline: usize) -> Option<String> {
        let runs = &self.variants.get(baseline)?.runs;
        let first = runs.first()?;
        let mut best: Option<(String, f64)> = None;
        for (i, (name, _)) in first.services.iter().enumerate() {
            if crate::metrics::run::is_host_entry(name) {
                continue;
            }
            let values: Vec<Option<f64>> = runs
                .iter()
                .map(|r| r.services.get(i).and_then(|s| s.1.get("requests_per_intent").copied().flatten()))
                .collect();
            let mean = super::summarize(values).mean.unwrap_or(f64::NEG_INFINITY);
            if best.as_ref().is_none_or(|b| mean > b.1) {
                best = Some((name.clone(), mean));
            }
        }
        best.map(|b| b.0)
    }

    /// Events processed over all runs.
    pub fn events(&self) -> u64 {
        self.variants.iter().flat_map(|v| &v.runs).map(|r| r.events).sum()
    }
}

/// Runs each scenario's replications (`replications` overrides the
/// scenario's own count) on `jobs` threads (0 = one per core).
pub fn run_all(scenarios: &[Scenario], replications: Option<u32>, jobs: usize) -> anyhow::Result<RunSet> {
    run_all_with(scenarios, replications, jobs, RunOptions::default(), &|| {})
}

/// [`run_all`] with run options (tracing), calling `on_run_done` after
/// each run (for progress display).
pub fn run_all_with(
    scenarios: &[Scenario],
    replications: Option<u32>,
    jobs: usize,
    options: RunOptions,
    on_run_done: &(dyn Fn() + Sync),
) -> anyhow::Result<RunSet> {
    let ranges: Vec<std::ops::Range<u32>> =
        scenarios.iter().map(|s| 0..replications.unwrap_or(s.replications)).collect();
    run_ranges(scenarios, &ranges, jobs, options, on_run_done)
}

/// Runs replications `ranges[v]` of each scenario `v` in parallel.
pub fn run_ranges(
    scenarios: &[Scenario],
    ranges: &[std::ops::Range<u32>],
    jobs: usize,
    options: RunOptions,
    on_run_done: &(dyn Fn() + Sync),
) -> anyhow::Result<RunSet> {
    let mut tasks: Vec<(usize, u32)> =
        ranges.iter().enumerate().flat_map(|(v, range)| range.clone().map(move |r| (v, r))).collect();
    // Replication-major order: every scenario's first replications run
    // before any scenario's last, so the runs in progress at any time are a
    // fair sample of the whole (the progress bar's time left rests on it; a
    // sweep's heaviest points are often its last). Each scenario's results
    // still come back in replication order, so nothing else changes.
    tasks.sort_by_key(|&(v, r)| (r, v));
    let run = |&(v, r): &(usize, u32)| {
        let result = simulate_with(&scenarios[v], r, options);
        on_run_done();
        result
    };
    // One job or one run: no thread pool to start (the results are the same).
    let results: Vec<RunResult> = if jobs == 1 || tasks.len() <= 1 {
        tasks.iter().map(run).collect()
    } else {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
        // One run per piece of work, so that an idle thread can take any
        // run not started (rayon otherwise hands out blocks of runs).
        pool.install(|| tasks.par_iter().with_max_len(1).map(run).collect())
    };
    // Runs cut short by Ctrl-C are not results.
    crate::interrupt::check()?;
    let mut variants: Vec<VariantRuns> =
        scenarios.iter().map(|s| VariantRuns { scenario: s.clone(), runs: Vec::new() }).collect();
    for ((v, _), result) in tasks.into_iter().zip(results) {
        variants[v].runs.push(result);
    }
    Ok(RunSet { variants })
}
