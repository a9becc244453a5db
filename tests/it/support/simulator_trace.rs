//! The simulator's side of the runtime tests (`policy_runtime_e2e.rs`,
//! `runtime_matches_simulator.rs`, `hedged_runtime_matches_simulator.rs`):
//! the one-client experiment they trace ([`OneClient`]), a run of
//! `retrysim run --trace` on it and the trace it writes, one JSON object
//! per attempt (DESIGN §8: `t_s`, `attempt`, `outcome`, `decision`,
//! `wait_s`, `budget`, …).
//!
//! Test binaries include it with
//! `use crate::support::simulator_trace;`.
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// A millisecond in nanoseconds.
pub const MS: u64 = 1_000_000;

/// The trace's seconds (`t_s`, `wait_s`) in whole nanoseconds.
pub fn ns(secs: f64) -> u64 {
    (secs * 1e9).round() as u64
}

/// A client instance that sends its intents one after another, 50 ms
/// apart ([`OneClient::arrivals`]).
pub const ONE_AFTER_ANOTHER: &str = r#"mode = "closed"
count = 1
think_time = { dist = "const", value = "50ms" }"#;

/// A fault that answers 503 at once to a share `probability` of the
/// attempts to `api`.
pub fn random_503(probability: f64) -> String {
    format!(
        r#"[[faults]]
kind = "error"
target = "api"
status = 503
probability = {probability}
"#
    )
}

/// The experiment every runtime test traces: one client `one` calls the
/// idempotent operation `get` of the service `api` (constant work) under
/// one policy file, over a network of 1 ms each way, with some faults.
pub struct OneClient<'a> {
    /// The experiment's name.
    pub name: &'a str,
    /// How long it runs (`"3s"`).
    pub duration: &'a str,
    /// The client's `mode` and what goes with it, as TOML lines.
    pub arrivals: &'a str,
    /// The policy file, relative to the experiment.
    pub policy: &'a str,
    /// The service's workers.
    pub workers: u32,
    /// The service time of every request (`"1ms"`).
    pub work: &'a str,
    /// The `[[faults]]` tables.
    pub faults: &'a str,
}

impl OneClient<'_> {
    /// The experiment file's text.
    pub fn toml(&self) -> String {
        let OneClient { name, duration, arrivals, policy, workers, work, faults } = self;
        format!(
            r#"[experiment]
name = "{name}"
duration = "{duration}"
replications = 1

[network]
latency = {{ dist = "const", value = "1ms" }}

[[operations]]
name = "get"
idempotent = true

[[clients]]
name = "one"
{arrivals}
target = "api"
operation = "get"
policy = "{policy}"

[[services]]
name = "api"
workers = {workers}
service_time = {{ dist = "const", value = "{work}" }}

{faults}"#
        )
    }
}

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
