//! `retrysim plot` and `retrysim report`: charts and a design-review report
//! from a finished run's, sweep's or tune's output folder, without
//! simulating again.

use super::EXIT_OK;
use crate::charts::{PlotOptions, folder_of};
use crate::error::InputError;
use clap::Args;
use std::path::{Path, PathBuf};

/// `retrysim plot`.
#[derive(Args, Debug, Clone)]
pub struct PlotArgs {
    /// The output folder of a run or sweep (or its summary.json / sweep.json).
    pub dir: PathBuf,
    /// Where to write the charts [default: the folder itself].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Chart size in pixels, e.g. 1920x1080 [default: 1280x720].
    #[arg(long, value_name = "WxH", value_parser = parse_size)]
    pub size: Option<(u32, u32)>,
    /// Title for the charts drawn, instead of their own (best with one --metric).
    #[arg(long)]
    pub title: Option<String>,
    /// Draw only this variant (repeatable); each keeps its colour.
    #[arg(long = "variant", value_name = "NAME")]
    pub variants: Vec<String>,
    /// Draw only this chart (repeatable): a chart name such as goodput or
    /// sweep_success_rate, or a metric such as success_rate (on a sweep,
    /// any metric of sweep.json).
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// Say nothing on stderr but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `WxH`: 320x200 to 7680x4320.
fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let bad = || format!("expected WIDTHxHEIGHT in pixels, such as 1920x1080 (320x200 to 7680x4320), got \"{text}\"");
    let (w, h) = text.trim().split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (w.trim().parse().map_err(|_| bad())?, h.trim().parse().map_err(|_| bad())?);
    if !(320..=7680).contains(&w) || !(200..=4320).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}

/// `retrysim report`.
#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// The output folder of a run, sweep or tune (or its summary.json / sweep.json / tune.json).
    pub dir: PathBuf,
    /// Where to write report.html, report.md and the charts [default: the folder itself].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Say nothing on stderr but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

fn check_dir(dir: &Path, files: &[&str], what: &str) -> Result<(), InputError> {
    if !dir.is_dir() {
        return Err(InputError::file(
            dir.display().to_string(),
            format!("no such folder: give the output folder of {what}"),
        ));
    }
    if !files.iter().any(|f| dir.join(f).is_file()) {
        return Err(InputError::file(
            dir.display().to_string(),
            format!("has no {}: give the output folder of {what}", files.join(" or ")),
        ));
    }
    Ok(())
}

/// Runs the `plot` command.
pub fn run_plot(args: &PlotArgs) -> anyhow::Result<i32> {
    let dir = folder_of(&args.dir);
    check_dir(
        &dir,
        &["summary.json", "sweep.json", "frontier.json", "collapse-rate.json"],
        "`retrysim run`, `sweep`, `frontier` or `collapse-rate`",
    )?;
    let out = args.out.clone().unwrap_or_else(|| dir.clone());
    let opts = PlotOptions {
        size: args.size.unwrap_or(crate::charts::draw::SIZE),
        title: args.title.clone(),
        variants: args.variants.clone(),
        metrics: args.metrics.clone(),
    };
    let drawn = crate::charts::plot_path_with(&args.dir, &out, &opts)?;
    if !args.quiet {
        let n = drawn.charts.len();
        eprintln!("drew {n} chart{} (PNG and SVG) into {}", if n == 1 { "" } else { "s" }, out.display());
        for (stem, why) in &drawn.skipped {
            eprintln!("not drawn: {stem}: {why}");
        }
    }
    Ok(EXIT_OK)
}

/// What a report is made from.
enum Source {
    Run,
    Sweep,
    Tune,
}

/// The kind of `path`: named by its file, else the newest of the three files.
fn source_of(path: &Path) -> Option<Source> {
    match path.file_name().and_then(|n| n.to_str()) {
        Some("summary.json") if path.is_file() => return Some(Source::Run),
        Some("sweep.json") if path.is_file() => return Some(Source::Sweep),
        Some("tune.json") if path.is_file() => return Some(Source::Tune),
        _ => {}
    }
    let dir = folder_of(path);
    let modified = |f: &str| std::fs::metadata(dir.join(f)).and_then(|m| m.modified()).ok();
    [("summary.json", Source::Run), ("sweep.json", Source::Sweep), ("tune.json", Source::Tune)]
        .into_iter()
        .filter_map(|(f, s)| modified(f).map(|t| (t, s)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, s)| s)
}

/// Runs the `report` command.
pub fn run_report(args: &ReportArgs) -> anyhow::Result<i32> {
    let dir = folder_of(&args.dir);
    let what = "`retrysim run`, `sweep`, `tune`, `frontier` or `collapse-rate`";
    check_dir(&dir, &["summary.json", "sweep.json", "tune.json", "frontier.json", "collapse-rate.json"], what)?;
    let out = args.out.clone().unwrap_or_else(|| dir.clone());
    if source_of(&args.dir).is_none() && crate::output::frontier_report::applies(&dir) {
        let names = crate::charts::plot_dir(&dir, &out)?;
        crate::output::frontier_report::write_report(&dir, &out, &names)?;
        if !args.quiet {
            eprintln!("wrote {} and {}", out.join("report.html").display(), out.join("report.md").display());
        }
        return Ok(EXIT_OK);
    }
    let opts = PlotOptions::default();
    match source_of(&args.dir) {
        Some(Source::Run) => {
            let drawn = crate::charts::run_charts_with(&dir, &out, &opts)?;
            crate::output::report::write_run_report(&dir, &out, &drawn)?;
        }
        Some(Source::Sweep) => {
            let drawn = crate::charts::sweep_charts_with(&dir, &out, &opts)?;
            crate::output::report::write_sweep_report(&dir, &out, &drawn)?;
        }
        Some(Source::Tune) => crate::output::report::write_tune_report(&dir, &out)?,
        None => {
            return Err(InputError::file(dir.display().to_string(), format!("not the output folder of {what}")).into());
        }
    }
    if !args.quiet {
        eprintln!("wrote {} and {}", out.join("report.html").display(), out.join("report.md").display());
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_are_width_by_height_within_limits() {
        assert_eq!(parse_size("1920x1080"), Ok((1920, 1080)));
        assert!(parse_size("1920").is_err());
        assert!(parse_size("10x10").is_err());
    }
}
