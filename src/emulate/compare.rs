//! `emulate --compare`: the simulated and the emulated runs of each
//! variant side by side, metric by metric, with a verdict.
//!
//! A metric **agrees** when the two 95% intervals overlap (with two or
//! more replications) or the difference of the means is within the
//! metric's stated tolerance ([`tolerance`]); otherwise it **differs**.
//! Runs whose load generator fell behind its schedule are not compared
//! (`generator_overloaded`): they offered less load than the experiment says.

use crate::analysis::replicate::RunSet;
use crate::analysis::summarize;
use serde::Serialize;
use std::collections::BTreeMap;

/// The metrics compared, in the order shown.
pub const COMPARED: [&str; 11] = [
    "success_rate",
    "attempts_per_intent",
    "amplification",
    "latency_p50_s",
    "latency_p99_s",
    "recovered_fraction",
    "recovery_time_s",
    "duplicate_intents",
    "stuck_placeholders",
    "cancelled_fraction",
    "throttled_per_intent",
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
        "duplicate_intents" | "stuck_placeholders" => (3.0, 0.25),
        "cancelled_fraction" => (0.03, 0.10),
        "throttled_per_intent" => (0.01, 0.10),
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
    /// `agree`, `differ`, `no_value` (either has none) or
    /// `generator_overloaded` (not compared).
    pub verdict: &'static str,
}

/// One variant's comparison.
#[derive(Debug, Clone, Serialize)]
pub struct VariantCompare {
    pub name: String,
    pub metrics: BTreeMap<String, Compared>,
}

/// The load generator's lateness over the emulated runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Generator {
    /// The largest per-run 99th percentile of lateness (seconds).
    pub late_p99_s: f64,
    pub overloaded: bool,
}

/// `compare.json`.
#[derive(Debug, Clone, Serialize)]
pub struct CompareJson {
    pub schema: &'static str,
    pub experiment: String,
    pub replications: usize,
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
                // Compared where the model has it: cancellation and throttles
                // only when a policy cancels or throttles.
                if matches!(metric, "cancelled_fraction" | "throttled_per_intent") && sim.mean.is_none() {
                    continue;
                }
                let emu = summarize(values(emulated, v, metric, &service));
                metrics.insert(metric.to_string(), judge(metric, &sim, &emu, generator.overloaded));
            }
            VariantCompare { name: simulated.variants[v].scenario.variant.clone(), metrics }
        })
        .collect()
}

/// The verdict on one metric.
fn judge(metric: &str, sim: &crate::analysis::Summary, emu: &crate::analysis::Summary, overloaded: bool) -> Compared {
    let side = |s: &crate::analysis::Summary| Side { mean: s.mean, ci95: s.ci95 };
    let (abs, rel) = tolerance(metric);
    let tolerance = sim.mean.map(|m| abs.max(rel * m.abs()));
    let verdict = match (sim.mean, emu.mean, tolerance) {
        _ if overloaded => "generator_overloaded",
        (Some(a), Some(b), Some(t)) => {
            let overlap = matches!((sim.ci95, emu.ci95), (Some((l1, h1)), Some((l2, h2))) if l1 <= h2 && l2 <= h1);
            if overlap || (a - b).abs() <= t + 1e-12 { "agree" } else { "differ" }
        }
        _ => "no_value",
    };
    Compared { simulated: side(sim), emulated: side(emu), tolerance, verdict }
}

/// The comparison as text, the answer first.
pub fn render_text(variants: &[VariantCompare], generator: Generator) -> String {
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
    for v in variants {
        out += &format!("\n{}\n  {:<22} {:>24} {:>24}  verdict\n", v.name, "metric", "simulated", "emulated");
        for metric in COMPARED {
            let Some(c) = v.metrics.get(metric) else { continue };
            out += &format!("  {metric:<22} {:>24} {:>24}  {}\n", show(&c.simulated), show(&c.emulated), c.verdict);
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

    #[test]
    fn overlapping_intervals_or_a_difference_within_tolerance_agree() {
        assert_eq!(judge("attempts_per_intent", &s(1.0, None), &s(1.029, None), false).verdict, "agree");
        assert_eq!(judge("attempts_per_intent", &s(1.0, None), &s(1.031, None), false).verdict, "differ");
        let wide = Some((0.9, 1.2));
        assert_eq!(judge("attempts_per_intent", &s(1.0, wide), &s(1.1, Some((1.05, 1.15))), false).verdict, "agree");
        assert_eq!(judge("latency_p50_s", &s(0.010, None), &s(0.0119, None), false).verdict, "agree");
        assert_eq!(judge("latency_p50_s", &s(0.010, None), &s(0.0121, None), false).verdict, "differ");
        assert_eq!(judge("success_rate", &s(0.99, None), &s(0.5, None), true).verdict, "generator_overloaded");
    }
}
