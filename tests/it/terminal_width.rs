//! On a terminal, what `lint`, `run` and `tune` print fits 120 characters a
//! line: findings and prose wrap (piped output keeps one line per finding,
//! for grep). The terminal is a real pseudo-terminal made by util-linux's
//! `script`; without it the test says so loudly and skips.

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `args` under `script` (a pseudo-terminal for stdout and stderr);
/// what the terminal showed, or `None` without `script`.
fn on_a_terminal(args: &[&str]) -> Option<String> {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))).collect();
    let command = format!("'{}' {}", env!("CARGO_BIN_EXE_retrysim"), quoted.join(" "));
    let out = Command::new("script").args(["-qec", &command, "/dev/null"]).current_dir(root()).output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).replace('\r', ""))
}

fn widest(text: &str) -> (usize, String) {
    text.lines().map(|l| (l.chars().count(), l.to_string())).max_by_key(|x| x.0).unwrap_or_default()
}

#[test]
fn lint_run_and_tune_fit_120_characters_on_a_terminal() {
    // -q: no progress bar (it draws over its own line on a terminal).
    let dir = tempfile::tempdir().unwrap();
    let Some(lint) = on_a_terminal(&["lint", "experiments/brownout.toml"]) else {
        eprintln!("\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!");
        eprintln!("!! SKIPPED terminal_width: no `script` (util-linux) to make a pseudo-terminal");
        eprintln!("!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n");
        return;
    };
    assert!(lint.contains("no-budget") && lint.contains("6 warnings"), "{lint}");
    let (w, line) = widest(&lint);
    assert!(w <= 120, "lint: {w} characters: {line}");
    let out = dir.path().join("run");
    let run = on_a_terminal(&[
        "run",
        "experiments/brownout.toml",
        "--replications",
        "2",
        "-q",
        "--no-plots",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    assert!(run.contains("lint warning [no-budget]") && run.contains("question: "), "{run}");
    let (w, line) = widest(&run);
    assert!(w <= 120, "run: {w} characters: {line}");
    let tune = on_a_terminal(&[
        "tune",
        "experiments/tune-sdk.toml",
        "--candidates",
        "4",
        "--replications",
        "1",
        "-q",
        "--no-plots",
        "--out",
        dir.path().join("tune").to_str().unwrap(),
    ])
    .unwrap();
    assert!(tune.contains("winner"), "{tune}");
    let (w, line) = widest(&tune);
    assert!(w <= 120, "tune: {w} characters: {line}");
    // Piped, a finding stays on one line.
    let piped = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["lint", "experiments/brownout.toml"])
        .current_dir(root())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&piped.stdout);
    assert!(widest(&text).0 > 120, "piped output keeps one line per finding: {text}");
}
