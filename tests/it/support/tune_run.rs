//! `retrysim tune` with JSON output through the real binary, for the tune
//! tests (`tune_choice.rs`, `tune_space.rs`).
//!
//! Test binaries include it with
//! `use crate::support::tune_run;`.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Runs `retrysim tune PATH --format json -q --out DIR/out --emit
/// DIR/tuned.toml EXTRA...`; returns the exit code, stdout and stderr.
pub fn tune_json(path: &Path, dir: &Path, extra: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("tune")
        .arg(path)
        .args(["--format", "json", "-q", "--out"])
        .arg(dir.join("out"))
        .arg("--emit")
        .arg(dir.join("tuned.toml"))
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap(), stdout, stderr)
}
