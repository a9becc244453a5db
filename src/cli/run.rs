//! `retrysim run`: every variant × replication, the comparison table and
//! the output files.

use super::{EXIT_OK, Format, RunArgs};
use crate::analysis::run_all_with;
use crate::config::load_experiment;
use crate::error::InputError;
use crate::model::RunOptions;
use crate::output::{self, summary_json, write_atomic};
use std::path::PathBuf;
use std::time::Instant;

/// The files `run` writes into its output folder (besides the charts).
const OUTPUTS: [&str; 5] = ["summary.json", "experiment.toml", "summary.csv", "timeseries.csv", "faults.csv"];

/// The default output folder: `out/<experiment-stem>/`.
pub fn default_out(experiment: &std::path::Path) -> PathBuf {
    let stem = experiment.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "experiment".into());
    PathBuf::from("out").join(stem)
}

/// The default folder of a command that writes beside a run's outputs:
/// `out/<experiment-stem>/<command>/`, or `out/<command>/` when the
/// experiment is named after the command (`frontier.toml`), so that no
/// folder is named twice.
pub fn default_out_of(experiment: &std::path::Path, command: &str) -> PathBuf {
    let base = default_out(experiment);
    if base.file_name().is_some_and(|n| n == command) { base } else { base.join(command) }
}

/// A progress bar on stderr, drawn only when stderr is a terminal and not quiet.
pub fn progress_bar(total: u64, quiet: bool) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    crate::progress::reset();
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed} elapsed, ~{left} left")
    {
        // Time left from simulated time covered per wall second across the
        // runs in progress (crate::progress), not from runs finished.
        bar.set_style(style.with_key("left", |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let text = match crate::progress::time_left(state.len().unwrap_or(0), state.elapsed()) {
                Some(d) => format!("{:#}", indicatif::HumanDuration(d)),
                None => "?".to_string(),
            };
            let _ = w.write_str(&text);
        }));
    }
    // Redraw between runs so the estimate follows the runs in progress.
    bar.enable_steady_tick(std::time::Duration::from_millis(500));
    bar
}

/// The line saying whether `--precision` was reached.
fn precision_line(p: Option<&(Precision, crate::analysis::precision::PrecisionOutcome)>) -> String {
    use crate::analysis::precision::{On, PrecisionOutcome};
    let Some(((target, on, _), outcome)) = p else { return String::new() };
    let whose = match on {
        On::Variants => "every watched metric's 95% CI half-width",
        On::Differences => "the 95% CI half-width of every watched paired difference from the baseline",
    };
    match outcome {
        PrecisionOutcome::Reached { replications } => {
            format!("precision reached: {whose} is within {} after {replications} replications\n", target.label())
        }
        PrecisionOutcome::Capped { replications, worst } => format!(
            "precision NOT reached after {replications} replications (--max-replications): {} of \"{}\" is still {:.1} times the half-width wanted ({})\n",
            worst.1,
            worst.0,
            worst.2,
            target.label()
        ),
    }
}

/// What `--precision` asks: the target, whose intervals, the baseline.
type Precision = (crate::analysis::precision::Target, crate::analysis::precision::On, usize);

/// Refuses a `--variant` given twice.
pub fn unique_variants(variants: &[String]) -> Result<(), InputError> {
    for (i, v) in variants.iter().enumerate() {
        if variants[..i].contains(v) {
            return Err(InputError::file(format!("--variant {v}"), "given twice: name each variant once"));
        }
    }
    Ok(())
}

