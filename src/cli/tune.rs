//! `retrysim tune`: search the `[tune.space]`, print the Pareto front and
//! why the winner won, and emit the winner as a policy file.

use super::{EXIT_CHECK_FAILED, EXIT_OK, ExperimentArgs, SimArgs};
use crate::analysis::tune::{
    Evaluated, TuneSpec, candidates, evaluate, overrides, pareto, parse_spec, successive_halving, winner,
};
use crate::config::{Scenario, load_experiment};
use crate::error::InputError;
use crate::model::RunOptions;
use crate::policy::Policy;
use clap::Args;
use std::fmt::Write as _;
use std::path::PathBuf;

/// `retrysim tune`.
#[derive(Args, Debug, Clone)]
pub struct TuneArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    #[command(flatten)]
    pub sim: SimArgs,
    /// Where to write the winning policy [default: OUT/tuned-policy.toml].
    #[arg(long, value_name = "PATH")]
    pub emit: Option<PathBuf>,
    /// The most candidates to evaluate: the full grid when smaller, else a Latin-hypercube sample.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub candidates: usize,
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

fn metric(e: &Evaluated, m: &str) -> String {
    e.worst.iter().find(|w| w.0 == m).and_then(|w| w.1).map(|x| format!("{x:.4}")).unwrap_or_else(|| "—".into())
}

