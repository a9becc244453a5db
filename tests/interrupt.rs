//! Ctrl-C: a run stops with status 130, writes nothing it has not finished,
//! and never leaves a temporary or half-written file behind.
#![cfg(unix)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peer/scenario.toml");

fn start(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("retrysim starts")
}

fn interrupt(child: &Child) {
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill runs");
    assert!(status.success());
}

/// Waits at most `limit` for the process; its exit code and stderr.
fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String) {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return (status.code(), err);
        }
        if t0.elapsed() > limit {
            child.kill().unwrap();
            panic!("retrysim did not stop within {limit:?} of Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn temporaries(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.contains(".tmp-")).collect()
}

#[test]
fn ctrl_c_during_the_simulation_stops_promptly_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // About 20 seconds of simulation on one core if it were not stopped.
    let child = start(&[
        "run",
        PEER,
        "--no-plots",
        "-q",
        "--replications",
        "2",
        "--jobs",
        "2",
        "--set",
        "experiment.duration=50000s",
        "--set",
        "experiment.bin=100s",
        "--out",
        out.to_str().unwrap(),
    ]);
    std::thread::sleep(Duration::from_millis(400));
    interrupt(&child);
    let (code, err) = finish(child, Duration::from_secs(10));
    assert_eq!(code, Some(130), "stderr: {err}");
    assert!(err.contains("interrupted"), "stderr: {err}");
    assert!(!out.join("summary.json").exists(), "a cut-short run must not be reported");
    assert!(temporaries(&out).is_empty());
}

#[test]
fn ctrl_c_while_writing_leaves_no_half_written_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let trace = out.join("trace.jsonl");
    // A trace of every attempt of 670 000 intents: about 180 MB, written
    // last, for several hundred milliseconds.
    let child = start(&[
        "run",
        PEER,
        "--no-plots",
        "-q",
        "--replications",
        "1",
        "--jobs",
        "1",
        "--set",
        "experiment.duration=1200s",
        "--trace",
        trace.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    // Interrupt as soon as the trace's temporary file exists.
    let t0 = Instant::now();
    while !temporaries(&out).iter().any(|n| n.starts_with(".trace.jsonl")) {
        assert!(t0.elapsed() < Duration::from_secs(60), "the trace was never written");
        std::thread::sleep(Duration::from_millis(1));
    }
    interrupt(&child);
    let (code, err) = finish(child, Duration::from_secs(30));
    assert_eq!(code, Some(130), "stderr: {err}");
    assert!(temporaries(&out).is_empty(), "left behind: {:?}", temporaries(&out));
    assert!(!trace.exists(), "the interrupted trace must not be moved into place");
    // What was finished before is complete.
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&summary).expect("summary.json is whole");
}

#[test]
fn an_interrupted_write_keeps_the_previous_file_and_no_run_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("summary.csv");
    retrysim::output::write_atomic(&path, b"before", &[]).unwrap();
    // As a first Ctrl-C does (this test binary's other tests run retrysim
    // as a child process, so the flag does not reach them).
    retrysim::interrupt::request();
    let e = retrysim::output::write_atomic(&path, b"after", &[]).unwrap_err();
    assert!(e.downcast_ref::<retrysim::interrupt::Interrupted>().is_some(), "{e:#}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "before");
    assert!(temporaries(dir.path()).is_empty());

    let exp = retrysim::config::load_experiment(Path::new(PEER), &[]).unwrap();
    let e = retrysim::analysis::run_all(&exp.variants, Some(2), 2).unwrap_err();
    assert!(e.downcast_ref::<retrysim::interrupt::Interrupted>().is_some(), "{e:#}");
}

/// `retrysim run … | head` closes stdout early: the process ends as other
/// command-line tools do (by SIGPIPE), never with a panic.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_the_process_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["run", concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml")])
        .args(["--replications", "1", "-q", "--no-plots", "--format", "json", "--out"])
        .arg(dir.path().join("out"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the JSON (about 150 KB) is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(13), "ended by SIGPIPE: {:?}", out.status);
}
