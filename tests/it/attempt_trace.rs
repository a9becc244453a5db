//! `--trace`: one JSON object per attempt with every field of DESIGN §5; a
//! retry's trigger is the previous attempt's outcome; sampling is
//! deterministic.

use std::collections::BTreeMap;
use std::process::Command;

const FIELDS: [&str; 13] = [
    "variant",
    "replication",
    "intent",
    "client",
    "edge",
    "attempt",
    "t_s",
    "wait_s",
    "trigger",
    "remaining_deadline_s",
    "budget",
    "outcome",
    "decision",
];

fn trace(dir: &std::path::Path, name: &str, sample: &str) -> Vec<serde_json::Value> {
    let exp = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/quickstart.toml");
    let path = dir.join(name);
    let status = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["run", exp, "-q", "--replications", "2", "--out"])
        .arg(dir.join("out"))
        .arg("--trace")
        .arg(&path)
        .args(["--trace-sample", sample])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read_to_string(&path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn rows_have_every_field_and_retries_are_triggered_by_the_previous_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let rows = trace(dir.path(), "t.jsonl", "0.05");
    assert!(rows.len() > 1000, "only {} rows", rows.len());
    for r in &rows {
        for f in FIELDS {
            assert!(r.get(f).is_some(), "row lacks {f}: {r}");
        }
    }
    // Group attempts by (variant, replication, intent) in order.
    let mut by_intent: BTreeMap<(String, u64, u64), Vec<&serde_json::Value>> = BTreeMap::new();
    for r in &rows {
        let key = (
            r["variant"].as_str().unwrap().to_string(),
            r["replication"].as_u64().unwrap(),
            r["intent"].as_u64().unwrap(),
        );
        by_intent.entry(key).or_default().push(r);
    }
    let mut retried = 0;
    for attempts in by_intent.values() {
        for (i, a) in attempts.iter().enumerate() {
            assert_eq!(a["attempt"].as_u64().unwrap(), i as u64 + 1);
            if i == 0 {
                assert_eq!(a["trigger"], "first");
                assert_eq!(a["wait_s"].as_f64().unwrap(), 0.0);
            } else {
                retried += 1;
                let prev = attempts[i - 1];
                assert_eq!(a["trigger"], prev["outcome"], "{a}");
                assert_eq!(prev["decision"], "retry");
                assert!(
                    a["t_s"].as_f64().unwrap() >= prev["t_s"].as_f64().unwrap() + a["wait_s"].as_f64().unwrap() - 1e-9
                );
            }
            let last = i + 1 == attempts.len();
            let d = a["decision"].as_str().unwrap();
            if !last {
                assert_eq!(d, "retry");
            } else {
                assert_ne!(d, "retry", "the last attempt of an intent cannot decide to retry: {a}");
                assert_eq!(d == "done", a["outcome"] == "ok", "{a}");
            }
        }
    }
    assert!(retried > 100, "only {retried} retries traced");
}

#[test]
fn sampling_is_deterministic_and_proportional() {
    let dir = tempfile::tempdir().unwrap();
    let a = trace(dir.path(), "a.jsonl", "0.02");
    let b = trace(dir.path(), "b.jsonl", "0.02");
    assert_eq!(a, b);
    let all = trace(dir.path(), "all.jsonl", "1");
    let intents = |rows: &[serde_json::Value]| rows.iter().filter(|r| r["attempt"] == 1).count() as f64;
    let ratio = intents(&a) / intents(&all);
    // Binomial: sd of the sampled share is sqrt(0.02*0.98/n) with n ~ 240k intents.
    assert!((ratio - 0.02).abs() < 0.002, "sampled share {ratio}");
}
