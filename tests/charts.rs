//! Charts are what they claim: PNG files of the documented size, SVG files
//! whose text carries the axes and the legend, one chart per kind, redrawn
//! from the output folder alone.

use retrysim::analysis::run_all;
use retrysim::charts::plot_dir;
use retrysim::config::load_experiment;
use std::path::Path;
use std::process::Command;

fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

fn run_quickstart(out: &Path) {
    let status = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args([
            "run",
            concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml"),
            "--replications",
            "2",
            "-q",
            "--no-plots",
            "--out",
        ])
        .arg(out)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn run_charts_are_pngs_and_svgs_with_axes_and_legends() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_quickstart(&run);
    let charts = tmp.path().join("charts");
    let names = plot_dir(&run, &charts).unwrap();
    for want in ["goodput", "attempts", "latency_cdf", "edges", "services", "effects", "queue_api", "utilization_api"] {
        assert!(names.iter().any(|n| n == want), "missing chart {want}: {names:?}");
    }
    let exp =
        load_experiment(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml")), &[]).unwrap();
    for name in &names {
        let (w, h) = png_size(&std::fs::read(charts.join(format!("{name}.png"))).unwrap());
        assert!(w >= 1200 && h >= 700, "{name}.png is {w}x{h}");
        let svg = std::fs::read_to_string(charts.join(format!("{name}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{name}.svg");
        // Every variant is in the legend of every chart.
        for v in &exp.variants {
            assert!(svg.contains(&v.variant), "{name}.svg lacks the legend entry {}", v.variant);
        }
    }
    let goodput = std::fs::read_to_string(charts.join("goodput.svg")).unwrap();
    assert!(goodput.contains("time (s)") && goodput.contains("successful intents per second"), "axis labels");
    let _ = run_all; // the run above went through the binary
}

#[test]
fn plotting_a_folder_that_is_not_an_output_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let e = plot_dir(tmp.path(), tmp.path()).unwrap_err();
    assert!(e.to_string().contains("no summary.json"), "{e}");
}

#[test]
fn the_report_is_self_contained_and_names_every_variant_and_chart() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_quickstart(&run);
    let status =
        Command::new(env!("CARGO_BIN_EXE_retrysim")).args(["report", run.to_str().unwrap(), "-q"]).status().unwrap();
    assert!(status.success());
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    let exp =
        load_experiment(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml")), &[]).unwrap();
    for v in &exp.variants {
        assert!(html.contains(&v.variant) && md.contains(&v.variant), "variant {} missing", v.variant);
    }
    // Every chart is embedded inline (no external files or scripts).
    for chart in ["goodput", "attempts", "latency_cdf", "edges", "services", "effects", "queue_api", "utilization_api"]
    {
        assert!(html.contains(&format!("<figure id=\"{chart}\">\n<svg")), "{chart} not inline");
        assert!(md.contains(&format!("({chart}.png)")), "{chart} not in report.md");
        assert!(run.join(format!("{chart}.png")).is_file());
    }
    assert_eq!(html.matches("<svg").count(), 8);
    assert!(!html.contains("<script") && !html.contains("src=\"") && !html.contains("href=\"http"));
    // The experiment as written, and findings from the numbers.
    assert!(html.contains("backoff + full jitter") && html.contains("[[variants]]"));
    assert!(html.contains("versus &quot;no retries&quot;"), "a finding against the baseline");
}
