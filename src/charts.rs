//! Charts for design reviews, redrawn from a finished run's or sweep's
//! output folder (`summary.json`, `timeseries.csv`, `faults.csv`, or
//! `sweep.json`), so `retrysim plot` needs no new simulation.

pub mod draw;
pub mod frontier;

use anyhow::Context;
use draw::{BarChart, Chart, Line, LineChart, save};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Finds the folder of a run or sweep from a folder or a path to its
/// `summary.json` / `sweep.json`.
pub fn folder_of(path: &Path) -> PathBuf {
    if path.is_file() { path.parent().map(Path::to_path_buf).unwrap_or_default() } else { path.to_path_buf() }
}

/// Draws every chart for the run or sweep in `dir` into `out`; returns the
/// chart names (each written as `.png` and `.svg`).
pub fn plot_dir(dir: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
    let modified = |f: &str| std::fs::metadata(dir.join(f)).and_then(|m| m.modified()).ok();
    match (modified("summary.json"), modified("sweep.json")) {
        // Both: the newer output is the one this folder is about.
        (Some(run), Some(sweep)) if sweep > run => sweep_charts(dir, out),
        (Some(_), _) => run_charts(dir, out),
        (None, Some(_)) => sweep_charts(dir, out),
        (None, None) if dir.join("frontier.json").is_file() => frontier::frontier_chart(dir, out),
        (None, None) if dir.join("collapse-rate.json").is_file() => frontier::collapse_chart(dir, out),
        (None, None) => {
            anyhow::bail!("{}: no summary.json or sweep.json: not the output folder of a run or sweep", dir.display())
        }
    }
}

/// Draws the charts of `path`: a run or sweep folder, or its `summary.json`
/// or `sweep.json` (which picks the kind when a folder holds both).
pub fn plot_path(path: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
    let dir = folder_of(path);
    match path.file_name().and_then(|n| n.to_str()) {
        Some("sweep.json") if path.is_file() => sweep_charts(&dir, out),
        Some("summary.json") if path.is_file() => run_charts(&dir, out),
        _ => plot_dir(&dir, out),
    }
}

