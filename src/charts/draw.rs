//! Line and bar charts drawn with plotters to PNG and SVG, with the font
//! shipped in the repository (no system library), a colour-blind-safe
//! palette and one colour per variant on every chart.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

/// Chart size in pixels.
pub const SIZE: (u32, u32) = (1280, 720);

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

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

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
    pub color: usize,
    pub points: Vec<(f64, f64)>,
    pub band: Vec<(f64, f64, f64)>,
    /// Drawn thin and grey-ish (a reference such as offered load).
    pub reference: bool,
    /// Draw the points as dots, not joined.
    pub dots: bool,
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
    /// Vertical marks (knees): x, label, colour of the series they belong to.
    pub marks: Vec<(f64, String, usize)>,
    /// A horizontal reference line (a threshold) with its label.
    pub threshold: Option<(f64, String)>,
    /// Let the y axis start near the data instead of at zero.
    pub y_fit: bool,
    /// x values are log10 of the quantity; ticks are labelled 10^x.
    pub x_log10: bool,
    /// Put the legend in the lower right corner (where a CDF is empty).
    pub legend_lower_right: bool,
}

/// A grouped bar chart: one group per category, one bar per series.
#[derive(Debug, Clone, Default)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    /// (name, colour, one value per category).
    pub series: Vec<(String, usize, Vec<Option<f64>>)>,
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        return (lo - 0.5, hi + 0.5);
    }
    (lo, hi)
}

fn draw_lines<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &LineChart) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let xs = c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (x0, x1) = bounds(xs.chain(c.shade.iter().flat_map(|s| [s.0, s.1])));
    let ys = c.lines.iter().flat_map(|l| l.points.iter().map(|p| p.1).chain(l.band.iter().flat_map(|b| [b.1, b.2])));
    let (y0, y1) = bounds(ys.chain(c.threshold.iter().map(|t| t.0)));
    let y0 = if c.y_fit { y0 - (y1 - y0) * 0.1 } else { y0.min(0.0) };
    let y1 = y1 + (y1 - y0) * 0.12;
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, ("sans-serif", title_size(&c.title)))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let log = c.x_log10;
    let x_fmt = move |x: &f64| if log { crate::output::table::fmt_seconds(10f64.powf(*x)) } else { short(*x) };
    chart
        .configure_mesh()
        .x_desc(&c.x_label)
        .y_desc(&c.y_label)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&|y| short(*y))
        .label_style(("sans-serif", 18))
        .axis_desc_style(("sans-serif", 22))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    for (a, b, label) in &c.shade {
        let (a, b) = (a.max(x0), b.min(x1));
        if b > a {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(a, y0), (b, y1)],
                    RGBColor(200, 200, 200).mix(0.35).filled(),
                )))?
                .label(label.clone())
                .legend(|(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], RGBColor(200, 200, 200).filled()));
        }
    }
    for l in &c.lines {
        if !l.band.is_empty() {
            let col = color(l.color);
            let mut poly: Vec<(f64, f64)> = l.band.iter().map(|b| (b.0, b.2)).collect();
            poly.extend(l.band.iter().rev().map(|b| (b.0, b.1)));
            chart.draw_series(std::iter::once(Polygon::new(poly, col.mix(0.18).filled())))?;
        }
    }
    for l in &c.lines {
        let col = if l.reference { RGBColor(120, 120, 120) } else { color(l.color) };
        let width = if l.reference { 2 } else { 3 };
        if l.dots {
            let r = if l.reference { 4 } else { 7 };
            chart
                .draw_series(l.points.iter().map(|&p| Circle::new(p, r, col.filled())))?
                .label(l.name.clone())
                .legend(move |(x, y)| Circle::new((x + 10, y), 5, col.filled()));
            continue;
        }
        chart
            .draw_series(LineSeries::new(l.points.iter().copied(), col.stroke_width(width)))?
            .label(l.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(3)));
    }
    if let Some((y, label)) = &c.threshold {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(x0, *y), (x1, *y)],
            RGBColor(90, 90, 90).stroke_width(1),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            label.clone(),
            (x0 + (x1 - x0) * 0.01, *y),
            ("sans-serif", 16),
        )))?;
    }
    for (i, (x, label, ci)) in c.marks.iter().enumerate() {
        let col = color(*ci);
        chart.draw_series(std::iter::once(PathElement::new(vec![(*x, y0), (*x, y1)], col.stroke_width(2))))?;
        let y = y1 - (y1 - y0) * (0.05 + 0.045 * i as f64);
        chart.draw_series(std::iter::once(Text::new(
            format!(" {label}"),
            (*x, y),
            ("sans-serif", 16).into_font().color(&col),
        )))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 18))
        .position(if c.legend_lower_right { SeriesLabelPosition::LowerRight } else { SeriesLabelPosition::UpperRight })
        .draw()?;
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &BarChart) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let n = c.categories.len().max(1) as f64;
    let k = c.series.len().max(1) as f64;
    let (_, hi) = bounds(c.series.iter().flat_map(|s| s.2.iter().flatten().copied()).chain([0.0]));
    // Headroom above the bars for the legend.
    let hi = if hi <= 0.0 { 1.0 } else { hi * (1.15 + 0.07 * k) };
    let cats = c.categories.clone();
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, ("sans-serif", title_size(&c.title)))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(90)
        .build_cartesian_2d(0.0..n, 0.0..hi)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(c.categories.len() * 2 + 1)
        .x_label_formatter(&move |x: &f64| {
            let i = x.floor() as usize;
            if (x - i as f64 - 0.5).abs() < 0.26 { cats.get(i).cloned().unwrap_or_default() } else { String::new() }
        })
        .y_desc(&c.y_label)
        .y_label_formatter(&|y| short(*y))
        .label_style(("sans-serif", 18))
        .axis_desc_style(("sans-serif", 22))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    let w = 0.8 / k;
    for (si, (name, ci, values)) in c.series.iter().enumerate() {
        let col = color(*ci);
        let bars = values.iter().enumerate().filter_map(|(i, v)| {
            v.map(|v| {
                let x = i as f64 + 0.1 + w * si as f64;
                Rectangle::new([(x, 0.0), (x + w * 0.92, v)], col.filled())
            })
        });
        chart
            .draw_series(bars)?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 20, y + 6)], col.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 18))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    Ok(())
}

