//! `report.html` (self-contained: inline SVG charts, no external files or
//! scripts) and `report.md` (PNG charts beside it) for a design review,
//! built from a finished run's, sweep's or tune's output folder.

mod page;
mod sweep;
mod tune;

pub use page::{Page, esc};
pub use sweep::write_sweep_report;
pub use tune::write_tune_report;

use super::columns::{Column, Shown, choose};
use super::table::cell;
use crate::analysis::Summary;
use crate::charts::Drawn;
use serde_json::Value;
use std::path::Path;

fn mean(v: &Value) -> Option<f64> {
    v.get("mean").and_then(Value::as_f64)
}

/// A metric object of summary.json as a [`Summary`]: its mean, interval
/// and per-replication values (the cells of recovery, of the yes/no
/// metrics and of counts that were all 0 are written from the values).
pub(crate) fn as_summary(m: &Value) -> Summary {
    let ci = m.get("ci95").and_then(|c| Some((c.get(0)?.as_f64()?, c.get(1)?.as_f64()?)));
    let values = m.get("values").and_then(Value::as_array).map(|a| a.iter().map(Value::as_f64).collect());
    Summary { mean: mean(m), ci95: ci, values: values.unwrap_or_default() }
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

/// Adds the charts (with their captions) and the list of charts not drawn.
pub(crate) fn charts_section(page: &mut Page, out: &Path, drawn: &Drawn) -> anyhow::Result<()> {
    page.h2("Charts");
    for (stem, caption) in &drawn.charts {
        page.figure(out, stem, caption)?;
    }
    if !drawn.skipped.is_empty() {
        let items: Vec<String> = drawn.skipped.iter().map(|(stem, why)| format!("{stem}: {why}")).collect();
        page.para("Not drawn, because there was nothing to show:");
        page.list(&items);
    }
    Ok(())
}

/// Writes `report.html` and `report.md` into `out` for the run in `dir`,
/// whose charts `drawn` are in `out`.
pub fn write_run_report(dir: &Path, out: &Path, drawn: &Drawn) -> anyhow::Result<()> {
    let summary: Value = crate::charts::read_summary(&dir.join("summary.json"))?;
    let exp_name = summary["experiment"]["name"].as_str().unwrap_or("experiment").to_string();
    let source = std::fs::read_to_string(dir.join("experiment.toml")).unwrap_or_default();
    let variants = summary["variants"].as_array().cloned().unwrap_or_default();
    let mut page = Page::new(&exp_name);
    page.para(&format!(
        "Seed {}, {} replication(s) per variant, intents counted from {} s to {} s.",
        summary["experiment"]["seed"],
        variants.first().map(|v| v["replications"].clone()).unwrap_or_default(),
        summary["experiment"]["warmup_s"],
        summary["experiment"]["duration_s"]
    ));
    page.h2("Findings");
    page.list(&super::findings::findings(&summary));
    page.h2("Comparison");
    page.para("Each cell is the mean ± the half-width of its 95% confidence interval (+above/-below where the interval stops at 0 or 100%); p50, p99 and p99.9 are latencies of successful intents, p99 all of every intent.");
    let columns = report_columns(&summary);
    let mut header = vec!["variant".to_string()];
    header.extend(columns.iter().map(|c| c.header.to_string()));
    let rows: Vec<Vec<String>> = variants
        .iter()
        .map(|v| {
            let mut r = vec![v["name"].as_str().unwrap_or("").to_string()];
            r.extend(columns.iter().map(|c| report_cell(v, c)));
            r
        })
        .collect();
    page.table(&header, &rows);
    charts_section(&mut page, out, drawn)?;
    page.h2("The experiment");
    page.code("toml", &source);
    page.write(out)
}

/// Writes the report of a run (kept for callers that draw into the folder itself).
pub fn write_report(dir: &Path, chart_names: &[String]) -> anyhow::Result<()> {
    let drawn = Drawn { charts: chart_names.iter().map(|n| (n.clone(), n.clone())).collect(), skipped: Vec::new() };
    write_run_report(dir, dir, &drawn)
}
