//! The circuit breaker fails fast during an outage and closes after it; a
//! Retry-After longer than the remaining deadline causes no wait and no retry.

use crate::common;

use common::{load, run};
use retrysim::metrics::RunResult;

fn outage(breaker: &str) -> String {
    format!(
        r#"
[experiment]
name = "outage"
duration = "40s"
warmup = "5s"
replications = 3

[[clients]]
name = "web"
count = 20
rate = "500/s"
target = "api"
policy = {{ max_attempts = 3, per_try_timeout = "1s", retry_on = ["503"], backoff = {{ kind = "constant", base = "20ms" }} {breaker} }}

[[services]]
name = "api"
workers = 50
service_time = {{ dist = "const", value = "2ms" }}

[[faults]]
kind = "error"
target = "api"
start = "10s"
duration = "10s"
"#
    )
}

fn mean(runs: &[RunResult], key: &str) -> f64 {
    runs.iter().map(|r| r.metrics[key].unwrap()).sum::<f64>() / runs.len() as f64
}

fn failures_containing(runs: &[RunResult], text: &str) -> u64 {
    runs.iter().flat_map(|r| r.failures.iter()).filter(|(k, _)| k.contains(text)).map(|(_, n)| n).sum()
}

#[test]
fn an_open_breaker_fails_fast_and_the_service_comes_back() {
    let plain = run(&load(&outage("")), 3);
    let guarded = run(
        &load(&outage(
            r#", circuit_breaker = { failure_ratio = 0.5, window = "1s", min_requests = 10, open_for = "2s", half_open_probes = 2 }"#,
        )),
        3,
    );
    // Without a breaker every intent of the outage tries three times:
    // 10 of 35 s window -> attempts = 1 + 2 * 10/35 ~ 1.571.
    let a_plain = mean(&plain, "attempts_per_intent");
    assert!((a_plain - (1.0 + 2.0 * 10.0 / 35.0)).abs() < 0.02, "{a_plain}");
    // With it, most outage intents fail without sending anything.
    let a_guarded = mean(&guarded, "attempts_per_intent");
    assert!(a_guarded < 1.0, "attempts/intent {a_guarded}");
    let fast = failures_containing(&guarded, "breaker_open (failed fast)") as f64 / 3.0;
    assert!(fast > 0.7 * 500.0 * 10.0, "failed fast: {fast}");
    // After the outage the breakers close: success is at most a few open_for
    // windows worse than without a breaker (10/35 of intents fail either way).
    let (s_plain, s_guarded) = (mean(&plain, "success_rate"), mean(&guarded, "success_rate"));
    assert!((s_plain - 25.0 / 35.0).abs() < 0.01, "{s_plain}");
    assert!(s_guarded > s_plain - 2.0 * 2.0 / 35.0, "{s_guarded} vs {s_plain}");
}

/// 200 intents/s, half of the attempts answered 503 with `Retry-After: 5`,
/// under a policy of 5 attempts within a 2 s deadline.
const RETRY_AFTER: &str = r#"
[experiment]
name = "retry-after"
duration = "10s"
replications = 2

[[clients]]
name = "web"
rate = "200/s"
target = "api"
policy = { max_attempts = 5, deadline = "2s", per_try_timeout = "1s", retry_on = ["503"], backoff = { kind = "constant", base = "10ms" } }

[[services]]
name = "api"
workers = 10
service_time = { dist = "const", value = "1ms" }

[[faults]]
kind = "error"
target = "api"
probability = 0.5
retry_after = "5s"
"#;

/// `text` with each `(from, to)` replaced; each `from` must be in it.
fn edited(text: &str, edits: &[(&str, &str)]) -> String {
    edits.iter().fold(text.to_string(), |t, (from, to)| {
        assert!(t.contains(from), "test bug: {from:?} not in the experiment");
        t.replacen(from, to, 1)
    })
}

#[test]
fn a_retry_after_longer_than_the_remaining_deadline_gives_up_at_once() {
    let exp = load(RETRY_AFTER);
    for r in run(&exp, 2) {
        // No retry at all: one attempt per intent, half of them fail at once.
        assert_eq!(r.metrics["attempts_per_intent"], Some(1.0));
        let denied = r.denials.get("retry_after_too_long").copied().unwrap_or(0);
        let failed = (r.metrics["intents"].unwrap() * (1.0 - r.metrics["success_rate"].unwrap())).round() as u64;
        assert_eq!(denied, failed);
        assert!(denied > 0);
        // Nobody waited: every intent ended within one round trip.
        assert!(r.metrics["latency_p999_s"].unwrap() < 0.01);
    }
}

#[test]
fn a_retry_after_within_the_deadline_replaces_the_backoff() {
    let exp = load(&edited(
        RETRY_AFTER,
        &[
            ("name = \"retry-after\"", "name = \"retry-after ok\""),
            ("max_attempts = 5", "max_attempts = 2"),
            ("retry_after = \"5s\"", "retry_after = \"300ms\""),
        ],
    ));
    for r in run(&exp, 2) {
        // Intents that needed the retry waited the 300 ms Retry-After, not 10 ms.
        let p50 = r.metrics["latency_p50_s"].unwrap();
        let p99 = r.metrics["latency_p99_s"].unwrap();
        assert!(p50 < 0.01, "first-try successes are fast: {p50}");
        assert!(p99 > 0.3 && p99 < 0.32, "retried successes waited Retry-After: {p99}");
    }
}
