//! Metastable failures: a trigger that outlives itself through retries,
//! the defences that end it, and the recovery boundary of the simple model
//! (a service of rate mu recovers with R immediate retries on timeout only
//! when the base load is below mu / (1 + R)).

use retrysim::analysis::run_all;
use retrysim::config::load_experiment;
use std::path::Path;

fn recovered(file: &str, sets: &[String], reps: u32) -> Vec<(String, f64)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments").join(file);
    let exp = load_experiment(&path, sets).unwrap();
    let set = run_all(&exp.variants, Some(reps), 0).unwrap();
    set.variants
        .iter()
        .map(|v| {
            let r: Vec<f64> = v.runs.iter().map(|r| r.metrics["recovered_fraction"].unwrap()).collect();
            (v.scenario.variant.clone(), r.iter().sum::<f64>() / r.len() as f64)
        })
        .collect()
}

#[test]
fn after_a_spike_immediate_retries_never_recover_but_lifo_and_a_shared_budget_do() {
    let r = recovered("metastable-spike.toml", &[], 3);
    let get = |name: &str| r.iter().find(|(n, _)| n == name).unwrap().1;
    assert_eq!(get("immediate retries"), 0.0);
    assert_eq!(get("LIFO queue"), 1.0);
    assert_eq!(get("adaptive LIFO + CoDel"), 1.0);
    assert_eq!(get("shared retry budget"), 1.0);
}

#[test]
fn the_recovery_boundary_is_capacity_over_one_plus_retries() {
    // capacity 1000/s, R = 3: boundary 250/s. Well below it every run
    // recovers from the stall; well above it none does.
    let r = recovered("capacity-cliff.toml", &[], 3);
    let get = |name: &str| r.iter().find(|(n, _)| n == name).unwrap().1;
    for below in ["150/s", "200/s"] {
        assert_eq!(get(below), 1.0, "{below}");
    }
    for above in ["300/s", "400/s"] {
        assert_eq!(get(above), 0.0, "{above}");
    }
    // With R = 1 the boundary moves to 500/s: 400/s recovers, 600/s does not.
    let one = ["clients.web.policy.max_attempts=2".to_string()];
    let r1 = recovered("capacity-cliff.toml", &one, 3);
    assert_eq!(r1.iter().find(|(n, _)| n == "400/s").unwrap().1, 1.0);
    let six = ["clients.web.policy.max_attempts=2".to_string(), "experiment.load_scale=6".to_string()];
    let r6 = recovered("capacity-cliff.toml", &six, 3);
    // --set applies after the variants' load_scale: every variant now runs at 600/s.
    assert!(r6.iter().all(|(_, f)| *f == 0.0), "{r6:?}");
}

/// Recovery is judged by the system's state, not by goodput alone: after
/// the spike a LIFO queue serves new arrivals first (goodput ÷ offered is
/// back at once) while about 14 000 abandoned requests wait and keep
/// every worker busy; it recovers only when they are gone, tens of
/// seconds later. Adaptive LIFO with CoDel drops them and recovers at once.
#[test]
fn a_lifo_queue_full_of_abandoned_requests_has_not_recovered_until_it_drains() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/metastable-spike.toml");
    let exp = load_experiment(&path, &[]).unwrap();
    let set = run_all(&exp.variants, Some(3), 0).unwrap();
    let times = |name: &str| -> Vec<f64> {
        let v = set.variants.iter().find(|v| v.scenario.variant == name).unwrap();
        v.runs.iter().map(|r| r.metrics["recovery_time_s"].expect("recovered")).collect()
    };
    for t in times("LIFO queue") {
        assert!(t >= 30.0, "LIFO recovered after {t} s, with its queue full of abandoned requests");
    }
    for t in times("adaptive LIFO + CoDel") {
        assert!(t <= 2.0, "adaptive LIFO + CoDel recovered after {t} s");
    }
    // The users were served long before: the goodput ratio alone would have said 0 s.
    let lifo = set.variants.iter().find(|v| v.scenario.variant == "LIFO queue").unwrap();
    let series = &lifo.runs[0].series;
    let rows = series.rows();
    // The bin that starts 2 s after the spike's end (25 s).
    let end = (27_000_000_000 / series.bin()) as usize;
    let r = rows[end].goodput as f64 / rows[end].offered.max(1) as f64;
    assert!(r > 0.9, "goodput ratio {r} just after the spike");
}
