//! `sweep.json` and `sweep.csv`: one document model for whole sweeps,
//! shards and merged shards, so that merged shards give byte for byte the
//! files of the unsharded sweep.

use super::shards::{Kind, Place, ShardInfo, ShardedDoc};
use crate::analysis::sweep::{Knee, Param};
use crate::metrics::METRICS;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A metric's mean and 95% CI at one point for one variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDoc {
    pub mean: Option<f64>,
    pub ci95: Option<[f64; 2]>,
    /// Why the mean is null, where known (`never_healthy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One variant at one grid point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantPoint {
    pub name: String,
    /// Where `amplification` is taken at this point: the first variant's busiest service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amplification_service: Option<String>,
    pub metrics: BTreeMap<String, MetricDoc>,
}

/// One grid point: its index in the whole grid, its parameter values and
/// its variants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointDoc {
    pub index: usize,
    pub values: Vec<(String, String)>,
    pub variants: Vec<VariantPoint>,
}

/// What identifies a sweep: shards merge only when these agree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepExperiment {
    pub name: String,
    pub file: String,
    /// Hash of the experiment's text and the `--set` overrides.
    pub fingerprint: String,
    pub seed: u64,
    pub replications: u32,
    pub grid_points: usize,
    /// The variants swept, in order.
    pub variants: Vec<String>,
}

/// A variant's knee: the last value of the first parameter, in grid
/// order, before the knee condition first fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeDoc {
    pub variant: String,
    pub param: String,
    pub value: Option<String>,
}

/// A sweep, a shard of one, or merged shards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepDoc {
    pub schema: String,
    pub experiment: SweepExperiment,
    pub params: Vec<Param>,
    pub knee: Knee,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    pub points: Vec<PointDoc>,
    pub knees: Vec<KneeDoc>,
}

/// The schema name of sweep documents.
pub const SWEEP_SCHEMA: &str = "retrysim.sweep/1";

impl SweepDoc {
    /// Computes the knees (one parameter, the whole grid); none otherwise.
    pub fn compute_knees(&mut self) {
        self.knees.clear();
        if self.shard.is_some() || self.params.len() != 1 {
            return;
        }
        let Some(first) = self.points.first() else { return };
        for (vi, v) in first.variants.iter().enumerate() {
            let mut knee = None;
            for p in &self.points {
                let holds = p
                    .variants
                    .get(vi)
                    .and_then(|v| v.metrics.get(&self.knee.metric))
                    .and_then(|m| m.mean)
                    .is_some_and(|x| self.knee.holds(x));
                if !holds {
                    break;
                }
                knee = Some(p.values[0].1.clone());
            }
            self.knees.push(KneeDoc { variant: v.name.clone(), param: self.params[0].key.clone(), value: knee });
        }
    }
}

impl ShardedDoc for SweepDoc {
    type Piece = PointDoc;
    const KIND: Kind = Kind::Sweep;

    fn same_whole(&self, other: &Self) -> bool {
        self.experiment == other.experiment
            && self.params == other.params
            && self.knee == other.knee
            && self.schema == other.schema
    }

    fn place(&self) -> Place<'_> {
        Place { schema: &self.schema, shard: self.shard, whole: self.experiment.grid_points }
    }

    fn into_pieces(self) -> Vec<(usize, PointDoc)> {
        self.points.into_iter().map(|p| (p.index, p)).collect()
    }

    fn joined(first: Self, points: Vec<PointDoc>) -> Self {
        let mut merged = SweepDoc { shard: None, points, knees: Vec::new(), ..first };
        merged.compute_knees();
        merged
    }

    /// `sweep.csv`: one row per point × variant, every metric's mean and CI.
    fn to_csv(&self) -> anyhow::Result<String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = vec!["point".to_string()];
        header.extend(self.params.iter().map(|p| p.key.clone()));
        header.push("variant".into());
        for m in METRICS {
            header.extend([m.to_string(), format!("{m}_ci_lo"), format!("{m}_ci_hi")]);
        }
        w.write_record(&header)?;
        let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
        for p in &self.points {
            for v in &p.variants {
                let mut row = vec![p.index.to_string()];
                row.extend(p.values.iter().map(|(_, x)| x.clone()));
                row.push(v.name.clone());
                for m in METRICS {
                    let d = v.metrics.get(m);
                    row.push(num(d.and_then(|d| d.mean)));
                    row.push(num(d.and_then(|d| d.ci95.map(|c| c[0]))));
                    row.push(num(d.and_then(|d| d.ci95.map(|c| c[1]))));
                }
                w.write_record(&row)?;
            }
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    /// The terminal view (or a Markdown table): headline means per point
    /// and variant, then knees.
    fn to_table(&self, markdown: bool) -> String {
        let cols = [
            "success_rate",
            "goodput_per_s",
            "attempts_per_intent",
            "amplification",
            "latency_p99_s",
            "recovered_fraction",
        ];
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut header: Vec<String> = self.params.iter().map(|p| p.key.clone()).collect();
        header.push("variant".into());
        header.extend(cols.iter().map(|c| c.to_string()));
        rows.push(header);
        for p in &self.points {
            for v in &p.variants {
                let mut row: Vec<String> = p.values.iter().map(|(_, x)| x.clone()).collect();
                row.push(v.name.clone());
                for c in cols {
                    let m = v.metrics.get(c);
                    row.push(match m {
                        Some(MetricDoc { reason: Some(r), .. }) if r == crate::metrics::NEVER_HEALTHY => {
                            "never healthy".into()
                        }
                        _ => m.and_then(|m| m.mean).map(|x| format!("{x:.4}")).unwrap_or_else(|| "—".into()),
                    });
                }
                rows.push(row);
            }
        }
        let mut widths = vec![0; rows[0].len()];
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for (ri, r) in rows.iter().enumerate() {
            if markdown {
                let cells: Vec<String> = r.iter().map(|c| super::markdown::cell(c)).collect();
                out.push_str(&format!("| {} |\n", cells.join(" | ")));
                if ri == 0 {
                    out.push_str(&format!("|{}|\n", vec!["---"; r.len()].join("|")));
                }
                continue;
            }
            let cells: Vec<String> = r.iter().enumerate().map(|(i, c)| format!("{c:>w$}", w = widths[i])).collect();
            out.push_str(&cells.join("  "));
            out.push('\n');
        }
        if markdown && !self.knees.is_empty() {
            out.push('\n');
        }
        let never_healthy = self.points.iter().flat_map(|p| &p.variants).any(|v| {
            v.metrics.get("recovered_fraction").and_then(|m| m.reason.as_deref()) == Some(crate::metrics::NEVER_HEALTHY)
        });
        if never_healthy {
            out.push_str(
                "never healthy: already overloaded before the first disturbance, so recovery is not measured there\n",
            );
        }
        for k in &self.knees {
            out.push_str(&format!(
                "knee of \"{}\" ({} {} {}): {}\n",
                if markdown { super::markdown::escape(&k.variant) } else { k.variant.clone() },
                self.knee.metric,
                self.knee.op,
                self.knee.threshold,
                match &k.value {
                    Some(v) => format!("{} = {v}", k.param),
                    None => "the condition fails already at the first point".into(),
                }
            ));
        }
        out
    }
}
