//! Balancers against queueing theory, and a bad host behind a balancer.
//!
//! - `random` over n identical hosts splits a Poisson stream into n Poisson
//!   streams of rate λ/n: each host is an M/M/1 queue at λ/n, so the mean
//!   sojourn is 1/(μ − λ/n).
//! - `least_request` is Envoy's power of two choices: with many hosts the
//!   mean number in system per host approaches the supermarket model's
//!   Σ_{i≥1} ρ^(2^i − 1) (Mitzenmacher, "The Power of Two Choices in
//!   Randomized Load Balancing", 2001), far below M/M/1's ρ/(1 − ρ).
//! - One black-hole host of four under round robin costs its share of the
//!   intents; outlier ejection and retries to another host win them back.
//!
//! Checks use Student-t intervals across replications at
//! [`common::LEVEL`] (99.9%).

use crate::common;

use common::{assert_covers, estimate, metric, run, service_metric};

fn hosts_experiment(lambda: f64, mean_ms: f64, replicas: u32, balancer: &str, duration_s: u32) -> String {
    format!(
        r#"
[experiment]
name = "balancing"
duration = "{duration_s}s"
warmup = "5s"
seed = 11

[[clients]]
name = "poisson"
rate = "{lambda}/s"
target = "api"
operation = "op"

[[operations]]
name = "op"
idempotent = true

[[services]]
name = "api"
replicas = {replicas}
balancer = "{balancer}"
workers = 1
service_time = {{ dist = "exp", mean = "{mean_ms}ms" }}

[network]
latency = {{ dist = "const", value = "0ms" }}
"#
    )
}

#[test]
fn random_over_identical_hosts_makes_each_an_mm1_queue_at_lambda_over_n() {
    // 4 hosts, μ = 100/s each, λ = 240/s: each host is M/M/1 at 60/s (ρ = 0.6).
    let (n, mu, lambda) = (4.0, 100.0, 240.0);
    let exp = common::load(&hosts_experiment(lambda, 1000.0 / mu, 4, "random", 405));
    let runs = run(&exp, 12);
    let per_host = lambda / n;
    assert_covers("mean sojourn (s)", 1.0 / (mu - per_host), metric(&runs, "latency_mean_s"), 0.03);
    for h in 0..4 {
        let name = format!("api[{h}]");
        assert_covers(&format!("{name} utilisation"), per_host / mu, service_metric(&runs, &name, "utilization"), 0.03);
        let rho = per_host / mu;
        // M/M/1 mean number waiting: ρ² / (1 − ρ).
        assert_covers(
            &format!("{name} queue"),
            rho * rho / (1.0 - rho),
            service_metric(&runs, &name, "queue_len"),
            0.15,
        );
        assert_covers(
            &format!("{name} share of the requests"),
            1.0 / n,
            service_metric(&runs, &name, "requests_per_intent"),
            0.02,
        );
    }
}

#[test]
fn power_of_two_choices_beats_random_as_the_supermarket_model_says() {
    // 50 hosts at ρ = 0.9 (μ = 100/s each, λ = 4500/s).
    let (hosts, mu, rho) = (50u32, 100.0, 0.9);
    let lambda = hosts as f64 * mu * rho;
    let in_system = |runs: &[retrysim::metrics::RunResult]| -> Vec<Option<f64>> {
        // Mean number at a host = (queue + busy) summed over hosts / hosts.
        let q = service_metric(runs, "api", "queue_len");
        let u = service_metric(runs, "api", "utilization");
        q.iter().zip(&u).map(|(q, u)| Some(q.unwrap() / hosts as f64 + u.unwrap())).collect()
    };
    let p2c = run(&common::load(&hosts_experiment(lambda, 10.0, hosts, "least_request", 65)), 5);
    let random = run(&common::load(&hosts_experiment(lambda, 10.0, hosts, "random", 65)), 5);
    let supermarket: f64 = (1..20).map(|i| rho.powi((1 << i) - 1)).sum();
    let mm1 = rho / (1.0 - rho);
    let two = estimate("least_request: mean number at a host", supermarket, in_system(&p2c));
    let one = estimate("random: mean number at a host", mm1, in_system(&random));
    println!("{two}\n{one}\n  supermarket limit {supermarket:.4}, M/M/1 {mm1:.4}");
    // Random is M/M/1 per host.
    assert!(one.ci.0 <= mm1 && mm1 <= one.ci.1, "random: {one}");
    // Power of two choices: far below random, and near the n → ∞ limit
    // (above it: with 50 hosts the two samples are not independent of the
    // queues' state as in the limit; within 10%).
    assert!(two.ci.1 < one.ci.0 / 3.0, "p2c {two} vs random {one}");
    assert!(two.mean > supermarket * 0.98 && two.mean < supermarket * 1.10, "{two} vs supermarket {supermarket}");
}

