//! Tick positions: round linear steps (1, 2 or 5 times a power of ten)
//! and, on a logarithmic axis, ticks at 1, 2 and 5 of every decade; and
//! the axis type that hands them to plotters.

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};

/// Ticks at a round step inside `[lo, hi]`: about `want` of them.
pub fn linear(lo: f64, hi: f64, want: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let raw = (hi - lo) / want.max(1) as f64;
    let p = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * p).find(|s| *s >= raw * 0.999).unwrap_or(10.0 * p);
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).map(|x| if x.abs() < step * 1e-9 { 0.0 } else { x }).collect()
}

/// Ticks for an axis whose values are log10 of the quantity: the log10 of
/// 1, 2 and 5 times each power of ten inside the range (only the powers of
/// ten when the range spans more than four decades).
pub fn log125(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let steps: &[f64] = if hi - lo > 4.0 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    let mut out = Vec::new();
    for decade in (lo.floor() as i32)..=(hi.ceil() as i32) {
        for m in steps {
            let x = (m * 10f64.powi(decade)).log10();
            if x >= lo - 1e-9 && x <= hi + 1e-9 {
                out.push(x);
            }
        }
    }
    out
}

/// A linear f64 axis whose ticks are the ones given (plotters would pick
/// its own).
#[derive(Debug, Clone)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
}

impl Axis {
    /// The axis `lo..hi` with ticks at `ticks`.
    pub fn new(lo: f64, hi: f64, ticks: Vec<f64>) -> Axis {
        Axis { lo, hi, ticks }
    }
}

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = if self.hi > self.lo { self.hi - self.lo } else { 1.0 };
        let share = (value - self.lo) / span;
        limit.0 + (share * (limit.1 - limit.0) as f64 + 1e-3).floor() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() { Vec::new() } else { self.ticks.clone() }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

impl ValueFormatter<f64> for Axis {
    fn format_ext(&self, value: &f64) -> String {
        super::draw::short(*value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round() {
        let close = |a: Vec<f64>, b: &[f64]| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
        assert!(close(linear(0.0, 1.0, 5), &[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]));
        assert_eq!(linear(0.0, 100.0, 4), vec![0.0, 50.0, 100.0]);
        assert_eq!(linear(3.0, 17.0, 6), vec![5.0, 10.0, 15.0]);
        assert_eq!(linear(3.0, 17.0, 8), vec![4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0]);
        // The ends count even when the division rounds below them.
        assert!(close(linear(0.6, 1.4, 8), &[0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4]));
    }

    #[test]
    fn log_ticks_are_at_1_2_5() {
        let got: Vec<f64> = log125(-3.0, -1.0).iter().map(|x| (10f64.powf(*x) * 1e6).round() / 1e6).collect();
        assert_eq!(got, vec![0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1]);
        let wide: Vec<f64> = log125(-6.0, 0.0).iter().map(|x| x.round()).collect();
        assert_eq!(wide, vec![-6.0, -5.0, -4.0, -3.0, -2.0, -1.0, 0.0]);
    }
}
