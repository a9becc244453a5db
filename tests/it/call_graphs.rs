//! Layered retries multiply; unknown outcomes retried without protection
//! duplicate side effects; outboxes with consumer dedup deliver once.
//! (DESIGN §3 `services.calls`, §4 downstream semantics.)

use crate::common;

use common::{load, run};
use retrysim::metrics::RunResult;

fn mean(runs: &[RunResult], key: &str) -> f64 {
    runs.iter().map(|r| r.metrics[key].unwrap()).sum::<f64>() / runs.len() as f64
}

fn service_mean(runs: &[RunResult], service: &str, key: &str) -> f64 {
    let v: Vec<f64> =
        runs.iter().map(|r| r.services.iter().find(|(n, _)| n == service).unwrap().1[key].unwrap()).collect();
    v.iter().sum::<f64>() / v.len() as f64
}

fn effect_mean(runs: &[RunResult], kind: &str, key: &str) -> f64 {
    let v: Vec<f64> = runs.iter().map(|r| r.effects.iter().find(|(n, _)| n == kind).unwrap().1[key].unwrap()).collect();
    v.iter().sum::<f64>() / v.len() as f64
}

/// SDK -> gateway -> orders -> db, each layer retrying up to `n` times on
/// 502/503, the db failing each attempt with probability `p`.
fn layers(n: u32, p: f64, rate: &str, duration: &str) -> String {
    let policy = format!(r#"{{ max_attempts = {n}, per_try_timeout = "10s", retry_on = ["502", "503"] }}"#);
    let mut toml = format!(
        r#"
[experiment]
name = "layers"
duration = "{duration}"

[[clients]]
name = "sdk"
rate = "{rate}"
target = "gateway"
policy = {policy}
"#
    );
    for (name, calls) in [("gateway", Some("orders")), ("orders", Some("db")), ("db", None)] {
        toml += &format!(
            "\n[[services]]\nname = \"{name}\"\nworkers = 10000\nservice_time = {{ dist = \"const\", value = \"1ms\" }}\n"
        );
        if let Some(to) = calls {
            toml += &format!("[[services.calls]]\nto = \"{to}\"\npolicy = {policy}\n");
        }
    }
    toml + &format!("\n[[faults]]\nkind = \"error\"\ntarget = \"db\"\nprobability = {p}\n")
}

#[test]
fn three_layers_of_four_attempts_send_exactly_64_requests_to_a_failing_bottom() {
    let runs = run(&load(&layers(4, 1.0, "100/s", "10s")), 2);
    for r in &runs {
        let per = |s: &str| r.services.iter().find(|(n, _)| n == s).unwrap().1["requests_per_intent"].unwrap();
        assert_eq!(per("gateway"), 4.0);
        assert_eq!(per("orders"), 16.0);
        assert_eq!(per("db"), 64.0);
        assert_eq!(r.metrics["amplification"], Some(64.0));
        assert_eq!(r.metrics["success_rate"], Some(0.0));
    }
}

#[test]
fn independent_bottom_failures_follow_the_layered_closed_form() {
    // E_{l+1} = E_l (1 - f_l^n) / (1 - f_l), f_{l+1} = f_l^n, from the bottom up.
    for (n, p) in [(4u32, 0.5f64), (3, 0.8)] {
        let runs = run(&load(&layers(n, p, "2000/s", "20s")), 4);
        let mut f = p;
        let mut expected = Vec::new();
        let mut e = 1.0;
        for _ in 0..3 {
            e *= (1.0 - f.powi(n as i32)) / (1.0 - f);
            f = f.powi(n as i32);
            expected.push(e);
        }
        // Requests per intent: db sees E_3, orders E_3 / E_1 ... compare db and success.
        let db = service_mean(&runs, "db", "requests_per_intent");
        assert!((db / expected[2] - 1.0).abs() < 0.01, "n={n} p={p}: db {db} vs {}", expected[2]);
        let success = mean(&runs, "success_rate");
        assert!((success - (1.0 - f)).abs() < 0.005, "n={n} p={p}: success {success} vs {}", 1.0 - f);
        // The gateway sees the client's attempts: (1 - f_2^n) / (1 - f_2).
        let f2 = p.powi((n * n) as i32);
        let gw = service_mean(&runs, "gateway", "requests_per_intent");
        assert!((gw - (1.0 - f2.powi(n as i32)) / (1.0 - f2)).abs() < 0.01, "gateway {gw}");
    }
}

/// A POST whose answer is lost with probability `p` after it committed.
fn lost_responses(p: f64, retry_unknown: bool) -> String {
    format!(
        r#"
[experiment]
name = "lost responses"
duration = "30s"

[[clients]]
name = "web"
rate = "500/s"
target = "orders"
operation = "create_order"
policy = {{ max_attempts = 3, per_try_timeout = "200ms", retry_on = ["timeout"], retry_unknown_without_key = {retry_unknown} }}

[[operations]]
name = "create_order"
idempotent = false

[[services]]
name = "orders"
workers = 100
service_time = {{ dist = "const", value = "2ms" }}
commits = "order"

[[faults]]
kind = "response_loss"
target = "orders"
probability = {p}
"#
    )
}

#[test]
fn retrying_lost_responses_without_a_key_duplicates_at_the_loss_rate() {
    let p = 0.1;
    let runs = run(&load(&lost_responses(p, true)), 4);
    let intents = mean(&runs, "intents");
    // An intent is duplicated when its first answer is lost (the retry commits again).
    let share = mean(&runs, "duplicate_intents") / intents;
    let se = (p * (1.0 - p) / (4.0 * intents)).sqrt();
    assert!((share - p).abs() < 5.0 * se, "duplicate share {share} vs {p}");
    // Three lost answers in a row fail the intent after three commits.
    let success = mean(&runs, "success_rate");
    assert!((success - (1.0 - p.powi(3))).abs() < 0.001, "success {success}");
    assert!((effect_mean(&runs, "order", "commits_per_intent") - (1.0 + p + p * p)).abs() < 0.01);
}

#[test]
fn not_retrying_lost_responses_duplicates_nothing_but_fails_those_intents() {
    let p = 0.1;
    let runs = run(&load(&lost_responses(p, false)), 4);
    let intents = mean(&runs, "intents");
    assert_eq!(mean(&runs, "duplicate_intents"), 0.0);
    let failed = 1.0 - mean(&runs, "success_rate");
    let se = (p * (1.0 - p) / (4.0 * intents)).sqrt();
    assert!((failed - p).abs() < 5.0 * se, "failed share {failed}");
    for r in &runs {
        // Each failed intent committed once: an orphan to reconcile.
        let failed = r.metrics["intents"].unwrap() * (1.0 - r.metrics["success_rate"].unwrap());
        assert_eq!(r.metrics["orphan_commits"].unwrap(), failed.round());
        assert!(r.failures.keys().all(|k| k == "timeout (unsafe)"), "{:?}", r.failures);
    }
}

/// Orders commit and write an outbox event for `email`, whose answers are
/// lost with probability 0.3, so the relay retries.
fn outbox(dedup: bool) -> String {
    format!(
        r#"
[experiment]
name = "outbox"
duration = "20s"

[[clients]]
name = "web"
rate = "200/s"
target = "orders"
operation = "create_order"
policy = {{ max_attempts = 1, per_try_timeout = "1s" }}

[[operations]]
name = "create_order"

[[services]]
name = "orders"
workers = 50
service_time = {{ dist = "const", value = "2ms" }}
commits = "order"
[[services.calls]]
to = "email"
when = "outbox"
relay_delay = {{ dist = "exp", mean = "50ms" }}
dedup = {dedup}
policy = {{ max_attempts = 20, per_try_timeout = "100ms", retry_on = ["timeout"], retry_unknown_without_key = true }}

[[services]]
name = "email"
workers = 50
service_time = {{ dist = "const", value = "5ms" }}
commits = "email"

[[faults]]
kind = "response_loss"
target = "email"
probability = 0.3
"#
    )
}

#[test]
fn an_outbox_with_consumer_dedup_delivers_each_event_exactly_once() {
    let runs = run(&load(&outbox(true)), 3);
    assert_eq!(mean(&runs, "success_rate"), 1.0);
    assert_eq!(mean(&runs, "duplicate_intents"), 0.0);
    assert_eq!(mean(&runs, "lost_effects"), 0.0);
    assert_eq!(effect_mean(&runs, "email", "commits_per_intent"), 1.0);
    assert_eq!(mean(&runs, "outbox_events_per_intent"), 1.0);
    // The relay did retry: more than one attempt per event on the relay edge.
    let relay: f64 = runs
        .iter()
        .map(|r| r.edges.iter().find(|(n, _)| n == "orders->email").unwrap().1["attempts_per_intent"].unwrap())
        .sum::<f64>()
        / 3.0;
    assert!((relay - 1.0 / 0.7).abs() < 0.02, "relay attempts per event {relay}");
}

#[test]
fn an_outbox_without_dedup_duplicates_events_its_relay_retries() {
    let runs = run(&load(&outbox(false)), 3);
    let intents = mean(&runs, "intents");
    // Every relay attempt executes: emails per intent = attempts per event = 1 / 0.7.
    let emails = effect_mean(&runs, "email", "commits_per_intent");
    assert!((emails - 1.0 / 0.7).abs() < 0.02, "emails per intent {emails}");
    let dup = mean(&runs, "duplicate_intents") / intents;
    assert!((dup - 0.3).abs() < 0.02, "duplicated share {dup}");
}

#[test]
fn a_failed_after_commit_call_leaves_the_answer_ok_and_counts_a_lost_effect() {
    let exp = load(
        r#"
[experiment]
name = "after commit"
duration = "10s"

[[clients]]
name = "web"
rate = "100/s"
target = "orders"
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[services]]
name = "orders"
workers = 10
service_time = { dist = "const", value = "1ms" }
commits = "order"
[[services.calls]]
to = "email"
when = "after_commit"

[[services]]
name = "email"
workers = 10
service_time = { dist = "const", value = "1ms" }

[[faults]]
kind = "error"
target = "email"
probability = 0.25
"#,
    );
    let runs = run(&exp, 3);
    assert_eq!(mean(&runs, "success_rate"), 1.0);
    let lost = mean(&runs, "lost_effects") / mean(&runs, "intents");
    assert!((lost - 0.25).abs() < 0.03, "lost share {lost}");
}

#[test]
fn a_failed_before_commit_call_fails_the_request_without_commit() {
    let exp = load(
        r#"
[experiment]
name = "before commit"
duration = "10s"

[[clients]]
name = "web"
rate = "100/s"
target = "orders"
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[services]]
name = "orders"
workers = 10
service_time = { dist = "const", value = "1ms" }
commits = "order"
[[services.calls]]
to = "payments"
policy = { max_attempts = 1, per_try_timeout = "50ms" }

[[services]]
name = "payments"
workers = 10
service_time = { dist = "const", value = "1ms" }

[[faults]]
kind = "response_loss"
target = "payments"
probability = 1.0
"#,
    );
    for r in run(&exp, 2) {
        assert_eq!(r.metrics["success_rate"], Some(0.0));
        // A downstream timeout makes the service answer 504, and nothing commits.
        assert!(r.failures.keys().all(|k| k == "504"), "{:?}", r.failures);
        assert_eq!(r.effects[0].1["commits_per_intent"], Some(0.0));
    }
}
