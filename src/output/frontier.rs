//! `frontier.json` (`retrysim.frontier/1`), `frontier.csv`, the table the
//! terminal shows, one sentence per row, and what its shards share to merge.

use super::shards::{Kind, Place, ShardInfo, ShardedDoc};
use crate::analysis::anatomy::Continuation;
use crate::analysis::frontier::{Boundary, TriggerKind};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The schema name of `frontier.json`.
pub const FRONTIER_SCHEMA: &str = "retrysim.frontier/1";

/// What was searched: identical in every shard of one frontier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierExperiment {
    pub name: String,
    pub file: String,
    /// Hash of the input files and overrides (shards of other inputs do not merge).
    pub fingerprint: String,
    pub seed: u64,
    pub replications: u32,
    pub trigger: TriggerKind,
    /// The service a brownout, slowdown or outage hits.
    pub target: String,
    /// The sizes the bisection chooses from, ascending.
    pub sizes: Vec<f64>,
    pub loads: Vec<f64>,
    /// Trigger lengths in seconds (empty for an outage: its size is its length).
    pub lengths_s: Vec<f64>,
    pub at_s: f64,
    pub horizon_s: f64,
    pub stop_collapsed_s: f64,
    pub variants: Vec<String>,
    /// Rows of the whole frontier (variants × loads × lengths).
    pub rows: usize,
}

/// One (variant, load, length) of the frontier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierRow {
    pub index: usize,
    pub variant: String,
    pub load_scale: f64,
    /// `None` for an outage.
    pub length_s: Option<f64>,
    /// The offered load over the target's capacity, when it can be said (open-loop clients).
    pub utilization: Option<f64>,
    /// Where the fitted P(no recovery | size) crosses ½ (the median
    /// threshold when no curve can be fitted); `None` when at least half the
    /// replications recover from every size tried, 0 when at least half do
    /// not recover even without a trigger.
    pub boundary: Option<f64>,
    pub boundary_lo: Option<f64>,
    pub boundary_hi: Option<f64>,
    /// The grid's own answer: the smallest listed size from which at least
    /// half do not recover.
    #[serde(default)]
    pub median_threshold: Option<f64>,
    /// The spacing of the listed sizes around the boundary.
    #[serde(default)]
    pub grid_step: Option<f64>,
    /// Each replication's threshold (`null` = recovers from every size tried).
    pub thresholds: Vec<Option<f64>>,
    pub runs: u64,
    pub events: u64,
    pub sentence: String,
    /// With `--anatomy`: the boundary collapse continued from the trigger's
    /// end as it is and with each mechanism off (`null` otherwise).
    pub anatomy: Option<Vec<Continuation>>,
    /// Per size tried: the share of replications that do not recover from
    /// it, with its exact 95% interval (empty in a file of an earlier version).
    #[serde(default)]
    pub curve: Vec<CurvePoint>,
}

/// One size of a row's curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub size: f64,
    /// Replications judged at this size.
    pub runs: u32,
    /// The share of them that do not recover.
    pub p_no_recovery: f64,
    /// Its exact (Clopper–Pearson) 95% interval.
    pub ci95: [f64; 2],
}

/// The curve of a row: at each size, the replications whose threshold is
/// at or below it do not recover. Under common random numbers (a spike's
/// arrivals thinned from the largest size's, so every size shares them)
/// each replication's outcome is taken to change once along the sizes; the
/// tests check that a full grid of sizes agrees with the bisection on
/// sample replications.
pub fn curve(sizes: &[f64], thresholds: &[f64]) -> Vec<CurvePoint> {
    let n = thresholds.len() as u64;
    sizes
        .iter()
        .map(|&size| {
            let k = thresholds.iter().filter(|&&t| t <= size).count() as u64;
            let (lo, hi) = crate::analysis::exact::clopper_pearson(k, n).unwrap_or((0.0, 1.0));
            CurvePoint { size, runs: n as u32, p_no_recovery: k as f64 / n.max(1) as f64, ci95: [lo, hi] }
        })
        .collect()
}

/// The anatomy of a row in words: which switch breaks the loop.
pub fn anatomy_words(a: &[Continuation]) -> String {
    let mut parts = Vec::new();
    for c in a.iter().filter(|c| c.switched_off.is_some()) {
        let m = c.switched_off.expect("filtered").label();
        let share =
            c.share_of_excess.map(|x| format!("removes {}% of the excess load", num((x * 1000.0).round() / 10.0)));
        let back = match c.recovered_after_s {
            Some(t) => format!("recovers {} s after the trigger", num(t)),
            None => "does not recover".to_string(),
        };
        parts.push(format!("{m}: {}, {back}", share.unwrap_or_else(|| "no excess load to remove".into())));
    }
    let base = a.iter().find(|c| c.switched_off.is_none()).map_or(0.0, |c| c.excess_per_s);
    format!("sustained excess load {} attempts/s beyond the offered intents; {}", num(base.round()), parts.join("; "))
}

