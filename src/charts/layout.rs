//! Where everything of a chart goes, decided before drawing so that it can
//! be checked: the title, a strip of mark labels (knees, the end of the
//! arrivals) above the plot, stacked in rows so that no two labels
//! overlap, the plot area, and the legend below the plot, in as many
//! columns as fit, outside the data. Every size in pixels (fonts, margins,
//! line widths) grows with the chart ([`Scale`]), so a chart drawn for a
//! projector is as readable as one drawn at the default size.

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

    /// Whether the pixel (x, y) lies inside.
    pub fn holds(&self, x: i32, y: i32) -> bool {
        x >= self.x0 && x < self.x1 && y >= self.y0 && y < self.y1
    }

    pub fn width(&self) -> i32 {
        self.x1 - self.x0
    }

    pub fn height(&self) -> i32 {
        self.y1 - self.y0
    }
}

/// The default chart size, at which [`Scale`] is 1.
pub const BASE: (u32, u32) = (1280, 720);

/// How much larger than at [`BASE`] the text, margins and lines of a
/// chart of some size are drawn: the smaller of its width and height
/// ratios to 1280 × 720 (1.5 at 1920 × 1080, 3 at 3840 × 2160), at least
/// 0.6 so that a small chart keeps readable text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale(pub f64);

impl Scale {
    pub fn of(size: (u32, u32)) -> Scale {
        let k = (size.0 as f64 / BASE.0 as f64).min(size.1 as f64 / BASE.1 as f64);
        Scale(k.clamp(0.6, 6.0))
    }

    /// `v` pixels at the default size, at this scale (at least 1).
    pub fn px(self, v: f64) -> i32 {
        (v * self.0).round().max(1.0) as i32
    }

    /// Space around the plotters chart.
    pub fn margin(self) -> i32 {
        self.px(20.0)
    }
    /// Room left of the plot for the y ticks and the y axis name.
    pub fn y_label_area(self) -> i32 {
        self.px(96.0)
    }
    /// Room under the plot for the x ticks and the x axis name.
    pub fn x_label_area(self) -> i32 {
        self.px(64.0)
    }
    /// Height of the title line.
    pub fn title_h(self) -> i32 {
        self.px(46.0)
    }
    /// Font size of mark labels, and their row height.
    pub fn label_font(self) -> i32 {
        self.px(16.0)
    }
    pub fn label_row(self) -> i32 {
        self.px(22.0)
    }
    /// Font size of tick labels and of axis names.
    pub fn tick_font(self) -> i32 {
        self.px(18.0)
    }
    pub fn axis_font(self) -> i32 {
        self.px(21.0)
    }
    /// Width of a legend entry's swatch and the gap after it.
    pub fn swatch(self) -> i32 {
        self.px(40.0)
    }
    /// Width of a series' line.
    pub fn line(self) -> i32 {
        self.px(3.0)
    }
}

/// Font sizes of legend entries at the default size, largest first: a
/// legend that would take more than [`LEGEND_SHARE`] of the height gets a
/// smaller font.
pub const LEGEND_FONTS: [f64; 4] = [17.0, 14.0, 12.0, 10.0];
/// The largest share of the chart's height the legend may take.
pub const LEGEND_SHARE: f64 = 0.3;

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
    pub scale: Scale,
    pub title: Rect,
    /// The strip above the plot that holds the mark labels.
    pub strip: Rect,
    /// The area handed to plotters: axes, ticks and plot.
    pub chart: Rect,
    /// The plotting area (inside `chart`).
    pub plot: Rect,
    /// The legend, below `chart` (empty when there is no legend).
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

