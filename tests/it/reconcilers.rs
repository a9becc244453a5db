//! Reconcilers repair downstream effects left unknown. A reconciler with a
//! pass every E that takes effects older than O repairs an effect that
//! failed at t at the first pass after t + O: within [t + O, t + O + E],
//! plus the repair's own work (a status query, then the effect again). For
//! failures spread evenly over time the mean time to consistency is
//! O + E/2 + the repair's work, and nothing is left lost.

use crate::common;

use common::{assert_covers, load, run};

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
    let err = common::refused(&ok.replace("batch = 100000", "batch = 100000\naction = \"compensate\""));
    assert!(err.contains("reconcilers[0].action") && err.contains("not modelled yet"), "{err}");
    let err = common::refused(&ok.replace("when = \"after_commit\"", "when = \"before_commit\""));
    assert!(err.contains("services.orders.reconcilers") && err.contains("no `after_commit` or `outbox` call"), "{err}");
}
