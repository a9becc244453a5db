//! The comparison table: the terminal view, Markdown, and `summary.csv`;
//! and how a number is written in a cell.

use super::VariantSummary;
use super::columns::{Column, Shown, Style, choose};
use crate::analysis::Summary;
use crate::metrics::{METRICS, NEVER_HEALTHY};

/// `x` in a column's style.
pub fn fmt_value(x: f64, style: Style) -> String {
    match style {
        Style::Percent => format!("{:.2}%", x * 100.0),
        Style::Number => format!("{:.3}", x),
        Style::Count => format!("{:.1}", x),
        Style::Seconds | Style::Recovery => fmt_seconds(x),
        Style::Runs => format!("{:.0}%", x * 100.0),
    }
}

/// Seconds in a readable unit: `850µs`, `12.3ms`, `1.24s`.
pub fn fmt_seconds(x: f64) -> String {
    let (sign, a) = if x < 0.0 { ("-", -x) } else { ("", x) };
    if a == 0.0 {
        "0s".into()
    } else if a < 1e-3 {
        format!("{sign}{:.0}µs", a * 1e6)
    } else if a < 1.0 {
        format!("{sign}{:.1}ms", a * 1e3)
    } else {
        format!("{sign}{a:.2}s")
    }
}

/// A half-width (or one side of an interval) in a column's style, without the `%`.
pub fn fmt_half(h: f64, style: Style) -> String {
    match style {
        Style::Percent => format!("{:.2}", h * 100.0),
        Style::Seconds | Style::Recovery => fmt_seconds(h),
        Style::Runs => format!("{:.0}", h * 100.0),
        Style::Number => format!("{:.3}", h),
        Style::Count => format!("{:.1}", h),
    }
}

/// The interval of `s` around its mean: `±h` when symmetric as written,
/// `+up/-down` when it stops at a bound of the metric's range (a share at
/// 0 or 1, a count at 0); empty without an interval.
pub fn fmt_interval(s: &Summary, style: Style) -> String {
    let (Some(m), Some((lo, hi))) = (s.mean, s.ci95) else { return String::new() };
    let (up, down) = (fmt_half((hi - m).max(0.0), style), fmt_half((m - lo).max(0.0), style));
    if up == down { format!("±{up}") } else { format!("+{up}/-{down}") }
}

/// A cell: `mean ±h` (or `mean +up/-down`), `never healthy` for a recovery
/// metric without a healthy baseline, `—` without a value.
pub fn cell(s: Option<&Summary>, reason: Option<&str>, style: Style) -> String {
    if reason == Some(NEVER_HEALTHY) {
        return "never healthy".into();
    }
    if style == Style::Recovery
        && let Some(s) = s
    {
        // Recovered replications have a time; the others recovered too late to see.
        let (k, n) = (s.values.iter().flatten().count(), s.values.len());
        return match s.mean {
            Some(m) => format!("{} ({k}/{n})", fmt_seconds(m)),
            None if n > 0 => format!("> end ({k}/{n})"),
            None => "—".into(),
        };
    }
    if style == Style::Runs
        && let Some(s) = s
    {
        let (k, n) = (s.values.iter().flatten().filter(|x| **x >= 0.5).count(), s.values.iter().flatten().count());
        return if n == 0 { "—".into() } else { format!("{k}/{n}") };
    }
    if style == Style::Count
        && let Some(s) = s
        && s.mean == Some(0.0)
        && !s.values.is_empty()
        && s.values.iter().all(|v| *v == Some(0.0))
    {
        // No event in n runs: the rule of three bounds the mean per run.
        let n = s.values.len() as u64;
        return format!("0 (≤{}/run)", fmt_value(crate::analysis::exact::rule_of_three(n), Style::Count));
    }
    match s.and_then(|s| s.mean.map(|m| (m, s))) {
        None => "—".into(),
        Some((m, s)) if s.ci95.is_none() => fmt_value(m, style),
        Some((m, s)) => format!("{} {}", fmt_value(m, style), fmt_interval(s, style)),
    }
}

/// Which variants have what, for the column choice.
struct Numbers<'a>(&'a [VariantSummary]);

impl Shown for Numbers<'_> {
    fn nonzero(&self, m: &str) -> bool {
        self.0.iter().any(|v| v.metric(m).and_then(|s| s.mean).is_some_and(|x| x != 0.0))
    }
    fn present(&self, m: &str) -> bool {
        self.0.iter().any(|v| v.metric(m).and_then(|s| s.mean).is_some() || v.reason(m).is_some())
    }
}

/// The columns of the table for these variants and `[experiment] show`.
pub fn columns(summaries: &[VariantSummary], show: &[String]) -> Vec<Column> {
    choose(show, &Numbers(summaries))
}

fn rows(summaries: &[VariantSummary], cols: &[Column]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header = vec!["variant".to_string()];
    header.extend(cols.iter().map(|c| c.header.to_string()));
    let body = summaries
        .iter()
        .map(|v| {
            let mut row = vec![v.name.clone()];
            for c in cols {
                let mut text = cell(v.metric(c.metric), v.reason(c.metric), c.style);
                if c.metric == "amplification" && v.metric(c.metric).and_then(|s| s.mean).is_some() {
                    text = format!("{text} ({})", v.amplification_service);
                }
                row.push(text);
            }
            row
        })
        .collect();
    (header, body)
}

