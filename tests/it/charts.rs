//! Charts are what they claim: PNG files of the documented size, SVG files
//! whose text carries the axes and the legend, one chart per kind, redrawn
//! from the output folder alone.

use retrysim::analysis::run_all;
use retrysim::charts::draw::{Chart, LineChart, SIZE, legend, line_layout, ranges};
use retrysim::charts::{PlotOptions, plot_dir, run_chart_plan};
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
    for want in ["goodput", "attempts", "latency_cdf", "edges", "queue_api", "utilization_api"] {
        assert!(names.iter().any(|n| n == want), "missing chart {want}: {names:?}");
    }
    // The quick start has no side-effect anomaly: no empty effects chart.
    assert!(!names.iter().any(|n| n == "effects"), "{names:?}");
    // One client edge into one service: the services chart would repeat edges.
    assert!(!names.iter().any(|n| n == "services"), "{names:?}");
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
    for chart in ["goodput", "attempts", "latency_cdf", "edges", "queue_api", "utilization_api"] {
        assert!(html.contains(&format!("<figure id=\"{chart}\">\n<svg")), "{chart} not inline");
        assert!(md.contains(&format!("({chart}.png)")), "{chart} not in report.md");
        assert!(run.join(format!("{chart}.png")).is_file());
    }
    assert_eq!(html.matches("<svg").count(), 6);
    assert!(html.contains("effects: no variant had a duplicate intent"), "the chart not drawn is named with why");
    assert!(html.contains("services: the same numbers as the edges chart"), "{html}");
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
    assert!(svg.contains("arrivals end (60 s)"), "no end-of-arrivals mark");
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
    // The charts, and the record of them (charts.json).
    assert_eq!(files, ["charts.json", "goodput.png", "goodput.svg"]);
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

