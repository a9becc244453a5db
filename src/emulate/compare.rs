//! `emulate --compare`: the simulated and the emulated runs of each
//! variant side by side, metric by metric, with a verdict.
//!
//! The model is simulated with at least [`MIN_SIMULATED`] replications, so
//! its run-to-run spread is known even when reality ran once. A metric
//! **agrees** when the difference of the means is within what that spread
//! explains at 95% (a two-sample Student t bound, variance pooled over
//! both sides) or within the metric's stated tolerance ([`tolerance`]);
//! otherwise it **differs**.
//! Runs whose load generator fell behind its schedule are not compared
//! (`generator_overloaded`): they offered less load than the experiment
//! says; nor are runs whose runtime fell behind (`runtime_overloaded`):
//! their servers and clients acted late, on a machine that could not keep up.

use crate::analysis::replicate::RunSet;
use crate::analysis::summarize;
use serde::Serialize;
use std::collections::BTreeMap;

/// The fewest simulated replications per variant `--compare` runs.
pub const MIN_SIMULATED: u32 = 10;

/// The metrics compared, in the order shown.
pub const COMPARED: [&str; 16] = [
    "success_rate",
    "attempts_per_intent",
    "amplification",
    "latency_p50_s",
    "latency_p99_s",
    "recovered_fraction",
    "recovery_time_s",
    "duplicate_intents",
    "stuck_placeholders",
    "reconciled",
    "compensated",
    "cancelled_fraction",
    "throttled_per_intent",
    "status_queries_per_intent",
    "duplicate_deliveries",
    "dead_letters",
];

/// How far apart the means of `metric` may be and still agree: an
/// absolute amount, and a share of the simulated mean (the larger wins).
/// These allow for what a real machine adds that the model leaves out:
/// timers that fire late (about a millisecond under load on two shared
/// cores), connection set-up on every attempt, a scheduler.
pub fn tolerance(metric: &str) -> (f64, f64) {
    match metric {
        "success_rate" => (0.01, 0.0),
        "attempts_per_intent" | "amplification" => (0.0, 0.03),
        "latency_p50_s" => (0.002, 0.10),
        "latency_p99_s" => (0.005, 0.15),
        "recovered_fraction" => (0.10, 0.0),
        "recovery_time_s" => (2.0, 0.20),
        // A count of rare events: about two Poisson standard deviations at
        // the tens to hundreds these scenarios produce.
        "duplicate_intents" | "stuck_placeholders" | "reconciled" | "compensated" | "dead_letters" => (3.0, 0.25),
        // A share of messages: about two binomial standard deviations at
        // the hundreds of messages these scenarios publish.
        "duplicate_deliveries" => (0.05, 0.10),
        "cancelled_fraction" => (0.03, 0.10),
        "throttled_per_intent" | "status_queries_per_intent" => (0.01, 0.10),
        _ => (0.0, 0.0),
    }
}

/// A mean and its 95% interval.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Side {
    pub mean: Option<f64>,
    pub ci95: Option<(f64, f64)>,
}

/// One metric of one variant, both ways.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Compared {
    pub simulated: Side,
    pub emulated: Side,
    /// The difference of the means within which they agree.
    pub tolerance: Option<f64>,
    /// The difference of the means that run-to-run variation explains at
    /// 95% (none with fewer than two simulated runs).
    pub spread: Option<f64>,
    /// `agree`, `differ`, `no_value` (either has none) or
    /// `generator_overloaded` or `runtime_overloaded` (not compared).
    pub verdict: &'static str,
}

/// One variant's comparison.
#[derive(Debug, Clone, Serialize)]
pub struct VariantCompare {
    pub name: String,
    pub metrics: BTreeMap<String, Compared>,
}

/// The load generator's and the runtime's lateness over the emulated runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Generator {
    /// The largest per-run 99th percentile of the generator's lateness (seconds).
    pub late_p99_s: f64,
    /// Whether the generator fell behind (`late_p99_s` above 1 ms).
    pub overloaded: bool,
    /// The largest per-run 99th percentile of how late a task ran after
    /// its sleep ended (seconds).
    pub runtime_late_p99_s: f64,
    /// Whether the runtime fell behind (`runtime_late_p99_s` above 2 ms).
    pub runtime_overloaded: bool,
}

impl Generator {
    /// Why the runs are not compared, if they are not.
    pub fn not_compared(&self) -> Option<&'static str> {
        if self.overloaded {
            Some("generator_overloaded")
        } else if self.runtime_overloaded {
            Some("runtime_overloaded")
        } else {
            None
        }
    }
}

/// `compare.json`.
#[derive(Debug, Clone, Serialize)]
pub struct CompareJson {
    pub schema: &'static str,
    pub experiment: String,
    /// Emulated replications per variant.
    pub replications: usize,
    /// Simulated replications per variant.
    pub simulated_replications: usize,
    pub time_scale: f64,
    pub generator: Generator,
    pub variants: Vec<VariantCompare>,
}

