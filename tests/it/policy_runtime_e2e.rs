//! The policy runtime over real sockets: a scripted HTTP server on
//! 127.0.0.1 answers 503, then 503 with `Retry-After: 1`, then nothing
//! within the per-try timeout, then 200 (`http_script.rs` of the runtime
//! crate's tests); `retrysim_policy::retry` calls it under a policy file
//! with the GET of `examples/http_get.rs`, and the simulator runs the same script (as faults
//! in time windows that the attempts fall into) with `--trace`. Attempts,
//! outcomes and decisions must be the same, and each measured wait must be
//! the simulated one within timer tolerance (never shorter, at most 150 ms
//! longer on a loaded machine).

#[allow(dead_code)]
#[path = "../../crates/retrysim-policy/examples/http_get.rs"]
mod http_get;
use crate::http_script;
use crate::support::simulator_trace;

use http_script::{Answer, Script};
use retrysim_policy::{Policy, RetryError, Shared, SplitMix, retry_with};
use std::time::{Duration, Instant};

const POLICY: &str = r#"name = "e2e"
max_attempts = 4
per_try_timeout = "300ms"
deadline = "10s"
retry_on = ["connect_error", "timeout", "503"]
respect_retry_after = true
max_retry_after = "5s"

[backoff]
kind = "exponential"
base = "100ms"
cap = "1s"
"#;

/// The same script for the simulator: one intent at 0; the attempts are
/// sent at about 0 s, 0.1 s, 1.1 s and 1.5 s, so each falls into one fault.
fn experiment() -> String {
    simulator_trace::OneClient {
        name: "e2e",
        duration: "1ms",
        arrivals: "mode = \"burst\"\nat = \"0s\"\ncount = 1",
        policy: "e2e-policy.toml",
        workers: 1,
        work: "1ms",
        faults: FAULTS,
    }
    .toml()
}

/// 503 for the first 50 ms, 503 with `Retry-After: 1` up to 550 ms, 1 s
/// of extra latency from 1 s to 1.3 s.
const FAULTS: &str = r#"[[faults]]
kind = "error"
target = "api"
status = 503
start = "0s"
duration = "50ms"

[[faults]]
kind = "error"
target = "api"
status = 503
retry_after = "1s"
start = "50ms"
duration = "500ms"

[[faults]]
kind = "latency"
target = "api"
extra = { dist = "const", value = "1s" }
start = "1s"
duration = "300ms"
"#;

/// Serves the script: 503, 503 with `Retry-After: 1`, a 200 held back
/// for 1 s (past the 300 ms per-try timeout), 200.
fn server() -> Script {
    Script::start(vec![
        Answer::status(503, &[], ""),
        Answer::status(503, &["Retry-After: 1"], ""),
        Answer::status(200, &[], "ok").after(Duration::from_millis(1000)),
        Answer::status(200, &[], "ok"),
    ])
}

#[test]
fn the_retry_helper_over_sockets_does_what_the_simulator_traced() {
    let dir = tempfile::tempdir().unwrap();
    // The simulator's trace of the same script.
    let rows = simulator_trace::run_traced(
        dir.path(),
        &[("e2e-policy.toml", POLICY), ("e2e.toml", &experiment())],
        "e2e.toml",
    );
    let policy = Policy::load(&dir.path().join("e2e-policy.toml")).unwrap();
    let sim_outcomes: Vec<String> = rows.iter().map(|r| r["outcome"].as_str().unwrap().to_string()).collect();
    let sim_waits: Vec<f64> = rows.iter().skip(1).map(|r| r["wait_s"].as_f64().unwrap()).collect();
    assert_eq!(sim_outcomes, ["503", "503", "timeout", "ok"], "{rows:?}");

    // The runtime crate's helper against the real server.
    let script = server();
    let addr = format!("127.0.0.1:{}", script.port);
    let mut outcomes = Vec::new();
    let mut spans: Vec<(Instant, Instant)> = Vec::new();
    let shared = Shared::new(policy);
    let result = retry_with(&shared, SplitMix::new(1), |attempt| {
        let start = Instant::now();
        let r = http_get::get(&addr, attempt.timeout);
        spans.push((start, Instant::now()));
        outcomes.push(match &r {
            Ok(_) => "ok".to_string(),
            Err(f) => f.outcome.to_string(),
        });
        r
    });
    assert!(result.is_ok(), "{:?}", result.err().map(|e: RetryError<String>| e.to_string()));
    assert_eq!(outcomes, sim_outcomes, "the same attempts and outcomes");
    assert_eq!(script.served().len(), 4);
    let waits: Vec<f64> = spans.windows(2).map(|w| (w[1].0 - w[0].1).as_secs_f64()).collect();
    assert_eq!(sim_waits, [0.1, 1.0, 0.4], "{rows:?}");
    for (real, sim) in waits.iter().zip(&sim_waits) {
        assert!(*real >= sim - 0.002 && *real <= sim + 0.150, "waited {real} s where the simulator waited {sim} s");
    }
    // The timed-out attempt was given up at its per-try timeout.
    let timed_out = spans[2].1 - spans[2].0;
    assert!(timed_out >= Duration::from_millis(295) && timed_out <= Duration::from_millis(450), "{timed_out:?}");
}
