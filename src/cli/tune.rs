//! `retrysim tune`: search the `[tune.space]`, print the Pareto front, how
//! the winner was chosen and which candidates tie with it, the winner per
//! scenario and its lint findings, and emit the winner as policy files.

mod chart;
mod json;
mod text;

use super::{EXIT_CHECK_FAILED, EXIT_OK, ExperimentArgs, Format, SimArgs};
use crate::analysis::tune::prefer::{Assessment, Assessor, Choice};
use crate::analysis::tune::{
    Context, Evaluated, Judged, Method, Options, as_written, check_recovery, check_values, load_scenarios, method,
    pareto, parse_spec, search, settle, settle_budget,
};
use crate::config::load_experiment;
use crate::error::InputError;
use crate::model::RunOptions;
use clap::Args;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use crate::analysis::tune::policy_at;

/// `retrysim tune`.
#[derive(Args, Debug, Clone)]
pub struct TuneArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    #[command(flatten)]
    pub sim: SimArgs,
    /// Where to write the winning policy [default: OUT/tuned-policy.toml];
    /// with several edges, one file per edge beside it (PATH's stem, then
    /// the edge: tuned-policy.clients.web.toml).
    #[arg(long, value_name = "PATH")]
    pub emit: Option<PathBuf>,
    /// The most candidates to evaluate: the full grid when smaller, else a
    /// Latin-hypercube sample; with ranges in the space, the optimizer's
    /// evaluations [default: 200, or 60 with ranges].
    #[arg(long, value_name = "N")]
    pub candidates: Option<usize>,
    /// Replications per candidate and scenario (overrides each scenario's own).
    #[arg(long, value_name = "N")]
    pub replications: Option<u32>,
    /// Successive halving: screen every candidate with 2 replications and
    /// give the full replications only to the better half, round by round.
    #[arg(long)]
    pub halving: bool,
    /// Run even when the estimate exceeds the available memory or an hour of
    /// CPU time, and emit over an existing file that tune did not write.
    #[arg(long)]
    pub force: bool,
}

/// Everything the text and JSON reports show.
pub(crate) struct Report<'a> {
    pub ctx: &'a Context<'a>,
    pub method: Method,
    pub evaluated: &'a [Evaluated],
    pub judged: &'a [Judged],
    /// The scenarios as written (the edges' own policies).
    pub baseline: &'a Evaluated,
    pub choice: Option<&'a Choice>,
    /// Lint and gentleness of the winner and the ties.
    pub assessed: &'a HashMap<usize, Assessment>,
    pub front: Vec<usize>,
    pub runs: u64,
    /// The winner's policy files, and the chart.
    pub emitted: Vec<PathBuf>,
    pub chart: Option<PathBuf>,
    /// The winner and the runner-up again, on fresh seeds.
    pub confirmation: Option<&'a crate::analysis::tune::confirm::Confirmation>,
}

impl Report<'_> {
    /// The feasible-closest candidate when there is no winner: the one
    /// whose worst-missed constraint is missed by the least, and which.
    pub fn closest(&self) -> Option<(usize, usize, f64)> {
        (0..self.judged.len())
            .filter_map(|i| {
                let v = &self.judged[i].violations;
                v.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(c, x)| (i, c, *x))
            })
            .min_by(|a, b| a.2.total_cmp(&b.2))
    }
}

/// The policy file of `edge` when `emit` is the path asked for: `emit`
/// itself for one edge, `<stem>.<location>.toml` beside it for several.
fn emit_path(emit: &Path, edge: &str, edges: usize) -> PathBuf {
    if edges == 1 {
        return emit.to_path_buf();
    }
    let location = edge.strip_suffix(".policy").unwrap_or(edge);
    let stem = emit.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "tuned-policy".into());
    emit.with_file_name(format!("{stem}.{location}.toml"))
}

