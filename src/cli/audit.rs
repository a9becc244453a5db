//! `retrysim audit`: the worst breakpoints as short simulations, a
//! pass/fail table of the invariants, and a counterexample trace for each
//! failure. Exit 1 on any failure.

use super::{EXIT_CHECK_FAILED, EXIT_OK, Format};
use crate::analysis::audit::{Finding, audit};
use crate::config::load_experiment;
use crate::error::InputError;
use clap::Args;

/// `retrysim audit`.
#[derive(Args, Debug, Clone)]
pub struct AuditArgs {
    #[command(flatten)]
    pub exp: super::ExperimentArgs,
    /// Seed (overrides experiment.seed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// What to print on stdout: table, json or markdown (csv prints the table).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also write audit.json (the object --format json prints) into this folder.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Audit this variant [default: the first].
    #[arg(long = "variant", value_name = "NAME")]
    pub variant: Option<String>,
    /// Run even when the estimate exceeds the available memory or an hour of CPU time.
    #[arg(long)]
    pub force: bool,
}

/// Runs the `audit` command.
pub fn run(args: &AuditArgs) -> anyhow::Result<i32> {
    let mut sets = args.exp.sets.clone();
    if let Some(seed) = args.seed {
        sets.push(format!("experiment.seed={seed}"));
    }
    let exp = load_experiment(&args.exp.experiment, &sets)?;
    let scenario = match &args.variant {
        None => &exp.variants[0],
        Some(name) => exp.variants.iter().find(|v| &v.variant == name).ok_or_else(|| {
            let names: Vec<&str> = exp.variants.iter().map(|v| v.variant.as_str()).collect();
            InputError::file(
                format!("--variant {name}"),
                format!("no such variant; the experiment has: {}", names.join(", ")),
            )
        })?,
    };
    // The probes run one after the other, each traced in full and dropped once judged.
    let probes = crate::analysis::audit::probe_scenarios(scenario);
    crate::analysis::estimate::Workload {
        command: "audit",
        runs: probes.iter().map(|p| (p, 1)).collect(),
        options: crate::analysis::audit::PROBE_OPTIONS,
        jobs: 1,
        keeps_results: false,
        extra_bytes: 0.0,
        memory_knobs: "lower client rates (audit runs at most 20 s of the experiment and traces every attempt)",
        time_knobs: "lower client rates (audit runs at most 20 s of the experiment)",
    }
    .check(args.force)?;
    let findings = audit(scenario);
    // Probes cut short by Ctrl-C prove nothing.
    crate::interrupt::check()?;
    let failed = findings.iter().filter(|f| !f.passed()).count();
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)?;
        let doc = serde_json::to_string_pretty(&json(&findings))? + "\n";
        crate::output::write_atomic(&dir.join("audit.json"), doc.as_bytes(), &exp.inputs)?;
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&json(&findings))?),
        Format::Markdown => print!("{}", markdown(&findings)),
        Format::Table | Format::Csv => print!("{}", text(&findings)),
    }
    if !args.exp.quiet {
        eprintln!("audit of \"{}\": {} checks, {failed} failed", scenario.variant, findings.len());
    }
    Ok(if failed > 0 { EXIT_CHECK_FAILED } else { EXIT_OK })
}

fn verdict(f: &Finding) -> String {
    match &f.failure {
        None => "pass".into(),
        Some(why) => format!("FAIL: {why}"),
    }
}

fn text(findings: &[Finding]) -> String {
    let rows: Vec<[String; 4]> =
        findings.iter().map(|f| [f.breakpoint.clone(), f.target.clone(), f.invariant.clone(), verdict(f)]).collect();
    let header = ["breakpoint", "target", "invariant", "result"];
    let mut w = header.map(str::len);
    for r in &rows {
        for i in 0..3 {
            w[i] = w[i].max(r[i].chars().count());
        }
    }
    let line =
        |c: [&str; 4]| format!("{:<a$}  {:<b$}  {:<c$}  {}\n", c[0], c[1], c[2], c[3], a = w[0], b = w[1], c = w[2]);
    let mut out = line(header);
    out.push_str(&line(["-".repeat(w[0]).as_str(), "-".repeat(w[1]).as_str(), "-".repeat(w[2]).as_str(), "------"]));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3]]));
    }
    for f in findings.iter().filter(|f| !f.passed() && !f.trace.is_empty()) {
        out.push_str(&format!(
            "\ncounterexample for \"{}\" ({}, {}): the attempts of one intent that broke it\n",
            f.breakpoint, f.target, f.invariant
        ));
        for row in &f.trace {
            out.push_str(&format!("  {row}\n"));
        }
    }
    out
}

fn markdown(findings: &[Finding]) -> String {
    let mut out = String::from("| breakpoint | target | invariant | result |\n|---|---|---|---|\n");
    for f in findings {
        out.push_str(&format!("| {} | {} | {} | {} |\n", f.breakpoint, f.target, f.invariant, verdict(f)));
    }
    for f in findings.iter().filter(|f| !f.passed() && !f.trace.is_empty()) {
        out.push_str(&format!("\nCounterexample for *{}* ({}, {}):\n\n```json\n", f.breakpoint, f.target, f.invariant));
        for row in &f.trace {
            out.push_str(&format!("{row}\n"));
        }
        out.push_str("```\n");
    }
    out
}

fn json(findings: &[Finding]) -> serde_json::Value {
    serde_json::json!({
        "schema": "retrysim.audit/1",
        "passed": findings.iter().all(Finding::passed),
        "findings": findings.iter().map(|f| serde_json::json!({
            "breakpoint": f.breakpoint,
            "target": f.target,
            "invariant": f.invariant,
            "passed": f.passed(),
            "failure": f.failure,
            "counterexample": f.trace,
        })).collect::<Vec<_>>(),
    })
}
