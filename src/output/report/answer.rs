//! The report's `## Answer`: per answer metric, the best variant with its
//! value and interval and whether it is significantly better than the
//! runner-up (paired: the same seeds), then one recommendation sentence.

use crate::analysis::Summary;
use crate::analysis::exact::{holm, paired_t_p, sign_test_p};
use crate::analysis::stats::paired_metric;
use crate::output::answer::{PathColumn, higher_is_better};
use crate::output::columns::Style;
use crate::output::layout::{Json, Source};
use crate::output::table::{fmt_interval, fmt_value};
use serde_json::Value;

/// The unit written after a value of the metric at `path` (empty where
/// the value carries it: `93.70%`, `1.85s`).
pub fn unit(path: &str, style: Style) -> &'static str {
    let metric = path.rsplit('.').next().unwrap_or(path);
    match style {
        Style::Percent | Style::Seconds | Style::Recovery | Style::Runs => "",
        _ if metric == "amplification" => " requests per intent",
        _ if metric.ends_with("_per_s") => " per second",
        _ if metric.ends_with("_per_intent") => " per intent",
        _ if metric == "queue_len" => " requests queued",
        _ => " per run",
    }
}

/// A value with its unit: `93.70%`, `1.85s`, `1.469 requests per intent`.
pub fn with_unit(path: &str, x: f64, style: Style) -> String {
    format!("{}{}", fmt_value(x, style), unit(path, style))
}

/// A paired test of `b` against `a`: the difference b − a and its p-value
/// (a sign test for yes/no outcomes, else the paired t test).
fn paired(path: &str, a: &Summary, b: &Summary) -> (Summary, Option<f64>) {
    let d = paired_metric(path.rsplit('.').next().unwrap_or(path), &a.values, &b.values);
    let pairs: Vec<(f64, f64)> = a.values.iter().zip(&b.values).filter_map(|(x, y)| Some(((*x)?, (*y)?))).collect();
    let binary = pairs.iter().all(|(x, y)| (*x == 0.0 || *x == 1.0) && (*y == 0.0 || *y == 1.0));
    let p = if binary && !pairs.is_empty() {
        let up = pairs.iter().filter(|(x, y)| y > x).count() as u64;
        let down = pairs.iter().filter(|(x, y)| y < x).count() as u64;
        Some(sign_test_p(up, down))
    } else {
        paired_t_p(&pairs.iter().map(|(x, y)| y - x).collect::<Vec<_>>())
    };
    (d, p)
}

/// One metric's verdict.
struct Verdict {
    sentence: String,
    /// Variants not significantly worse than the best (the best included).
    leaders: Vec<usize>,
}

fn verdict(src: &Json, path: &str) -> Option<Verdict> {
    let c = PathColumn::of(path);
    let n = src.count();
    let values: Vec<Option<Summary>> = (0..n).map(|i| src.summary(i, path)).collect();
    let higher = higher_is_better(path);
    let mut ranked: Vec<usize> = (0..n).filter(|&i| values[i].as_ref().and_then(|s| s.mean).is_some()).collect();
    let mean = |i: usize| values[i].as_ref().and_then(|s| s.mean).unwrap_or(f64::NAN);
    ranked.sort_by(|&a, &b| if higher { mean(b).total_cmp(&mean(a)) } else { mean(a).total_cmp(&mean(b)) });
    let best = *ranked.first()?;
    let best_s = values[best].clone()?;
    let shown = |i: usize| {
        let s = values[i].as_ref().expect("ranked variants have values");
        if matches!(c.style, Style::Runs | Style::Recovery) {
            return crate::output::table::cell(Some(s), None, c.style);
        }
        let interval = fmt_interval(s, c.style);
        let v = fmt_value(mean(i), c.style);
        let v = if interval.is_empty() { v } else { format!("{v} {interval}") };
        format!("{v}{}", unit(path, c.style))
    };
    let name = |i: usize| format!("\"{}\"", src.name(i));
    // Every other variant against the best, Holm over them.
    let tests: Vec<(usize, Summary, Option<f64>)> = ranked[1..]
        .iter()
        .map(|&i| {
            // best − other: positive when the best is higher.
            let (d, p) = paired(path, values[i].as_ref().expect("ranked"), &best_s);
            (i, d, p)
        })
        .collect();
    let adjusted = holm(&tests.iter().map(|t| t.2).collect::<Vec<_>>());
    let mut leaders = vec![best];
    for ((i, _, _), p) in tests.iter().zip(&adjusted) {
        if !p.is_some_and(|p| p < 0.05) {
            leaders.push(*i);
        }
    }
    let what = if c.header == path { c.header.clone() } else { format!("{} ({path})", c.header) };
    let sentence = match tests.first() {
        None => format!("{what}: {} {}.", name(best), shown(best)),
        Some((second, d, _)) => {
            let p = adjusted[0];
            let diff = match (d.mean, fmt_interval(d, c.style)) {
                (Some(m), i) if c.style == Style::Percent => {
                    format!("paired difference {m:+.2} {i} points", m = m * 100.0)
                }
                (Some(m), i) => {
                    format!(
                        "paired difference {}{} {i}{}",
                        if m > 0.0 { "+" } else { "" },
                        fmt_value(m, c.style),
                        unit(path, c.style)
                    )
                }
                (None, _) => "no paired difference".to_string(),
            };
            let p_text =
                p.map_or("no test".to_string(), |p| if p < 0.001 { "p < 0.001".into() } else { format!("p = {p:.3}") });
            if mean(best) == mean(*second) {
                format!("{what}: {} and {} tie at {}.", name(best), name(*second), shown(best))
            } else if p.is_some_and(|p| p < 0.05) {
                format!(
                    "{what}: best is {} at {}, significantly better than the runner-up {} at {} ({diff}, {p_text}).",
                    name(best),
                    shown(best),
                    name(*second),
                    shown(*second)
                )
            } else {
                format!(
                    "{what}: best is {} at {}, but not significantly better than the runner-up {} at {} ({diff}, {p_text}): more replications may tell them apart.",
                    name(best),
                    shown(best),
                    name(*second),
                    shown(*second)
                )
            }
        }
    };
    Some(Verdict { sentence, leaders })
}

