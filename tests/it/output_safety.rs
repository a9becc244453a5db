//! Outputs never replace what they should not: every output is checked
//! against every input before anything is written; a folder in the way is
//! refused without leaving a temporary file; a symbolic link is followed
//! and stays a link; a FIFO or device is written through; endless inputs
//! are refused at the documented size.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const NORMAL_DAY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/normal-day.toml");
const SHORT: [&str; 4] = ["--set", "experiment.duration=3s", "--set", "experiment.warmup=0s"];

fn retrysim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrysim")).args(args).output().expect("start retrysim")
}

fn run(extra: &[&str]) -> Output {
    let mut args = vec!["run", NORMAL_DAY, "-q", "--no-plots"];
    args.extend(SHORT);
    args.extend(extra);
    retrysim(&args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn an_output_that_is_an_input_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // The experiment lives in the output folder under the name of one of
    // the outputs (experiment.toml), which run writes after summary.json.
    let policies = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
    let text = std::fs::read_to_string(NORMAL_DAY).unwrap().replace("../policies", policies.to_str().unwrap());
    let exp = out.join("experiment.toml");
    std::fs::write(&exp, &text).unwrap();
    let mut args = vec!["run", exp.to_str().unwrap(), "-q", "--no-plots", "--out", out.to_str().unwrap()];
    args.extend(SHORT);
    let o = retrysim(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("experiment.toml: it is an input file"), "{}", stderr(&o));
    assert_eq!(names(&out), ["experiment.toml"], "nothing may be written before the refusal");
    assert_eq!(std::fs::read_to_string(&exp).unwrap(), text);
}

#[test]
fn a_folder_in_place_of_the_trace_is_refused_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    std::fs::create_dir(&trace).unwrap();
    let out = dir.path().join("out");
    let o = run(&["--trace", trace.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("it is a folder"), "{}", stderr(&o));
    assert_eq!(names(dir.path()), ["trace.jsonl"], "no output folder, no temporary file");
}

#[cfg(unix)]
#[test]
fn a_trace_through_a_symlink_keeps_the_link_and_fills_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("trace.jsonl");
    std::os::unix::fs::symlink("kept/real.jsonl", &link).unwrap();
    std::fs::create_dir(dir.path().join("kept")).unwrap();
    let out = dir.path().join("out");
    let o = run(&["--trace", link.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    let trace = std::fs::read_to_string(dir.path().join("kept/real.jsonl")).unwrap();
    assert!(trace.lines().count() > 100 && trace.starts_with('{'));
    assert_eq!(names(&dir.path().join("kept")), ["real.jsonl"], "no temporary file beside the target");
}

#[cfg(unix)]
#[test]
fn a_trace_into_a_fifo_is_written_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo: PathBuf = dir.path().join("trace.pipe");
    if !Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: mkfifo is not available on this machine");
        return;
    }
    let mut reader = Command::new("sh")
        .arg("-c")
        .arg(format!("wc -l < '{}'", fifo.display()))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = dir.path().join("out");
    let o = run(&["--trace", fifo.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    use std::os::unix::fs::FileTypeExt;
    let still_fifo = std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo();
    if !still_fifo {
        let _ = reader.kill();
    }
    let lines = reader.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(still_fifo, "the FIFO was replaced by a regular file");
    let n: u64 = String::from_utf8_lossy(&lines.stdout).trim().parse().unwrap();
    assert!(n > 100, "{n} trace lines came through the FIFO");
}

#[cfg(unix)]
#[test]
fn endless_and_oversized_inputs_are_refused() {
    // A device never ends: refused before a byte is read.
    let o = retrysim(&["run", "/dev/zero", "-q", "--no-plots"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("/dev/zero") && stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    let o = run(&["--set", "clients.web.policy=/dev/zero", "--out", "/dev/null/never"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a regular file") && stderr(&o).contains("clients.web.policy"), "{}", stderr(&o));
    // A regular file above the limit (sparse: no disk used) is refused after 16 MB.
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.toml");
    std::fs::File::create(&big).unwrap().set_len(17 << 20).unwrap();
    let b = big.to_str().unwrap();
    for args in [vec!["run", b, "-q", "--no-plots"], vec!["export", b, "--to", "grpc"]] {
        let o = retrysim(&args);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("big.toml") && stderr(&o).contains("16 MB"), "{}", stderr(&o));
    }
}
