//! The report of a sweep: what was swept, each variant's knee, the charts
//! and a table of every point with its intervals.

use super::{Page, charts_section};
use crate::charts::Drawn;
use crate::charts::names::key_axis;
use crate::output::columns::column_of;
use crate::output::sweep::SweepDoc;
use crate::output::table::cell;
use std::path::Path;

/// The table's metrics.
const COLUMNS: [&str; 5] = ["success_rate", "goodput_per_s", "attempts_per_intent", "amplification", "latency_p99_s"];

/// Writes `report.html` and `report.md` into `out` for the sweep in `dir`.
pub fn write_sweep_report(dir: &Path, out: &Path, drawn: &Drawn) -> anyhow::Result<()> {
    let text = crate::config::read::read_text(&dir.join("sweep.json"), crate::config::read::MAX_DATA_BYTES)?;
    let doc: SweepDoc = serde_json::from_str(&text)?;
    let mut page = Page::new(&format!("Sweep: {}", doc.experiment.name));
    let params: Vec<String> =
        doc.params.iter().map(|p| format!("{} ({}) over {}", key_axis(&p.key), p.key, p.values.join(", "))).collect();
    page.para(&format!(
        "{}, {} per variant and point, seed {}, from {}. Swept: {}.",
        crate::words::plural(doc.experiment.grid_points as usize, "grid point"),
        crate::words::plural(doc.experiment.replications as usize, "replication"),
        doc.experiment.seed,
        doc.experiment.file,
        params.join("; ")
    ));
    page.h2("Knees");
    let cond = format!("{} {} {}", doc.knee.metric, doc.knee.op, doc.knee.threshold);
    if doc.knees.is_empty() {
        page.para(&format!(
            "No knees: they are found only over exactly one parameter (here {}). The knee condition is {cond}.",
            doc.params.len()
        ));
    } else {
        page.para(&format!("The knee is the last value before {cond} first fails, in grid order."));
        let items: Vec<String> = doc
            .knees
            .iter()
            .map(|k| match &k.value {
                Some(v) => format!("\"{}\": {} = {v}", k.variant, k.param),
                None => format!("\"{}\": the condition fails already at the first point", k.variant),
            })
            .collect();
        page.list(&items);
    }
    charts_section(&mut page, out, drawn)?;
    page.h2("Every point");
    page.para("Each cell is the mean ± the half-width of its 95% confidence interval over the replications.");
    let mut header: Vec<String> = doc.params.iter().map(|p| p.key.clone()).collect();
    header.push("variant".into());
    let cols: Vec<_> = COLUMNS.iter().filter_map(|m| column_of(m)).collect();
    header.extend(cols.iter().map(|c| c.header.to_string()));
    let mut rows = Vec::new();
    for p in &doc.points {
        for v in &p.variants {
            let mut r: Vec<String> = p.values.iter().map(|(_, x)| x.clone()).collect();
            r.push(v.name.clone());
            for c in &cols {
                let m = v.metrics.get(c.metric);
                let s = m.map(|m| crate::analysis::Summary {
                    mean: m.mean,
                    ci95: m.ci95.map(|[a, b]| (a, b)),
                    values: Vec::new(),
                });
                r.push(cell(s.as_ref(), m.and_then(|m| m.reason.as_deref()), c.style));
            }
            rows.push(r);
        }
    }
    page.table(&header, &rows);
    page.write(out)
}
