//! `retrysim sweep`.

use super::selection::{check_variants, overrides};
use super::sharded::{print_doc, write_doc};
use super::{EXIT_OK, ExperimentArgs, SimArgs};
use crate::analysis::sweep::{
    Knee, MAX_GRID_POINTS, Param, grid, grid_size, in_shard, parse_params, parse_shard, shard_size,
};
use crate::analysis::{RunSet, run_all_with};
use crate::config::{Scenario, load_experiment};
use crate::engine::random::hash_words;
use crate::error::InputError;
use crate::model::RunOptions;
use crate::output::manifest::MANIFEST;
use crate::output::shards::ShardInfo;
use crate::output::summarize_runs;
use crate::output::sweep::{MetricDoc, PointDoc, SWEEP_SCHEMA, SweepDoc, SweepExperiment, VariantPoint};
use clap::Args;
use std::path::PathBuf;

/// `retrysim sweep`.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    #[command(flatten)]
    pub sim: SimArgs,
    /// A swept field: KEY=a,b,c or KEY=LO..HI:N (repeatable: the product).
    #[arg(long = "param", value_name = "KEY=SPEC", required = true)]
    pub params: Vec<String>,
    /// The knee condition METRIC OP NUMBER, OP one of >=, <=, >, < (with
    /// exactly one --param): each variant's knee is the last value before
    /// it first fails.
    #[arg(long, value_name = "CONDITION", default_value = "success_rate>=0.99")]
    pub knee: String,
    /// Run only shard K of N of the grid (merge the shards with `retrysim merge`).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Replications per point and variant (overrides experiment.replications).
    #[arg(long, value_name = "N")]
    pub replications: Option<u32>,
    /// Sweep only this variant (repeatable).
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Run even when the estimate exceeds the available memory or an hour of CPU time.
    #[arg(long)]
    pub force: bool,
}

/// Hash of every input file (the experiment and the policies it loads) and
/// the overrides, so that shards of different inputs do not merge.
pub(crate) fn fingerprint(inputs: &[PathBuf], sets: &[String]) -> String {
    let mut words: Vec<u64> = Vec::new();
    for path in inputs {
        words.extend(std::fs::read(path).unwrap_or_default().into_iter().map(u64::from));
        words.push(0xFE);
    }
    for s in sets {
        words.push(0xFF);
        words.extend(s.bytes().map(u64::from));
    }
    format!("{:016x}", hash_words(0, &words))
}

