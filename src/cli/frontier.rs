//! `retrysim frontier`: the smallest trigger each variant cannot survive,
//! per load and trigger length (DESIGN §8.4), and the merge of its shards.

use super::selection::{chosen_variants, overrides};
use super::sharded::{print_doc, write_doc};
use super::{EXIT_OK, ExperimentArgs, SimArgs};
use crate::analysis::frontier::{Judging, Search, Threshold, Trigger, TriggerKind, boundary, search};
use crate::analysis::sweep::{in_shard, parse_param, parse_shard, shard_size};
use crate::config::units::parse_duration;
use crate::config::{ClientMode, Scenario, load_experiment};
use crate::engine::{Nanos, from_secs_f64, to_secs_f64};
use crate::error::InputError;
use crate::output::frontier::{FRONTIER_SCHEMA, FrontierDoc, FrontierExperiment, FrontierRow, Words, sentence};
use crate::output::manifest::MANIFEST;
use crate::output::shards::ShardInfo;
use clap::Args;
use rayon::prelude::*;
use std::path::PathBuf;

/// `retrysim frontier`.
#[derive(Args, Debug, Clone)]
pub struct FrontierArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    #[command(flatten)]
    pub sim: SimArgs,
    /// The trigger family to size.
    #[arg(long, value_enum)]
    pub trigger: TriggerKind,
    /// The sizes to choose from: LO..HI:N, a list or one value [default: spike 1..5:33,
    /// brownout 0..1:41 (share removed), slowdown 1..10:37, outage 0s..60s:61,
    /// burst 0..10000:41 (intents)].
    #[arg(long, value_name = "SPEC")]
    pub size: Option<String>,
    /// Trigger lengths (a value, a list or LO..HI:N; not for an outage; a burst's
    /// intents arrive spread over it) [default: 10s; 0s for a burst].
    #[arg(long, value_name = "SPEC")]
    pub length: Option<String>,
    /// Values of experiment.load_scale [default: the experiment's].
    #[arg(long, value_name = "SPEC")]
    pub load: Option<String>,
    /// Time after the trigger's end within which the system must recover.
    #[arg(long, value_name = "D", default_value = "300s")]
    pub horizon: String,
    /// When the trigger starts [default: warmup + 30 s].
    #[arg(long, value_name = "T")]
    pub at: Option<String>,
    /// The service a brownout, slowdown or outage hits, or a burst's herd calls [default: the
    /// first client's target].
    #[arg(long, value_name = "SERVICE")]
    pub target: Option<String>,
    /// Judge a run collapsed once its goodput ratio has stayed below half its
    /// baseline for this long after the trigger, its backlog not draining
    /// (0s: run the whole horizon).
    #[arg(long, value_name = "D", default_value = "15s")]
    pub stop_collapsed: String,
    /// Replications per point and variant (overrides experiment.replications).
    #[arg(long, value_name = "N")]
    pub replications: Option<u32>,
    /// Only this variant (repeatable).
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Run only shard K of N of the rows (merge the shards with `retrysim merge`).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// The causal anatomy of each row's boundary collapse: continue it from
    /// the trigger's end with one mechanism off at a time (retries, wasted
    /// work, no budget, no breaker) for this long [e.g. 60s].
    #[arg(long, value_name = "D")]
    pub anatomy: Option<String>,
}

/// A duration flag.
fn duration_flag(flag: &str, text: &str) -> Result<Nanos, InputError> {
    parse_duration(text.trim()).map_err(|m| InputError::file(format!("{flag} {text}"), m))
}

/// The values of a `--size`/`--length`/`--load` SPEC, parsed by `parse`, sorted.
fn spec_values(flag: &str, spec: &str, parse: &dyn Fn(&str) -> Result<f64, String>) -> Result<Vec<f64>, InputError> {
    let param = parse_param(&format!("x={spec}")).map_err(|e| InputError::file(format!("{flag} {spec}"), e.message))?;
    let mut values = Vec::new();
    for v in &param.values {
        values.push(parse(v).map_err(|m| InputError::file(format!("{flag} {spec}"), format!("\"{v}\": {m}")))?);
    }
    values.sort_by(f64::total_cmp);
    values.dedup();
    Ok(values)
}

fn number(text: &str) -> Result<f64, String> {
    text.trim().parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| "expected a number".to_string())
}

/// Offered load over the target's capacity, when every client is open loop.
fn utilization(s: &Scenario, target: usize) -> Option<f64> {
    let svc = &s.services[target];
    let capacity = f64::from(svc.workers) * f64::from(svc.hosts.replicas) / svc.service_time.mean_secs();
    let mut rate = 0.0;
    for c in &s.clients {
        match &c.mode {
            ClientMode::Open(schedule) if c.target == target => rate += schedule.rate_at(s.warmup).0 * s.load_scale,
            ClientMode::Open(_) => {}
            _ => return None,
        }
    }
    (capacity.is_finite() && capacity > 0.0 && rate > 0.0).then_some(rate / capacity)
}

