//! The bad-input tests' case (`bad_input.rs`,
//! `bad_input_hedging_throttle_dists.rs`): a temporary folder holding an
//! experiment `exp.toml` and its policy `p.toml`, run through the real
//! binary, and the check that a run was refused as bad input.
//!
//! Test binaries include it with
//! `use crate::support::bad_input_case;`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use tempfile::TempDir;

/// A temporary folder with `exp.toml` and `p.toml`.
pub struct Case {
    dir: TempDir,
}

impl Case {
    /// A case of the experiment and the policy file given.
    pub fn with(experiment: &str, policy: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("exp.toml"), experiment).unwrap();
        std::fs::write(dir.path().join("p.toml"), policy).unwrap();
        Self { dir }
    }

    /// A file of the case's folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The run's output folder.
    pub fn out(&self) -> PathBuf {
        self.path("out")
    }

    /// `retrysim run <abs exp.toml> --out <abs out> -q EXTRA...`, run from
    /// the temporary folder.
    pub fn run(&self, extra: &[&str]) -> Output {
        let exp = self.path("exp.toml");
        let out = self.out();
        Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .current_dir(self.dir.path())
            .arg("run")
            .arg(&exp)
            .arg("--out")
            .arg(&out)
            .arg("-q")
            .args(extra)
            .output()
            .expect("failed to start retrysim")
    }

    /// Runs and checks that the run was refused as bad input: exit 2, no
    /// panic, a message starting `error: `, no output files. Returns stderr.
    pub fn refused(&self, extra: &[&str]) -> String {
        let o = self.run(extra);
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "retrysim panicked on bad input:\n{stderr}");
        assert_eq!(
            o.status.code(),
            Some(2),
            "expected exit status 2 (bad input), got {:?}\nstderr:\n{stderr}",
            o.status
        );
        assert!(stderr.starts_with("error: "), "the message should start with `error: `:\n{stderr}");
        assert!(!self.out().join("summary.json").exists(), "a refused run must not write summary.json");
        stderr
    }
}
