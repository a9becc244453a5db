//! `request_loss`: a request lost on its way in never executes, and its
//! caller sees the same per-try timeout as for a lost answer. Lost with
//! probability p independently per attempt and retried on timeout up to n
//! attempts, an intent succeeds with probability 1 − p^n after
//! (1 − p^n)/(1 − p) attempts on average, and nothing commits twice;
//! the same p of lost *answers* duplicates about p of the intents.

use crate::common;

use common::{assert_covers, assert_covers_scaled, expected_attempts, load, run, success_probability};

/// A non-idempotent POST (no key, no ledger, retried blindly on timeout)
/// to a service with ample workers, at zero network latency: only the
/// fault decides outcomes.
fn experiment(kind: &str, p: f64) -> String {
    format!(
        r#"
[experiment]
name = "lost requests"
duration = "20s"
warmup = "0s"
seed = 7

[[clients]]
name = "c"
rate = "2000/s"
target = "orders"
operation = "create_order"
policy = {{ max_attempts = 3, per_try_timeout = "20ms", retry_on = ["timeout"], retry_unknown_without_key = true }}

[[operations]]
name = "create_order"

[[services]]
name = "orders"
workers = 200
service_time = {{ dist = "const", value = "2ms" }}
commits = "order"

[[faults]]
name = "loss"
kind = "{kind}"
target = "orders"
probability = {p}

[network]
latency = {{ dist = "const", value = "0s" }}
"#
    )
}

#[test]
fn lost_requests_follow_the_geometric_formulas_and_never_commit_twice() {
    let p = 0.3;
    let runs = run(&load(&experiment("request_loss", p)), 8);
    let attempts = expected_attempts(p, 3);
    assert_covers_scaled(
        "attempts_per_intent",
        attempts,
        common::metric(&runs, "attempts_per_intent"),
        attempts - 1.0,
        0.05,
    );
    let success = success_probability(p, 3);
    assert_covers("success_rate", success, common::metric(&runs, "success_rate"), 0.01);
    let failed: Vec<Option<f64>> =
        common::metric(&runs, "success_rate").into_iter().map(|s| s.map(|s| 1.0 - s)).collect();
    assert_covers_scaled("failed share", 1.0 - success, failed, 1.0 - success, 0.2);
    for r in &runs {
        assert_eq!(r.metrics["duplicate_intents"], Some(0.0), "a lost request never executed");
    }
}

#[test]
fn lost_answers_at_the_same_rate_duplicate_where_lost_requests_do_not() {
    let p = 0.1;
    let answers = run(&load(&experiment("response_loss", p)), 4);
    let requests = run(&load(&experiment("request_loss", p)), 4);
    // A lost answer's work committed: its retry commits again unless it is
    // lost too; an intent is duplicated when its first answer is lost
    // (p), ... : about p of the intents.
    for (a, r) in answers.iter().zip(&requests) {
        let share = a.metrics["duplicate_intents"].unwrap() / a.metrics["intents"].unwrap();
        assert!((share - p).abs() < 0.01, "lost answers: duplicated share {share}");
        assert_eq!(r.metrics["duplicate_intents"], Some(0.0));
        // The caller sees the same: timeouts, and the same attempts.
        let (x, y) = (a.metrics["attempts_per_intent"].unwrap(), r.metrics["attempts_per_intent"].unwrap());
        assert!((x - y).abs() < 0.01, "attempts per intent {x} (answers lost) vs {y} (requests lost)");
    }
}