fn run_exp(exp: &str, out: &Path, extra: &[&str]) {
    let path = format!("{}/experiments/{exp}.toml", env!("CARGO_MANIFEST_DIR"));
    let mut args = vec!["run", path.as_str(), "-q", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = retrysim(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn lines_of(plan: &[(String, Chart, Option<String>)], stem: &str) -> LineChart {
    match plan.iter().find(|p| p.0 == stem).map(|p| &p.1) {
        Some(Chart::Lines(c)) => c.clone(),
        _ => panic!("no line chart {stem}"),
    }
}

#[test]
fn time_axes_end_where_the_data_ends_and_nothing_after_the_arrivals_is_padding() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    // Arrivals end at 90 s; immediate retries keep the service busy to about 230 s.
    run_exp("metastable-spike", &run, &["--replications", "1", "--no-plots"]);
    let plan = run_chart_plan(&run, &PlotOptions::default()).unwrap();
    let goodput = lines_of(&plan, "goodput");
    let ((_, x1), _) = ranges(&goodput);
    let last = goodput.lines.iter().flat_map(|l| l.points.last().map(|p| p.0)).fold(0.0, f64::max);
    assert!(x1 <= last + 1.0 + 1e-9, "the axis runs to {x1} s, the data ends at {last} s");
    assert!(x1 < 100.0, "goodput's axis must end near the end of the arrivals (90 s), not at {x1} s");
    assert_eq!(goodput.marks.len(), 1);
    assert_eq!(goodput.marks[0].label, "arrivals end (90 s)");
    for l in &goodput.lines {
        // After the end of the arrivals a line goes on only with a real
        // drain, and never ends in a zero that only pads the file.
        let after: Vec<&(f64, f64)> = l.points.iter().filter(|p| p.0 >= 90.0).collect();
        assert!(after.last().is_none_or(|p| p.1 != 0.0), "{}: {after:?}", l.name);
        if l.name == "offered intents" {
            assert!(after.is_empty(), "offered intents end with the arrivals: {after:?}");
        }
        if ["shared retry budget", "LIFO queue", "adaptive LIFO + CoDel"].contains(&l.name.as_str()) {
            assert!(after.is_empty(), "{}: no fake collapse after the arrivals: {after:?}", l.name);
        }
    }
    // The drain of the busy service is drawn on its own chart, to its end.
    let util = lines_of(&plan, "utilization_api");
    let ((_, ux1), _) = ranges(&util);
    assert!(ux1 > 200.0, "the drain of immediate retries is drawn: {ux1}");
    // One legend entry per series: one for the offered intents, one per variant.
    let (_, (y0, y1)) = ranges(&goodput);
    let entries = legend(&goodput, y1 - y0);
    let names: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names.iter().filter(|n| n.starts_with("offered intents")).count(), 1, "{names:?}");
    assert_eq!(entries.len(), 1 + 6, "{names:?}");
    // The legend is outside the plot, below it, and no data point is under it.
    let l = line_layout(&goodput, SIZE);
    assert!(l.legend.y0 >= l.plot.y1 && !l.legend.intersects(&l.plot));
    assert!(l.plot.width() > SIZE.0 as i32 * 8 / 10, "the legend does not eat the plot: {:?}", l.plot);
    let ((x0, x1), (y0, y1)) = ranges(&goodput);
    for line in &goodput.lines {
        for p in &line.points {
            let px = l.plot.x0 + ((p.0 - x0) / (x1 - x0) * l.plot.width() as f64) as i32;
            let py = l.plot.y1 - ((p.1 - y0) / (y1 - y0) * l.plot.height() as f64) as i32;
            assert!(!l.legend.holds(px, py), "{} at {p:?} is under the legend", line.name);
            assert!(l.entries.iter().all(|e| !e.rect.holds(px, py)));
        }
    }
}

fn font_sizes(svg: &str) -> Vec<f64> {
    svg.split("font-size=\"").skip(1).filter_map(|t| t.split('"').next()?.parse().ok()).collect()
}

#[test]
fn projector_sizes_get_larger_text() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_quickstart(&run);
    let draw = |size: &str, out: &Path| {
        let o = retrysim(&[
            "plot",
            run.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--metric",
            "goodput",
            "--metric",
            "edges",
            "--size",
            size,
            "-q",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let (small, big) = (tmp.path().join("small"), tmp.path().join("big"));
    draw("1280x720", &small);
    draw("1920x1080", &big);
    for chart in ["goodput.svg", "edges.svg"] {
        let a = font_sizes(&std::fs::read_to_string(small.join(chart)).unwrap());
        let b = font_sizes(&std::fs::read_to_string(big.join(chart)).unwrap());
        let min = |v: &[f64]| v.iter().cloned().fold(f64::MAX, f64::min);
        let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
        // 1920x1080 is 1.5 times the default: so is every text.
        assert!(min(&b) >= min(&a) * 1.4 && max(&b) >= max(&a) * 1.4, "{chart}: {a:?} vs {b:?}");
        assert!(min(&b) >= 18.0, "{chart}: the smallest text at 1920x1080 is {} px", min(&b));
    }
}

#[test]
fn a_frontier_of_one_load_shades_only_the_measured_column_and_keys_every_class() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("frontier");
    let o = retrysim(&[
        "frontier",
        concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/frontier.toml"),
        "--trigger",
        "spike",
        "--size",
        "1..3:5",
        "--replications",
        "2",
        "--horizon",
        "60s",
        "--variant",
        "immediate retries",
        "--variant",
        "shared retry budget",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let svg = std::fs::read_to_string(out.join("frontier.svg")).unwrap();
    for key in ["recovers (stable)", "does not recover (vulnerable)", "blank: not measured", "boundary:"] {
        assert!(svg.contains(key), "the key lacks {key}");
    }
    // The shaded cells (the classes' fills) cover a tenth of each panel's x axis, not all of it.
    let c = retrysim::charts::frontier::read_frontier(&out).unwrap();
    for p in &c.panels {
        let xs: Vec<f64> = p.points.iter().map(|q| q.0).collect();
        let (a, b) = retrysim::charts::frontier::x_range(&xs);
        let cells = retrysim::charts::frontier::cells(p, c.y_min, c.y_max);
        let shaded = cells.iter().map(|c| c.x1 - c.x0).fold(0.0, f64::max);
        assert!(shaded <= (b - a) * 0.25, "{}: {shaded} of {}", p.name, b - a);
    }
}

#[test]
fn no_plots_removes_the_charts_an_earlier_run_drew_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_exp("quickstart", &run, &["--replications", "2"]);
    assert!(run.join("goodput.png").is_file() && run.join("charts.json").is_file());
    // A file of the user's own, and a chart the user changed.
    std::fs::write(run.join("notes.png"), "mine").unwrap();
    std::fs::write(run.join("latency_cdf.svg"), "<svg>edited by hand</svg>").unwrap();
    run_exp("quickstart", &run, &["--replications", "2", "--no-plots"]);
    let mut left: Vec<String> =
        std::fs::read_dir(&run).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    left.sort();
    assert_eq!(
        left,
        [
            "experiment.toml",
            "faults.csv",
            "latency_cdf.svg",
            "notes.png",
            "summary.csv",
            "summary.json",
            "timeseries.csv"
        ]
    );
    // Plots again: the charts and their record come back.
    run_exp("quickstart", &run, &["--replications", "2"]);
    assert!(run.join("goodput.svg").is_file() && run.join("charts.json").is_file());
}

/// Several client classes get a chart of each class's success per variant
/// (the total hides a design that serves one class by failing another);
/// one class does not.
#[test]
fn each_client_class_gets_its_success_bars_when_there_are_several() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_exp("priority-shedding", &run, &["--replications", "2", "--no-plots"]);
    let plan = run_chart_plan(&run, &PlotOptions::default()).unwrap();
    let (_, chart, skipped) = plan.iter().find(|p| p.0 == "classes").expect("a classes chart");
    assert!(skipped.is_none(), "{skipped:?}");
    let Chart::Bars(bars) = chart else { panic!("classes is a bar chart") };
    assert_eq!(bars.categories, ["background", "user"]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    for (s, v) in bars.series.iter().zip(summary["variants"].as_array().unwrap()) {
        assert_eq!(s.name, v["name"].as_str().unwrap());
        let user = v["clients"]["user"]["success_rate"]["mean"].as_f64().unwrap();
        assert_eq!(s.values[1].map(|b| b.mean), Some(user), "{s:?}");
    }
    // And each class's goodput over time, beside its offered intents; the
    // classes' columns of timeseries.csv add up to the total.
    let user = lines_of(&plan, "goodput_user");
    assert_eq!(user.lines[0].name, "offered intents", "{:?}", user.lines[0]);
    assert_eq!(user.lines.len(), 4);
    let mut rows = csv::Reader::from_path(run.join("timeseries.csv")).unwrap();
    let header = rows.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    let (total, user, background) = (col("goodput_per_s"), col("user.goodput_per_s"), col("background.goodput_per_s"));
    let (offered, user_offered, background_offered) =
        (col("offered_per_s"), col("user.offered_per_s"), col("background.offered_per_s"));
    for r in rows.records() {
        let r = r.unwrap();
        let x = |i: usize| r[i].parse::<f64>().unwrap();
        assert!((x(user) + x(background) - x(total)).abs() < 1e-6, "{r:?}");
        assert!((x(user_offered) + x(background_offered) - x(offered)).abs() < 1e-6, "{r:?}");
    }
    let one = tmp.path().join("one");
    run_exp("quickstart", &one, &["--replications", "1", "--no-plots"]);
    let plan = run_chart_plan(&one, &PlotOptions::default()).unwrap();
    let (_, _, skipped) = plan.iter().find(|p| p.0 == "classes").expect("planned");
    assert!(skipped.as_deref().is_some_and(|w| w.contains("one client class")), "{skipped:?}");
    assert!(!plan.iter().any(|p| p.0.starts_with("goodput_")), "one class has no goodput of its own");
}
