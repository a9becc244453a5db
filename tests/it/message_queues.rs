//! Message queues deliver at least once. With a visibility timeout V and a
//! consumer with spare workers whose processing time is exponential with
//! mean m, a delivery not acknowledged within V is delivered again: the
//! share of messages delivered twice or more is P(S + 2L > V) =
//! e^(-(V - 2L)/m), with L the one-way latency of the delivery and of the
//! acknowledgement (V = m: 0.368 at L = 0, e^(-0.96) = 0.383 at L = m/50).
//! The consumer's dedup absorbs the duplicates; a message that always
//! fails goes to the dead-letter queue after `max_receives` deliveries.

use crate::common;

use common::{assert_covers, load, run};

/// `orders` commits an order and publishes an email through queue
/// `emails` (visibility 50 ms) to `mailer`, whose processing time is
/// exponential with mean 50 ms and whose 1000 workers are never all busy.
fn experiment(latency: &str, extra_call: &str, extra_queue: &str, extra: &str) -> String {
    format!(
        r#"
[experiment]
name = "queues"
duration = "10s"
warmup = "0s"
seed = 9

[[clients]]
name = "web"
rate = "2000/s"
target = "orders"
operation = "create_order"
policy = {{ max_attempts = 1, per_try_timeout = "1s" }}

[[operations]]
name = "create_order"

[[services]]
name = "orders"
workers = 100
service_time = {{ dist = "const", value = "1ms" }}
commits = "order"

[[services.calls]]
to = "mailer"
when = "after_commit"
via = "emails"
latency = {{ dist = "const", value = "{latency}" }}
{extra_call}

[[services]]
name = "mailer"
workers = 1000
service_time = {{ dist = "exp", mean = "50ms" }}
commits = "email"

[[queues]]
name = "emails"
visibility_timeout = "50ms"
{extra_queue}

[network]
latency = {{ dist = "const", value = "0s" }}
{extra}
"#
    )
}

#[test]
fn a_delivery_slower_than_the_visibility_timeout_is_delivered_again_as_often_as_the_exponential_tail_says() {
    for (latency, l_ms) in [("0s", 0.0), ("1ms", 1.0)] {
        let runs = run(&load(&experiment(latency, "", "", "")), 6);
        let share = (-(50.0 - 2.0 * l_ms) / 50.0f64).exp();
        assert_covers(
            &format!("duplicate_deliveries at L = {latency}"),
            share,
            common::metric(&runs, "duplicate_deliveries"),
            0.05,
        );
        for r in &runs {
            // Without dedup each extra delivery commits a second email.
            let intents = r.metrics["intents"].unwrap();
            let duplicated = r.metrics["duplicate_intents"].unwrap() / intents;
            assert!((duplicated - share).abs() < 0.02, "duplicated share {duplicated} against {share}");
            assert_eq!(r.metrics["dead_letters"], Some(0.0));
            assert_eq!(r.metrics["lost_effects"], Some(0.0));
        }
    }
}

#[test]
fn the_consumers_dedup_commits_each_message_once() {
    let runs = run(&load(&experiment("0s", "dedup = true", "", "")), 3);
    for r in &runs {
        assert!(r.metrics["duplicate_deliveries"].unwrap() > 0.3, "messages are still delivered twice");
        assert_eq!(r.metrics["duplicate_intents"], Some(0.0), "but their second delivery commits nothing");
    }
}

#[test]
fn a_message_that_always_fails_goes_to_the_dead_letter_queue_after_max_receives() {
    let poison = "[[faults]]\nkind = \"error\"\ntarget = \"mailer\"\nstatus = 500\n";
    let runs = run(&load(&experiment("0s", "", "max_receives = 3", poison)), 2);
    for r in &runs {
        let intents = r.metrics["intents"].unwrap();
        assert_eq!(r.metrics["dead_letters"], Some(intents), "every email is dead-lettered");
        assert_eq!(r.metrics["lost_effects"], Some(intents));
        assert_eq!(r.metrics["redeliveries"], Some(2.0), "delivered 3 times each: 2 beyond the first");
        assert_eq!(r.metrics["duplicate_deliveries"], Some(1.0));
        assert_eq!(r.metrics["success_rate"], Some(1.0), "the order's answer does not wait for the email");
        // The queue's own entry says the same.
        let (name, q) = &r.queues[0];
        assert_eq!(name, "emails");
        assert_eq!((q["messages"], q["dead_letters"], q["dropped"]), (Some(intents), Some(intents), Some(0.0)));
        assert_eq!(q["redeliveries"], Some(2.0));
        assert_eq!(q["message_age_p99_s"], None, "nothing was acknowledged");
        // Each message stays exactly 3 visibility timeouts (150 ms): by
        // Little's law a bin's mean depth is its arrivals per second x 0.15 s
        // (about 300; the last 150 ms of the bin before carry over).
        let rows = r.series.rows();
        let (bin_ns, bin_s) = (r.series.bin() as f64, r.series.bin() as f64 / 1e9);
        for row in &rows[1..9] {
            let (depth, little) = (row.queue_depth_area[0] / bin_ns, row.offered as f64 / bin_s * 0.15);
            assert!((depth - little).abs() < 0.03 * little, "mean depth {depth}, Little's law {little}");
        }
    }
}

#[test]
fn messages_still_in_their_queue_when_the_run_ends_are_left_not_lost() {
    // Every delivery fails and nothing dead-letters them: the messages are
    // delivered again and again until the drain limit ends the run.
    let poison = "[[faults]]\nkind = \"error\"\ntarget = \"mailer\"\nstatus = 500\n";
    let toml = experiment("0s", "", "", poison)
        .replace("seed = 9", "seed = 9\ndrain_limit = \"1s\"")
        .replace("rate = \"2000/s\"", "rate = \"200/s\"");
    for r in &run(&load(&toml), 1) {
        let intents = r.metrics["intents"].unwrap();
        let (_, q) = &r.queues[0];
        assert_eq!((q["messages"], q["left_at_end"]), (Some(intents), Some(intents)), "{q:?}");
        assert_eq!((q["dead_letters"], q["dropped"]), (Some(0.0), Some(0.0)));
        assert_eq!(r.metrics["lost_effects"], Some(0.0), "still in the queue, not lost");
    }
    let r = &run(&load(&experiment("0s", "", "", "")), 1)[0];
    assert_eq!(r.queues[0].1["left_at_end"], Some(0.0), "a healthy consumer empties the queue");
}

#[test]
fn a_queue_nobody_publishes_to_or_a_call_through_a_missing_queue_is_refused_by_name() {
    let ok = experiment("0s", "", "", "");
    let err = common::refused(&ok.replace("via = \"emails\"", "via = \"sms\""));
    assert!(err.contains("services.orders.calls.mailer.via") && err.contains("no queue named \"sms\""), "{err}");
    let err = common::refused(&ok.replace("via = \"emails\"\n", ""));
    assert!(err.contains("queues.emails") && err.contains("no call goes through this queue"), "{err}");
    let err = common::refused(&ok.replace("visibility_timeout = \"50ms\"", "visibility_timeout = \"0s\""));
    assert!(err.contains("queues.emails.visibility_timeout"), "{err}");
}
