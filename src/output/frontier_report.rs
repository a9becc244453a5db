//! `report.html` and `report.md` of a frontier or collapse-rate folder:
//! the table, one sentence per row or variant, and the chart.

use super::collapse_rate::CollapseDoc;
use super::frontier::FrontierDoc;
use super::shards::ShardedDoc as _;
use std::fmt::Write as _;
use std::path::Path;

/// Whether `dir` is a frontier or collapse-rate folder.
pub fn applies(dir: &Path) -> bool {
    dir.join("frontier.json").is_file() || dir.join("collapse-rate.json").is_file()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Writes into `out` the report of the frontier or collapse-rate folder
/// `dir`, whose charts `chart_names` are drawn in `out`.
pub fn write_report(dir: &Path, out: &Path, chart_names: &[String]) -> anyhow::Result<()> {
    let read = |f: &str| crate::config::read::read_text(&dir.join(f), crate::config::read::MAX_DATA_BYTES);
    let (title, table_md, sentences) = if dir.join("frontier.json").is_file() {
        let doc: FrontierDoc = serde_json::from_str(&read("frontier.json")?)?;
        let sentences: Vec<String> = doc.rows.iter().map(|r| format!("{}: {}.", r.variant, r.sentence)).collect();
        (
            format!("{}: metastability frontier ({})", doc.experiment.name, doc.experiment.trigger.label()),
            doc.to_table(true),
            sentences,
        )
    } else {
        let doc: CollapseDoc = serde_json::from_str(&read("collapse-rate.json")?)?;
        let sentences: Vec<String> = doc.variants.iter().map(|v| format!("{}: {}.", v.name, doc.sentence(v))).collect();
        (format!("{}: spontaneous collapses", doc.experiment.name), doc.to_table(true), sentences)
    };
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>body{{font-family:sans-serif;max-width:1300px;margin:2em auto;color:#222}}pre{{background:#f6f6f6;padding:1em;overflow:auto}}svg{{max-width:100%;height:auto}}</style></head><body>\n<h1>{t}</h1>\n<h2>Findings</h2>\n<ul>\n",
        t = esc(&title)
    );
    for s in &sentences {
        let _ = writeln!(html, "<li>{}</li>", esc(s));
    }
    let _ = write!(html, "</ul>\n<h2>Table</h2>\n<pre>{}</pre>\n<h2>Charts</h2>\n", esc(&table_md));
    for name in chart_names {
        let svg = std::fs::read_to_string(out.join(format!("{name}.svg")))?;
        let svg = svg.trim_start_matches(|c| c != '<');
        let _ = write!(html, "<figure id=\"{n}\">\n{svg}\n<figcaption>{n}</figcaption></figure>\n", n = esc(name));
    }
    html.push_str("</body></html>\n");
    let mut md = format!("# {title}\n\n## Findings\n\n");
    for s in &sentences {
        let _ = writeln!(md, "- {s}");
    }
    let _ = write!(md, "\n## Table\n\n{table_md}\n## Charts\n\n");
    for name in chart_names {
        let _ = writeln!(md, "![{name}]({name}.png)\n");
    }
    crate::output::write_atomic(&out.join("report.html"), html.as_bytes(), &[])?;
    crate::output::write_atomic(&out.join("report.md"), md.as_bytes(), &[])?;
    Ok(())
}
