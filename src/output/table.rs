//! The comparison table: the terminal view, Markdown, and `summary.csv`.

use super::VariantSummary;
use crate::analysis::Summary;
use crate::metrics::METRICS;

/// How a metric is shown in the terminal table.
#[derive(Clone, Copy)]
enum Style {
    Percent,
    Number,
    Seconds,
    Count,
}

/// The columns of the terminal table: (metric, header, style).
const COLUMNS: [(&str, &str, Style); 10] = [
    ("success_rate", "success", Style::Percent),
    ("goodput_per_s", "goodput/s", Style::Number),
    ("attempts_per_intent", "attempts/intent", Style::Number),
    ("amplification", "amplification", Style::Number),
    ("latency_p50_s", "p50", Style::Seconds),
    ("latency_p99_s", "p99", Style::Seconds),
    ("latency_p999_s", "p99.9", Style::Seconds),
    ("wasted_fraction", "wasted", Style::Percent),
    ("duplicate_intents", "duplicates", Style::Count),
    ("orphan_commits", "orphans", Style::Count),
];

fn fmt_value(x: f64, style: Style) -> String {
    match style {
        Style::Percent => format!("{:.2}%", x * 100.0),
        Style::Number => format!("{:.3}", x),
        Style::Count => format!("{:.1}", x),
        Style::Seconds => fmt_seconds(x),
    }
}

/// Seconds in a readable unit: `850µs`, `12.3ms`, `1.24s`.
pub fn fmt_seconds(x: f64) -> String {
    let (sign, a) = if x < 0.0 { ("-", -x) } else { ("", x) };
    if a < 1e-3 {
        format!("{sign}{:.0}µs", a * 1e6)
    } else if a < 1.0 {
        format!("{sign}{:.1}ms", a * 1e3)
    } else {
        format!("{sign}{a:.2}s")
    }
}

fn fmt_half(h: f64, style: Style) -> String {
    match style {
        Style::Percent => format!("{:.2}", h * 100.0),
        Style::Seconds => fmt_seconds(h),
        Style::Number => format!("{:.3}", h),
        Style::Count => format!("{:.1}", h),
    }
}

fn cell(s: Option<&Summary>, style: Style) -> String {
    match s.and_then(|s| s.mean.map(|m| (m, s.half_width()))) {
        None => "—".into(),
        Some((m, None)) => fmt_value(m, style),
        Some((m, Some(h))) => format!("{} ±{}", fmt_value(m, style), fmt_half(h, style)),
    }
}

fn rows(summaries: &[VariantSummary]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["variant".to_string()];
    header.extend(COLUMNS.iter().map(|c| c.1.to_string()));
    let body = summaries
        .iter()
        .map(|v| {
            let mut row = vec![v.name.clone()];
            for (metric, _, style) in COLUMNS {
                let mut text = cell(v.metric(metric), style);
                if metric == "amplification" && v.metric(metric).and_then(|s| s.mean).is_some() {
                    text = format!("{text} ({})", v.amplification_service);
                }
                row.push(text);
            }
            row
        })
        .collect();
    (header, body)
}

