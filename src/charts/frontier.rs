//! The vulnerability-region chart of a frontier (`frontier.png`/`.svg`):
//! one panel per variant, load on x, trigger size on y. Each measured load
//! has a column of its own (as wide as half the gap to its nearest
//! measured neighbour on each side): below the boundary the design
//! recovers (stable), above it it does not (vulnerable), and a load where
//! it does not recover even without a trigger is metastable at steady
//! load; between and beside the columns nothing was measured and nothing
//! is shaded. The boundary's 95% interval is the band around it. The key
//! is below the panels, a swatch for every class drawn. And the bar chart
//! of a collapse-rate folder.

use super::bars::{BarChart, BarSeries, BarValue};
use super::draw::{Chart, DrawResult, Drawable, Swatch, color, draw_legend, save, save_with, title_size};
use super::layout::{Entry, Layout, Rect, Scale, legend_rows};
use anyhow::Context;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;
use std::path::Path;

const STABLE: RGBColor = RGBColor(198, 233, 214);
const VULNERABLE: RGBColor = RGBColor(246, 205, 190);
const METASTABLE: RGBColor = RGBColor(150, 150, 150);

fn read(path: &Path) -> anyhow::Result<Value> {
    let text = crate::config::read::read_text(path, crate::config::read::MAX_DATA_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not valid JSON", path.display()))
}

/// A point of a panel: x, the boundary and its interval.
type Point = (f64, Option<f64>, Option<f64>, Option<f64>);

/// One panel: its points, sorted by x.
pub struct Panel {
    pub name: String,
    pub color: usize,
    pub points: Vec<Point>,
}

/// What a frontier chart shows.
pub struct Frontier {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub y_max: f64,
    pub y_min: f64,
    pub panels: Vec<Panel>,
}

/// A class of a shaded cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Stable,
    Vulnerable,
    Metastable,
}

impl Class {
    fn fill(self) -> RGBColor {
        match self {
            Class::Stable => STABLE,
            Class::Vulnerable => VULNERABLE,
            Class::Metastable => METASTABLE,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Class::Stable => "recovers (stable)",
            Class::Vulnerable => "does not recover (vulnerable)",
            Class::Metastable => "does not recover even without a trigger (metastable at steady load)",
        }
    }
}

/// A shaded rectangle in data units: x0..x1 by y0..y1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cell {
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
    pub class: Class,
}

/// Each measured x's column: half the gap to its nearest measured
/// neighbour on each side (a tenth of |x|, at least 0.1, for a lone x).
pub fn columns(xs: &[f64]) -> Vec<(f64, f64)> {
    let gaps: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).filter(|g| *g > 0.0).collect();
    xs.iter()
        .enumerate()
        .map(|(i, &x)| {
            let left = i.checked_sub(1).map(|k| x - xs[k]).filter(|g| *g > 0.0);
            let right = xs.get(i + 1).map(|n| n - x).filter(|g| *g > 0.0);
            let half = match (left, right) {
                (Some(a), Some(b)) => a.min(b) / 2.0,
                (Some(a), None) | (None, Some(a)) => a / 2.0,
                (None, None) => gaps.first().copied().map_or(0.1 * x.abs().max(1.0), |g| g / 2.0),
            };
            (x - half, x + half)
        })
        .collect()
}

/// The x axis of a panel: its columns, with the lone column of a single
/// measured x in the middle of an axis five times as wide on each side.
pub fn x_range(xs: &[f64]) -> (f64, f64) {
    let cols = columns(xs);
    match (cols.first(), cols.last()) {
        (Some(a), _) if cols.len() == 1 => {
            let (mid, half) = ((a.0 + a.1) / 2.0, (a.1 - a.0) / 2.0);
            (mid - 5.0 * half, mid + 5.0 * half)
        }
        (Some(a), Some(b)) => {
            let pad = (b.1 - a.0) * 0.01;
            (a.0 - pad, b.1 + pad)
        }
        _ => (0.0, 1.0),
    }
}

/// The shaded cells of a panel over sizes `y0..y1`: one column per measured point.
pub fn cells(panel: &Panel, y0: f64, y1: f64) -> Vec<Cell> {
    let xs: Vec<f64> = panel.points.iter().map(|p| p.0).collect();
    let mut out = Vec::new();
    for (&(_, b, _, _), (x0, x1)) in panel.points.iter().zip(columns(&xs)) {
        let cell = |y0: f64, y1: f64, class: Class| Cell { x0, x1, y0, y1, class };
        match b {
            None => out.push(cell(y0, y1, Class::Stable)),
            Some(b) if b <= 0.0 => out.push(cell(y0, y1, Class::Metastable)),
            Some(b) => {
                out.push(cell(y0, b.min(y1), Class::Stable));
                out.push(cell(b.min(y1), y1, Class::Vulnerable));
            }
        }
    }
    out
}

