//! Where everything of a chart goes, decided before drawing so that it can
//! be checked: the title, a strip of mark labels (knees, the end of the
//! arrivals) above the plot, stacked in rows so that no two labels
//! overlap, the plot area, and the legend in a column to the right of the
//! plot, outside the data.

/// A pixel rectangle, `x0..x1` by `y0..y1` (ends excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
}

impl Rect {
    /// Whether the two rectangles share any pixel.
    pub fn intersects(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    /// Whether `o` lies inside this rectangle.
    pub fn contains(&self, o: &Rect) -> bool {
        o.x0 >= self.x0 && o.x1 <= self.x1 && o.y0 >= self.y0 && o.y1 <= self.y1
    }

    pub fn width(&self) -> i32 {
        self.x1 - self.x0
    }

    pub fn height(&self) -> i32 {
        self.y1 - self.y0
    }
}

/// Space around the plotters chart.
pub const MARGIN: i32 = 20;
/// Room left of the plot for the y ticks and the y axis name.
pub const Y_LABEL_AREA: i32 = 96;
/// Room under the plot for the x ticks and the x axis name.
pub const X_LABEL_AREA: i32 = 64;
/// Height of the title line.
pub const TITLE_H: i32 = 46;
/// Font size of mark labels and their row height.
pub const LABEL_FONT: i32 = 16;
pub const LABEL_ROW: i32 = 22;
/// Font size of legend entries (their line is 4 px taller).
pub const LEGEND_FONT: i32 = 17;
/// Width of a legend entry's swatch and the gap after it.
pub const SWATCH: i32 = 40;

/// A generous estimate of the width of `text` in DejaVu Sans at `font` px.
pub fn text_width(text: &str, font: i32) -> i32 {
    (text.chars().count() as f64 * font as f64 * 0.6).ceil() as i32 + 4
}

/// Splits `text` into lines of at most `chars` characters, at spaces.
pub fn wrap(text: &str, chars: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > chars {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

/// A vertical mark to label: its x in data units, its label and the
/// palette index of its colour (`None`: grey, a reference such as the end
/// of the arrivals).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub x: f64,
    pub label: String,
    pub color: Option<usize>,
}

/// A placed mark label: marks at the same pixel are merged into one label
/// that names them all.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub text: String,
    /// The marks' colours (the first is the label's).
    pub colors: Vec<Option<usize>>,
    /// The marks' x in pixels (all within a few pixels when merged).
    pub anchor: i32,
    pub rect: Rect,
    /// How many marks the label stands for.
    pub merged: usize,
}

/// One legend entry: its box and its text, wrapped.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub rect: Rect,
    pub lines: Vec<String>,
}

/// The layout of one chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub size: (u32, u32),
    pub title: Rect,
    /// The strip above the plot that holds the mark labels.
    pub strip: Rect,
    /// The area handed to plotters: axes, ticks and plot.
    pub chart: Rect,
    /// The plotting area (inside `chart`).
    pub plot: Rect,
    /// The legend column (empty when there is no legend).
    pub legend: Rect,
    pub entries: Vec<Entry>,
    pub labels: Vec<Placed>,
    /// The legend's font size (smaller when many entries must fit).
    pub legend_font: i32,
}

/// Marks this close in pixels are the same mark.
const SAME_PX: i32 = 4;

/// Merges labels of marks at the same place: `knee of A` and `knee of B`
/// become `knee of A, B (same x)`.
fn merged_text(labels: &[&str]) -> String {
    if labels.len() == 1 {
        return labels[0].to_string();
    }
    let prefix = labels[0].split_once(" of ").map(|(p, _)| format!("{p} of "));
    match prefix {
        Some(p) if labels.iter().all(|l| l.starts_with(&p)) => {
            let names: Vec<&str> = labels.iter().map(|l| &l[p.len()..]).collect();
            format!("{p}{} (same x)", names.join(", "))
        }
        _ => format!("{} (same x)", labels.join(" = ")),
    }
}

