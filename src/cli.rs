//! The command line: argument definitions, help text and the commands.

pub mod audit;
pub mod collapse_rate;
pub mod emulate;
pub mod export;
pub mod frontier;
pub mod import;
pub mod lint;
pub mod plot;
pub mod run;
pub mod selection;
pub mod sharded;
pub mod sweep;
pub mod traces;
pub mod tune;
pub mod vectors;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Exit status for success.
pub const EXIT_OK: i32 = 0;
/// Exit status when a check failed (lint, audit, infeasible tune).
pub const EXIT_CHECK_FAILED: i32 = 1;
/// Exit status for bad input.
pub const EXIT_BAD_INPUT: i32 = 2;

/// Simulate retry policies, idempotency and overload before production does.
#[derive(Parser, Debug)]
#[command(name = "retrysim", version, about, long_about = None, after_help = "Quick start:\n  retrysim run experiments/quickstart.toml\n\nExit status: 0 success, 1 a check failed, 2 bad input.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run every variant of an experiment and compare them.
    #[command(
        display_order = 30,
        after_help = "Examples:\n  retrysim run experiments/quickstart.toml\n  retrysim run exp.toml --set services.api.workers=16 --replications 10\n  retrysim run exp.toml --variant \"full jitter\" --format markdown"
    )]
    Run(RunArgs),
    /// Run the worst breakpoints (lost answers, duplicates, crashes, key
    /// reuse, expiry, Retry-After, a 503 herd) and check the invariants.
    #[command(
        display_order = 60,
        after_help = "Exit status: 0 every invariant held, 1 one failed (its counterexample trace is printed), 2 bad input.\n\nExample:\n  retrysim audit experiments/crash-recovery.toml"
    )]
    Audit(audit::AuditArgs),
    /// Static pre-launch checks (docs/lint.md): findings with a fixed severity,
    /// the file, field and fix, and the worst-case amplification of every call path.
    #[command(
        display_order = 20,
        after_help = "Exit status: 0 no error-level finding, 1 at least one, 2 bad input.\n\nExamples:\n  retrysim lint experiments/layered-amplification.toml\n  retrysim lint exp.toml --variant \"one layer\" --format markdown\n  retrysim lint exp.toml --set clients.web.policy.max_attempts=1 --format json"
    )]
    Lint(lint::LintArgs),
    /// Translate a policy file to gRPC, Envoy, AWS, Gateway API, Istio, Linkerd or resilience4j config.
    #[command(
        display_order = 80,
        after_help = "The translation goes to stdout; every field that could not be carried over is named on stderr with why.\n\nExamples:\n  retrysim export policies/grpc-default.toml --to grpc > service-config.json\n  retrysim export policies/envoy-default.toml --to envoy\n  retrysim export policies/aws-standard.toml --to aws --strict\n  retrysim export policies/istio-default.toml --to istio"
    )]
    Export(export::ExportArgs),
    /// Read a deployed retry config (gRPC, Envoy, AWS, Istio, Gateway API, Linkerd) into a policy file.
    #[command(
        display_order = 15,
        after_help = "The policy goes to stdout; every setting with no policy field is named on stderr.\n\nExamples:\n  retrysim import route.yaml --from envoy > policies/today.toml\n  retrysim import service-config.json --from grpc\n  retrysim import ~/.aws/config --from aws"
    )]
    Import(import::ImportArgs),
    /// Run the experiment over a grid of values (--param KEY=SPEC) and find each variant's knee.
    #[command(
        display_order = 40,
        mut_arg("out", |a| a.help("Output folder [default: out/<experiment-stem>/sweep/]")),
        after_help = "Examples:\n  retrysim sweep experiments/quickstart.toml \\\n      --param experiment.load_scale=0.5..1.5:11\n  retrysim sweep exp.toml --param clients.web.policy.max_attempts=1,2,3,4 \\\n      --param services.api.workers=8,16\n  retrysim sweep exp.toml --param experiment.load_scale=0.5..1.5:11 \\\n      --shard 2/4 --out out/shard2"
    )]
    Sweep(sweep::SweepArgs),
    /// The metastability frontier: per variant, load and trigger length, the
    /// smallest spike, brownout, slowdown or outage the design does not recover from.
    #[command(
        display_order = 50,
        mut_arg("out", |a| a.help("Output folder: frontier.json, frontier.csv and the chart go into it [default: out/<experiment-stem>/frontier/; out/frontier/ for frontier.toml]")),
        after_help = "Examples:\n  retrysim frontier experiments/frontier.toml --trigger spike\n  retrysim frontier exp.toml --trigger brownout --load 0.5..1:6 --length 5s,10s,20s\n  retrysim frontier exp.toml --trigger outage --size 0s..30s:31 --shard 1/4 --out out/f1"
    )]
    Frontier(frontier::FrontierArgs),
    /// Spontaneous collapses per hour at steady load, with a 95% interval
    /// (direct simulation, or multilevel splitting when collapses are rare).
    #[command(
        display_order = 55,
        mut_arg("out", |a| a.help("Output folder: collapse-rate.json and the chart go into it [default: out/<experiment-stem>/collapse-rate/; out/collapse-rate/ for collapse-rate.toml]")),
        after_help = "Examples:\n  retrysim collapse-rate experiments/collapse-rate.toml\n  retrysim collapse-rate exp.toml --method splitting --trials 400"
    )]
    CollapseRate(collapse_rate::CollapseRateArgs),
    /// Join the output folders of a sharded sweep into the files the unsharded sweep writes.
    #[command(
        display_order = 45,
        after_help = "Example:\n  retrysim merge out/shard1 out/shard2 out/shard3 out/shard4 --out out/sweep"
    )]
    Merge(sharded::MergeArgs),
    /// Redraw the charts of a finished run or sweep from its output folder.
    #[command(
        display_order = 100,
        after_help = "Examples:\n  retrysim plot out/quickstart --out slides/\n  retrysim plot out/quickstart/sweep --metric success_rate --size 1920x1080 \\\n      --title \"Success versus load\" --variant \"no retries\" --variant \"backoff + full jitter\""
    )]
    Plot(plot::PlotArgs),
    /// Search the [tune.space] for the best policy under the [tune] objective and constraints; emit it.
    ///
    /// Candidates not significantly worse than the best by paired difference
    /// (common random numbers) tie; among them the one with fewer lint
    /// findings, then the gentler one, wins (docs/tune.md).
    #[command(
        display_order = 70,
        mut_arg("out", |a| a.help("Output folder for tune.json, pareto.png/.svg and, without --emit, tuned-policy.toml [default: out/<experiment-stem>/]")),
        after_help = "Exit status: 0 a winner was found and written, 1 no candidate met the constraints (the closest is named), 2 bad input.\n\nExamples:\n  retrysim tune experiments/tune-sdk.toml --emit policies/tuned-example.toml\n  retrysim tune experiments/tune-sdk.toml --format json   # winner, ties, front, per scenario\n  retrysim tune experiments/tune-sdk.toml --candidates 10 --replications 5"
    )]
    Tune(tune::TuneArgs),
    /// Write report.html (self-contained) and report.md for a design review from the output folder of a run, sweep or tune.
    #[command(
        display_order = 110,
        after_help = "Examples:\n  retrysim report out/quickstart\n  retrysim report out/quickstart/sweep --out review/\n  retrysim report out/tune-sdk"
    )]
    Report(plot::ReportArgs),
    /// Build an experiment from OpenTelemetry traces (OTLP/JSON lines or Jaeger JSON), see docs/traces.md.
    #[command(
        display_order = 10,
        name = "import-traces",
        after_help = "Every inferred value carries a comment saying what it was read from; what was dropped is said on stderr and in the file.\n\nExamples (with the sample traces in experiments/traces/):\n  retrysim import-traces experiments/traces/*.jsonl --out exp.toml\n  retrysim import-traces experiments/traces/loadgen.jsonl experiments/traces/api.jsonl \\\n      experiments/traces/backend.jsonl --out exp.toml --workers backend=4\n  retrysim run exp.toml --compare-traces experiments/traces/*.jsonl"
    )]
    ImportTraces(traces::ImportTracesArgs),
    /// Conformance vectors of a policy file for SDK authors (docs/vectors.md): cases of outcomes,
    /// clock readings and random draws with the decisions, waits and states the policy must produce.
    #[command(
        display_order = 90,
        after_help = "One JSON object on stdout (schema retrysim.vectors/1). The repository keeps the vectors of every preset under sdk/vectors/ (scripts/regenerate-vectors.sh).\n\nExamples:\n  retrysim vectors policies/grpc-default.toml > grpc-default.json\n  retrysim vectors policies/tuned-example.toml --cases 50"
    )]
    Vectors(vectors::VectorsArgs),
    /// Run the experiment for real on 127.0.0.1 (HTTP servers, clients, retries through
    /// retrysim-policy) and, with --compare, beside the simulation, metric by metric.
    #[command(
        display_order = 35,
        after_help = "Writes summary.json (\"mode\": \"emulated\") and timeseries.csv, and with --compare compare.json; see docs/emulate.md.\n\nExamples:\n  retrysim emulate experiments/emulate-steady.toml --compare\n  retrysim emulate exp.toml --variant \"full jitter\" --replications 3 --time-scale 2"
    )]
    Emulate(emulate::EmulateArgs),
}

