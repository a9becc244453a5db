//! `retrysim collapse-rate`: spontaneous collapses per hour at the
//! experiment's steady load (DESIGN §8.4).

use super::selection::{chosen_variants, overrides};
use super::{EXIT_OK, ExperimentArgs, Format, SimArgs};
use crate::analysis::collapse::splitting::{self, Plan};
use crate::analysis::collapse::{COLLAPSE_SPAN, direct};
use crate::config::units::parse_duration;
use crate::config::{Scenario, load_experiment};
use crate::engine::to_secs_f64;
use crate::error::InputError;
use crate::output::collapse_rate::{COLLAPSE_RATE_SCHEMA, CollapseDoc, CollapseExperiment, CollapseVariant, Interval};
use crate::output::write_atomic;
use clap::{Args, ValueEnum};

/// How the rate is estimated.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Method {
    /// Direct simulation for --hours; splitting when its interval is wider than ±25%.
    Auto,
    /// Direct simulation only (until the interval is within ±25%, or --max-hours).
    Direct,
    /// Multilevel splitting only.
    Splitting,
}

/// `retrysim collapse-rate`.
#[derive(Args, Debug, Clone)]
pub struct CollapseRateArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    #[command(flatten)]
    pub sim: SimArgs,
    /// Simulated hours of direct simulation at least (more until the interval is within ±25%).
    #[arg(long, value_name = "H", default_value_t = 10.0)]
    pub hours: f64,
    /// The most simulated hours direct simulation may take, and the most
    /// healthy hours splitting's first phase may watch for crossings of the
    /// first level.
    #[arg(long, value_name = "H", default_value_t = 100.0)]
    pub max_hours: f64,
    /// How to estimate the rate.
    #[arg(long, value_enum, default_value_t = Method::Auto)]
    pub method: Method,
    /// Splitting: branches per level.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub trials: usize,
    /// Splitting: queue lengths of the levels at the first client's target,
    /// ascending [default: its workers × 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75, 3, 3.5, 4, 5, 6, 8, 12, 16, 32].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub levels: Vec<usize>,
    /// Splitting: a queue of at most this is healthy.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub basin: usize,
    /// Splitting: how often the queue is looked at.
    #[arg(long, value_name = "D", default_value = "10ms")]
    pub check: String,
    /// Only this variant (repeatable).
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
}

/// The precision direct simulation aims for: ±25% of the rate.
const PRECISION: f64 = 0.25;

/// How long a branch may take before it counts as fallen back.
const BRANCH_LIMIT: u64 = 300_000_000_000;

