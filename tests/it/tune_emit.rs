//! `tune --emit` writes only where it may: never over a file the tune
//! reads (the experiment, a scenario, a policy they load), and over an
//! existing file only when it is a policy tune wrote before, or with
//! `--force`. Each refusal names the file and why, before the search runs.

use std::path::{Path, PathBuf};
use std::process::Command;

const EXP_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments");

/// A small tune in `dir` whose one scenario is `dir/scenario.toml` (a copy of
/// normal-day.toml): returns (tune file, scenario file).
fn setup(dir: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(Path::new(EXP_DIR).join("normal-day.toml"))
        .unwrap()
        .replace("../policies/", &format!("{EXP_DIR}/../policies/"));
    let scenario = dir.join("scenario.toml");
    std::fs::write(&scenario, &text).unwrap();
    let tune = dir.join("tune.toml");
    std::fs::write(
        &tune,
        format!(
            "{text}\n[tune]\nedge = \"clients.web.policy\"\nscenarios = [\"scenario.toml\"]\n\n[tune.space]\nmax_attempts = [1, 2]\n"
        ),
    )
    .unwrap();
    (tune, scenario)
}

fn tune(tune: &Path, emit: &Path, extra: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("tune")
        .arg(tune)
        .arg("--emit")
        .arg(emit)
        .args(["--replications", "2", "-q", "--no-plots", "--set", "experiment.duration=5s"])
        .args(["--set", "experiment.warmup=1s"])
        .args(extra)
        .current_dir(tune.parent().unwrap())
        .output()
        .unwrap();
    (out.status.code().unwrap(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn tune_never_emits_over_one_of_its_scenarios() {
    let dir = tempfile::tempdir().unwrap();
    let (file, scenario) = setup(dir.path());
    let before = std::fs::read(&scenario).unwrap();
    for extra in [&[][..], &["--force"][..]] {
        let (code, err) = tune(&file, &scenario, extra);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains("scenario.toml") && err.contains("input file"), "{err}");
        assert_eq!(std::fs::read(&scenario).unwrap(), before, "the scenario was overwritten");
    }
    // Nor over the tune experiment itself.
    let (code, err) = tune(&file, &file, &[]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn tune_replaces_an_existing_file_only_when_it_wrote_it_or_with_force() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _) = setup(dir.path());
    let notes = dir.path().join("notes.toml");
    std::fs::write(&notes, "name = \"hand-written\"\nmax_attempts = 2\ndeadline = \"1s\"\n").unwrap();
    let (code, err) = tune(&file, &notes, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("notes.toml") && err.contains("not a policy written by `retrysim tune`"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert!(std::fs::read_to_string(&notes).unwrap().starts_with("name = \"hand-written\""));

    // A new path, then the same path again: tune replaces its own policy.
    let emitted = dir.path().join("tuned.toml");
    for _ in 0..2 {
        let (code, err) = tune(&file, &emitted, &[]);
        assert_eq!(code, 0, "{err}");
        assert!(std::fs::read_to_string(&emitted).unwrap().starts_with("# Tuned by `retrysim tune "));
    }
    // --force replaces the hand-written file.
    let (code, err) = tune(&file, &notes, &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&notes).unwrap().starts_with("# Tuned by `retrysim tune "));
}
