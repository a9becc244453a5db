//! The report of a tune, from the `tune.json` that `retrysim tune` writes
//! into its output folder: the search, the winner and why it was chosen,
//! the candidates that tie with it, the Pareto front, the chart, and the
//! winner against the policies as written, scenario by scenario.

use super::Page;
use serde_json::Value;
use std::path::Path;

fn num(v: &Value) -> String {
    match v.as_f64() {
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) => format!("{x:.4}").trim_end_matches('0').trim_end_matches('.').to_string(),
        None => "—".into(),
    }
}

/// `{ mean, ci95 }` as `mean ± half-width`.
fn stat(v: &Value) -> String {
    let m = &v["mean"];
    match (m.as_f64(), v["ci95"][0].as_f64(), v["ci95"][1].as_f64()) {
        (Some(_), Some(lo), Some(hi)) => format!("{} ± {}", num(m), num(&Value::from((hi - lo) / 2.0))),
        _ => num(m),
    }
}

fn values(c: &Value) -> String {
    c["values"]
        .as_object()
        .map(|o| o.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

fn candidate_row(c: &Value) -> Vec<String> {
    vec![
        values(c),
        num(&c["objective"]),
        num(&c["worst"]["success_rate"]),
        num(&c["worst"]["amplification"]),
        num(&c["worst"]["latency_p99_s"]),
        if c["feasible"].as_bool() == Some(true) { "yes".into() } else { "no".into() },
    ]
}

const CANDIDATE_HEADER: [&str; 6] =
    ["values", "objective", "success (worst)", "amplification (worst)", "p99 s (worst)", "feasible"];

/// Writes `report.html` and `report.md` into `out` for the tune whose
/// `tune.json` (and `pareto.svg`/`.png`, when drawn) are in `dir`.
pub fn write_tune_report(dir: &Path, out: &Path) -> anyhow::Result<()> {
    let t: Value = crate::charts::read_json(&dir.join("tune.json"))?;
    let exp = t["experiment"].as_str().unwrap_or("");
    let mut page = Page::new(&format!("Tuning: {exp}"));
    let constraints: Vec<String> = t["constraints"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["text"].as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let edges: Vec<String> = t["edges"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    page.para(&format!(
        "Tuned {} to {} {} on the worst scenario, subject to {} (each on its 95% interval bound). Search: {}, {}, {}.",
        edges.join(" and "),
        t["objective"]["direction"].as_str().unwrap_or(""),
        t["objective"]["metric"].as_str().unwrap_or(""),
        if constraints.is_empty() { "no constraint".to_string() } else { constraints.join(", ") },
        t["search"]["method"].as_str().unwrap_or(""),
        crate::words::plural(t["search"]["candidates"].as_u64().unwrap_or(0) as usize, "candidate"),
        crate::words::plural(t["search"]["runs"].as_u64().unwrap_or(0) as usize, "run")
    ));
    page.h2("The winner");
    let w = &t["winner"];
    if w.is_object() {
        page.list(&[
            format!("Values: {}.", values(w)),
            format!("Chosen as: {}", w["chosen_by"].as_str().unwrap_or("")),
            format!(
                "Worst scenario: success {}, amplification {}, p99 {} s; objective {}.",
                num(&w["worst"]["success_rate"]),
                num(&w["worst"]["amplification"]),
                num(&w["worst"]["latency_p99_s"]),
                num(&w["objective"])
            ),
            format!("Difference from the best candidate on the objective: {}.", stat(&w["difference_from_best"])),
            format!(
                "Lint: {}, {}.",
                crate::words::plural(w["lint"]["errors"].as_u64().unwrap_or(0) as usize, "error"),
                crate::words::plural(w["lint"]["warnings"].as_u64().unwrap_or(0) as usize, "warning")
            ),
            format!(
                "Written to: {}.",
                w["emitted"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            ),
        ]);
    } else {
        let c = &t["closest"];
        if c.is_object() {
            page.para(&format!(
                "No candidate met the constraints. The closest, {}, misses {} by {}.",
                values(c),
                c["constraint"].as_str().unwrap_or(""),
                num(&c["miss"])
            ));
        } else {
            page.para("No candidate met the constraints, and none had a value for the objective.");
        }
    }
    let ties = t["ties"].as_array().cloned().unwrap_or_default();
    if !ties.is_empty() {
        page.h2("Candidates that tie with the best");
        page.para("Not significantly worse than the best by paired difference (common random numbers); why each was not chosen.");
        let header: Vec<String> =
            ["values", "difference from the best", "lint errors", "lint warnings", "why not chosen"]
                .map(String::from)
                .to_vec();
        let rows: Vec<Vec<String>> = ties
            .iter()
            .map(|c| {
                vec![
                    values(c),
                    stat(&c["difference"]),
                    c["lint"]["errors"].to_string(),
                    c["lint"]["warnings"].to_string(),
                    c["why_not"].as_str().unwrap_or("").to_string(),
                ]
            })
            .collect();
        page.table(&header, &rows);
    }
    page.h2("The Pareto front");
    page.para("Candidates no other candidate beats on success, amplification and p99 at once (worst scenario, means).");
    let header: Vec<String> = CANDIDATE_HEADER.map(String::from).to_vec();
    let rows: Vec<Vec<String>> =
        t["front"].as_array().map(|a| a.iter().map(candidate_row).collect()).unwrap_or_default();
    page.table(&header, &rows);
    if dir.join("pareto.svg").is_file() {
        if out != dir {
            for ext in ["svg", "png"] {
                let from = dir.join(format!("pareto.{ext}"));
                if from.is_file() {
                    std::fs::create_dir_all(out)?;
                    std::fs::copy(&from, out.join(format!("pareto.{ext}")))?;
                }
            }
        }
        page.h2("Chart");
        page.figure(out, "pareto", "Every candidate in the plane of worst-scenario amplification (x) and success (y): feasible candidates as grey dots, those that miss a constraint as crosses, the constraints on these axes as dashed lines, the Pareto front in blue and the winner in vermillion.")?;
    }
    page.h2("Scenario by scenario");
    for s in t["scenarios"].as_array().cloned().unwrap_or_default() {
        page.para(&format!(
            "{} ({}), {}:",
            s["name"].as_str().unwrap_or(""),
            s["file"].as_str().unwrap_or(""),
            crate::words::plural(s["replications"].as_u64().unwrap_or(0) as usize, "replication")
        ));
        let header: Vec<String> = ["metric", "as written", "winner", "difference (paired)"].map(String::from).to_vec();
        let rows: Vec<Vec<String>> = s["metrics"]
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(m, v)| vec![m.clone(), stat(&v["as_written"]), stat(&v["winner"]), stat(&v["difference"])])
                    .collect()
            })
            .unwrap_or_default();
        page.table(&header, &rows);
    }
    page.write(out)
}
