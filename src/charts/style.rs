//! How series are told apart: a colour from the colour-blind-safe
//! Okabe–Ito palette, then a line pattern (solid, dashed, dotted) and
//! markers once the colours run out, so that at least 48 series are
//! distinct.

use plotters::style::RGBColor;

/// The Okabe–Ito palette (colour-blind safe), yellow last.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];

/// Grey for reference elements (offered load, thresholds, fault windows).
pub const GREY: RGBColor = RGBColor(120, 120, 120);

/// A line's pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pattern {
    Solid,
    Dashed,
    Dotted,
}

/// Everything that tells one series from another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeriesStyle {
    /// Index into [`PALETTE`].
    pub color: usize,
    pub pattern: Pattern,
    /// Points drawn as markers on the line.
    pub marker: bool,
}

impl SeriesStyle {
    /// The colour as RGB.
    pub fn rgb(&self) -> RGBColor {
        PALETTE[self.color]
    }

    /// The same colour and markers with another pattern (for a series that
    /// lies on an earlier one: the earlier shows through its gaps).
    pub fn with_pattern(self, pattern: Pattern) -> Self {
        SeriesStyle { pattern, ..self }
    }
}

/// The style of series `i`: the eight colours solid, then dashed, then
/// dotted, then the same 24 again with markers.
pub fn style(i: usize) -> SeriesStyle {
    let n = PALETTE.len();
    let pattern = [Pattern::Solid, Pattern::Dashed, Pattern::Dotted][(i / n) % 3];
    SeriesStyle { color: i % n, pattern, marker: (i / (3 * n)) % 2 == 1 }
}

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    style(i).rgb()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn forty_eight_series_have_distinct_styles() {
        let styles: HashSet<SeriesStyle> = (0..48).map(style).collect();
        assert_eq!(styles.len(), 48);
        // The first eight are the palette's colours, solid.
        assert!((0..8).all(|i| style(i).pattern == Pattern::Solid && style(i).color == i));
        assert_eq!(style(9).pattern, Pattern::Dashed);
    }
}
