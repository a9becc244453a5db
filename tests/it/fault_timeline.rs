//! Fault kinds, queue disciplines and rate limiting (DESIGN §3 faults,
//! queue, rate_limit), each against a number that follows from its
//! definition.

use crate::common;

use common::{LEVEL, load, metric, mmc_mean_sojourn, run};
use retrysim::analysis::stats::summarize_at;

fn base(extra: &str, service: &str, policy: &str, rate: &str) -> String {
    format!(
        r#"
[experiment]
name = "faults"
duration = "60s"
warmup = "5s"

[[clients]]
name = "web"
rate = "{rate}"
target = "api"
operation = "read"
policy = {policy}

[[operations]]
name = "read"
idempotent = true

[[services]]
name = "api"
{service}

[network]
latency = {{ dist = "const", value = "0s" }}
{extra}
"#
    )
}

const ONE_TRY: &str = r#"{ max_attempts = 1, per_try_timeout = "10s" }"#;

#[test]
fn a_brownout_leaves_that_fraction_of_the_workers() {
    // 10 workers at half capacity for the whole run are an M/M/5 queue.
    let svc = "workers = 10\nservice_time = { dist = \"exp\", mean = \"10ms\" }";
    let exp = load(&base("[[faults]]\nkind = \"brownout\"\ntarget = \"api\"\ncapacity = 0.5\n", svc, ONE_TRY, "400/s"));
    let s = summarize_at(metric(&run(&exp, 10), "latency_mean_s"), LEVEL);
    let want = mmc_mean_sojourn(5, 400.0, 100.0);
    let (lo, hi) = s.ci95.unwrap();
    assert!(lo <= want && want <= hi, "M/M/5 sojourn {want} not in [{lo}, {hi}]");
}

#[test]
fn an_outage_refuses_connections_for_its_window() {
    let svc = "workers = 10\nservice_time = { dist = \"const\", value = \"1ms\" }";
    let exp = load(&base(
        "[[faults]]\nkind = \"outage\"\ntarget = \"api\"\nstart = \"20s\"\nduration = \"11s\"\n",
        svc,
        ONE_TRY,
        "200/s",
    ));
    for r in run(&exp, 2) {
        // 11 of the 55 counted seconds.
        let failed = 1.0 - r.metrics["success_rate"].unwrap();
        assert!((failed - 0.2).abs() < 0.01, "failed {failed}");
        assert!(r.failures.keys().all(|k| k == "connect_error (max_attempts)"), "{:?}", r.failures);
    }
}

#[test]
fn a_latency_fault_adds_its_delay_on_the_way_in() {
    let svc = "workers = 100\nservice_time = { dist = \"const\", value = \"1ms\" }";
    let exp = load(&base(
        "[[faults]]\nkind = \"latency\"\ntarget = \"api\"\nextra = { dist = \"const\", value = \"50ms\" }\n",
        svc,
        ONE_TRY,
        "100/s",
    ));
    for r in run(&exp, 2) {
        // 50 ms extra + 1 ms of work (the histogram keeps 3 significant digits).
        let p50 = r.metrics["latency_p50_s"].unwrap();
        assert!((p50 - 0.051).abs() < 0.051 * 1e-3, "p50 {p50}");
    }
}

#[test]
fn a_partition_makes_requests_on_its_edge_vanish() {
    let svc = "workers = 10\nservice_time = { dist = \"const\", value = \"1ms\" }";
    let policy = r#"{ max_attempts = 1, per_try_timeout = "100ms" }"#;
    let exp = load(&base(
        "[[faults]]\nkind = \"partition\"\ntarget = \"web->api\"\nstart = \"20s\"\nduration = \"11s\"\n",
        svc,
        policy,
        "200/s",
    ));
    for r in run(&exp, 2) {
        let failed = 1.0 - r.metrics["success_rate"].unwrap();
        assert!((failed - 0.2).abs() < 0.01, "failed {failed}");
        assert!(r.failures.keys().all(|k| k == "timeout"), "{:?}", r.failures);
    }
}

