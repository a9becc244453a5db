//! The shipped thundering-herd experiment reproduces the classic result:
//! exponential backoff without jitter needs clearly more attempts than full
//! jitter to serve the same herd, and serves fewer of them.

use retrysim::analysis::run_all;
use retrysim::config::load_experiment;
use std::path::Path;

#[test]
fn no_jitter_needs_clearly_more_attempts_than_full_jitter() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/thundering-herd.toml");
    let exp = load_experiment(&path, &[]).unwrap();
    let set = run_all(&exp.variants, Some(3), 0).unwrap();
    let mean = |variant: &str, key: &str| {
        let v = set.variants.iter().find(|v| v.scenario.variant == variant).unwrap();
        v.runs.iter().map(|r| r.metrics[key].unwrap()).sum::<f64>() / v.runs.len() as f64
    };
    let (none, full) = (mean("no jitter", "attempts_per_intent"), mean("full jitter", "attempts_per_intent"));
    assert!(none > 1.5 * full, "no jitter {none} vs full jitter {full} attempts per intent");
    assert!(mean("full jitter", "success_rate") > 0.99);
    assert!(mean("no jitter", "success_rate") < 0.5);
    // Every jittered variant serves the whole herd.
    for v in ["equal jitter", "decorrelated jitter"] {
        assert!(mean(v, "success_rate") > 0.99, "{v}");
        assert!(mean(v, "attempts_per_intent") < 0.6 * none, "{v}");
    }
}
