//! `retrysim lint`: the static pre-launch checks of one variant, with the
//! file, field and fix of each finding, and the worst-case amplification of
//! every call path. Exit 1 on any error-level finding.

use super::{EXIT_CHECK_FAILED, EXIT_OK, Format};
use crate::analysis::lint::{Finding, PathRow, Report, Severity, lint, sources};
use crate::config::load_experiment;
use crate::error::InputError;
use clap::Args;

/// `retrysim lint`.
#[derive(Args, Debug, Clone)]
pub struct LintArgs {
    #[command(flatten)]
    pub exp: super::ExperimentArgs,
    /// What to print on stdout (csv: the findings only).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Lint this variant [default: the first].
    #[arg(long = "variant", value_name = "NAME")]
    pub variant: Option<String>,
}

/// Runs the `lint` command.
pub fn run(args: &LintArgs) -> anyhow::Result<i32> {
    let exp = load_experiment(&args.exp.experiment, &args.exp.sets)?;
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
    let src = sources(&exp, &scenario.variant, &args.exp.sets);
    let report = lint(scenario, &src);
    match args.format {
        Format::Table => print!("{}", text(&report)),
        Format::Markdown => print!("{}", markdown(&report)),
        Format::Json => {
            println!("{}", serde_json::to_string_pretty(&json(&report, &src.experiment, &scenario.variant))?)
        }
        Format::Csv => print!("{}", csv(&report)?),
    }
    let errors = report.count(Severity::Error);
    if !args.exp.quiet {
        eprintln!(
            "lint of \"{}\": {errors} error(s), {} warning(s)",
            scenario.variant,
            report.count(Severity::Warning)
        );
    }
    Ok(if errors > 0 { EXIT_CHECK_FAILED } else { EXIT_OK })
}

fn place(f: &Finding) -> String {
    if f.file.is_empty() { f.field.clone() } else { format!("{}: {}", f.file, f.field) }
}

fn path_text(p: &PathRow) -> String {
    let mut s = p.hops[0].clone();
    for (i, hop) in p.hops[1..].iter().enumerate() {
        s.push_str(if p.outbox[i] { " =outbox=> " } else { " -> " });
        s.push_str(hop);
    }
    s
}

fn attempts_text(p: &PathRow) -> String {
    p.attempts.iter().map(u32::to_string).collect::<Vec<_>>().join(" x ")
}

fn text(r: &Report) -> String {
    let mut out = String::new();
    if r.findings.is_empty() {
        out.push_str("no findings\n");
    }
    for f in &r.findings {
        out.push_str(&format!("{:<7}  {}  {}  [{}]\n", f.severity.label(), f.rule, place(f), f.at));
        out.push_str(&format!("         {}\n", f.message));
        out.push_str(&format!("         fix: {}\n", f.fix));
    }
    out.push_str("\nworst-case amplification of every call path (product of max_attempts along it):\n");
    let rows: Vec<[String; 4]> =
        r.paths.iter().map(|p| [p.client.clone(), path_text(p), attempts_text(p), p.worst_case.to_string()]).collect();
    let header = ["client", "path", "attempts", "worst case"];
    let mut w = header.map(str::len);
    for row in &rows {
        for i in 0..4 {
            w[i] = w[i].max(row[i].chars().count());
        }
    }
    let line = |c: [&str; 4]| {
        format!("{:<a$}  {:<b$}  {:<c$}  {:>d$}\n", c[0], c[1], c[2], c[3], a = w[0], b = w[1], c = w[2], d = w[3])
    };
    out.push_str(&line(header));
    let dashes = w.map(|n| "-".repeat(n));
    out.push_str(&line([&dashes[0], &dashes[1], &dashes[2], &dashes[3]]));
    for row in &rows {
        out.push_str(&line([&row[0], &row[1], &row[2], &row[3]]));
    }
    out
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn markdown(r: &Report) -> String {
    let mut out = String::from("| severity | rule | file: field | at | finding | fix |\n|---|---|---|---|---|---|\n");
    for f in &r.findings {
        out.push_str(&format!(
            "| {} | `{}` | `{}` | `{}` | {} | {} |\n",
            f.severity.label(),
            f.rule,
            cell(&place(f)),
            f.at,
            cell(&f.message),
            cell(&f.fix)
        ));
    }
    if r.findings.is_empty() {
        out.push_str("| | | | | no findings | |\n");
    }
    out.push_str("\nWorst-case amplification of every call path (product of `max_attempts` along it):\n\n");
    out.push_str("| client | path | attempts | worst case |\n|---|---|---|---:|\n");
    for p in &r.paths {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            p.client,
            cell(&path_text(p)),
            attempts_text(p),
            p.worst_case
        ));
    }
    out
}

fn csv(r: &Report) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(["severity", "rule", "file", "field", "at", "message", "fix"])?;
    for f in &r.findings {
        w.write_record([f.severity.label(), f.rule, &f.file, &f.field, &f.at, &f.message, &f.fix])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

fn json(r: &Report, experiment: &str, variant: &str) -> serde_json::Value {
    serde_json::json!({
        "schema": "retrysim.lint/1",
        "experiment": experiment,
        "variant": variant,
        "passed": r.count(Severity::Error) == 0,
        "errors": r.count(Severity::Error),
        "warnings": r.count(Severity::Warning),
        "findings": r.findings.iter().map(|f| serde_json::json!({
            "rule": f.rule,
            "severity": f.severity.label(),
            "file": f.file,
            "field": f.field,
            "at": f.at,
            "message": f.message,
            "fix": f.fix,
        })).collect::<Vec<_>>(),
        "paths": r.paths.iter().map(|p| serde_json::json!({
            "client": p.client,
            "hops": p.hops,
            "attempts": p.attempts,
            "outbox": p.outbox,
            "worst_case": p.worst_case,
        })).collect::<Vec<_>>(),
    })
}