/// The aligned terminal table, with a legend line.
pub fn render_text(summaries: &[VariantSummary], replications: usize) -> String {
    let (header, body) = rows(summaries);
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &body {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| if i == 0 { format!("{c:<w$}", w = widths[i]) } else { format!("{c:>w$}", w = widths[i]) })
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut out = String::new();
    out.push_str(&line(&header));
    out.push('\n');
    out.push_str(&widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
    out.push('\n');
    for r in &body {
        out.push_str(&line(r));
        out.push('\n');
    }
    out.push_str(&format!(
        "mean ±95% CI half-width over {replications} replication(s); latency of successful intents; — = no value\n"
    ));
    out
}

/// The same table in Markdown.
pub fn render_markdown(summaries: &[VariantSummary]) -> String {
    let (header, body) = rows(summaries);
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!(
        "|{}|\n",
        header.iter().enumerate().map(|(i, _)| if i == 0 { "---" } else { "---:" }).collect::<Vec<_>>().join("|")
    ));
    for r in body {
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out
}

/// `summary.csv`: one row per variant; every metric's mean and CI bounds.
pub fn render_csv(summaries: &[VariantSummary]) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["variant".to_string(), "policy".to_string(), "amplification_service".to_string()];
    for m in METRICS {
        header.extend([m.to_string(), format!("{m}_ci_lo"), format!("{m}_ci_hi")]);
    }
    w.write_record(&header)?;
    let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
    for v in summaries {
        let mut row = vec![v.name.clone(), v.policy.clone(), v.amplification_service.clone()];
        for m in METRICS {
            let s = v.metric(m);
            row.push(num(s.and_then(|s| s.mean)));
            row.push(num(s.and_then(|s| s.ci95.map(|c| c.0))));
            row.push(num(s.and_then(|s| s.ci95.map(|c| c.1))));
        }
        w.write_record(&row)?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// Why intents failed and why retries were refused, per variant: the
/// breakdown printed under the terminal table.
pub fn render_breakdown(summaries: &[VariantSummary]) -> String {
    let mut out = String::new();
    for v in summaries {
        let intents: f64 = v.metric("intents").map(|s| s.values.iter().flatten().sum()).unwrap_or(0.0);
        if v.failures.is_empty() && v.denials.is_empty() {
            continue;
        }
        let mut failures: Vec<(&String, &u64)> = v.failures.iter().collect();
        failures.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let share = |n: u64| {
            if intents > 0.0 { format!("{:.2}%", n as f64 / intents * 100.0) } else { n.to_string() }
        };
        let f: Vec<String> = failures.iter().map(|(k, n)| format!("{k} {}", share(**n))).collect();
        out.push_str(&format!("{}: failed: {}", v.name, if f.is_empty() { "none".into() } else { f.join(", ") }));
        if !v.denials.is_empty() {
            let d: Vec<String> = v.denials.iter().map(|(k, n)| format!("{k} {n}")).collect();
            out.push_str(&format!("; retries refused: {}", d.join(", ")));
        }
        out.push('\n');
    }
    if !out.is_empty() {
        out.insert_str(0, "\nwhy intents failed (share of intents, all replications) and retries refused (count):\n");
    }
    out
}

/// The paired differences of every variant to the baseline: the second
/// block of the terminal table. "n.s." marks a difference whose 95% CI
/// contains zero.
pub fn render_vs_baseline(summaries: &[VariantSummary]) -> String {
    let others: Vec<&VariantSummary> = summaries.iter().filter(|v| !v.vs_baseline.is_empty()).collect();
    if others.is_empty() {
        return String::new();
    }
    let cols = [COLUMNS[0], COLUMNS[1], COLUMNS[2], COLUMNS[3], COLUMNS[5], COLUMNS[8]];
    let base = summaries.iter().find(|v| v.vs_baseline.is_empty());
    let mut header = vec!["variant".to_string()];
    header.extend(cols.iter().map(|c| c.1.to_string()));
    let mut rows = vec![header];
    for v in others {
        let mut row = vec![v.name.clone()];
        for (metric, _, style) in cols {
            let d = v.vs_baseline.iter().find(|(k, _)| k == metric).map(|(_, s)| s);
            let base_mean = base.and_then(|b| b.metric(metric)).and_then(|s| s.mean);
            row.push(match d.and_then(|d| d.mean.map(|m| (m, d))) {
                None => "—".into(),
                Some((m, d)) => {
                    let sign = if m > 0.0 { "+" } else { "" };
                    let mut text = format!("{sign}{}", fmt_value(m, style));
                    if let Some(h) = d.half_width() {
                        text.push_str(&format!(" ±{}", fmt_half(h, style)));
                    }
                    if let Some(b) = base_mean.filter(|b| b.abs() > 1e-12 && !matches!(style, Style::Percent)) {
                        text.push_str(&format!(" ({sign}{:.0}%)", m / b * 100.0));
                    }
                    if !crate::analysis::stats::significant(d) {
                        text.push_str(" n.s.");
                    }
                    text
                }
            });
        }
        rows.push(row);
    }
    let mut widths = vec![0; rows[0].len()];
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = format!(
        "\nvs baseline \"{}\": paired difference ±95% CI (same random numbers per replication); n.s. = not significant\n",
        base.map(|b| b.name.as_str()).unwrap_or("")
    );
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| if i == 0 { format!("{c:<w$}", w = widths[i]) } else { format!("{c:>w$}", w = widths[i]) })
            .collect();
        out.push_str(&line.join("  "));
        out.push('\n');
    }
    out
}
