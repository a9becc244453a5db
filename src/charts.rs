//! Charts for design reviews, redrawn from a finished run's or sweep's
//! output folder (`summary.json`, `timeseries.csv`, `faults.csv`, or
//! `sweep.json`), so `retrysim plot` needs no new simulation.

pub mod bars;
pub mod draw;
pub mod frontier;
pub mod layout;
pub mod names;
pub mod record;
mod run;
pub mod style;
mod summary_check;
mod sweep;
pub mod ticks;

use draw::{Chart, save_sized};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What `retrysim plot` may narrow or change.
#[derive(Debug, Clone)]
pub struct PlotOptions {
    /// Pixels, width by height.
    pub size: (u32, u32),
    /// A title for every chart drawn instead of its own.
    pub title: Option<String>,
    /// Only these variants (empty: all); each keeps its colour.
    pub variants: Vec<String>,
    /// Only the charts of these metrics or names (empty: all).
    pub metrics: Vec<String>,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions { size: draw::SIZE, title: None, variants: Vec::new(), metrics: Vec::new() }
    }
}

/// A chart to write: its file stem, the metric or column it shows, a
/// caption saying what it shows, and the chart.
pub(crate) struct Planned {
    pub stem: String,
    pub metric: String,
    pub caption: String,
    pub chart: Chart,
}

/// What was drawn, with captions, and what was not, with why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Drawn {
    /// (file stem, caption).
    pub charts: Vec<(String, String)>,
    /// (file stem, why it was not drawn).
    pub skipped: Vec<(String, String)>,
}

impl Drawn {
    /// The stems drawn.
    pub fn names(&self) -> Vec<String> {
        self.charts.iter().map(|c| c.0.clone()).collect()
    }
}

/// Finds the folder of a run or sweep from a folder or a path to its
/// `summary.json` / `sweep.json`.
pub fn folder_of(path: &Path) -> PathBuf {
    if path.is_file() { path.parent().map(Path::to_path_buf).unwrap_or_default() } else { path.to_path_buf() }
}

/// What kind of output a folder holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Run,
    Sweep,
}

/// The kind of the output in `path` (a folder, or its `summary.json` /
/// `sweep.json`): with both files, the newer.
pub fn kind_of(path: &Path) -> Option<Kind> {
    match path.file_name().and_then(|n| n.to_str()) {
        Some("sweep.json") if path.is_file() => return Some(Kind::Sweep),
        Some("summary.json") if path.is_file() => return Some(Kind::Run),
        _ => {}
    }
    let dir = folder_of(path);
    let modified = |f: &str| std::fs::metadata(dir.join(f)).and_then(|m| m.modified()).ok();
    match (modified("summary.json"), modified("sweep.json")) {
        (Some(run), Some(sweep)) if sweep > run => Some(Kind::Sweep),
        (Some(_), _) => Some(Kind::Run),
        (None, Some(_)) => Some(Kind::Sweep),
        (None, None) => None,
    }
}

/// Draws every chart for the run or sweep in `dir` into `out`; returns the
/// chart names (each written as `.png` and `.svg`).
pub fn plot_dir(dir: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
    Ok(plot_path_with(dir, out, &PlotOptions::default())?.names())
}

/// Draws the charts of `path`: a run or sweep folder, or its `summary.json`
/// or `sweep.json` (which picks the kind when a folder holds both).
pub fn plot_path(path: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
    Ok(plot_path_with(path, out, &PlotOptions::default())?.names())
}

/// [`plot_path`] with options.
pub fn plot_path_with(path: &Path, out: &Path, opts: &PlotOptions) -> anyhow::Result<Drawn> {
    let dir = folder_of(path);
    match kind_of(path) {
        Some(Kind::Run) => run_charts_with(&dir, out, opts),
        Some(Kind::Sweep) => sweep_charts_with(&dir, out, opts),
        None if dir.join("frontier.json").is_file() => Ok(named(frontier::frontier_chart_sized(&dir, out, opts.size)?)),
        None if dir.join("collapse-rate.json").is_file() => Ok(named(frontier::collapse_chart(&dir, out)?)),
        None => anyhow::bail!(
            "{}: no summary.json, sweep.json, frontier.json or collapse-rate.json: not the output folder of a run, sweep, frontier or collapse-rate",
            dir.display()
        ),
    }
}

/// Charts drawn by a module that names them without captions.
fn named(stems: Vec<String>) -> Drawn {
    Drawn { charts: stems.into_iter().map(|s| (s.clone(), s)).collect(), skipped: Vec::new() }
}

/// Draws the charts of the run in `dir` into `out`.
pub fn run_charts(dir: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
    Ok(run_charts_with(dir, out, &PlotOptions::default())?.names())
}

/// [`run_charts`] with options.
pub fn run_charts_with(dir: &Path, out: &Path, opts: &PlotOptions) -> anyhow::Result<Drawn> {
    let planned = run::plan(dir, opts)?;
    finish(planned, out, opts, record::RUN)
}

