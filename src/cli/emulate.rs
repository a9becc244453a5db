//! `retrysim emulate`: the experiment run for real on 127.0.0.1, written
//! as `run` writes a simulation, and with `--compare` beside the model.

use super::{EXIT_OK, ExperimentArgs, Format};
use crate::analysis::{RunSet, VariantRuns};
use crate::config::load_experiment;
use crate::emulate::compare::{self, CompareJson, Generator};
use crate::emulate::{EmulateOptions, emulate, unsupported};
use crate::error::InputError;
use crate::output::{self, write_atomic};
use std::path::PathBuf;

/// Where the retries happen.
#[derive(Clone, Copy, Debug, clap::ValueEnum, PartialEq, Eq)]
pub enum Proxy {
    /// In the clients, through retrysim-policy's call machine.
    None,
    /// In a local Envoy configured from `retrysim export --to envoy`.
    Envoy,
}

/// `retrysim emulate`.
#[derive(clap::Args, Debug, Clone)]
pub struct EmulateArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    /// Emulate only this variant (repeatable) [default: all].
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Replications per variant, each a separate real-time run (overrides experiment.replications).
    #[arg(long, value_name = "N")]
    pub replications: Option<u32>,
    /// Where the retries happen.
    #[arg(long, value_enum, default_value_t = Proxy::None)]
    pub proxy: Proxy,
    /// The Envoy binary for --proxy envoy [default: envoy on PATH].
    #[arg(long, value_name = "PATH")]
    pub envoy: Option<PathBuf>,
    /// Real seconds per model second: every duration times F, every rate divided by F.
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub time_scale: f64,
    /// Also simulate the same variants and replications and compare, metric by metric.
    #[arg(long)]
    pub compare: bool,
    /// Output folder [default: out/<experiment-stem>/emulate/].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed (overrides experiment.seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run even when the offered load is beyond what this machine drives.
    #[arg(long)]
    pub force: bool,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Runs the `emulate` command.
