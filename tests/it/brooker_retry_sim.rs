//! Marc Brooker's retry simulation ("Fixing retries with token buckets and
//! circuit breakers", 2022; code: mbrooker/simulator_example, retry_sim),
//! rebuilt in retrysim: independent clients calling a server that fails a
//! fixed share of calls, over 10 s, with no retries, three immediate
//! retries, a retry token bucket and a retry circuit breaker.
//!
//! His strategies, and what stands in for them here:
//! - `NRetriesFactory(3)`: `max_attempts = 4`, no backoff.
//! - `AdaptiveRetryFactory(0.1, 5)`, a per-client bucket that gains 0.1 per
//!   call and starts full at 5, a retry taking 1 while above 1: a `ratio`
//!   budget of 0.1 with a reserve of 5 (`min_per_sec = 0.5` over a 10 s
//!   `ttl`): at most 5 + 10% of calls retried per client over the run.
//! - `CircuitBreakerRetryFactory(NRetriesFactory(3), 0.1)`, which stops a
//!   client's retries while its failures per call over the whole run
//!   exceed 10%: a `retries_only` breaker with `failure_ratio = 0.1` over
//!   a 10 s window from the first call (`min_requests = 1`). Differences:
//!   his counts failures per first attempt and never forgets, while the
//!   breaker here counts outcomes of all attempts and, once a first attempt
//!   succeeds half-open (after `open_for` = 1 ms), starts a fresh window.
//!
//! The shape he reports: three retries add load as 1 + f + f² + f³; the
//! bucket caps the extra load near 10%; the breaker trips well below its
//! nominal threshold, because each client judges its own small sample;
//! and with the same load split over many small clients the breaker
//! behaves like no retries and the bucket like three retries.

use crate::common;

use common::{assert_covers_scaled, load, metric, run};

fn mean(values: &[Option<f64>]) -> f64 {
    let xs: Vec<f64> = values.iter().map(|v| v.expect("a value")).collect();
    xs.iter().sum::<f64>() / xs.len() as f64
}

const NO_RETRIES: &str = "";
const THREE_RETRIES: &str = ", max_attempts = 4";
const BUCKET: &str = r#", max_attempts = 4, budget = { kind = "ratio", ratio = 0.1, min_per_sec = 0.5, ttl = "10s" }"#;
const BREAKER: &str = r#", max_attempts = 4, circuit_breaker = { retries_only = true, failure_ratio = 0.1, window = "10s", min_requests = 1, open_for = "1ms", half_open_probes = 1 }"#;

/// `clients` clients sending `total` calls/s over 10 s; the server fails a
/// share `f` of calls; network round trips of two exponential 10 ms legs.
fn experiment(clients: u32, total: f64, f: f64, strategy: &str) -> String {
    format!(
        r#"
[experiment]
name = "brooker"
duration = "10s"
replications = 8

[[clients]]
name = "client"
count = {clients}
rate = "{total}/s"
target = "server"
policy = {{ per_try_timeout = "10s", retry_on = ["503"] {strategy} }}

[[services]]
name = "server"
workers = 100000
service_time = {{ dist = "const", value = "0s" }}

[network]
latency = {{ dist = "exp", mean = "10ms" }}

[[faults]]
kind = "error"
target = "server"
status = 503
probability = {f}
"#
    )
}

/// (load = calls per first call, success share) over 8 replications.
fn measure(clients: u32, total: f64, f: f64, strategy: &str) -> (f64, f64) {
    let runs = run(&load(&experiment(clients, total, f, strategy)), 8);
    (mean(&metric(&runs, "attempts_per_intent")), mean(&metric(&runs, "success_rate")))
}

#[test]
fn hundred_clients_three_retries_add_load_as_the_geometric_series() {
    for f in [0.05, 0.2, 0.5] {
        let runs = run(&load(&experiment(100, 1000.0, f, THREE_RETRIES)), 8);
        let expected = 1.0 + f + f * f + f * f * f;
        assert_covers_scaled("three retries: load", expected, metric(&runs, "attempts_per_intent"), expected, 0.02);
        assert_covers_scaled("three retries: success", 1.0 - f.powi(4), metric(&runs, "success_rate"), 1.0, 0.01);
    }
}

#[test]
fn hundred_clients_the_bucket_caps_extra_load_and_the_breaker_trips_below_its_threshold() {
    println!("failure  load: none  three  bucket  breaker   success: none  three  bucket  breaker");
    let mut rows = Vec::new();
    for f in [0.0, 0.01, 0.05, 0.1, 0.2, 0.5] {
        let r: Vec<(f64, f64)> =
            [NO_RETRIES, THREE_RETRIES, BUCKET, BREAKER].iter().map(|s| measure(100, 1000.0, f, s)).collect();
        println!(
            "{:>6.0}%  {:>11.3} {:>6.3} {:>7.3} {:>8.3}   {:>14.4} {:>6.4} {:>7.4} {:>8.4}",
            f * 100.0,
            r[0].0,
            r[1].0,
            r[2].0,
            r[3].0,
            r[0].1,
            r[1].1,
            r[2].1,
            r[3].1
        );
        rows.push((f, r));
    }
    for (f, r) in &rows {
        let (three, bucket, breaker) = (r[1].0, r[2].0, r[3].0);
        // The bucket: at most 5 + 10% of each client's 100 calls retried.
        assert!(bucket <= 1.0 + 0.1 + 0.05 + 0.005, "f {f}: bucket load {bucket}");
        if *f >= 0.2 {
            // The breaker: about no retries once failures pass its threshold.
            assert!(breaker < 1.0 + 0.2 * (three - 1.0), "f {f}: breaker load {breaker} vs three retries {three}");
            assert!(bucket > breaker, "f {f}");
        }
    }
    // Below its nominal 10%, at 5% failures, the breaker already refuses a
    // share of the retries (one judging exact failure rates would refuse
    // none): each client judges its own small sample, and its first failure
    // among its first few calls is above 10%. At 10% it refuses about half.
    let (_, r) = &rows[2];
    assert!(r[3].0 - 1.0 < 0.9 * (r[1].0 - 1.0), "5% failures: breaker load {} vs three retries {}", r[3].0, r[1].0);
    let (_, r) = &rows[3];
    assert!(r[3].0 - 1.0 < 0.7 * (r[1].0 - 1.0), "10% failures: breaker load {} vs three retries {}", r[3].0, r[1].0);
}

#[test]
fn the_same_load_over_many_small_clients_turns_the_breaker_into_no_retries_and_the_bucket_into_three() {
    let f = 0.2;
    let three = 1.0 + f + f * f + f * f * f;
    println!("clients  bucket  breaker (100 calls/s in all, 20% failures; three retries {three:.3})");
    let mut by_count = Vec::new();
    for clients in [10, 100, 1000] {
        let (bucket, _) = measure(clients, 100.0, f, BUCKET);
        let (breaker, _) = measure(clients, 100.0, f, BREAKER);
        println!("{clients:>7} {bucket:>7.3} {breaker:>8.3}");
        by_count.push((clients, bucket, breaker));
    }
    let (_, b10, _) = by_count[0];
    let (_, b1000, k1000) = by_count[2];
    assert!(b10 < 1.16, "10 clients: the bucket caps the load: {b10}");
    assert!((b1000 - three).abs() < 0.02, "1000 clients: the bucket lets every retry through: {b1000}");
    assert!(k1000 < 1.02, "1000 clients: the breaker allows almost no retry: {k1000}");
    assert!(by_count.windows(2).all(|w| w[1].1 >= w[0].1), "the bucket lets more through as clients shrink");
}
