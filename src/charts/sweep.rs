//! The charts of a sweep: each headline metric against the first
//! parameter, mean with its 95% band, the knees and the knee condition;
//! with more parameters, small multiples (one panel per combination of the
//! others), so no point is left out.

use super::draw::{Chart, GridChart, Line, LineChart};
use super::layout::Mark;
use super::names::{is_share, key_axis, metric_axis, metric_title};
use super::{Planned, PlotOptions, axis_value, check_variants, shown};
use crate::output::sweep::{PointDoc, SweepDoc};
use anyhow::Context;
use std::path::Path;

/// The metrics charted by default.
pub const SWEEP_METRICS: [&str; 5] =
    ["success_rate", "goodput_per_s", "attempts_per_intent", "amplification", "latency_p99_s"];

/// The lines of one metric over the points given, one per variant drawn.
fn lines(points: &[&PointDoc], metric: &str, variants: &[(usize, String)], numeric: bool) -> Vec<Line> {
    variants
        .iter()
        .map(|(vi, n)| {
            let mut line = Line { name: n.clone(), color: *vi, ..Line::default() };
            for (i, p) in points.iter().enumerate() {
                let Some(m) = p.variants.get(*vi).and_then(|v| v.metrics.get(metric)) else { continue };
                let x = if numeric {
                    p.values.first().and_then(|v| axis_value(&v.1)).unwrap_or(i as f64)
                } else {
                    i as f64
                };
                if let Some(y) = m.mean {
                    line.points.push((x, y));
                    if let Some([lo, hi]) = m.ci95 {
                        line.band.push((x, lo, hi));
                    }
                }
            }
            line
        })
        .collect()
}

pub(super) fn plan(dir: &Path, opts: &PlotOptions) -> anyhow::Result<Vec<(Planned, Option<String>)>> {
    let path = dir.join("sweep.json");
    let text = crate::config::read::read_text(&path, crate::config::read::MAX_DATA_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let doc: SweepDoc =
        serde_json::from_str(&text).with_context(|| format!("{} is not a sweep.json", path.display()))?;
    let all_names: Vec<String> =
        doc.points.first().map(|p| p.variants.iter().map(|v| v.name.clone()).collect()).unwrap_or_default();
    check_variants(opts, &all_names)?;
    let variants: Vec<(usize, String)> =
        all_names.iter().enumerate().filter(|(_, n)| shown(opts, n)).map(|(i, n)| (i, n.clone())).collect();
    let key = doc.params.first().map(|p| p.key.clone()).unwrap_or_else(|| "point".into());
    let first_values: Vec<String> = doc.params.first().map(|p| p.values.clone()).unwrap_or_default();
    let numeric = !first_values.is_empty() && first_values.iter().all(|v| axis_value(v).is_some());
    let x_label =
        if numeric { key_axis(&key) } else { format!("{} (in order: {})", key_axis(&key), first_values.join(", ")) };
    // The metrics: the headline ones, and any other asked for by --metric.
    let mut metrics: Vec<String> = SWEEP_METRICS.iter().map(|m| m.to_string()).collect();
    let present: Vec<String> = doc
        .points
        .first()
        .and_then(|p| p.variants.first())
        .map(|v| v.metrics.keys().cloned().collect())
        .unwrap_or_default();
    for m in &opts.metrics {
        let m = m.strip_prefix("sweep_").unwrap_or(m);
        if present.iter().any(|p| p == m) && !metrics.iter().any(|x| x == m) {
            metrics.push(m.to_string());
        }
    }
    // Slices: one per combination of the other parameters, in grid order.
    let mut slices: Vec<(String, Vec<&PointDoc>)> = Vec::new();
    for p in &doc.points {
        let label: Vec<String> = p.values.iter().skip(1).map(|(k, v)| format!("{} = {v}", key_axis(k))).collect();
        let label = label.join(", ");
        match slices.iter_mut().find(|s| s.0 == label) {
            Some(s) => s.1.push(p),
            None => slices.push((label, vec![p])),
        }
    }
    let reps = doc.experiment.replications;
    let mut out = Vec::new();
    for metric in &metrics {
        let title = format!("{} versus {} (mean and 95% interval)", metric_title(metric), key_axis(&key));
        let share = is_share(metric);
        let knee_here = *metric == doc.knee.metric;
        let chart = if slices.len() <= 1 {
            let points: Vec<&PointDoc> = slices.first().map(|s| s.1.clone()).unwrap_or_default();
            let marks: Vec<Mark> = if knee_here && numeric {
                doc.knees
                    .iter()
                    .filter_map(|k| {
                        let (vi, n) = variants.iter().find(|(_, n)| *n == k.variant)?;
                        Some(Mark {
                            x: axis_value(k.value.as_deref()?)?,
                            label: format!("knee of {n}"),
                            color: Some(*vi),
                        })
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let thresholds = if knee_here {
                vec![(
                    doc.knee.threshold,
                    format!(
                        "knee condition: {} {} {}",
                        metric_title(metric).to_lowercase(),
                        doc.knee.op,
                        doc.knee.threshold
                    ),
                )]
            } else {
                Vec::new()
            };
            Chart::Lines(LineChart {
                title,
                x_label: x_label.clone(),
                y_label: metric_axis(metric),
                lines: lines(&points, metric, &variants, numeric),
                marks,
                thresholds,
                y_fit: true,
                y_share: share,
                ..LineChart::default()
            })
        } else {
            let panels = slices
                .iter()
                .map(|(label, points)| LineChart {
                    title: label.clone(),
                    x_label: x_label.clone(),
                    y_label: metric_axis(metric),
                    lines: lines(points, metric, &variants, numeric),
                    y_fit: true,
                    y_share: share,
                    ..LineChart::default()
                })
                .collect();
            let others: Vec<String> = doc.params.iter().skip(1).map(|p| key_axis(&p.key)).collect();
            let title = format!(
                "{} versus {}, one panel per {} (mean and 95% interval)",
                metric_title(metric),
                key_axis(&key),
                others.join(" and ")
            );
            Chart::Grid(GridChart { title, panels })
        };
        let mut caption = format!(
            "{} against {}, one line per variant: the mean over {reps} replication(s) at each point with its 95% interval as a band.",
            metric_title(metric),
            key_axis(&key)
        );
        if slices.len() > 1 {
            caption.push_str(&format!(
                " One panel per value of {}, all on the same y axis.",
                doc.params.iter().skip(1).map(|p| key_axis(&p.key)).collect::<Vec<_>>().join(" and ")
            ));
        }
        if knee_here && !doc.knees.is_empty() {
            caption.push_str(&format!(
                " The dashed line is the knee condition ({} {} {}); a vertical line marks each variant's knee, the last value before the condition first fails.",
                metric, doc.knee.op, doc.knee.threshold
            ));
        }
        out.push((Planned { stem: format!("sweep_{metric}"), metric: metric.clone(), caption, chart }, None));
    }
    Ok(out)
}