/// Writes the winner's policy of every tuned edge; returns the files.
fn emit_policies(
    emit: &Path,
    ctx: &Context,
    exp: &crate::config::Experiment,
    inputs: &[PathBuf],
    r: &Report,
) -> anyhow::Result<Vec<PathBuf>> {
    let spec = ctx.spec;
    let choice = r.choice.expect("a winner");
    let best = &r.evaluated[choice.winner];
    let j = &r.judged[choice.winner];
    let mut win_sets = ctx.sets.to_vec();
    win_sets.extend(best.candidate.overrides(spec));
    let won = load_experiment(&exp.path, &win_sets)?;
    let mut written = Vec::new();
    for edge in &spec.edges {
        let path = emit_path(emit, edge, spec.edges.len());
        let mut policy = policy_at(&won.variants[0], edge).expect("checked before the search").clone();
        // Named after its file, as the presets are.
        policy.name =
            path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "tuned-policy".into());
        let mut file = String::new();
        let _ = writeln!(file, "{EMITTED}{}` for {edge}.", exp.path.display());
        let scen: Vec<String> = spec.scenarios.iter().map(|p| p.display().to_string()).collect();
        let _ = writeln!(file, "# Scenarios (judged on the worst): {}", scen.join(", "));
        let _ = writeln!(
            file,
            "# Objective: {} {}; constraints on the 95% CI bound: {}",
            spec.direction(),
            spec.objective,
            spec.constraints_text()
        );
        let _ = writeln!(
            file,
            "# Reached (worst scenario): success {}, amplification {}, p99 {} s, {} = {}",
            text::num(j.success),
            text::num(j.amplification),
            text::num(j.p99),
            spec.objective,
            text::num(j.objective)
        );
        let _ = writeln!(file, "# Chosen values: {}", best.candidate.label(spec));
        let _ = writeln!(file, "# Chosen as: {}\n", choice.chosen_by);
        file.push_str(&crate::policy::file::to_toml(&policy));
        crate::output::write_atomic(&path, file.as_bytes(), inputs)?;
        written.push(path);
    }
    Ok(written)
}

fn out_dir(args: &TuneArgs, exp: &Path) -> PathBuf {
    args.sim.out.clone().unwrap_or_else(|| super::run::default_out(exp))
}

/// The first line of every policy file `tune` writes.
const EMITTED: &str = "# Tuned by `retrysim tune ";

/// Refuses to emit over a file a scenario reads (always), or over an
/// existing file that is not a policy `tune` wrote (unless `force`).
fn check_emit(emit: &std::path::Path, inputs: &[PathBuf], force: bool) -> anyhow::Result<()> {
    let shown = format!("--emit {}", emit.display());
    crate::output::check_outputs(&[emit.to_path_buf()], inputs).map_err(|e| {
        let why = if e.to_string().contains("input file") {
            " (the tune experiment, one of its scenarios or a policy they load): choose another path"
        } else {
            ""
        };
        InputError::file(&shown, format!("{e:#}{why}"))
    })?;
    if emit.is_file() {
        let text = crate::config::read::read_input(emit).unwrap_or_default();
        if !text.starts_with(EMITTED) && !force {
            return Err(InputError::file(
                shown,
                "the file exists and is not a policy written by `retrysim tune` (its first line would start with \"# Tuned by `retrysim tune\"): choose another path, or --force to replace it",
            )
            .into());
        }
    }
    Ok(())
}

