//! The conformance vectors under `sdk/vectors/` are current: for every
//! preset under `policies/`, `retrysim vectors` writes exactly the file the
//! repository keeps (scripts/regenerate-vectors.sh rewrites them), and each
//! file covers every rule of the decision order, every backoff, jitter,
//! budget, breaker and throttle kind, deadline clipping, Retry-After caps
//! and the hedging clock, quantile delays included.

use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn vectors_of(policy: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .current_dir(ROOT)
        .args(["vectors", policy])
        .output()
        .expect("retrysim runs");
    assert!(out.status.success(), "{policy}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn presets() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("policies"))
        .expect("policies/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.file_stem().expect("a stem").to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_presets_vectors_are_current() {
    let mut stale = Vec::new();
    for name in presets() {
        let fresh = vectors_of(&format!("policies/{name}.toml"));
        let kept = std::fs::read_to_string(Path::new(ROOT).join("sdk/vectors").join(format!("{name}.json")))
            .unwrap_or_default();
        if fresh != kept {
            stale.push(name);
        }
    }
    assert!(stale.is_empty(), "sdk/vectors/ is not current for {stale:?}: run scripts/regenerate-vectors.sh");
    let kept = std::fs::read_dir(Path::new(ROOT).join("sdk/vectors")).expect("sdk/vectors/").count();
    assert_eq!(kept, presets().len(), "one vectors file per preset, no others");
}

/// What every vectors file must cover, whatever its policy.
const REQUIRED: &[&str] = &[
    "decision:done",
    "decision:retry",
    "deny:not_retryable",
    "deny:unsafe",
    "deny:max_attempts",
    "deny:breaker_open",
    "deny:retry_after_too_long",
    "deny:deadline",
    "deny:budget",
    "refuse:breaker_open",
    "refuse:throttled",
    "throttle:wait",
    "deadline:min_attempt_time",
    "timeout:clipped_to_deadline",
    "retry_after:respected",
    "retry_after:ignored",
    "retry_after:clamped",
    "backoff:none",
    "backoff:constant",
    "backoff:exponential",
    "backoff:decorrelated",
    "backoff:throttling_base",
    "jitter:none",
    "jitter:full",
    "jitter:equal",
    "jitter:proportional",
    "budget:token_bucket:spent",
    "budget:token_bucket:refilled",
    "budget:quota:spent",
    "budget:quota:refilled",
    "budget:ratio",
    "budget:concurrency",
    "breaker:failure_ratio",
    "breaker:consecutive",
    "breaker:slow_call",
    "breaker:retries_only",
    "breaker:closed->open",
    "breaker:open->half_open",
    "breaker:half_open->closed",
    "breaker:half_open->open",
    "throttle:sre",
    "throttle:aws_adaptive",
    "hedge:sent_after_delay",
    "hedge:sent_after_non_fatal",
    "hedge:sent_after_timeout",
    "hedge:won_by_a_later_copy",
    "hedge:cancelled",
    "hedge:left_running",
    "hedge:given_up",
    "hedge:fatal_answer",
    "hedge:failed",
    "hedge:extra_load",
    "hedge:refused:max_attempts",
    "hedge:refused:deadline",
    "hedge:refused:breaker_open",
    "hedge:refused:budget",
    "hedge:refused:throttled",
    "hedge:quantile_learnt",
    "hedge:quantile_too_few",
    "hedge:quantile_reset",
];

#[test]
fn every_file_covers_every_rule_and_kind() {
    for name in presets() {
        let v: serde_json::Value = serde_json::from_str(&vectors_of(&format!("policies/{name}.toml"))).unwrap();
        assert_eq!(v["schema"], "retrysim.vectors/1");
        let cases = v["cases"].as_array().unwrap();
        assert!(cases.len() >= 20, "{name}: {} cases", cases.len());
        let covers: Vec<&str> = v["covers"].as_array().unwrap().iter().filter_map(|c| c.as_str()).collect();
        let missing: Vec<&&str> = REQUIRED.iter().filter(|r| !covers.contains(r)).collect();
        assert!(missing.is_empty(), "{name}: not covered: {missing:?}");
    }
}

#[test]
fn the_case_count_is_honoured_and_bad_input_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .current_dir(ROOT)
        .args(["vectors", "policies/grpc-default.toml", "--cases", "40"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["cases"].as_array().unwrap().len(), 40);
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .current_dir(ROOT)
        .args(["vectors", "policies/no-such-policy.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-policy.toml"));
}