/// Runs the `sweep` command.
pub fn run(args: &SweepArgs) -> anyhow::Result<i32> {
    let params: Vec<Param> = parse_params(&args.params)?;
    super::run::unique_variants(&args.variants)?;
    let knee = Knee::parse(&args.knee)?;
    let shard = args.shard.as_deref().map(parse_shard).transpose()?;
    let sets = overrides(&args.exp.sets, args.sim.seed, args.replications)?;
    let base = load_experiment(&args.exp.experiment, &sets)?;
    check_variants(&base.variants, &args.variants)?;
    let swept_names: Vec<String> = base
        .variants
        .iter()
        .map(|v| v.variant.clone())
        .filter(|n| args.variants.is_empty() || args.variants.contains(n))
        .collect();
    let size = grid_size(&params);
    if size > MAX_GRID_POINTS {
        let counts: Vec<String> = params.iter().map(|p| p.values.len().to_string()).collect();
        return Err(InputError::file(
            "--param",
            format!(
                "the grid has {} = {size} points; at most {MAX_GRID_POINTS}: use fewer values, or split the grid into separate sweeps",
                counts.join(" x ")
            ),
        )
        .into());
    }
    // A sweep keeps one summary per point: runs that keep only their metrics
    // keep memory flat in points.
    let options = RunOptions::metrics_only();
    // Before building and loading the points: the base experiment's runs times the points.
    let mine_count = shard_size(size, shard);
    crate::analysis::estimate::Workload {
        command: "sweep",
        runs: base
            .variants
            .iter()
            .filter(|v| args.variants.is_empty() || args.variants.contains(&v.variant))
            .map(|v| (v, v.replications as u64 * mine_count))
            .collect(),
        options,
        jobs: args.sim.jobs.unwrap_or(0),
        keeps_results: true,
        extra_bytes: 0.0,
        memory_knobs: "fewer --jobs, replications, variants or sweep points",
        time_knobs: "fewer replications, variants or sweep points",
    }
    .check(args.force)?;
    let out = args.sim.out.clone().unwrap_or_else(|| super::run::default_out(&base.path).join("sweep"));
    crate::output::check_outputs(&[out.join("sweep.json"), out.join("sweep.csv"), out.join(MANIFEST)], &base.inputs)?;
    if !args.sim.no_plots && shard.is_none() {
        crate::output::files::check_chart_folder(&out, &base.inputs)?;
    }
    let points = grid(&params);
    // Load every point of this shard (each may fail on a bad value).
    let mut scenarios: Vec<Scenario> = Vec::new();
    let mut owners: Vec<(usize, usize)> = Vec::new();
    let mut mine: Vec<usize> = Vec::new();
    for (i, point) in points.iter().enumerate() {
        if !in_shard(i, shard) {
            continue;
        }
        let mut point_sets = sets.clone();
        point_sets.extend(point.iter().map(|(k, v)| format!("{k}={v}")));
        let exp = load_experiment(&args.exp.experiment, &point_sets).map_err(|e| {
            let at: Vec<String> = point.iter().map(|(k, v)| format!("{k}={v}")).collect();
            e.context(&format!("at sweep point {}: ", at.join(", ")))
        })?;
        let variants: Vec<Scenario> = if args.variants.is_empty() {
            exp.variants
        } else {
            exp.variants.into_iter().filter(|v| args.variants.contains(&v.variant)).collect()
        };
        if variants.is_empty() {
            return Err(InputError::file(format!("--variant {}", args.variants.join(", ")), "no such variant").into());
        }
        for (vi, v) in variants.into_iter().enumerate() {
            owners.push((i, vi));
            scenarios.push(v);
        }
        mine.push(i);
    }
    let runs: u64 = scenarios.iter().map(|s| s.replications as u64).sum();
    let bar = super::run::progress_bar(runs, args.exp.quiet);
    crate::progress::expect(expected_work(&scenarios));
    let started = std::time::Instant::now();
    let set = run_all_with(&scenarios, None, args.sim.jobs.unwrap_or(0), options, &|| bar.inc(1))?;
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    let first = &base.variants[0];
    let mut doc = SweepDoc {
        schema: SWEEP_SCHEMA.into(),
        experiment: SweepExperiment {
            name: first.name.clone(),
            file: args.exp.experiment.display().to_string(),
            fingerprint: fingerprint(&base.inputs, &sets),
            seed: first.seed,
            replications: first.replications,
            grid_points: points.len(),
            variants: swept_names.clone(),
        },
        params,
        knee,
        shard: shard.map(|(k, n)| ShardInfo { k, n }),
        points: Vec::new(),
        knees: Vec::new(),
    };
    let events = set.events();
    let mut by_point: Vec<(usize, Vec<crate::analysis::VariantRuns>)> = mine.iter().map(|&i| (i, Vec::new())).collect();
    for ((point, _), runs) in owners.into_iter().zip(set.variants) {
        by_point.iter_mut().find(|(i, _)| *i == point).expect("own point").1.push(runs);
    }
    for (i, variants) in by_point {
        let summaries = summarize_runs(&RunSet { variants });
        doc.points.push(PointDoc {
            index: i,
            values: points[i].clone(),
            variants: summaries
                .iter()
                .map(|v| VariantPoint {
                    name: v.name.clone(),
                    amplification_service: Some(v.amplification_service.clone()).filter(|s| !s.is_empty()),
                    metrics: v
                        .metrics
                        .iter()
                        .map(|(k, s)| {
                            let doc = MetricDoc {
                                mean: s.mean,
                                ci95: s.ci95.map(|(a, b)| [a, b]),
                                reason: v.reason(k).map(str::to_string),
                            };
                            (k.clone(), doc)
                        })
                        .collect(),
                })
                .collect(),
        });
    }
    doc.compute_knees();
    write_doc(&doc, &out, &base.inputs, args.sim.no_plots, crate::charts::sweep_charts)?;
    print_doc(&doc, args.sim.format)?;
    if !args.exp.quiet {
        eprintln!(
            "{} points x variants, {runs} runs, {events} events in {elapsed:.2} s ({:.1} M events/s); wrote {}",
            doc.points.iter().map(|p| p.variants.len()).sum::<usize>(),
            events as f64 / elapsed.max(1e-9) / 1e6,
            out.display()
        );
    }
    Ok(EXIT_OK)
}

/// The work of every run of `scenarios`, for the progress bar's time left.
pub(crate) fn expected_work(scenarios: &[crate::config::Scenario]) -> u64 {
    scenarios.iter().map(|s| crate::model::progress_units(s, s.duration).saturating_mul(s.replications as u64)).sum()
}
