//! Reconcilers repair downstream effects left unknown. A reconciler with a
//! pass every E that takes effects older than O repairs an effect that
//! failed at t at the first pass after t + O: within [t + O, t + O + E],
//! plus the repair's own work (a status query, then the effect again). For
//! failures spread evenly over time the mean time to consistency is
//! O + E/2 + the repair's work, and nothing is left lost.

use crate::common;

use common::{assert_covers, load, run};
use retrysim::metrics::RunResult;

/// `orders` writes an order and then notifies `mailer` (after the
/// commit, one attempt). `mailer` answers 503 to everything for the first
/// 20 s, the whole arrival window: every notification fails and is left
/// unknown. The reconciler asks `mailer` for the intent's email (1 ms of
/// work: not found) and sends it again (2 ms), which succeeds since the
/// fault is over by then. Zero network latency.
fn experiment(every: &str, older_than: &str) -> String {
    format!(
        r#"
[experiment]
name = "reconcilers"
duration = "20s"
warmup = "0s"
drain_limit = "60s"
seed = 3

[[clients]]
name = "web"
rate = "100/s"
target = "orders"
operation = "create_order"
policy = {{ max_attempts = 1, per_try_timeout = "1s" }}

[[operations]]
name = "create_order"

[[operations]]
name = "send_email"
status_time = "1ms"

[[services]]
name = "orders"
workers = 50
service_time = {{ dist = "const", value = "2ms" }}
commits = "order"

[[services.calls]]
to = "mailer"
when = "after_commit"
operation = "send_email"
policy = {{ max_attempts = 1, per_try_timeout = "1s" }}

[[services.reconcilers]]
every = "{every}"
older_than = "{older_than}"
batch = 100000

[[services]]
name = "mailer"
workers = 50
service_time = {{ dist = "const", value = "2ms" }}
commits = "email"

[[faults]]
kind = "error"
target = "mailer"
status = 503
duration = "20s"

[network]
latency = {{ dist = "const", value = "0s" }}
"#
    )
}

#[test]
fn a_reconciler_repairs_every_unknown_effect_within_older_than_plus_one_pass() {
    let (e, o) = (2.0, 30.0);
    let runs = run(&load(&experiment("2s", "30s")), 6);
    // Mean O + E/2 + 3 ms of repair work.
    assert_covers("time_to_consistency_s", o + e / 2.0 + 0.003, common::metric(&runs, "time_to_consistency_s"), 0.01);
    for r in &runs {
        let p99 = r.metrics["time_to_consistency_p99_s"].unwrap();
        assert!((o..=o + e + 0.01).contains(&p99), "p99 {p99} outside [O, O + E] plus the repair");
        // Every email sent in the window failed and was repaired; an intent
        // of the window's last 2 ms sends its email after the fault ended.
        let (intents, reconciled) = (r.metrics["intents"].unwrap(), r.metrics["reconciled"].unwrap());
        assert!(reconciled <= intents && reconciled >= intents - 3.0, "{reconciled} repaired of {intents}");
        assert_eq!(r.metrics["unresolved_at_end"], Some(0.0));
        assert_eq!(r.metrics["lost_effects"], Some(0.0), "repaired effects are not lost");
        assert_eq!(r.metrics["success_rate"], Some(1.0), "the order's answer stays ok");
    }
}

#[test]
fn effects_still_unknown_when_the_run_ends_are_counted_and_stay_lost() {
    // Older than 5 min: no pass reaches them before the drain limit.
    let runs = run(&load(&experiment("2s", "300s")), 2);
    for r in &runs {
        let (intents, left) = (r.metrics["intents"].unwrap(), r.metrics["unresolved_at_end"].unwrap());
        assert_eq!(r.metrics["reconciled"], Some(0.0));
        assert!(left <= intents && left >= intents - 3.0, "{left} left of {intents}");
        assert_eq!(r.metrics["lost_effects"], Some(left));
        assert_eq!(r.metrics["time_to_consistency_s"], None);
    }
}

