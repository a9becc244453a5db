//! One report page written twice: as self-contained HTML (inline SVG
//! charts, styles in the page, no scripts or links) and as Markdown (PNG
//! charts beside it), with every name escaped for each.

use std::fmt::Write as _;
use std::path::Path;

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

use crate::output::markdown::{cell as md_cell, escape as md};

/// The page's styles: the text column fits a laptop screen, tables scroll
/// sideways inside their own box rather than widen the page, cells keep a
/// value on one line, charts scale to the column.
const STYLE: &str = "body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}\
.table{overflow-x:auto;max-width:100%;margin:1em 0}table{border-collapse:collapse;font-size:.9em}\
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right;white-space:nowrap}\
td:first-child,th:first-child{text-align:left}\
pre{background:#f6f6f6;padding:1em;overflow:auto;max-width:100%;box-sizing:border-box;white-space:pre-wrap;overflow-wrap:anywhere}\
figure{margin:2em 0}svg{display:block;width:100%;max-width:100%;height:auto}\
figcaption{color:#444;margin-top:.5em}p,li{overflow-wrap:anywhere}";

/// A report page being written.
pub struct Page {
    html: String,
    md: String,
}

impl Page {
    /// A page with this title.
    pub fn new(title: &str) -> Page {
        let mut html = String::new();
        let _ = write!(
            html,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{t}</title>\n\
<style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n",
            t = esc(title)
        );
        Page { html, md: format!("# {}\n\n", md(title)) }
    }

    /// A section heading.
    pub fn h2(&mut self, text: &str) {
        let _ = writeln!(self.html, "<h2>{}</h2>", esc(text));
        let _ = write!(self.md, "## {}\n\n", md(text));
    }

    /// A paragraph of plain text.
    pub fn para(&mut self, text: &str) {
        let _ = writeln!(self.html, "<p>{}</p>", esc(text));
        let _ = write!(self.md, "{}\n\n", md(text));
    }

    /// A bulleted list of plain-text items.
    pub fn list(&mut self, items: &[String]) {
        self.html.push_str("<ul>\n");
        for i in items {
            let _ = writeln!(self.html, "<li>{}</li>", esc(i));
            let _ = writeln!(self.md, "- {}", md(i));
        }
        self.html.push_str("</ul>\n");
        self.md.push('\n');
    }

    /// A table: the first column left-aligned, the others right-aligned.
    pub fn table(&mut self, header: &[String], rows: &[Vec<String>]) {
        self.html.push_str("<div class=\"table\"><table>\n<tr>");
        for h in header {
            let _ = write!(self.html, "<th>{}</th>", esc(h));
        }
        self.html.push_str("</tr>\n");
        for r in rows {
            self.html.push_str("<tr>");
            for c in r {
                let _ = write!(self.html, "<td>{}</td>", esc(c));
            }
            self.html.push_str("</tr>\n");
        }
        self.html.push_str("</table></div>\n");
        let cells = |r: &[String]| r.iter().map(|c| md_cell(c)).collect::<Vec<_>>().join(" | ");
        let _ = writeln!(self.md, "| {} |", cells(header));
        let _ = writeln!(self.md, "|---|{}", "---:|".repeat(header.len().saturating_sub(1)));
        for r in rows {
            let _ = writeln!(self.md, "| {} |", cells(r));
        }
        self.md.push('\n');
    }

    /// A chart: `<stem>.svg` from `dir` inline in the HTML, `<stem>.png`
    /// linked in the Markdown, both with the caption.
    pub fn figure(&mut self, dir: &Path, stem: &str, caption: &str) -> anyhow::Result<()> {
        let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg")))?;
        let svg = svg.trim_start_matches(|c| c != '<');
        let _ = write!(
            self.html,
            "<figure id=\"{n}\">\n{svg}\n<figcaption>{c} <code>{n}.png</code></figcaption></figure>\n",
            n = esc(stem),
            c = esc(caption)
        );
        let _ = write!(self.md, "![{}]({stem}.png)\n\n*{}*\n\n", md(stem), md(caption));
        Ok(())
    }

    /// A block of source text.
    pub fn code(&mut self, lang: &str, text: &str) {
        let _ = writeln!(self.html, "<pre>{}</pre>", esc(text));
        let fence = if text.contains("```") { "~~~~" } else { "```" };
        let nl = if text.ends_with('\n') { "" } else { "\n" };
        let _ = write!(self.md, "{fence}{lang}\n{text}{nl}{fence}\n");
    }

    /// Writes `report.html` and `report.md` into `out`.
    pub fn write(mut self, out: &Path) -> anyhow::Result<()> {
        self.html.push_str("</body></html>\n");
        std::fs::create_dir_all(out)?;
        crate::output::write_atomic(&out.join("report.html"), self.html.as_bytes(), &[])?;
        crate::output::write_atomic(&out.join("report.md"), self.md.as_bytes(), &[])?;
        Ok(())
    }
}