/// Lays out a chart of `size` with these legend entries and marks over
/// the x range `x_range` (data units, linear).
pub fn layout(size: (u32, u32), legend: &[String], marks: &[Mark], x_range: (f64, f64)) -> Layout {
    // The legend column: as wide as its longest entry, at most 30% of the
    // chart; wider, then in a smaller font, when it would not fit the height.
    let tries = [(0.3, LEGEND_FONT), (0.42, LEGEND_FONT), (0.42, 14), (0.5, 12), (0.5, 10)];
    let mut last = None;
    for (cap, font) in tries {
        let l = layout_with(size, legend, marks, x_range, cap, font);
        if l.legend.y1 <= size.1 as i32 {
            return l;
        }
        last = Some(l);
    }
    last.expect("at least one try")
}

fn layout_with(
    size: (u32, u32),
    legend: &[String],
    marks: &[Mark],
    x_range: (f64, f64),
    cap: f64,
    font: i32,
) -> Layout {
    let (w, h) = (size.0 as i32, size.1 as i32);
    let line_h = font + 4;
    let legend_w = if legend.is_empty() {
        0
    } else {
        let widest = legend.iter().map(|t| text_width(t, font)).max().unwrap_or(0);
        (widest + SWATCH + 16).clamp(170.min((w as f64 * cap) as i32), (w as f64 * cap) as i32)
    };
    let chart_x1 = if legend_w > 0 { w - legend_w - 6 } else { w };
    let plot_x0 = MARGIN + Y_LABEL_AREA;
    let plot_x1 = chart_x1 - MARGIN;
    let (x0, x1) = x_range;
    let to_px = |x: f64| {
        let span = if x1 > x0 { x1 - x0 } else { 1.0 };
        plot_x0 + ((x - x0) / span * (plot_x1 - plot_x0) as f64).round() as i32
    };
    // Marks left to right; those at the same pixel become one label.
    let mut sorted: Vec<(i32, &Mark)> = marks.iter().map(|m| (to_px(m.x), m)).collect();
    sorted.sort_by_key(|(px, _)| *px);
    let mut groups: Vec<Vec<(i32, &Mark)>> = Vec::new();
    for m in sorted {
        match groups.last_mut() {
            Some(g) if m.0 - g[0].0 <= SAME_PX => g.push(m),
            _ => groups.push(vec![m]),
        }
    }
    // Each label goes into the first row where it overlaps nothing.
    let mut rows: Vec<Vec<(i32, i32)>> = Vec::new();
    // (label with its rect's x range, row).
    let mut pending: Vec<(Placed, usize)> = Vec::new();
    for g in &groups {
        let anchor = g[0].0;
        let text = merged_text(&g.iter().map(|(_, m)| m.label.as_str()).collect::<Vec<_>>());
        let tw = text_width(&text, LABEL_FONT) + 6;
        // Right of its mark, or left of it where it would leave the plot.
        let (a, b) = if anchor + tw <= plot_x1 { (anchor, anchor + tw) } else { ((anchor - tw).max(0), anchor) };
        let row = rows.iter().position(|r| r.iter().all(|&(c, d)| b + 4 <= c || d + 4 <= a)).unwrap_or_else(|| {
            rows.push(Vec::new());
            rows.len() - 1
        });
        rows[row].push((a, b));
        let colors: Vec<Option<usize>> = g.iter().map(|(_, m)| m.color).collect();
        let merged = colors.len();
        pending.push((Placed { text, colors, anchor, rect: Rect { x0: a, y0: 0, x1: b, y1: 0 }, merged }, row));
    }
    let strip_h = if rows.is_empty() { 0 } else { rows.len() as i32 * LABEL_ROW + 6 };
    let title = Rect { x0: 0, y0: 0, x1: w, y1: TITLE_H };
    let strip = Rect { x0: 0, y0: TITLE_H, x1: chart_x1, y1: TITLE_H + strip_h };
    let chart = Rect { x0: 0, y0: strip.y1, x1: chart_x1, y1: h };
    let plot = Rect { x0: plot_x0, y0: chart.y0 + MARGIN, x1: plot_x1, y1: h - MARGIN - X_LABEL_AREA };
    let labels = pending
        .into_iter()
        .map(|(mut p, row)| {
            p.rect.y0 = strip.y0 + 3 + row as i32 * LABEL_ROW;
            p.rect.y1 = p.rect.y0 + LABEL_ROW - 2;
            p
        })
        .collect();
    // The legend: entries wrapped to the column, top-aligned with the plot.
    let chars = ((legend_w - SWATCH - 12) as f64 / (font as f64 * 0.6)).floor().max(8.0) as usize;
    let lx0 = chart_x1 + 6;
    let mut y = TITLE_H + 4;
    let entries: Vec<Entry> = legend
        .iter()
        .map(|t| {
            let lines = wrap(t, chars);
            let eh = lines.len() as i32 * line_h + 5;
            let e = Entry { rect: Rect { x0: lx0 + 6, y0: y, x1: w - 6, y1: y + eh }, lines };
            y += eh;
            e
        })
        .collect();
    let legend = if legend.is_empty() {
        Rect { x0: w, y0: TITLE_H, x1: w, y1: TITLE_H }
    } else {
        Rect { x0: lx0, y0: TITLE_H, x1: w - 2, y1: y + 6 }
    };
    Layout { size, title, strip, chart, plot, legend, entries, labels, legend_font: font }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(x: f64, label: &str, color: usize) -> Mark {
        Mark { x, label: label.into(), color: Some(color) }
    }

    #[test]
    fn close_labels_are_stacked_and_never_overlap() {
        let marks: Vec<Mark> =
            (0..6).map(|i| mark(0.8 + 0.01 * i as f64, &format!("knee of variant {i}"), i)).collect();
        let l = layout((1280, 720), &["a".into()], &marks, (0.5, 1.5));
        assert_eq!(l.labels.len(), 6);
        for (i, a) in l.labels.iter().enumerate() {
            assert!(l.strip.contains(&a.rect), "{a:?} outside the strip {:?}", l.strip);
            assert!(!a.rect.intersects(&l.plot), "label over the plot");
            for b in &l.labels[i + 1..] {
                assert!(!a.rect.intersects(&b.rect), "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn coinciding_marks_become_one_label_naming_both() {
        let marks = [mark(0.8, "knee of no retries", 0), mark(0.8, "knee of immediate", 1), mark(1.2, "knee of x", 2)];
        let l = layout((1280, 720), &[], &marks, (0.5, 1.5));
        assert_eq!(l.labels.len(), 2);
        assert_eq!(l.labels[0].text, "knee of no retries, immediate (same x)");
        assert_eq!(l.labels[0].merged, 2);
        assert_eq!(l.labels[0].colors, vec![Some(0), Some(1)]);
    }

    #[test]
    fn the_legend_is_outside_the_plot_and_holds_long_names() {
        let names: Vec<String> = (0..16).map(|i| format!("variant number {i} with a rather long name")).collect();
        let l = layout((1280, 720), &names, &[], (0.0, 1.0));
        assert!(!l.legend.intersects(&l.plot));
        assert!(!l.legend.intersects(&l.chart));
        assert!(l.entries.iter().all(|e| l.legend.contains(&e.rect)));
        assert!(l.legend.y1 <= 720, "legend taller than the chart: {:?}", l.legend);
        assert!(l.plot.width() > 600, "plot too narrow: {:?}", l.plot);
    }

    #[test]
    fn a_label_at_the_right_edge_turns_left() {
        let l = layout((1280, 720), &[], &[mark(1.5, "knee of something long", 0)], (0.5, 1.5));
        assert!(l.labels[0].rect.x1 <= l.plot.x1 + 1);
    }
}
