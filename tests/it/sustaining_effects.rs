//! What sustains an overload beyond its trigger, and the server-side
//! defences against it: a slowdown that retries turn into a lasting storm
//! (after moonpool's metastable gRPC example), service times that grow
//! with load (Brooker's simple collapse model), shedding by priority
//! (Netflix), adaptive concurrency limits and a flushed cache.

use crate::common;

use common::{estimate, metric, run};
use retrysim::metrics::{RunResult, TraceDecision};
use retrysim::model::{RunOptions, simulate_with};
use retrysim::policy::Outcome;

/// Replications of the experiment's first variant that did not recover
/// (goodput back to 95% of the baseline) by the end of the run.
fn storms(runs: &[RunResult]) -> usize {
    metric(runs, "recovery_time_s").iter().filter(|v| v.is_none()).count()
}

/// moonpool (PierreZ/moonpool pull request 193): 4 workers × 25 ms (160/s),
/// open loop 50/s, per-try timeout 200 ms, 4 attempts, no backoff; service
/// times × 4 from 10 s for `length`; a 40 s run.
fn moonpool(length: &str, attempts: u32) -> String {
    format!(
        r#"
[experiment]
name = "slowdown storm"
duration = "40s"
warmup = "5s"
seed = 4

[[clients]]
name = "grpc"
rate = "50/s"
target = "api"
operation = "get"
policy = {{ max_attempts = {attempts}, per_try_timeout = "200ms", retry_on = ["timeout"] }}

[[operations]]
name = "get"
idempotent = true

[[services]]
name = "api"
workers = 4
service_time = {{ dist = "const", value = "25ms" }}

[network]
latency = {{ dist = "const", value = "0ms" }}

[[faults]]
name = "cpu"
kind = "slowdown"
target = "api"
start = "10s"
duration = "{length}"
factor = 4.0
"#
    )
}

#[test]
fn a_short_slowdown_tips_retries_into_a_storm_that_outlives_it() {
    let storms_at = |length: &str, attempts: u32| storms(&run(&common::load(&moonpool(length, attempts)), 20));
    // A few seconds: a storm in most replications (here every one).
    let long = storms_at("3s", 4);
    println!("3 s slowdown: {long}/20 storms");
    assert!(long >= 15, "{long}/20");
    // The shortest slowdown (50 ms steps) after which at least half of 20
    // replications storm: 850 ms (800 ms: fewer than half).
    let (at, below) = (storms_at("850ms", 4), storms_at("800ms", 4));
    println!("850 ms: {at}/20 storms, 800 ms: {below}/20");
    assert!(at >= 10 && below < 10, "850 ms {at}/20, 800 ms {below}/20");
    // A slowdown too short to push waits past the timeout: never.
    assert_eq!(storms_at("500ms", 4), 0);
    // Without retries even 10 s of slowdown leaves nothing behind.
    assert_eq!(storms_at("10s", 1), 0);
}

/// Brooker's simple model: each request takes 1.0 s + 0.01 s per request
/// in flight, with a 3 s timeout; 40 intents/s, 80/s from 60 s to 70 s.
fn brooker() -> String {
    r#"
[experiment]
name = "collapse"
duration = "300s"
warmup = "10s"
seed = 1

[[clients]]
name = "c"
rate = [{ at = "0s", rate = "40/s" }, { at = "60s", rate = "80/s" }, { at = "70s", rate = "40/s" }]
target = "s"
operation = "op"
policy = { max_attempts = 3, per_try_timeout = "3s", retry_on = ["timeout"] }

[[operations]]
name = "op"
idempotent = true

[[services]]
name = "s"
workers = 100000
service_time = { dist = "const", value = "1s", per_inflight = "10ms" }

[network]
latency = { dist = "const", value = "0ms" }
"#
    .to_string()
}

