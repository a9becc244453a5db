//! Line charts and small multiples drawn with plotters to PNG and SVG,
//! with the font shipped in the repository (no system library), series
//! told apart by colour, pattern and markers ([`super::style`]), lines
//! that lie on each other drawn so that each shows, every label and the
//! legend where [`super::layout`] puts them (outside the data), and every
//! font, margin and line width grown with the chart's size.

use super::bars::{BarChart, draw_bars};
use super::layout::{self, Layout, Mark, Rect, Scale};
use super::style::{GREY, Pattern, SeriesStyle, dash, style};
use super::ticks;
use plotters::coord::Shift;
use plotters::coord::cartesian::Cartesian2d;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;
use std::sync::Once;

pub use super::style::{PALETTE, color};

/// Default chart size in pixels.
pub const SIZE: (u32, u32) = layout::BASE;

static FONT: Once = Once::new();

/// Registers the shipped DejaVu Sans as "sans-serif".
pub fn register_font() {
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, bytes);
    });
}

/// One line of a line chart, with an optional band (x, low, high) around it.
#[derive(Debug, Clone, Default)]
pub struct Line {
    pub name: String,
    /// The series index: its colour, pattern and markers ([`style`]).
    pub color: usize,
    pub points: Vec<(f64, f64)>,
    pub band: Vec<(f64, f64, f64)>,
    /// Drawn thin and grey (a reference such as offered load); with
    /// `reference_colored`, thin and dotted in the series' colour.
    pub reference: bool,
    pub reference_colored: bool,
    /// Draw the points as dots, not joined.
    pub dots: bool,
    /// Draw the points as crosses, not joined (infeasible candidates).
    pub crosses: bool,
    /// No legend entry of its own (another line's entry stands for it).
    pub hide_legend: bool,
    /// The legend swatch, instead of the one the line's kind gives.
    pub legend_swatch: Option<Swatch>,
}

/// A line chart.
#[derive(Debug, Clone, Default)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub lines: Vec<Line>,
    /// Shaded x intervals (fault windows) with a label.
    pub shade: Vec<(f64, f64, String)>,
    /// Vertical marks (knees, the end of the arrivals), labelled above the plot.
    pub marks: Vec<Mark>,
    /// Horizontal reference lines (thresholds, constraints) with their labels.
    pub thresholds: Vec<(f64, String)>,
    /// Vertical reference lines (constraints on x) with their labels.
    pub x_thresholds: Vec<(f64, String)>,
    /// Let the y axis start near the data instead of at zero.
    pub y_fit: bool,
    /// The y values are shares: the axis stays inside [0, 1].
    pub y_share: bool,
    /// x values are log10 of the quantity; ticks at 1-2-5, labelled in seconds.
    pub x_log10: bool,
}

/// Several line charts side by side (one panel per value of the other
/// parameters of a sweep), sharing the y axis and one legend.
#[derive(Debug, Clone, Default)]
pub struct GridChart {
    pub title: String,
    /// Each panel's `title` names its slice.
    pub panels: Vec<LineChart>,
}

/// A chart to draw.
#[derive(Debug, Clone)]
pub enum Chart {
    Lines(LineChart),
    Bars(BarChart),
    Grid(GridChart),
}

impl Chart {
    /// Whether there is nothing to draw (no point, no bar).
    pub fn is_empty(&self) -> bool {
        match self {
            Chart::Lines(c) => c.lines.iter().all(|l| l.reference || l.points.is_empty()),
            Chart::Grid(g) => g.panels.iter().all(|c| c.lines.iter().all(|l| l.reference || l.points.is_empty())),
            Chart::Bars(b) => b.series.iter().all(|s| s.values.iter().all(|v| v.is_none())),
        }
    }

    /// The title.
    pub fn title_mut(&mut self) -> &mut String {
        match self {
            Chart::Lines(c) => &mut c.title,
            Chart::Bars(c) => &mut c.title,
            Chart::Grid(c) => &mut c.title,
        }
    }
}

/// How a legend entry is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Swatch {
    Line(SeriesStyle),
    Reference,
    ReferenceColored(usize),
    /// Dotted lines, one in each series' colour (drawn dark grey).
    ReferenceEach,
    Dot(usize),
    GreyDot,
    Cross,
    Shade,
    Threshold,
    Bar(SeriesStyle),
    /// A filled area of this colour, with a border (a frontier's classes).
    Fill(RGBColor),
    /// A line with a dot on it and an interval bar (a frontier's boundary).
    Boundary,
}

pub(super) type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

pub(super) fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        let pad = if lo.abs() > 1e-12 { lo.abs() * 0.1 } else { 0.5 };
        return (lo - pad, hi + pad);
    }
    (lo, hi)
}

