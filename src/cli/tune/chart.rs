//! `pareto.png`/`.svg`: every candidate in the (amplification, success)
//! plane, feasible ones as dots and those that miss a constraint as
//! crosses, the constraints on these two axes as dashed lines, the Pareto
//! front and the winner.

use super::Report;
use std::path::Path;

/// The chart.
pub fn pareto(r: &Report) -> crate::charts::draw::Chart {
    use crate::charts::draw::{Chart, Line, LineChart};
    let xy = |i: usize| {
        let j = &r.judged[i];
        Some((j.amplification?, j.success?))
    };
    let mut front: Vec<(f64, f64)> = r.front.iter().filter_map(|&i| xy(i)).collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    let winner = r.choice.map(|c| c.winner);
    let n = r.evaluated.len().min(r.judged.len());
    let feasible: Vec<(f64, f64)> = (0..n).filter(|&i| r.judged[i].feasible).filter_map(xy).collect();
    let infeasible: Vec<(f64, f64)> = (0..n).filter(|&i| !r.judged[i].feasible).filter_map(xy).collect();
    let mut thresholds = Vec::new();
    let mut x_thresholds = Vec::new();
    for c in &r.ctx.spec.constraints {
        let label = format!("constraint: {}", c.text);
        match c.metric.as_str() {
            "success_rate" => thresholds.push((c.value, label)),
            "amplification" => x_thresholds.push((c.value, label)),
            _ => {}
        }
    }
    let mut lines = vec![
        Line {
            name: format!("feasible candidates ({})", feasible.len()),
            points: feasible,
            reference: true,
            dots: true,
            ..Line::default()
        },
        Line {
            name: format!("candidates that miss a constraint ({})", infeasible.len()),
            points: infeasible,
            crosses: true,
            ..Line::default()
        },
        Line {
            name: "Pareto front (success, amplification, p99)".into(),
            color: 0,
            points: front,
            dots: true,
            ..Line::default()
        },
    ];
    if let Some(w) = winner.and_then(xy) {
        lines.push(Line { name: "winner".into(), color: 1, points: vec![w], dots: true, ..Line::default() });
    }
    Chart::Lines(LineChart {
        title: "Tuning: worst-scenario success versus amplification per candidate".into(),
        x_label: "amplification (requests per intent at each scenario's busiest service as written)".into(),
        y_label: "success rate (worst scenario)".into(),
        lines,
        thresholds,
        x_thresholds,
        y_fit: true,
        y_share: true,
        ..LineChart::default()
    })
}

/// Draws the chart to `<stem>.png` and `<stem>.svg`.
pub fn pareto_chart(r: &Report, stem: &Path) -> anyhow::Result<()> {
    let dir = stem.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = stem.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "pareto".into());
    crate::charts::draw::save(&pareto(r), &dir, &name)?;
    crate::charts::record::add(&dir, crate::charts::record::TUNE, &[name])
}
