//! Closed-loop and burst clients (DESIGN §3 `mode`).

use crate::common;

use common::{LEVEL, load, metric, run};
use retrysim::analysis::stats::summarize_at;

#[test]
fn closed_loop_throughput_follows_the_interactive_response_time_law() {
    // N instances, think time Z, response time R: X = N / (Z + R) (Little's
    // law on the whole loop), whatever the queueing inside R.
    let (n, z) = (20.0, 0.1);
    let exp = load(
        r#"
[experiment]
name = "closed loop"
duration = "300s"
warmup = "5s"

[[clients]]
name = "users"
mode = "closed"
count = 20
think_time = { dist = "exp", mean = "100ms" }
target = "api"

[[services]]
name = "api"
workers = 1
service_time = { dist = "exp", mean = "4ms" }

[network]
latency = { dist = "const", value = "0s" }
"#,
    );
    let runs = run(&exp, 10);
    let x = metric(&runs, "goodput_per_s");
    let r = metric(&runs, "latency_mean_s");
    // Per replication: the law's prediction from that replication's R. The
    // noise is mostly the realised mean think time (~0.4% per replication).
    let ratio: Vec<Option<f64>> = x.iter().zip(&r).map(|(x, r)| Some(x.unwrap() * (z + r.unwrap()) / n)).collect();
    let s = summarize_at(ratio, LEVEL);
    let (lo, hi) = s.ci95.unwrap();
    assert!(lo <= 1.0 && 1.0 <= hi, "X (Z + R) / N = {:?}, CI [{lo}, {hi}]", s.mean);
    assert!(hi - lo < 0.02, "CI too wide: [{lo}, {hi}]");
    // The loop is far from saturating the worker: throughput near N / (Z + S).
    let mean_x = x.iter().flatten().sum::<f64>() / x.len() as f64;
    assert!(mean_x > 150.0 && mean_x < n / z, "throughput {mean_x}");
}

#[test]
fn a_burst_sends_one_intent_per_instance_within_its_spread() {
    let exp = load(
        r#"
[experiment]
name = "burst"
duration = "10s"
bin = "100ms"

[[clients]]
name = "herd"
mode = "burst"
count = 3000
at = "2s"
spread = "500ms"
target = "api"

[[services]]
name = "api"
workers = 100
service_time = { dist = "const", value = "1ms" }
"#,
    );
    for r in run(&exp, 2) {
        assert_eq!(r.metrics["intents"], Some(3000.0));
        let offered: Vec<(usize, u64)> =
            r.series.rows().iter().enumerate().filter(|(_, b)| b.offered > 0).map(|(i, b)| (i, b.offered)).collect();
        // Bins of 100 ms: arrivals only in [2.0 s, 2.5 s), spread evenly (600 per bin ± noise).
        assert_eq!(offered.first().unwrap().0, 20);
        assert_eq!(offered.last().unwrap().0, 24);
        for (_, k) in &offered {
            assert!((*k as f64 - 600.0).abs() < 5.0 * 600f64.sqrt(), "{offered:?}");
        }
    }
}

#[test]
fn a_closed_loop_think_time_must_have_a_positive_mean() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e.toml");
    std::fs::write(
        &path,
        r#"
[experiment]
duration = "5s"
[[clients]]
name = "u"
mode = "closed"
think_time = { dist = "const", value = "0s" }
target = "api"
[[services]]
name = "api"
service_time = { dist = "exp", mean = "1ms" }
"#,
    )
    .unwrap();
    let e = retrysim::config::load_experiment(&path, &[]).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("clients.u.think_time"));
    assert!(e.message.contains("mean longer than 0"), "{e}");
}
