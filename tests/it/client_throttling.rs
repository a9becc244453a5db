//! Adaptive client-side throttling as the Google SRE book derives it
//! ("Handling Overload", client request rejection probability
//! `max(0, (requests - k * accepts) / (requests + 1))`):
//!
//! - at a backend that accepts a fixed `C` per second (a rate limit
//!   answering 429 above it) under demand far above `C`, the attempts that
//!   reach the backend settle near `k * C`;
//! - at a backend that fails a fixed share of requests, the throttle never
//!   engages while the accepted share is at least `1/k`, and below it cuts
//!   the traffic towards zero.

use crate::common;

use common::{load, metric, run, service_metric};

const WINDOW_S: f64 = 40.0;

/// One client instance sending 1000 intents/s, one attempt each, to `api`.
fn experiment(throttle: &str, service_extra: &str, faults: &str) -> String {
    format!(
        r#"
[experiment]
name = "sre throttle"
duration = "60s"
warmup = "20s"
replications = 4

[[clients]]
name = "web"
rate = "1000/s"
target = "api"
policy = {{ per_try_timeout = "1s" {throttle} }}

[[services]]
name = "api"
workers = 100
service_time = {{ dist = "exp", mean = "5ms" }}
{service_extra}
{faults}
"#
    )
}

fn mean(values: &[Option<f64>]) -> f64 {
    let xs: Vec<f64> = values.iter().map(|v| v.expect("a value")).collect();
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Requests per second reaching `api` over the measurement window.
fn backend_rate(runs: &[retrysim::metrics::RunResult]) -> f64 {
    let per_intent = mean(&service_metric(runs, "api", "requests_per_intent"));
    per_intent * mean(&metric(runs, "intents")) / WINDOW_S
}

#[test]
fn at_a_rate_limited_backend_the_traffic_that_reaches_it_settles_near_k_times_its_capacity() {
    let limit = r#"rate_limit = { rate = "100/s", burst = 20, status = 429 }"#;
    for k in [2.0, 3.0] {
        let throttle = format!(r#", throttle = {{ kind = "sre", k = {k}, window = "10s" }}"#);
        let runs = run(&load(&experiment(&throttle, limit, "")), 4);
        let reaching = backend_rate(&runs);
        let expected = k * 100.0;
        println!("k = {k}: {reaching:.1} requests/s reach a backend accepting 100/s (the book: k·C = {expected})");
        assert!((reaching / expected - 1.0).abs() < 0.02, "k = {k}: {reaching} requests/s reach the backend");
        // The rest were refused locally, before they cost the backend anything.
        let refused = mean(&metric(&runs, "throttled_per_intent"));
        assert!((refused - (1.0 - reaching / 1000.0)).abs() < 0.01, "refused share {refused}");
        let goodput = mean(&metric(&runs, "goodput_per_s"));
        assert!((goodput - 100.0).abs() < 1.0, "the backend still serves its capacity: {goodput}/s");
    }
    // Without the throttle every request reaches it.
    let runs = run(&load(&experiment("", limit, "")), 4);
    assert!((backend_rate(&runs) / 1000.0 - 1.0).abs() < 0.02);
    assert!(metric(&runs, "throttled_per_intent").iter().all(Option::is_none), "no throttle: no value");
}

/// The backend fails a share `p` of requests from 10 s on, once the
/// throttle has a healthy history (see `an_unlucky_start_can_hold_the_throttle_down`).
fn failing(p: f64) -> String {
    format!("[[faults]]\nkind = \"error\"\ntarget = \"api\"\nstart = \"10s\"\nstatus = 503\nprobability = {p}\n")
}

#[test]
fn the_throttle_never_engages_while_the_accepted_share_is_at_least_one_over_k() {
    let throttle = r#", throttle = { kind = "sre", k = 2.0, window = "10s" }"#;
    for p in [0.0, 0.2, 0.4, 0.45] {
        let runs = run(&load(&experiment(throttle, "", &failing(p))), 4);
        // Accepted share 1 - p >= 1/2: requests - 2 accepts stays far below 0.
        let refused = metric(&runs, "throttled_per_intent");
        assert!(refused.iter().all(|r| *r == Some(0.0)), "failing {p}: refused {refused:?}");
        let reaching = mean(&service_metric(&runs, "api", "requests_per_intent"));
        assert_eq!(reaching, 1.0, "failing {p}: every request reaches the backend");
    }
}

#[test]
fn below_an_accepted_share_of_one_over_k_the_throttle_cuts_the_traffic_towards_zero() {
    // A short window so that the traffic reaches its fixed point within the run:
    // it shrinks by k a per window.
    let throttle = r#", throttle = { kind = "sre", k = 2.0, window = "2s" }"#;
    for p in [0.7, 0.9] {
        let runs = run(&load(&experiment(throttle, "", &failing(p))), 4);
        let reaching = mean(&service_metric(&runs, "api", "requests_per_intent"));
        // Fixed point: with a = 1 - p and s the share sent, 1 - s = (1 - k a s) R/(R+1)
        // gives s ≈ 1 / ((1 - k a) R) for R requests in the window (2000).
        let expected = 1.0 / ((1.0 - 2.0 * (1.0 - p)) * 2000.0);
        println!("failing {p}: {reaching:.5} of requests reach the backend (fixed point {expected:.5})");
        assert!(reaching < 0.01, "failing {p}: {reaching} of requests still reach the backend");
        assert!(reaching < 3.0 * expected, "failing {p}: {reaching} vs the fixed point {expected}");
    }
    // Without a throttle all of them do.
    let runs = run(&load(&experiment("", "", &failing(0.9))), 4);
    assert_eq!(mean(&service_metric(&runs, "api", "requests_per_intent")), 1.0);
}

/// The book's formula starts from an empty window. When the first answers
/// happen to be failures, refusals (counted at once) outrun accepts (counted
/// when answers arrive), and the rejection probability settles high; from
/// there the sent share grows only by k a per window. At an accepted share
/// of 0.6 one seed in four is still refusing about 40% of requests 20 s
/// later: a property of the formula, not of this backend.
#[test]
fn an_unlucky_start_can_hold_the_throttle_down() {
    let throttle = r#", throttle = { kind = "sre", k = 2.0, window = "10s" }"#;
    let faults = "[[faults]]\nkind = \"error\"\ntarget = \"api\"\nstatus = 503\nprobability = 0.4\n";
    let runs = run(&load(&experiment(throttle, "", faults)), 4);
    let refused: Vec<f64> = metric(&runs, "throttled_per_intent").into_iter().map(|v| v.expect("a value")).collect();
    println!("failing 0.4 from t = 0: refused share per replication {refused:?}");
    assert!(refused.iter().any(|&r| r > 0.2), "{refused:?}");
    assert!(refused.contains(&0.0), "{refused:?}");
}

#[test]
fn each_client_instance_has_a_throttle_of_its_own() {
    let one = experiment(r#", throttle = { kind = "sre" }"#, "", "")
        .replace("rate = \"1000/s\"", "count = 10\nrate = \"1000/s\"");
    let exp = load(&one);
    // Intents are spread over the ten instances, each with its own window.
    assert_eq!(exp.variants[0].clients[0].stateful_instances(), 10);
    let shared = one.replace(r#"kind = "sre" }"#, r#"kind = "sre", scope = "shared" }"#);
    assert_eq!(load(&shared).variants[0].clients[0].stateful_instances(), 0);
}
