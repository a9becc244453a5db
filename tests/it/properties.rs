//! Property tests over generated experiments and policies: nothing panics,
//! every experiment either runs or is refused as bad input, and the metrics
//! obey their invariants.

use proptest::prelude::*;
use retrysim::analysis::run_all;
use retrysim::config::load_experiment;

/// A generated experiment: a client, a service that may call a second one,
/// a policy and a fault, within ranges that include odd corners.
#[allow(clippy::too_many_arguments)]
fn experiment(
    rate: u32,
    workers: u32,
    mean_ms: u32,
    limit: Option<u32>,
    attempts: u32,
    timeout_ms: u32,
    backoff: &str,
    jitter: &str,
    p: f64,
    discipline: &str,
    downstream: bool,
    budget: bool,
    mode: &str,
) -> String {
    let queue = match limit {
        Some(l) => format!("queue = {{ limit = {l}, discipline = \"{discipline}\" }}"),
        None => format!("queue = {{ discipline = \"{discipline}\" }}"),
    };
    let backoff = if backoff == "none" {
        "{ kind = \"none\" }".to_string()
    } else {
        format!(
            "{{ kind = \"{backoff}\", base = \"5ms\", cap = \"200ms\"{} }}",
            if backoff == "decorrelated" { String::new() } else { format!(", jitter = \"{jitter}\"") }
        )
    };
    let budget = if budget { ", budget = { kind = \"token_bucket\" }" } else { "" };
    let load = match mode {
        "closed" => "mode = \"closed\"\ncount = 20\nthink_time = { dist = \"exp\", mean = \"20ms\" }".to_string(),
        "burst" => "mode = \"burst\"\ncount = 300\nat = \"1s\"".to_string(),
        _ => format!("rate = \"{rate}/s\""),
    };
    let calls = if downstream {
        "[[services.calls]]\nto = \"db\"\npolicy = { max_attempts = 2, per_try_timeout = \"50ms\", retry_on = [\"503\", \"timeout\"] }\n"
    } else {
        ""
    };
    format!(
        r#"
[experiment]
name = "generated"
duration = "3s"
warmup = "500ms"
replications = 2

[[clients]]
name = "c"
{load}
target = "api"
operation = "w"
policy = {{ max_attempts = {attempts}, per_try_timeout = "{timeout_ms}ms", retry_on = ["timeout", "503", "connect_error"], retry_unknown_without_key = true, backoff = {backoff}{budget} }}

[[operations]]
name = "w"

[[services]]
name = "api"
workers = {workers}
{queue}
service_time = {{ dist = "exp", mean = "{mean_ms}ms" }}
commits = "row"
{calls}
[[services]]
name = "db"
workers = 4
service_time = {{ dist = "exp", mean = "2ms" }}

[[faults]]
kind = "error"
target = "api"
probability = {p}
"#
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn generated_experiments_run_and_obey_metric_invariants(
        rate in 1u32..3000,
        workers in 1u32..16,
        mean_ms in 1u32..40,
        limit in proptest::option::of(0u32..50),
        attempts in 1u32..6,
        timeout_ms in 1u32..500,
        backoff in prop::sample::select(vec!["none", "constant", "exponential", "decorrelated"]),
        jitter in prop::sample::select(vec!["none", "full", "equal", "proportional"]),
        p in 0.0f64..1.0,
        discipline in prop::sample::select(vec!["fifo", "lifo", "codel"]),
        downstream in any::<bool>(),
        budget in any::<bool>(),
        mode in prop::sample::select(vec!["open", "closed", "burst"]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.toml");
        std::fs::write(&path, experiment(rate, workers, mean_ms, limit, attempts, timeout_ms, backoff, jitter, p, discipline, downstream, budget, mode)).unwrap();
        let exp = load_experiment(&path, &[]).expect("generated experiments are valid");
        let set = run_all(&exp.variants, None, 1).unwrap();
        for r in &set.variants[0].runs {
            let m = |k: &str| r.metrics[k];
            let intents = m("intents").unwrap();
            if intents > 0.0 {
                let s = m("success_rate").unwrap();
                prop_assert!((0.0..=1.0).contains(&s), "success {}", s);
                prop_assert!(m("attempts_per_intent").unwrap() >= 1.0 - 1e-12, "attempts {:?}", m("attempts_per_intent"));
                prop_assert!(m("attempts_per_intent").unwrap() <= attempts as f64 + 1e-9);
                // Goodput counts successes among the intents that arrived in the
                // window, over the window or, for a burst, over its completion time.
                match m("burst_completion_s") {
                    Some(t) => prop_assert!(m("goodput_per_s").is_none_or(|g| g * t <= intents + 1e-6)),
                    None => prop_assert!(m("goodput_per_s").unwrap() * 2.5 <= intents + 1e-6),
                }
                prop_assert!(m("duplicate_intents").unwrap() <= intents);
                prop_assert!(m("wasted_fraction").is_none_or(|w| (0.0..=1.0 + 1e-9).contains(&w)));
            }
        }
    }

    #[test]
    fn arbitrary_text_is_either_an_experiment_or_bad_input(text in "[\\[\\]a-z_=\" 0-9.{}/,\n-]{0,200}") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, &text).unwrap();
        if let Err(e) = load_experiment(&path, &[]) {
            prop_assert!(e.file.contains("x.toml") || e.file.starts_with("--set"), "{}", e);
        }
    }

    #[test]
    fn overrides_of_any_field_never_panic(key in "(experiment|clients\\.c|services\\.api|faults\\.0)\\.[a-z_]{1,12}", value in "[a-z0-9\"/.]{0,10}") {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.toml");
        std::fs::write(&path, experiment(100, 2, 5, Some(5), 2, 100, "exponential", "full", 0.1, "fifo", false, false, "open")).unwrap();
        let _ = load_experiment(&path, &[format!("{key}={value}")]);
    }
}