/// How one line of a chart is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    pub style: SeriesStyle,
    /// The earlier line it equals at every point, named in its legend entry.
    pub same_as: Option<usize>,
    /// How many later lines lie on this one: it is drawn that many steps
    /// wider, under them, so that it shows on both sides of each.
    pub under: usize,
}

/// The value of the polyline `pts` (sorted by x) at `x`, if `x` is inside it.
fn at(pts: &[(f64, f64)], x: f64) -> Option<f64> {
    let i = pts.partition_point(|p| p.0 < x);
    match (i.checked_sub(1).map(|k| pts[k]), pts.get(i)) {
        (_, Some(b)) if b.0 == x => Some(b.1),
        (Some(a), Some(b)) if b.0 > a.0 => Some(a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)),
        _ => None,
    }
}

/// Whether line `a` lies on line `b`: at 80% or more of its points, `b`
/// (joined between its points) is within `tol` of it.
fn lies_on(a: &[(f64, f64)], b: &[(f64, f64)], tol: f64) -> bool {
    if a.len() < 2 || b.len() < 2 || !b.windows(2).all(|w| w[0].0 <= w[1].0) {
        return false;
    }
    let close = a.iter().filter(|p| at(b, p.0).is_some_and(|y| (y - p.1).abs() <= tol)).count();
    close * 5 >= a.len() * 4
}

/// Each line's look: its own style; the earlier line it equals at every
/// point (within 0.4% of the y span), if any; and how many later lines lie
/// on it (within 1% of the span at most of their points), so that it is
/// drawn wider under them.
pub fn styles(lines: &[Line], y_span: f64) -> Vec<Look> {
    let same_tol = (y_span.abs() * 0.004).max(1e-12);
    let near_tol = (y_span.abs() * 0.01).max(1e-12);
    let plain = |l: &Line| !l.reference && !l.reference_colored && !l.dots && !l.crosses && !l.points.is_empty();
    let mut out: Vec<Look> = Vec::new();
    // The first line of the group each line joins.
    let mut root: Vec<Option<usize>> = Vec::new();
    for (j, l) in lines.iter().enumerate() {
        let same_as = plain(l)
            .then(|| {
                (0..j).find(|&i| {
                    let o = &lines[i];
                    plain(o)
                        && o.points.len() == l.points.len()
                        && o.points.iter().zip(&l.points).all(|(a, b)| a.0 == b.0 && (a.1 - b.1).abs() <= same_tol)
                })
            })
            .flatten();
        let on = same_as.or_else(|| {
            plain(l)
                .then(|| (0..j).find(|&i| plain(&lines[i]) && lies_on(&l.points, &lines[i].points, near_tol)))
                .flatten()
        });
        root.push(on.map(|i| root[i].unwrap_or(i)));
        out.push(Look { style: style(l.color), same_as: same_as.map(|i| root[i].unwrap_or(i)), under: 0 });
    }
    // Within a group the first is drawn widest, the last narrowest.
    for j in 0..lines.len() {
        if let Some(r) = root[j] {
            out[r].under += 1;
            for k in (r + 1)..j {
                if root[k] == Some(r) {
                    out[k].under += 1;
                }
            }
        }
    }
    out
}

/// The legend of a line chart: (text, swatch) per entry.
pub fn legend(c: &LineChart, y_span: f64) -> Vec<(String, Swatch)> {
    let mut out = Vec::new();
    for (_, _, label) in &c.shade {
        if !out.iter().any(|(t, _): &(String, Swatch)| t == label) {
            out.push((label.clone(), Swatch::Shade));
        }
    }
    let looks = styles(&c.lines, y_span);
    for (l, look) in c.lines.iter().zip(&looks) {
        if l.hide_legend {
            continue;
        }
        let text = match look.same_as {
            Some(i) => format!("{} (same as {})", l.name, c.lines[i].name),
            None => l.name.clone(),
        };
        let swatch = if let Some(s) = l.legend_swatch {
            s
        } else if l.crosses {
            Swatch::Cross
        } else if l.reference && l.dots {
            Swatch::GreyDot
        } else if l.reference_colored {
            Swatch::ReferenceColored(l.color)
        } else if l.reference {
            Swatch::Reference
        } else if l.dots {
            Swatch::Dot(l.color)
        } else {
            Swatch::Line(look.style)
        };
        // An empty reference or point set (no infeasible candidate) needs no entry.
        if !l.points.is_empty() || !(l.reference || l.dots || l.crosses) {
            out.push((text, swatch));
        }
    }
    for (_, label) in c.thresholds.iter().chain(&c.x_thresholds) {
        out.push((label.clone(), Swatch::Threshold));
    }
    out
}

