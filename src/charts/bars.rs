//! Grouped bar charts: one group per category, one bar per series, each
//! bar with its 95% interval; a zero is drawn as a visible stub on the
//! axis and a value that does not apply as "n/a", so they are not confused.

use super::draw::{DrawResult, Swatch, bounds, draw_legend, short, title_size};
use super::layout::{self, Scale};
use super::style::{Pattern, SeriesStyle, style};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One bar: the mean and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BarValue {
    pub mean: f64,
    pub ci95: Option<(f64, f64)>,
}

/// One series of bars: a value per category (`None`: does not apply).
#[derive(Debug, Clone, Default)]
pub struct BarSeries {
    pub name: String,
    /// The series index (colour and pattern).
    pub color: usize,
    pub values: Vec<Option<BarValue>>,
}

/// A grouped bar chart.
#[derive(Debug, Clone, Default)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    pub series: Vec<BarSeries>,
}

/// The fill of a bar of this style: solid, hollow with a thick border,
/// light with a border, mid-tone with a black border; markers add a dot
/// on top.
fn bar_styles(st: SeriesStyle, s: Scale) -> (ShapeStyle, Option<ShapeStyle>) {
    let col = st.rgb();
    match st.pattern {
        Pattern::Solid => (col.filled(), None),
        Pattern::Dashed => (WHITE.filled(), Some(col.stroke_width(s.px(3.0) as u32))),
        Pattern::Dotted => (col.mix(0.35).filled(), Some(col.stroke_width(s.px(2.0) as u32))),
        Pattern::DashDot => (col.mix(0.65).filled(), Some(BLACK.stroke_width(s.px(2.0) as u32))),
    }
}

/// The legend swatch of a bar series.
pub(super) fn draw_bar_swatch<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    st: SeriesStyle,
    x: i32,
    y: i32,
    s: Scale,
) -> DrawResult<DB> {
    let (fill, border) = bar_styles(st, s);
    let r = [(x, y - s.px(7.0)), (x + s.px(22.0), y + s.px(7.0))];
    root.draw(&Rectangle::new(r, fill))?;
    if let Some(b) = border {
        root.draw(&Rectangle::new(r, b))?;
    }
    if st.marker {
        root.draw(&Circle::new((x + s.px(11.0), y), s.px(3.0), BLACK.filled()))?;
    }
    Ok(())
}

pub(super) fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &BarChart,
    size: (u32, u32),
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let n = c.categories.len().max(1) as f64;
    let k = c.series.len().max(1) as f64;
    let tops =
        c.series.iter().flat_map(|s| s.values.iter().flatten().map(|v| v.ci95.map_or(v.mean, |ci| ci.1.max(v.mean))));
    let (_, hi) = bounds(tops.chain([0.0]));
    let hi = if hi <= 0.0 { 1.0 } else { hi * 1.08 };
    let texts: Vec<String> = c.series.iter().map(|s| s.name.clone()).collect();
    let l = layout::layout(size, &texts, &[], (0.0, n));
    let s = l.scale;
    let font = ("sans-serif", title_size(&c.title, l.title.width(), s))
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new(
        c.title.clone(),
        ((l.title.x0 + l.title.x1) / 2, (l.title.y0 + l.title.y1) / 2 + s.px(4.0)),
        font,
    ))?;
    let area = root.clone().shrink((l.chart.x0, l.chart.y0), (l.chart.width() as u32, l.chart.height() as u32));
    let cats = c.categories.clone();
    let yk = super::ticks::linear(0.0, hi, 6);
    let xk: Vec<f64> = (0..c.categories.len()).map(|i| i as f64 + 0.5).collect();
    let mut chart = ChartBuilder::on(&area)
        .margin(s.margin())
        .x_label_area_size(s.x_label_area())
        .y_label_area_size(s.y_label_area())
        .build_cartesian_2d(super::ticks::Axis::new(0.0, n, xk), super::ticks::Axis::new(0.0, hi, yk))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&move |x: &f64| cats.get(x.floor() as usize).cloned().unwrap_or_default())
        .y_desc(&c.y_label)
        .y_label_formatter(&|y| short(*y))
        .label_style(("sans-serif", s.tick_font()))
        .axis_desc_style(("sans-serif", s.axis_font()))
        .set_all_tick_mark_size(s.px(5.0))
        .bold_line_style(RGBColor(228, 228, 228))
        .draw()?;
    let w = 0.8 / k;
    let plot = chart.plotting_area();
    for (si, ser) in c.series.iter().enumerate() {
        let st = style(ser.color);
        let (fill, border) = bar_styles(st, s);
        for (i, v) in ser.values.iter().enumerate() {
            let x = i as f64 + 0.1 + w * si as f64;
            let mid = x + w * 0.46;
            let Some(v) = v else {
                plot.draw(&Text::new(
                    "n/a",
                    (mid, hi * 0.01),
                    ("sans-serif", s.px(13.0))
                        .into_font()
                        .color(&RGBColor(110, 110, 110))
                        .pos(Pos::new(HPos::Center, VPos::Bottom)),
                ))?;
                continue;
            };
            if v.mean == 0.0 {
                // A zero: a stub on the axis in the series' colour.
                plot.draw(&Rectangle::new([(x, 0.0), (x + w * 0.92, hi * 0.006)], st.rgb().filled()))?;
            } else {
                plot.draw(&Rectangle::new([(x, 0.0), (x + w * 0.92, v.mean)], fill))?;
                if let Some(b) = border {
                    plot.draw(&Rectangle::new([(x, 0.0), (x + w * 0.92, v.mean)], b))?;
                }
            }
            if st.marker {
                plot.draw(&Circle::new((mid, v.mean), s.px(3.0), BLACK.filled()))?;
            }
            if let Some((lo, up)) = v.ci95
                && up > lo
            {
                // Dark on a white halo, so that it shows on any bar.
                let cap = w * 0.2;
                for ink in [WHITE.stroke_width(s.px(5.0) as u32), RGBColor(40, 40, 40).stroke_width(s.px(2.0) as u32)] {
                    plot.draw(&PathElement::new(vec![(mid, lo), (mid, up)], ink))?;
                    plot.draw(&PathElement::new(vec![(mid - cap, lo), (mid + cap, lo)], ink))?;
                    plot.draw(&PathElement::new(vec![(mid - cap, up), (mid + cap, up)], ink))?;
                }
            }
        }
    }
    let swatches: Vec<Swatch> = c.series.iter().map(|s| Swatch::Bar(style(s.color))).collect();
    draw_legend(root, &l, &swatches)
}
