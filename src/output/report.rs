//! `report.html` (self-contained: inline SVG charts, no external files or
//! scripts) and `report.md` (PNG charts beside it) for a design review,
//! built from a finished run's output folder.

use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn mean(v: &Value) -> Option<f64> {
    v.get("mean").and_then(Value::as_f64)
}

fn half(v: &Value) -> Option<f64> {
    let c = v.get("ci95")?;
    Some((c[1].as_f64()? - c[0].as_f64()?) / 2.0)
}

/// The headline columns: (metric, header, as percent).
const COLUMNS: [(&str, &str, bool); 9] = [
    ("success_rate", "success", true),
    ("goodput_per_s", "goodput/s", false),
    ("attempts_per_intent", "attempts/intent", false),
    ("amplification", "amplification", false),
    ("latency_p50_s", "p50", false),
    ("latency_p99_s", "p99", false),
    ("wasted_fraction", "wasted", true),
    ("duplicate_intents", "duplicates", false),
    ("recovered_fraction", "recovered", true),
];

fn cell(m: &Value, percent: bool) -> String {
    let f = |x: f64| {
        if percent {
            format!("{:.2}%", x * 100.0)
        } else if x.abs() >= 10.0 {
            format!("{x:.1}")
        } else {
            format!("{x:.3}")
        }
    };
    match (mean(m), half(m)) {
        (None, _) => "—".into(),
        (Some(x), None) => f(x),
        (Some(x), Some(h)) => {
            let h = if percent { format!("{:.2}", h * 100.0) } else { f(h) };
            format!("{} ± {h}", f(x))
        }
    }
}

fn seconds_cell(m: &Value) -> String {
    use crate::output::table::fmt_seconds;
    match (mean(m), half(m)) {
        (None, _) => "—".into(),
        (Some(x), None) => fmt_seconds(x),
        (Some(x), Some(h)) => format!("{} ± {}", fmt_seconds(x), fmt_seconds(h)),
    }
}

/// Findings in words, from the numbers.
pub fn findings(summary: &Value) -> Vec<String> {
    let variants = summary["variants"].as_array().cloned().unwrap_or_default();
    let mut out = Vec::new();
    for v in &variants {
        let name = v["name"].as_str().unwrap_or("");
        let m = &v["metrics"];
        if mean(&m["recovered_fraction"]) == Some(0.0) {
            out.push(format!("\"{name}\" never recovered after the disturbance within the run."));
        } else if let (Some(f), Some(t)) = (mean(&m["recovered_fraction"]), mean(&m["recovery_time_s"]))
            && f < 1.0
        {
            out.push(format!(
                "\"{name}\" recovered in only {:.0}% of the replications (after {t:.1} s when it did).",
                f * 100.0
            ));
        }
        if let Some(d) = mean(&m["duplicate_intents"]).filter(|d| *d > 0.0) {
            out.push(format!(
                "\"{name}\" performed the side effect of {d:.1} intents more than once per replication (duplicates)."
            ));
        }
        if let Some(l) = mean(&m["lost_effects"]).filter(|l| *l > 0.0) {
            out.push(format!(
                "\"{name}\" lost {l:.1} effects per replication (an after-commit call or relay that gave up)."
            ));
        }
        if let Some(s) = mean(&m["stuck_placeholders"]).filter(|s| *s > 0.0) {
            out.push(format!("\"{name}\" left {s:.1} idempotency placeholders stuck in progress."));
        }
        let vs = &v["vs_baseline"];
        if vs.is_object() {
            let base = vs["baseline"].as_str().unwrap_or("");
            for (metric, label, percent) in
                [("amplification", "amplification", false), ("success_rate", "success", true)]
            {
                let d = &vs[metric];
                let base_mean = variants
                    .iter()
                    .find(|x| x["name"].as_str() == Some(base))
                    .and_then(|x| x["metrics"][metric]["mean"].as_f64());
                let (Some(diff), Some(h), Some(b)) = (mean(d), half(d), base_mean) else {
                    continue;
                };
                if d["significant"] != Value::Bool(true) {
                    continue;
                }
                if percent {
                    out.push(format!(
                        "\"{name}\" changes {label} by {:+.2} ± {:.2} points versus \"{base}\".",
                        diff * 100.0,
                        h * 100.0
                    ));
                } else if b.abs() > 0.0 && (diff / b).abs() >= 0.01 {
                    let verb = if diff < 0.0 { "cuts" } else { "raises" };
                    out.push(format!(
                        "\"{name}\" {verb} {label} by {:.0}% ± {:.0}% versus \"{base}\".",
                        (diff / b).abs() * 100.0,
                        (h / b).abs() * 100.0
                    ));
                }
            }
        }
    }
    if out.is_empty() {
        out.push("No variant showed a significant difference, a duplicate, a lost effect or a failed recovery.".into());
    }
    out
}

