//! `retrysim tune`: the emitted policy loads and meets every constraint on
//! fresh seeds; an infeasible tune exits 1 and names the closest
//! constraint; a one-point space returns that point; the winner does not
//! depend on --jobs.

use std::path::Path;
use std::process::Command;

const EXP_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments");

/// A tune experiment in `dir` over the shipped scenarios, with `space` and
/// `constraints` as TOML.
fn tune_file(dir: &Path, space: &str, constraints: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(Path::new(EXP_DIR).join("normal-day.toml"))
        .unwrap()
        .replace("../policies/", &format!("{}/../policies/", EXP_DIR));
    let text = format!(
        "{text}\n[tune]\nedge = \"clients.web.policy\"\nobjective = \"maximize success_rate\"\nconstraints = {constraints}\nscenarios = [\"{EXP_DIR}/normal-day.toml\", \"{EXP_DIR}/bad-day-spike.toml\"]\n\n[tune.space]\n{space}\n"
    );
    let path = dir.join("tune.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `tune`; the chart goes to a folder beside `emit`, never into the
/// working tree.
fn tune(path: &Path, emit: &Path, extra: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("tune")
        .arg(path)
        .arg("--emit")
        .arg(emit)
        .arg("--out")
        .arg(emit.with_extension("out"))
        .args(if extra.contains(&"--replications") { &["-q"][..] } else { &["--replications", "2", "-q"][..] })
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

const SPACE: &str = "max_attempts = [1, 2, 4]\n\"backoff.base\" = [\"50ms\", \"250ms\"]";
const CONSTRAINTS: &str = "[\"amplification <= 1.4\", \"latency_p99_s <= 3.0\"]";

#[test]
fn the_emitted_policy_loads_and_meets_the_constraints_on_fresh_seeds() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_file(tmp.path(), SPACE, CONSTRAINTS);
    let emit = tmp.path().join("tuned.toml");
    let (code, out) = tune(&path, &emit, &[]);
    assert_eq!(code, 0, "{out}");
    let policy = retrysim::config::load_policy_file(&emit).unwrap();
    assert_eq!(policy.name, "tuned");
    // Re-run both scenarios with the emitted policy and other seeds.
    for scenario in ["normal-day.toml", "bad-day-spike.toml"] {
        let sets = vec![
            format!("clients.web.policy={}", emit.display()),
            "experiment.seed=987".into(),
            "experiment.replications=4".into(),
        ];
        let exp = retrysim::config::load_experiment(&Path::new(EXP_DIR).join(scenario), &sets).unwrap();
        let set = retrysim::analysis::run_all(&exp.variants, None, 0).unwrap();
        let mean = |m: &str| set.variants[0].runs.iter().map(|r| r.metrics[m].unwrap()).sum::<f64>() / 4.0;
        assert!(mean("amplification") <= 1.4, "{scenario}: amplification {}", mean("amplification"));
        assert!(mean("latency_p99_s") <= 3.0, "{scenario}: p99 {}", mean("latency_p99_s"));
    }
}

#[test]
fn an_infeasible_tune_exits_1_and_names_the_closest_constraint() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_file(tmp.path(), SPACE, "[\"success_rate >= 0.999\"]");
    let emit = tmp.path().join("never.toml");
    let (code, out) = tune(&path, &emit, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("no candidate meets every constraint") && out.contains("success_rate >= 0.999"), "{out}");
    assert!(!emit.exists());
}

#[test]
fn a_one_point_space_returns_that_point() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_file(tmp.path(), "max_attempts = [2]\n\"backoff.base\" = [\"77ms\"]", "[]");
    let emit = tmp.path().join("one.toml");
    let (code, out) = tune(&path, &emit, &[]);
    assert_eq!(code, 0, "{out}");
    let p = retrysim::config::load_policy_file(&emit).unwrap();
    assert_eq!(p.max_attempts, 2);
    assert_eq!(p.backoff.base, 77_000_000);
}

#[test]
fn the_same_seed_gives_the_same_winner_with_any_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_file(tmp.path(), SPACE, CONSTRAINTS);
    // Same file name in two folders: the policy is named after its file.
    std::fs::create_dir_all(tmp.path().join("j1")).unwrap();
    std::fs::create_dir_all(tmp.path().join("j2")).unwrap();
    let (a, b) = (tmp.path().join("j1/tuned.toml"), tmp.path().join("j2/tuned.toml"));
    assert_eq!(tune(&path, &a, &["--jobs", "1"]).0, 0);
    assert_eq!(tune(&path, &b, &["--jobs", "2"]).0, 0);
    assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(), "the winners differ");
}

#[test]
fn successive_halving_finds_the_full_searchs_winner_here() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_file(
        tmp.path(),
        "max_attempts = [1, 2, 3, 4]\n\"backoff.base\" = [\"50ms\", \"250ms\"]\n\"backoff.jitter\" = [\"none\", \"full\"]",
        CONSTRAINTS,
    );
    std::fs::create_dir_all(tmp.path().join("full")).unwrap();
    std::fs::create_dir_all(tmp.path().join("halved")).unwrap();
    let (a, b) = (tmp.path().join("full/tuned.toml"), tmp.path().join("halved/tuned.toml"));
    assert_eq!(tune(&path, &a, &["--replications", "4"]).0, 0);
    let (code, out) = tune(&path, &b, &["--replications", "4", "--halving"]);
    assert_eq!(code, 0, "{out}");
    let (pa, pb) = (retrysim::config::load_policy_file(&a).unwrap(), retrysim::config::load_policy_file(&b).unwrap());
    assert_eq!((pa.max_attempts, pa.backoff), (pb.max_attempts, pb.backoff));
}
