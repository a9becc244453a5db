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
    for want in ["goodput", "attempts", "latency_cdf", "edges", "services", "queue_api", "utilization_api"] {
        assert!(names.iter().any(|n| n == want), "missing chart {want}: {names:?}");
    }
    // The quick start has no side-effect anomaly: no empty effects chart.
    assert!(!names.iter().any(|n| n == "effects"), "{names:?}");
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
    for chart in ["goodput", "attempts", "latency_cdf", "edges", "services", "queue_api", "utilization_api"] {
        assert!(html.contains(&format!("<figure id=\"{chart}\">\n<svg")), "{chart} not inline");
        assert!(md.contains(&format!("({chart}.png)")), "{chart} not in report.md");
        assert!(run.join(format!("{chart}.png")).is_file());
    }
    assert_eq!(html.matches("<svg").count(), 7);
    assert!(html.contains("effects: no variant had a duplicate intent"), "the chart not drawn is named with why");
    assert!(!html.contains("<script") && !html.contains("src=\"") && !html.contains("href=\"http"));
    // The experiment as written, and findings from the numbers.
    assert!(html.contains("backoff + full jitter") && html.contains("[[variants]]"));
    assert!(html.contains("versus &quot;no retries&quot;"), "a finding against the baseline");
}

fn retrysim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).output().unwrap()
}

#[test]
fn time_charts_draw_the_drain_and_mark_the_end_of_the_arrivals() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_quickstart(&run);
    plot_dir(&run, &run).unwrap();
    let svg = std::fs::read_to_string(run.join("goodput.svg")).unwrap();
    // The quick start's arrivals end at 60 s; the drain after it is drawn and the end marked.
    assert!(svg.contains("end of arrivals (60 s)"), "no end-of-arrivals mark");
    assert!(svg.contains("offered intents"), "the offered reference line is in the legend");
}

#[test]
fn plot_options_make_one_chart_for_one_slide() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_quickstart(&run);
    let slide = tmp.path().join("slide");
    let out = retrysim(&[
        "plot",
        run.to_str().unwrap(),
        "--out",
        slide.to_str().unwrap(),
        "--metric",
        "goodput",
        "--size",
        "1920x1080",
        "--title",
        "Spikes: who keeps serving",
        "--variant",
        "no retries",
        "--variant",
        "backoff + full jitter",
        "-q",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let files: Vec<String> =
        std::fs::read_dir(&slide).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let mut files = files;
    files.sort();
    assert_eq!(files, ["goodput.png", "goodput.svg"]);
    assert_eq!(png_size(&std::fs::read(slide.join("goodput.png")).unwrap()), (1920, 1080));
    let svg = std::fs::read_to_string(slide.join("goodput.svg")).unwrap();
    assert!(svg.contains("Spikes: who keeps serving"));
    assert!(svg.contains("backoff + full jitter") && !svg.contains("immediate retries"), "only the variants asked for");
    // Unknown names are bad input, with what is allowed.
    let bad = retrysim(&["plot", run.to_str().unwrap(), "--out", slide.to_str().unwrap(), "--metric", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("goodput"), "names the charts");
    let bad = retrysim(&["plot", run.to_str().unwrap(), "--variant", "nobody"]);
    assert_eq!(bad.status.code(), Some(2));
    let bad = retrysim(&["plot", run.to_str().unwrap(), "--size", "big"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_two_parameter_sweep_is_drawn_as_small_multiples_with_every_slice() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sweep");
    let status = retrysim(&[
        "sweep",
        concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml"),
        "--param",
        "experiment.load_scale=0.6,1.0",
        "--param",
        "services.api.workers=6,8,12",
        "--replications",
        "1",
        "--set",
        "experiment.duration=35s",
        "--variant",
        "no retries",
        "--variant",
        "immediate retries",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let svg = std::fs::read_to_string(out.join("sweep_success_rate.svg")).unwrap();
    for w in ["6", "8", "12"] {
        assert!(svg.contains(&format!("workers at api = {w}")), "panel for workers = {w} missing");
    }
    assert!(svg.contains("offered load (× nominal)"), "human axis name");
}
