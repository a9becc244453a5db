//! The paired differences of every variant to the baseline: the block under
//! the terminal table. A latency of successful intents that fell is always
//! printed with the change of success beside it: a variant that fails more
//! intents fast can look faster while it is worse.

use super::VariantSummary;
use super::answer::PathColumn;
use super::columns::{BUSINESS, Style};
use super::differences::Difference;
use super::layout::align;
use super::layout::{Variants, WIDTH, layout, width, wrap};
use super::numbers::{half_beside, relative_change, signed};
use super::table::{TableOptions, fmt_half};
use crate::analysis::Summary;

/// The columns of the block: the answer metrics, then the headline
/// comparisons and the business metrics the table shows (the table's
/// columns as they are before fitting a width).
pub fn block_columns(summaries: &[VariantSummary], show: &[String], answer: &[String]) -> Vec<PathColumn> {
    let l = layout(&Variants(summaries), show, answer, None);
    let mut cols: Vec<PathColumn> = l.columns[..l.answers].to_vec();
    let headline = ["success_rate", "goodput_per_s", "attempts_per_intent", "amplification", "latency_p99_s"];
    let more = headline.iter().copied().chain(["latency_all_p99_s"]).chain(BUSINESS.iter().map(|b| b.metric));
    for m in more {
        if !cols.iter().any(|c| c.path == m) && l.columns.iter().any(|c| c.path == m) {
            cols.push(PathColumn::of(m));
        }
    }
    // attempts/intent equal to amplification is said once, in the table and here.
    if l.same_as.iter().any(|(a, _)| a == "attempts/intent") {
        cols.retain(|c| c.path != "attempts_per_intent");
    }
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
pub fn render_vs_baseline(summaries: &[VariantSummary], o: &TableOptions) -> String {
    let others: Vec<&VariantSummary> = summaries.iter().filter(|v| !v.vs_baseline.is_empty()).collect();
    if others.is_empty() {
        return String::new();
    }
    let mut cols = block_columns(summaries, o.show, o.answer);
    let answers = layout(&Variants(summaries), o.show, o.answer, None).answers.min(cols.len());
    let base = summaries.iter().find(|v| v.vs_baseline.is_empty());
    let table = |cols: &[PathColumn]| -> Vec<Vec<String>> {
        let mut header = vec!["variant".to_string()];
        header.extend(cols.iter().map(|c| c.header.clone()));
        let mut rows = vec![header];
        for v in &others {
            let mut row = vec![v.name.clone()];
            for c in cols {
                row.push(diff_cell(v, base, c));
            }
            rows.push(row);
        }
        rows
    };
    // Fit the width as the table does: the answer columns stay.
    let mut dropped = Vec::new();
    while !o.wide && cols.len() > answers && width(&table(&cols)) > WIDTH {
        dropped.push(cols.remove(cols.len() - 1).header);
    }
    let mut legend = format!(
        "vs baseline \"{}\": paired difference ±95% CI (same random numbers per replication); n.s. = no significant difference at this n (Holm over {} comparisons){}",
        base.map(|b| b.name.as_str()).unwrap_or(""),
        super::differences::family_size(summaries),
        equivalence_legend(summaries),
    );
    if !dropped.is_empty() {
        dropped.reverse();
        legend.push_str(&format!("; left out to fit {WIDTH} characters: {} (--wide)", dropped.join(", ")));
    }
    let legend = if o.wide { legend + "\n" } else { wrap(&legend, WIDTH) };
    format!("\n{legend}{}", align(&table(&cols)))
}

/// The block's cell of column `c` for variant `v`.
fn diff_cell(v: &VariantSummary, base: Option<&VariantSummary>, c: &PathColumn) -> String {
    let base_summary = base.and_then(|b| super::answer::lookup(b, &c.path));
    let d = v.difference(&c.path);
    let mut text = d.map_or_else(|| "—".into(), |d| diff_text(d, base_summary, c.style));
    let faster = d.and_then(|d| d.summary.mean).is_some_and(|m| m < 0.0);
    if faster && success_only_latency(&c.path) {
        let success = v.difference("success_rate").and_then(|d| d.summary.mean);
        text.push_str(&match success {
            Some(s) => format!(" with success {}", signed(s, Style::Percent)),
            None => " with success —".into(),
        });
    }
    text
}

/// Latency of successful intents only (it can fall because intents fail).
fn success_only_latency(metric: &str) -> bool {
    metric.starts_with("latency_") && !metric.starts_with("latency_all_")
}
