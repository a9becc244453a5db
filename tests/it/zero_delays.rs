//! Zero delays are not events (docs/model.md, section 1): a network hop of
//! zero latency and a timeout of zero happen right after the step that
//! caused them, before any event due at the same nanosecond, and do not
//! count in the run's event total.

use crate::common::{load, metric};
use retrysim::model::{RunOptions, simulate_with};

/// Every request is answered 503 on arrival and retried at once, up to 3
/// attempts: with no network latency an intent's whole life happens at the
/// instant it arrives.
const INSTANT: &str = r#"
[experiment]
name = "zero delays"
duration = "10s"
warmup = "0s"
seed = 3
replications = 1

[[clients]]
name = "web"
rate = "200/s"
target = "api"
operation = "read"
# A deadline past the end of the run: its timeouts never fall due.
policy = { max_attempts = 3, deadline = "20s", retry_on = ["503"] }

[[operations]]
name = "read"
idempotent = true

[[services]]
name = "api"
workers = 2
service_time = { dist = "exp", mean = "10ms" }

[[faults]]
name = "errors"
kind = "error"
target = "api"
start = "0s"
probability = 1.0
status = 503

[network]
latency = { dist = "const", value = "0s" }
"#;

fn one(key: &str, runs: &[retrysim::metrics::RunResult]) -> f64 {
    metric(runs, key)[0].unwrap_or_else(|| panic!("{key}"))
}

#[test]
fn with_no_latency_an_intent_answered_at_once_ends_at_its_arrival_and_costs_one_event() {
    let exp = load(INSTANT);
    let r = simulate_with(&exp.variants[0], 0, RunOptions::default());
    let runs = vec![r];
    let intents = one("intents", &runs);
    assert!((1800.0..2200.0).contains(&intents), "{intents} intents");
    assert_eq!(one("success_rate", &runs), 0.0);
    assert_eq!(one("attempts_per_intent", &runs), 3.0);
    // Each intent's three attempts, their arrivals at the service and their
    // answers all happen at its arrival: it waited for nothing.
    let p99 = one("latency_all_p99_s", &runs);
    assert!(p99 < 1.1e-6, "{p99}: the histogram's floor, 1 µs");
    // The arrivals are the only events (the first one past the window is
    // not processed: every intent has settled by then).
    assert_eq!(runs[0].events as f64, intents);

    // The same with 1 ms each way: the hops are events again (two per
    // attempt), and the intents wait 3 round trips.
    let exp = load(&INSTANT.replace(r#"value = "0s""#, r#"value = "1ms""#));
    let r = simulate_with(&exp.variants[0], 0, RunOptions::default());
    let runs = vec![r];
    let intents = one("intents", &runs);
    assert_eq!(one("attempts_per_intent", &runs), 3.0);
    assert!((one("latency_all_p50_s", &runs) - 0.006).abs() < 1e-5);
    assert_eq!(runs[0].events as f64, intents * 7.0);
}

#[test]
fn zero_delays_keep_runs_reproducible_with_any_jobs() {
    // The peer scenario has no network latency: every hop is a zero delay.
    let exp = retrysim::config::load_experiment(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peer/scenario.toml"),
        &["experiment.duration=20s".to_string()],
    )
    .unwrap();
    let runs = |jobs| {
        let set = retrysim::analysis::run_all(&exp.variants, Some(3), jobs).unwrap();
        format!("{:?}", set.variants[0].runs)
    };
    let one = runs(1);
    assert_eq!(one, runs(1), "a rerun");
    assert_eq!(one, runs(2), "--jobs 2");
}