/// The legend entries placed in rows below the chart, left to right, in
/// as many equal columns as the widest entry allows (wrapped when even one
/// column is too narrow): the entries with their rectangles, starting at
/// y = 0, and the legend's height.
pub(super) fn legend_rows(texts: &[String], x0: i32, width: i32, font: i32, s: Scale) -> (Vec<Entry>, i32) {
    if texts.is_empty() {
        return (Vec::new(), 0);
    }
    let (pad, gap) = (s.px(6.0), s.px(16.0));
    let line_h = font + s.px(4.0);
    let widest = texts.iter().map(|t| text_width(t, font)).max().unwrap_or(0) + s.swatch() + gap;
    let cols = ((width / widest.max(1)) as usize).clamp(1, texts.len());
    // Down the columns first, so that the entries read in order.
    let rows = texts.len().div_ceil(cols);
    let cols = texts.len().div_ceil(rows);
    let cell = width / cols as i32;
    let chars = ((cell - s.swatch() - gap) as f64 / (font as f64 * 0.6)).floor().max(8.0) as usize;
    let wrapped: Vec<Vec<String>> = texts.iter().map(|t| wrap(t, chars)).collect();
    let mut entries: Vec<Entry> = Vec::new();
    let mut y = pad;
    for r in 0..rows {
        let in_row: Vec<usize> = (0..cols).map(|c| c * rows + r).filter(|&i| i < texts.len()).collect();
        let row_h = in_row.iter().map(|&i| wrapped[i].len() as i32).max().unwrap_or(1) * line_h + s.px(5.0);
        for &i in &in_row {
            let ex = x0 + (i / rows) as i32 * cell;
            entries.push(Entry {
                rect: Rect { x0: ex + pad, y0: y, x1: ex + cell, y1: y + row_h },
                lines: wrapped[i].clone(),
            });
        }
        y += row_h;
    }
    // Back in the order of the texts.
    entries.sort_by_key(|e| (e.rect.x0, e.rect.y0));
    (entries, y + pad)
}

