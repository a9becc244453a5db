//! The simulator against classical queueing theory: with Poisson arrivals,
//! exponential service, no retries and no network latency, one service is an
//! M/M/1, M/M/c or M/M/c/K queue whose stationary behaviour is known exactly.
//!
//! Method: every test runs R independent replications (fixed seeds), cuts
//! the initial transient with `warmup`, and computes a Student-t confidence
//! interval across the replications at level [`common::LEVEL`] (99.9%) for
//! each estimate; the analytic value must lie inside it, and the interval
//! must be tight (half-width a few percent of the value) so that a check
//! cannot pass because the estimate is vague.
//!
//! Times are scaled so that a service takes about a millisecond: the
//! queues relax within tens of milliseconds, so a few seconds of warmup is
//! ample, and one replication of a few hundred simulated seconds holds
//! hundreds of thousands of intents.
//!
//! `cargo test --test queueing_theory -- --nocapture` prints every check.

use crate::common;

use common::{
    assert_covers, erlang_b, metric, mmc_mean_queue, mmc_mean_sojourn, mmck_blocking, mmck_mean_queue,
    mmck_mean_sojourn, run, service_metric,
};

/// Warmup cut from every run: the queues here relax within tens of
/// milliseconds, so five seconds is ample.
const WARMUP_S: u32 = 5;

/// One open-loop client sending `lambda` intents/s (no policy: one attempt,
/// no timeout) to one service `api` with `workers` workers, exponential
/// service times of mean 1/`mu` and waiting room `queue` (`None` =
/// unbounded), over zero network latency.
fn queue_experiment(lambda: f64, mu: f64, workers: u32, queue: Option<u32>, duration_s: u32, seed: u64) -> String {
    let queue = queue.map(|l| format!("queue = {{ limit = {l} }}\n")).unwrap_or_default();
    let mean_us = 1e6 / mu;
    format!(
        r#"
[experiment]
name = "queueing theory"
duration = "{duration_s}s"
warmup = "{WARMUP_S}s"
seed = {seed}

[[clients]]
name = "poisson"
rate = "{lambda}/s"
target = "api"
operation = "op"

[[operations]]
name = "op"

[[services]]
name = "api"
workers = {workers}
{queue}service_time = {{ dist = "exp", mean = "{mean_us}us" }}

[network]
latency = {{ dist = "const", value = "0s" }}
"#
    )
}

/// M/M/1 FIFO: the sojourn time is exponential with rate μ − λ, so its mean
/// is 1/(μ − λ), its median ln 2/(μ − λ) and its 99th percentile
/// ln 100/(μ − λ); the server is busy ρ of the time and Lq = ρ²/(1 − ρ).
#[test]
fn mm1_sojourn_time_is_exponential() {
    let (lambda, mu) = (800.0, 1000.0);
    let rho = lambda / mu;
    let duration_s = 300;
    let exp = common::load(&queue_experiment(lambda, mu, 1, None, duration_s, 101));
    let runs = run(&exp, 20);
    let rate = mu - lambda;
    // Poisson arrivals: λ × (duration − warmup) intents are counted on average.
    assert_covers("M/M/1 intents", lambda * (duration_s - WARMUP_S) as f64, metric(&runs, "intents"), 0.01);
    assert_covers("M/M/1 success_rate", 1.0, metric(&runs, "success_rate"), 1e-9);
    assert_covers("M/M/1 latency_mean_s = 1/(μ-λ)", 1.0 / rate, metric(&runs, "latency_mean_s"), 0.05);
    assert_covers(
        "M/M/1 latency_p50_s = ln2/(μ-λ)",
        std::f64::consts::LN_2 / rate,
        metric(&runs, "latency_p50_s"),
        0.05,
    );
    assert_covers("M/M/1 latency_p99_s = ln100/(μ-λ)", 100f64.ln() / rate, metric(&runs, "latency_p99_s"), 0.05);
    assert_covers("M/M/1 utilization = ρ", rho, service_metric(&runs, "api", "utilization"), 0.01);
    assert_covers(
        "M/M/1 queue_len = ρ²/(1-ρ)",
        rho * rho / (1.0 - rho),
        service_metric(&runs, "api", "queue_len"),
        0.05,
    );
}