/// The x and y ranges of a line chart.
pub fn ranges(c: &LineChart) -> ((f64, f64), (f64, f64)) {
    let xs = c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (x0, x1) = bounds(xs.chain(c.marks.iter().map(|m| m.x)).chain(c.x_thresholds.iter().map(|t| t.0)));
    // Room for the markers of point charts at the ends of the axis.
    let pad = if c.lines.iter().any(|l| l.dots || l.crosses) { (x1 - x0) * 0.03 } else { 0.0 };
    let (x0, x1) = (x0 - pad, x1 + pad);
    let ys = c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1).chain(l.band.iter().flat_map(|b| [b.1, b.2])));
    let (y0, y1) = bounds(ys.chain(c.thresholds.iter().map(|t| t.0)));
    let span = y1 - y0;
    let mut y0 = if c.y_fit { y0 - span * 0.08 } else { y0.min(0.0) };
    let mut y1 = y1 + span * 0.06;
    if c.y_share {
        y0 = y0.max(0.0);
        y1 = y1.min(1.0);
    }
    ((x0, x1), (y0, y1))
}

/// The layout of a line chart at `size`.
pub fn line_layout(c: &LineChart, size: (u32, u32)) -> Layout {
    let (xr, yr) = ranges(c);
    let entries: Vec<String> = legend(c, yr.1 - yr.0).into_iter().map(|e| e.0).collect();
    layout::layout(size, &entries, &c.marks, xr)
}

type Coords = Cartesian2d<ticks::Axis, ticks::Axis>;

fn draw_title<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str, r: Rect, s: Scale) -> DrawResult<DB> {
    let size = title_size(title, r.width(), s);
    let font = ("sans-serif", size).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new(title.to_string(), ((r.x0 + r.x1) / 2, (r.y0 + r.y1) / 2 + s.px(4.0)), font))
}

/// The dash lengths of a pattern at scale `s`.
fn dashes(pattern: Pattern, s: Scale) -> Vec<f64> {
    pattern.dashes().iter().map(|d| d * s.0).collect()
}

/// Whether `DB` draws pixels (the PNG), not an SVG.
fn raster<DB: DrawingBackend>() -> bool {
    std::any::type_name::<DB>().contains("BitMapBackend")
}

/// A polyline in pixels of `area` with a pattern.
fn pixel_path<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    pts: &[(i32, i32)],
    pattern: Pattern,
    s: Scale,
    st: ShapeStyle,
) -> DrawResult<DB> {
    let f: Vec<(f64, f64)> = pts.iter().map(|p| (p.0 as f64, p.1 as f64)).collect();
    for piece in dash(&f, &dashes(pattern, s)) {
        let mut px: Vec<(i32, i32)> = piece.iter().map(|p| (p.0.round() as i32, p.1.round() as i32)).collect();
        px.dedup();
        if st.stroke_width <= 3 || px.len() < 3 || !raster::<DB>() {
            area.draw(&PathElement::new(px, st))?;
            continue;
        }
        // A wide line in a PNG: segment by segment with round joins, as the
        // mitred joins plotters rasterises for wide lines spike at sharp
        // turns (an SVG keeps one polyline: its viewer draws the joins).
        for w in px.windows(2) {
            area.draw(&PathElement::new(w.to_vec(), st))?;
        }
        let r = (st.stroke_width as i32 - 1) / 2;
        for &p in &px[1..px.len() - 1] {
            area.draw(&Circle::new(p, r, st.color.filled()))?;
        }
    }
    Ok(())
}

/// A polyline in data coordinates with a pattern (the dashes measured in pixels).
fn data_path<DB: DrawingBackend>(
    plot: &DrawingArea<DB, Coords>,
    pts: &[(f64, f64)],
    pattern: Pattern,
    s: Scale,
    st: ShapeStyle,
) -> DrawResult<DB> {
    let base = plot.get_base_pixel();
    let px: Vec<(i32, i32)> = pts
        .iter()
        .map(|p| {
            let (x, y) = plot.map_coordinate(p);
            (x - base.0, y - base.1)
        })
        .collect();
    pixel_path(&plot.strip_coord_spec(), &px, pattern, s, st)
}