/// The key: a swatch for each class shaded somewhere, "not measured" when
/// part of an axis is blank, and the boundary when one is drawn.
pub fn key(c: &Frontier) -> Vec<(String, Swatch)> {
    let (y0, y1) = (c.y_min, if c.y_max > c.y_min { c.y_max } else { c.y_min + 1.0 });
    let all: Vec<Cell> = c.panels.iter().flat_map(|p| cells(p, y0, y1)).collect();
    let mut out: Vec<(String, Swatch)> = [Class::Stable, Class::Vulnerable, Class::Metastable]
        .into_iter()
        .filter(|k| all.iter().any(|c| c.class == *k && c.y1 > c.y0))
        .map(|k| (k.label().to_string(), Swatch::Fill(k.fill())))
        .collect();
    let blank = c.panels.iter().any(|p| {
        let xs: Vec<f64> = p.points.iter().map(|q| q.0).collect();
        let (a, b) = x_range(&xs);
        let covered: f64 = columns(&xs).iter().map(|(l, r)| r - l).sum();
        covered < (b - a) * 0.999
    });
    if blank {
        out.push(("blank: not measured".into(), Swatch::Fill(WHITE)));
    }
    if c.panels.iter().any(|p| p.points.iter().any(|q| q.1.is_some_and(|b| b > 0.0))) {
        out.push((
            "boundary: the smallest trigger that does not recover, with its 95% interval (in the variant's colour)"
                .into(),
            Swatch::Boundary,
        ));
    }
    out
}

