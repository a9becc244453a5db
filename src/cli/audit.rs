//! `retrysim audit`: the worst breakpoints as short simulations, a
//! pass/fail table of the invariants per variant (every variant, or those
//! named by `--variant`), and a counterexample trace for each failure.
//! Exit 1 on any failure in any variant.

use super::{EXIT_CHECK_FAILED, EXIT_OK, Format};
use crate::analysis::audit::{Finding, audit};
use crate::config::load_experiment;
use crate::words::plural;
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
    /// Audit this variant (repeatable) [default: every variant].
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Run even when the estimate exceeds the available memory or an hour of CPU time.
    #[arg(long)]
    pub force: bool,
}

/// The audit of one variant.
struct Audited {
    variant: String,
    findings: Vec<Finding>,
}

impl Audited {
    fn failed(&self) -> usize {
        self.findings.iter().filter(|f| !f.passed()).count()
    }

    /// `fails 1 of 10 checks`, `passes all 10 checks`, `passes its 1 check`.
    fn verdict(&self) -> String {
        let n = self.findings.len();
        match self.failed() {
            0 if n == 1 => "passes its 1 check".into(),
            0 => format!("passes all {n} checks"),
            k => format!("fails {k} of {}", plural(n, "check")),
        }
    }
}

/// Runs the `audit` command.
pub fn run(args: &AuditArgs) -> anyhow::Result<i32> {
    let mut sets = args.exp.sets.clone();
    if let Some(seed) = args.seed {
        sets.push(format!("experiment.seed={seed}"));
    }
    let exp = load_experiment(&args.exp.experiment, &sets)?;
    let chosen = super::selection::chosen_variants(&exp.variants, &args.variants)?;
    // The probes run one after the other, each traced in full and dropped once judged.
    let probes: Vec<_> = chosen.iter().flat_map(crate::analysis::audit::probe_scenarios).collect();
    crate::analysis::estimate::Workload {
        command: "audit",
        runs: probes.iter().map(|p| (p, 1)).collect(),
        options: crate::analysis::audit::PROBE_OPTIONS,
        jobs: 1,
        keeps_results: false,
        extra_bytes: 0.0,
        memory_knobs: "lower client rates (audit runs at most 20 s of the experiment and traces every attempt)",
        time_knobs: "fewer variants (--variant) or lower client rates (audit runs at most 20 s of the experiment)",
    }
    .check(args.force)?;
    let mut audited = Vec::new();
    for scenario in &chosen {
        let findings = audit(scenario);
        // Probes cut short by Ctrl-C prove nothing.
        crate::interrupt::check()?;
        audited.push(Audited { variant: scenario.variant.clone(), findings });
    }
    let failed: usize = audited.iter().map(Audited::failed).sum();
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)?;
        let doc = serde_json::to_string_pretty(&json(&audited))? + "\n";
        crate::output::write_atomic(&dir.join("audit.json"), doc.as_bytes(), &exp.inputs)?;
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&json(&audited))?),
        Format::Markdown => print!("{}", markdown(&audited)),
        Format::Table | Format::Csv => print!("{}", text(&audited)),
    }
    if !args.exp.quiet {
        eprintln!("{}", summary(&audited));
    }
    Ok(if failed > 0 { EXIT_CHECK_FAILED } else { EXIT_OK })
}

/// The line on stderr: `audit of "memory": 10 checks, 1 failed`, or for
/// several variants the checks and failures of all, naming the variants
/// that failed one.
fn summary(audited: &[Audited]) -> String {
    let checks: usize = audited.iter().map(|a| a.findings.len()).sum();
    let failed: usize = audited.iter().map(Audited::failed).sum();
    match audited {
        [one] => format!("audit of \"{}\": {}, {failed} failed", one.variant, plural(checks, "check")),
        all => {
            let failing: Vec<String> =
                all.iter().filter(|a| a.failed() > 0).map(|a| format!("\"{}\" {}", a.variant, a.failed())).collect();
            let which = if failing.is_empty() { String::new() } else { format!(" ({})", failing.join(", ")) };
            format!("audit of {} variants: {}, {failed} failed{which}", all.len(), plural(checks, "check"))
        }
    }
}

/// For several variants, the answer first: which fail and which pass.
fn overview(audited: &[Audited]) -> Option<String> {
    if audited.len() < 2 {
        return None;
    }
    let (fail, pass): (Vec<&Audited>, Vec<&Audited>) = audited.iter().partition(|a| a.failed() > 0);
    let list = |group: &[&Audited]| {
        group.iter().map(|a| format!("\"{}\" {}", a.variant, a.verdict())).collect::<Vec<_>>().join(", ")
    };
    let mut parts = Vec::new();
    if !fail.is_empty() {
        parts.push(list(&fail));
    }
    if !pass.is_empty() {
        parts.push(list(&pass));
    }
    Some(format!("audit of {} variants: {}", audited.len(), parts.join("; ")))
}

fn verdict(f: &Finding) -> String {
    match &f.failure {
        None => "pass".into(),
        Some(why) => format!("FAIL: {why}"),
    }
}

fn table(findings: &[Finding]) -> String {
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

/// One section per variant, each under a line naming it and its verdict;
/// for several, an overview first.
fn text(audited: &[Audited]) -> String {
    let mut sections = Vec::new();
    if let Some(line) = overview(audited) {
        sections.push(format!("{line}\n"));
    }
    for a in audited {
        sections.push(format!("variant \"{}\" {}:\n{}", a.variant, a.verdict(), table(&a.findings)));
    }
    sections.join("\n")
}

fn markdown(audited: &[Audited]) -> String {
    let mut out = String::new();
    if let Some(line) = overview(audited) {
        out.push_str(&format!("{}\n\n", crate::output::markdown::escape(&line)));
    }
    for (i, a) in audited.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "### Variant \"{}\" {}\n\n| breakpoint | target | invariant | result |\n|---|---|---|---|\n",
            crate::output::markdown::escape(&a.variant),
            a.verdict()
        ));
        for f in &a.findings {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                f.breakpoint,
                f.target,
                f.invariant,
                crate::output::markdown::cell(&verdict(f))
            ));
        }
        for f in a.findings.iter().filter(|f| !f.passed() && !f.trace.is_empty()) {
            out.push_str(&format!(
                "\nCounterexample for *{}* ({}, {}):\n\n```json\n",
                f.breakpoint, f.target, f.invariant
            ));
            for row in &f.trace {
                out.push_str(&format!("{row}\n"));
            }
            out.push_str("```\n");
        }
    }
    out
}

fn json(audited: &[Audited]) -> serde_json::Value {
    serde_json::json!({
        "schema": "retrysim.audit/1",
        "passed": audited.iter().all(|a| a.failed() == 0),
        "variants": audited.iter().map(|a| serde_json::json!({
            "name": a.variant,
            "passed": a.failed() == 0,
            "checks": a.findings.len(),
            "failed": a.failed(),
        })).collect::<Vec<_>>(),
        "findings": audited.iter().flat_map(|a| a.findings.iter().map(move |f| serde_json::json!({
            "variant": a.variant,
            "breakpoint": f.breakpoint,
            "target": f.target,
            "invariant": f.invariant,
            "passed": f.passed(),
            "failure": f.failure,
            "counterexample": f.trace,
        }))).collect::<Vec<_>>(),
    })
}
