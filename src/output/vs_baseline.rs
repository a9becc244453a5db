//! The paired differences of every variant to the baseline: the block under
//! the terminal table. A latency of successful intents that fell is always
//! printed with the change of success beside it: a variant that fails more
//! intents fast can look faster while it is worse.

use super::VariantSummary;
use super::columns::{BUSINESS, Column, Style};
use super::differences::Difference;
use super::numbers::{half_beside, relative_change, signed};
use super::table::{align, columns, fmt_half};
use crate::analysis::Summary;

/// The columns of the block: the headline comparisons, then the business
/// metrics the table shows.
pub fn block_columns(summaries: &[VariantSummary], show: &[String]) -> Vec<Column> {
    let shown = columns(summaries, show);
    let pick = |m: &str| shown.iter().find(|c| c.metric == m).copied();
    let mut cols: Vec<Column> =
        ["success_rate", "goodput_per_s", "attempts_per_intent", "amplification", "latency_p99_s", "latency_all_p99_s"]
            .iter()
            .filter_map(|m| pick(m))
            .collect();
    cols.extend(BUSINESS.iter().filter(|b| shown.contains(b)));
    cols
}

/// One difference: `+x ±h (+p%)`, `n.s.` when it is not significant
/// after Holm's adjustment. No sign on a change that rounds to nothing; a
/// half-width of a duration that rounds to nothing is in the unit of the
/// difference; no relative change against a baseline indistinguishable
/// from zero ([`relative_change`]).
fn diff_text(diff: &Difference, base: Option<&Summary>, style: Style) -> String {
    let d = &diff.summary;
    let Some(m) = d.mean else { return "—".into() };
    let mut text = signed(m, style);
    if let Some(h) = d.half_width() {
        text.push_str(&format!(" ±{}", half_beside(h, m, style)));
    }
    text.push_str(&relative_change(m, base, style));
    let equivalent = diff.equivalence.is_some_and(|e| e.equivalent());
    match (diff.significant(), equivalent) {
        (false, true) => text.push_str(" ≈"),
        (false, false) => text.push_str(" n.s."),
        (true, true) => text.push_str(" (≈)"),
        (true, false) => {}
    }
    text
}

/// The legend's line on equivalence, when margins were asked for.
fn equivalence_legend(summaries: &[VariantSummary]) -> String {
    let mut margins: Vec<(String, String)> = Vec::new();
    for v in summaries {
        for (k, d) in &v.vs_baseline {
            if let (Some(e), Some(c)) = (d.equivalence, super::columns::column_of(k))
                && !margins.iter().any(|(m, _)| m == k)
            {
                let points = if c.style == Style::Percent { " points" } else { "" };
                margins.push((k.clone(), format!("{} ±{}{points}", c.header, fmt_half(e.margin, c.style))));
            }
        }
    }
    if margins.is_empty() {
        return String::new();
    }
    let list: Vec<String> = margins.into_iter().map(|(_, text)| text).collect();
    format!(
        "; ≈ = equivalent: the 90% interval lies inside the margin (two one-sided tests at 5%; {})",
        list.join(", ")
    )
}

/// The block, or nothing with a single variant.
pub fn render_vs_baseline(summaries: &[VariantSummary], show: &[String]) -> String {
    let others: Vec<&VariantSummary> = summaries.iter().filter(|v| !v.vs_baseline.is_empty()).collect();
    if others.is_empty() {
        return String::new();
    }
    let cols = block_columns(summaries, show);
    let base = summaries.iter().find(|v| v.vs_baseline.is_empty());
    let mut header = vec!["variant".to_string()];
    header.extend(cols.iter().map(|c| c.header.to_string()));
    let mut rows = vec![header];
    for v in others {
        let mut row = vec![v.name.clone()];
        for c in &cols {
            let base_summary = base.and_then(|b| b.metric(c.metric));
            let mut text = v.difference(c.metric).map_or_else(|| "—".into(), |d| diff_text(d, base_summary, c.style));
            let faster = v.difference(c.metric).and_then(|d| d.summary.mean).is_some_and(|m| m < 0.0);
            if faster && success_only_latency(c.metric) {
                let success = v.difference("success_rate").and_then(|d| d.summary.mean);
                text.push_str(&match success {
                    Some(s) => format!(" with success {}", signed(s, Style::Percent)),
                    None => " with success —".into(),
                });
            }
            row.push(text);
        }
        rows.push(row);
    }
    format!(
        "\nvs baseline \"{}\": paired difference ±95% CI (same random numbers per replication); n.s. = no significant difference at this n (Holm over {} comparisons){}\n{}",
        base.map(|b| b.name.as_str()).unwrap_or(""),
        super::differences::family_size(summaries),
        equivalence_legend(summaries),
        align(&rows)
    )
}

/// Latency of successful intents only (it can fall because intents fail).
fn success_only_latency(metric: &str) -> bool {
    metric.starts_with("latency_") && !metric.starts_with("latency_all_")
}
