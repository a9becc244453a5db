//! Retry budgets bound amplification when a service fails most calls, and
//! count the retries they refuse (DESIGN §2 budgets, §5 `retries_denied_budget`).

use crate::common;

use common::{load, metric, run};

/// A service failing 90% of calls with 503; five attempts per intent.
fn experiment(budget: &str) -> String {
    experiment_failing(0.9, budget)
}

/// A service failing `p` of calls with 503; five attempts per intent.
fn experiment_failing(p: f64, budget: &str) -> String {
    format!(
        r#"
[experiment]
name = "budget under failure"
duration = "20s"
warmup = "2s"
replications = 4

[[clients]]
name = "web"
count = 100
rate = "1000/s"
target = "api"
policy = {{ max_attempts = 5, per_try_timeout = "1s", retry_on = ["503"], backoff = {{ kind = "constant", base = "10ms" }} {budget} }}

[[services]]
name = "api"
workers = 200
service_time = {{ dist = "const", value = "1ms" }}

[[faults]]
kind = "error"
target = "api"
probability = {p}
"#
    )
}

fn mean(values: &[Option<f64>]) -> f64 {
    let xs: Vec<f64> = values.iter().flatten().copied().collect();
    xs.iter().sum::<f64>() / xs.len() as f64
}

#[test]
fn without_a_budget_attempts_follow_the_geometric_formula_and_nothing_is_denied_by_budget() {
    let runs = run(&load(&experiment("")), 4);
    let amp = mean(&metric(&runs, "amplification"));
    // (1 - 0.9^5) / (1 - 0.9) = 4.0951
    assert!((amp - 4.0951).abs() < 0.05, "amplification {amp}");
    // No budget configured: the metric has no value (null), not 0.
    assert!(metric(&runs, "retries_denied_budget").iter().all(Option::is_none));
}

#[test]
fn a_shared_grpc_token_bucket_keeps_amplification_near_one_and_counts_denials() {
    let runs = run(&load(&experiment(r#", budget = { kind = "token_bucket", scope = "shared" }"#)), 4);
    let amp = mean(&metric(&runs, "amplification"));
    let intents = mean(&metric(&runs, "intents"));
    let denied = mean(&metric(&runs, "retries_denied_budget"));
    // Tokens come back at 0.1 per success (10% of ~1 attempt per intent) and
    // each retried failure takes one: about 0.01 retries per intent.
    assert!(amp < 1.0 + 0.1, "amplification {amp}");
    // Nearly every failed first attempt was refused by the budget.
    assert!(denied > 0.85 * 0.9 * intents, "denied {denied} of {intents}");
}

#[test]
fn a_token_bucket_does_not_throttle_when_failures_are_rare() {
    // 5% failures: a success adds 0.1 and a failure takes 1, so the bucket
    // stays full and every retry is allowed: (1 - 0.05^5) / 0.95 = 1.05263.
    let budget = r#", budget = { kind = "token_bucket", scope = "shared" }"#;
    let runs = run(&load(&experiment_failing(0.05, budget)), 4);
    let amp = mean(&metric(&runs, "amplification"));
    assert!((amp - 1.05263).abs() < 0.003, "amplification {amp}");
    // Only chance clusters of failures ever dip the bucket to its threshold.
    let denied = mean(&metric(&runs, "retries_denied_budget"));
    assert!(denied < 0.001 * mean(&metric(&runs, "intents")), "denied {denied}");
}

#[test]
fn a_ratio_budget_allows_its_share_of_requests_plus_the_reserve() {
    let runs = run(
        &load(&experiment(
            r#", budget = { kind = "ratio", ratio = 0.2, min_per_sec = 10, ttl = "10s", scope = "shared" }"#,
        )),
        4,
    );
    let amp = mean(&metric(&runs, "amplification"));
    // Retries <= 20% of first attempts + 10/s over 1000/s: amplification <= 1.21,
    // and the budget is used up (unconstrained it would be 4.1).
    assert!(amp <= 1.21 + 0.005 && amp > 1.18, "amplification {amp}");
    assert!(mean(&metric(&runs, "retries_denied_budget")) > 0.0);
}

#[test]
fn an_aws_quota_drains_and_then_allows_about_one_retry_per_five_first_try_successes() {
    let runs = run(&load(&experiment(r#", budget = { kind = "quota", scope = "shared" }"#)), 4);
    let amp = mean(&metric(&runs, "amplification"));
    // After the initial 500 are spent (100 retries), each first-try success
    // refunds 1 and a retry costs 5: retries per intent ~ 0.1 * 1 / 5 = 0.02.
    assert!(amp > 1.0 && amp < 1.05, "amplification {amp}");
}
