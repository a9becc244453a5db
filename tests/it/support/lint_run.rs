//! `retrysim lint` through the real binary, for the lint tests (`lint.rs`,
//! `lint_hedging.rs`): both output formats of one experiment text, and the
//! rules the JSON report found.
//!
//! Test binaries include it with
//! `use crate::support::lint_run;`.
#![allow(dead_code)]

use std::process::Command;

/// Runs `retrysim lint` on `toml` (written to a temporary directory) with
/// extra arguments, once per format; checks that both exit alike and
/// returns the exit status, the table and the JSON report.
pub fn lint_cli(toml: &str, extra: &[&str]) -> (i32, String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("exp.toml");
    std::fs::write(&path, toml).unwrap();
    let run = |format: &str| {
        Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .arg("lint")
            .arg(&path)
            .args(extra)
            .args(["--format", format, "-q"])
            .output()
            .unwrap()
    };
    let json = run("json");
    let table = run("table");
    assert_eq!(json.status.code(), table.status.code());
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", String::from_utf8_lossy(&json.stdout), String::from_utf8_lossy(&json.stderr))
    });
    (table.status.code().unwrap(), String::from_utf8(table.stdout).unwrap(), report)
}

/// `--set KEY=VALUE` for each of `sets`, as arguments.
pub fn set_args<'a>(sets: &[&'a str]) -> Vec<&'a str> {
    sets.iter().flat_map(|s| ["--set", s]).collect()
}

/// The rule of each finding of a JSON report, in its order.
pub fn rules(report: &serde_json::Value) -> Vec<&str> {
    report["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap()).collect()
}