/// The values of `metric` over the runs of variant `v` (amplification at `service`).
fn values(set: &RunSet, v: usize, metric: &str, service: &str) -> Vec<Option<f64>> {
    set.variants[v]
        .runs
        .iter()
        .map(|r| match metric {
            "amplification" => r.amplification_values(service).0,
            m => r.metrics.get(m).copied().flatten(),
        })
        .collect()
}

/// Compares `simulated` and `emulated` (the same variants, in order).
pub fn compare(simulated: &RunSet, emulated: &RunSet, generator: Generator) -> Vec<VariantCompare> {
    let service = simulated.amplification_service(0).unwrap_or_default();
    let disturbed = |v: usize| !crate::metrics::recovery::disturbances(&simulated.variants[v].scenario).is_empty();
    (0..simulated.variants.len())
        .map(|v| {
            let mut metrics = BTreeMap::new();
            for metric in COMPARED {
                if metric.starts_with("recover") && !disturbed(v) {
                    continue;
                }
                let scenario = &simulated.variants[v].scenario;
                if metric == "duplicate_intents" && scenario.effect_kinds.is_empty() {
                    continue;
                }
                if metric == "stuck_placeholders" && scenario.services.iter().all(|s| s.ledger.is_none()) {
                    continue;
                }
                let sim = summarize(values(simulated, v, metric, &service));
                // Compared where the model has it: cancellation, throttles
                // and status queries only when a policy has them.
                if matches!(
                    metric,
                    "cancelled_fraction"
                        | "throttled_per_intent"
                        | "status_queries_per_intent"
                        | "reconciled"
                        | "compensated"
                        | "duplicate_deliveries"
                        | "dead_letters"
                ) && sim.mean.is_none()
                {
                    continue;
                }
                let emu = summarize(values(emulated, v, metric, &service));
                metrics.insert(metric.to_string(), judge(metric, &sim, &emu, generator.not_compared()));
            }
            VariantCompare { name: simulated.variants[v].scenario.variant.clone(), metrics }
        })
        .collect()
}

/// The difference of the two means that run-to-run variation explains at
/// 95%: the two-sample Student t bound with the variance pooled over both
/// sides, which is what "reality behaves as the model" implies (the same
/// spread). With one emulated run this is the prediction interval of one
/// more simulated run; a couple of emulated runs, whose own spread is
/// poorly known, do not shrink it.
fn spread(sim: &crate::analysis::Summary, emu: &crate::analysis::Summary) -> Option<f64> {
    let (n, _, s1) = crate::analysis::stats::mean_sd(&sim.values);
    let (m, _, s2) = crate::analysis::stats::mean_sd(&emu.values);
    if n < 2 || m == 0 {
        return None;
    }
    let (nf, mf) = (n as f64, m as f64);
    let s2 = if m >= 2 { s2 } else { 0.0 };
    let df = nf + mf - 2.0;
    let pooled = (((nf - 1.0) * s1 * s1 + (mf - 1.0) * s2 * s2) / df).sqrt();
    Some(crate::analysis::stats::t_quantile(0.95, df) * pooled * (1.0 / nf + 1.0 / mf).sqrt())
}

/// The verdict on one metric.
fn judge(
    metric: &str,
    sim: &crate::analysis::Summary,
    emu: &crate::analysis::Summary,
    not_compared: Option<&'static str>,
) -> Compared {
    let side = |s: &crate::analysis::Summary| Side { mean: s.mean, ci95: s.ci95 };
    let (abs, rel) = tolerance(metric);
    let tolerance = sim.mean.map(|m| abs.max(rel * m.abs()));
    let spread = spread(sim, emu);
    let verdict = match (sim.mean, emu.mean, tolerance) {
        _ if not_compared.is_some() => not_compared.expect("checked"),
        (Some(a), Some(b), Some(t)) => {
            let d = (a - b).abs();
            if d <= t + 1e-12 || spread.is_some_and(|w| d <= w + 1e-12) { "agree" } else { "differ" }
        }
        _ => "no_value",
    };
    Compared { simulated: side(sim), emulated: side(emu), tolerance, spread, verdict }
}