/// A sweep value on a numeric axis: a number, a rate (per second) or a
/// duration (seconds).
fn axis_value(text: &str) -> Option<f64> {
    let t = text.trim().trim_matches('"');
    t.parse::<f64>()
        .ok()
        .or_else(|| t.contains('/').then(|| crate::config::units::parse_rate(t).ok()).flatten())
        .or_else(|| crate::config::units::parse_duration(t).ok().map(crate::engine::to_secs_f64))
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text = crate::config::read::read_text(path, crate::config::read::MAX_DATA_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not valid JSON", path.display()))
}

/// `timeseries.csv` averaged over replications: variant → column → (t, mean).
type Series = BTreeMap<String, BTreeMap<String, Vec<(f64, f64)>>>;

fn read_timeseries(path: &Path) -> anyhow::Result<(Vec<String>, Series)> {
    let mut r = csv::Reader::from_path(path).with_context(|| format!("cannot read {}", path.display()))?;
    let header: Vec<String> = r.headers()?.iter().map(str::to_string).collect();
    let mut sums: BTreeMap<(String, String, u64), (f64, u32)> = BTreeMap::new();
    for rec in r.records() {
        let rec = rec?;
        let variant = rec.get(0).unwrap_or_default().to_string();
        let t: f64 = rec.get(2).and_then(|x| x.parse().ok()).unwrap_or(0.0);
        for (i, col) in header.iter().enumerate().skip(3) {
            if let Some(v) = rec.get(i).and_then(|x| x.parse::<f64>().ok()) {
                let e = sums.entry((variant.clone(), col.clone(), (t * 1e6).round() as u64)).or_insert((0.0, 0));
                e.0 += v;
                e.1 += 1;
            }
        }
    }
    let mut out: Series = BTreeMap::new();
    for ((variant, col, t), (sum, n)) in sums {
        out.entry(variant).or_default().entry(col).or_default().push((t as f64 / 1e6, sum / n as f64));
    }
    Ok((header, out))
}

fn read_faults(path: &Path, variant: &str, end: f64) -> Vec<(f64, f64, String)> {
    let Ok(mut r) = csv::Reader::from_path(path) else { return Vec::new() };
    r.records()
        .flatten()
        .filter(|rec| rec.get(0) == Some(variant))
        .map(|rec| {
            let start: f64 = rec.get(4).and_then(|x| x.parse().ok()).unwrap_or(0.0);
            let stop: f64 = rec.get(5).and_then(|x| x.parse().ok()).unwrap_or(end);
            (
                start,
                stop.min(end),
                format!("{} at {} ({})", rec.get(2).unwrap_or(""), rec.get(3).unwrap_or(""), rec.get(1).unwrap_or("")),
            )
        })
        .collect()
}

fn mean(v: &Value) -> Option<f64> {
    v.get("mean").and_then(Value::as_f64)
}

pub fn run_charts(dir: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
    let summary = read_json(&dir.join("summary.json"))?;
    let variants = summary["variants"].as_array().cloned().unwrap_or_default();
    let names: Vec<String> = variants.iter().map(|v| v["name"].as_str().unwrap_or("").to_string()).collect();
    let (header, ts) = read_timeseries(&dir.join("timeseries.csv"))?;
    // The window in which intents arrive: later bins only drain the last requests.
    let end = summary["experiment"]["duration_s"].as_f64().unwrap_or(f64::INFINITY);
    let ts: Series = ts
        .into_iter()
        .map(|(v, cols)| {
            (v, cols.into_iter().map(|(k, pts)| (k, pts.into_iter().filter(|p| p.0 < end).collect())).collect())
        })
        .collect();
    let shade = names.first().map(|n| read_faults(&dir.join("faults.csv"), n, end)).unwrap_or_default();
    let exp_name = summary["experiment"]["name"].as_str().unwrap_or("").to_string();
    let mut charts: Vec<(String, Chart)> = Vec::new();
    let time_chart = |col: &str, title: &str, y: &str| -> Chart {
        let mut lines: Vec<Line> = names
            .iter()
            .enumerate()
            .map(|(i, n)| Line {
                name: n.clone(),
                color: i,
                points: ts.get(n).and_then(|c| c.get(col)).cloned().unwrap_or_default(),
                ..Line::default()
            })
            .collect();
        // Offered intents as the reference, except where the counts are of another scale.
        if !matches!(col, "offered_per_s" | "hedges_per_s" | "throttled_per_s")
            && let Some(first) = names.first()
        {
            let offered = ts.get(first).and_then(|c| c.get("offered_per_s")).cloned().unwrap_or_default();
            lines.insert(
                0,
                Line { name: "offered intents".into(), points: offered, reference: true, ..Line::default() },
            );
        }
        Chart::Lines(LineChart {
            title: format!("{title} — {exp_name}"),
            x_label: "time (s)".into(),
            y_label: y.into(),
            lines,
            shade: shade.clone(),
            ..LineChart::default()
        })
    };
    charts.push(("goodput".into(), time_chart("goodput_per_s", "Goodput over time", "successful intents per second")));
    charts.push(("attempts".into(), time_chart("attempts_per_s", "Attempts over time", "client attempts per second")));
    if header.iter().any(|h| h == "hedges_per_s") {
        charts.push(("hedges".into(), time_chart("hedges_per_s", "Hedged copies over time", "hedges sent per second")));
    }
    if header.iter().any(|h| h == "throttled_per_s") {
        charts.push((
            "throttled".into(),
            time_chart(
                "throttled_per_s",
                "Attempts the client-side throttle held back",
                "throttled attempts per second",
            ),
        ));
    }
    let cdf_lines = variants
        .iter()
        .enumerate()
        .map(|(i, v)| Line {
            name: names[i].clone(),
            color: i,
            points: v["latency_cdf"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|p| Some((p["latency_s"].as_f64()?.max(1e-6).log10(), p["q"].as_f64()?)))
                        .collect()
                })
                .unwrap_or_default(),
            ..Line::default()
        })
        .collect();
    charts.push((
        "latency_cdf".into(),
        Chart::Lines(LineChart {
            title: format!("End-to-end latency of successful intents — {exp_name}"),
            x_label: "latency (log scale)".into(),
            y_label: "share of successful intents at or below".into(),
            lines: cdf_lines,
            x_log10: true,
            legend_lower_right: true,
            ..LineChart::default()
        }),
    ));
    let bars = |key: &str, metric: &str, title: &str, y: &str| -> Chart {
        let cats: Vec<String> =
            variants.first().and_then(|v| v[key].as_object()).map(|o| o.keys().cloned().collect()).unwrap_or_default();
        let series = variants
            .iter()
            .enumerate()
            .map(|(i, v)| (names[i].clone(), i, cats.iter().map(|c| mean(&v[key][c][metric])).collect()))
            .collect();
        Chart::Bars(BarChart { title: format!("{title} — {exp_name}"), y_label: y.into(), categories: cats, series })
    };
    charts.push((
        "edges".into(),
        bars("edges", "attempts_per_intent", "Attempts per intent on each call edge", "attempts per intent"),
    ));
    charts.push((
        "services".into(),
        bars(
            "services",
            "requests_per_intent",
            "Requests per intent at each service (amplification)",
            "requests per intent",
        ),
    ));
    let effect_metrics = ["duplicate_intents", "orphan_commits", "lost_effects"];
    charts.push((
        "effects".into(),
        Chart::Bars(BarChart {
            title: format!("Side-effect anomalies per run — {exp_name}"),
            y_label: "count per replication (intents in the window)".into(),
            categories: vec!["duplicate intents".into(), "orphan commits".into(), "lost effects".into()],
            series: variants
                .iter()
                .enumerate()
                .map(|(i, v)| (names[i].clone(), i, effect_metrics.iter().map(|m| mean(&v["metrics"][*m])).collect()))
                .collect(),
        }),
    ));
    let services: Vec<String> =
        header.iter().filter_map(|h| h.strip_suffix(".queue_len")).map(str::to_string).collect();
    for svc in &services {
        charts.push((
            format!("queue_{svc}"),
            time_chart(
                &format!("{svc}.queue_len"),
                &format!("Queue length at {svc}"),
                "requests waiting (mean over the bin)",
            ),
        ));
        charts.push((
            format!("utilization_{svc}"),
            time_chart(&format!("{svc}.utilization"), &format!("Utilisation of {svc}"), "busy share of the workers"),
        ));
    }
    let mut written = Vec::new();
    for (stem, chart) in charts {
        // The reference line (offered load) makes no sense on queue/utilisation charts.
        let chart = match chart {
            Chart::Lines(mut c) if stem.starts_with("queue_") || stem.starts_with("utilization_") => {
                c.lines.retain(|l| !l.reference);
                Chart::Lines(c)
            }
            other => other,
        };
        save(&chart, out, &stem)?;
        written.push(stem);
    }
    Ok(written)
}

