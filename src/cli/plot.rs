//! `retrysim plot` and `retrysim report`: charts and a design-review report
//! from a finished run's output folder, without simulating again.

use super::EXIT_OK;
use crate::charts::folder_of;
use crate::error::InputError;
use clap::Args;
use std::path::PathBuf;

/// `retrysim plot`.
#[derive(Args, Debug, Clone)]
pub struct PlotArgs {
    /// The output folder of a run or sweep (or its summary.json / sweep.json).
    pub dir: PathBuf,
    /// Where to write the charts [default: the folder itself].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Say nothing on stderr but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `retrysim report`.
#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// The output folder of a run (or its summary.json).
    pub dir: PathBuf,
    /// Say nothing on stderr but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

fn check_dir(dir: &std::path::Path) -> Result<(), InputError> {
    if !dir.is_dir() {
        return Err(InputError::file(
            dir.display().to_string(),
            "no such folder: give the output folder of a run or sweep",
        ));
    }
    let any = ["summary.json", "sweep.json", "frontier.json", "collapse-rate.json"];
    if !any.iter().any(|f| dir.join(f).is_file()) {
        return Err(InputError::file(
            dir.display().to_string(),
            "has no summary.json, sweep.json, frontier.json or collapse-rate.json: give the output folder of `retrysim run`, `sweep`, `frontier` or `collapse-rate`",
        ));
    }
    Ok(())
}

/// Runs the `plot` command.
pub fn run_plot(args: &PlotArgs) -> anyhow::Result<i32> {
    let dir = folder_of(&args.dir);
    check_dir(&dir)?;
    let out = args.out.clone().unwrap_or_else(|| dir.clone());
    let names = crate::charts::plot_path(&args.dir, &out)?;
    if !args.quiet {
        eprintln!("drew {} charts (PNG and SVG) into {}", names.len(), out.display());
    }
    Ok(EXIT_OK)
}

/// Runs the `report` command.
pub fn run_report(args: &ReportArgs) -> anyhow::Result<i32> {
    let dir = folder_of(&args.dir);
    check_dir(&dir)?;
    if !dir.join("summary.json").is_file() && crate::output::frontier_report::applies(&dir) {
        let names = crate::charts::plot_dir(&dir, &dir)?;
        crate::output::frontier_report::write_report(&dir, &names)?;
        if !args.quiet {
            eprintln!("wrote {} and {}", dir.join("report.html").display(), dir.join("report.md").display());
        }
        return Ok(EXIT_OK);
    }
    if !dir.join("summary.json").is_file() {
        return Err(InputError::file(
            dir.display().to_string(),
            "a report is made from the output folder of `retrysim run` (summary.json)",
        )
        .into());
    }
    let names = crate::charts::run_charts(&dir, &dir)?;
    crate::output::report::write_report(&dir, &names)?;
    if !args.quiet {
        eprintln!("wrote {} and {}", dir.join("report.html").display(), dir.join("report.md").display());
    }
    Ok(EXIT_OK)
}