/// Reads `dir/frontier.json` into what the chart shows.
pub fn read_frontier(dir: &Path) -> anyhow::Result<Frontier> {
    let doc = read(&dir.join("frontier.json"))?;
    let e = &doc["experiment"];
    let trigger = e["trigger"].as_str().unwrap_or("trigger").to_string();
    let sizes: Vec<f64> =
        e["sizes"].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default();
    let loads = e["loads"].as_array().map_or(0, Vec::len);
    let lengths: Vec<f64> =
        e["lengths_s"].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default();
    // x: load, unless there is one load and several lengths.
    let by_length = loads <= 1 && lengths.len() > 1;
    let first_length = lengths.first().copied();
    let mut panels: Vec<Panel> = Vec::new();
    for (vi, name) in e["variants"].as_array().cloned().unwrap_or_default().iter().enumerate() {
        let name = name.as_str().unwrap_or("").to_string();
        let mut points = Vec::new();
        for r in doc["rows"].as_array().into_iter().flatten().filter(|r| r["variant"].as_str() == Some(&name)) {
            let length = r["length_s"].as_f64();
            // Several lengths and loads: the panel shows the first length.
            if !by_length && length != first_length {
                continue;
            }
            let x = if by_length { length.unwrap_or(0.0) } else { r["load_scale"].as_f64().unwrap_or(0.0) };
            points.push((x, r["boundary"].as_f64(), r["boundary_lo"].as_f64(), r["boundary_hi"].as_f64()));
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        panels.push(Panel { name, color: vi, points });
    }
    let unit = match trigger.as_str() {
        "spike" => "arrival rate multiplier",
        "brownout" => "share of capacity removed",
        "slowdown" => "service time multiplier",
        _ => "outage length (s)",
    };
    let length_words = match (by_length, first_length) {
        (true, _) => String::new(),
        (false, Some(l)) => format!(" for {l} s"),
        (false, None) => String::new(),
    };
    Ok(Frontier {
        title: format!(
            "{}: the smallest {trigger}{length_words} that does not recover (boundary and 95% interval)",
            e["name"].as_str().unwrap_or("")
        ),
        x_label: if by_length { "trigger length (s)".into() } else { "load_scale".into() },
        y_label: unit.into(),
        y_min: sizes.first().copied().unwrap_or(0.0),
        y_max: sizes.last().copied().unwrap_or(1.0),
        panels,
    })
}

/// Draws `frontier.png` and `frontier.svg` from `dir/frontier.json` into `out`.
pub fn frontier_chart(dir: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
    frontier_chart_sized(dir, out, super::draw::SIZE)
}

/// [`frontier_chart`] at `size` pixels.
pub fn frontier_chart_sized(dir: &Path, out: &Path, size: (u32, u32)) -> anyhow::Result<Vec<String>> {
    let chart = read_frontier(dir)?;
    save_with(&chart, out, "frontier", size)?;
    super::record::add(out, super::record::FRONTIER, &["frontier".to_string()])?;
    Ok(vec!["frontier".into()])
}

/// The layout of the frontier chart: title, panels, and the key below.
pub fn frontier_layout(c: &Frontier, size: (u32, u32)) -> Layout {
    let s = Scale::of(size);
    let (w, h) = (size.0 as i32, size.1 as i32);
    let texts: Vec<String> = key(c).into_iter().map(|e| e.0).collect();
    let font = s.px(15.0);
    let (mut entries, lh) = legend_rows(&texts, s.margin(), w - 2 * s.margin(), font, s);
    let chart_y1 = h - lh;
    for e in entries.iter_mut() {
        e.rect.y0 += chart_y1;
        e.rect.y1 += chart_y1;
    }
    let title = Rect { x0: 0, y0: 0, x1: w, y1: s.title_h() };
    let chart = Rect { x0: 0, y0: title.y1, x1: w, y1: chart_y1 };
    let legend = if entries.is_empty() {
        Rect { x0: 0, y0: h, x1: w, y1: h }
    } else {
        Rect { x0: s.margin(), y0: chart_y1, x1: w - s.margin(), y1: h - s.px(2.0) }
    };
    let entries: Vec<Entry> = entries;
    Layout {
        size,
        scale: s,
        title,
        strip: Rect { y1: title.y1, ..title },
        chart,
        plot: chart,
        legend,
        entries,
        labels: Vec::new(),
        legend_font: font,
    }
}

impl Drawable for Frontier {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, size: (u32, u32)) -> DrawResult<DB> {
        draw(root, self, size)
    }
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &Frontier, size: (u32, u32)) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let l = frontier_layout(c, size);
    let s = l.scale;
    let t = l.title;
    let font = ("sans-serif", title_size(&c.title, t.width(), s))
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new(c.title.clone(), ((t.x0 + t.x1) / 2, (t.y0 + t.y1) / 2 + s.px(4.0)), font))?;
    let area = root.clone().shrink((l.chart.x0, l.chart.y0), (l.chart.width() as u32, l.chart.height() as u32));
    let n = c.panels.len().max(1);
    let cols = n.min(3);
    let rows = n.div_ceil(cols);
    let areas = area.split_evenly((rows, cols));
    let (y0, y1) = (c.y_min, if c.y_max > c.y_min { c.y_max } else { c.y_min + 1.0 });
    for (panel, area) in c.panels.iter().zip(areas) {
        let xs: Vec<f64> = panel.points.iter().map(|p| p.0).collect();
        let (x0, x1) = x_range(&xs);
        let mut chart = ChartBuilder::on(&area)
            .caption(&panel.name, ("sans-serif", s.px(18.0)).into_font().color(&color(panel.color)))
            .margin(s.px(10.0))
            .x_label_area_size(s.px(40.0))
            .y_label_area_size(s.px(60.0))
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(&c.x_label)
            .y_desc(&c.y_label)
            .label_style(("sans-serif", s.px(13.0)))
            .axis_desc_style(("sans-serif", s.px(14.0)))
            .set_all_tick_mark_size(s.px(4.0))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(RGBColor(225, 225, 225))
            .draw()?;
        for cell in cells(panel, y0, y1) {
            if cell.y1 > cell.y0 {
                let r = Rectangle::new([(cell.x0, cell.y0), (cell.x1, cell.y1)], cell.class.fill().filled());
                chart.draw_series(std::iter::once(r))?;
            }
        }
        let col = color(panel.color);
        let finite: Vec<(f64, f64, f64, f64)> = panel
            .points
            .iter()
            .filter_map(|&(x, b, lo, hi)| {
                let b = b.filter(|b| *b > 0.0)?;
                Some((x, b, lo.unwrap_or(y0).max(y0), hi.unwrap_or(y1).min(y1)))
            })
            .collect();
        if finite.len() > 1 {
            let mut poly: Vec<(f64, f64)> = finite.iter().map(|p| (p.0, p.3)).collect();
            poly.extend(finite.iter().rev().map(|p| (p.0, p.2)));
            chart.draw_series(std::iter::once(Polygon::new(poly, col.mix(0.25).filled())))?;
            chart.draw_series(LineSeries::new(finite.iter().map(|p| (p.0, p.1)), col.stroke_width(s.line() as u32)))?;
        }
        for p in &finite {
            let bar = PathElement::new(vec![(p.0, p.2), (p.0, p.3)], col.stroke_width(s.px(2.0) as u32));
            chart.draw_series(std::iter::once(bar))?;
            chart.draw_series(std::iter::once(Circle::new((p.0, p.1), s.px(5.0), col.filled())))?;
        }
    }
    let swatches: Vec<Swatch> = key(c).into_iter().map(|e| e.1).collect();
    draw_legend(root, &l, &swatches)
}

