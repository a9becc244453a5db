//! A queue full of requests that are answered the moment they get a worker
//! (ledger replays of one key, 409s, 422s) is served iteratively: each such
//! answer frees its worker, and the next queued request starts in the same
//! loop instead of one stack frame deeper. These experiments used to end in
//! a stack overflow (exit 134), and with `--jobs 2` (smaller worker-thread
//! stacks) where `--jobs 1` finished.

use std::path::Path;
use std::process::{Command, Output};

/// 1500 intents/s with a key against 32 workers of 50 ms (capacity 640/s):
/// the queue grows to thousands of retries of keys already completed, each
/// a replay answered at once.
const REPLAY_STORM: &str = r#"
[experiment]
duration = "60s"
replications = 1
[[clients]]
name = "c"
rate = "1500/s"
target = "orders"
idempotency_key = true
policy = { max_attempts = 8, per_try_timeout = "1s", deadline = "30s", retry_on = ["timeout"], backoff = { kind = "exponential", base = "100ms", cap = "4s", jitter = "full" } }
[[services]]
name = "orders"
workers = 32
service_time = { dist = "exp", mean = "50ms" }
idempotency = {}
"#;

fn retrysim(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrysim")).current_dir(cwd).args(args).output().expect("start retrysim")
}

fn assert_exit(o: &Output, allowed: &[i32], what: &str) {
    assert!(
        o.status.code().is_some_and(|c| allowed.contains(&c)),
        "{what}: exit {:?} (allowed {allowed:?})\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_queue_of_replays_does_not_overflow_the_stack_in_run_sweep_or_audit() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("storm.toml"), REPLAY_STORM).expect("write");
    let run = retrysim(&["run", "storm.toml", "--out", "run", "-q", "--no-plots", "--format", "json"], dir.path());
    assert_exit(&run, &[0], "run");
    // The storm is real: most attempts are retries of keys already done.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("run/summary.json")).expect("summary")).expect("json");
    let attempts = summary["variants"][0]["metrics"]["attempts_per_intent"]["mean"].as_f64().expect("attempts");
    assert!(attempts > 5.0, "attempts per intent {attempts}: the scenario no longer builds a queue of retries");

    let sweep = retrysim(
        &["sweep", "storm.toml", "--param", "services.orders.workers=32,40", "--out", "sweep", "-q", "--no-plots"],
        dir.path(),
    );
    assert_exit(&sweep, &[0], "sweep");
    // audit checks invariants: it may find failures (exit 1), but it must finish.
    let audit = retrysim(&["audit", "storm.toml", "--out", "audit", "-q"], dir.path());
    assert_exit(&audit, &[0, 1], "audit");
}

#[test]
fn a_replay_storm_runs_on_a_small_stack() {
    // The library entry point on a thread with a 256 KiB stack: a recursion
    // as deep as the queue (thousands of frames) cannot fit in it.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("storm.toml");
    std::fs::write(&path, REPLAY_STORM).expect("write");
    let exp = retrysim::config::load_experiment(&path, &["experiment.duration=\"20s\"".into()]).expect("loads");
    let result = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || retrysim::model::simulate(&exp.variants[0], 0))
        .expect("spawn")
        .join()
        .expect("the run finishes");
    let replays = result.metrics.get("ledger_replays").copied().flatten().expect("a ledger counts replays");
    assert!(replays > 1000.0, "only {replays} replays: the scenario no longer builds a queue of replays");
}

#[test]
fn crash_recovery_at_two_and_a_half_times_the_load_gives_the_same_outputs_with_any_jobs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    let mut outs = Vec::new();
    for jobs in ["1", "2"] {
        let out = dir.path().join(format!("jobs{jobs}"));
        let o = retrysim(
            &[
                "run",
                "experiments/crash-recovery.toml",
                "--set",
                "experiment.load_scale=2.5",
                "--replications",
                "1",
                "--jobs",
                jobs,
                "--no-plots",
                "-q",
                "--out",
                out.to_str().expect("utf-8 path"),
            ],
            root,
        );
        assert_exit(&o, &[0], &format!("--jobs {jobs}"));
        outs.push(out);
    }
    for name in ["summary.json", "timeseries.csv"] {
        let a = std::fs::read(outs[0].join(name)).expect("jobs 1 output");
        let b = std::fs::read(outs[1].join(name)).expect("jobs 2 output");
        assert!(a == b, "{name} differs between --jobs 1 and --jobs 2");
    }
}
