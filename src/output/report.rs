//! `report.html` (self-contained: inline SVG charts, no external files or
//! scripts) and `report.md` (PNG charts beside it) for a design review,
//! built from a finished run's, sweep's or tune's output folder.

mod answer;
mod page;
mod sweep;
mod tune;

pub use answer::{answer_sentences, question, unit, with_unit};

pub use page::{Page, esc};
pub use sweep::write_sweep_report;
pub use tune::write_tune_report;

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
    if let Some(q) = question(&summary, &source) {
        page.h2("Question");
        page.para(&q);
    }
    page.h2("Answer");
    page.list(&answer_sentences(&summary));
    page.para(&format!(
        "Seed {}, {} per variant, intents counted from {} s to {} s.",
        summary["experiment"]["seed"],
        crate::words::plural(
            variants.first().and_then(|v| v["replications"].as_u64()).unwrap_or(0) as usize,
            "replication"
        ),
        summary["experiment"]["warmup_s"],
        summary["experiment"]["duration_s"]
    ));
    page.h2("Findings");
    page.list(&super::findings::findings(&summary));
    page.h2("Comparison");
    page.para("Each cell is the mean ± the half-width of its 95% confidence interval (+above/-below where the interval stops at 0 or 100%); p50, p99 and p99.9 are latencies of successful intents, p99 all of every intent.");
    let show: Vec<String> = summary["experiment"]["show"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let answer: Vec<String> = summary["experiment"]["answer"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    // The terminal's columns, fitted to the same width (a page of 1280 px
    // holds about as much); the answer's first.
    let src = super::layout::Json(&variants);
    let layout = super::layout::layout(&src, &show, &answer, Some(super::layout::WIDTH));
    let mut all = super::layout::rows(&src, &layout.columns);
    let header = all.remove(0);
    let rows = all;
    for line in super::layout::layout_legend(&layout) {
        page.para(&line);
    }
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