#[test]
fn a_rate_limit_answers_429_beyond_its_rate() {
    let svc = "workers = 100\nservice_time = { dist = \"const\", value = \"1ms\" }\nrate_limit = { rate = \"200/s\", burst = 10, retry_after = \"1s\" }";
    let exp = load(&base("", svc, ONE_TRY, "400/s"));
    for r in run(&exp, 2) {
        let goodput = r.metrics["goodput_per_s"].unwrap();
        assert!((goodput - 200.0).abs() < 5.0, "goodput {goodput}");
        assert!(r.failures.contains_key("429"), "{:?}", r.failures);
    }
}

#[test]
fn lifo_keeps_the_mean_of_fifo_but_widens_the_tail() {
    // M/M/1 at 80%: any work-conserving order has the same mean sojourn
    // 1/(mu - lambda), but serving newest first makes the tail far longer.
    let svc = |d: &str| {
        format!("workers = 1\nservice_time = {{ dist = \"exp\", mean = \"1ms\" }}\nqueue = {{ discipline = \"{d}\" }}")
    };
    let fifo = run(&load(&base("", &svc("fifo"), ONE_TRY, "800/s")), 10);
    let lifo = run(&load(&base("", &svc("lifo"), ONE_TRY, "800/s")), 10);
    let s = summarize_at(metric(&lifo, "latency_mean_s"), LEVEL);
    let (lo, hi) = s.ci95.unwrap();
    assert!(lo <= 0.005 && 0.005 <= hi, "LIFO mean not 5 ms: [{lo}, {hi}]");
    let p999 = |runs: &[retrysim::metrics::RunResult]| {
        runs.iter().map(|r| r.metrics["latency_p999_s"].unwrap()).sum::<f64>() / runs.len() as f64
    };
    assert!(p999(&lifo) > 2.0 * p999(&fifo), "LIFO p99.9 {} vs FIFO {}", p999(&lifo), p999(&fifo));
}

#[test]
fn codel_sheds_a_standing_queue_and_keeps_waits_short() {
    // 120% load on one worker: FIFO's queue grows without bound; CoDel sheds
    // requests that waited past its target and serves the newest first.
    let svc = "workers = 1\nservice_time = { dist = \"exp\", mean = \"1ms\" }\nqueue = { discipline = \"codel\", target = \"5ms\", interval = \"100ms\" }";
    for r in run(&load(&base("", svc, ONE_TRY, "1200/s")), 2) {
        assert!(r.failures.keys().any(|k| k.starts_with("503")), "{:?}", r.failures);
        let p99 = r.metrics["latency_p99_s"].unwrap();
        assert!(p99 < 0.2, "successful requests waited {p99} s");
        let goodput = r.metrics["goodput_per_s"].unwrap();
        assert!(goodput > 900.0, "the worker stays busy: goodput {goodput}");
    }
}

#[test]
fn a_host_whose_queue_passes_its_memory_limit_crashes_and_restarts_after_its_delay() {
    // 200 intents/s at one worker of 100/s: the queue passes 5 within about
    // 0.07 s of each restart, so each crash cycle lasts a little over the 1 s
    // the host is down: a little under 55 crashes in the 55 s window, and at
    // most 56 (one per second, and one more at its start).
    let svc =
        "workers = 1\nservice_time = { dist = \"const\", value = \"10ms\" }\nmemory_limit = 5\nrestart_after = \"1s\"";
    let exp = load(&base("", svc, ONE_TRY, "200/s"));
    let runs = run(&exp, 2);
    for (r, crashes) in runs.iter().zip(common::service_metric(&runs, "api", "memory_crashes")) {
        let crashes = crashes.unwrap();
        assert!((45.0..=56.0).contains(&crashes), "{crashes} crashes");
        // While down the host refuses connections; what it held is reset.
        assert!(r.failures.keys().any(|k| k.starts_with("connect_error")), "{:?}", r.failures);
        assert!(r.failures.keys().any(|k| k.starts_with("reset")), "{:?}", r.failures);
    }
    // Without a limit the same service has no such metric.
    let plain = load(&base("", "workers = 1\nservice_time = { dist = \"const\", value = \"10ms\" }", ONE_TRY, "50/s"));
    let r = &run(&plain, 1)[0];
    assert!(r.services.iter().all(|(_, m)| !m.contains_key("memory_crashes")), "{:?}", r.services);
}