/// The charts of the run in `dir` as they would be drawn, each with its
/// stem and, for one that would not be drawn, why (to inspect or test
/// what a chart shows without drawing it).
pub fn run_chart_plan(dir: &Path, opts: &PlotOptions) -> anyhow::Result<Vec<(String, Chart, Option<String>)>> {
    Ok(run::plan(dir, opts)?.into_iter().map(|(p, why)| (p.stem, p.chart, why)).collect())
}

/// Draws the charts of the sweep in `dir` into `out`.
pub fn sweep_charts(dir: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
    Ok(sweep_charts_with(dir, out, &PlotOptions::default())?.names())
}

/// [`sweep_charts`] with options.
pub fn sweep_charts_with(dir: &Path, out: &Path, opts: &PlotOptions) -> anyhow::Result<Drawn> {
    let planned = sweep::plan(dir, opts)?;
    finish(planned, out, opts, record::SWEEP)
}

/// Whether a chart is one that `--metric` asked for.
fn wanted(p: &Planned, metrics: &[String]) -> bool {
    metrics.is_empty()
        || metrics.iter().any(|m| *m == p.stem || *m == p.metric || p.stem.strip_prefix("sweep_") == Some(m.as_str()))
}

/// Writes the charts asked for, and records them in `charts.json` as drawn
/// from `from`; an empty one is not drawn but named with why.
fn finish(
    planned: Vec<(Planned, Option<String>)>,
    out: &Path,
    opts: &PlotOptions,
    from: &str,
) -> anyhow::Result<Drawn> {
    let mut drawn = Drawn::default();
    let known: Vec<String> = planned.iter().flat_map(|(p, _)| [p.stem.clone(), p.metric.clone()]).collect();
    for m in &opts.metrics {
        if !known.contains(m) && !known.iter().any(|k| k.strip_prefix("sweep_") == Some(m.as_str())) {
            let mut names: Vec<String> = planned.iter().map(|(p, _)| p.stem.clone()).collect();
            names.dedup();
            return Err(crate::error::InputError::file(
                format!("--metric {m}"),
                format!("no such chart or metric here; the charts are: {}", names.join(", ")),
            )
            .into());
        }
    }
    for (mut p, empty_reason) in planned {
        if !wanted(&p, &opts.metrics) {
            continue;
        }
        if let Some(why) = empty_reason.or_else(|| p.chart.is_empty().then(|| "nothing to draw".to_string())) {
            drawn.skipped.push((p.stem, why));
            continue;
        }
        if let Some(t) = &opts.title {
            *p.chart.title_mut() = t.clone();
        }
        save_sized(&p.chart, out, &p.stem, opts.size)?;
        drawn.charts.push((p.stem, p.caption));
    }
    record::add(out, from, &drawn.names())?;
    Ok(drawn)
}

/// Checks `--variant` names against the variants of the folder.
pub(crate) fn check_variants(opts: &PlotOptions, names: &[String]) -> anyhow::Result<()> {
    for v in &opts.variants {
        if !names.contains(v) {
            return Err(crate::error::InputError::file(
                format!("--variant {v}"),
                format!("no such variant in this folder; it has: {}", names.join(", ")),
            )
            .into());
        }
    }
    Ok(())
}

/// Whether variant `name` is drawn.
pub(crate) fn shown(opts: &PlotOptions, name: &str) -> bool {
    opts.variants.is_empty() || opts.variants.iter().any(|v| v == name)
}

/// A sweep value on a numeric axis: a number, a rate (per second) or a
/// duration (seconds).
pub(crate) fn axis_value(text: &str) -> Option<f64> {
    let t = text.trim().trim_matches('"');
    t.parse::<f64>()
        .ok()
        .or_else(|| t.contains('/').then(|| crate::config::units::parse_rate(t).ok()).flatten())
        .or_else(|| crate::config::units::parse_duration(t).ok().map(crate::engine::to_secs_f64))
}

/// Reads a `summary.json` and checks the types of what `plot` and
/// `report` read from it ([`summary_check::check`]): a field of the wrong
/// type is an error naming the file and the field, never skipped.
pub(crate) fn read_summary(path: &Path) -> anyhow::Result<Value> {
    let doc = read_json(path)?;
    summary_check::check(&doc)
        .map_err(|(field, what)| crate::error::InputError::field(path.display().to_string(), field, what))?;
    Ok(doc)
}

pub(crate) fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text = crate::config::read::read_text(path, crate::config::read::MAX_DATA_BYTES)
        .map_err(|e| crate::error::InputError::file(path.display().to_string(), format!("cannot read it: {e}")))?;
    serde_json::from_str(&text)
        .map_err(|e| crate::error::InputError::file(path.display().to_string(), format!("not valid JSON: {e}")).into())
}