/// Draws a short sample of the swatch at (x, y) (its vertical middle).
fn draw_swatch<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    sw: Swatch,
    x: i32,
    y: i32,
    s: Scale,
) -> DrawResult<DB> {
    let seg = vec![(x, y), (x + s.swatch() - s.px(10.0), y)];
    let (thin, half) = (s.px(2.0), s.px(7.0));
    match sw {
        Swatch::Line(st) => {
            let col = st.rgb();
            pixel_path(root, &seg, st.pattern, s, col.stroke_width(s.line() as u32))?;
            if st.marker {
                root.draw(&Circle::new((x + (s.swatch() - s.px(10.0)) / 2, y), s.px(4.0), col.filled()))?;
            }
            Ok(())
        }
        Swatch::Reference => root.draw(&PathElement::new(seg, GREY.stroke_width(thin as u32))),
        Swatch::ReferenceColored(i) => pixel_path(root, &seg, Pattern::Dotted, s, color(i).stroke_width(thin as u32)),
        Swatch::ReferenceEach => {
            pixel_path(root, &seg, Pattern::Dotted, s, RGBColor(60, 60, 60).stroke_width(thin as u32))
        }
        Swatch::Dot(i) => root.draw(&Circle::new((x + s.px(12.0), y), s.px(6.0), color(i).filled())),
        Swatch::GreyDot => root.draw(&Circle::new((x + s.px(12.0), y), s.px(4.0), GREY.filled())),
        Swatch::Cross => root.draw(&Cross::new((x + s.px(12.0), y), s.px(5.0), CROSS.stroke_width(thin as u32))),
        Swatch::Shade => {
            let r = [(x, y - half), (x + s.swatch() - s.px(10.0), y + half)];
            root.draw(&Rectangle::new(r, SHADE.filled()))?;
            root.draw(&Rectangle::new(r, RGBColor(150, 150, 150).stroke_width(1)))
        }
        Swatch::Threshold => pixel_path(root, &seg, Pattern::Dashed, s, DARK.stroke_width(thin as u32)),
        Swatch::Bar(st) => super::bars::draw_bar_swatch(root, st, x, y, s),
        Swatch::Fill(col) => {
            let r = [(x, y - half), (x + s.swatch() - s.px(10.0), y + half)];
            root.draw(&Rectangle::new(r, col.filled()))?;
            root.draw(&Rectangle::new(r, RGBColor(110, 110, 110).stroke_width(1)))
        }
        Swatch::Boundary => {
            let mid = x + (s.swatch() - s.px(10.0)) / 2;
            root.draw(&PathElement::new(seg, DARK.stroke_width(s.line() as u32)))?;
            root.draw(&PathElement::new(vec![(mid, y - half), (mid, y + half)], DARK.stroke_width(thin as u32)))?;
            root.draw(&Circle::new((mid, y), s.px(5.0), DARK.filled()))
        }
    }
}

/// The colour of the crosses of infeasible candidates.
const CROSS: RGBColor = RGBColor(0x88, 0x22, 0x55);
/// Threshold lines.
const DARK: RGBColor = RGBColor(90, 90, 90);
/// Fault windows.
const SHADE: RGBColor = RGBColor(200, 200, 200);

/// Draws the legend entries where the layout put them.
pub(super) fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    l: &Layout,
    swatches: &[Swatch],
) -> DrawResult<DB> {
    if l.entries.is_empty() {
        return Ok(());
    }
    let s = l.scale;
    let r = l.legend;
    root.draw(&Rectangle::new([(r.x0, r.y0), (r.x1, r.y1)], RGBColor(190, 190, 190).stroke_width(1)))?;
    let line_h = l.legend_font + s.px(4.0);
    for (e, sw) in l.entries.iter().zip(swatches) {
        draw_swatch(root, *sw, e.rect.x0, e.rect.y0 + line_h / 2 + s.px(2.0), s)?;
        for (k, text) in e.lines.iter().enumerate() {
            root.draw(&Text::new(
                text.clone(),
                (e.rect.x0 + s.swatch(), e.rect.y0 + s.px(3.0) + k as i32 * line_h),
                ("sans-serif", l.legend_font).into_font().color(&BLACK),
            ))?;
        }
    }
    Ok(())
}

/// Font sizes of one plot: tick labels, axis names, and a panel caption.
#[derive(Debug, Clone, Copy)]
struct Fonts {
    tick: i32,
    axis: i32,
}

