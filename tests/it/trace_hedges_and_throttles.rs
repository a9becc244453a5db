//! `--trace` rows say which copy of a hedged call an attempt was (and that
//! the loser was cancelled), and why a client-side throttle refused an
//! attempt; rows of experiments without either keep DESIGN §5's fields.

use std::process::Command;

fn trace(experiment: &str) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp.toml");
    std::fs::write(&exp, experiment).unwrap();
    let file = dir.path().join("trace.jsonl");
    let o = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .arg("run")
        .arg(&exp)
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["-q", "--no-plots", "--trace"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(&file).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn experiment(policy: &str, extra: &str) -> String {
    format!(
        r#"
[experiment]
name = "trace"
duration = "1s"
replications = 1

[[clients]]
name = "web"
rate = "20/s"
target = "api"
operation = "read"
policy = {{ {policy} }}

[[operations]]
name = "read"
idempotent = true

[[services]]
name = "api"
workers = 100
service_time = {{ dist = "const", value = "30ms" }}
{extra}
"#
    )
}

#[test]
fn a_hedged_call_has_one_row_per_copy_and_the_loser_is_cancelled() {
    let rows = trace(&experiment(r#"per_try_timeout = "1s", hedging = { max_attempts = 2, delay = "10ms" }"#, ""));
    assert!(!rows.is_empty());
    for intent in rows.iter().map(|r| r["intent"].as_u64().unwrap()).collect::<std::collections::BTreeSet<_>>() {
        let mine: Vec<&serde_json::Value> = rows.iter().filter(|r| r["intent"] == intent).collect();
        assert_eq!(mine.len(), 2, "{mine:?}");
        let first = mine.iter().find(|r| r["copy"] == 0).expect("copy 0");
        let hedge = mine.iter().find(|r| r["copy"] == 1).expect("copy 1");
        // The first copy answers at 32 ms; the hedge, sent at 10 ms, is cancelled.
        assert_eq!((first["decision"].as_str(), first["outcome"].as_str()), (Some("done"), Some("ok")));
        assert_eq!(first["trigger"], "first");
        assert_eq!((hedge["decision"].as_str(), hedge["outcome"].as_str()), (Some("cancelled"), Some("cancelled")));
        assert_eq!(hedge["trigger"], "hedge_delay");
        assert_eq!(hedge["attempt"], 2);
        let dt = hedge["t_s"].as_f64().unwrap() - first["t_s"].as_f64().unwrap();
        assert!((dt - 0.010).abs() < 1e-9, "the hedge goes out 10 ms after the first copy: {dt}");
    }
}

#[test]
fn a_refused_attempt_says_the_throttle_and_its_probability() {
    let fault = "[[faults]]\nkind = \"error\"\ntarget = \"api\"\nstatus = 503\nprobability = 1.0\n";
    let rows =
        trace(&experiment(r#"per_try_timeout = "1s", throttle = { kind = "sre", k = 2.0, window = "10s" }"#, fault));
    let refused: Vec<&serde_json::Value> = rows.iter().filter(|r| r["outcome"] == "throttled").collect();
    assert!(!refused.is_empty(), "a backend failing everything gets refused attempts");
    for r in refused {
        assert_eq!(r["decision"], "throttled");
        assert_eq!(r["throttle"], "sre");
        let p = r["throttle_p"].as_f64().unwrap();
        assert!(p > 0.0 && p < 1.0, "{r}");
    }
}

#[test]
fn rows_without_hedging_or_throttles_have_only_the_design_fields() {
    let rows = trace(&experiment(r#"per_try_timeout = "1s""#, ""));
    let fields: Vec<&str> = rows[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        fields,
        [
            "attempt",
            "budget",
            "client",
            "decision",
            "edge",
            "intent",
            "outcome",
            "remaining_deadline_s",
            "replication",
            "t_s",
            "trigger",
            "variant",
            "wait_s"
        ]
    );
}
