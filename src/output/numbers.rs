//! Numbers that read right on their own: a difference signed only when it
//! is not nothing as written, a zero half-width of a duration in the unit
//! of the value beside it, and a relative change only against a baseline
//! that is distinguishable from zero.

use super::columns::Style;
use super::table::{fmt_half, fmt_seconds, fmt_value};
use crate::analysis::Summary;

/// Whether `text` shows a digit other than 0 (`0.000`, `0s`, `0µs`, `0.00%` do not).
fn nonzero(text: &str) -> bool {
    text.chars().any(|c| c.is_ascii_digit() && c != '0')
}

/// A change in a column's style with its sign: `+12.3ms`, `-0.021`; a
/// change that rounds to nothing as written has no sign and reads as the
/// style's zero (`0s`, `0.000`, `0.00%`, never `+0.00%`, `-0.000` or `0µs`).
pub fn signed(x: f64, style: Style) -> String {
    let text = fmt_value(x.abs(), style);
    if !nonzero(&text) {
        fmt_value(0.0, style)
    } else if x < 0.0 {
        format!("-{text}")
    } else {
        format!("+{text}")
    }
}

/// A half-width (or one side of an interval) of a duration beside the
/// value it belongs to: in its own readable unit (`5.9ms ±62µs`), but when
/// it is nothing as written, a zero in the unit and precision of the value
/// (`500.2ms ±0.0ms`, `1.85s ±0.00s`, `0s ±0s`), never `±0µs` beside
/// milliseconds or `±0s` beside a value in another unit.
pub fn seconds_beside(h: f64, value: f64) -> String {
    let own = fmt_seconds(h.abs());
    if nonzero(&own) {
        return own;
    }
    let v = value.abs();
    if !nonzero(&fmt_seconds(v)) {
        "0s".into()
    } else if v < 1e-3 {
        "0µs".into()
    } else if v < 1.0 {
        "0.0ms".into()
    } else {
        "0.00s".into()
    }
}

/// A half-width in a column's style beside the value `value`: durations
/// by [`seconds_beside`], the other styles as the table writes them.
pub fn half_beside(h: f64, value: f64, style: Style) -> String {
    match style {
        Style::Seconds | Style::Recovery => seconds_beside(h, value),
        _ => fmt_half(h, style),
    }
}

/// Above this share of the baseline (+1000%), a change is written as a
/// factor: `(×12)`, not `(+1100%)`.
const FACTOR_ABOVE: f64 = 10.0;

/// The change `m` relative to the baseline, for beside the change itself:
/// ` (+27%)`, ` (-100%)`, ` (×12)` beyond +1000%. Nothing when a relative
/// change would mislead or repeat: for shares (a change of a share is in
/// points already) and when the baseline is not distinguishable from zero
/// (its mean written as zero, or its 95% interval reaching zero: 318.8
/// orphans more than a baseline of 0.6 ± 1.7 is no "+53133%").
pub fn relative_change(m: f64, base: Option<&Summary>, style: Style) -> String {
    if matches!(style, Style::Percent | Style::Runs) {
        return String::new();
    }
    let Some(base) = base else { return String::new() };
    let Some(b) = base.mean else { return String::new() };
    if b == 0.0 || !nonzero(&fmt_value(b.abs(), style)) {
        return String::new();
    }
    if let Some((lo, hi)) = base.ci95
        && lo <= 0.0
        && hi >= 0.0
    {
        return String::new();
    }
    let share = m / b;
    if share > FACTOR_ABOVE {
        return format!(" (×{:.0})", 1.0 + share);
    }
    let pct = share * 100.0;
    if pct.abs() < 0.5 { " (0%)".into() } else { format!(" ({pct:+.0}%)") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(mean: f64, ci95: Option<(f64, f64)>) -> Summary {
        Summary { mean: Some(mean), ci95, values: vec![] }
    }

    #[test]
    fn nothing_as_written_has_no_sign() {
        assert_eq!(signed(1e-9, Style::Percent), "0.00%");
        assert_eq!(signed(-1e-9, Style::Number), "0.000");
        assert_eq!(signed(-1e-12, Style::Seconds), "0s");
        assert_eq!(signed(0.0189, Style::Seconds), "+18.9ms");
        assert_eq!(signed(-0.0205, Style::Percent), "-2.05%");
        assert_eq!(signed(318.8, Style::Count), "+318.8");
    }

    #[test]
    fn a_zero_half_width_takes_the_unit_of_its_value() {
        assert_eq!(seconds_beside(0.0, 0.5002), "0.0ms");
        assert_eq!(seconds_beside(1e-12, 0.5002), "0.0ms");
        assert_eq!(seconds_beside(1e-9, 1.85), "0.00s");
        assert_eq!(seconds_beside(0.0, 850e-6), "0µs");
        assert_eq!(seconds_beside(1e-12, 0.0), "0s");
        assert_eq!(seconds_beside(0.0, 0.0), "0s");
        assert_eq!(seconds_beside(0.0, -0.0189), "0.0ms");
        // One that is something keeps its own readable unit.
        assert_eq!(seconds_beside(62e-6, 0.0059), "62µs");
        assert_eq!(seconds_beside(0.003, 0.0), "3.0ms");
        assert_eq!(half_beside(0.001, 0.5, Style::Number), "0.001");
        assert_eq!(half_beside(1e-12, 0.5, Style::Seconds), "0.0ms");
    }

    #[test]
    fn no_relative_change_against_a_baseline_indistinguishable_from_zero() {
        // 0.6 orphans per run, interval down to 0: no "+53133%".
        assert_eq!(relative_change(318.8, Some(&summary(0.6, Some((0.0, 2.3)))), Style::Count), "");
        assert_eq!(relative_change(5.0, Some(&summary(0.0, None)), Style::Count), "");
        assert_eq!(relative_change(5.0, Some(&summary(0.01, None)), Style::Count), "");
        assert_eq!(relative_change(-319.4, Some(&summary(319.4, Some((298.9, 339.9)))), Style::Count), " (-100%)");
        assert_eq!(relative_change(-0.0188, Some(&summary(0.5447, Some((0.54, 0.55)))), Style::Seconds), " (-3%)");
        assert_eq!(relative_change(1e-6, Some(&summary(1.0, Some((0.9, 1.1)))), Style::Number), " (0%)");
        assert_eq!(relative_change(0.1, Some(&summary(0.9, Some((0.8, 1.0)))), Style::Percent), "");
        assert_eq!(relative_change(1.0, None, Style::Number), "");
        // Beyond +1000%: a factor.
        assert_eq!(relative_change(22.0, Some(&summary(2.0, Some((1.5, 2.5)))), Style::Count), " (×12)");
        assert_eq!(relative_change(20.0, Some(&summary(2.0, Some((1.5, 2.5)))), Style::Count), " (+1000%)");
    }
}