pub fn sweep_charts(dir: &Path, out: &Path) -> anyhow::Result<Vec<String>> {
    let doc = read_json(&dir.join("sweep.json"))?;
    let params = doc["params"].as_array().cloned().unwrap_or_default();
    let key = params.first().and_then(|p| p["key"].as_str()).unwrap_or("point").to_string();
    let firsts: Vec<String> =
        params.iter().skip(1).filter_map(|p| p["values"][0].as_str().map(str::to_string)).collect();
    // Points on the first parameter's axis, the others at their first value.
    let points: Vec<&Value> = doc["points"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|p| {
                    p["values"].as_array().is_some_and(|vs| {
                        vs.iter().skip(1).zip(&firsts).all(|(v, f)| v[1].as_str() == Some(f.as_str()))
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let x_of = |p: &Value, i: usize| -> f64 { p["values"][0][1].as_str().and_then(axis_value).unwrap_or(i as f64) };
    let names: Vec<String> = points
        .first()
        .and_then(|p| p["variants"].as_array())
        .map(|vs| vs.iter().map(|v| v["name"].as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default();
    let knee_metric = doc["knee"]["metric"].as_str().unwrap_or("").to_string();
    let mut written = Vec::new();
    for (metric, label) in [
        ("success_rate", "share of intents that succeeded"),
        ("goodput_per_s", "successful intents per second"),
        ("attempts_per_intent", "attempts per intent"),
        ("amplification", "requests per intent at the baseline's busiest service"),
        ("latency_p99_s", "p99 latency of successful intents (s)"),
    ] {
        let lines = names
            .iter()
            .enumerate()
            .map(|(vi, n)| {
                let mut line = Line { name: n.clone(), color: vi, ..Line::default() };
                for (i, p) in points.iter().enumerate() {
                    let m = &p["variants"][vi]["metrics"][metric];
                    if let Some(y) = m["mean"].as_f64() {
                        let x = x_of(p, i);
                        line.points.push((x, y));
                        if let (Some(lo), Some(hi)) = (m["ci95"][0].as_f64(), m["ci95"][1].as_f64()) {
                            line.band.push((x, lo, hi));
                        }
                    }
                }
                line
            })
            .collect();
        let knees = doc["knees"].as_array().cloned().unwrap_or_default();
        let marks: Vec<(f64, String, usize)> = if metric == knee_metric {
            knees
                .iter()
                .filter_map(|k| {
                    let v = k["value"].as_str()?;
                    let x = axis_value(v)?;
                    let vi = names.iter().position(|n| Some(n.as_str()) == k["variant"].as_str())?;
                    Some((x, format!("knee of {}", names[vi]), vi))
                })
                .collect()
        } else {
            Vec::new()
        };
        let threshold = (metric == knee_metric)
            .then(|| {
                doc["knee"]["threshold"]
                    .as_f64()
                    .map(|t| (t, format!("{} {} {t}", knee_metric, doc["knee"]["op"].as_str().unwrap_or(""))))
            })
            .flatten();
        let chart = Chart::Lines(LineChart {
            title: format!("{metric} versus {key} (mean and 95% CI)"),
            x_label: key.clone(),
            y_label: label.into(),
            lines,
            marks,
            threshold,
            y_fit: true,
            ..LineChart::default()
        });
        let stem = format!("sweep_{metric}");
        save(&chart, out, &stem)?;
        written.push(stem);
    }
    Ok(written)
}