#[test]
fn load_dependent_service_time_collapses_under_retries_and_budgets_bring_it_back() {
    // With N in flight a request takes 1 + 0.01 N s, so the service
    // finishes at most N / (1 + 0.01 N) < 100 requests/s, and a request
    // stays under the 3 s timeout only while the attempt rate is below
    // 66.7/s. Before the spike 40/s holds N at 40 / (1 − 0.4) ≈ 67 (1.67 s).
    // After the spike every attempt times out, 3 × 40 = 120/s > 100/s: the
    // queue of work never drains.
    let collapsed = run(&common::load(&brooker()), 5);
    assert_eq!(storms(&collapsed), 5, "immediate retries stay collapsed");
    // Backoff with jitter spaces the retries but keeps all three attempts
    // (an open loop does not slow down): still 120/s, still collapsed.
    let sets = ["clients.c.policy.backoff={ kind = \"exponential\", base = \"1s\", cap = \"30s\", jitter = \"full\" }"
        .to_string()];
    let backoff = run(&common::load_with(&brooker(), &sets), 5);
    assert_eq!(storms(&backoff), 5, "backoff alone stays collapsed");
    // A retry budget cuts the attempt rate below the ceiling: it comes back.
    for budget in ["{ kind = \"token_bucket\" }", "{ kind = \"ratio\", ratio = 0.1 }"] {
        let sets = [format!("clients.c.policy.budget={budget}")];
        let runs = run(&common::load_with(&brooker(), &sets), 5);
        assert_eq!(storms(&runs), 0, "{budget}: recovers");
        let t = estimate(budget, 0.0, metric(&runs, "recovery_time_s"));
        assert!(t.mean < 30.0, "{budget}: recovery {t}");
    }
}

/// Per client class: the share of intents that arrived in the window and
/// ended ok, from the trace of every attempt.
fn success_by_client(exp: &retrysim::config::Experiment, replications: u32) -> Vec<f64> {
    let s = &exp.variants[0];
    let mut ok = vec![0u64; s.clients.len()];
    let mut all = vec![0u64; s.clients.len()];
    for r in 0..replications {
        let result = simulate_with(s, r, RunOptions { trace_fraction: 1.0, lean: false });
        // Per intent: when its first attempt left (its arrival) and how its last one ended.
        let mut intents: std::collections::HashMap<(u32, u64), (u64, Option<bool>)> = Default::default();
        for t in result.trace.iter().filter(|t| t.edge as usize == s.clients[t.client as usize].edge) {
            let e = intents.entry((t.client, t.intent)).or_insert((t.sent, None));
            if t.attempt == 1 {
                e.0 = t.sent;
            }
            if !matches!(t.decision, TraceDecision::Retry) {
                e.1 = Some(t.outcome == Outcome::Ok);
            }
        }
        for ((client, _), (arrived, ended)) in intents {
            if arrived >= s.warmup && arrived < s.duration {
                all[client as usize] += 1;
                if ended == Some(true) {
                    ok[client as usize] += 1;
                }
            }
        }
    }
    ok.iter().zip(&all).map(|(&o, &a)| o as f64 / a as f64).collect()
}

fn shedding(shed: bool) -> String {
    let sheds = if shed { "shed_by_priority = { sheddable = 0.7 }" } else { "" };
    format!(
        r#"
[experiment]
name = "prioritized shedding"
duration = "60s"
warmup = "5s"
seed = 2

[[clients]]
name = "user"
priority = "critical"
rate = "1000/s"
target = "api"
operation = "op"
policy = {{ per_try_timeout = "1s" }}

[[clients]]
name = "background"
priority = "sheddable"
rate = [{{ at = "0s", rate = "200/s" }}, {{ at = "20s", rate = "2400/s" }}, {{ at = "40s", rate = "200/s" }}]
target = "api"
operation = "op"
policy = {{ per_try_timeout = "1s" }}

[[operations]]
name = "op"
idempotent = true

[[services]]
name = "api"
workers = 20
service_time = {{ dist = "exp", mean = "10ms" }}
{sheds}

[network]
latency = {{ dist = "const", value = "1ms" }}
"#
    )
}

#[test]
fn shedding_by_priority_keeps_critical_requests_through_a_spike_of_sheddable_ones() {
    // 20 workers × 10 ms = 2000/s; users 1000/s; background 200/s, 12× from 20 s to 40 s.
    let with = success_by_client(&common::load(&shedding(true)), 3);
    let without = success_by_client(&common::load(&shedding(false)), 3);
    println!("with shedding: user {:.4}, background {:.4}", with[0], with[1]);
    println!("without shedding: user {:.4}, background {:.4}", without[0], without[1]);
    // Netflix reported > 99.4% for critical requests and ~20% for the shed ones.
    assert!(with[0] > 0.99, "critical with shedding: {}", with[0]);
    assert!(with[1] < 0.8, "sheddable with shedding: {}", with[1]);
    // Without shedding the queue grows past the timeout and both classes fall.
    assert!(without[0] < 0.9 && without[1] < 0.9, "{without:?}");
}