/// Axes, ticks, shading, bands, lines, reference lines and vertical marks
/// of `c` in `area`, over the given ranges.
fn draw_plot<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    c: &LineChart,
    caption: Option<(&str, i32)>,
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
    fonts: Fonts,
    s: Scale,
) -> Result<ChartContext<'a, DB, Coords>, DrawingAreaErrorKind<DB::ErrorType>> {
    let xk = if c.x_log10 { ticks::log125(x0, x1) } else { ticks::linear(x0, x1, 8) };
    let yk = ticks::linear(y0, y1, 6);
    let mut builder = ChartBuilder::on(area);
    builder.margin(s.margin()).x_label_area_size(s.x_label_area()).y_label_area_size(s.y_label_area());
    if let Some((text, size)) = caption {
        builder.caption(text, ("sans-serif", size));
    }
    let mut chart = builder.build_cartesian_2d(ticks::Axis::new(x0, x1, xk), ticks::Axis::new(y0, y1, yk))?;
    let log = c.x_log10;
    let x_fmt = move |x: &f64| if log { crate::output::table::fmt_seconds(10f64.powf(*x)) } else { short(*x) };
    chart
        .configure_mesh()
        .x_desc(&c.x_label)
        .y_desc(&c.y_label)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&|y| short(*y))
        .label_style(("sans-serif", fonts.tick))
        .axis_desc_style(("sans-serif", fonts.axis))
        .set_all_tick_mark_size(s.px(5.0))
        .bold_line_style(RGBColor(228, 228, 228))
        .axis_style(BLACK.stroke_width(s.px(1.0) as u32))
        .draw()?;
    for (a, b, _) in &c.shade {
        let (a, b) = (a.max(x0), b.min(x1));
        if b > a {
            chart.draw_series(std::iter::once(Rectangle::new([(a, y0), (b, y1)], SHADE.mix(0.35).filled())))?;
        }
    }
    for l in &c.lines {
        if !l.band.is_empty() {
            let col = color(l.color);
            let clamp = |y: f64| y.clamp(y0, y1);
            let mut poly: Vec<(f64, f64)> = l.band.iter().map(|b| (b.0, clamp(b.2))).collect();
            poly.extend(l.band.iter().rev().map(|b| (b.0, clamp(b.1))));
            chart.draw_series(std::iter::once(Polygon::new(poly, col.mix(0.15).filled())))?;
        }
    }
    let looks = styles(&c.lines, y1 - y0);
    let plot = chart.plotting_area();
    let thin = s.px(2.0) as u32;
    // References first, then the lines that others lie on (widest first),
    // so that every line shows.
    let mut order: Vec<usize> = (0..c.lines.len()).collect();
    order.sort_by_key(|&i| {
        let l = &c.lines[i];
        (!(l.reference || l.reference_colored), std::cmp::Reverse(looks[i].under), l.dots || l.crosses)
    });
    for i in order {
        let (l, look) = (&c.lines[i], looks[i]);
        if l.crosses {
            for &p in &l.points {
                plot.draw(&Cross::new(p, s.px(6.0), CROSS.stroke_width(thin)))?;
            }
        } else if l.dots {
            let (col, r) = if l.reference { (GREY, s.px(4.0)) } else { (color(l.color), s.px(7.0)) };
            for &p in &l.points {
                plot.draw(&Circle::new(p, r, col.filled()))?;
            }
        } else if l.reference || l.reference_colored {
            let col = if l.reference_colored { color(l.color) } else { GREY };
            let pattern = if l.reference_colored { Pattern::Dotted } else { Pattern::Solid };
            data_path(plot, &l.points, pattern, s, col.stroke_width(thin))?;
        } else {
            let st = look.style;
            // 2 pixels wider per line on top (at most 6 wider in all).
            let width = s.line() + (look.under as f64 * (2.0f64).min(6.0 / look.under as f64) * s.0).round() as i32;
            data_path(plot, &l.points, st.pattern, s, st.rgb().stroke_width(width as u32))?;
            if st.marker {
                for &p in &l.points {
                    plot.draw(&Circle::new(p, s.px(4.0) + (width - s.line()) / 2, st.rgb().filled()))?;
                }
            }
        }
    }
    for (y, _) in &c.thresholds {
        data_path(plot, &[(x0, *y), (x1, *y)], Pattern::Dashed, s, DARK.stroke_width(thin))?;
    }
    for (x, _) in &c.x_thresholds {
        data_path(plot, &[(*x, y0), (*x, y1)], Pattern::Dashed, s, DARK.stroke_width(thin))?;
    }
    for m in &c.marks {
        let pts = [(m.x, y0), (m.x, y1)];
        match m.color {
            Some(i) => data_path(plot, &pts, Pattern::Solid, s, color(i).stroke_width(thin))?,
            None => data_path(plot, &pts, Pattern::Dashed, s, GREY.stroke_width(thin))?,
        }
    }
    Ok(chart)
}

fn draw_lines<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &LineChart, size: (u32, u32)) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (xr, yr) = ranges(c);
    let entries = legend(c, yr.1 - yr.0);
    let texts: Vec<String> = entries.iter().map(|e| e.0.clone()).collect();
    let l = layout::layout(size, &texts, &c.marks, xr);
    let s = l.scale;
    draw_title(root, &c.title, l.title, s)?;
    let area = root.clone().shrink((l.chart.x0, l.chart.y0), (l.chart.width() as u32, l.chart.height() as u32));
    let chart = draw_plot(&area, c, None, xr, yr, Fonts { tick: s.tick_font(), axis: s.axis_font() }, s)?;
    let top = chart.plotting_area().get_pixel_range().1.start;
    for p in &l.labels {
        let col = p.colors[0].map(color).unwrap_or(GREY);
        root.draw(&PathElement::new(vec![(p.anchor, p.rect.y1), (p.anchor, top)], col.mix(0.6).stroke_width(1)))?;
        root.draw(&Rectangle::new([(p.rect.x0, p.rect.y0), (p.rect.x1, p.rect.y1)], WHITE.filled()))?;
        let mut x = p.rect.x0 + s.px(3.0);
        if p.merged > 1 {
            // One small square per mark the label stands for, in its colour.
            for c in &p.colors {
                let col = c.map(color).unwrap_or(GREY);
                let (a, b) = (p.rect.y0 + s.px(5.0), p.rect.y0 + s.px(14.0));
                root.draw(&Rectangle::new([(x, a), (x + s.px(9.0), b)], col.filled()))?;
                x += s.px(12.0);
            }
        }
        let font = ("sans-serif", s.label_font()).into_font().color(&col);
        root.draw(&Text::new(p.text.clone(), (x, p.rect.y0 + s.px(2.0)), font))?;
    }
    let swatches: Vec<Swatch> = entries.iter().map(|e| e.1).collect();
    draw_legend(root, &l, &swatches)
}