/// Runs the `collapse-rate` command.
pub fn run(args: &CollapseRateArgs) -> anyhow::Result<i32> {
    super::run::unique_variants(&args.variants)?;
    let sets = overrides(&args.exp.sets, args.sim.seed, None)?;
    if !(args.hours.is_finite() && args.hours > 0.0) {
        return Err(InputError::file(format!("--hours {}", args.hours), "must be a positive number of hours").into());
    }
    if !(args.max_hours.is_finite() && args.max_hours >= args.hours) {
        return Err(InputError::file(format!("--max-hours {}", args.max_hours), "must be at least --hours").into());
    }
    if args.trials < 10 {
        return Err(InputError::file(format!("--trials {}", args.trials), "at least 10 branches per level").into());
    }
    let check =
        parse_duration(args.check.trim()).map_err(|m| InputError::file(format!("--check {}", args.check), m))?;
    if check == 0 {
        return Err(InputError::file(format!("--check {}", args.check), "must be longer than 0s").into());
    }
    let exp = load_experiment(&args.exp.experiment, &sets)?;
    let file = args.exp.experiment.display().to_string();
    let variants = chosen_variants(&exp.variants, &args.variants)?;
    let first = &variants[0];
    if first.duration <= first.warmup + COLLAPSE_SPAN {
        return Err(InputError::field(
            &file,
            "experiment.duration",
            "must be longer than the warm-up plus 30 s (a collapse lasts 30 s)",
        )
        .into());
    }
    let out = args.sim.out.clone().unwrap_or_else(|| super::run::default_out_of(&exp.path, "collapse-rate"));
    crate::output::check_outputs(&[out.join("collapse-rate.json")], &exp.inputs)?;
    if !args.sim.no_plots {
        crate::output::files::check_chart_folder(&out, &exp.inputs)?;
    }
    let jobs = args.sim.jobs.unwrap_or(0);
    let progress = status_line(args.exp.quiet);
    let mut doc_variants = Vec::new();
    for s in &variants {
        let observed = to_secs_f64(s.duration - s.warmup);
        let d = match args.method {
            Method::Splitting => None,
            Method::Auto => Some(direct(s, args.hours, args.hours, PRECISION, jobs, &progress).map_err(blame(&file))?),
            Method::Direct => {
                Some(direct(s, args.hours, args.max_hours, PRECISION, jobs, &progress).map_err(blame(&file))?)
            }
        };
        let precise = d.as_ref().is_some_and(|d| d.collapses > 0 && d.rate.relative_half_width() <= PRECISION);
        let sp = if args.method == Method::Splitting || (args.method == Method::Auto && !precise) {
            Some(split(s, args, check, &file, &progress)?)
        } else {
            None
        };
        let (rate, method) = match (&sp, &d) {
            (Some(sp), _) => (sp.rate.clone(), "splitting"),
            (None, Some(d)) => (d.rate.clone(), "direct"),
            (None, None) => unreachable!("a method always runs"),
        };
        // The share of runs of the experiment's length whose collapse begins in them.
        let share = |x: f64| 1.0 - (-x * observed / 3600.0).exp();
        let share = Interval { mean: share(rate.collapses_per_hour), ci95: [share(rate.ci95[0]), share(rate.ci95[1])] };
        let simulated_hours =
            d.as_ref().map_or(0.0, |d| d.rate.simulated_hours) + sp.as_ref().map_or(0.0, |s| s.rate.simulated_hours);
        let events = d.as_ref().map_or(0, |d| d.rate.events) + sp.as_ref().map_or(0, |s| s.rate.events);
        doc_variants.push(CollapseVariant {
            name: s.variant.clone(),
            collapses_per_hour: Interval { mean: rate.collapses_per_hour, ci95: rate.ci95 },
            method: method.into(),
            simulated_hours,
            events,
            share_of_runs: share,
            direct: d,
            splitting: sp,
        });
    }
    let doc = CollapseDoc {
        schema: COLLAPSE_RATE_SCHEMA.into(),
        experiment: CollapseExperiment {
            name: first.name.clone(),
            file,
            seed: first.seed,
            duration_s: to_secs_f64(first.duration),
            warmup_s: to_secs_f64(first.warmup),
            collapse: "goodput below half of the offered intents for 30 s in a row, from a healthy start".into(),
            method_asked: format!("{:?}", args.method).to_lowercase(),
            hours: args.hours,
        },
        variants: doc_variants,
    };
    progress.finish_and_clear();
    let json = doc.to_json()?;
    write_atomic(&out.join("collapse-rate.json"), json.as_bytes(), &exp.inputs)?;
    // Charts of an earlier run here that this one does not draw again go.
    let drawn = if args.sim.no_plots { Vec::new() } else { crate::charts::frontier::collapse_chart(&out, &out)? };
    crate::charts::record::prune(&out, crate::charts::record::COLLAPSE_RATE, &drawn, &exp.inputs)?;
    match args.sim.format {
        Format::Json => print!("{json}"),
        Format::Markdown => print!("{}", doc.to_table(true)),
        Format::Table | Format::Csv => print!("{}", doc.to_table(false)),
    }
    if !args.exp.quiet {
        eprintln!("wrote {}", out.join("collapse-rate.json").display());
    }
    Ok(EXIT_OK)
}

/// An error of the estimate as bad input of `file`; an interruption stays one.
fn blame(file: &str) -> impl Fn(anyhow::Error) -> anyhow::Error + '_ {
    move |e| {
        if e.downcast_ref::<crate::interrupt::Interrupted>().is_some() {
            e
        } else {
            InputError::file(file, e.to_string()).into()
        }
    }
}

/// A line on stderr saying how far the estimate has come (only on a
/// terminal, never with `--quiet`).
fn status_line(quiet: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// The default levels: the target's workers × 1, 1.25, 1.5, … 32 (closer
/// together where the queue is short, where each step is least likely).
pub fn default_levels(workers: usize) -> Vec<usize> {
    let mut levels: Vec<usize> =
        [1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0, 12.0, 16.0, 32.0]
            .iter()
            .map(|k| (k * workers.max(1) as f64).round() as usize)
            .collect();
    levels.dedup();
    levels
}

/// The splitting estimate of one variant.
fn split(
    s: &Scenario,
    args: &CollapseRateArgs,
    check: u64,
    file: &str,
    progress: &indicatif::ProgressBar,
) -> anyhow::Result<crate::analysis::collapse::splitting::Splitting> {
    let service = s.clients.first().map_or(0, |c| c.target);
    let workers = s.services[service].workers as usize * s.services[service].hosts.replicas as usize;
    let levels: Vec<usize> = if args.levels.is_empty() { default_levels(workers) } else { args.levels.clone() };
    if levels.windows(2).any(|w| w[0] >= w[1]) || levels[0] <= args.basin {
        return Err(InputError::file(
            format!("--levels {}", args.levels.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(",")),
            format!("levels must rise and start above --basin ({})", args.basin),
        )
        .into());
    }
    let mut long = s.clone();
    long.duration = s.duration + BRANCH_LIMIT + COLLAPSE_SPAN;
    let plan = Plan { service, basin: args.basin, levels, trials: args.trials, check, branch_limit: BRANCH_LIMIT };
    splitting::estimate(&long, s.duration, &plan, args.sim.jobs.unwrap_or(0), args.max_hours, progress).map_err(|e| {
        if e.downcast_ref::<crate::interrupt::Interrupted>().is_some() {
            e
        } else {
            InputError::file(file, format!("variant \"{}\": {e}", s.variant)).into()
        }
    })
}