#[test]
fn a_reconciler_without_a_pass_interval_work_or_a_known_action_is_refused_by_name() {
    let ok = experiment("2s", "30s");
    let err = common::refused(&ok.replace("every = \"2s\"\n", ""));
    assert!(err.contains("services.orders.reconcilers[0].every") && err.contains("required"), "{err}");
    let err = common::refused(&ok.replace("batch = 100000", "batch = 100000\naction = \"refund\""));
    assert!(err.contains("reconcilers[0].action") && err.contains("query_downstream and compensate"), "{err}");
    let err = common::refused(&ok.replace("when = \"after_commit\"", "when = \"before_commit\""));
    assert!(
        err.contains("services.orders.reconcilers")
            && err.contains("no `idempotency` ledger and no `after_commit` or `outbox` call"),
        "{err}"
    );
}

/// Keyed POSTs (retried on timeout and 409) to a service with a durable
/// ledger whose placeholders are never recovered by a lease; 10% of the
/// answers are lost, and the service crashes at 15 s for 1 s.
fn keyed(ledger: &str, reconciler: &str) -> String {
    format!(
        r#"
[experiment]
name = "stuck records"
duration = "30s"
seed = 2

[[clients]]
name = "web"
rate = "300/s"
target = "orders"
operation = "create_order"
idempotency_key = true
policy = {{ max_attempts = 8, per_try_timeout = "200ms", deadline = "20s", retry_on = ["timeout", "reset", "connect_error", "409"], backoff = {{ kind = "exponential", base = "200ms", cap = "2s", jitter = "full" }} }}

[[operations]]
name = "create_order"

[[services]]
name = "orders"
workers = 64
service_time = {{ dist = "const", value = "20ms" }}
commits = "order"
idempotency = {{ {ledger} }}
{reconciler}

[[faults]]
kind = "response_loss"
target = "orders"
probability = 0.1

[[faults]]
kind = "crash"
target = "orders"
start = "15s"
restart_after = "1s"
"#
    )
}

const RECONCILER: &str = "\n[[services.reconcilers]]\nevery = \"1s\"\nolder_than = \"2s\"\n";

#[test]
fn a_reconciler_resolves_the_placeholders_a_crash_left_and_completes_records_whose_write_happened() {
    let never = "store = \"durable\", lease = \"never\"";
    let stuck = run(&load(&keyed(never, "")), 2);
    let fixed = run(&load(&keyed(never, RECONCILER)), 2);
    for (s, f) in stuck.iter().zip(&fixed) {
        assert!(s.metrics["stuck_placeholders"].unwrap() > 0.0, "the crash strands placeholders");
        assert_eq!(f.metrics["stuck_placeholders"], Some(0.0), "the reconciler resolved them");
        assert!(f.metrics["reconciled"].unwrap() > 0.0);
        assert_eq!(
            f.metrics["duplicate_intents"],
            Some(0.0),
            "an atomic ledger's placeholder guards no write: removed"
        );
        assert!(f.metrics["success_rate"].unwrap() > s.metrics["success_rate"].unwrap(), "retries get through again");
    }
    // Not atomic: the record is written 50 ms after the order, and the
    // crash loses the pending ones. A lease executes those orders again; a
    // reconciler finds the order written and completes the record instead.
    let late = "store = \"durable\", atomic = false, record_delay = \"50ms\"";
    let leased = run(&load(&keyed(&format!("{late}, lease = \"1s\""), "")), 2);
    let reconciled = run(&load(&keyed(&format!("{late}, lease = \"never\""), RECONCILER)), 2);
    for (l, r) in leased.iter().zip(&reconciled) {
        assert!(l.metrics["duplicate_intents"].unwrap() > 0.0, "the lease re-executes written orders");
        assert_eq!(r.metrics["duplicate_intents"], Some(0.0), "the reconciler completes their records");
        assert_eq!(r.metrics["stuck_placeholders"], Some(0.0));
    }
}

