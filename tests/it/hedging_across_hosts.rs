//! Hedging and cancellation against a service with several hosts: the
//! copies of one call spread over the hosts, cancelled copies free their
//! host's worker, concurrency-limit slot and active-request count (which
//! least_request and peak_ewma balance on), so the balancer's view stays
//! right and the run ends with every host empty (the world checks that in
//! debug builds).

use crate::common;

use common::{load, metric, run};

fn mean(values: &[Option<f64>]) -> f64 {
    let xs: Vec<f64> = values.iter().map(|v| v.expect("a value")).collect();
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// An idempotent read against four hosts with a heavy tail, balanced by
/// `balancer`, under a concurrency limit.
fn experiment(balancer: &str, policy: &str) -> String {
    format!(
        r#"
[experiment]
name = "hedging across hosts"
duration = "30s"
warmup = "5s"
replications = 3

[[clients]]
name = "web"
rate = "800/s"
target = "api"
operation = "read"
policy = {{ {policy} }}

[[operations]]
name = "read"
idempotent = true

[[services]]
name = "api"
replicas = 4
balancer = "{balancer}"
workers = 4
concurrency_limit = {{ kind = "aimd", initial = 20, min = 4, max = 200 }}
outlier_detection = {{ consecutive_5xx = 5, interval = "10s", base_ejection = "30s", max_ejection_percent = 50 }}
service_time = {{ dist = "mixture", parts = [{{ weight = 0.99, dist = "exp", mean = "5ms" }}, {{ weight = 0.01, dist = "uniform", min = "300ms", max = "1s" }}] }}
"#
    )
}

#[test]
fn cancelled_copies_leave_every_host_clean_under_every_balancer() {
    for balancer in ["round_robin", "random", "least_request", "peak_ewma"] {
        let plain = run(&load(&experiment(balancer, r#"per_try_timeout = "3s""#)), 3);
        let hedged =
            r#"per_try_timeout = "3s", cancel_on_timeout = true, hedging = { max_attempts = 2, delay = "p95" }"#;
        let hedged = run(&load(&experiment(balancer, hedged)), 3);
        let extra = mean(&metric(&hedged, "hedges_per_intent"));
        let (p0, p1) = (mean(&metric(&plain, "latency_p999_s")), mean(&metric(&hedged, "latency_p999_s")));
        let (s0, s1) = (mean(&metric(&plain, "success_rate")), mean(&metric(&hedged, "success_rate")));
        println!("{balancer}: hedges/intent {extra:.4}, p99.9 {p0:.3} s -> {p1:.3} s, success {s0:.4} -> {s1:.4}");
        // About the 5% of first copies slower than the learnt p95 get a hedge.
        assert!((0.03..0.08).contains(&extra), "{balancer}: hedges per intent {extra}");
        assert!(mean(&metric(&hedged, "cancelled_fraction")) > 0.0, "{balancer}: losers are cancelled");
        assert!(p1 < p0 / 2.0, "{balancer}: p99.9 {p0} -> {p1}");
        assert!(s1 > s0 - 0.005, "{balancer}: success {s0} -> {s1}");
    }
}
