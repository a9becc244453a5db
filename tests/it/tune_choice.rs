//! How `tune` chooses: paired differences under common random numbers
//! decide which candidates tie with the best; among them fewer lint
//! findings, then the gentler policy, win; `--format json` says so in one
//! object (schema retrysim.tune/1) with the ties, the front and the winner
//! per scenario; the emitted policy keeps only the lint findings the space
//! could not avoid, each with its reason.

use crate::support::tune_run;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const EXP_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments");

/// `experiments/tune-sdk.toml` with another `[tune.space]` (and optionally
/// other constraints), written into `dir`.
fn tune_sdk(dir: &Path, space: &str, constraints: Option<&str>) -> PathBuf {
    let text = std::fs::read_to_string(Path::new(EXP_DIR).join("tune-sdk.toml")).unwrap();
    let (head, _) = text.rsplit_once("[tune.space]").unwrap();
    let mut head = head
        .replace("../policies/", &format!("{EXP_DIR}/../policies/"))
        .replace("\"normal-day.toml\"", &format!("\"{EXP_DIR}/normal-day.toml\""))
        .replace("\"bad-day-spike.toml\"", &format!("\"{EXP_DIR}/bad-day-spike.toml\""))
        .replace("\"bad-day-brownout.toml\"", &format!("\"{EXP_DIR}/bad-day-brownout.toml\""));
    if let Some(c) = constraints {
        let start = head.find("constraints = ").unwrap();
        let end = start + head[start..].find('\n').unwrap();
        head.replace_range(start..end, &format!("constraints = {c}"));
    }
    let path = dir.join("tune.toml");
    std::fs::write(&path, format!("{head}[tune.space]\n{space}\n")).unwrap();
    path
}

/// Runs `tune` with JSON output; (exit code, the JSON object, stderr).
fn tune_json(path: &Path, dir: &Path, extra: &[&str]) -> (i32, Value, String) {
    let (code, stdout, stderr) = tune_run::tune_json(path, dir, extra);
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {stdout}{stderr}"));
    (code, json, stderr)
}

fn value<'a>(candidate: &'a Value, key: &str) -> &'a Value {
    &candidate["values"][key]
}

#[test]
fn full_jitter_ties_with_no_jitter_under_common_random_numbers_and_wins_on_lint() {
    // The 3-attempt, 250 ms candidates of tune-sdk: no jitter reaches
    // 0.9017 on the worst day, full jitter 0.9000; the difference is noise.
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_sdk(
        tmp.path(),
        "max_attempts = [3]\n\"backoff.base\" = [\"250ms\"]\n\"backoff.jitter\" = [\"none\", \"full\"]",
        None,
    );
    let (code, j, err) = tune_json(&path, tmp.path(), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["schema"], "retrysim.tune/1");
    let w = &j["winner"];
    assert_eq!(value(w, "backoff.jitter"), "full", "{w}");
    let ties = j["ties"].as_array().unwrap();
    assert_eq!(ties.len(), 1, "{ties:?}");
    let tie = &ties[0];
    assert_eq!(value(tie, "backoff.jitter"), "none");
    assert_eq!(tie["best"], true);
    // The best has the higher worst case; the winner's paired difference
    // from it is negative, but its interval reaches 0.
    assert!(tie["objective"].as_f64().unwrap() > w["objective"].as_f64().unwrap());
    let d = &w["difference_from_best"];
    let (mean, lo, hi) = (d["mean"].as_f64().unwrap(), d["ci95"][0].as_f64().unwrap(), d["ci95"][1].as_f64().unwrap());
    assert!(mean < 0.0 && lo < mean && hi >= 0.0, "{d}");
    assert!(tie["why_not"].as_str().unwrap().contains("more lint warnings"), "{tie}");
    assert!(w["lint"]["warnings"].as_u64().unwrap() < tie["lint"]["warnings"].as_u64().unwrap());
    assert!(w["chosen_by"].as_str().unwrap().contains("not significantly worse"), "{w}");
}

