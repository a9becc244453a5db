//! Paired comparisons and replications until precise (DESIGN §1 run,
//! issue: comparisons that hold up).

use retrysim::analysis::precision::{On, PrecisionOutcome, Target, imprecise, run_until_precise};
use retrysim::analysis::run_all;
use retrysim::analysis::stats::{paired_at, significant, summarize};
use retrysim::config::load_experiment;
use retrysim::model::RunOptions;
use std::path::Path;

fn quickstart(sets: &[String]) -> retrysim::config::Experiment {
    load_experiment(&Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/quickstart.toml"), sets).unwrap()
}

fn values(set: &retrysim::analysis::RunSet, variant: usize, metric: &str) -> Vec<Option<f64>> {
    set.variants[variant].runs.iter().map(|r| r.metrics[metric]).collect()
}

#[test]
fn paired_intervals_are_narrower_than_unpaired_ones_for_the_same_runs() {
    let exp = quickstart(&[]);
    let set = run_all(&exp.variants, Some(8), 0).unwrap();
    for metric in ["success_rate", "goodput_per_s", "latency_p50_s"] {
        let (a, b) = (values(&set, 0, metric), values(&set, 3, metric));
        let paired = paired_at(&a, &b, 0.95).half_width().unwrap();
        // Unpaired (Welch-style) half-width from the two separate intervals.
        let (ha, hb) = (summarize(a.clone()).half_width().unwrap(), summarize(b.clone()).half_width().unwrap());
        let unpaired = (ha * ha + hb * hb).sqrt();
        assert!(paired < unpaired, "{metric}: paired ±{paired} vs unpaired ±{unpaired}");
    }
}

#[test]
fn a_difference_of_zero_is_reported_not_significant() {
    // The same variant twice: identical runs, difference exactly 0.
    let exp = quickstart(&[]);
    let twice = vec![exp.variants[0].clone(), exp.variants[0].clone()];
    let set = run_all(&twice, Some(4), 0).unwrap();
    let d = paired_at(&values(&set, 0, "success_rate"), &values(&set, 1, "success_rate"), 0.95);
    assert_eq!(d.mean, Some(0.0));
    assert!(!significant(&d));
    // And a real effect is significant: backoff rescues rejected intents.
    let set = run_all(&exp.variants, Some(4), 0).unwrap();
    assert!(significant(&paired_at(&values(&set, 0, "success_rate"), &values(&set, 2, "success_rate"), 0.95)));
}

#[test]
fn replications_are_added_until_every_watched_metric_is_precise() {
    let exp = quickstart(&[]);
    let target = (Target::Relative(0.1), On::Variants, 0);
    let (set, outcome) = run_until_precise(&exp.variants, target, 100, 0, RunOptions::default(), &|| {}).unwrap();
    let PrecisionOutcome::Reached { replications } = outcome else { panic!("{outcome:?}") };
    assert!(set.variants.iter().all(|v| v.runs.len() == replications as usize));
    assert_eq!(imprecise(&set, Target::Relative(0.1), On::Variants, 0), None);
    // Relative to the rarer side of a share: success 93.7% ± h needs h at
    // most 10% of 6.3 points, not of 93.7.
    let s = summarize(values(&set, 0, "success_rate"));
    assert!(s.half_width().unwrap() <= 0.1 * (1.0 - s.mean.unwrap()), "{s:?}");
    // The runs are the plain replications 0..n: the same as asking for n at once.
    let direct = run_all(&exp.variants, Some(replications), 0).unwrap();
    assert_eq!(values(&set, 1, "success_rate"), values(&direct, 1, "success_rate"));
    // A cap stops it and says what was not precise.
    let tight = (Target::Relative(0.0001), On::Variants, 0);
    let (_, capped) = run_until_precise(&exp.variants, tight, 4, 0, RunOptions::default(), &|| {}).unwrap();
    assert!(matches!(capped, PrecisionOutcome::Capped { replications: 4, .. }), "{capped:?}");
}

#[test]
fn precision_on_differences_watches_the_paired_intervals() {
    // ±0.5 points on every paired difference of a share from the baseline.
    let exp = quickstart(&[]);
    let target = (Target::Points(0.5), On::Differences, 0);
    let (set, outcome) = run_until_precise(&exp.variants, target, 60, 0, RunOptions::default(), &|| {}).unwrap();
    assert!(matches!(outcome, PrecisionOutcome::Reached { .. }), "{outcome:?}");
    for v in 1..set.variants.len() {
        let d = paired_at(&values(&set, 0, "success_rate"), &values(&set, v, "success_rate"), 0.95);
        assert!(d.half_width().unwrap() <= 0.005, "variant {v}: {d:?}");
    }
    // The same target on each variant's own interval is another question:
    // a share's own interval is wider than its paired difference.
    assert!(imprecise(&set, Target::Points(0.01), On::Variants, 0).is_some());
}

#[test]
fn every_variant_is_compared_with_a_baseline_in_the_middle() {
    use retrysim::output::summary::summarize_against;
    let exp = quickstart(&[]);
    let set = run_all(&exp.variants, Some(3), 0).unwrap();
    let base = 1;
    let summaries = summarize_against(&set, base);
    assert!(summaries.iter().all(|v| v.baseline == summaries[base].name));
    assert!(summaries[base].vs_baseline.is_empty(), "the baseline is not compared with itself");
    for (i, v) in summaries.iter().enumerate().filter(|&(i, _)| i != base) {
        let (mine, theirs) = (values(&set, i, "success_rate"), values(&set, base, "success_rate"));
        let d = v.vs_baseline.iter().find(|(k, _)| k == "success_rate").map(|(_, s)| s).expect("compared");
        // The paired differences, replication by replication, variant minus baseline.
        let want: Vec<Option<f64>> = mine.iter().zip(&theirs).map(|(a, b)| Some(a.unwrap() - b.unwrap())).collect();
        assert_eq!(d.summary.values, want, "variant {i}");
    }
}

/// When some replications recover and some do not, a variant's values are
/// two outcomes, not one bell: its comparisons use a sign test, and the
/// table says how the replications split.
#[test]
fn a_split_between_recovering_and_not_is_compared_by_a_sign_test() {
    use retrysim::analysis::exact::sign_test_p;
    use retrysim::output::summary::summarize_against;
    // moonpool's slowdown (tests/it/sustaining_effects.rs): 850 ms tips about
    // half of the replications into a storm.
    let text = r#"
[experiment]
name = "split"
duration = "40s"
warmup = "5s"
seed = 4
replications = 20

[[clients]]
name = "grpc"
rate = "50/s"
target = "api"
operation = "get"
policy = { max_attempts = 4, per_try_timeout = "200ms", retry_on = ["timeout"] }

[[operations]]
name = "get"
idempotent = true

[[services]]
name = "api"
workers = 4
service_time = { dist = "const", value = "25ms" }

[network]
latency = { dist = "const", value = "0ms" }

[[faults]]
name = "cpu"
kind = "slowdown"
target = "api"
start = "10s"
duration = "850ms"
factor = 4.0

[[variants]]
name = "no retries"
set = { "clients.grpc.policy.max_attempts" = 1 }

[[variants]]
name = "retries"
set = {}
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("split.toml");
    std::fs::write(&path, text).unwrap();
    let exp = load_experiment(&path, &[]).unwrap();
    let set = run_all(&exp.variants, None, 0).unwrap();
    let summaries = summarize_against(&set, 0);
    let retries = &summaries[1];
    assert!(retrysim::output::differences::split(retries), "the retrying variant should split");
    let d = retries.difference("success_rate").unwrap();
    let ups = d.summary.values.iter().flatten().filter(|x| **x > 0.0).count() as u64;
    let downs = d.summary.values.iter().flatten().filter(|x| **x < 0.0).count() as u64;
    assert_eq!(d.p, Some(sign_test_p(ups, downs)));
    let o = retrysim::output::table::TableOptions { show: &[], answer: &[], question: None, wide: true };
    let table = retrysim::output::table::render_text(&summaries, 20, &o);
    assert!(table.contains("split outcomes: \"retries\" recovered in"), "{table}");
}

/// `[experiment] equivalence`: "n.s." says no difference was found at this
/// n, not that there is none; with a margin, two one-sided tests show a
/// difference inside it (≈) or do not.
#[test]
fn an_equivalence_margin_tells_no_difference_from_not_enough_runs() {
    use retrysim::output::summary::summarize_against;
    let sets = |m: &str| vec![format!("experiment.equivalence.success_rate=\"{m}\"")];
    // Immediate retries do not change quickstart's success much (+0.2 points):
    // inside 1 point they are equivalent to no retries; backoff (+4 points) is not.
    let exp = quickstart(&sets("1pp"));
    let set = run_all(&exp.variants, Some(8), 0).unwrap();
    let summaries = summarize_against(&set, 0);
    let eq = |i: usize| summaries[i].difference("success_rate").and_then(|d| d.equivalence).unwrap();
    assert!(eq(1).equivalent(), "{:?}", eq(1));
    assert!((eq(1).margin - 0.01).abs() < 1e-12);
    assert!(!eq(2).equivalent(), "{:?}", eq(2));
    // The test inverts the 90% interval: a margin just above its reach is
    // equivalent, just below it is not.
    let d = summaries[1].difference("success_rate").unwrap();
    let diffs: Vec<f64> = d.summary.values.iter().map(|x| x.unwrap()).collect();
    let n = diffs.len() as f64;
    let mean = diffs.iter().sum::<f64>() / n;
    let sd = (diffs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let reach = mean.abs() + retrysim::analysis::stats::t_quantile(0.90, n - 1.0) * sd / n.sqrt();
    for (scale, want) in [(1.01, true), (0.99, false)] {
        let exp = quickstart(&sets(&format!("{}pp", reach * scale * 100.0)));
        let s = summarize_against(&run_all(&exp.variants, Some(8), 0).unwrap(), 0);
        let e = s[1].difference("success_rate").and_then(|d| d.equivalence).unwrap();
        assert_eq!(e.equivalent(), want, "margin {} of reach {reach}: {e:?}", reach * scale);
    }
    // Points are for shares only; a bad margin names the field.
    let bad = load_experiment(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/quickstart.toml"),
        &["experiment.equivalence.latency_p99_s=\"2pp\"".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(bad.contains("experiment.equivalence.latency_p99_s") && bad.contains("not one"), "{bad}");
}

/// A variant summary with these metrics (mean, interval) and these
/// differences to the baseline (mean, interval, adjusted p).
fn summary_of(
    name: &str,
    metrics: &[(&str, f64, (f64, f64))],
    diffs: &[(&str, f64, (f64, f64), f64)],
) -> retrysim::output::VariantSummary {
    use retrysim::analysis::Summary;
    use retrysim::output::differences::Difference;
    let s = |m: f64, ci: (f64, f64)| Summary { mean: Some(m), ci95: Some(ci), values: vec![Some(m); 5] };
    retrysim::output::VariantSummary {
        name: name.into(),
        metrics: metrics.iter().map(|(k, m, ci)| (k.to_string(), s(*m, *ci))).collect(),
        amplification_service: "api".into(),
        vs_baseline: diffs
            .iter()
            .map(|(k, m, ci, p)| {
                (
                    k.to_string(),
                    Difference { summary: s(*m, *ci), p: Some(*p), p_adjusted: Some(*p), equivalence: None },
                )
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn a_difference_in_the_vs_baseline_block_reads_right_on_its_own() {
    let base = summary_of(
        "base",
        &[
            ("success_rate", 0.98, (0.97, 0.99)),
            ("amplification", 1.02, (1.019, 1.021)),
            ("latency_p99_s", 0.5447, (0.5407, 0.5487)),
            ("latency_all_p99_s", 0.5448, (0.5408, 0.5488)),
            // 0.6 orphans per replication, the interval down to 0.
            ("orphan_commits", 0.6, (0.0, 2.3)),
            ("duplicate_intents", 319.4, (298.9, 339.9)),
        ],
        &[],
    );
    let tiny = 1e-10;
    let other = summary_of(
        "other",
        &[("orphan_commits", 319.4, (298.9, 339.9)), ("duplicate_intents", 0.0, (0.0, 0.0))],
        &[
            ("success_rate", 1e-9, (-1e-9, 3e-9), 0.9),
            ("amplification", -1e-6, (-2e-6, 0.0), 0.01),
            // A half-width that rounds to nothing, beside milliseconds.
            ("latency_p99_s", -0.0447, (-0.0447 - tiny, -0.0447 + tiny), 0.001),
            ("latency_all_p99_s", 0.0, (-tiny, tiny), 0.9),
            ("orphan_commits", 318.8, (297.1, 340.5), 0.001),
            ("duplicate_intents", -319.4, (-339.9, -298.9), 0.001),
        ],
    );
    let o = retrysim::output::table::TableOptions { show: &[], answer: &[], question: None, wide: true };
    let block = retrysim::output::vs_baseline::render_vs_baseline(&[base, other], &o);
    let row = block.lines().find(|l| l.starts_with("other")).unwrap_or_else(|| panic!("{block}"));
    let cells: Vec<&str> = row.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cells[0], "other", "{block}");
    assert_eq!(cells[1], "0.00% ±0.00 n.s.", "no sign on a change that rounds to nothing:\n{block}");
    // goodput/s and attempts/intent: no numbers here.
    assert_eq!(cells[2..4], ["—", "—"], "{block}");
    assert_eq!(cells[4], "0.000 ±0.000 (0%)", "{block}");
    assert_eq!(cells[5], "-44.7ms ±0.0ms (-8%) with success 0.00%", "a zero half-width in the value's unit:\n{block}");
    assert_eq!(cells[6], "0s ±0s (0%) n.s.", "{block}");
    assert_eq!(cells[7], "-319.4 ±20.5 (-100%)", "{block}");
    assert_eq!(cells[8], "+318.8 ±21.7", "no relative change against a baseline indistinguishable from 0:\n{block}");
    assert!(!block.contains("µs") && !block.contains("-0.000") && !block.contains("+0.00%"), "{block}");
}