pub fn run(args: &EmulateArgs) -> anyhow::Result<i32> {
    let sets = super::selection::overrides(&args.exp.sets, args.seed, args.replications)?;
    super::run::unique_variants(&args.variants)?;
    let mut exp = load_experiment(&args.exp.experiment, &sets)?;
    let file = exp.path.display().to_string();
    if !args.variants.is_empty() {
        super::selection::check_variants(&exp.variants, &args.variants)?;
        exp.variants.retain(|v| args.variants.contains(&v.variant));
    }
    if !(args.time_scale.is_finite() && args.time_scale > 0.0) {
        return Err(
            InputError::file("--time-scale", format!("must be a positive number, got {}", args.time_scale)).into()
        );
    }
    if args.proxy == Proxy::Envoy && args.time_scale != 1.0 {
        return Err(InputError::file(
            "--time-scale",
            "with --proxy envoy the time scale must be 1: Envoy keeps the exported timeouts and backoff in real time",
        )
        .into());
    }
    let envoy = match args.proxy {
        Proxy::Envoy => Some(crate::emulate::envoy::binary(args.envoy.as_deref())?),
        Proxy::None => None,
    };
    for v in &exp.variants {
        let named = unsupported(v);
        if !named.is_empty() {
            return Err(InputError::file(
                &file,
                format!(
                    "variant \"{}\" has settings the emulator does not run:\n  {}\n(remove them with --set or emulate another variant)",
                    v.variant,
                    named.join("\n  ")
                ),
            )
            .into());
        }
    }
    crate::emulate::calibrate::check(&exp.variants, args.time_scale, args.force)?;
    let out = args.out.clone().unwrap_or_else(|| super::run::default_out_of(&exp.path, "emulate"));
    let mut outputs: Vec<PathBuf> = ["summary.json", "timeseries.csv"].iter().map(|n| out.join(n)).collect();
    if args.compare {
        outputs.push(out.join("compare.json"));
    }
    output::check_outputs(&outputs, &exp.inputs)?;

    if envoy.is_some() {
        for v in &exp.variants {
            for c in &v.clients {
                let exported = crate::output::export::export(&c.policy, crate::output::export::Target::Envoy);
                for loss in &exported.losses {
                    eprintln!(
                        "note: variant \"{}\": clients.{}.policy.{}: Envoy runs it otherwise: {}",
                        v.variant, c.name, loss.field, loss.why
                    );
                }
            }
        }
    }
    let options = EmulateOptions { time_scale: args.time_scale, envoy };
    let mut set = RunSet { variants: Vec::new() };
    let mut late: f64 = 0.0;
    let mut lag: f64 = 0.0;
    let started = std::time::Instant::now();
    for v in &exp.variants {
        let mut runs = Vec::new();
        for r in 0..v.replications {
            if !args.exp.quiet {
                eprintln!("emulating \"{}\", replication {} of {} ...", v.variant, r + 1, v.replications);
            }
            let e = emulate(v, r, &options)?;
            late = late.max(e.late_p99_s);
            lag = lag.max(e.runtime_late_p99_s);
            runs.push(e.result);
        }
        set.variants.push(VariantRuns { scenario: v.clone(), runs });
    }
    let generator = Generator {
        late_p99_s: late,
        overloaded: late > crate::emulate::LATE_LIMIT_S,
        runtime_late_p99_s: lag,
        runtime_overloaded: lag > crate::emulate::RUNTIME_LATE_LIMIT_S,
    };
    let summaries = output::summary::summarize_against(&set, 0);
    let json = output::summary::summary_json(&exp, &set, &summaries)?;
    let mut tree: serde_json::Value = serde_json::from_str(&json)?;
    tree["mode"] = "emulated".into();
    tree["generator"] = serde_json::to_value(generator)?;
    let json = serde_json::to_string_pretty(&tree)? + "\n";

    let comparison = if args.compare {
        // The model's run-to-run spread is known even when reality ran once.
        let mut simulated = exp.variants.clone();
        for v in &mut simulated {
            v.replications = v.replications.max(compare::MIN_SIMULATED);
        }
        let sim = crate::analysis::run_all(&simulated, None, 0)?;
        let variants = compare::compare(&sim, &set, generator);
        let replications = set.variants.iter().map(|v| v.runs.len()).max().unwrap_or(0);
        let simulated_replications = sim.variants.iter().map(|v| v.runs.len()).max().unwrap_or(0);
        let doc = CompareJson {
            schema: "retrysim.emulate_compare/1",
            experiment: file.clone(),
            replications,
            simulated_replications,
            time_scale: args.time_scale,
            generator,
            variants,
        };
        Some(doc)
    } else {
        None
    };
    write_atomic(&out.join("summary.json"), json.as_bytes(), &exp.inputs)?;
    write_atomic(&out.join("timeseries.csv"), output::timeseries::render_timeseries(&set)?.as_bytes(), &exp.inputs)?;
    if let Some(doc) = &comparison {
        let text = serde_json::to_string_pretty(doc)? + "\n";
        write_atomic(&out.join("compare.json"), text.as_bytes(), &exp.inputs)?;
    }

    let replications = set.variants.iter().map(|v| v.runs.len()).max().unwrap_or(0);
    match args.format {
        Format::Json => print!("{json}"),
        Format::Csv => print!("{}", output::table::render_csv(&summaries)?),
        Format::Table | Format::Markdown => {
            if let Some(doc) = &comparison {
                println!("{}", compare::render_text(doc));
            }
            println!(
                "Emulated for real on 127.0.0.1 (HTTP/1.1 servers and clients, retries through retrysim-policy), time scale {}:",
                args.time_scale
            );
            if generator.overloaded {
                println!(
                    "WARNING: the load generator was {:.1} ms late at p99: the load offered was lower than the experiment's.",
                    generator.late_p99_s * 1e3
                );
            }
            if generator.runtime_overloaded {
                println!(
                    "WARNING: tasks ran {:.1} ms late after their sleeps at p99: this machine could not keep up, and servers and clients acted late.",
                    generator.runtime_late_p99_s * 1e3
                );
            }
            let (show, answer) = (exp.show(), exp.answer());
            let table =
                output::table::TableOptions { show: &show, answer: &answer, question: exp.question(), wide: false };
            print!("{}", output::table::render_text(&summaries, replications, &table));
        }
    }
    if !args.exp.quiet {
        eprintln!("emulated in {:.1} s; wrote {}", started.elapsed().as_secs_f64(), out.display());
    }
    Ok(EXIT_OK)
}
