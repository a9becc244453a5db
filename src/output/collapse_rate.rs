//! `collapse-rate.json` (`retrysim.collapse_rate/1`) and its table.

use crate::analysis::collapse::Direct;
use crate::analysis::collapse::splitting::Splitting;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The schema name of `collapse-rate.json`.
pub const COLLAPSE_RATE_SCHEMA: &str = "retrysim.collapse_rate/1";

/// A value with its 95% interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub mean: f64,
    pub ci95: [f64; 2],
}

/// What was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollapseExperiment {
    pub name: String,
    pub file: String,
    pub seed: u64,
    /// The length of one run (and of the share of runs that collapse).
    pub duration_s: f64,
    pub warmup_s: f64,
    /// The collapse definition.
    pub collapse: String,
    /// `auto`, `direct` or `splitting`, as asked.
    pub method_asked: String,
    pub hours: f64,
}

/// One variant's rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollapseVariant {
    pub name: String,
    pub collapses_per_hour: Interval,
    /// `direct` or `splitting`: the method the rate above comes from.
    pub method: String,
    /// Simulated hours and events it cost (every method run for this variant).
    pub simulated_hours: f64,
    pub events: u64,
    /// Share of runs of `duration_s` (from the warm-up) in which a collapse
    /// begins: 1 − exp(−rate × (duration − warmup)), with the rate's interval.
    pub share_of_runs: Interval,
    pub direct: Option<Direct>,
    pub splitting: Option<Splitting>,
}

/// `collapse-rate.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollapseDoc {
    pub schema: String,
    pub experiment: CollapseExperiment,
    pub variants: Vec<CollapseVariant>,
}

fn g(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 0.01 {
        format!("{x:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{x:.2e}")
    }
}

impl CollapseDoc {
    /// As written.
    pub fn to_json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }

    /// The table (Markdown when asked) and a sentence per variant.
    pub fn to_table(&self, markdown: bool) -> String {
        let mut out = String::new();
        let e = &self.experiment;
        let _ = writeln!(out, "{}: spontaneous collapses ({})\n", e.name, e.collapse);
        let header = ["variant", "method", "collapses/hour", "95% interval", "share of runs", "sim. hours", "events"];
        let rows: Vec<[String; 7]> = self
            .variants
            .iter()
            .map(|v| {
                [
                    v.name.clone(),
                    v.method.clone(),
                    g(v.collapses_per_hour.mean),
                    format!("{} to {}", g(v.collapses_per_hour.ci95[0]), g(v.collapses_per_hour.ci95[1])),
                    format!(
                        "{}% ({} to {}%)",
                        g(v.share_of_runs.mean * 100.0),
                        g(v.share_of_runs.ci95[0] * 100.0),
                        g(v.share_of_runs.ci95[1] * 100.0)
                    ),
                    g(v.simulated_hours),
                    v.events.to_string(),
                ]
            })
            .collect();
        super::plain_table::write_table(&mut out, header, &rows, markdown, "|---|---|---:|---:|---:|---:|---:|");
        out.push('\n');
        for v in &self.variants {
            let _ = writeln!(out, "{}: {}.", v.name, self.sentence(v));
        }
        out
    }

    /// One variant in words.
    pub fn sentence(&self, v: &CollapseVariant) -> String {
        let r = &v.collapses_per_hour;
        format!(
            "{} spontaneous collapses per hour (95% interval {} to {}), {}% of {}-second runs, by {} simulation",
            g(r.mean),
            g(r.ci95[0]),
            g(r.ci95[1]),
            g(v.share_of_runs.mean * 100.0),
            g(self.experiment.duration_s - self.experiment.warmup_s),
            if v.method == "direct" { "direct" } else { "multilevel splitting" }
        )
    }
}