/// Hash of the inputs and every flag that changes the result.
fn fingerprint(inputs: &[PathBuf], sets: &[String], args: &FrontierArgs) -> String {
    let mut all = sets.to_vec();
    all.extend([
        format!("trigger={}", args.trigger.label()),
        format!("size={:?}", args.size),
        format!("length={}", args.length.as_deref().unwrap_or(args.trigger.default_length())),
        format!("load={:?}", args.load),
        format!("horizon={}", args.horizon),
        format!("at={:?}", args.at),
        format!("target={:?}", args.target),
        format!("stop={}", args.stop_collapsed),
        format!("variants={:?}", args.variants),
        format!("anatomy={:?}", args.anatomy),
    ]);
    super::sweep::fingerprint(inputs, &all)
}

/// Runs the `frontier` command.
pub fn run(args: &FrontierArgs) -> anyhow::Result<i32> {
    super::run::unique_variants(&args.variants)?;
    let kind = args.trigger;
    let shard = args.shard.as_deref().map(parse_shard).transpose()?;
    let sets = overrides(&args.exp.sets, args.sim.seed, args.replications)?;
    let exp = load_experiment(&args.exp.experiment, &sets)?;
    let file = args.exp.experiment.display().to_string();
    let variants = chosen_variants(&exp.variants, &args.variants)?;
    let first = &variants[0];
    for v in &variants {
        if !crate::metrics::recovery::disturbances(v).is_empty() {
            return Err(InputError::file(
                &file,
                format!(
                    "variant \"{}\" has a fault or a change of arrival rate of its own: `frontier` adds the trigger itself; remove [[faults]], rate schedules and burst clients",
                    v.variant
                ),
            )
            .into());
        }
    }
    let size_spec = args.size.clone().unwrap_or_else(|| kind.default_sizes().to_string());
    let parse_size = |t: &str| -> Result<f64, String> {
        let x = match kind {
            TriggerKind::Outage => parse_duration(t.trim()).map(to_secs_f64)?,
            _ => number(t)?,
        };
        if kind.allows(x) { Ok(x) } else { Err(kind.allowed().to_string()) }
    };
    let sizes = spec_values("--size", &size_spec, &parse_size)?;
    let lengths: Vec<f64> = if kind.has_length() {
        let spec = args.length.as_deref().unwrap_or(kind.default_length());
        let l = spec_values("--length", spec, &|t| parse_duration(t.trim()).map(to_secs_f64))?;
        // A burst may arrive at once; any other trigger must last.
        if l.iter().any(|&x| x < 0.0 || (x == 0.0 && kind != TriggerKind::Burst)) {
            return Err(InputError::file(format!("--length {spec}"), "a trigger lasts longer than 0s").into());
        }
        l
    } else {
        Vec::new()
    };
    let loads = match &args.load {
        Some(spec) => spec_values("--load", spec, &|t| {
            number(t).and_then(|x| if x > 0.0 { Ok(x) } else { Err("a load_scale must be positive".into()) })
        })?,
        None => vec![first.load_scale],
    };
    let horizon = duration_flag("--horizon", &args.horizon)?;
    if horizon == 0 {
        return Err(InputError::file(format!("--horizon {}", args.horizon), "must be longer than 0s").into());
    }
    let stop_collapsed = duration_flag("--stop-collapsed", &args.stop_collapsed)?;
    let anatomy_window = args.anatomy.as_deref().map(|t| duration_flag("--anatomy", t)).transpose()?;
    if anatomy_window == Some(0) {
        return Err(InputError::file("--anatomy 0s", "the window must be longer than 0s").into());
    }
    let at = match &args.at {
        Some(t) => duration_flag("--at", t)?,
        None => first.warmup + 30_000_000_000,
    };
    if at <= first.warmup.div_ceil(first.bin) * first.bin {
        return Err(InputError::file(
            format!("--at {}", args.at.as_deref().unwrap_or("")),
            format!(
                "the trigger must start after the warm-up ({} s) and at least one whole bin of baseline",
                to_secs_f64(first.warmup)
            ),
        )
        .into());
    }
    let target = match &args.target {
        None => first.clients.first().map(|c| c.target).unwrap_or(0),
        Some(name) => first.services.iter().position(|s| &s.name == name).ok_or_else(|| {
            let names: Vec<&str> = first.services.iter().map(|s| s.name.as_str()).collect();
            InputError::file(
                format!("--target {name}"),
                format!("no such service; the experiment has: {}", names.join(", ")),
            )
        })?,
    };
    let judging = Judging { horizon, stop_collapsed };
    // Rows: variant × load × length (one length row for an outage).
    let length_axis: Vec<Option<f64>> =
        if lengths.is_empty() { vec![None] } else { lengths.iter().map(|&l| Some(l)).collect() };
    let mut rows: Vec<(usize, Scenario, f64, Option<f64>)> = Vec::new();
    let mut index = 0usize;
    for v in &variants {
        for &load in &loads {
            for &length in &length_axis {
                if in_shard(index, shard) {
                    let mut s = v.clone();
                    s.load_scale = load;
                    rows.push((index, s, load, length));
                }
                index += 1;
            }
        }
    }
    let total_rows = index;
    debug_assert_eq!(rows.len() as u64, shard_size(total_rows as u64, shard));
    let out = args.sim.out.clone().unwrap_or_else(|| super::run::default_out_of(&exp.path, "frontier"));
    crate::output::check_outputs(
        &[out.join("frontier.json"), out.join("frontier.csv"), out.join(MANIFEST)],
        &exp.inputs,
    )?;
    if !args.sim.no_plots && shard.is_none() {
        crate::output::files::check_chart_folder(&out, &exp.inputs)?;
    }
    let reps = first.replications;
    let tasks: Vec<(usize, u32)> = (0..rows.len()).flat_map(|i| (0..reps).map(move |r| (i, r))).collect();
    let bar = super::run::progress_bar(tasks.len() as u64, args.exp.quiet);
    let started = std::time::Instant::now();
    let one = |&(i, r): &(usize, u32)| {
        let (_, s, _, length) = &rows[i];
        let trigger = Trigger {
            kind,
            target,
            at,
            length: length.map_or(0, from_secs_f64),
            size: kind.identity(),
            ceiling: *sizes.last().expect("at least one size"),
        };
        let found = search(s, trigger, &sizes, r, judging);
        bar.inc(1);
        found
    };
    let found: Vec<Search> = if args.sim.jobs == Some(1) {
        tasks.iter().map(one).collect()
    } else {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(args.sim.jobs.unwrap_or(0)).build()?;
        // One search per piece of work: rayon otherwise runs neighbouring
        // searches as one block no other thread can take, and the last block
        // of long searches (collapsing variants) ran on one core alone.
        pool.install(|| tasks.par_iter().with_max_len(1).map(one).collect())
    };
    crate::interrupt::check()?;
    bar.finish_and_clear();
    let target_name = first.services[target].name.clone();
    let words = Words { kind, target: &target_name, largest: *sizes.last().expect("at least one size") };
    let mut doc_rows = Vec::new();
    for (i, (index, s, load, length)) in rows.iter().enumerate() {
        let mine = &found[i * reps as usize..(i + 1) * reps as usize];
        let thresholds: Vec<Threshold> = mine.iter().map(|f| f.threshold).collect();
        let b = boundary(&thresholds, &sizes, kind.identity());
        let utilization = utilization(s, target);
        // The anatomy of the collapse at the boundary, in the median replication.
        let anatomy = match (anatomy_window, b.median_threshold) {
            (Some(window), Some(size)) if size > 0.0 => {
                let rep = thresholds.iter().position(|t| t.value() == size).unwrap_or(0) as u32;
                let trigger = Trigger {
                    kind,
                    target,
                    at,
                    length: length.map_or(0, from_secs_f64),
                    size,
                    ceiling: *sizes.last().expect("at least one size"),
                };
                let triggered = trigger.apply(s, horizon);
                Some(crate::analysis::anatomy::anatomy(&triggered, rep, trigger.window().1, window))
            }
            _ => None,
        };
        doc_rows.push(FrontierRow {
            index: *index,
            variant: s.variant.clone(),
            load_scale: *load,
            length_s: *length,
            utilization,
            boundary: b.boundary,
            boundary_lo: b.lo,
            boundary_hi: b.hi,
            median_threshold: b.median_threshold,
            grid_step: b.grid_step,
            thresholds: thresholds.iter().map(|t| Some(t.value()).filter(|x| x.is_finite())).collect(),
            runs: mine.iter().map(|f| u64::from(f.runs)).sum(),
            events: mine.iter().map(|f| f.events).sum(),
            sentence: sentence(&words, *load, utilization, *length, &b),
            anatomy,
            curve: crate::output::frontier::curve(&sizes, &thresholds.iter().map(|t| t.value()).collect::<Vec<_>>()),
        });
    }
    let doc = FrontierDoc {
        schema: FRONTIER_SCHEMA.into(),
        experiment: FrontierExperiment {
            name: first.name.clone(),
            file: file.clone(),
            fingerprint: fingerprint(&exp.inputs, &sets, args),
            seed: first.seed,
            replications: reps,
            trigger: kind,
            target: target_name.clone(),
            sizes,
            loads,
            lengths_s: lengths,
            at_s: to_secs_f64(at),
            horizon_s: to_secs_f64(horizon),
            stop_collapsed_s: to_secs_f64(stop_collapsed),
            variants: variants.iter().map(|v| v.variant.clone()).collect(),
            rows: total_rows,
        },
        shard: shard.map(|(k, n)| ShardInfo { k, n }),
        rows: doc_rows,
    };
    write_doc(&doc, &out, &exp.inputs, args.sim.no_plots, crate::charts::frontier::frontier_chart)?;
    print_doc(&doc, args.sim.format)?;
    if !args.exp.quiet {
        let runs: u64 = doc.rows.iter().map(|r| r.runs).sum();
        let events: u64 = doc.rows.iter().map(|r| r.events).sum();
        eprintln!(
            "{} rows, {runs} runs, {events} events in {:.2} s; wrote {}",
            doc.rows.len(),
            started.elapsed().as_secs_f64(),
            out.display()
        );
    }
    Ok(EXIT_OK)
}
