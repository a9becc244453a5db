//! The vulnerability-region chart of a frontier (`frontier.png`/`.svg`):
//! one panel per variant, load on x, trigger size on y; below the boundary
//! the design recovers (stable), above it it does not (vulnerable), and a
//! load where it does not recover even without a trigger is metastable at
//! steady load. The boundary's 95% interval is the band around it. And the
//! bar chart of a collapse-rate folder.

use super::bars::{BarChart, BarSeries, BarValue};
use super::draw::{Chart, color, register_font, save};
use anyhow::Context;
use plotters::coord::Shift;
use plotters::prelude::*;
use serde_json::Value;
use std::path::Path;

/// Chart size in pixels.
const SIZE: (u32, u32) = (1280, 720);

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
struct Panel {
    name: String,
    color: usize,
    points: Vec<Point>,
}

struct Frontier {
    title: String,
    x_label: String,
    y_label: String,
    y_max: f64,
    y_min: f64,
    panels: Vec<Panel>,
}

/// Draws `frontier.png` and `frontier.svg` from `dir/frontier.json` into `out`.
pub fn frontier_chart(dir: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
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
    let chart = Frontier {
        title: format!(
            "{}: the smallest {trigger}{length_words} that does not recover (boundary and 95% interval)",
            e["name"].as_str().unwrap_or("")
        ),
        x_label: if by_length { "trigger length (s)".into() } else { "load_scale".into() },
        y_label: unit.into(),
        y_min: sizes.first().copied().unwrap_or(0.0),
        y_max: sizes.last().copied().unwrap_or(1.0),
        panels,
    };
    register_font();
    std::fs::create_dir_all(out)?;
    let tmp = out.join(format!(".frontier.tmp-{}.png", std::process::id()));
    {
        let root = BitMapBackend::new(&tmp, SIZE).into_drawing_area();
        draw(&root, &chart).map_err(|e| anyhow::anyhow!("drawing frontier.png: {e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("writing frontier.png: {e}"))?;
    }
    crate::output::files::install(&tmp, &out.join("frontier.png"), &[])?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(&root, &chart).map_err(|e| anyhow::anyhow!("drawing frontier.svg: {e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("writing frontier.svg: {e}"))?;
    }
    crate::output::write_atomic(&out.join("frontier.svg"), svg.as_bytes(), &[])?;
    Ok(vec!["frontier".into()])
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &Frontier) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let root = root.titled(&c.title, ("sans-serif", 22))?;
    let n = c.panels.len().max(1);
    let cols = n.min(3);
    let rows = n.div_ceil(cols);
    let areas = root.split_evenly((rows, cols));
    let (y0, y1) = (c.y_min, if c.y_max > c.y_min { c.y_max } else { c.y_min + 1.0 });
    for (panel, area) in c.panels.iter().zip(areas) {
        let xs: Vec<f64> = panel.points.iter().map(|p| p.0).collect();
        let (xa, xb) = match (xs.first(), xs.last()) {
            (Some(&a), Some(&b)) if b > a => (a, b),
            (Some(&a), _) => (a - 0.5, a + 0.5),
            _ => (0.0, 1.0),
        };
        let pad = (xb - xa) * 0.04;
        let (x0, x1) = (xa - pad, xb + pad);
        let mut chart = ChartBuilder::on(&area)
            .caption(&panel.name, ("sans-serif", 18).into_font().color(&color(panel.color)))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(&c.x_label)
            .y_desc(&c.y_label)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()?;
        // Regions: a column per point, from halfway to its neighbours.
        for (i, &(x, b, _, _)) in panel.points.iter().enumerate() {
            let left = if i == 0 { x0 } else { (panel.points[i - 1].0 + x) / 2.0 };
            let right = if i + 1 == panel.points.len() { x1 } else { (panel.points[i + 1].0 + x) / 2.0 };
            match b {
                None => {
                    chart.draw_series(std::iter::once(Rectangle::new([(left, y0), (right, y1)], STABLE.filled())))?
                }
                Some(b) if b <= 0.0 => chart
                    .draw_series(std::iter::once(Rectangle::new([(left, y0), (right, y1)], METASTABLE.filled())))?,
                Some(b) => {
                    chart.draw_series(std::iter::once(Rectangle::new([(left, y0), (right, b)], STABLE.filled())))?;
                    chart.draw_series(std::iter::once(Rectangle::new([(left, b), (right, y1)], VULNERABLE.filled())))?
                }
            };
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
            chart.draw_series(LineSeries::new(finite.iter().map(|p| (p.0, p.1)), col.stroke_width(3)))?;
        }
        for p in &finite {
            chart.draw_series(std::iter::once(PathElement::new(vec![(p.0, p.2), (p.0, p.3)], col.stroke_width(2))))?;
            chart.draw_series(std::iter::once(Circle::new((p.0, p.1), 5, col.filled())))?;
        }
    }
    // The key, in the last row's free space or over the last panel.
    let key = [
        (STABLE, "recovers (stable)"),
        (VULNERABLE, "does not recover (vulnerable)"),
        (METASTABLE, "does not recover even without a trigger"),
    ];
    let (w, h) = root.dim_in_pixel();
    for (i, (fill, label)) in key.iter().enumerate() {
        let x = (w as i32) - 330;
        let y = (h as i32) - 80 + 22 * i as i32;
        root.draw(&Rectangle::new([(x, y), (x + 18, y + 14)], fill.filled()))?;
        root.draw(&Text::new(label.to_string(), (x + 24, y), ("sans-serif", 14)))?;
    }
    Ok(())
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
    Ok(vec!["collapse_rate".into()])
}
