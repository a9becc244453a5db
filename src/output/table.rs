//! The comparison table: the terminal view, Markdown, and `summary.csv`;
//! and how a number is written in a cell.

use super::VariantSummary;
use super::columns::Style;
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
    let side = |h: f64| super::numbers::half_beside(h, m, style);
    let (up, down) = (side((hi - m).max(0.0)), side((m - lo).max(0.0)));
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
        // Replications with a yes, and the exact 95% interval of the share.
        let (k, n) = (s.values.iter().flatten().filter(|x| **x >= 0.5).count(), s.values.iter().flatten().count());
        return match crate::analysis::exact::clopper_pearson(k as u64, n as u64) {
            Some((lo, hi)) if n > 0 => format!("{k}/{n} ({:.0}–{:.0}%)", lo * 100.0, hi * 100.0),
            _ => "—".into(),
        };
    }
    if style == Style::Count
        && let Some(s) = s
        && s.mean == Some(0.0)
        && !s.values.is_empty()
        && s.values.iter().all(|v| *v == Some(0.0))
    {
        // No event in n runs: the rule of three bounds the mean per run.
        let n = s.values.len() as u64;
        return format!("0 (≤{})", fmt_value(crate::analysis::exact::rule_of_three(n), Style::Count));
    }
    match s.and_then(|s| s.mean.map(|m| (m, s))) {
        None => "—".into(),
        Some((m, s)) if s.ci95.is_none() => fmt_value(m, style),
        Some((m, s)) => format!("{} {}", fmt_value(m, style), fmt_interval(s, style)),
    }
}

/// What the table shows: `[experiment] show` and `answer`, and whether to
/// print every column (`--wide`) instead of fitting [`super::layout::WIDTH`].
#[derive(Debug, Clone, Copy)]
pub struct TableOptions<'a> {
    pub show: &'a [String],
    pub answer: &'a [String],
    pub question: Option<&'a str>,
    pub wide: bool,
}

/// The aligned terminal table: the question, the table, its legend.
pub fn render_text(summaries: &[VariantSummary], replications: usize, o: &TableOptions) -> String {
    use super::layout::{WIDTH, layout, layout_legend, rows, wrap};
    let src = super::layout::Variants(summaries);
    let l = layout(&src, o.show, o.answer, (!o.wide).then_some(WIDTH));
    let cols = &l.columns;
    let mut all = rows(&src, cols);
    let dashes: Vec<String> =
        (0..all[0].len()).map(|i| "-".repeat(all.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))).collect();
    all.insert(1, dashes);
    let mut out = String::new();
    let line = |out: &mut String, text: &str| {
        if o.wide {
            out.push_str(text);
            out.push('\n');
        } else {
            out.push_str(&wrap(text, WIDTH));
        }
    };
    if let Some(q) = o.question {
        line(&mut out, &format!("question: {q}"));
    }
    out.push_str(&super::layout::align(&all));
    let answers: Vec<&str> = cols[..l.answers].iter().map(|c| c.header.as_str()).collect();
    line(
        &mut out,
        &format!(
            "{} answer{} the question; mean ±95% CI half-width over {replications} replication{} (+above/-below where the interval stops at 0 or 100%); p50, p99, p99.9: latency of successful intents; p99 all: of every intent, to when its client knew the result; — = no value",
            answers.join(", "),
            if answers.len() == 1 { "s" } else { "" },
            if replications == 1 { "" } else { "s" }
        ),
    );
    for extra in layout_legend(&l) {
        line(&mut out, &extra);
    }
    if cols.iter().any(|c| c.path == "recovered_fraction") {
        line(
            &mut out,
            "recovered: users served and the system's state (queues, busy workers, wasted work, p99) back near the baseline for 5 bins, in k of n replications with the exact (Clopper-Pearson) 95% interval of the share; recovery (median): Kaplan-Meier median time to recovery over every replication, (recovered/replications), \"> end\" when fewer than half recovered before the end of the run",
        );
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
        line(
            &mut out,
            &format!(
                "degraded: users served again but the system's state not back, so not recovered; what stayed up: {}",
                degraded.join("; ")
            ),
        );
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
        line(
            &mut out,
            &format!(
                "split outcomes: {}; a mean ± interval over such a mix describes neither outcome (comparisons with it use a sign test)",
                split.join(", ")
            ),
        );
    }
    if summaries.iter().any(|v| v.reason("recovered_fraction") == Some(crate::metrics::DISTURBANCE_TO_END)) {
        line(&mut out, "recovery —: the disturbance lasts to the end of the run, so there is no after to recover in");
    }
    if cols.iter().any(|c| c.path == "recovered_fraction")
        && summaries.iter().any(|v| v.reason("recovered_fraction") == Some(NEVER_HEALTHY))
    {
        line(
            &mut out,
            "never healthy: already overloaded before the first disturbance (a service got more than it can serve, or goodput was below 95% of offered intents), so there is nothing to recover to",
        );
    }
    out
}

/// The same table in Markdown (the same columns as the terminal's).
pub fn render_markdown(summaries: &[VariantSummary], o: &TableOptions) -> String {
    use super::layout::{WIDTH, layout, markdown_table, rows};
    let src = super::layout::Variants(summaries);
    let l = layout(&src, o.show, o.answer, (!o.wide).then_some(WIDTH));
    markdown_table(&rows(&src, &l.columns))
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
