//! `retrysim report` for every kind of output folder: a run, a sweep (knees,
//! charts with captions, every point with its interval) and a tune (the
//! winner and why, the front, the chart, scenario by scenario), written
//! where `--out` says; names with Markdown markup do not break report.md
//! or `--format markdown`.

use std::path::Path;
use std::process::{Command, Output};

const QUICKSTART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml");
const EXP_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments");

fn retrysim(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).current_dir(cwd).output().unwrap()
}

fn ok(o: &Output) {
    assert!(o.status.success(), "exit {:?}: {}", o.status.code(), String::from_utf8_lossy(&o.stderr));
}

/// Every table row of a Markdown document: its number of unescaped `|`.
fn pipes(row: &str) -> usize {
    let b = row.as_bytes();
    (0..b.len()).filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\')).count()
}

#[test]
fn a_sweep_report_has_knees_captions_and_every_point_with_its_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("sweep");
    ok(&retrysim(
        &[
            "sweep",
            QUICKSTART,
            "--param",
            "experiment.load_scale=0.6,0.9,1.2",
            "--replications",
            "2",
            "--set",
            "experiment.duration=35s",
            "-q",
            "--no-plots",
            "--out",
            sweep.to_str().unwrap(),
        ],
        tmp.path(),
    ));
    let review = tmp.path().join("review");
    ok(&retrysim(&["report", sweep.to_str().unwrap(), "--out", review.to_str().unwrap(), "-q"], tmp.path()));
    assert!(!sweep.join("report.html").exists(), "--out is where the report goes");
    let html = std::fs::read_to_string(review.join("report.html")).unwrap();
    let md = std::fs::read_to_string(review.join("report.md")).unwrap();
    assert!(html.contains("<h2>Knees</h2>"));
    let knees = md
        .lines()
        .filter(|l| l.starts_with("- \"") && (l.contains("experiment.load_scale = ") || l.contains("fails already")))
        .count();
    assert_eq!(knees, 4, "one knee per variant: {md}");
    assert_eq!(html.matches("<figure").count(), 5, "the five sweep charts");
    assert!(html.contains("against offered load (× nominal)"), "captions say what a chart shows");
    // 3 points × 4 variants, each cell with its interval.
    let rows =
        md.lines().filter(|l| l.starts_with("| 0.6 ") || l.starts_with("| 0.9 ") || l.starts_with("| 1.2 ")).count();
    assert_eq!(rows, 12, "{md}");
    assert!(md.lines().filter(|l| l.starts_with("| 0.6 ")).all(|l| l.contains('±')), "intervals in the table");
    assert!(review.join("sweep_success_rate.png").is_file(), "the PNGs beside report.md");
}

#[test]
fn a_variant_named_with_a_pipe_keeps_every_markdown_table_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(QUICKSTART)
        .unwrap()
        .replace("../policies/", &format!("{EXP_DIR}/../policies/"))
        .replace("name = \"no retries\"", "name = \"no | retries\"");
    assert!(text.contains("no | retries"));
    let exp = tmp.path().join("pipe.toml");
    std::fs::write(&exp, text).unwrap();
    let out = tmp.path().join("out");
    let o = retrysim(
        &[
            "run",
            exp.to_str().unwrap(),
            "--replications",
            "2",
            "--set",
            "experiment.duration=35s",
            "--format",
            "markdown",
            "--no-plots",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    ok(&o);
    let table = String::from_utf8_lossy(&o.stdout).into_owned();
    let width = pipes(table.lines().next().unwrap());
    assert!(table.lines().filter(|l| l.starts_with('|')).all(|l| pipes(l) == width), "{table}");
    assert!(table.contains("no \\| retries"));
    ok(&retrysim(&["report", out.to_str().unwrap(), "-q"], tmp.path()));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
    let width = pipes(rows[0]);
    assert!(rows.iter().all(|l| pipes(l) == width), "{md}");
    assert!(md.contains("no \\| retries"));
}

#[test]
fn a_tune_report_has_the_winner_the_front_the_chart_and_each_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(Path::new(EXP_DIR).join("tune-sdk.toml")).unwrap();
    let (head, _) = text.rsplit_once("[tune.space]").unwrap();
    let head = head
        .replace("../policies/", &format!("{EXP_DIR}/../policies/"))
        .replace("\"normal-day.toml\"", &format!("\"{EXP_DIR}/normal-day.toml\""))
        .replace("\"bad-day-spike.toml\"", &format!("\"{EXP_DIR}/bad-day-spike.toml\""))
        .replace("\"bad-day-brownout.toml\"", &format!("\"{EXP_DIR}/bad-day-brownout.toml\""));
    let tune = tmp.path().join("tune.toml");
    std::fs::write(&tune, format!("{head}[tune.space]\nmax_attempts = [1, 2, 3]\n")).unwrap();
    let out = tmp.path().join("out");
    let o = retrysim(
        &[
            "tune",
            tune.to_str().unwrap(),
            "--replications",
            "2",
            "--format",
            "json",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&o.stderr));
    let printed: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("tune --format json prints one JSON object");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tune.json")).unwrap()).unwrap();
    assert_eq!(printed, written, "tune.json is what --format json prints");
    assert!(out.join("pareto.svg").is_file());
    ok(&retrysim(&["report", out.to_str().unwrap(), "-q"], tmp.path()));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for want in ["The winner", "The Pareto front", "Scenario by scenario", "<figure id=\"pareto\">"] {
        assert!(html.contains(want), "{want} missing");
    }
    if printed["winner"].is_object() {
        assert!(html.contains("Chosen as:"));
    }
    // The pareto chart draws the constraints and the candidates that miss one.
    let svg = std::fs::read_to_string(out.join("pareto.svg")).unwrap();
    assert!(svg.contains("constraint: amplification"), "the amplification constraint is drawn");
    assert!(svg.contains("feasible candidates"), "feasible and infeasible candidates are told apart");
}