/// Runs the `run` command.
pub fn run(args: &RunArgs) -> anyhow::Result<i32> {
    let sets = super::selection::overrides(&args.exp.sets, args.sim.seed, args.replications)?;
    unique_variants(&args.variants)?;
    if args.trace.is_none()
        && let Some(f) = args.trace_sample
    {
        return Err(InputError::file(
            format!("--trace-sample {f}"),
            "samples the trace, but there is no --trace FILE to write it to",
        )
        .into());
    }
    let trace_sample = args.trace_sample.unwrap_or(1.0);
    let mut exp = load_experiment(&args.exp.experiment, &sets)?;
    if !args.variants.is_empty() {
        super::selection::check_variants(&exp.variants, &args.variants)?;
        exp.variants.retain(|v| args.variants.contains(&v.variant));
    }
    // Findings are not progress: -q leaves them in.
    // On a terminal each finding is wrapped to the table's width.
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr()) && !args.wide;
    for line in crate::analysis::lint::lint_block(&exp.variants) {
        if terminal {
            eprint!("{}", output::layout::wrap_lines(&line, output::layout::WIDTH));
        } else {
            eprintln!("{line}");
        }
    }
    let baseline = match &args.baseline {
        None => 0,
        Some(name) => exp.variants.iter().position(|v| &v.variant == name).ok_or_else(|| {
            let names: Vec<&str> = exp.variants.iter().map(|v| v.variant.as_str()).collect();
            InputError::file(
                format!("--baseline {name}"),
                format!("no such variant; the run has: {}", names.join(", ")),
            )
        })?,
    };
    let jobs = args.sim.jobs.unwrap_or(0);
    let started = Instant::now();
    if !(trace_sample > 0.0 && trace_sample <= 1.0) {
        return Err(
            InputError::file("--trace-sample", format!("must be a fraction in (0, 1], got {trace_sample}")).into()
        );
    }
    // --compare-traces reads the traces first (bad input before any run) and needs the attempt records.
    let compare = match args.compare_traces.is_empty() {
        true => None,
        false => Some(super::traces::model_of(&args.compare_traces, &Default::default())?.0),
    };
    let trace_fraction = match (&args.trace, &compare) {
        (Some(_), _) => trace_sample,
        (None, Some(_)) => 1.0,
        (None, None) => 0.0,
    };
    let options = RunOptions { trace_fraction, lean: false };
    // --precision may add replications up to --max-replications per variant.
    let most = |v: &crate::config::Scenario| match args.precision {
        Some(_) => v.replications.max(args.max_replications) as u64,
        None => v.replications as u64,
    };
    let runs: u64 = exp.variants.iter().map(most).sum();
    crate::analysis::estimate::Workload {
        command: "run",
        runs: exp.variants.iter().map(|v| (v, most(v))).collect(),
        options,
        jobs,
        keeps_results: true,
        extra_bytes: 0.0,
        memory_knobs: if options.trace_fraction > 0.0 {
            "fewer --jobs, replications or variants (--variant), a smaller --trace-sample"
        } else {
            "fewer --jobs, replications or variants (--variant)"
        },
        time_knobs: "fewer replications or variants (--variant)",
    }
    .check(args.force)?;
    let out = args.sim.out.clone().unwrap_or_else(|| default_out(&exp.path));
    // Every output against every input, before anything is simulated or written.
    let mut outputs: Vec<PathBuf> = OUTPUTS.iter().map(|name| out.join(name)).collect();
    outputs.extend(args.trace.clone());
    if compare.is_some() {
        outputs.push(out.join("compare-traces.json"));
    }
    output::check_outputs(&outputs, &exp.inputs)?;
    if !args.sim.no_plots {
        output::files::check_chart_folder(&out, &exp.inputs)?;
    }
    let bar = progress_bar(runs, args.exp.quiet);
    if args.precision.is_none() {
        crate::progress::expect(super::sweep::expected_work(&exp.variants));
    }
    let (set, precision) = match &args.precision {
        None => (run_all_with(&exp.variants, None, jobs, options, &|| bar.inc(1))?, None),
        Some(text) => {
            use crate::analysis::precision::{On, Target};
            let on = match args.precision_on {
                super::PrecisionOn::Variants => On::Variants,
                super::PrecisionOn::Differences => On::Differences,
            };
            let p: Precision = (Target::parse(text)?, on, baseline);
            if args.max_replications < 2 {
                return Err(InputError::file("--max-replications", "must be at least 2").into());
            }
            bar.set_length(args.max_replications as u64 * exp.variants.len() as u64);
            let (set, outcome) = crate::analysis::precision::run_until_precise(
                &exp.variants,
                p,
                args.max_replications,
                jobs,
                options,
                &|| bar.inc(1),
            )?;
            (set, Some((p, outcome)))
        }
    };
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();
    let summaries = output::summary::summarize_against(&set, baseline);
    // A finding of the run, printed with -q too.
    for (variant, secs) in crate::analysis::warmup::transients(&set) {
        let warmup = set.variants.iter().find(|v| v.scenario.variant == variant).map_or(0, |v| v.scenario.warmup);
        eprintln!(
            "warning [short-warmup] variant \"{variant}\": experiment.warmup: the start-up transient lasts about {} (MSER-5 on the requests waiting before the first disturbance), longer than the warm-up of {}: the baseline and the window's metrics include it (fix: raise experiment.warmup)",
            output::table::fmt_seconds(secs),
            output::table::fmt_seconds(crate::engine::to_secs_f64(warmup))
        );
    }

    let json = summary_json(&exp, &set, &summaries)?;
    let csv = output::table::render_csv(&summaries)?;
    write_atomic(&out.join("summary.json"), json.as_bytes(), &exp.inputs)?;
    // The experiment as written, for `retrysim report`.
    write_atomic(&out.join("experiment.toml"), exp.source.as_bytes(), &exp.inputs)?;
    write_atomic(&out.join("summary.csv"), csv.as_bytes(), &exp.inputs)?;
    write_atomic(&out.join("timeseries.csv"), output::timeseries::render_timeseries(&set)?.as_bytes(), &exp.inputs)?;
    write_atomic(&out.join("faults.csv"), output::timeseries::render_faults(&set)?.as_bytes(), &exp.inputs)?;

    let mut drawn = if args.sim.no_plots { Vec::new() } else { crate::charts::run_charts(&out, &out)? };
    if let Some(path) = &args.trace {
        output::write_streamed(path, &exp.inputs, |w| output::trace::write_trace(&set, w))?;
    }

    let replications = set.variants.iter().map(|v| v.runs.len()).max().unwrap_or(0);
    let (show, answer) = (exp.show(), exp.answer());
    let table = output::table::TableOptions { show: &show, answer: &answer, question: exp.question(), wide: args.wide };
    let fit = |text: String| if args.wide { text } else { output::layout::wrap_lines(&text, output::layout::WIDTH) };
    match args.sim.format {
        Format::Table => print!(
            "{}{}{}{}",
            output::table::render_text(&summaries, replications, &table) + &precision_line(precision.as_ref()),
            output::vs_baseline::render_vs_baseline(&summaries, &table),
            fit(output::notes::render_identical(&summaries)),
            fit(output::notes::render_breakdown(&summaries))
        ),
        Format::Markdown => print!("{}", output::table::render_markdown(&summaries, &table)),
        Format::Csv => print!("{csv}"),
        Format::Json => print!("{json}"),
    }
    if let Some(model) = &compare {
        let cmp = crate::traces::compare::compare(&set, model);
        let json = serde_json::to_string_pretty(&crate::traces::compare::to_json(&cmp, &args.compare_traces))? + "\n";
        write_atomic(&out.join("compare-traces.json"), json.as_bytes(), &exp.inputs)?;
        if !args.sim.no_plots {
            crate::traces::compare::chart(&set, model, &out)?;
            crate::charts::record::add(&out, crate::charts::record::RUN, &["compare-traces".to_string()])?;
            drawn.push("compare-traces".into());
        }
        if matches!(args.sim.format, Format::Table | Format::Markdown) {
            print!("{}", crate::traces::compare::render_text(&cmp));
        }
    }
    // Charts of an earlier run here that this one does not draw again
    // (all of them with --no-plots) go; see charts::record.
    crate::charts::record::prune(&out, crate::charts::record::RUN, &drawn, &exp.inputs)?;
    if !args.exp.quiet {
        let events = set.events();
        let runs: usize = set.variants.iter().map(|v| v.runs.len()).sum();
        eprintln!(
            "{runs} runs, {events} events in {elapsed:.2} s ({:.1} M events/s); wrote {}",
            events as f64 / elapsed.max(1e-9) / 1e6,
            out.display()
        );
    }
    crate::teardown::discard((exp, set, summaries, json, csv, compare));
    Ok(EXIT_OK)
}