/// M/M/c with c = 4 and ρ = 0.8: mean sojourn C(c, a)/(cμ − λ) + 1/μ
/// (Erlang C), utilisation ρ and Lq = C·ρ/(1 − ρ).
#[test]
fn mmc_mean_sojourn_matches_erlang_c() {
    let (c, lambda, mu) = (4, 3200.0, 1000.0);
    let exp = common::load(&queue_experiment(lambda, mu, c, None, 100, 202));
    let runs = run(&exp, 20);
    assert_covers("M/M/4 success_rate", 1.0, metric(&runs, "success_rate"), 1e-9);
    assert_covers(
        "M/M/4 latency_mean_s (Erlang C)",
        mmc_mean_sojourn(c, lambda, mu),
        metric(&runs, "latency_mean_s"),
        0.05,
    );
    assert_covers("M/M/4 utilization = ρ", lambda / (c as f64 * mu), service_metric(&runs, "api", "utilization"), 0.01);
    assert_covers(
        "M/M/4 queue_len = C·ρ/(1-ρ)",
        mmc_mean_queue(c, lambda, mu),
        service_metric(&runs, "api", "queue_len"),
        0.05,
    );
}

/// M/M/c/K: arrivals that find K = c + limit requests in the system get 503
/// and, without retries, fail; by PASTA, 1 − success_rate is the blocking
/// probability P_K. Admitted intents spend L/(λ(1 − P_K)) in the system
/// (Little's law).
fn check_mmck(label: &str, c: u32, limit: u32, lambda: f64, mu: f64, seed: u64) {
    let k = c + limit;
    let a = lambda / mu;
    let exp = common::load(&queue_experiment(lambda, mu, c, Some(limit), 100, seed));
    let runs = run(&exp, 16);
    let blocked: Vec<Option<f64>> = metric(&runs, "success_rate").into_iter().map(|s| s.map(|s| 1.0 - s)).collect();
    assert_covers(&format!("{label} blocking P_K"), mmck_blocking(c, a, k), blocked, 0.05);
    assert_covers(
        &format!("{label} latency_mean_s"),
        mmck_mean_sojourn(c, lambda, mu, k),
        metric(&runs, "latency_mean_s"),
        0.05,
    );
    assert_covers(
        &format!("{label} utilization"),
        a * (1.0 - mmck_blocking(c, a, k)) / c as f64,
        service_metric(&runs, "api", "utilization"),
        0.01,
    );
    if limit > 0 {
        assert_covers(
            &format!("{label} queue_len"),
            mmck_mean_queue(c, a, k),
            service_metric(&runs, "api", "queue_len"),
            0.05,
        );
    }
}

#[test]
fn mmck_blocking_probability() {
    // c = 4, K = 8, a = 3.6 (ρ = 0.9): P_K ≈ 0.0966.
    check_mmck("M/M/4/8", 4, 4, 3600.0, 1000.0, 303);
}

#[test]
fn mm1k_blocking_probability() {
    // M/M/1/4 with ρ = 0.8: P_K = (1 − ρ)ρ^4/(1 − ρ^5) ≈ 0.1218.
    check_mmck("M/M/1/4", 1, 3, 800.0, 1000.0, 404);
}

#[test]
fn mmcc_blocking_is_erlang_b() {
    // `queue = { limit = 0 }` is M/M/c/c: c = 5, a = 4, B ≈ 0.1991.
    assert!((mmck_blocking(5, 4.0, 5) - erlang_b(5, 4.0)).abs() < 1e-12);
    check_mmck("M/M/5/5", 5, 0, 4000.0, 1000.0, 505);
}
