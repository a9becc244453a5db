//! The simulator's side of the runtime tests (`policy_runtime_e2e.rs`,
//! `runtime_matches_simulator.rs`): writes a policy and an experiment into
//! a directory, runs `retrysim run --trace` on them and reads the trace,
//! one JSON object per attempt (DESIGN §8: `t_s`, `attempt`, `outcome`,
//! `decision`, `wait_s`, `budget`, …).
//!
//! Test binaries include it with
//! `#[path = "support/simulator_trace.rs"] mod simulator_trace;`.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Writes `files` (name, text) into `dir`, runs the experiment among them
/// named `experiment` with `--trace`, and returns the trace's rows.
pub fn run_traced(dir: &Path, files: &[(&str, &str)], experiment: &str) -> Vec<Value> {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let trace = dir.join("trace.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["run", "-q", "--no-plots", "--out"])
        .arg(dir.join("out"))
        .arg("--trace")
        .arg(&trace)
        .arg(dir.join(experiment))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(&trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}