/// What the run command prints on stdout.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
    Markdown,
}

/// Options shared by commands that read an experiment.
#[derive(clap::Args, Debug, Clone)]
pub struct ExperimentArgs {
    /// The experiment file.
    pub experiment: PathBuf,
    /// Override a field: KEY=VALUE, e.g. services.api.workers=32 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// No progress or summary lines on stderr; errors and findings (lint
    /// warnings) are still printed.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `--jobs`: 1 to 1024 (each job is a thread).
fn parse_jobs(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n),
        _ => Err(format!("expected a number of parallel runs from 1 to 1024, got \"{text}\"")),
    }
}

/// Options of commands that simulate.
#[derive(clap::Args, Debug, Clone)]
pub struct SimArgs {
    /// Seed (overrides experiment.seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Output folder [default: out/<experiment-stem>/].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Parallel runs, 1 to 1024 [default: one per core]. Results do not depend on it.
    #[arg(long, value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Do not draw charts.
    #[arg(long)]
    pub no_plots: bool,
}

/// `retrysim run`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub exp: ExperimentArgs,
    #[command(flatten)]
    pub sim: SimArgs,
    /// Replications per variant (overrides experiment.replications).
    #[arg(long, value_name = "N")]
    pub replications: Option<u32>,
    /// Print every column of the table (by default it fits 120 characters:
    /// the columns chosen by themselves give way, never `answer` or `show`).
    #[arg(long)]
    pub wide: bool,
    /// Write every attempt as JSON Lines to FILE (why it was made, what followed).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Trace only this deterministic fraction of intents (0 < F <= 1) [default: 1; needs --trace].
    #[arg(long, value_name = "F")]
    pub trace_sample: Option<f64>,
    /// Compare every variant with this one [default: the first].
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Add replications until every watched metric's 95% CI half-width is
    /// below this share of its mean (0.02; for a share, of the smaller of p
    /// and 1 - p), or below this many percentage points for the shares (0.5pp).
    #[arg(long, value_name = "SHARE|Npp")]
    pub precision: Option<String>,
    /// Whose intervals --precision applies to: each variant's, or the
    /// paired differences from the baseline.
    #[arg(long, value_enum, default_value = "variants")]
    pub precision_on: PrecisionOn,
    /// The most replications --precision may run per variant.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub max_replications: u32,
    /// Run even when the estimate exceeds the available memory or an hour of CPU time.
    #[arg(long)]
    pub force: bool,
    /// Run only this variant (repeatable).
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Put the run beside these traces (the files `import-traces` read):
    /// latency p50/p99, success and attempts per call, per client, edge and service.
    #[arg(long = "compare-traces", value_name = "TRACES", num_args = 1..)]
    pub compare_traces: Vec<PathBuf>,
}