/// Rows and columns for `n` panels.
pub fn grid_shape(n: usize) -> (usize, usize) {
    let cols = match n {
        0..=1 => 1,
        2 => 2,
        3..=4 => 2,
        5..=9 => 3,
        _ => 4,
    };
    (n.div_ceil(cols).max(1), cols)
}

/// The one legend of small multiples: a series is "(same as X)" only when
/// it lies on X in every panel (each panel still draws a line that lies on
/// another there so that both show).
pub fn grid_legend(g: &GridChart, y_span: f64) -> Vec<(String, Swatch)> {
    let Some(first) = g.panels.first() else { return Vec::new() };
    let aligned = g.panels.iter().all(|p| p.lines.len() == first.lines.len());
    if !aligned {
        return legend(first, y_span);
    }
    // Each series' points over all panels, one after another: two series
    // coincide there exactly when they coincide in every panel.
    let mut joined = first.clone();
    for (j, line) in joined.lines.iter_mut().enumerate() {
        line.points = g.panels.iter().flat_map(|p| p.lines[j].points.iter().copied()).collect();
    }
    legend(&joined, y_span)
}

fn draw_grid<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, g: &GridChart, size: (u32, u32)) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let Some(first) = g.panels.first() else { return Ok(()) };
    // One y range for all panels, so they compare at a glance.
    let all = LineChart { lines: g.panels.iter().flat_map(|p| p.lines.clone()).collect(), ..first.clone() };
    let (xr, yr) = ranges(&all);
    let entries = grid_legend(g, yr.1 - yr.0);
    let texts: Vec<String> = entries.iter().map(|e| e.0.clone()).collect();
    let l = layout::layout(size, &texts, &[], xr);
    let s = l.scale;
    draw_title(root, &g.title, l.title, s)?;
    let area = root.clone().shrink((l.chart.x0, l.chart.y0), (l.chart.width() as u32, l.chart.height() as u32));
    let (rows, cols) = grid_shape(g.panels.len());
    let cells = area.split_evenly((rows, cols));
    for (panel, cell) in g.panels.iter().zip(&cells) {
        let (pxr, _) = ranges(panel);
        let fonts = Fonts { tick: s.px(13.0), axis: s.px(16.0) };
        draw_plot(cell, panel, Some((&panel.title, s.px(17.0))), pxr, yr, fonts, s)?;
    }
    let swatches: Vec<Swatch> = entries.iter().map(|e| e.1).collect();
    draw_legend(root, &l, &swatches)
}

/// A title font size that fits `width` pixels: 28 pixels at the default
/// size, grown with the chart, smaller for a long title.
pub(super) fn title_size(title: &str, width: i32, s: Scale) -> i32 {
    let chars = title.chars().count().max(1) as f64;
    ((width as f64 - 60.0 * s.0) / (0.6 * chars)).clamp(12.0 * s.0, 28.0 * s.0) as i32
}

/// A compact tick label.
pub(crate) fn short(x: f64) -> String {
    let a = x.abs();
    if a < 1e-12 {
        "0".into()
    } else if a >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", x / 1e3)
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 1.0 {
        format!("{x:.2}").trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{x:.4}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn draw_any<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart, size: (u32, u32)) -> DrawResult<DB> {
    match chart {
        Chart::Lines(c) => draw_lines(root, c, size),
        Chart::Bars(c) => draw_bars(root, c, size),
        Chart::Grid(g) => draw_grid(root, g, size),
    }
}

/// Draws `chart` as `<stem>.png` and `<stem>.svg` in `dir` at the default size.
pub fn save(chart: &Chart, dir: &Path, stem: &str) -> anyhow::Result<()> {
    save_sized(chart, dir, stem, SIZE)
}

/// Draws `chart` as `<stem>.png` and `<stem>.svg` in `dir` at `size`
/// pixels (through temporary files renamed into place).
pub fn save_sized(chart: &Chart, dir: &Path, stem: &str, size: (u32, u32)) -> anyhow::Result<()> {
    save_with(chart, dir, stem, size)
}

/// Something drawn onto any plotters backend.
pub(super) trait Drawable {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, size: (u32, u32)) -> DrawResult<DB>;
}

