//! `retrysim lint`: the static pre-launch checks of every variant (or of
//! those named by `--variant`), with the variant, file, field and fix of
//! each finding, and the worst-case amplification of every call path.
//! Exit 1 on any error-level finding in any variant.

use super::{EXIT_CHECK_FAILED, EXIT_OK, Format};
use crate::analysis::lint::{Finding, PathRow, Report, Severity, lint, sources, variants_label};
use crate::config::load_experiment;
use clap::Args;

/// `retrysim lint`.
#[derive(Args, Debug, Clone)]
pub struct LintArgs {
    #[command(flatten)]
    pub exp: super::ExperimentArgs,
    /// What to print on stdout (csv: the findings only).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Lint this variant (repeatable) [default: every variant].
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
}

/// The lint of one variant.
struct Linted {
    variant: String,
    report: Report,
}

/// Runs the `lint` command.
pub fn run(args: &LintArgs) -> anyhow::Result<i32> {
    let exp = load_experiment(&args.exp.experiment, &args.exp.sets)?;
    super::selection::check_variants(&exp.variants, &args.variants)?;
    let linted: Vec<Linted> = exp
        .variants
        .iter()
        .filter(|v| args.variants.is_empty() || args.variants.contains(&v.variant))
        .map(|scenario| {
            let src = sources(&exp, &scenario.variant, &args.exp.sets);
            Linted { variant: scenario.variant.clone(), report: lint(scenario, &src) }
        })
        .collect();
    let experiment = exp.path.display().to_string();
    match args.format {
        // On a terminal each finding is wrapped to the table's width.
        Format::Table if std::io::IsTerminal::is_terminal(&std::io::stdout()) => {
            print!("{}", crate::output::layout::wrap_lines(&text(&linted), crate::output::layout::WIDTH))
        }
        Format::Table => print!("{}", text(&linted)),
        Format::Markdown => print!("{}", markdown(&linted)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&json(&linted, &experiment))?),
        Format::Csv => print!("{}", csv(&linted)?),
    }
    if !args.exp.quiet {
        let line = summary(&linted);
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            eprint!("{}", crate::output::layout::wrap_lines(&line, crate::output::layout::WIDTH));
        } else {
            eprintln!("{line}");
        }
    }
    let errors = linted.iter().map(|l| l.report.count(Severity::Error)).sum::<usize>();
    Ok(if errors > 0 { EXIT_CHECK_FAILED } else { EXIT_OK })
}

/// The line on stderr: the errors and warnings printed (a finding that
/// several variants share counted once, as it is printed once), and, when
/// that differs, how many there are counted per variant.
fn summary(linted: &[Linted]) -> String {
    use crate::words::plural;
    let what = match linted {
        [one] => format!("\"{}\"", one.variant),
        all => format!(
            "{} variants ({})",
            all.len(),
            all.iter().map(|l| format!("\"{}\"", l.variant)).collect::<Vec<_>>().join(", ")
        ),
    };
    let printed = grouped(linted);
    let shown = |sev: Severity| printed.iter().filter(|(f, _)| f.severity == sev).count();
    let mut line = format!(
        "lint of {what}: {}, {}",
        plural(shown(Severity::Error), "error"),
        plural(shown(Severity::Warning), "warning")
    );
    let per_variant: usize = linted.iter().map(|l| l.report.findings.len()).sum();
    if per_variant != printed.len() {
        line.push_str(&format!(
            " ({} across the {} variants: a finding that several share is printed and counted once)",
            per_variant,
            linted.len()
        ));
    }
    line
}

/// The findings of every variant, a finding that several share once, with
/// their names, in the order of the first variant that has it.
fn grouped(linted: &[Linted]) -> Vec<(&Finding, Vec<String>)> {
    let mut out: Vec<(&Finding, Vec<String>)> = Vec::new();
    for l in linted {
        for f in &l.report.findings {
            let same = |g: &Finding| {
                (g.severity, g.rule, &g.file, &g.field, &g.at, &g.message, &g.fix)
                    == (f.severity, f.rule, &f.file, &f.field, &f.at, &f.message, &f.fix)
            };
            match out.iter_mut().find(|(g, _)| same(g)) {
                Some((_, names)) => names.push(l.variant.clone()),
                None => out.push((f, vec![l.variant.clone()])),
            }
        }
    }
    // Errors first, as within one variant.
    out.sort_by_key(|(f, _)| std::cmp::Reverse(f.severity));
    out
}