/// Whose intervals `--precision` applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PrecisionOn {
    /// Each variant's own intervals.
    Variants,
    /// The paired differences of each variant from the baseline.
    Differences,
}

/// What a command line came to: its exit status and, when it failed, the
/// message for stderr (`error: FILE: field `X`: what is allowed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The exit status.
    pub code: i32,
    /// The error message, if the command failed (help and version text go to stdout).
    pub error: Option<String>,
}

/// Runs the command line `args` (the program name first) in this process,
/// as the binary does, but without installing signal handlers and
/// without printing the error: it is returned instead.
pub fn execute<I, T>(args: I) -> Outcome
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) if e.use_stderr() => {
            return Outcome { code: EXIT_BAD_INPUT, error: Some(e.render().to_string().trim_end().to_string()) };
        }
        Err(e) => {
            let _ = e.print();
            return Outcome { code: EXIT_OK, error: None };
        }
    };
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Audit(args) => audit::run(&args),
        Command::Lint(args) => lint::run(&args),
        Command::Export(args) => export::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Merge(args) => sharded::run_merge(&args),
        Command::Plot(args) => plot::run_plot(&args),
        Command::Tune(args) => tune::run(&args),
        Command::Report(args) => plot::run_report(&args),
        Command::Frontier(args) => frontier::run(&args),
        Command::CollapseRate(args) => collapse_rate::run(&args),
        Command::ImportTraces(args) => traces::run(&args),
        Command::Vectors(args) => vectors::run(&args),
        Command::Emulate(args) => emulate::run(&args),
    };
    match result {
        Ok(code) => Outcome { code, error: None },
        Err(e) if e.downcast_ref::<crate::interrupt::Interrupted>().is_some() => {
            Outcome { code: crate::interrupt::EXIT_INTERRUPTED, error: Some(e.to_string()) }
        }
        Err(e) => Outcome { code: EXIT_BAD_INPUT, error: Some(format!("error: {e:#}")) },
    }
}

/// Parses the command line, runs the command and returns the exit status.
pub fn main() -> i32 {
    crate::interrupt::install();
    crate::teardown::exiting_process();
    let outcome = execute(std::env::args_os());
    if let Some(message) = &outcome.error {
        eprintln!("{message}");
    }
    outcome.code
}