/// `frontier.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierDoc {
    pub schema: String,
    pub experiment: FrontierExperiment,
    pub shard: Option<ShardInfo>,
    pub rows: Vec<FrontierRow>,
}

/// A number as CSV and JSON show it: shortest round-trip form.
fn num(x: f64) -> String {
    let r = (x * 1e9).round() / 1e9;
    if r.fract() == 0.0 && r.abs() < 1e15 { format!("{}", r as i64) } else { format!("{r}") }
}

fn opt(x: Option<f64>) -> String {
    x.map(num).unwrap_or_default()
}

/// A size in the trigger's words: `1.6×`, `40%`, `8 s`.
pub fn size_words(kind: TriggerKind, x: f64) -> String {
    match kind {
        TriggerKind::Spike | TriggerKind::Slowdown => format!("{}×", num((x * 1000.0).round() / 1000.0)),
        TriggerKind::Brownout => format!("{}%", num((x * 1000.0).round() / 10.0)),
        TriggerKind::Outage => format!("{} s", num((x * 1000.0).round() / 1000.0)),
        TriggerKind::Burst => crate::words::plural(x.round() as usize, "intent"),
    }
}

/// What every sentence of a frontier shares: the trigger, its target and
/// the largest size tried.
#[derive(Debug, Clone, Copy)]
pub struct Words<'a> {
    pub kind: TriggerKind,
    pub target: &'a str,
    pub largest: f64,
}

/// The sentence of one row: "at 70% load, a spike of 1.6× for 8 s or more does not recover".
pub fn sentence(w: &Words, load_scale: f64, utilization: Option<f64>, length_s: Option<f64>, b: &Boundary) -> String {
    let (kind, target, largest) = (w.kind, w.target, w.largest);
    let (boundary, lo, hi, grid_step) = (b.boundary, b.lo, b.hi, b.grid_step);
    let load = match utilization {
        Some(u) => format!("at {}% load (load_scale {})", num((u * 1000.0).round() / 10.0), num(load_scale)),
        None => format!("at load_scale {}", num(load_scale)),
    };
    let length = length_s.map(|l| format!(" for {} s", num(l))).unwrap_or_default();
    let what = |x: f64| match kind {
        TriggerKind::Spike => format!("a spike of {}{length}", size_words(kind, x)),
        TriggerKind::Brownout => format!("a brownout removing {} of {target}'s capacity{length}", size_words(kind, x)),
        TriggerKind::Slowdown => format!("a slowdown of {target}'s service times by {}{length}", size_words(kind, x)),
        TriggerKind::Outage => format!("an outage of {target} of {}", size_words(kind, x)),
        TriggerKind::Burst => match length_s {
            Some(l) if l > 0.0 => format!("a burst of {} to {target} over {} s", size_words(kind, x), num(l)),
            _ => format!("a burst of {} to {target} at once", size_words(kind, x)),
        },
    };
    match boundary {
        None => format!("{load}, the design recovers from every {} tried, up to {}", kind.label(), what(largest)),
        Some(0.0) => {
            format!(
                "{load}, the design does not recover even without a trigger: it is metastable or overloaded at steady load"
            )
        }
        Some(b) => {
            let mut notes = Vec::new();
            match (lo, hi) {
                (Some(l), Some(h)) => {
                    notes.push(format!("95% interval {} to {}", size_words(kind, l), size_words(kind, h)))
                }
                (Some(l), None) => {
                    notes.push(format!("95% interval from {} to beyond the sizes tried", size_words(kind, l)))
                }
                _ => {}
            }
            if let Some(step) = grid_step {
                notes.push(format!("sizes tried {} apart here", size_words(kind, step)));
            }
            let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) };
            format!("{load}, {} or more does not recover in at least half the runs{notes}", what(b))
        }
    }
}

impl ShardedDoc for FrontierDoc {
    type Piece = FrontierRow;
    const KIND: Kind = Kind::Frontier;

    fn same_whole(&self, other: &Self) -> bool {
        self.experiment == other.experiment && self.schema == other.schema
    }

