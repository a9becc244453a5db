//! `pareto.png`/`.svg`: every candidate in the (amplification, success)
//! plane, the Pareto front and the winner.

use super::Report;
use std::path::Path;

/// Draws the chart to `<stem>.png` and `<stem>.svg`.
pub fn pareto_chart(r: &Report, stem: &Path) -> anyhow::Result<()> {
    use crate::charts::draw::{Chart, Line, LineChart, save};
    let xy = |i: usize| {
        let j = &r.judged[i];
        Some((j.amplification?, j.success?))
    };
    let mut front: Vec<(f64, f64)> = r.front.iter().filter_map(|&i| xy(i)).collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    let winner = r.choice.map(|c| c.winner);
    let chart = Chart::Lines(LineChart {
        title: "Tuning: worst-scenario success versus amplification per candidate".into(),
        x_label: "amplification (requests per intent at each scenario's busiest service as written)".into(),
        y_label: "success rate (worst scenario)".into(),
        lines: vec![
            Line {
                name: "candidates".into(),
                points: (0..r.evaluated.len()).filter_map(xy).collect(),
                reference: true,
                dots: true,
                ..Line::default()
            },
            Line {
                name: "Pareto front (success, amplification, p99)".into(),
                color: 0,
                points: front,
                dots: true,
                ..Line::default()
            },
            Line {
                name: "winner".into(),
                color: 3,
                points: winner.and_then(xy).into_iter().collect(),
                dots: true,
                ..Line::default()
            },
        ],
        y_fit: true,
        ..LineChart::default()
    });
    let dir = stem.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = stem.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "pareto".into());
    save(&chart, &dir, &name)
}
