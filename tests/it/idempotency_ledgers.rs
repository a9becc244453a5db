//! Idempotency ledgers turn retries of unknown outcomes into exactly-once
//! effects — until a crash meets a memory ledger or a non-atomic record
//! (DESIGN §4 ledger, §3 `idempotency` and the `crash` fault).

use crate::common;

use common::{load, run};
use retrysim::metrics::RunResult;

fn mean(runs: &[RunResult], key: &str) -> f64 {
    runs.iter().map(|r| r.metrics[key].unwrap()).sum::<f64>() / runs.len() as f64
}

/// A keyed POST whose answers are lost with probability 0.1 (retried on
/// timeout), to a service with the given ledger and optional crash.
fn keyed(ledger: &str, crash: &str) -> String {
    format!(
        r#"
[experiment]
name = "keyed"
duration = "30s"

[[clients]]
name = "web"
rate = "300/s"
target = "orders"
operation = "create_order"
idempotency_key = true
policy = {{ max_attempts = 5, per_try_timeout = "200ms", deadline = "20s", retry_on = ["timeout", "reset", "connect_error", "409"], backoff = {{ kind = "exponential", base = "100ms", cap = "2s", jitter = "full" }} }}

[[operations]]
name = "create_order"

[[services]]
name = "orders"
workers = 64
service_time = {{ dist = "const", value = "20ms" }}
commits = "order"
{ledger}

[[faults]]
kind = "response_loss"
target = "orders"
probability = 0.1
{crash}
"#
    )
}

const CRASH: &str = "\n[[faults]]\nkind = \"crash\"\ntarget = \"orders\"\nstart = \"15s\"\nrestart_after = \"1s\"\n";

#[test]
fn keys_and_a_durable_atomic_ledger_leave_no_duplicate_and_success_unchanged() {
    let without = run(&load(&keyed("", "")), 3);
    let with = run(&load(&keyed("idempotency = { store = \"durable\", atomic = true }", "")), 3);
    // Without a ledger the key does nothing: about 10% of intents are duplicated.
    let share = mean(&without, "duplicate_intents") / mean(&without, "intents");
    assert!((share - 0.1).abs() < 0.01, "no ledger: duplicated share {share}");
    assert_eq!(mean(&with, "duplicate_intents"), 0.0);
    assert!(mean(&with, "ledger_replays") > 0.0, "lost answers were replayed");
    let (a, b) = (mean(&without, "success_rate"), mean(&with, "success_rate"));
    assert!((a - b).abs() < 1e-3, "success {a} without vs {b} with the ledger");
}

#[test]
fn a_memory_ledger_and_a_crash_duplicate_again_but_a_durable_one_does_not() {
    let memory = run(&load(&keyed("idempotency = { store = \"memory\" }", CRASH)), 3);
    let durable = run(&load(&keyed("idempotency = { store = \"durable\", lease = \"1s\" }", CRASH)), 3);
    assert!(mean(&memory, "duplicate_intents") > 0.0, "the crash emptied the memory ledger");
    assert_eq!(mean(&durable, "duplicate_intents"), 0.0);
    // The crash reset requests in progress; their placeholders were recovered after the lease.
    assert!(mean(&durable, "ledger_recoveries") > 0.0);
    assert_eq!(mean(&durable, "stuck_placeholders"), 0.0);
}

#[test]
fn a_non_atomic_ledger_and_a_crash_between_write_and_record_duplicate() {
    // The record is written 50 ms after the business write: a crash in
    // between leaves a placeholder that is recovered and executed again.
    let runs = run(
        &load(&keyed(
            "idempotency = { store = \"durable\", atomic = false, record_delay = \"50ms\", lease = \"1s\" }",
            CRASH,
        )),
        3,
    );
    assert!(mean(&runs, "duplicate_intents") > 0.0);
    let atomic = run(&load(&keyed("idempotency = { store = \"durable\", atomic = true, lease = \"1s\" }", CRASH)), 3);
    assert_eq!(mean(&atomic, "duplicate_intents"), 0.0);
}

#[test]
fn a_never_expiring_lease_leaves_placeholders_stuck_after_a_crash() {
    let runs = run(&load(&keyed("idempotency = { store = \"durable\", lease = \"never\" }", CRASH)), 2);
    assert!(mean(&runs, "stuck_placeholders") > 0.0);
    assert!(mean(&runs, "ledger_409") > 0.0, "retries of the crashed requests get 409 forever");
}

#[test]
fn the_same_key_with_another_body_gets_422_never_the_old_result() {
    let exp = load(
        r#"
[experiment]
name = "key reuse"
duration = "20s"

[[clients]]
name = "buggy"
rate = "200/s"
target = "orders"
operation = "create_order"
idempotency_key = true
key_reuse_rate = 0.2
policy = { max_attempts = 1, per_try_timeout = "1s" }

[[operations]]
name = "create_order"

[[services]]
name = "orders"
workers = 16
service_time = { dist = "const", value = "2ms" }
commits = "order"
idempotency = { ttl = "1h" }
"#,
    );
    for r in run(&exp, 2) {
        let intents = r.metrics["intents"].unwrap();
        let rejected = r.failures.get("422").copied().unwrap_or(0) as f64;
        // A reused key is the previous intent's: it has a record (another
        // body: 422) unless that intent reused a key itself: r (1 - r) = 0.16.
        assert!((rejected / intents - 0.16).abs() < 0.025, "422 share {}", rejected / intents);
        assert_eq!(r.metrics["ledger_422"], Some(rejected));
        assert_eq!(r.metrics["ledger_replays"], Some(0.0), "no conflicting request got the old result");
        assert_eq!(r.metrics["duplicate_intents"], Some(0.0));
    }
}

#[test]
fn two_identical_keys_at_once_execute_once() {
    // The first attempt is slow (1 s of work) and times out after 100 ms;
    // the retry arrives while it is in progress: 409 (conflict) or held
    // until it completes (wait). Either way the order is written once.
    for (mode, expect_409) in [("conflict", true), ("wait", false)] {
        let exp = load(&format!(
            r#"
[experiment]
name = "concurrent duplicates"
duration = "10s"

[[clients]]
name = "web"
rate = "50/s"
target = "orders"
operation = "create_order"
idempotency_key = true
policy = {{ max_attempts = 20, per_try_timeout = "100ms", deadline = "30s", retry_on = ["timeout", "409"], backoff = {{ kind = "constant", base = "200ms" }} }}

[[operations]]
name = "create_order"

[[services]]
name = "orders"
workers = 500
service_time = {{ dist = "const", value = "1s" }}
commits = "order"
idempotency = {{ in_progress = "{mode}" }}
"#
        ));
        for r in run(&exp, 2) {
            assert_eq!(r.metrics["duplicate_intents"], Some(0.0), "{mode}");
            assert_eq!(r.effects[0].1["commits_per_intent"], Some(1.0), "{mode}: one execution per intent");
            assert_eq!(r.metrics["ledger_409"].unwrap() > 0.0, expect_409, "{mode}");
        }
    }
}

#[test]
fn without_a_crash_no_placeholder_is_left_in_progress_even_with_delayed_records() {
    // The run goes on until the last delayed record is written.
    let runs =
        run(&load(&keyed("idempotency = { atomic = false, record_delay = \"50ms\", lease = \"never\" }", "")), 2);
    assert_eq!(mean(&runs, "stuck_placeholders"), 0.0);
}