#[test]
fn the_audit_checks_that_a_reconciler_resolves_what_a_crash_left_in_time() {
    let never = "store = \"durable\", lease = \"never\"";
    let verdict = |reconciler: &str| {
        let exp = load(&keyed(never, reconciler));
        let findings = retrysim::analysis::audit::audit(&exp.variants[0]);
        let f = findings.iter().find(|f| f.breakpoint == "crash after reservation").expect("the breakpoint is audited");
        f.failure.clone()
    };
    assert_eq!(verdict(RECONCILER), None, "every placeholder resolved within every + older_than");
    // One record every 5 s cannot keep up with what the crash left.
    let slow = RECONCILER
        .replace("every = \"1s\"", "every = \"5s\"")
        .replace("older_than = \"2s\"", "older_than = \"2s\"\nbatch = 1");
    let failure = verdict(&slow).expect("a reconciler of one record per second falls behind");
    assert!(failure.contains("unresolved"), "{failure}");
}

/// `orders` writes an order, then charges `payments` (after the commit,
/// one attempt, not idempotent). 10% of the charges are lost on the way in
/// and 20% of the others lose their answer: 0.1 + 0.9 × 0.2 = 28% of the
/// charges are left unknown, and 20 of those 28 points did charge. The
/// faults last the whole run, repairs included.
fn charges(action: &str) -> String {
    format!(
        r#"
[experiment]
name = "compensation"
duration = "20s"
warmup = "0s"
drain_limit = "60s"
seed = 5

[[clients]]
name = "web"
rate = "200/s"
target = "orders"
operation = "create_order"
policy = {{ max_attempts = 1, per_try_timeout = "1s" }}

[[operations]]
name = "create_order"

[[operations]]
name = "charge"
idempotent = false
status_time = "1ms"

[[services]]
name = "orders"
workers = 50
service_time = {{ dist = "const", value = "2ms" }}
commits = "order"

[[services.calls]]
to = "payments"
when = "after_commit"
operation = "charge"
policy = {{ max_attempts = 1, per_try_timeout = "100ms" }}

[[services.reconcilers]]
every = "1s"
older_than = "2s"
batch = 100000
action = "{action}"

[[services]]
name = "payments"
workers = 50
service_time = {{ dist = "const", value = "2ms" }}
commits = "charge"

[[faults]]
kind = "request_loss"
target = "payments"
probability = 0.1

[[faults]]
kind = "response_loss"
target = "payments"
probability = 0.2

[network]
latency = {{ dist = "const", value = "0s" }}
"#
    )
}

fn commits(r: &RunResult, kind: &str) -> f64 {
    r.effects.iter().find(|(n, _)| n == kind).expect("kind").1["commits_per_intent"].expect("commits")
}

#[test]
fn a_compensating_reconciler_rolls_back_every_unknown_charge_and_its_order_and_a_querying_one_completes_them() {
    let undone = run(&load(&charges("compensate")), 10);
    let completed = run(&load(&charges("query_downstream")), 4);
    let share: Vec<Option<f64>> =
        undone.iter().map(|r| Some(r.metrics["compensated"].unwrap() / r.metrics["intents"].unwrap())).collect();
    assert_covers("compensated per intent", 0.1 + 0.9 * 0.2, share, 0.1);
    for (u, c) in undone.iter().zip(&completed) {
        let (intents, compensated) = (u.metrics["intents"].unwrap(), u.metrics["compensated"].unwrap());
        // Every unknown charge was rolled back with its order: each intent
        // ends with an order and a charge, or with neither.
        assert_eq!(u.metrics["reconciled"], Some(compensated));
        assert_eq!(u.metrics["unresolved_at_end"], Some(0.0));
        assert_eq!(u.metrics["lost_effects"], Some(0.0), "a rolled-back intent misses no effect");
        let kept = 1.0 - compensated / intents;
        assert!((commits(u, "order") - kept).abs() < 1e-9, "orders {} kept {kept}", commits(u, "order"));
        assert!((commits(u, "charge") - kept).abs() < 1e-9, "charges {} kept {kept}", commits(u, "charge"));
        // Asking first completes them instead: one order and one charge each.
        assert_eq!(c.metrics["compensated"], None, "no compensating reconciler");
        assert!(c.metrics["reconciled"].unwrap() > 0.2 * c.metrics["intents"].unwrap());
        assert_eq!(c.metrics["lost_effects"], Some(0.0));
        assert_eq!(commits(c, "order"), 1.0);
        assert_eq!(commits(c, "charge"), 1.0);
    }
}
