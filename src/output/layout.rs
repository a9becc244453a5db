//! Which columns the comparison table shows, in which order, and how it
//! fits a terminal: `variant`, then the metrics that answer the question
//! (`[experiment] answer`, or by default success, each class's success and
//! whether it recovered), then the columns chosen by themselves, then
//! `[experiment] show`. A column equal to another shown column in every
//! variant is shown once; by default the columns chosen by themselves give
//! way, least telling first, until every line fits [`WIDTH`] characters.

use super::answer::{PathColumn, answer_paths, lookup};
use super::columns::{Shown, choose};
use super::table::cell;
use super::{VariantSummary, markdown};
use crate::analysis::Summary;
use serde_json::Value;

/// The width the table and its legend fit by default.
pub const WIDTH: usize = 120;

/// The order in which columns chosen by themselves give way to fit.
const GIVE_WAY: [&str; 12] = [
    "latency_p999_s",
    "latency_p50_s",
    "goodput_per_s",
    "wasted_fraction",
    "latency_all_p99_s",
    "attempts_per_intent",
    "burst_completion_s",
    "degraded_fraction",
    "stuck_placeholders",
    "lost_effects",
    "latency_p99_s",
    "amplification",
];

/// The variants' numbers, from summaries or from summary.json.
pub trait Source {
    /// The number of variants.
    fn count(&self) -> usize;
    fn name(&self, i: usize) -> String;
    fn summary(&self, i: usize, path: &str) -> Option<Summary>;
    fn reason(&self, i: usize, path: &str) -> Option<String>;
    fn amplification_service(&self, i: usize) -> String;
    /// The client classes' names.
    fn classes(&self) -> Vec<String>;
}

/// Summaries of a run's variants.
pub struct Variants<'a>(pub &'a [VariantSummary]);

impl Source for Variants<'_> {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn name(&self, i: usize) -> String {
        self.0[i].name.clone()
    }
    fn summary(&self, i: usize, path: &str) -> Option<Summary> {
        lookup(&self.0[i], path).cloned()
    }
    fn reason(&self, i: usize, path: &str) -> Option<String> {
        self.0[i].reason(path).map(str::to_string)
    }
    fn amplification_service(&self, i: usize) -> String {
        self.0[i].amplification_service.clone()
    }
    fn classes(&self) -> Vec<String> {
        self.0.first().map(|v| v.clients.iter().map(|(n, _)| n.clone()).collect()).unwrap_or_default()
    }
}

/// summary.json's `variants`.
pub struct Json<'a>(pub &'a [Value]);

impl Json<'_> {
    fn at(&self, i: usize, path: &str) -> &Value {
        let v = &self.0[i];
        match super::answer::split(path) {
            (Some(group), name, metric) => &v[group][name][metric],
            (None, _, metric) => &v["metrics"][metric],
        }
    }
}

impl Source for Json<'_> {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn name(&self, i: usize) -> String {
        self.0[i]["name"].as_str().unwrap_or("").to_string()
    }
    fn summary(&self, i: usize, path: &str) -> Option<Summary> {
        let m = self.at(i, path);
        m.is_object().then(|| super::report::as_summary(m))
    }
    fn reason(&self, i: usize, path: &str) -> Option<String> {
        self.at(i, path).get("reason").and_then(Value::as_str).map(str::to_string)
    }
    fn amplification_service(&self, i: usize) -> String {
        self.0[i]["amplification_service"].as_str().unwrap_or("").to_string()
    }
    fn classes(&self) -> Vec<String> {
        self.0.first().and_then(|v| v["clients"].as_object()).map(|o| o.keys().cloned().collect()).unwrap_or_default()
    }
}

struct Numbers<'a>(&'a dyn Source);

impl Shown for Numbers<'_> {
    fn nonzero(&self, m: &str) -> bool {
        (0..self.0.count()).any(|i| self.0.summary(i, m).and_then(|s| s.mean).is_some_and(|x| x != 0.0))
    }
    fn present(&self, m: &str) -> bool {
        (0..self.0.count())
            .any(|i| self.0.summary(i, m).and_then(|s| s.mean).is_some() || self.0.reason(i, m).is_some())
    }
}

/// The table's columns and what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub columns: Vec<PathColumn>,
    /// How many of the first columns answer the question.
    pub answers: usize,
    /// Columns left out because they equal another in every variant: (left out, kept).
    pub same_as: Vec<(String, String)>,
    /// Headers of the columns left out to fit.
    pub dropped: Vec<String>,
}

/// The answer paths for this source.
pub fn answers(src: &dyn Source, answer: &[String]) -> Vec<String> {
    if !answer.is_empty() {
        return answer.to_vec();
    }
    let disturbed = Numbers(src).present("recovered_fraction");
    answer_paths(&[], &src.classes(), disturbed)
}

/// The cell of column `c` for variant `i`.
pub fn cell_of(src: &dyn Source, i: usize, c: &PathColumn) -> String {
    let s = src.summary(i, &c.path);
    let text = cell(s.as_ref(), src.reason(i, &c.path).as_deref(), c.style);
    if c.path == "amplification" && s.and_then(|s| s.mean).is_some() {
        format!("{text} ({})", src.amplification_service(i))
    } else {
        text
    }
}

/// Whether two columns of one kind hold the same numbers, not all zero, in every variant.
fn same(src: &dyn Source, a: &str, b: &str) -> bool {
    if PathColumn::of(a).style != PathColumn::of(b).style {
        return false;
    }
    let mut any = false;
    let all = (0..src.count()).all(|i| {
        let (x, y) = (src.summary(i, a), src.summary(i, b));
        match (x.and_then(|s| s.mean), y.and_then(|s| s.mean)) {
            (Some(x), Some(y)) => {
                any |= x != 0.0;
                (x - y).abs() <= 1e-12 * (1.0 + x.abs())
            }
            (None, None) => true,
            _ => false,
        }
    });
    any && all
}