/// Writes `report.html` and `report.md` into `dir` (a run folder whose
/// charts exist) and returns their paths.
pub fn write_report(dir: &Path, chart_names: &[String]) -> anyhow::Result<()> {
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json"))?)?;
    let exp_name = summary["experiment"]["name"].as_str().unwrap_or("experiment").to_string();
    let source = std::fs::read_to_string(dir.join("experiment.toml")).unwrap_or_default();
    let variants = summary["variants"].as_array().cloned().unwrap_or_default();
    let found = findings(&summary);

    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>body{{font-family:sans-serif;max-width:1300px;margin:2em auto;color:#222}}table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}td:first-child,th:first-child{{text-align:left}}pre{{background:#f6f6f6;padding:1em;overflow:auto}}figure{{margin:2em 0}}svg{{max-width:100%;height:auto}}</style></head><body>\n<h1>{t}</h1>\n",
        t = esc(&exp_name)
    );
    let _ = writeln!(
        html,
        "<p>Seed {}, {} replication(s) per variant, intents counted from {} s to {} s. Each cell is the mean ± the half-width of its 95% confidence interval.</p>",
        summary["experiment"]["seed"],
        variants.first().map(|v| v["replications"].clone()).unwrap_or_default(),
        summary["experiment"]["warmup_s"],
        summary["experiment"]["duration_s"]
    );
    html.push_str("<h2>Findings</h2>\n<ul>\n");
    for f in &found {
        let _ = writeln!(html, "<li>{}</li>", esc(f));
    }
    html.push_str("</ul>\n<h2>Comparison</h2>\n<table><tr><th>variant</th>");
    for (_, h, _) in COLUMNS {
        let _ = write!(html, "<th>{}</th>", esc(h));
    }
    html.push_str("</tr>\n");
    let mut md_table = String::from("| variant |");
    for (_, h, _) in COLUMNS {
        let _ = write!(md_table, " {h} |");
    }
    md_table.push_str(&format!("\n|---|{}\n", "---:|".repeat(COLUMNS.len())));
    for v in &variants {
        let name = v["name"].as_str().unwrap_or("");
        let _ = write!(html, "<tr><td>{}</td>", esc(name));
        let _ = write!(md_table, "| {name} |");
        for (m, _, p) in COLUMNS {
            let c = if m.starts_with("latency_") { seconds_cell(&v["metrics"][m]) } else { cell(&v["metrics"][m], p) };
            let _ = write!(html, "<td>{}</td>", esc(&c));
            let _ = write!(md_table, " {c} |");
        }
        html.push_str("</tr>\n");
        md_table.push('\n');
    }
    html.push_str("</table>\n<h2>Charts</h2>\n");
    for name in chart_names {
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg")))?;
        let svg = svg.trim_start_matches(|c| c != '<');
        let _ = write!(html, "<figure id=\"{n}\">\n{svg}\n<figcaption>{n}</figcaption></figure>\n", n = esc(name));
    }
    let _ = write!(html, "<h2>The experiment</h2>\n<pre>{}</pre>\n</body></html>\n", esc(&source));

    let mut md = format!("# {exp_name}\n\n## Findings\n\n");
    for f in &found {
        let _ = writeln!(md, "- {f}");
    }
    let _ =
        write!(md, "\n## Comparison\n\nMean ± 95% CI half-width over the replications.\n\n{md_table}\n## Charts\n\n");
    for name in chart_names {
        let _ = writeln!(md, "![{name}]({name}.png)\n");
    }
    let _ = write!(md, "## The experiment\n\n```toml\n{source}```\n");
    crate::output::write_atomic(&dir.join("report.html"), html.as_bytes(), &[])?;
    crate::output::write_atomic(&dir.join("report.md"), md.as_bytes(), &[])?;
    Ok(())
}
