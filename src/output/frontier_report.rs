//! `report.html` and `report.md` of a frontier or collapse-rate folder:
//! the table, one sentence per row or variant, and the chart.

use super::collapse_rate::CollapseDoc;
use super::frontier::FrontierDoc;
use super::shards::ShardedDoc as _;
use std::path::Path;

/// Whether `dir` is a frontier or collapse-rate folder.
pub fn applies(dir: &Path) -> bool {
    dir.join("frontier.json").is_file() || dir.join("collapse-rate.json").is_file()
}

/// The rows of a Markdown table (`| a | b |` lines, the rule left out).
fn table_rows(markdown: &str) -> Vec<Vec<String>> {
    markdown
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---"))
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().replace("\\|", "|").replace("\\", "")).collect())
        .collect()
}

/// Writes into `out` the report of the frontier or collapse-rate folder
/// `dir`, whose charts `chart_names` are drawn in `out`: the question, the
/// answer (one sentence per row or variant), the table, the charts.
pub fn write_report(dir: &Path, out: &Path, chart_names: &[String]) -> anyhow::Result<()> {
    let read = |f: &str| crate::config::read::read_text(&dir.join(f), crate::config::read::MAX_DATA_BYTES);
    let (title, question, table_md, sentences) = if dir.join("frontier.json").is_file() {
        let doc: FrontierDoc = serde_json::from_str(&read("frontier.json")?)?;
        let e = &doc.experiment;
        let sentences: Vec<String> = doc.rows.iter().map(|r| format!("{}: {}.", r.variant, r.sentence)).collect();
        let question = format!(
            "From what {} size does each design stop recovering by itself within {} s (in at least half of {} replications)?",
            e.trigger.label(),
            e.horizon_s,
            e.replications
        );
        (format!("{}: metastability frontier ({})", e.name, e.trigger.label()), question, doc.to_table(true), sentences)
    } else {
        let doc: CollapseDoc = serde_json::from_str(&read("collapse-rate.json")?)?;
        let sentences: Vec<String> = doc.variants.iter().map(|v| format!("{}: {}.", v.name, doc.sentence(v))).collect();
        let question =
            "How often does each design tip over into a lasting collapse on its own, at steady load?".to_string();
        (format!("{}: spontaneous collapses", doc.experiment.name), question, doc.to_table(true), sentences)
    };
    let mut page = super::report::Page::new(&title);
    page.h2("Question");
    page.para(&question);
    page.h2("Answer");
    page.list(&sentences);
    page.h2("Table");
    let mut rows = table_rows(&table_md);
    if !rows.is_empty() {
        let header = rows.remove(0);
        page.table(&header, &rows);
    }
    page.h2("Charts");
    for name in chart_names {
        page.figure(out, name, name)?;
    }
    page.write(out)
}