/// Runs the `tune` command.
pub fn run(args: &TuneArgs) -> anyhow::Result<i32> {
    if matches!(args.sim.format, Format::Csv | Format::Markdown) {
        return Err(InputError::file(
            "--format",
            "tune prints table (the text report) or json (one object, schema retrysim.tune/1)",
        )
        .into());
    }
    let mut sets = args.exp.sets.clone();
    if let Some(seed) = args.sim.seed {
        sets.push(format!("experiment.seed={seed}"));
    }
    let exp = load_experiment(&args.exp.experiment, &sets)?;
    let spec = parse_spec(&exp.path, &exp.source)?;
    if args.candidates == Some(0) {
        return Err(InputError::file("--candidates", "must be at least 1").into());
    }
    let budget = args.candidates.unwrap_or(if spec.has_ranges() { 60 } else { 200 }) as u64;
    let method = method(&spec, budget);
    check_values(&spec, &exp, &sets, method, exp.variants[0].seed)?;
    if args.halving && spec.has_ranges() {
        return Err(InputError::file(
            "--halving",
            "successive halving screens a list of candidates; a space with a range (\"LO..HI\") is searched by the optimizer instead",
        )
        .into());
    }
    // The emitted files, checked before the search against every file any
    // scenario reads and against files this command did not write.
    let emit = args.emit.clone().unwrap_or_else(|| out_dir(args, &exp.path).join("tuned-policy.toml"));
    let mut inputs = exp.inputs.clone();
    for path in &spec.scenarios {
        inputs.extend(load_experiment(path, &sets)?.inputs);
    }
    inputs.sort();
    inputs.dedup();
    for edge in &spec.edges {
        check_emit(&emit_path(&emit, edge, spec.edges.len()), &inputs, args.force)?;
    }
    let scenarios = load_scenarios(&spec, &sets)?;
    check_recovery(&spec, &scenarios)?;
    // Memory: the scenarios as written and every candidate, with each
    // scenario's replications. Candidates are made lazily and keep only a
    // few values per run (far less than the lean result counted per run).
    let reps: u64 = scenarios.iter().map(|s| args.replications.unwrap_or(s.replications) as u64).sum();
    // The search, the scenarios as written, settling ties, and the winner
    // and runner-up again on fresh seeds.
    let runs = method.candidates().saturating_add(3 + settle_budget(&spec)).saturating_mul(reps);
    let jobs = args.sim.jobs.unwrap_or(0);
    crate::analysis::estimate::check_fits("tune", &scenarios, RunOptions::metrics_only(), jobs, runs, args.force)?;

    let bar = super::run::progress_bar(runs, args.exp.quiet);
    let started = std::time::Instant::now();
    let (ctx, baseline) = as_written(&spec, &sets, &scenarios, args.replications, jobs, &|| bar.inc(1))?;
    let options =
        Options { method, replications: args.replications, halving: args.halving, seed: exp.variants[0].seed };
    let outcome = search(&ctx, options, &|| bar.inc(1))?;
    let mut assessor = Assessor::new(&ctx, &exp.path);
    let (outcome, judged, choice) = settle(&ctx, options, outcome, &mut assessor, &|| bar.inc(1))?;
    let confirmation = match &choice {
        Some(c) => Some(crate::analysis::tune::confirm::confirm(
            &ctx,
            &outcome.evaluated,
            &judged,
            c.winner,
            (options.seed, options.replications),
            &|| bar.inc(1),
        )?),
        None => None,
    };
    bar.finish_and_clear();
    let evaluated = outcome.evaluated;
    let mut assessed = HashMap::new();
    if let Some(c) = &choice {
        for i in [c.winner, c.best].into_iter().chain(c.ties.iter().map(|t| t.index)) {
            assessed.insert(i, assessor.get(&evaluated, i)?.clone());
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut report = Report {
        ctx: &ctx,
        method,
        evaluated: &evaluated,
        judged: &judged,
        baseline: &baseline,
        choice: choice.as_ref(),
        assessed: &assessed,
        front: pareto(&evaluated, &judged),
        runs: outcome.runs
            + ctx.scenarios.iter().map(|s| s.replications as u64).sum::<u64>()
            + confirmation.as_ref().map_or(0, |c| {
                (1 + c.runner_up.is_some() as u64) * c.replications.iter().map(|&n| u64::from(n)).sum::<u64>()
            }),
        emitted: Vec::new(),
        chart: None,
        confirmation: confirmation.as_ref(),
    };
    if report.choice.is_some() {
        report.emitted = emit_policies(&emit, &ctx, &exp, &inputs, &report)?;
    }
    // The chart and tune.json (what `retrysim report` reads) go to the
    // output folder, never beside a policy in policies/.
    let dir = out_dir(args, &exp.path);
    let mut drawn = Vec::new();
    if !args.sim.no_plots && !evaluated.is_empty() {
        chart::pareto_chart(&report, &dir.join("pareto"))?;
        report.chart = Some(dir.join("pareto.png"));
        drawn.push("pareto".to_string());
    }
    // Charts of an earlier tune here that this one does not draw again go.
    crate::charts::record::prune(&dir, crate::charts::record::TUNE, &drawn, &inputs)?;
    let doc = serde_json::to_string_pretty(&json::report(&report))?;
    std::fs::create_dir_all(&dir)?;
    crate::output::write_atomic(&dir.join("tune.json"), format!("{doc}\n").as_bytes(), &inputs)?;
    match args.sim.format {
        Format::Json => println!("{doc}"),
        _ => {
            let text = text::report(&report, elapsed);
            // On a terminal, prose lines wrap at the table's width.
            if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                print!("{}", crate::output::layout::wrap_lines(&text, crate::output::layout::WIDTH));
            } else {
                print!("{text}");
            }
            println!(
                "wrote {} (`retrysim report {}` makes a report of it)",
                dir.join("tune.json").display(),
                dir.display()
            );
        }
    }
    Ok(if report.choice.is_some() { EXIT_OK } else { EXIT_CHECK_FAILED })
}