/// The comparison as text, the answer first.
pub fn render_text(doc: &CompareJson) -> String {
    let (variants, generator) = (&doc.variants, doc.generator);
    let mut out = String::new();
    let all: Vec<(&str, &str, &Compared)> =
        variants.iter().flat_map(|v| v.metrics.iter().map(move |(m, c)| (v.name.as_str(), m.as_str(), c))).collect();
    let agree = all.iter().filter(|x| x.2.verdict == "agree").count();
    let judged = all.iter().filter(|x| matches!(x.2.verdict, "agree" | "differ")).count();
    if generator.overloaded {
        out += &format!(
            "NOT COMPARED: the load generator fell behind its schedule (p99 {:.1} ms late, limit {:.0} ms): the emulated runs offered less load than the experiment says. Slow the scenario with --time-scale.\n",
            generator.late_p99_s * 1e3,
            super::LATE_LIMIT_S * 1e3
        );
    } else if generator.runtime_overloaded {
        out += &format!(
            "NOT COMPARED: this machine could not keep up: tasks ran {:.1} ms late after their sleeps at p99 (limit {:.0} ms), so servers and clients acted later than the experiment says. Slow the scenario with --time-scale.\n",
            generator.runtime_late_p99_s * 1e3,
            super::RUNTIME_LATE_LIMIT_S * 1e3
        );
    } else {
        let differ: Vec<String> =
            all.iter().filter(|x| x.2.verdict == "differ").map(|x| format!("{} of \"{}\"", x.1, x.0)).collect();
        out += &format!("Reality beside the model: {agree} of {judged} metrics agree");
        if differ.is_empty() {
            out += ".\n";
        } else {
            out += &format!("; these differ: {}.\n", differ.join(", "));
        }
        if judged < all.len() {
            out += &format!(
                "({} without a value in one of them, e.g. latency when nothing succeeded.)\n",
                all.len() - judged
            );
        }
    }
    out += &format!(
        "(simulated: {} runs per variant; emulated: {}; a metric agrees within its tolerance or the spread between runs)\n",
        doc.simulated_replications, doc.replications
    );
    for v in variants.iter() {
        out += &format!("\n{}\n  {:<25} {:>24} {:>24}  verdict\n", v.name, "metric", "simulated", "emulated");
        for metric in COMPARED {
            let Some(c) = v.metrics.get(metric) else { continue };
            out += &format!("  {metric:<25} {:>24} {:>24}  {}\n", show(&c.simulated), show(&c.emulated), c.verdict);
        }
    }
    out
}

/// A mean with its interval.
fn show(s: &Side) -> String {
    match (s.mean, s.ci95) {
        (Some(m), Some((lo, hi))) => format!("{} [{}, {}]", num(m), num(lo), num(hi)),
        (Some(m), None) => num(m),
        _ => "-".into(),
    }
}

fn num(x: f64) -> String {
    if x.abs() >= 100.0 { format!("{x:.1}") } else { format!("{x:.4}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Summary;

    fn s(mean: f64, ci: Option<(f64, f64)>) -> Summary {
        Summary { mean: Some(mean), ci95: ci, values: vec![] }
    }

    fn runs(values: &[f64]) -> Summary {
        crate::analysis::summarize(values.iter().map(|&v| Some(v)).collect())
    }

    #[test]
    fn one_real_run_is_judged_against_the_models_run_to_run_spread() {
        // Ten simulated runs with mean 1.9 and sd 0.0745 (n - 1 = 9 df):
        // one emulated run may lie t(9) * sd * sqrt(1 + 1/10) = 0.177 away.
        let sim = runs(&[1.80, 1.85, 1.90, 1.95, 2.00, 1.80, 1.85, 1.90, 1.95, 2.00]);
        let (_, mean, sd) = crate::analysis::stats::mean_sd(&sim.values);
        let w = crate::analysis::stats::t_quantile(0.95, 9.0) * sd * (1.0f64 + 0.1).sqrt();
        assert!((w - 0.177).abs() < 0.001, "{w}");
        let near = runs(&[mean - w + 0.001]);
        let c = judge("attempts_per_intent", &sim, &near, None);
        assert_eq!(c.verdict, "agree", "{c:?}");
        assert!((c.spread.unwrap() - w).abs() < 1e-12);
        assert_eq!(judge("attempts_per_intent", &sim, &runs(&[mean - w - 0.001]), None).verdict, "differ");
        // Two emulated runs that happen to be equal do not make the bound
        // narrower than the model's spread allows: variance is pooled.
        let twice = runs(&[mean - 0.1, mean - 0.1]);
        let pooled = ((9.0 * sd * sd) / 10.0).sqrt() * crate::analysis::stats::t_quantile(0.95, 10.0) * 0.6f64.sqrt();
        let c = judge("attempts_per_intent", &sim, &twice, None);
        assert!((c.spread.unwrap() - pooled).abs() < 1e-12 && c.spread.unwrap() > 0.1, "{c:?}");
        assert_eq!(c.verdict, "agree");
        // No spread (every simulated run equal): only the tolerance is left.
        let exact = runs(&[27.0; 10]);
        assert_eq!(judge("amplification", &exact, &runs(&[27.0]), None).verdict, "agree");
        assert_eq!(judge("amplification", &exact, &runs(&[28.0]), None).verdict, "differ");
    }

    #[test]
    fn overlapping_intervals_or_a_difference_within_tolerance_agree() {
        assert_eq!(judge("attempts_per_intent", &s(1.0, None), &s(1.029, None), None).verdict, "agree");
        assert_eq!(judge("attempts_per_intent", &s(1.0, None), &s(1.031, None), None).verdict, "differ");
        assert_eq!(judge("latency_p50_s", &s(0.010, None), &s(0.0119, None), None).verdict, "agree");
        assert_eq!(judge("latency_p50_s", &s(0.010, None), &s(0.0121, None), None).verdict, "differ");
        assert_eq!(
            judge("success_rate", &s(0.99, None), &s(0.5, None), Some("generator_overloaded")).verdict,
            "generator_overloaded"
        );
    }
}
