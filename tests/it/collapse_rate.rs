//! `retrysim collapse-rate`: the known case (an M/M/10 service at 70% load
//! with 50 ms per-try timeouts and 3 attempts collapses in roughly 2–3% of
//! 2-minute runs), multilevel splitting against direct simulation where
//! collapses are frequent, and splitting's cost where they are rare.

use serde_json::Value;
use std::process::Command;

const EXP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/collapse-rate.toml");

fn collapse_rate(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["collapse-rate", EXP, "-q", "--no-plots", "--format", "json", "--out"])
        .arg(dir.path())
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("collapse-rate.json")).unwrap()).unwrap();
    assert_eq!(doc, file, "stdout and collapse-rate.json differ");
    assert_eq!(doc["schema"], "retrysim.collapse_rate/1");
    doc["variants"][0].clone()
}

fn interval(v: &Value, key: &str) -> (f64, f64, f64) {
    let m = &v[key];
    (m["mean"].as_f64().unwrap(), m["ci95"][0].as_f64().unwrap(), m["ci95"][1].as_f64().unwrap())
}

#[test]
fn an_mm10_service_at_70_percent_collapses_in_about_2_to_3_percent_of_2_minute_runs() {
    let v = collapse_rate(&["--method", "splitting"]);
    assert_eq!(v["method"], "splitting");
    let (share, lo, hi) = interval(&v, "share_of_runs");
    eprintln!("known case: {:.2}% of 2-minute runs (95% {:.2}% to {:.2}%)", share * 100.0, lo * 100.0, hi * 100.0);
    // The interval must reach the 2-3% measured by two other simulators, and say something.
    assert!(lo <= 0.03 && hi >= 0.02, "{share} [{lo}, {hi}]");
    assert!(hi / lo < 4.0, "interval too wide to mean anything: [{lo}, {hi}]");
    let (rate, _, _) = interval(&v, "collapses_per_hour");
    assert!((share - (1.0 - (-rate * 120.0 / 3600.0).exp())).abs() < 1e-12);
}

#[test]
fn splitting_agrees_with_direct_simulation_where_collapses_are_frequent() {
    // At 77% load the service collapses several times an hour: countable.
    let load = "experiment.load_scale=1.1";
    let direct = collapse_rate(&["--set", load, "--method", "direct", "--hours", "2", "--max-hours", "2"]);
    let split = collapse_rate(&["--set", load, "--method", "splitting", "--trials", "100"]);
    let (d, dlo, dhi) = interval(&direct, "collapses_per_hour");
    let (s, slo, shi) = interval(&split, "collapses_per_hour");
    eprintln!(
        "77% load: direct {d:.2}/h [{dlo:.2}, {dhi:.2}] ({} events), splitting {s:.2}/h [{slo:.2}, {shi:.2}] ({} events)",
        direct["events"], split["events"]
    );
    assert!(direct["direct"]["collapses"].as_u64().unwrap() >= 10, "{direct}");
    assert!(slo <= dhi && dlo <= shi, "the intervals do not overlap");
}

#[test]
fn where_collapses_are_rare_splitting_reaches_50_percent_with_ten_times_fewer_events_than_direct() {
    let v = collapse_rate(&["--set", "experiment.load_scale=0.9", "--method", "splitting", "--trials", "400"]);
    let (rate, lo, hi) = interval(&v, "collapses_per_hour");
    let half = (hi - lo) / 2.0 / rate;
    // Direct simulation needs 18 collapses for ±50% (Garwood: 18 events give
    // [10.7, 28.4], a half-width of 49%), so 18 / rate healthy hours, and at
    // least one event (its arrival) per intent of 630/s.
    let intents_per_hour = 630.0 * 3600.0;
    // At least one event per intent (its arrival): a lower bound of direct's cost.
    let direct_events = 18.0 / rate * intents_per_hour;
    let events = v["events"].as_f64().unwrap();
    eprintln!(
        "63% load: {rate:.4}/h [{lo:.4}, {hi:.4}] (±{:.0}%) in {events:.3e} events; direct would need >= {direct_events:.3e}",
        half * 100.0
    );
    assert!(half <= 0.5, "±{half}");
    assert!(events * 10.0 <= direct_events, "{events} vs {direct_events}");
}

#[test]
fn out_is_the_folder_the_files_go_into_and_the_help_names_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out/collapse-rate");
    let o = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["collapse-rate", EXP, "-q", "--method", "direct", "--hours", "0.1", "--max-hours", "0.1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("collapse-rate.json").is_file());
    assert!(out.join("collapse_rate.png").is_file());
    assert!(!out.join("collapse-rate").exists(), "a folder nested in --out");
    let help = Command::new(env!("CARGO_BIN_EXE_retrysim")).args(["collapse-rate", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("[default: out/<experiment-stem>/collapse-rate/; out/collapse-rate/ for collapse-rate.toml]"),
        "{help}"
    );
}