/// Four hosts behind a balancer; host api[2] loses every answer from 20 s on.
fn bad_host(extra: &str) -> String {
    format!(
        r#"
[experiment]
name = "bad host"
duration = "120s"
warmup = "5s"
seed = 3

[[clients]]
name = "web"
rate = "600/s"
target = "api"
operation = "get"
policy = {{ max_attempts = 1, per_try_timeout = "250ms", retry_on = ["timeout", "connect_error", "503"] }}

[[operations]]
name = "get"
idempotent = true

[[services]]
name = "api"
replicas = 4
workers = 8
balancer = "round_robin"
service_time = {{ dist = "exp", mean = "10ms" }}
{extra}

[network]
latency = {{ dist = "const", value = "1ms" }}

[[faults]]
name = "black-hole"
kind = "response_loss"
target = "api[2]"
start = "20s"
probability = 1.0
"#
    )
}

#[test]
fn a_bad_host_costs_its_share_until_ejected_and_retries_elsewhere_win_the_rest() {
    // Round robin, no ejection, no retries: a quarter of the intents in the
    // fault window (100 s of the 115 s window) are lost.
    let plain = run(&common::load(&bad_host("")), 5);
    let share = 0.25 * 100.0 / 115.0;
    assert_covers("round robin: success", 1.0 - share, metric(&plain, "success_rate"), 0.01);
    let bad = estimate("api[2] success", 15.0 / 115.0, service_metric(&plain, "api[2]", "success_rate"));
    assert!((bad.mean - 15.0 / 115.0).abs() < 0.01, "{bad}");

    // Outlier ejection: the host is out after 5 timeouts in a row, back after
    // 30 s, 60 s, 90 s (base × ejections), and each return costs 5 timeouts
    // and what was sent to it meanwhile: a few hundred intents of ~69 000.
    let od = "outlier_detection = { consecutive_5xx = 5, interval = \"10s\", base_ejection = \"30s\", max_ejection_percent = 50 }";
    let ejected = run(&common::load(&bad_host(od)), 5);
    let s = estimate("ejection: success", 1.0, metric(&ejected, "success_rate"));
    assert!(s.mean > 0.995 && s.mean < 1.0, "{s}");
    // Ejected at 20 s; back at the first sweep 30 s later (sweeps every
    // 10 s: at 60 s), ejected again within 250 ms, now for 2 × 30 s: back
    // at 130 s, after the window. Two ejections in every replication.
    let ejections = estimate("ejections", 2.0, service_metric(&ejected, "api", "ejections"));
    assert_eq!((ejections.ci.0, ejections.ci.1), (2.0, 2.0), "{ejections}");

    // Retries that avoid the host that failed: almost nothing is lost even
    // without ejection, and with random or round robin alike.
    let retry = "retry_other_host = true";
    let sets = ["clients.web.policy.max_attempts=2".to_string()];
    let other = run(&common::load_with(&bad_host(retry), &sets), 5);
    let o = estimate("retry_other_host: success", 1.0, metric(&other, "success_rate"));
    assert!(o.mean > 0.9999, "{o}");
    // Without retry_other_host, round robin's next host can be the bad one again.
    let same = run(&common::load_with(&bad_host(""), &sets), 5);
    let m = estimate("retries to any host: success", 1.0, metric(&same, "success_rate"));
    assert!(m.ci.1 < o.ci.0, "{m} vs {o}");
}

#[test]
fn peak_ewma_and_least_request_send_less_to_a_slow_host_than_round_robin() {
    // Host api[1] is 10 times slower for the whole run.
    let slow = |balancer: &str| {
        let toml = hosts_experiment(300.0, 5.0, 4, balancer, 35).replace("workers = 1", "workers = 2")
            + "\n[[faults]]\nkind = \"slowdown\"\ntarget = \"api[1]\"\nfactor = 10.0\n";
        run(&common::load(&toml), 3)
    };
    let share = |runs: &[retrysim::metrics::RunResult]| {
        estimate("api[1] share", 0.25, service_metric(runs, "api[1]", "requests_per_intent"))
    };
    let (rr, lr, pe) = (share(&slow("round_robin")), share(&slow("least_request")), share(&slow("peak_ewma")));
    println!("{rr}\n{lr}\n{pe}");
    assert!((rr.mean - 0.25).abs() < 0.001, "round robin ignores speed: {rr}");
    assert!(lr.ci.1 < 0.2, "least_request: {lr}");
    assert!(pe.ci.1 < lr.ci.0, "peak_ewma penalises latency itself: {pe} vs {lr}");
}
