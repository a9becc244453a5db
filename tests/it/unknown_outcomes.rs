//! Outcomes the caller cannot read. `request_loss`: a request lost on its
//! way in never executes, and its caller sees the same per-try timeout as
//! for a lost answer. Lost with probability p independently per attempt and
//! retried on timeout up to n attempts, an intent succeeds with
//! probability 1 − p^n after (1 − p^n)/(1 − p) attempts on average, and
//! nothing commits twice; the same p of lost *answers* duplicates about p
//! of the intents when they are retried blindly, and none when the caller
//! asks for the state first (`on_unknown = "query"`).

use crate::common;

use common::{assert_covers, assert_covers_scaled, expected_attempts, load, run, success_probability};

/// A non-idempotent POST (no key, no ledger, retried blindly on timeout)
/// to a service with ample workers, at zero network latency: only the
/// fault decides outcomes.
fn experiment(kind: &str, p: f64) -> String {
    with_policy(kind, p, "retry_unknown_without_key = true")
}

/// [`experiment`] with `extra` in the client's policy instead of blind retries.
fn with_policy(kind: &str, p: f64, extra: &str) -> String {
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
policy = {{ max_attempts = 3, per_try_timeout = "20ms", retry_on = ["timeout"], {extra} }}

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

#[test]
fn querying_the_state_of_a_lost_answer_never_duplicates_and_costs_a_query_per_loss() {
    // Answers lost with p = 0.1 (the queries' answers too). An intent whose
    // first answer is lost asks (one query), asks again if that answer is
    // lost as well (p): p + p^2 queries and 1 + p + p^2 attempts per
    // intent, success 1 - p^3 as with blind retries, no duplicate.
    let p = 0.1;
    let runs = run(&load(&with_policy("response_loss", p, "on_unknown = \"query\"")), 8);
    assert_covers("status_queries_per_intent", p + p * p, common::metric(&runs, "status_queries_per_intent"), 0.05);
    let attempts = 1.0 + p + p * p;
    assert_covers_scaled(
        "attempts_per_intent",
        attempts,
        common::metric(&runs, "attempts_per_intent"),
        attempts - 1.0,
        0.05,
    );
    let failed: Vec<Option<f64>> =
        common::metric(&runs, "success_rate").into_iter().map(|s| s.map(|s| 1.0 - s)).collect();
    assert_covers_scaled("failed share", p * p * p, failed, p * p * p, 0.5);
    for r in &runs {
        assert_eq!(r.metrics["duplicate_intents"], Some(0.0), "a committed call is found, not repeated");
    }
    // Blind retries of the same losses duplicate about p of the intents.
    let blind = run(&load(&experiment("response_loss", p)), 4);
    assert_eq!(blind[0].metrics["status_queries_per_intent"], None, "no policy queries");
    let share = blind[0].metrics["duplicate_intents"].unwrap() / blind[0].metrics["intents"].unwrap();
    assert!((share - p).abs() < 0.01, "blind retries: duplicated share {share}");
}

#[test]
fn a_lost_request_is_not_found_and_sent_again_and_give_up_leaves_it_unknown() {
    // Requests lost with p = 0.2 on their way in, 3 attempts: a timeout
    // asks; the query (lost with p too, then asked again) finds nothing and
    // the operation goes again if an attempt is left: success
    // (1 - p) + p (1 - p)^2, p + p^2 queries per intent.
    let p = 0.2;
    let query = run(&load(&with_policy("request_loss", p, "on_unknown = \"query\"")), 4);
    let give_up =
        run(&load(&with_policy("request_loss", p, "on_unknown = \"give_up\", retry_unknown_without_key = true")), 4);
    for (q, g) in query.iter().zip(&give_up) {
        assert_eq!(q.metrics["duplicate_intents"], Some(0.0));
        let queries = q.metrics["status_queries_per_intent"].unwrap();
        assert!((queries - (p + p * p)).abs() < 0.01, "status queries per intent {queries}");
        // give_up ends every timeout at once: success is 1 - p exactly in
        // expectation, one attempt each.
        assert_eq!(g.metrics["attempts_per_intent"], Some(1.0));
        let s = g.metrics["success_rate"].unwrap();
        assert!((s - (1.0 - p)).abs() < 0.01, "give_up: success {s}");
        let asked = q.metrics["success_rate"].unwrap();
        assert!((asked - ((1.0 - p) + p * (1.0 - p) * (1.0 - p))).abs() < 0.01, "query: success {asked}");
    }
}