/// One service `api` whose every request calls `db` behind a cache.
fn cached(rate: f64, keys: u32, zipf: f64, ttl: &str, db_workers: u32, extra: &str) -> String {
    format!(
        r#"
[experiment]
name = "cache"
duration = "60s"
warmup = "10s"
seed = 6

[[clients]]
name = "web"
rate = "{rate}/s"
target = "api"
operation = "read"
policy = {{ per_try_timeout = "1s" }}

[[operations]]
name = "read"
idempotent = true

[[services]]
name = "api"
workers = 200
service_time = {{ dist = "const", value = "1ms" }}

[[services.calls]]
to = "db"
cache = {{ keys = {keys}, zipf = {zipf}, ttl = "{ttl}" }}
policy = {{ per_try_timeout = "200ms", max_attempts = 3, retry_on = ["timeout"] }}

[[services]]
name = "db"
workers = {db_workers}
service_time = {{ dist = "exp", mean = "10ms" }}

[network]
latency = {{ dist = "const", value = "0ms" }}
{extra}
"#
    )
}

#[test]
fn a_ttl_cache_hits_as_the_renewal_formula_says() {
    // Key k is asked for at rate r_k = λ p_k (Zipf); each miss fills it for T,
    // so a cycle has one miss and r_k T hits on average: the hit ratio is
    // Σ p_k r_k T / (1 + r_k T) (exact for Poisson requests and TTL-on-miss,
    // up to the fill landing one db round trip after the miss).
    let (lambda, keys, s, ttl) = (500.0, 2000u32, 0.8, 2.0);
    let h: f64 = (1..=keys).map(|k| (k as f64).powf(-s)).sum();
    let hit: f64 = (1..=keys)
        .map(|k| {
            let p = (k as f64).powf(-s) / h;
            let rt = lambda * p * ttl;
            p * rt / (1.0 + rt)
        })
        .sum();
    let runs = run(&common::load(&cached(lambda, keys, s, "2s", 50, "")), 5);
    common::assert_covers("cache hit ratio", hit, common::service_metric(&runs, "api", "cache_hit_ratio"), 0.02);
    // Every miss is one call to db.
    let db = estimate("db requests per intent", 1.0 - hit, common::service_metric(&runs, "db", "requests_per_intent"));
    assert!((db.mean - (1.0 - hit)).abs() < 0.01, "{db}");
}

#[test]
fn a_flushed_cache_stays_cold_while_its_misses_time_out() {
    // db serves 400/s; 1000 requests/s hit 80% warm, 0% cold.
    let flush = "[[faults]]\nname = \"flush\"\nkind = \"cache_flush\"\ntarget = \"api\"\nstart = \"20s\"\n";
    let runs = run(&common::load(&cached(1000.0, 20000, 1.0, "30s", 4, flush)), 3);
    assert_eq!(storms(&runs), 3, "the misses overload db, time out and fill nothing");
    let hit = estimate("hit ratio", 0.0, common::service_metric(&runs, "api", "cache_hit_ratio"));
    assert!(hit.mean < 0.5, "{hit}");
    // Without the flush the same cache keeps db below capacity.
    let calm = run(&common::load(&cached(1000.0, 20000, 1.0, "30s", 4, "")), 3);
    let ok = estimate("success without a flush", 1.0, metric(&calm, "success_rate"));
    assert!(ok.mean > 0.99, "{ok}");
    let warm = estimate("warm hit ratio", 0.0, common::service_metric(&calm, "api", "cache_hit_ratio"));
    assert!(warm.mean > 0.7, "{warm}");
    // A concurrency limit at db sheds the excess at once: what it keeps
    // finishes in time, fills its entry, and the cache comes back.
    let limit = format!("{flush}\n");
    let limited = cached(1000.0, 20000, 1.0, "30s", 4, &limit).replace(
        "name = \"db\"\n",
        "name = \"db\"\nconcurrency_limit = { kind = \"gradient2\", initial = 8, min = 4, max = 32 }\n",
    );
    let runs = run(&common::load(&limited), 3);
    assert_eq!(storms(&runs), 0, "with a concurrency limit the cache refills");
}

#[test]
fn a_concurrency_limit_ends_the_slowdown_storm() {
    for kind in ["aimd", "vegas", "gradient2"] {
        let toml = moonpool("3s", 4).replace(
            "workers = 4\n",
            &format!("workers = 4\nconcurrency_limit = {{ kind = \"{kind}\", initial = 8, min = 4, max = 40 }}\n"),
        );
        let runs = run(&common::load(&toml), 10);
        println!("{kind}: {} storms of 10", storms(&runs));
        assert_eq!(storms(&runs), 0, "{kind}");
    }
}
