//! A warm-up too short for what it must cover: lint's short-warmup rule
//! (an adaptive mechanism slower than the warm-up) and the MSER-5 check of
//! the bins before the first disturbance that `run` prints on stderr.

use std::process::Command;

const SLOW_START: &str = r#"
[experiment]
name = "slow start"
duration = "300s"
warmup = "0s"
seed = 3
replications = 4

[[clients]]
name = "web"
rate = "95/s"
target = "api"
operation = "get"
policy = { max_attempts = 1, per_try_timeout = "60s" }

[[operations]]
name = "get"
idempotent = true

[[services]]
name = "api"
workers = 1
service_time = { dist = "exp", mean = "10ms" }
"#;

fn retrysim(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_queue_that_fills_for_a_minute_is_no_baseline_after_zero_seconds() {
    // An M/M/1 queue at 95% load starts empty and takes tens of seconds
    // to reach its steady length (its relaxation time is about
    // 1 / (mu (1 - sqrt(rho))²) ≈ 15 s, and several of those): MSER-5 cuts
    // about a minute.
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("slow.toml");
    std::fs::write(&exp, SLOW_START).unwrap();
    let out = dir.path().join("out");
    let (e, o) = (exp.to_str().unwrap(), out.to_str().unwrap());
    let (code, err) = retrysim(&["run", e, "--out", o, "--no-plots"]);
    assert_eq!(code, 0, "{err}");
    let line = err.lines().find(|l| l.contains("MSER-5")).unwrap_or_else(|| panic!("no warning in: {err}"));
    assert!(line.contains("[short-warmup]") && line.contains("experiment.warmup"), "{line}");
    let secs: f64 = line.split("lasts about ").nth(1).unwrap().split('s').next().unwrap().parse().unwrap();
    assert!((20.0..=150.0).contains(&secs), "{line}");
    // A warm-up past the transient: no warning. -q silences progress, not findings.
    let (_, err) = retrysim(&["run", e, "--out", o, "--no-plots", "--set", "experiment.warmup=150s"]);
    assert!(!err.contains("MSER-5"), "{err}");
    let (_, err) = retrysim(&["run", e, "--out", o, "--no-plots", "-q"]);
    assert!(err.lines().any(|l| l.contains("[short-warmup]") && l.contains("MSER-5")), "{err}");
}

#[test]
fn lint_warns_when_the_warm_up_is_shorter_than_an_adaptive_window() {
    let root = env!("CARGO_MANIFEST_DIR");
    let exp = format!("{root}/experiments/adaptive-throttling.toml");
    let (_, out) = {
        let o = Command::new(env!("CARGO_BIN_EXE_retrysim")).args(["lint", &exp]).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
    };
    assert!(out.contains("short-warmup") && out.contains("SRE throttle's window"), "{out}");
    let o = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["lint", &exp, "--set", "experiment.warmup=120s", "--set", "experiment.duration=200s"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("short-warmup"), "{out}");
}
