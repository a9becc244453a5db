//! The retry loop against the geometric formulas: an `error` fault that
//! fails each attempt independently with probability p, and a policy of at
//! most n attempts that retries 503 at once (no backoff), give
//!
//! - attempts per intent E[A] = Σ_{i<n} p^i = (1 − p^n)/(1 − p),
//! - success probability 1 − p^n.
//!
//! The service has far more workers than the load needs, so nothing queues
//! and only the fault decides outcomes; the network latency is zero.
//!
//! Method: each (p, n) pair is a variant of one experiment; R independent
//! replications (fixed seeds) per variant give a Student-t confidence
//! interval at level [`common::LEVEL`] (99.9%) for each estimate, which must
//! contain the analytic value. The interval must also be tight relative to
//! what the check has to resolve: the failure probability p^n (not 1 − p^n,
//! which is close to 1) and the retries per intent E[A] − 1 (not E[A]).
//!
//! `cargo test --test retry_formulas -- --nocapture` prints every check.

use crate::common;

use common::{assert_covers, assert_covers_scaled, expected_attempts, success_probability};
use retrysim::analysis::run_all;

/// Intents per second.
const RATE: f64 = 30_000.0;

/// Replications per variant.
const REPLICATIONS: u32 = 12;

/// Intents arrive at 30 000/s for 2 s: 60 000 intents per replication,
/// 720 000 per variant. There is no queue, hence no initial transient to
/// cut: warmup is zero. The per-try timeout (50 ms against a 1 ms service
/// time that never waits) never fires.
const EXPERIMENT: &str = r#"
[experiment]
name = "retry formulas"
duration = "2s"
warmup = "0s"
seed = 31

[[clients]]
name = "c"
rate = "30000/s" # RATE
target = "api"
operation = "op"
policy = { max_attempts = 3, per_try_timeout = "50ms", retry_on = ["503"] }

[[operations]]
name = "op"

[[services]]
name = "api"
workers = 1000
service_time = { dist = "const", value = "1ms" }

[[faults]]
name = "flaky"
kind = "error"
target = "api"
probability = 0.1
status = 503

[network]
latency = { dist = "const", value = "0s" }
"#;

/// (p, n) pairs, whether 503 is in `retry_on`, and the duration in seconds.
/// p^n = 0.001 needs more intents for its CI to resolve p^n within 10%:
/// 10 s, 3.6 million intents, about 3 600 failures.
const CASES: [(f64, u32, bool, u32); 6] = [
    (0.1, 3, true, 10),
    (0.3, 3, true, 2),
    (0.5, 5, true, 2),
    (0.9, 2, true, 2),
    (0.3, 1, true, 2),
    // 503 not retryable: one attempt whatever max_attempts says. Under common
    // random numbers this variant sees the same draws as the one above, so
    // its results are identical to it.
    (0.3, 4, false, 2),
];

fn variants_toml() -> String {
    let mut out = String::from(EXPERIMENT);
    for (p, n, retry_503, duration_s) in CASES {
        let retry_on = if retry_503 { "[\"503\"]" } else { "[\"timeout\"]" };
        out.push_str(&format!(
            r#"
[[variants]]
name = "{}"
set = {{ "experiment.duration" = "{duration_s}s", "faults.flaky.probability" = {p}, "clients.c.policy.max_attempts" = {n}, "clients.c.policy.retry_on" = {retry_on} }}
"#,
            case_name(p, n, retry_503)
        ));
    }
    out
}

fn case_name(p: f64, n: u32, retry_503: bool) -> String {
    let r = if retry_503 { "" } else { ", 503 not retried" };
    format!("p={p}, n={n}{r}")
}

#[test]
fn attempts_and_success_follow_the_geometric_formulas() {
    let exp = common::load(&variants_toml());
    assert_eq!(exp.variants.len(), CASES.len());
    let set = run_all(&exp.variants, Some(REPLICATIONS), 0).expect("runs");
    for ((p, n, retry_503, duration_s), v) in CASES.into_iter().zip(&set.variants) {
        let name = case_name(p, n, retry_503);
        assert_eq!(v.scenario.variant, name);
        let runs = &v.runs;
        // Poisson arrivals at RATE over the variant's duration (no warmup).
        assert_covers(&format!("{name} intents"), RATE * duration_s as f64, common::metric(runs, "intents"), 0.01);
        // Attempts that 503 is not retried for are capped at one.
        let n_eff = if retry_503 { n } else { 1 };
        let attempts = expected_attempts(p, n_eff);
        let success = success_probability(p, n_eff);
        let failure = 1.0 - success;

        let measured_attempts = common::metric(runs, "attempts_per_intent");
        if n_eff == 1 {
            // Exactly one attempt per intent: no variance to build a CI from.
            assert!(
                measured_attempts.iter().all(|a| *a == Some(1.0)),
                "{name}: attempts_per_intent {measured_attempts:?}, expected exactly 1"
            );
            println!("{name:<34} attempts_per_intent exactly 1 in every replication");
        } else {
            assert_covers_scaled(
                &format!("{name} attempts_per_intent"),
                attempts,
                measured_attempts.clone(),
                attempts - 1.0,
                0.05,
            );
        }
        assert_covers(&format!("{name} success_rate"), success, common::metric(runs, "success_rate"), 0.05);
        let failures: Vec<Option<f64>> =
            common::metric(runs, "success_rate").into_iter().map(|s| s.map(|s| 1.0 - s)).collect();
        assert_covers(&format!("{name} failure = p^n"), failure, failures, 0.10);

        for (r, run) in runs.iter().enumerate() {
            // Every attempt reaches `api`: amplification is attempts per intent.
            assert_eq!(run.metrics["amplification"], measured_attempts[r], "{name}: replication {r}");
            // Rejections are answered on arrival and retries are immediate,
            // so a successful intent takes exactly one service time.
            let mean = run.metrics["latency_mean_s"].expect("successes");
            assert!((mean - 0.001).abs() < 1e-12, "{name}: latency {mean}");
            // Every failure is a 503 the policy could not retry, for the
            // right reason.
            let reason = if retry_503 { "max_attempts" } else { "not_retryable" };
            let intents = run.metrics["intents"].expect("intents");
            let ok = run.metrics["success_rate"].expect("rate") * intents;
            let denied: u64 = run.denials.values().sum();
            assert_eq!(
                run.denials.keys().collect::<Vec<_>>(),
                vec![reason],
                "{name}: replication {r}: denials {:?}",
                run.denials
            );
            assert_eq!(
                denied as f64,
                (intents - ok).round(),
                "{name}: replication {r}: every failed intent is one denial"
            );
        }
    }
}
