//! Optimistic concurrency: 412 on a stale version, and the shipped
//! contention experiment reproduces the published ordering of backoff
//! strategies (AWS Architecture Blog, "Exponential Backoff And Jitter").

use crate::common;

use common::{load, run};
use retrysim::analysis::run_all;
use retrysim::config::load_experiment;
use std::path::Path;

#[test]
fn conflicting_writes_get_412_at_the_rate_of_overlapping_commits() {
    let exp = |rate: &str| {
        load(&format!(
            r#"
[experiment]
name = "occ"
duration = "100s"

[[clients]]
name = "w"
rate = "{rate}"
target = "rows"
policy = {{ max_attempts = 1, per_try_timeout = "1s" }}

[[services]]
name = "rows"
workers = 100
service_time = {{ dist = "const", value = "10ms" }}
occ = {{ rows = 1 }}
"#
        ))
    };
    // A write of length w commits when no other commit lands during it.
    // After a commit, the next one is made by the first write that starts
    // afterwards, w later: commits form a renewal process with mean gap
    // 1/lambda + w, so the share of writes that commit is 1 / (1 + lambda w).
    for (rate, lambda) in [("1/s", 1.0), ("100/s", 100.0), ("500/s", 500.0)] {
        let want = 1.0 / (1.0 + lambda * 0.010);
        for r in run(&exp(rate), 2) {
            let got = r.metrics["success_rate"].unwrap();
            let n = r.metrics["intents"].unwrap();
            let tolerance = 5.0 * (want * (1.0 - want) / n).sqrt() + 1e-3;
            assert!((got - want).abs() < tolerance, "{rate}: success {got} vs {want} ± {tolerance}");
            if lambda > 1.0 {
                assert!(r.failures.keys().all(|k| k == "412"), "{:?}", r.failures);
            }
        }
    }
}

#[test]
fn jitter_does_several_times_less_work_and_plain_exponential_takes_longest() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/occ-contention.toml");
    let exp = load_experiment(&path, &[]).unwrap();
    let set = run_all(&exp.variants, Some(5), 0).unwrap();
    let mean = |variant: &str, key: &str| {
        let v = set.variants.iter().find(|v| v.scenario.variant == variant).unwrap();
        v.runs.iter().map(|r| r.metrics[key].unwrap()).sum::<f64>() / v.runs.len() as f64
    };
    let none = mean("no backoff", "attempts_per_intent");
    let plain_done = mean("exponential", "latency_p999_s");
    for v in ["full jitter", "equal jitter", "decorrelated jitter"] {
        assert_eq!(mean(v, "success_rate"), 1.0);
        let work = mean(v, "attempts_per_intent");
        assert!(none > 3.0 * work, "{v}: {work} attempts vs {none} without backoff");
        let done = mean(v, "latency_p999_s");
        assert!(plain_done > 10.0 * done, "{v}: done in {done} s vs {plain_done} s without jitter");
    }
    assert!(plain_done > 10.0 * mean("no backoff", "latency_p999_s"));
}