impl Drawable for Chart {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, size: (u32, u32)) -> DrawResult<DB> {
        draw_any(root, self, size)
    }
}

/// Draws `d` into `<stem>.png` and `<stem>.svg` in `dir` at `size`
/// (through temporary files renamed into place; Ctrl-C while drawing
/// leaves the files as they were).
pub(super) fn save_with(d: &impl Drawable, dir: &Path, stem: &str, size: (u32, u32)) -> anyhow::Result<()> {
    register_font();
    std::fs::create_dir_all(dir)?;
    let tmp_png = dir.join(format!(".{stem}.tmp-{}.png", std::process::id()));
    let drawn = (|| -> anyhow::Result<()> {
        crate::interrupt::check()?;
        let root = BitMapBackend::new(&tmp_png, size).into_drawing_area();
        d.draw_on(&root, size).map_err(|e| anyhow::anyhow!("drawing {stem}.png: {e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("writing {stem}.png: {e}"))?;
        // Ctrl-C while drawing: the file is not moved into place.
        Ok(crate::interrupt::check()?)
    })();
    if let Err(e) = drawn {
        let _ = std::fs::remove_file(&tmp_png);
        return Err(e);
    }
    crate::output::files::install(&tmp_png, &dir.join(format!("{stem}.png")), &[])?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        d.draw_on(&root, size).map_err(|e| anyhow::anyhow!("drawing {stem}.svg: {e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("writing {stem}.svg: {e}"))?;
    }
    crate::output::write_atomic(&dir.join(format!("{stem}.svg")), svg.as_bytes(), &[])?;
    Ok(())
}

/// The SVG text of `chart` at `size` (what `<stem>.svg` holds).
pub fn svg_of(chart: &Chart, size: (u32, u32)) -> String {
    register_font();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw_any(&root, chart, size).expect("drawing into a string");
        root.present().expect("drawing into a string");
    }
    svg
}

/// The plotting area plotters actually uses for `c` at `size` (to check
/// the layout's estimate).
pub fn plot_area_px(c: &LineChart, size: (u32, u32)) -> Rect {
    register_font();
    let mut buf = vec![0u8; (size.0 * size.1 * 3) as usize];
    let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
    let (xr, yr) = ranges(c);
    let l = line_layout(c, size);
    let s = l.scale;
    let area = root.clone().shrink((l.chart.x0, l.chart.y0), (l.chart.width() as u32, l.chart.height() as u32));
    let chart = draw_plot(&area, c, None, xr, yr, Fonts { tick: s.tick_font(), axis: s.axis_font() }, s)
        .expect("drawing into memory");
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    Rect { x0: xs.start, y0: ys.start, x1: xs.end, y1: ys.end }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, i: usize, ys: &[f64]) -> Line {
        Line {
            name: name.into(),
            color: i,
            points: ys.iter().enumerate().map(|(x, y)| (x as f64, *y)).collect(),
            ..Line::default()
        }
    }

    #[test]
    fn the_layout_matches_what_plotters_draws_and_the_legend_is_outside_it() {
        let c = LineChart {
            lines: (0..9).map(|i| line(&format!("variant {i}"), i, &[i as f64, 2.0, 3.0])).collect(),
            marks: vec![Mark { x: 1.0, label: "knee of variant 1".into(), color: Some(1) }],
            ..LineChart::default()
        };
        let l = line_layout(&c, SIZE);
        let actual = plot_area_px(&c, SIZE);
        assert!((actual.x0 - l.plot.x0).abs() <= 3 && (actual.x1 - l.plot.x1).abs() <= 3, "{actual:?} vs {:?}", l.plot);
        assert!((actual.y0 - l.plot.y0).abs() <= 3 && (actual.y1 - l.plot.y1).abs() <= 3, "{actual:?} vs {:?}", l.plot);
        assert!(!l.legend.intersects(&actual));
        assert!(l.labels.iter().all(|p| !p.rect.intersects(&actual)));
    }

    #[test]
    fn small_multiples_name_a_coincidence_only_when_it_holds_in_every_panel() {
        let panel = |b: &[f64], c: &[f64]| LineChart {
            lines: vec![line("a", 0, &[0.0, 1.0]), line("b", 1, b), line("c", 2, c)],
            ..LineChart::default()
        };
        // b lies on a in the first panel only; c lies on a in both.
        let g = GridChart {
            title: String::new(),
            panels: vec![panel(&[0.0, 1.0], &[0.0, 1.0]), panel(&[3.0, 4.0], &[0.0, 1.0])],
        };
        let texts: Vec<String> = grid_legend(&g, 4.0).into_iter().map(|e| e.0).collect();
        assert_eq!(texts, ["a", "b", "c (same as a)"]);
    }

    #[test]
    fn coinciding_lines_are_named_and_drawn_so_both_show() {
        let c = LineChart {
            lines: vec![
                line("a", 0, &[0.0, 0.0]),
                line("b", 1, &[0.0, 0.0]),
                line("c", 2, &[0.0, 0.0]),
                line("d", 3, &[1.0, 2.0]),
            ],
            ..LineChart::default()
        };
        let texts: Vec<String> = legend(&c, 2.0).into_iter().map(|e| e.0).collect();
        assert_eq!(texts, ["a", "b (same as a)", "c (same as a)", "d"]);
        // Each keeps its own style; the first is drawn widest under the
        // others, the second under the third.
        let looks = styles(&c.lines, 2.0);
        let under: Vec<usize> = looks.iter().map(|l| l.under).collect();
        assert_eq!(under, [2, 1, 0, 0]);
        assert!(looks.iter().enumerate().all(|(i, l)| l.style == style(i)));
    }

    #[test]
    fn a_line_that_mostly_lies_on_an_earlier_one_is_drawn_over_a_wider_one() {
        // "no retries" and "immediate retries" agree except at a spike: the
        // first is drawn wider underneath so that it is not hidden.
        let base: Vec<f64> = (0..40).map(|i| 600.0 + (i % 7) as f64).collect();
        let mut spiky = base.clone();
        spiky[10] += 200.0;
        spiky[11] += 150.0;
        let c = LineChart {
            lines: vec![line("no retries", 0, &base), line("immediate retries", 1, &spiky), line("far", 2, &[0.0; 40])],
            ..LineChart::default()
        };
        let looks = styles(&c.lines, 820.0);
        assert_eq!(looks.iter().map(|l| l.under).collect::<Vec<_>>(), [1, 0, 0]);
        assert_eq!(looks[1].same_as, None, "not the same everywhere: no (same as) in the legend");
        // Lines at other x (a CDF) are compared where they overlap.
        let a = vec![(0.0, 0.0), (1.0, 0.5), (2.0, 1.0)];
        let b = vec![(0.5, 0.25), (1.5, 0.75), (1.9, 0.95)];
        assert!(lies_on(&b, &a, 0.01) && !lies_on(&b, &[(0.0, 0.5), (2.0, 0.5)], 0.01));
    }

    #[test]
    fn fonts_in_the_svg_grow_with_the_size() {
        let c = Chart::Lines(LineChart {
            title: "t".into(),
            x_label: "time (s)".into(),
            y_label: "y".into(),
            lines: vec![line("a", 0, &[1.0, 2.0]), line("b", 1, &[2.0, 1.0])],
            ..LineChart::default()
        });
        let sizes = |svg: &str| -> Vec<f64> {
            svg.split("font-size=\"").skip(1).filter_map(|t| t.split('"').next()?.parse().ok()).collect()
        };
        let small = sizes(&svg_of(&c, SIZE));
        let big = sizes(&svg_of(&c, (1920, 1080)));
        let (min_s, min_b) =
            (small.iter().cloned().fold(f64::MAX, f64::min), big.iter().cloned().fold(f64::MAX, f64::min));
        let (max_s, max_b) = (small.iter().cloned().fold(0.0, f64::max), big.iter().cloned().fold(0.0, f64::max));
        assert!(min_b >= min_s * 1.4 && max_b >= max_s * 1.4, "{small:?} vs {big:?}");
        let widths = |svg: &str| -> f64 {
            svg.split("stroke-width=\"").skip(1).filter_map(|t| t.split('"').next()?.parse().ok()).fold(0.0, f64::max)
        };
        assert!(widths(&svg_of(&c, (1920, 1080))) > widths(&svg_of(&c, SIZE)), "lines grow too");
    }

    #[test]
    fn sixteen_variants_get_sixteen_distinct_styles_in_the_legend() {
        let c = LineChart {
            lines: (0..16).map(|i| line(&format!("v{i}"), i, &[i as f64, i as f64 + 1.0])).collect(),
            ..LineChart::default()
        };
        let l = legend(&c, 20.0);
        let distinct: std::collections::HashSet<String> = l.iter().map(|e| format!("{:?}", e.1)).collect();
        assert_eq!(distinct.len(), 16);
    }

    #[test]
    fn shares_stay_in_zero_to_one() {
        let c = LineChart { lines: vec![line("a", 0, &[0.2, 1.0])], y_share: true, ..LineChart::default() };
        let (_, (y0, y1)) = ranges(&c);
        assert!(y0 >= 0.0 && y1 <= 1.0, "{y0}..{y1}");
    }
}
