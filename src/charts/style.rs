//! How series are told apart: a colour from Paul Tol's colour-blind-safe
//! "muted" scheme (six of its colours, none pale), then a line pattern
//! (solid, dashed, dotted, dash-dot) once the six colours run out, then
//! markers, so that at least 48 series are distinct.

use plotters::style::RGBColor;

/// Six colours of Paul Tol's "muted" scheme: indigo, rose, green, sand,
/// wine, olive. Every pair stays at least 20 CIELAB units apart in normal
/// vision and under simulated protanopia, deuteranopia and tritanopia
/// (see the tests), and every one stands out on white and from the grey
/// of reference lines.
pub const PALETTE: [RGBColor; 6] = [
    RGBColor(0x33, 0x22, 0x88),
    RGBColor(0xCC, 0x66, 0x77),
    RGBColor(0x11, 0x77, 0x33),
    RGBColor(0xDD, 0xCC, 0x77),
    RGBColor(0x88, 0x22, 0x55),
    RGBColor(0x99, 0x99, 0x33),
];

/// Grey for reference elements (offered load, thresholds, fault windows).
pub const GREY: RGBColor = RGBColor(120, 120, 120);

/// A line's pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pattern {
    Solid,
    Dashed,
    Dotted,
    DashDot,
}

impl Pattern {
    /// On and off lengths in pixels at the default size, repeated along the
    /// line (empty: solid).
    pub fn dashes(self) -> &'static [f64] {
        match self {
            Pattern::Solid => &[],
            Pattern::Dashed => &[12.0, 6.0],
            Pattern::Dotted => &[3.0, 4.0],
            Pattern::DashDot => &[12.0, 4.0, 3.0, 4.0],
        }
    }
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
}

/// The style of series `i`: the six colours solid, then dashed, then
/// dotted, then dash-dot, then the same 24 again with markers.
pub fn style(i: usize) -> SeriesStyle {
    let n = PALETTE.len();
    let pattern = [Pattern::Solid, Pattern::Dashed, Pattern::Dotted, Pattern::DashDot][(i / n) % 4];
    SeriesStyle { color: i % n, pattern, marker: (i / (4 * n)) % 2 == 1 }
}

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    style(i).rgb()
}