/// Rows aligned in columns (the first left, the others right), two spaces apart.
pub fn align(rows: &[Vec<String>]) -> String {
    let mut widths = vec![0; rows.first().map_or(0, Vec::len)];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| if i == 0 { format!("{c:<w$}", w = widths[i]) } else { format!("{c:>w$}", w = widths[i]) })
            .collect();
        out.push_str(&cells.join("  "));
        out.push('\n');
    }
    out
}

/// The aligned terminal table, with a legend line.
pub fn render_text(summaries: &[VariantSummary], replications: usize, show: &[String]) -> String {
    let cols = columns(summaries, show);
    let (header, body) = rows(summaries, &cols);
    let dashes: Vec<String> = (0..header.len())
        .map(|i| "-".repeat(body.iter().chain([&header]).map(|r| r[i].chars().count()).max().unwrap_or(0)))
        .collect();
    let mut all = vec![header, dashes];
    all.extend(body);
    let mut out = align(&all);
    out.push_str(&format!(
        "mean ±95% CI half-width over {replications} replication(s) (+above/-below where the interval stops at 0 or 100%); p50, p99, p99.9: latency of successful intents; p99 all: of every intent, to when its client knew the result; — = no value\n"
    ));
    if cols.iter().any(|c| c.metric == "recovered_fraction") {
        out.push_str("recovered: users served and the system's state (queues, busy workers, wasted work, p99) back near the baseline for 5 bins; share of replications with its exact (Clopper-Pearson) 95% interval; recovery (median): Kaplan-Meier median time to recovery over every replication, (recovered/replications), \"> end\" when fewer than half recovered before the end of the run\n");
    }
    let degraded: Vec<String> = summaries
        .iter()
        .filter(|v| !v.degraded_by.is_empty())
        .map(|v| {
            let by: Vec<String> = v.degraded_by.iter().map(|(c, n)| format!("{c} in {n}")).collect();
            format!("{} ({})", v.name, by.join(", "))
        })
        .collect();
    if !degraded.is_empty() {
        out.push_str(&format!(
            "degraded: users served again but the system's state not back, so not recovered; what stayed up: {}\n",
            degraded.join("; ")
        ));
    }
    let split: Vec<String> = summaries
        .iter()
        .filter(|v| super::differences::split(v))
        .map(|v| {
            let r = v.metric("recovered_fraction").map(|s| s.values.as_slice()).unwrap_or_default();
            let k = r.iter().filter(|x| **x == Some(1.0)).count();
            format!("\"{}\" recovered in {k} of {} replications", v.name, r.iter().flatten().count())
        })
        .collect();
    if !split.is_empty() {
        out.push_str(&format!(
            "split outcomes: {}; a mean ± interval over such a mix describes neither outcome (comparisons with it use a sign test)\n",
            split.join(", ")
        ));
    }
    if summaries.iter().any(|v| v.reason("recovered_fraction") == Some(crate::metrics::DISTURBANCE_TO_END)) {
        out.push_str("recovery —: the disturbance lasts to the end of the run, so there is no after to recover in\n");
    }
    if cols.iter().any(|c| c.metric == "recovered_fraction")
        && summaries.iter().any(|v| v.reason("recovered_fraction") == Some(NEVER_HEALTHY))
    {
        out.push_str("never healthy: already overloaded before the first disturbance (a service got more than it can serve, or goodput was below 95% of offered intents), so there is nothing to recover to\n");
    }
    out
}

/// The same table in Markdown.
pub fn render_markdown(summaries: &[VariantSummary], show: &[String]) -> String {
    let (header, body) = rows(summaries, &columns(summaries, show));
    let esc = |r: &[String]| r.iter().map(|c| super::markdown::cell(c)).collect::<Vec<_>>().join(" | ");
    let mut out = format!("| {} |\n", esc(&header));
    out.push_str(&format!(
        "|{}|\n",
        header.iter().enumerate().map(|(i, _)| if i == 0 { "---" } else { "---:" }).collect::<Vec<_>>().join("|")
    ));
    for r in body {
        out.push_str(&format!("| {} |\n", esc(&r)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_that_stop_at_a_bound_are_written_as_such() {
        let sym = Summary { mean: Some(0.5), ci95: Some((0.4, 0.6)), values: vec![] };
        assert_eq!(cell(Some(&sym), None, Style::Percent), "50.00% ±10.00");
        let clipped = Summary { mean: Some(0.4), ci95: Some((0.0, 1.0)), values: vec![] };
        assert_eq!(cell(Some(&clipped), None, Style::Count), "0.4 +0.6/-0.4");
        assert_eq!(cell(Some(&clipped), Some(NEVER_HEALTHY), Style::Percent), "never healthy");
        assert_eq!(cell(None, None, Style::Seconds), "—");
    }
}
