//! Before running, retrysim estimates the memory a command needs and
//! refuses one that would not fit, saying how much and what to change;
//! sweeps and tune keep only metrics per run, so their memory does not grow
//! with the number of runs.

use retrysim::config::load_experiment;
use retrysim::model::{RunOptions, simulate_with};
use std::path::Path;
use std::process::Command;

const QUICKSTART: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml");

fn retrysim(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_run_that_would_not_fit_in_memory_is_refused_with_the_estimate_and_what_to_change() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // 80 000 runs, each keeping a 10 ms time series of about a minute
    // (6 000 bins, about 30 MB) until the outputs are written: terabytes.
    let (code, err) = retrysim(&[
        "run",
        QUICKSTART,
        "--replications",
        "20000",
        "--set",
        "experiment.bin=10ms",
        "-q",
        "--no-plots",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    for needle in ["estimated", "TB of memory", "80000 runs", "available", "experiment.bin", "--force"] {
        assert!(err.contains(needle), "missing {needle:?} in: {err}");
    }
    assert!(!out.exists(), "a refused run writes nothing");
}

#[test]
fn a_sweep_that_would_not_fit_is_refused_before_it_loads_its_points() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let sweep = |workers: &str| {
        retrysim(&[
            "sweep",
            QUICKSTART,
            "--param",
            "experiment.load_scale=0.5..1.5:10000",
            "--param",
            workers,
            "-q",
            "--no-plots",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    // A million points of 4 variants x 5 replications, even at a few
    // kilobytes per run: the refusal must come before loading the points.
    let (code, err) = sweep("services.api.workers=1..100:100");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sweep: estimated") && err.contains("sweep points") && err.contains("--force"), "{err}");
    // A hundred million points: refused before anything is built.
    let (code, err) = sweep("services.api.workers=1..10000:10000");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("10000 x 10000 = 100000000 points; at most 1000000"), "{err}");
    assert!(!out.exists());
}

#[test]
fn a_tune_that_would_not_fit_is_refused() {
    let tune = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/tune-sdk.toml");
    let dir = tempfile::tempdir().unwrap();
    let emit = dir.path().join("tuned.toml");
    let (code, err) = retrysim(&[
        "tune",
        tune,
        "--candidates",
        "100000000",
        "--replications",
        "100000",
        "-q",
        "--emit",
        emit.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("tune: estimated") && err.contains("tune candidates") && err.contains("--force"), "{err}");
    assert!(!emit.exists());
}

#[test]
fn lean_runs_keep_the_same_metrics_and_drop_the_detail() {
    let exp = load_experiment(Path::new(QUICKSTART), &[]).unwrap();
    let s = &exp.variants[3];
    let full = simulate_with(s, 1, RunOptions::default());
    let lean = simulate_with(s, 1, RunOptions::metrics_only());
    assert_eq!(format!("{:?}", full.metrics), format!("{:?}", lean.metrics));
    assert_eq!(format!("{:?}", full.edges), format!("{:?}", lean.edges));
    assert!(full.series.rows().len() > 60 && full.latency.count() > 10_000);
    assert!(lean.series.rows().is_empty() && lean.latency.count() == 0 && lean.trace.is_empty());
}

#[test]
fn the_estimate_of_what_a_run_keeps_follows_its_bins_not_its_intents() {
    use retrysim::analysis::estimate::estimate;
    let load = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        load_experiment(Path::new(QUICKSTART), &sets).unwrap().variants.remove(0)
    };
    let base = estimate(&load(&[]), 0.0);
    let fine = estimate(&load(&["experiment.bin=10ms"]), 0.0);
    let busy = estimate(&load(&["experiment.load_scale=10"]), 0.0);
    // 100 times the bins: about 100 times the series.
    assert!(fine.kept > 50.0 * base.kept, "{} vs {}", fine.kept, base.kept);
    // 10 times the intents in the same bins: the same kept bytes.
    assert_eq!(busy.kept, base.kept);
    assert!(busy.intents > 9.0 * base.intents);
    // A lean result keeps metrics only: kilobytes.
    assert!(base.kept_lean < 50e3 && base.kept_lean < base.kept / 10.0);
}