/// Splits a polyline (pixels) into the pieces drawn for a dash pattern of
/// on/off lengths (empty: the whole line, one piece).
pub fn dash(points: &[(f64, f64)], dashes: &[f64]) -> Vec<Vec<(f64, f64)>> {
    if dashes.is_empty() || dashes.iter().any(|d| *d <= 0.0) {
        return vec![points.to_vec()];
    }
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let (mut k, mut left) = (0usize, dashes[0]);
    let mut piece: Vec<(f64, f64)> = points.first().copied().into_iter().collect();
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let mut at = 0.0;
        while len - at > left {
            at += left;
            let p = (a.0 + (b.0 - a.0) * at / len, a.1 + (b.1 - a.1) * at / len);
            if k % 2 == 0 {
                piece.push(p);
                out.push(std::mem::take(&mut piece));
            } else {
                piece = vec![p];
            }
            k = (k + 1) % dashes.len();
            left = dashes[k];
        }
        left -= len - at;
        if k % 2 == 0 {
            piece.push(b);
        }
    }
    if k % 2 == 0 && piece.len() > 1 {
        out.push(piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn forty_eight_series_have_distinct_styles() {
        let styles: HashSet<SeriesStyle> = (0..48).map(style).collect();
        assert_eq!(styles.len(), 48);
        // The first six are the palette's colours, solid; then dashed.
        assert!((0..6).all(|i| style(i).pattern == Pattern::Solid && style(i).color == i));
        assert!((6..12).all(|i| style(i).pattern == Pattern::Dashed));
        assert_eq!(style(18).pattern, Pattern::DashDot);
        assert!(style(24).marker && !style(23).marker);
    }

    /// sRGB to CIELAB (D65).
    fn lab(c: [f64; 3]) -> [f64; 3] {
        let lin = |v: f64| {
            let v = v / 255.0;
            if v <= 0.04045 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
        };
        let (r, g, b) = (lin(c[0]), lin(c[1]), lin(c[2]));
        let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
        let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
        let f = |t: f64| if t > 216.0 / 24389.0 { t.cbrt() } else { (24389.0 / 27.0 * t + 16.0) / 116.0 };
        [116.0 * f(y) - 16.0, 500.0 * (f(x) - f(y)), 200.0 * (f(y) - f(z))]
    }

    /// The colour as seen with a full dichromacy (Machado, Oliveira and
    /// Fernandes 2009, severity 1).
    fn seen(c: [f64; 3], m: &[[f64; 3]; 3]) -> [f64; 3] {
        let lin = |v: f64| {
            let v = v / 255.0;
            if v <= 0.04045 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
        };
        let back = |v: f64| {
            let v = v.clamp(0.0, 1.0);
            255.0 * if v <= 0.0031308 { 12.92 * v } else { 1.055 * v.powf(1.0 / 2.4) - 0.055 }
        };
        let l = [lin(c[0]), lin(c[1]), lin(c[2])];
        let row = |r: [f64; 3]| back(r[0] * l[0] + r[1] * l[1] + r[2] * l[2]);
        [row(m[0]), row(m[1]), row(m[2])]
    }

    fn worst_pair(colors: &[RGBColor]) -> f64 {
        const PROTAN: [[f64; 3]; 3] =
            [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]];
        const DEUTAN: [[f64; 3]; 3] =
            [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]];
        const TRITAN: [[f64; 3]; 3] =
            [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]];
        const NORMAL: [[f64; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        let mut worst = f64::INFINITY;
        for m in [NORMAL, PROTAN, DEUTAN, TRITAN] {
            let labs: Vec<[f64; 3]> =
                colors.iter().map(|c| lab(seen([c.0 as f64, c.1 as f64, c.2 as f64], &m))).collect();
            for (i, a) in labs.iter().enumerate() {
                for b in &labs[i + 1..] {
                    let d = ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt();
                    worst = worst.min(d);
                }
            }
        }
        worst
    }

    #[test]
    fn every_pair_of_colours_stays_apart_for_colour_blind_readers() {
        let worst = worst_pair(&PALETTE);
        assert!(worst >= 20.0, "two colours are only {worst:.1} CIELAB units apart for some reader");
        // The eight Okabe–Ito colours used before did not: orange and
        // yellow came within 17 under deuteranopia, green and sky blue 16 under tritanopia.
        let okabe_ito = [
            RGBColor(0, 114, 178),
            RGBColor(230, 159, 0),
            RGBColor(0, 158, 115),
            RGBColor(213, 94, 0),
            RGBColor(204, 121, 167),
            RGBColor(86, 180, 233),
            RGBColor(0, 0, 0),
            RGBColor(240, 228, 66),
        ];
        assert!(worst_pair(&okabe_ito) < 20.0);
        // Every colour stands out from white and from the reference grey.
        let white = lab([255.0; 3]);
        let grey = lab([GREY.0 as f64, GREY.1 as f64, GREY.2 as f64]);
        for c in PALETTE {
            let l = lab([c.0 as f64, c.1 as f64, c.2 as f64]);
            let d = |o: [f64; 3]| ((l[0] - o[0]).powi(2) + (l[1] - o[1]).powi(2) + (l[2] - o[2]).powi(2)).sqrt();
            assert!(d(white) > 40.0 && d(grey) > 30.0, "{c:?}");
        }
    }

    #[test]
    fn dashes_cut_a_line_into_pieces_of_the_pattern() {
        let pieces = dash(&[(0.0, 0.0), (30.0, 0.0)], &[10.0, 5.0]);
        assert_eq!(pieces, vec![vec![(0.0, 0.0), (10.0, 0.0)], vec![(15.0, 0.0), (25.0, 0.0)]]);
        // Around a corner the dash goes on.
        let pieces = dash(&[(0.0, 0.0), (6.0, 0.0), (6.0, 10.0)], &[10.0, 5.0]);
        assert_eq!(pieces[0], vec![(0.0, 0.0), (6.0, 0.0), (6.0, 4.0)]);
        assert_eq!(dash(&[(0.0, 0.0), (3.0, 4.0)], &[]).len(), 1);
    }
}