/// The width of a table of these rows (two spaces between columns).
pub fn width(rows: &[Vec<String>]) -> usize {
    let n = rows.first().map_or(0, Vec::len);
    let w: usize = (0..n).map(|j| rows.iter().map(|r| r[j].chars().count()).max().unwrap_or(0)).sum();
    w + 2 * n.saturating_sub(1)
}

/// The header and body of a table of `columns`.
pub fn rows(src: &dyn Source, columns: &[PathColumn]) -> Vec<Vec<String>> {
    let mut header = vec!["variant".to_string()];
    header.extend(columns.iter().map(|c| c.header.clone()));
    let mut all = vec![header];
    for i in 0..src.count() {
        let mut r = vec![src.name(i)];
        r.extend(columns.iter().map(|c| cell_of(src, i, c)));
        all.push(r);
    }
    all
}

/// The table's columns for `show` and `answer`; with `fit`, columns chosen
/// by themselves are left out until the rows fit `fit` characters.
pub fn layout(src: &dyn Source, show: &[String], answer: &[String], fit: Option<usize>) -> Layout {
    let mut columns: Vec<PathColumn> = answers(src, answer).iter().map(|p| PathColumn::of(p)).collect();
    let answers = columns.len();
    let taken = |cols: &[PathColumn], p: &str| cols.iter().any(|c| c.path == p);
    let mut same_as = Vec::new();
    let shown: Vec<String> = show.iter().filter(|m| !taken(&columns, m)).cloned().collect();
    let mut auto: Vec<PathColumn> = Vec::new();
    for c in choose(&[], &Numbers(src)) {
        if taken(&columns, c.metric) || shown.iter().any(|m| m == c.metric) {
            continue;
        }
        auto.push(PathColumn::headline(c));
    }
    // attempts/intent equals amplification when the amplification service
    // is the only one clients call: keep amplification, which names it.
    let mut kept: Vec<PathColumn> = Vec::new();
    for c in auto {
        let twin = columns.iter().chain(&kept).find(|k| same(src, &k.path, &c.path)).map(|k| k.header.clone());
        let amp_twin = c.path == "attempts_per_intent" && same(src, "attempts_per_intent", "amplification");
        if let Some(t) = twin {
            same_as.push((c.header.clone(), t));
        } else if amp_twin {
            same_as.push((c.header.clone(), "amplification".into()));
        } else {
            kept.push(c);
        }
    }
    let auto_start = columns.len();
    columns.extend(kept);
    let auto_end = columns.len();
    columns.extend(shown.iter().map(|m| PathColumn::of(m)));
    let mut dropped = Vec::new();
    if let Some(limit) = fit {
        let mut auto: Vec<PathColumn> = columns[auto_start..auto_end].to_vec();
        let fixed_before = columns[..auto_start].to_vec();
        let fixed_after = columns[auto_end..].to_vec();
        let assemble = |auto: &[PathColumn]| -> Vec<PathColumn> {
            fixed_before.iter().chain(auto).chain(&fixed_after).cloned().collect()
        };
        while width(&rows(src, &assemble(&auto))) > limit && !auto.is_empty() {
            // The least telling first; then the rightmost of the others.
            let at = GIVE_WAY.iter().find_map(|g| auto.iter().position(|c| c.path == *g)).unwrap_or(auto.len() - 1);
            dropped.push(auto.remove(at).header);
        }
        columns = assemble(&auto);
    }
    Layout { columns, answers, same_as, dropped }
}

/// The legend lines the layout adds: what was merged or left out.
pub fn layout_legend(l: &Layout) -> Vec<String> {
    let mut out = Vec::new();
    if !l.same_as.is_empty() {
        let pairs: Vec<String> = l.same_as.iter().map(|(a, b)| format!("{a} = {b}")).collect();
        out.push(format!("shown once, equal in every variant: {}", pairs.join(", ")));
    }
    if !l.dropped.is_empty() {
        out.push(format!(
            "left out to fit {WIDTH} characters: {} (--wide shows every column; summary.csv and summary.json hold them all)",
            l.dropped.join(", ")
        ));
    }
    out
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

/// Words of `text` in lines of at most `width` characters (a word longer
/// than the width stands alone).
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// Every line of `text` wrapped to `width` characters, continuation lines
/// indented by two spaces.
pub fn wrap_lines(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.chars().count() <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let wrapped = wrap(line, width - 2);
        for (i, l) in wrapped.lines().enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// A Markdown table of these rows (the first column left-aligned).
pub fn markdown_table(rows: &[Vec<String>]) -> String {
    let esc = |r: &[String]| r.iter().map(|c| markdown::cell(c)).collect::<Vec<_>>().join(" | ");
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        out.push_str(&format!("| {} |\n", esc(r)));
        if i == 0 {
            let rule: Vec<&str> = (0..r.len()).map(|j| if j == 0 { "---" } else { "---:" }).collect();
            out.push_str(&format!("|{}|\n", rule.join("|")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_words_whole_and_lines_within_the_width() {
        let text = "mean ±95% CI half-width over 5 replications; p50, p99, p99.9: latency of successful intents";
        let w = wrap(text, 30);
        assert!(w.lines().all(|l| l.chars().count() <= 30), "{w}");
        assert_eq!(w.split_whitespace().collect::<Vec<_>>(), text.split_whitespace().collect::<Vec<_>>());
    }
}
