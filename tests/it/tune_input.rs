//! `tune` on bad input and on absurd searches: every mistake in `[tune]`
//! is exit 2 naming the file, the field and what is allowed (never a
//! silent default); a search of millions of candidates is refused by the
//! memory estimate before any candidate is made, and stays interruptible.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EXP_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments");

/// normal-day.toml with the `[tune]` table `tune`, in `dir`.
fn tune_file(dir: &Path, tune: &str) -> PathBuf {
    let text = std::fs::read_to_string(Path::new(EXP_DIR).join("normal-day.toml"))
        .unwrap()
        .replace("../policies/", &format!("{EXP_DIR}/../policies/"));
    let path = dir.join("tune.toml");
    std::fs::write(&path, format!("{text}\n[tune]\n{tune}\n")).unwrap();
    path
}

fn tune(path: &Path, dir: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("tune")
        .arg(path)
        .args(["-q", "--no-plots", "--replications", "1", "--out"])
        .arg(dir.join("out"))
        .args(extra)
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

const EDGE: &str = "edge = \"clients.web.policy\"\n";
const SPACE: &str = "[tune.space]\nmax_attempts = [1, 2]\n";

#[test]
fn an_objective_that_is_not_a_string_is_refused_not_replaced_by_the_default() {
    for objective in ["[]", "5", "\"maximize\"", "\"maximise success_rate\"", "\"maximize succes_rate\""] {
        let tmp = tempfile::tempdir().unwrap();
        let path = tune_file(tmp.path(), &format!("{EDGE}objective = {objective}\n{SPACE}"));
        let (code, out) = tune(&path, tmp.path(), &[]);
        assert_eq!(code, Some(2), "objective = {objective}: {out}");
        assert!(out.contains(&path.display().to_string()), "names the file: {out}");
        assert!(out.contains("tune.objective"), "{objective}: {out}");
        assert!(out.contains("maximize METRIC") || out.contains("unknown metric"), "says what is allowed: {out}");
        assert!(!tmp.path().join("out").exists(), "nothing written");
    }
}

#[test]
fn every_field_of_the_tune_table_is_checked_before_anything_runs() {
    let cases: [(&str, &str, &str); 11] = [
        ("constraints = \"amplification <= 1.5\"\n", "tune.constraints", "a list of strings"),
        ("constraints = [1.5]\n", "tune.constraints[0]", "each constraint is a string"),
        ("constraints = [\"amplification =< 1.5\"]\n", "tune.constraints[0]", "OP one of"),
        ("constraints = [\"amplification <= inf\"]\n", "tune.constraints[0]", "finite number"),
        ("scenarios = \"normal-day.toml\"\n", "tune.scenarios", "a non-empty list of experiment files"),
        ("scenarios = [\"/nonexistent/day.toml\"]\n", "", "cannot read"),
        ("", "tune.space.\"max_attempts\"", "not allowed"),
        ("", "tune.space.\"backoff.bass\"", "not allowed"),
        ("", "tune.space.\"backoff.base\"", "range"),
        ("edges = [\"clients.web.policy\"]\n", "tune.edges", "not both"),
        ("", "tune.space.\"max_attempts\"", "listed twice"),
    ];
    let spaces = [
        SPACE.to_string(),
        SPACE.to_string(),
        SPACE.to_string(),
        SPACE.to_string(),
        SPACE.to_string(),
        SPACE.to_string(),
        "[tune.space]\nmax_attempts = [0, 2]\n".into(),
        "[tune.space]\n\"backoff.bass\" = [\"25ms\"]\n".into(),
        "[tune.space]\n\"backoff.base\" = \"1s..25ms\"\n".into(),
        SPACE.to_string(),
        "[tune.space]\nmax_attempts = [2, 2]\n".into(),
    ];
    for ((extra, field, needle), space) in cases.iter().zip(&spaces) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tune_file(tmp.path(), &format!("{EDGE}{extra}{space}"));
        let (code, out) = tune(&path, tmp.path(), &[]);
        assert_eq!(code, Some(2), "{extra}{space}: {out}");
        assert!(
            out.contains(field) && out.contains(needle),
            "{extra}{space}: expected {field} and {needle:?} in: {out}"
        );
        assert!(!out.contains("panicked"), "{out}");
    }
}

#[test]
fn a_scenario_without_the_tuned_edge_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_file(tmp.path(), &format!("{EDGE}scenarios = [\"{EXP_DIR}/thundering-herd.toml\"]\n{SPACE}"));
    let (code, out) = tune(&path, tmp.path(), &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("tune.scenarios[0]") && out.contains("thundering-herd.toml"), "{out}");
}

#[test]
fn a_recovery_constraint_without_a_scenario_that_measures_recovery_is_bad_input() {
    // normal-day has a fault from t = 0: no healthy baseline, no recovery time.
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_file(tmp.path(), &format!("{EDGE}constraints = [\"recovery_time_s <= 30\"]\n{SPACE}"));
    let (code, out) = tune(&path, tmp.path(), &[]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("tune.constraints[0]") && out.contains("recovery_time_s"), "{out}");
}