/// The Answer section's sentences: one per answer metric, then the recommendation.
pub fn answer_sentences(summary: &Value) -> Vec<String> {
    let variants = summary["variants"].as_array().cloned().unwrap_or_default();
    let src = Json(&variants);
    let paths: Vec<String> = summary["experiment"]["answer"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
        .unwrap_or_else(|| vec!["success_rate".into()]);
    let verdicts: Vec<(String, Verdict)> =
        paths.iter().filter_map(|p| verdict(&src, p).map(|v| (PathColumn::of(p).header, v))).collect();
    let mut out: Vec<String> = verdicts.iter().map(|(_, v)| v.sentence.clone()).collect();
    if src.count() > 1 && !verdicts.is_empty() {
        let everywhere: Vec<usize> =
            (0..src.count()).filter(|i| verdicts.iter().all(|(_, v)| v.leaders.contains(i))).collect();
        let names = |v: &[usize]| v.iter().map(|&i| format!("\"{}\"", src.name(i))).collect::<Vec<_>>().join(", ");
        let metrics = verdicts.iter().map(|(h, _)| h.as_str()).collect::<Vec<_>>().join(", ");
        out.push(match everywhere.as_slice() {
            [one] => format!(
                "Recommendation: {} is the only variant that is best, or not significantly worse than the best, on every answer metric ({metrics}).",
                names(&[*one])
            ),
            [] => {
                let per: Vec<String> = verdicts.iter().map(|(h, v)| format!("on {h} {}", names(&v.leaders))).collect();
                format!(
                    "Recommendation: no variant leads on every answer metric (best, or not significantly worse than the best: {}): the choice is a trade-off.",
                    per.join("; ")
                )
            }
            many if many.len() == src.count() => {
                format!("Recommendation: no significant difference between the variants on {metrics} at this number of replications.")
            }
            many => format!(
                "Recommendation: {} are each best, or not significantly worse than the best, on every answer metric ({metrics}); the others are not.",
                names(many)
            ),
        });
    }
    out
}

/// The question: `[experiment] question`, else the header's `# Question:` lines.
pub fn question(summary: &Value, source: &str) -> Option<String> {
    if let Some(q) = summary["experiment"]["question"].as_str() {
        return Some(q.to_string());
    }
    let mut lines = source.lines();
    let first = lines.next()?.strip_prefix("# Question:")?.trim().to_string();
    let mut q = first;
    for l in lines {
        match l.strip_prefix('#').map(str::trim) {
            Some(t) if !t.is_empty() => {
                q.push(' ');
                q.push_str(t);
            }
            _ => break,
        }
    }
    Some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_carry_their_units() {
        assert_eq!(with_unit("success_rate", 0.937, Style::Percent), "93.70%");
        assert_eq!(with_unit("amplification", 1.5, Style::Number), "1.500 requests per intent");
        assert_eq!(with_unit("orphan_commits", 3.0, Style::Count), "3.0 per run");
        assert_eq!(with_unit("goodput_per_s", 700.0, Style::Number), "700.000 per second");
    }

    #[test]
    fn the_question_comes_from_the_header_when_the_file_states_none() {
        let s = serde_json::json!({"experiment": {}});
        let q = question(&s, "# Question: can users\n# keep succeeding?\n#\n# more").unwrap();
        assert_eq!(q, "can users keep succeeding?");
        let s = serde_json::json!({"experiment": {"question": "Q?"}});
        assert_eq!(question(&s, "").as_deref(), Some("Q?"));
    }
}