/// Draws `collapse_rate.png`/`.svg` from `dir/collapse-rate.json` into `out`.
pub fn collapse_chart(dir: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
    let doc = read(&dir.join("collapse-rate.json"))?;
    let variants = doc["variants"].as_array().cloned().unwrap_or_default();
    let names: Vec<String> = variants.iter().map(|v| v["name"].as_str().unwrap_or("").to_string()).collect();
    let values: Vec<Option<BarValue>> = variants
        .iter()
        .map(|v| {
            let c = &v["collapses_per_hour"];
            let ci95 = match (c["ci95"][0].as_f64(), c["ci95"][1].as_f64()) {
                (Some(lo), Some(hi)) => Some((lo, hi)),
                _ => None,
            };
            c["mean"].as_f64().map(|mean| BarValue { mean, ci95 })
        })
        .collect();
    let chart = Chart::Bars(BarChart {
        title: format!(
            "{}: spontaneous collapses per hour (mean and 95% interval)",
            doc["experiment"]["name"].as_str().unwrap_or("")
        ),
        y_label: "collapses per hour".into(),
        categories: names,
        series: vec![BarSeries { name: "collapses per hour (bar: 95% interval)".into(), color: 0, values }],
    });
    save(&chart, out, "collapse_rate")?;
    super::record::add(out, super::record::COLLAPSE_RATE, &["collapse_rate".to_string()])?;
    Ok(vec!["collapse_rate".into()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frontier(points: Vec<Point>) -> Frontier {
        Frontier {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            y_min: 1.0,
            y_max: 3.0,
            panels: vec![Panel { name: "a".into(), color: 0, points }],
        }
    }

    #[test]
    fn one_measured_load_shades_only_its_own_column() {
        let c = frontier(vec![(1.0, None, None, None)]);
        let (x0, x1) = x_range(&[1.0]);
        assert!((x0 - 0.5).abs() < 1e-9 && (x1 - 1.5).abs() < 1e-9, "{x0}..{x1}");
        let cells = cells(&c.panels[0], 1.0, 3.0);
        assert_eq!(cells.len(), 1);
        assert!((cells[0].x0 - 0.9).abs() < 1e-12 && (cells[0].x1 - 1.1).abs() < 1e-12, "{cells:?}");
        assert_eq!(cells[0].class, Class::Stable);
        // Every class shaded has a swatch, and the blank is named.
        let k: Vec<String> = key(&c).into_iter().map(|e| e.0).collect();
        assert_eq!(k, ["recovers (stable)", "blank: not measured"]);
    }

    #[test]
    fn columns_are_as_wide_as_the_gaps_to_their_neighbours() {
        let close = |a: Vec<(f64, f64)>, b: &[(f64, f64)]| {
            a.len() == b.len() && a.iter().zip(b).all(|(p, q)| (p.0 - q.0).abs() < 1e-9 && (p.1 - q.1).abs() < 1e-9)
        };
        assert!(close(columns(&[0.6, 0.8, 1.2]), &[(0.5, 0.7), (0.7, 0.9), (1.0, 1.4)]));
        let c = frontier(vec![(0.6, Some(2.0), Some(1.8), Some(2.2)), (0.8, Some(0.0), None, None)]);
        let cells = cells(&c.panels[0], 1.0, 3.0);
        let classes: Vec<Class> = cells.iter().map(|c| c.class).collect();
        assert_eq!(classes, [Class::Stable, Class::Vulnerable, Class::Metastable]);
        assert!(cells.iter().all(|c| c.x0 >= 0.5 - 1e-12 && c.x1 <= 0.9 + 1e-12));
        let swatches: Vec<Swatch> = key(&c).into_iter().map(|e| e.1).collect();
        for class in [Class::Stable, Class::Vulnerable, Class::Metastable] {
            assert!(swatches.contains(&Swatch::Fill(class.fill())), "{class:?} has no swatch");
        }
        assert!(swatches.contains(&Swatch::Boundary));
    }

    #[test]
    fn the_key_is_below_the_panels_and_text_grows_with_the_size() {
        let c = frontier(vec![(1.0, Some(2.0), Some(1.8), Some(2.2))]);
        let l = frontier_layout(&c, (1280, 720));
        assert!(l.legend.y0 >= l.chart.y1 && !l.entries.is_empty());
        assert!(l.entries.iter().all(|e| !e.rect.intersects(&l.chart)));
        let big = frontier_layout(&c, (1920, 1080));
        assert!(big.legend_font > l.legend_font);
    }
}