/// The candidates in the (amplification, success) plane: all of them, the
/// Pareto front and the winner (`<stem>.png` and `.svg`).
fn pareto_chart(evals: &[Evaluated], best: &Evaluated, stem: &std::path::Path) -> anyhow::Result<()> {
    use crate::charts::draw::{Chart, Line, LineChart, save};
    let xy = |e: &Evaluated| {
        let g = |m: &str| e.worst.iter().find(|w| w.0 == m).and_then(|w| w.1);
        Some((g("amplification")?, g("success_rate")?))
    };
    let mut front: Vec<(f64, f64)> = pareto(evals).into_iter().filter_map(xy).collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    let chart = Chart::Lines(LineChart {
        title: "Tuning: worst-scenario success versus amplification per candidate".into(),
        x_label: "amplification (requests per intent at the busiest service)".into(),
        y_label: "success rate (worst scenario)".into(),
        lines: vec![
            Line {
                name: "candidates".into(),
                points: evals.iter().filter_map(xy).collect(),
                reference: true,
                dots: true,
                ..Line::default()
            },
            Line {
                name: "Pareto front (success, amplification, p99)".into(),
                color: 0,
                points: front,
                dots: true,
                ..Line::default()
            },
            Line {
                name: "winner".into(),
                color: 3,
                points: xy(best).into_iter().collect(),
                dots: true,
                ..Line::default()
            },
        ],
        y_fit: true,
        ..LineChart::default()
    });
    let dir = stem.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    let name = stem.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "pareto".into());
    save(&chart, &dir, &name)
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
    let mut sets = args.exp.sets.clone();
    if let Some(seed) = args.sim.seed {
        sets.push(format!("experiment.seed={seed}"));
    }
    let exp = load_experiment(&args.exp.experiment, &sets)?;
    let spec: TuneSpec = parse_spec(&exp.path, &exp.source)?;
    if policy_at(&exp.variants[0], &spec.edge).is_none() {
        return Err(InputError::field(
            exp.path.display().to_string(),
            "tune.edge",
            format!("\"{}\" names no policy: use clients.NAME.policy or services.NAME.calls.CALLEE.policy", spec.edge),
        )
        .into());
    }
    // The emitted file, checked before the search against every file any
    // scenario reads and against files this command did not write.
    let emit = args.emit.clone().unwrap_or_else(|| {
        args.sim.out.clone().unwrap_or_else(|| super::run::default_out(&exp.path)).join("tuned-policy.toml")
    });
    let mut inputs = exp.inputs.clone();
    for path in &spec.scenarios {
        inputs.extend(load_experiment(path, &sets)?.inputs);
    }
    check_emit(&emit, &inputs, args.force)?;
    if args.candidates == 0 {
        return Err(InputError::file("--candidates", "must be at least 1").into());
    }
    let cands = candidates(&spec, args.candidates, exp.variants[0].seed);
    let runs = cands.len() as u64
        * spec.scenarios.len() as u64
        * args.replications.unwrap_or(exp.variants[0].replications) as u64;
    // Memory: every candidate's runs of the judged scenarios, as loaded here.
    let mut judged = Vec::new();
    for path in &spec.scenarios {
        judged.extend(load_experiment(path, &sets)?.variants.into_iter().take(1));
    }
    let options = RunOptions::metrics_only();
    crate::analysis::estimate::check_fits("tune", &judged, options, args.sim.jobs.unwrap_or(0), runs, args.force)?;
    let bar = super::run::progress_bar(runs, args.exp.quiet);
    let started = std::time::Instant::now();
    let evals = if args.halving {
        let final_reps = args.replications.unwrap_or(exp.variants[0].replications).max(2);
        successive_halving(&spec, &cands, &sets, final_reps, args.sim.jobs.unwrap_or(0), &|| bar.inc(1))?.0
    } else {
        evaluate(&spec, &cands, &sets, args.replications, args.sim.jobs.unwrap_or(0), &|| bar.inc(1))?
    };
    bar.finish_and_clear();
    let elapsed = started.elapsed().as_secs_f64();

    let mut text = String::new();
    let _ = writeln!(
        text,
        "tuned {} over {} candidate(s) x {} scenario(s) in {elapsed:.1} s; objective: {} {} (worst scenario); constraints on the 95% CI bound: {}",
        spec.edge,
        cands.len(),
        spec.scenarios.len(),
        if spec.maximize { "maximize" } else { "minimize" },
        spec.objective,
        if spec.constraints.is_empty() {
            "none".into()
        } else {
            spec.constraints.iter().map(|c| c.text.clone()).collect::<Vec<_>>().join(", ")
        }
    );
    let _ = writeln!(text, "\nPareto front (worst scenario: success up, amplification down, p99 down):");
    let _ = writeln!(text, "{:<10} {:<10} {:<10} {:<9}  candidate", "success", "amplif.", "p99 (s)", "feasible");
    for e in pareto(&evals) {
        let _ = writeln!(
            text,
            "{:<10} {:<10} {:<10} {:<9}  {}",
            metric(e, "success_rate"),
            metric(e, "amplification"),
            metric(e, "latency_p99_s"),
            if e.feasible { "yes" } else { "no" },
            e.overrides.join(" ")
        );
    }
    let Some(best) = winner(&spec, &evals) else {
        // Infeasible: the candidate closest to feasibility and its worst constraint.
        let closest = evals
            .iter()
            .filter_map(|e| e.violations.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map(|(i, v)| (e, i, *v)))
            .min_by(|a, b| a.2.total_cmp(&b.2));
        match closest {
            None => {
                let _ = writeln!(
                    text,
                    "\nno candidate has a value for {} in every scenario (for example no disturbance to recover from): nothing to choose from.",
                    spec.objective
                );
            }
            Some((e, ci, v)) => {
                let c = &spec.constraints[ci];
                let by = if !v.is_finite() {
                    "has no value".to_string()
                } else if c.value.abs() < 1e-9 {
                    // A limit of 0: say by how much in the metric's own units.
                    format!("misses it by {v:.4}")
                } else {
                    format!("misses it by {:.1}% of its limit", v * 100.0)
                };
                let _ = writeln!(
                    text,
                    "\nno candidate meets every constraint. Closest: {} on \"{}\": {by} on its worst scenario.",
                    e.overrides.join(" "),
                    c.text
                );
            }
        }
        print!("{text}");
        return Ok(EXIT_CHECK_FAILED);
    };
    let _ = writeln!(
        text,
        "\nwinner: {}\n  worst-case {} = {} (best among feasible candidates); success {}, amplification {}, p99 {} s",
        best.overrides.join(" "),
        spec.objective,
        best.objective.map(|x| format!("{x:.4}")).unwrap_or_default(),
        metric(best, "success_rate"),
        metric(best, "amplification"),
        metric(best, "latency_p99_s")
    );
    for (c, v) in spec.constraints.iter().zip(&best.violations) {
        let _ = writeln!(text, "  {}: met with {:.1}% to spare on the CI bound", c.text, (-v * 100.0).max(0.0));
    }
    // The winning policy, as the experiment resolves it with the winner's values.
    let mut win_sets = sets.clone();
    win_sets.extend(overrides(&spec, &best.choice));
    let won = load_experiment(&exp.path, &win_sets)?;
    let mut policy = policy_at(&won.variants[0], &spec.edge).expect("checked above").clone();
    // Named after its file, as the presets are.
    policy.name = emit.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "tuned-policy".into());
    let mut file = String::new();
    let _ = writeln!(file, "{EMITTED}{}` for {}.", exp.path.display(), spec.edge);
    let scen: Vec<String> = spec.scenarios.iter().map(|p| p.display().to_string()).collect();
    let _ = writeln!(file, "# Scenarios (judged on the worst): {}", scen.join(", "));
    let _ = writeln!(
        file,
        "# Objective: {} {}; constraints on the 95% CI bound: {}",
        if spec.maximize { "maximize" } else { "minimize" },
        spec.objective,
        spec.constraints.iter().map(|c| c.text.clone()).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(
        file,
        "# Reached (worst scenario): success {}, amplification {}, p99 {} s, {} = {}",
        metric(best, "success_rate"),
        metric(best, "amplification"),
        metric(best, "latency_p99_s"),
        spec.objective,
        best.objective.map(|x| format!("{x:.4}")).unwrap_or_default()
    );
    let _ = writeln!(file, "# Chosen values: {}\n", best.overrides.join(" "));
    file.push_str(&crate::policy::file::to_toml(&policy));
    crate::output::write_atomic(&emit, file.as_bytes(), &inputs)?;
    if !args.sim.no_plots {
        // Charts go to the output folder, never beside a policy in policies/.
        let dir = args.sim.out.clone().unwrap_or_else(|| super::run::default_out(&exp.path));
        pareto_chart(&evals, best, &dir.join("pareto"))?;
        let _ = writeln!(text, "drew {}", dir.join("pareto.png").display());
    }
    let _ = writeln!(text, "\nwrote {}", emit.display());
    print!("{text}");
    Ok(EXIT_OK)
}