/// Lays out a chart of `size` with these legend entries and marks over
/// the x range `x_range` (data units, linear).
pub fn layout(size: (u32, u32), legend: &[String], marks: &[Mark], x_range: (f64, f64)) -> Layout {
    let s = Scale::of(size);
    let (w, h) = (size.0 as i32, size.1 as i32);
    // The legend below the plot, across the whole width: in a smaller font
    // when it would take too much of the height.
    let mut placed = (Vec::new(), 0, s.px(LEGEND_FONTS[0]));
    for f in LEGEND_FONTS {
        let font = s.px(f);
        let (entries, lh) = legend_rows(legend, s.margin(), w - 2 * s.margin(), font, s);
        placed = (entries, lh, font);
        if lh as f64 <= h as f64 * LEGEND_SHARE {
            break;
        }
    }
    let (mut entries, legend_h, font) = placed;
    let chart_y1 = h - legend_h;
    let plot_x0 = s.margin() + s.y_label_area();
    let plot_x1 = w - s.margin();
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
    let sq = s.px(12.0);
    for g in &groups {
        let anchor = g[0].0;
        let text = merged_text(&g.iter().map(|(_, m)| m.label.as_str()).collect::<Vec<_>>());
        let squares = if g.len() > 1 { g.len() as i32 * sq } else { 0 };
        let tw = text_width(&text, s.label_font()) + s.px(6.0) + squares;
        // Right of its mark, or left of it where it would leave the plot.
        let (a, b) = if anchor + tw <= plot_x1 { (anchor, anchor + tw) } else { ((anchor - tw).max(0), anchor) };
        let sep = s.px(4.0);
        let row = rows.iter().position(|r| r.iter().all(|&(c, d)| b + sep <= c || d + sep <= a)).unwrap_or_else(|| {
            rows.push(Vec::new());
            rows.len() - 1
        });
        rows[row].push((a, b));
        let colors: Vec<Option<usize>> = g.iter().map(|(_, m)| m.color).collect();
        let merged = colors.len();
        pending.push((Placed { text, colors, anchor, rect: Rect { x0: a, y0: 0, x1: b, y1: 0 }, merged }, row));
    }
    let strip_h = if rows.is_empty() { 0 } else { rows.len() as i32 * s.label_row() + s.px(6.0) };
    let title = Rect { x0: 0, y0: 0, x1: w, y1: s.title_h() };
    let strip = Rect { x0: 0, y0: title.y1, x1: w, y1: title.y1 + strip_h };
    let chart = Rect { x0: 0, y0: strip.y1, x1: w, y1: chart_y1 };
    let plot =
        Rect { x0: plot_x0, y0: chart.y0 + s.margin(), x1: plot_x1, y1: chart.y1 - s.margin() - s.x_label_area() };
    let labels = pending
        .into_iter()
        .map(|(mut p, row)| {
            p.rect.y0 = strip.y0 + s.px(3.0) + row as i32 * s.label_row();
            p.rect.y1 = p.rect.y0 + s.label_row() - s.px(2.0);
            p
        })
        .collect();
    for e in &mut entries {
        e.rect.y0 += chart_y1;
        e.rect.y1 += chart_y1;
    }
    let legend = if entries.is_empty() {
        Rect { x0: 0, y0: h, x1: w, y1: h }
    } else {
        Rect { x0: s.margin(), y0: chart_y1, x1: w - s.margin(), y1: h - s.px(2.0) }
    };
    Layout { size, scale: s, title, strip, chart, plot, legend, entries, labels, legend_font: font }
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
    fn the_legend_is_below_the_plot_and_leaves_it_the_width() {
        // Nine entries, one of them long: the legend takes rows under the
        // plot, never its side, and no more than 30% of the height.
        let mut names: Vec<String> = (0..8).map(|i| format!("variant {i}")).collect();
        names.push("offered intents (dotted, in each variant's colour)".into());
        let l = layout((1280, 720), &names, &[], (0.0, 230.0));
        assert!(l.legend.y0 >= l.plot.y1 && l.legend.y0 >= l.chart.y1, "{l:?}");
        assert!(l.plot.width() > 1280 * 8 / 10, "the plot keeps the width: {:?}", l.plot);
        assert!(l.legend.height() as f64 <= 720.0 * LEGEND_SHARE);
        for (i, e) in l.entries.iter().enumerate() {
            assert!(l.legend.contains(&e.rect) && !e.rect.intersects(&l.plot));
            for f in &l.entries[i + 1..] {
                assert!(!e.rect.intersects(&f.rect), "{e:?} overlaps {f:?}");
            }
        }
        // Several columns, read down each column in order.
        let rows = l.entries.iter().filter(|e| e.rect.x0 == l.entries[0].rect.x0).count();
        assert!(rows < names.len());
        assert!(l.entries[0].rect.y0 < l.entries[1].rect.y0 && l.entries[0].rect.x0 == l.entries[1].rect.x0);
        assert!(l.entries[rows].rect.x0 > l.entries[0].rect.x0);
    }

    #[test]
    fn text_and_margins_grow_with_the_chart() {
        let names = vec!["a".to_string(), "b".to_string()];
        let small = layout((1280, 720), &names, &[mark(1.0, "arrivals end (1 s)", 0)], (0.0, 2.0));
        let big = layout((1920, 1080), &names, &[mark(1.0, "arrivals end (1 s)", 0)], (0.0, 2.0));
        assert_eq!(small.scale, Scale(1.0));
        assert_eq!(big.scale, Scale(1.5));
        assert!(big.legend_font as f64 >= small.legend_font as f64 * 1.45);
        assert!(big.title.height() as f64 >= small.title.height() as f64 * 1.45);
        assert!(big.labels[0].rect.height() > small.labels[0].rect.height());
        // A wide but short chart scales by its height.
        assert_eq!(Scale::of((3840, 720)), Scale(1.0));
    }

    #[test]
    fn a_label_at_the_right_edge_turns_left() {
        let l = layout((1280, 720), &[], &[mark(1.5, "knee of something long", 0)], (0.5, 1.5));
        assert!(l.labels[0].rect.x1 <= l.plot.x1 + 1);
    }
}
