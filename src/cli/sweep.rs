//! `retrysim sweep` and `retrysim merge`.

use super::{EXIT_OK, ExperimentArgs, Format, SimArgs};
use crate::analysis::sweep::{
    Knee, MAX_GRID_POINTS, Param, grid, grid_size, in_shard, parse_params, parse_shard, shard_size,
};
use crate::analysis::{RunSet, run_all_with};
use crate::config::{Scenario, load_experiment};
use crate::engine::random::hash_words;
use crate::error::InputError;
use crate::model::RunOptions;
use crate::output::manifest::{self, MANIFEST, Manifest};
use crate::output::summarize_runs;
use crate::output::sweep::{
    MetricDoc, PointDoc, SWEEP_SCHEMA, ShardInfo, SweepDoc, SweepExperiment, VariantPoint, merge,
};
use crate::output::write_atomic;
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

/// `retrysim merge`.
#[derive(Args, Debug, Clone)]
pub struct MergeArgs {
    /// Output folders of `retrysim sweep --shard K/N` (or `frontier --shard K/N`), one per shard.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where to write the merged sweep.json and sweep.csv.
    #[arg(long)]
    pub out: PathBuf,
    /// Say nothing on stderr but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Do not draw charts.
    #[arg(long)]
    pub no_plots: bool,
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
    let mut sets = args.exp.sets.clone();
    if let Some(seed) = args.sim.seed {
        sets.push(format!("experiment.seed={seed}"));
    }
    if let Some(r) = args.replications {
        if r == 0 {
            return Err(InputError::file("--replications", "must be at least 1").into());
        }
        sets.push(format!("experiment.replications={r}"));
    }
    let base = load_experiment(&args.exp.experiment, &sets)?;
    for want in &args.variants {
        if !base.variants.iter().any(|v| &v.variant == want) {
            let names: Vec<&str> = base.variants.iter().map(|v| v.variant.as_str()).collect();
            return Err(InputError::file(
                format!("--variant {want}"),
                format!("no such variant; the experiment has: {}", names.join(", ")),
            )
            .into());
        }
    }
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
    let (json, csv) = (doc.to_json()?, doc.to_csv()?);
    write_atomic(&out.join("sweep.json"), json.as_bytes(), &base.inputs)?;
    write_atomic(&out.join("sweep.csv"), csv.as_bytes(), &base.inputs)?;
    if doc.shard.is_some() {
        // What `merge` verifies: the shard's own files, as written, and this version.
        let record = Manifest::of(&[("sweep.json", json.as_bytes()), ("sweep.csv", csv.as_bytes())]);
        write_atomic(&out.join(MANIFEST), record.to_json().as_bytes(), &base.inputs)?;
    }
    if !args.sim.no_plots && doc.shard.is_none() {
        crate::charts::sweep_charts(&out, &out)?;
    }
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

fn print_doc(doc: &SweepDoc, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Json => print!("{}", doc.to_json()?),
        Format::Csv => print!("{}", doc.to_csv()?),
        Format::Table => print!("{}", doc.to_table(false)),
        Format::Markdown => print!("{}", doc.to_table(true)),
    }
    Ok(())
}

/// Runs the `merge` command.
pub fn run_merge(args: &MergeArgs) -> anyhow::Result<i32> {
    if args.dirs.first().is_some_and(|d| super::frontier::is_frontier(d)) {
        return super::frontier::run_merge(args);
    }
    let mut docs = Vec::new();
    let mut inputs: Vec<PathBuf> = Vec::new();
    for dir in &args.dirs {
        // A shard's folder, or its sweep.json.
        let folder = if dir.is_file() { dir.parent().map(PathBuf::from).unwrap_or_default() } else { dir.clone() };
        let path = folder.join("sweep.json");
        let shown = path.display().to_string();
        inputs.extend([path.clone(), folder.join("sweep.csv"), folder.join(MANIFEST)]);
        // The shard's files must be as it wrote them (checksums in shard.json).
        let bytes = manifest::verify(&folder, "sweep.json")?;
        let text = String::from_utf8(bytes).map_err(|_| InputError::file(&shown, "not UTF-8 text"))?;
        let doc: SweepDoc = serde_json::from_str(&text).map_err(|e| {
            InputError::file(&shown, format!("not a sweep.json: {}", crate::config::messages::plain(&e.to_string())))
        })?;
        if doc.schema != SWEEP_SCHEMA {
            return Err(InputError::file(&shown, format!("schema \"{}\" is not {SWEEP_SCHEMA}", doc.schema)).into());
        }
        docs.push((dir.display().to_string(), doc));
    }
    crate::output::check_outputs(&[args.out.join("sweep.json"), args.out.join("sweep.csv")], &inputs)?;
    let merged = merge(docs).map_err(|m| InputError::file("retrysim merge", m))?;
    write_atomic(&args.out.join("sweep.json"), merged.to_json()?.as_bytes(), &inputs)?;
    write_atomic(&args.out.join("sweep.csv"), merged.to_csv()?.as_bytes(), &inputs)?;
    if !args.no_plots {
        crate::charts::sweep_charts(&args.out, &args.out)?;
    }
    if !args.quiet {
        eprintln!("merged {} shards ({} points) into {}", args.dirs.len(), merged.points.len(), args.out.display());
    }
    Ok(EXIT_OK)
}

/// The work of every run of `scenarios`, for the progress bar's time left.
pub(crate) fn expected_work(scenarios: &[crate::config::Scenario]) -> u64 {
    scenarios.iter().map(|s| crate::model::progress_units(s, s.duration).saturating_mul(s.replications as u64)).sum()
}