    fn place(&self) -> Place<'_> {
        Place { schema: &self.schema, shard: self.shard, whole: self.experiment.rows }
    }

    fn into_pieces(self) -> Vec<(usize, FrontierRow)> {
        self.rows.into_iter().map(|r| (r.index, r)).collect()
    }

    fn joined(first: Self, rows: Vec<FrontierRow>) -> Self {
        FrontierDoc { shard: None, rows, ..first }
    }

    /// `frontier.csv`: one row per (variant, load, length).
    fn to_csv(&self) -> anyhow::Result<String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record([
            "variant",
            "load_scale",
            "length_s",
            "trigger",
            "utilization",
            "boundary",
            "boundary_lo",
            "boundary_hi",
            "replications",
            "runs",
            "events",
            "median_threshold",
            "grid_step",
        ])?;
        for r in &self.rows {
            w.write_record([
                r.variant.clone(),
                num(r.load_scale),
                opt(r.length_s),
                self.experiment.trigger.label().to_string(),
                opt(r.utilization.map(|u| (u * 1e4).round() / 1e4)),
                opt(r.boundary),
                opt(r.boundary_lo),
                opt(r.boundary_hi),
                r.thresholds.len().to_string(),
                r.runs.to_string(),
                r.events.to_string(),
                opt(r.median_threshold),
                opt(r.grid_step),
            ])?;
        }
        Ok(String::from_utf8(w.into_inner()?)?)
    }

    /// The table the terminal shows (`markdown` for a Markdown table), then the sentences.
    fn to_table(&self, markdown: bool) -> String {
        let e = &self.experiment;
        let mut out = String::new();
        let header = ["variant", "load_scale", "length", "boundary", "95% interval", "runs"];
        let rows: Vec<[String; 6]> = self
            .rows
            .iter()
            .map(|r| {
                let b = match r.boundary {
                    None => format!("none up to {}", size_words(e.trigger, *e.sizes.last().unwrap_or(&0.0))),
                    Some(0.0) => "0 (no trigger needed)".to_string(),
                    Some(b) => size_words(e.trigger, b),
                };
                let ci = match (r.boundary_lo, r.boundary_hi) {
                    (Some(l), Some(h)) => format!("{} to {}", size_words(e.trigger, l), size_words(e.trigger, h)),
                    (Some(l), None) => format!("{} to beyond", size_words(e.trigger, l)),
                    _ => String::new(),
                };
                [
                    r.variant.clone(),
                    num(r.load_scale),
                    r.length_s.map(|l| format!("{} s", num(l))).unwrap_or_else(|| "-".into()),
                    b,
                    ci,
                    r.runs.to_string(),
                ]
            })
            .collect();
        let _ = writeln!(
            out,
            "{}: the {} size from which at least half the runs do not recover within {} s \
             (the 50% point of a logistic curve fitted to {} replications)\n",
            e.name,
            e.trigger.label(),
            num(e.horizon_s),
            e.replications
        );
        super::plain_table::write_table(&mut out, header, &rows, markdown, "|---|---:|---:|---:|---:|---:|");
        out.push('\n');
        for r in &self.rows {
            let _ = writeln!(out, "{}: {}.", r.variant, r.sentence);
            if let Some(a) = &r.anatomy {
                let _ = writeln!(out, "  anatomy: {}.", anatomy_words(a));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_say_the_boundary_in_the_triggers_words() {
        let spike = Words { kind: TriggerKind::Spike, target: "api", largest: 5.0 };
        let none_b =
            Boundary { boundary: None, lo: None, hi: None, median_threshold: None, grid_step: None, scale: None };
        let b = Boundary { boundary: Some(1.625), lo: Some(1.5), hi: Some(1.75), grid_step: Some(0.25), ..none_b };
        let s = sentence(&spike, 1.0, Some(0.7), Some(8.0), &b);
        assert_eq!(
            s,
            "at 70% load (load_scale 1), a spike of 1.625× for 8 s or more does not recover in at least half the runs \
             (95% interval 1.5× to 1.75×; sizes tried 0.25× apart here)"
        );
        let outage = Words { kind: TriggerKind::Outage, target: "api", largest: 60.0 };
        let none = sentence(&outage, 0.5, None, None, &none_b);
        assert_eq!(
            none,
            "at load_scale 0.5, the design recovers from every outage tried, up to an outage of api of 60 s"
        );
        let brownout = Words { kind: TriggerKind::Brownout, target: "api", largest: 1.0 };
        let b = sentence(&brownout, 1.0, None, Some(10.0), &Boundary { boundary: Some(0.4), ..none_b });
        assert!(b.contains("a brownout removing 40% of api's capacity for 10 s or more"), "{b}");
    }
}
