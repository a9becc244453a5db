//! `report.html` (self-contained: inline SVG charts, no external files or
//! scripts) and `report.md` (PNG charts beside it) for a design review,
//! built from a finished run's output folder.

use super::columns::{Column, Shown, choose};
use super::table::cell;
use crate::analysis::Summary;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn mean(v: &Value) -> Option<f64> {
    v.get("mean").and_then(Value::as_f64)
}

/// A metric object of summary.json as a [`Summary`] (its interval, no values).
fn as_summary(m: &Value) -> Summary {
    let ci = m.get("ci95").and_then(|c| Some((c.get(0)?.as_f64()?, c.get(1)?.as_f64()?)));
    Summary { mean: mean(m), ci95: ci, values: Vec::new() }
}

/// Which variants of summary.json have what, for the column choice.
struct Numbers<'a>(&'a [Value]);

impl Shown for Numbers<'_> {
    fn nonzero(&self, m: &str) -> bool {
        self.0.iter().any(|v| mean(&v["metrics"][m]).is_some_and(|x| x != 0.0))
    }
    fn present(&self, m: &str) -> bool {
        self.0.iter().any(|v| mean(&v["metrics"][m]).is_some() || v["metrics"][m].get("reason").is_some())
    }
}

/// The columns of the report's table: those of the terminal table.
fn report_columns(summary: &Value) -> Vec<Column> {
    let variants = summary["variants"].as_array().cloned().unwrap_or_default();
    let show: Vec<String> = summary["experiment"]["show"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    choose(&show, &Numbers(&variants))
}

fn report_cell(v: &Value, c: &Column) -> String {
    let m = &v["metrics"][c.metric];
    let text = cell(Some(&as_summary(m)), m.get("reason").and_then(Value::as_str), c.style);
    if c.metric == "amplification" && mean(m).is_some() {
        format!("{text} ({})", v["amplification_service"].as_str().unwrap_or(""))
    } else {
        text
    }
}

/// Findings in words, from the numbers (see [`super::findings`]).
pub fn findings(summary: &Value) -> Vec<String> {
    super::findings::findings(summary)
}

/// Writes `report.html` and `report.md` into `dir` (a run folder whose
/// charts exist) and returns their paths.
pub fn write_report(dir: &Path, chart_names: &[String]) -> anyhow::Result<()> {
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json"))?)?;
    let exp_name = summary["experiment"]["name"].as_str().unwrap_or("experiment").to_string();
    let source = std::fs::read_to_string(dir.join("experiment.toml")).unwrap_or_default();
    let variants = summary["variants"].as_array().cloned().unwrap_or_default();
    let found = super::findings::findings(&summary);

    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>body{{font-family:sans-serif;max-width:1300px;margin:2em auto;color:#222}}table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}td:first-child,th:first-child{{text-align:left}}pre{{background:#f6f6f6;padding:1em;overflow:auto}}figure{{margin:2em 0}}svg{{max-width:100%;height:auto}}</style></head><body>\n<h1>{t}</h1>\n",
        t = esc(&exp_name)
    );
    let _ = writeln!(
        html,
        "<p>Seed {}, {} replication(s) per variant, intents counted from {} s to {} s. Each cell is the mean ± the half-width of its 95% confidence interval (+above/-below where the interval stops at 0 or 100%); p50, p99 and p99.9 are latencies of successful intents, p99 all of every intent.</p>",
        summary["experiment"]["seed"],
        variants.first().map(|v| v["replications"].clone()).unwrap_or_default(),
        summary["experiment"]["warmup_s"],
        summary["experiment"]["duration_s"]
    );
    html.push_str("<h2>Findings</h2>\n<ul>\n");
    for f in &found {
        let _ = writeln!(html, "<li>{}</li>", esc(f));
    }
    html.push_str("</ul>\n<h2>Comparison</h2>\n<table><tr><th>variant</th>");
    let columns = report_columns(&summary);
    for c in &columns {
        let _ = write!(html, "<th>{}</th>", esc(c.header));
    }
    html.push_str("</tr>\n");
    let mut md_table = String::from("| variant |");
    for c in &columns {
        let _ = write!(md_table, " {} |", c.header);
    }
    md_table.push_str(&format!("\n|---|{}\n", "---:|".repeat(columns.len())));
    for v in &variants {
        let name = v["name"].as_str().unwrap_or("");
        let _ = write!(html, "<tr><td>{}</td>", esc(name));
        let _ = write!(md_table, "| {name} |");
        for col in &columns {
            let c = report_cell(v, col);
            let _ = write!(html, "<td>{}</td>", esc(&c));
            let _ = write!(md_table, " {c} |");
        }
        html.push_str("</tr>\n");
        md_table.push('\n');
    }
    html.push_str("</table>\n<h2>Charts</h2>\n");
    for name in chart_names {
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg")))?;
        let svg = svg.trim_start_matches(|c| c != '<');
        let _ = write!(html, "<figure id=\"{n}\">\n{svg}\n<figcaption>{n}</figcaption></figure>\n", n = esc(name));
    }
    let _ = write!(html, "<h2>The experiment</h2>\n<pre>{}</pre>\n</body></html>\n", esc(&source));

    let mut md = format!("# {exp_name}\n\n## Findings\n\n");
    for f in &found {
        let _ = writeln!(md, "- {f}");
    }
    let _ = write!(
        md,
        "\n## Comparison\n\nMean ± 95% CI half-width over the replications (+above/-below where the interval stops at 0 or 100%); p50, p99 and p99.9 are latencies of successful intents, p99 all of every intent.\n\n{md_table}\n## Charts\n\n"
    );
    for name in chart_names {
        let _ = writeln!(md, "![{name}]({name}.png)\n");
    }
    let _ = write!(md, "## The experiment\n\n```toml\n{source}```\n");
    crate::output::write_atomic(&dir.join("report.html"), html.as_bytes(), &[])?;
    crate::output::write_atomic(&dir.join("report.md"), md.as_bytes(), &[])?;
    Ok(())
}