#[test]
fn csv_and_markdown_formats_are_refused_rather_than_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_file(tmp.path(), &format!("{EDGE}{SPACE}"));
    let (code, out) = tune(&path, tmp.path(), &["--format", "csv"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--format") && out.contains("json"), "{out}");
}

/// A space of twenty million points: seven fields of ten values, and jitter.
fn huge_space(dir: &Path) -> PathBuf {
    let list = |f: &dyn Fn(u32) -> String| (1..=10).map(f).collect::<Vec<_>>().join(", ");
    let space = format!(
        "[tune.space]\n\"backoff.base\" = [{}]\n\"backoff.multiplier\" = [{}]\nmax_attempts = [{}]\nper_try_timeout = [{}]\nmax_retry_after = [{}]\ndeadline = [{}]\n\"backoff.cap\" = [{}]\n\"backoff.jitter\" = [\"none\", \"full\"]\n",
        list(&|k| format!("\"{k}ms\"")),
        list(&|k| format!("{k}.0")),
        list(&|k| k.to_string()),
        list(&|k| format!("\"{}ms\"", 100 * k)),
        list(&|k| format!("\"{k}s\"")),
        list(&|k| format!("\"{}s\"", 10 + k)),
        list(&|k| format!("\"{}s\"", 4 + k)),
    );
    tune_file(dir, &format!("{EDGE}{space}"))
}

/// Runs retrysim under an address-space limit (so a regression fails
/// instead of exhausting the machine), with a time limit.
#[cfg(unix)]
fn limited(args: &[&str], limit_kb: u64, signal_after: Option<Duration>) -> (Option<i32>, String, Duration) {
    let bin = env!("CARGO_BIN_EXE_retrysim");
    let cmd = format!("ulimit -v {limit_kb}; exec \"$0\" \"$@\"");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .arg(bin)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let mut signalled = false;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return (status.code(), err, t0.elapsed());
        }
        if let Some(after) = signal_after
            && !signalled
            && t0.elapsed() > after
        {
            let ok = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success();
            assert!(ok);
            signalled = true;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("retrysim did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(unix)]
#[test]
fn millions_of_candidates_are_refused_by_the_estimate_before_any_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let path = huge_space(tmp.path());
    let out = tmp.path().join("out");
    let (code, err, took) = limited(
        &["tune", path.to_str().unwrap(), "--candidates", "20000000", "-q", "--out", out.to_str().unwrap()],
        1_000_000,
        None,
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("tune: estimated") && err.contains("tune candidates") && err.contains("--force"), "{err}");
    assert!(took < Duration::from_secs(20), "took {took:?}");
    assert!(!out.exists());
}

#[cfg(unix)]
#[test]
fn a_forced_search_of_a_million_candidates_stops_promptly_on_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    let path = huge_space(tmp.path());
    let out = tmp.path().join("out");
    let (code, err, took) = limited(
        &[
            "tune",
            path.to_str().unwrap(),
            "--candidates",
            "1000000",
            "--force",
            "--replications",
            "1",
            "-q",
            "--out",
            out.to_str().unwrap(),
        ],
        2_000_000,
        Some(Duration::from_millis(1500)),
    );
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(took < Duration::from_secs(15), "took {took:?} to stop");
    assert!(!out.join("tuned-policy.toml").exists());
}

/// `backoff.kind = ["none", "exponential"]` with `backoff.base` beside it, on
/// a policy whose backoff is `none`: each candidate is complete, though
/// `"exponential"` alone is not (it needs a base). Candidates are checked,
/// not values one by one; a combination that is invalid is named.
#[test]
fn a_space_whose_fields_need_each_other_is_checked_by_candidate() {
    use retrysim::analysis::tune::{check_values, method, parse_spec};
    use retrysim::config::load_experiment;
    let tmp = tempfile::tempdir().unwrap();
    let sets = vec!["clients.web.policy.backoff={ kind = \"none\" }".to_string()];
    let check = |space: &str| {
        let path = tune_file(tmp.path(), &format!("{EDGE}[tune.space]\n{space}"));
        let exp = load_experiment(&path, &sets).unwrap();
        let spec = parse_spec(&exp.path, &exp.source).unwrap();
        check_values(&spec, &exp, &sets, method(&spec, 200), exp.variants[0].seed)
    };
    check("\"backoff.kind\" = [\"none\", \"exponential\"]\n\"backoff.base\" = [\"20ms\", \"100ms\"]\n").unwrap();
    let e = check(
        "\"backoff.kind\" = [\"exponential\"]\n\"backoff.base\" = [\"10ms\", \"100ms\"]\n\"backoff.cap\" = [\"50ms\", \"1s\"]\n",
    )
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("tune.space"), "{e}");
    assert!(
        e.message.contains("the candidate backoff.base=\"100ms\" backoff.cap=\"50ms\" backoff.kind=\"exponential\"")
            && e.message.contains("must be at least `base`"),
        "{e}"
    );
    // A value no candidate can hold is still named alone.
    let e = check("\"backoff.kind\" = [\"exponential\"]\nmax_attempts = [2, 3]\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("tune.space.\"backoff.kind\""), "{e}");
    // And through the command: exit 2 before any run.
    let path = tune_file(
        tmp.path(),
        &format!(
            "{EDGE}[tune.space]\n\"backoff.kind\" = [\"exponential\"]\n\"backoff.base\" = [\"100ms\"]\n\"backoff.cap\" = [\"50ms\"]\n"
        ),
    );
    let (code, out) = tune(&path, tmp.path(), &["--set", &sets[0]]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("the candidate") && !tmp.path().join("out").exists(), "{out}");
}