#[test]
fn a_candidate_significantly_worse_than_the_best_is_no_tie() {
    // One attempt against three: 0.8826 against 0.9017 on the brownout,
    // far beyond the noise of paired runs.
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_sdk(tmp.path(), "max_attempts = [1, 3]\n\"backoff.base\" = [\"250ms\"]", None);
    let (code, j, err) = tune_json(&path, tmp.path(), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(value(&j["winner"], "max_attempts"), 3);
    assert_eq!(j["ties"].as_array().unwrap().len(), 0, "{}", j["ties"]);
}

#[test]
fn identical_results_tie_exactly_and_the_policy_without_the_finding_wins() {
    // No service answers with Retry-After, so max_retry_after changes
    // nothing in the runs; "10s" (the deadline) is a lint warning, "3s" is not.
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_sdk(
        tmp.path(),
        "max_attempts = [3]\n\"backoff.base\" = [\"250ms\"]\nmax_retry_after = [\"10s\", \"3s\"]",
        None,
    );
    let (code, j, err) = tune_json(&path, tmp.path(), &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(value(&j["winner"], "max_retry_after"), "3s");
    let tie = &j["ties"][0];
    assert_eq!(tie["difference"]["mean"].as_f64(), Some(0.0));
    assert_eq!(tie["objective"], j["winner"]["objective"]);
    let findings = j["winner"]["lint"]["findings"].as_array().unwrap();
    assert!(findings.iter().all(|f| f["rule"] != "retry-after-unbounded"), "{findings:?}");
}

#[test]
fn the_emitted_policy_keeps_only_lint_findings_the_space_could_not_avoid() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_sdk(
        tmp.path(),
        "max_attempts = [2, 3]\n\"backoff.base\" = [\"250ms\"]\n\"backoff.jitter\" = [\"none\", \"full\"]\nmax_retry_after = [\"10s\", \"3s\"]",
        None,
    );
    let (code, j, err) = tune_json(&path, tmp.path(), &[]);
    assert_eq!(code, 0, "{err}");
    let emitted = tmp.path().join("tuned.toml");
    // retrysim's own lint of the tune file with the emitted policy.
    let lint = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("lint")
        .arg(&path)
        .arg("--set")
        .arg(format!("clients.web.policy={}", emitted.display()))
        .args(["--format", "json", "-q"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&lint.stdout).unwrap();
    let rules: Vec<&str> = report["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap()).collect();
    // The space offers jitter and a bounded Retry-After: neither warning remains.
    assert!(!rules.contains(&"no-jitter") && !rules.contains(&"retry-after-unbounded"), "{rules:?}");
    // Every remaining finding is reported by tune with why it was kept.
    let kept = j["winner"]["lint"]["findings"].as_array().unwrap();
    assert_eq!(kept.len(), rules.len(), "{kept:?} vs {rules:?}");
    for f in kept {
        assert!(rules.contains(&f["rule"].as_str().unwrap()));
        assert!(!f["kept_because"].as_str().unwrap().is_empty());
    }
    // no-budget: the space has no budget at all.
    let no_budget = kept.iter().find(|f| f["rule"] == "no-budget").expect("no budget in the space");
    assert!(no_budget["kept_because"].as_str().unwrap().contains("no feasible candidate in the space avoids it"));
}

#[test]
fn json_has_the_front_the_ties_and_the_winner_per_scenario_against_the_scenario_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_sdk(tmp.path(), "max_attempts = [1, 2, 3]\n\"backoff.jitter\" = [\"none\", \"full\"]", None);
    let (code, j, _) = tune_json(&path, tmp.path(), &["--replications", "2"]);
    assert_eq!(code, 0);
    for key in ["schema", "edges", "objective", "constraints", "search", "winner", "ties", "front", "scenarios"] {
        assert!(j.get(key).is_some(), "missing {key}");
    }
    assert_eq!(j["search"]["method"], "grid");
    assert_eq!(j["search"]["candidates"], 6);
    // 6 candidates and the scenarios as written, 3 scenarios, 2 replications,
    // then the winner and the runner-up again on fresh seeds.
    assert_eq!(j["search"]["runs"], 7 * 3 * 2 + 2 * 3 * 2);
    let c = &j["confirmation"];
    assert!(c["still_wins"].is_boolean(), "{c}");
    assert!(c["seeds"]["experiment.seed"].is_u64(), "{c}");
    assert!(c["runner_up"]["candidate"].is_object(), "{c}");
    // Fresh seeds: other numbers than the search's for the same candidate.
    let fresh = c["winner"]["success_rate"]["mean"].as_f64().unwrap();
    assert_ne!(fresh, j["winner"]["worst"]["success_rate"].as_f64().unwrap());
    assert!((fresh - j["winner"]["worst"]["success_rate"].as_f64().unwrap()).abs() < 0.05, "{c}");
    assert!(!j["front"].as_array().unwrap().is_empty());
    let scenarios = j["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 3);
    for s in scenarios {
        assert_eq!(s["amplification_service"], "api");
        let m = &s["metrics"]["success_rate"];
        let (w, b, d) =
            (m["winner"]["mean"].as_f64().unwrap(), m["as_written"]["mean"].as_f64().unwrap(), &m["difference"]);
        // The paired difference is the difference of the means (same replications).
        assert!((d["mean"].as_f64().unwrap() - (w - b)).abs() < 1e-12, "{m}");
    }
    // The worst case of the winner is its worst scenario's mean.
    let worst =
        scenarios.iter().map(|s| s["metrics"]["success_rate"]["winner"]["mean"].as_f64().unwrap()).fold(1.0, f64::min);
    assert_eq!(j["winner"]["worst"]["success_rate"].as_f64().unwrap(), worst);
    assert_eq!(j["winner"]["objective"].as_f64().unwrap(), worst);
}

#[test]
fn a_missed_limit_of_zero_is_reported_in_the_metrics_units() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_sdk(
        tmp.path(),
        "max_attempts = [3]\n\"budget.kind\" = [\"token_bucket\"]",
        Some("[\"retries_denied_budget <= 0\"]"),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("tune")
        .arg(&path)
        .args(["-q", "--no-plots", "--replications", "2", "--emit"])
        .arg(tmp.path().join("t.toml"))
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = text.lines().find(|l| l.contains("Closest")).unwrap_or_default();
    assert!(line.contains("misses it by ") && !line.contains('%'), "{text}");
}

#[test]
fn no_value_for_the_objective_anywhere_is_exit_1_not_a_crash() {
    // No scenario has an idempotency ledger: ledger_replays has no value.
    let tmp = tempfile::tempdir().unwrap();
    let path = tune_sdk(tmp.path(), "max_attempts = [1, 2]", Some("[]"));
    let text = std::fs::read_to_string(&path).unwrap().replace("maximize success_rate", "minimize ledger_replays");
    std::fs::write(&path, text).unwrap();
    let (code, j, err) = tune_json(&path, tmp.path(), &["--replications", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(j["winner"].is_null() && j["closest"].is_null());
}

/// The winner's curse, caught: with a limit at the winner's own bound on
/// the search's seeds, the fresh seeds (other numbers, same candidate) put
/// it over the limit, and `tune` says the winner no longer wins, and why.
#[test]
fn a_winner_that_misses_a_constraint_on_fresh_seeds_no_longer_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let space = "max_attempts = [2, 3]";
    let args = ["--replications", "2", "--seed", "2"];
    let (code, first, _) = tune_json(&tune_sdk(tmp.path(), space, None), tmp.path(), &args);
    assert_eq!(code, 0);
    // Constraints are judged on the interval's bound on the worst scenario.
    let bound = first["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["metrics"]["amplification"]["winner"]["ci95"][1].as_f64().unwrap())
        .fold(f64::MIN, f64::max);
    let limits = format!("[\"amplification <= {bound:?}\", \"latency_p99_s <= 3.0\", \"duplicate_intents == 0\"]");
    let path = tune_sdk(tmp.path(), space, Some(&limits));
    let (code, j, _) = tune_json(&path, tmp.path(), &args);
    assert_eq!(code, 0);
    // The same winner, feasible on the search's seeds (right at its limit) ...
    assert_eq!(j["winner"]["values"], first["winner"]["values"]);
    let c = &j["confirmation"];
    // ... and over it on fresh ones.
    assert_eq!(c["winner_feasible"], false, "{c}");
    assert_eq!(c["still_wins"], false, "{c}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("tune")
        .arg(&path)
        .args(["-q", "--no-plots", "--out"])
        .arg(tmp.path().join("text"))
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("the winner NO LONGER WINS: on fresh seeds it misses amplification <= {bound:?}")),
        "{text}"
    );
    assert!(text.contains("2 replications per scenario"), "{text}");
}