/// A title font size that fits the chart's width.
fn title_size(title: &str) -> u32 {
    let chars = title.chars().count().max(1) as f64;
    ((SIZE.0 as f64 - 60.0) / (0.56 * chars)).clamp(14.0, 30.0) as u32
}

/// A compact tick label.
fn short(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
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
        format!("{x:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A chart to draw.
pub enum Chart {
    Lines(LineChart),
    Bars(BarChart),
}

/// Draws `chart` as `<stem>.png` and `<stem>.svg` in `dir` (through
/// temporary files renamed into place).
pub fn save(chart: &Chart, dir: &Path, stem: &str) -> anyhow::Result<()> {
    register_font();
    std::fs::create_dir_all(dir)?;
    let tmp_png = dir.join(format!(".{stem}.tmp-{}.png", std::process::id()));
    let drawn = (|| -> anyhow::Result<()> {
        crate::interrupt::check()?;
        let root = BitMapBackend::new(&tmp_png, SIZE).into_drawing_area();
        match chart {
            Chart::Lines(c) => draw_lines(&root, c),
            Chart::Bars(c) => draw_bars(&root, c),
        }
        .map_err(|e| anyhow::anyhow!("drawing {stem}.png: {e}"))?;
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
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        match chart {
            Chart::Lines(c) => draw_lines(&root, c),
            Chart::Bars(c) => draw_bars(&root, c),
        }
        .map_err(|e| anyhow::anyhow!("drawing {stem}.svg: {e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("writing {stem}.svg: {e}"))?;
    }
    crate::output::write_atomic(&dir.join(format!("{stem}.svg")), svg.as_bytes(), &[])?;
    Ok(())
}