/// The call-path tables: one when every variant has the same paths, else
/// one per distinct set, with the variants it belongs to.
fn path_sets(linted: &[Linted]) -> Vec<(&[PathRow], Vec<String>)> {
    let mut out: Vec<(&[PathRow], Vec<String>)> = Vec::new();
    for l in linted {
        match out.iter_mut().find(|(p, _)| *p == l.report.paths.as_slice()) {
            Some((_, names)) => names.push(l.variant.clone()),
            None => out.push((&l.report.paths, vec![l.variant.clone()])),
        }
    }
    out
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

fn paths_text(paths: &[PathRow]) -> String {
    let mut out = String::new();
    let rows: Vec<[String; 4]> =
        paths.iter().map(|p| [p.client.clone(), path_text(p), attempts_text(p), p.worst_case.to_string()]).collect();
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

fn text(linted: &[Linted]) -> String {
    let mut out = String::new();
    let findings = grouped(linted);
    if findings.is_empty() {
        out.push_str("no findings\n");
    }
    for (f, names) in &findings {
        out.push_str(&format!(
            "{:<7}  {}  {}  [{}]  ({})\n",
            f.severity.label(),
            f.rule,
            place(f),
            f.at,
            variants_label(names, linted.len())
        ));
        out.push_str(&format!("         {}\n", f.message));
        out.push_str(&format!("         fix: {}\n", f.fix));
    }
    out.push_str("\nworst-case amplification of every call path (product of max_attempts along it):\n");
    let sets = path_sets(linted);
    for (paths, names) in &sets {
        if sets.len() > 1 {
            out.push_str(&format!("{}:\n", variants_label(names, linted.len())));
        }
        out.push_str(&paths_text(paths));
    }
    out
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn markdown(linted: &[Linted]) -> String {
    let mut out = String::from(
        "| severity | rule | variants | file: field | at | finding | fix |\n|---|---|---|---|---|---|---|\n",
    );
    let findings = grouped(linted);
    for (f, names) in &findings {
        out.push_str(&format!(
            "| {} | `{}` | {} | `{}` | `{}` | {} | {} |\n",
            f.severity.label(),
            f.rule,
            cell(&variants_label(names, linted.len())),
            cell(&place(f)),
            f.at,
            cell(&f.message),
            cell(&f.fix)
        ));
    }
    if findings.is_empty() {
        out.push_str("| | | | | | no findings | |\n");
    }
    out.push_str("\nWorst-case amplification of every call path (product of `max_attempts` along it):\n");
    let sets = path_sets(linted);
    for (paths, names) in &sets {
        if sets.len() > 1 {
            out.push_str(&format!("\n{}:\n", cell(&variants_label(names, linted.len()))));
        }
        out.push_str("\n| client | path | attempts | worst case |\n|---|---|---|---:|\n");
        for p in paths.iter() {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                p.client,
                cell(&path_text(p)),
                attempts_text(p),
                p.worst_case
            ));
        }
    }
    out
}

fn csv(linted: &[Linted]) -> anyhow::Result<String> {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(["variant", "severity", "rule", "file", "field", "at", "message", "fix"])?;
    for l in linted {
        for f in &l.report.findings {
            w.write_record([&f.variant, f.severity.label(), f.rule, &f.file, &f.field, &f.at, &f.message, &f.fix])?;
        }
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

fn json(linted: &[Linted], experiment: &str) -> serde_json::Value {
    let count = |sev: Severity| linted.iter().map(|l| l.report.count(sev)).sum::<usize>();
    let findings: Vec<serde_json::Value> = linted
        .iter()
        .flat_map(|l| &l.report.findings)
        .map(|f| {
            serde_json::json!({
                "variant": f.variant,
                "rule": f.rule,
                "severity": f.severity.label(),
                "file": f.file,
                "field": f.field,
                "at": f.at,
                "message": f.message,
                "fix": f.fix,
            })
        })
        .collect();
    let paths: Vec<serde_json::Value> = path_sets(linted)
        .iter()
        .flat_map(|(paths, names)| {
            paths.iter().map(move |p| {
                serde_json::json!({
                    "variants": names,
                    "client": p.client,
                    "hops": p.hops,
                    "attempts": p.attempts,
                    "outbox": p.outbox,
                    "worst_case": p.worst_case,
                })
            })
        })
        .collect();
    serde_json::json!({
        "schema": "retrysim.lint/1",
        "experiment": experiment,
        "variant": linted.first().map(|l| l.variant.as_str()),
        "variants": linted.iter().map(|l| l.variant.as_str()).collect::<Vec<_>>(),
        "passed": count(Severity::Error) == 0,
        "errors": count(Severity::Error),
        "warnings": count(Severity::Warning),
        "findings": findings,
        "paths": paths,
    })
}
