//! A range of candidate values, `"LO..HI"`: durations, whole or decimal
//! numbers, searched on a log scale where that is the natural one.

use crate::config::units::parse_duration;
use crate::error::{InputError, InputResult};
use toml::Value;

/// How a range `"LO..HI"` is written and searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeKind {
    /// Durations with units (`"10ms..1s"`); values in nanoseconds.
    Duration,
    /// Whole numbers (`"1..6"`).
    Integer,
    /// Decimal numbers (`"0.05..0.5"`).
    Number,
}

/// A continuous (or integer) range of candidate values.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub lo: f64,
    pub hi: f64,
    pub kind: RangeKind,
    /// As written.
    pub text: String,
}

impl Range {
    /// Searched on a log scale: durations and decimal numbers whose range
    /// is positive (a base from 10 ms to 1 s is as much about 10–100 ms as
    /// about 100 ms–1 s).
    pub fn log_scale(&self) -> bool {
        self.kind != RangeKind::Integer && self.lo > 0.0
    }

    /// The value at `u` in [0, 1] of the range (on its scale), rounded as
    /// written values are (see [`Range::round`]).
    pub fn at(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        let raw = if self.log_scale() {
            (self.lo.ln() + u * (self.hi.ln() - self.lo.ln())).exp()
        } else {
            self.lo + u * (self.hi - self.lo)
        };
        self.round(raw).clamp(self.lo, self.hi)
    }

    /// Where `x` lies in the range, in [0, 1] (the inverse of [`Range::at`]).
    pub fn position(&self, x: f64) -> f64 {
        let u = if self.log_scale() {
            (x.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (x - self.lo) / (self.hi - self.lo)
        };
        if u.is_finite() { u.clamp(0.0, 1.0) } else { 0.0 }
    }

    /// Integers to the nearest one; durations and numbers to three
    /// significant digits (a policy says 137ms, not 137.4121ms).
    pub fn round(&self, x: f64) -> f64 {
        match self.kind {
            RangeKind::Integer => x.round(),
            RangeKind::Duration => significant(x, 3).max(1.0).round(),
            RangeKind::Number => significant(x, 3),
        }
    }

    /// A value as an override writes it: `"137ms"`, `4`, `0.25`.
    pub fn render(&self, x: f64) -> String {
        self.value(x).to_string()
    }

    /// A value as TOML: a duration string, an integer or a float.
    pub fn value(&self, x: f64) -> Value {
        match self.kind {
            RangeKind::Integer => Value::Integer(x as i64),
            RangeKind::Duration => Value::String(duration_text(x as u64)),
            RangeKind::Number => Value::Float(x),
        }
    }
}

/// `x` rounded to `digits` significant digits.
fn significant(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(digits - 1 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// Nanoseconds in the largest unit that writes them exactly.
pub fn duration_text(ns: u64) -> String {
    for (unit, size) in
        [("h", 3_600_000_000_000u64), ("m", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)]
    {
        if ns >= size && ns.is_multiple_of(size) {
            return format!("{}{unit}", ns / size);
        }
    }
    format!("{ns}ns")
}

/// Parses `"LO..HI"`.
pub(super) fn parse_range(file: &str, field: &str, text: &str) -> InputResult<Range> {
    let help = "a range is \"LO..HI\": two durations with units (\"10ms..1s\"), two whole numbers (\"1..6\") or two decimal numbers (\"0.05..0.5\"), LO below HI";
    let bad = |why: String| InputError::field(file, field, format!("{help}; {why}"));
    let (a, b) = text.split_once("..").ok_or_else(|| bad(format!("got \"{text}\"")))?;
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() || b.is_empty() {
        return Err(bad(format!("got \"{text}\"")));
    }
    let unit = |s: &str| s.chars().any(|c| c.is_alphabetic());
    let (lo, hi, kind) = if unit(a) || unit(b) {
        let d = |s: &str| parse_duration(s).map_err(|e| bad(format!("in \"{text}\": {e}")));
        (d(a)? as f64, d(b)? as f64, RangeKind::Duration)
    } else if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        (x as f64, y as f64, RangeKind::Integer)
    } else {
        let n = |s: &str| {
            s.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| bad(format!("\"{s}\" is not a number")))
        };
        (n(a)?, n(b)?, RangeKind::Number)
    };
    if lo >= hi {
        return Err(bad(format!("\"{text}\" is empty")));
    }
    Ok(Range { lo, hi, kind, text: text.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_round_to_three_significant_digits() {
        let r = Range { lo: 1e7, hi: 1e9, kind: RangeKind::Duration, text: String::new() };
        assert_eq!(r.render(137_412_345.0_f64.round()), "\"137412345ns\"");
        assert_eq!(r.render(r.round(137_412_345.0)), "\"137ms\"");
        assert_eq!(r.render(r.round(1_234_000_000.0)), "\"1230ms\"");
        assert!((r.position(r.at(0.3)) - 0.3).abs() < 0.01);
        let i = Range { lo: 1.0, hi: 6.0, kind: RangeKind::Integer, text: String::new() };
        assert_eq!(i.render(i.at(0.55)), "4");
    }
}
