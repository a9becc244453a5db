//! The charts of a run: time charts (to the end of the drain, with the end
//! of the arrivals marked), the latency distribution, and bars with 95%
//! intervals per edge, per service and for the side-effect anomalies.

use super::bars::{BarChart, BarSeries, BarValue};
use super::draw::{Chart, Line, LineChart, Swatch};
use super::layout::Mark;
use super::{Planned, PlotOptions, check_variants, shown};
use crate::error::InputError;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// `timeseries.csv` averaged over replications: variant → column → (t, mean).
type Series = BTreeMap<String, BTreeMap<String, Vec<(f64, f64)>>>;

/// The rows of a CSV file the run wrote, read with the size limit of an
/// output file; every error names the file (and the line).
fn read_csv(path: &Path) -> anyhow::Result<(Vec<String>, Vec<csv::StringRecord>)> {
    let text = crate::config::read::read_text(path, crate::config::read::MAX_DATA_BYTES)
        .map_err(|e| InputError::file(path.display().to_string(), format!("cannot read it: {e}")))?;
    if !text.is_empty() && !text.ends_with('\n') {
        // Every row this command writes ends with a newline: the file was cut short.
        return Err(InputError::file(
            path.display().to_string(),
            "cut short: its last row has no newline (rerun, or restore the file)",
        )
        .into());
    }
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let bad = |e: csv::Error| {
        anyhow::Error::from(InputError::file(
            path.display().to_string(),
            format!("not the CSV this command writes: {e} (a file cut short or edited?)"),
        ))
    };
    let header: Vec<String> = r.headers().map_err(bad)?.iter().map(str::to_string).collect();
    let rows = r.records().collect::<Result<Vec<_>, _>>().map_err(bad)?;
    Ok((header, rows))
}

/// A number of a CSV cell: empty is no value; anything else must parse.
fn cell(path: &Path, rec: &csv::StringRecord, header: &[String], i: usize) -> anyhow::Result<Option<f64>> {
    match rec.get(i).map(str::trim) {
        None | Some("") => Ok(None),
        Some(x) => x.parse::<f64>().map(Some).map_err(|_| {
            let line = rec.position().map_or(0, |p| p.line());
            InputError::file(
                format!("{}:{line}", path.display()),
                format!("column `{}`: \"{x}\" is not a number", header.get(i).map_or("?", String::as_str)),
            )
            .into()
        }),
    }
}

fn read_timeseries(path: &Path) -> anyhow::Result<(Vec<String>, Series)> {
    let (header, rows) = read_csv(path)?;
    let mut sums: BTreeMap<(String, String, u64), (f64, u32)> = BTreeMap::new();
    for rec in &rows {
        let variant = rec.get(0).unwrap_or_default().to_string();
        let t: f64 = cell(path, rec, &header, 2)?.unwrap_or(0.0);
        for (i, col) in header.iter().enumerate().skip(3) {
            if let Some(v) = cell(path, rec, &header, i)? {
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

/// The faults of `variant` in `faults.csv` (none when the file is absent:
/// a run without faults writes none).
fn read_faults(path: &Path, variant: &str, end: f64) -> anyhow::Result<Vec<(f64, f64, String)>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let (header, rows) = read_csv(path)?;
    let mut out = Vec::new();
    for rec in rows.iter().filter(|rec| rec.get(0) == Some(variant)) {
        let start = cell(path, rec, &header, 4)?.unwrap_or(0.0);
        let stop = cell(path, rec, &header, 5)?.unwrap_or(end);
        out.push((
            start,
            stop.min(end),
            format!("{} at {} ({})", rec.get(2).unwrap_or(""), rec.get(3).unwrap_or(""), rec.get(1).unwrap_or("")),
        ));
    }
    Ok(out)
}

fn bar_value(m: &Value) -> Option<BarValue> {
    let mean = m.get("mean").and_then(Value::as_f64)?;
    let ci95 = m.get("ci95").and_then(|c| Some((c.get(0)?.as_f64()?, c.get(1)?.as_f64()?)));
    Some(BarValue { mean, ci95 })
}

/// Whether two series of (t, y) differ anywhere by more than `tol`.
fn differ(a: &[(f64, f64)], b: &[(f64, f64)], tol: f64) -> bool {
    a.len() != b.len() || a.iter().zip(b).any(|(p, q)| p.0 != q.0 || (p.1 - q.1).abs() > tol)
}

/// Where a series of `timeseries.csv` ends on a chart. Every bin that
/// starts before the end of the arrivals is drawn; what comes after it
/// depends on the series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ends {
    /// With the arrivals: offered intents.
    Arrivals,
    /// With the arrivals, unless the variant still works off a backlog
    /// after them (1% or more of the series' total comes after the end):
    /// then at its last non-zero bin. Goodput, attempts, queues and
    /// utilisation: the few requests in flight when the arrivals stop are
    /// not drawn as a collapse, a real drain is drawn to its end.
    Drain,
}

/// `points` (sorted by time) cut where the series ends ([`Ends`]); with
/// no known end of the arrivals, at the last non-zero bin.
fn trim(mut points: Vec<(f64, f64)>, duration: Option<f64>, ends: Ends) -> Vec<(f64, f64)> {
    let active = points.iter().rposition(|p| p.1 != 0.0 && p.1.is_finite()).map_or(0, |i| i + 1);
    let Some(d) = duration else {
        points.truncate(active.max(1));
        return points;
    };
    let within = points.iter().filter(|p| p.0 < d - 1e-9).count();
    let keep = match ends {
        Ends::Arrivals => within,
        Ends::Drain => {
            let total: f64 = points.iter().map(|p| p.1.abs()).filter(|v| v.is_finite()).sum();
            let after: f64 = points[within..].iter().map(|p| p.1.abs()).filter(|v| v.is_finite()).sum();
            if total > 0.0 && after >= 0.01 * total { within.max(active) } else { within }
        }
    };
    points.truncate(keep);
    points
}

/// When the `edges` chart would show the `services` chart's numbers again
/// (every service is called over exactly one edge, and for every variant
/// each edge's attempts per intent, with its interval, are its service's
/// requests per intent): the edges and their services, in words.
fn edges_repeat_services(variants: &[(usize, String, &Value)]) -> Option<String> {
    let keys = |v: &Value, group: &str| -> Vec<String> {
        v[group].as_object().map(|o| o.keys().filter(|k| !k.contains('[')).cloned().collect()).unwrap_or_default()
    };
    let first = variants.first()?.2;
    let (edges, services) = (keys(first, "edges"), keys(first, "services"));
    if edges.is_empty() || edges.len() != services.len() {
        return None;
    }
    let target = |e: &str| e.rsplit("->").next().unwrap_or(e).to_string();
    let mut targets: Vec<String> = edges.iter().map(|e| target(e)).collect();
    targets.sort();
    targets.dedup();
    if targets.len() != edges.len() || targets.iter().any(|t| !services.contains(t)) {
        return None;
    }
    let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        (None, None) => true,
        _ => false,
    };
    for (_, _, v) in variants {
        if keys(v, "edges") != edges || keys(v, "services") != services {
            return None;
        }
        for e in &edges {
            let a = &v["edges"][e]["attempts_per_intent"];
            let b = &v["services"][target(e)]["requests_per_intent"];
            if !same(a["mean"].as_f64(), b["mean"].as_f64())
                || !same(a["ci95"][0].as_f64(), b["ci95"][0].as_f64())
                || !same(a["ci95"][1].as_f64(), b["ci95"][1].as_f64())
            {
                return None;
            }
        }
    }
    Some(edges.iter().map(|e| format!("{e} into {}", target(e))).collect::<Vec<_>>().join(", "))
}

/// Plans every chart of the run in `dir`; a chart with nothing to show
/// carries the reason instead of being drawn.
pub(super) fn plan(dir: &Path, opts: &PlotOptions) -> anyhow::Result<Vec<(Planned, Option<String>)>> {
    let summary = super::read_summary(&dir.join("summary.json"))?;
    let all_variants = summary["variants"].as_array().cloned().unwrap_or_default();
    let all_names: Vec<String> = all_variants.iter().map(|v| v["name"].as_str().unwrap_or("").to_string()).collect();
    check_variants(opts, &all_names)?;
    // (series index, name, summary entry) of the variants drawn; the index keeps each its style.
    let variants: Vec<(usize, String, &Value)> = all_variants
        .iter()
        .enumerate()
        .filter(|(i, _)| shown(opts, &all_names[*i]))
        .map(|(i, v)| (i, all_names[i].clone(), v))
        .collect();
    let reps = variants.first().and_then(|v| v.2["replications"].as_u64()).unwrap_or(0);
    let (header, ts) = read_timeseries(&dir.join("timeseries.csv"))?;
    let duration = summary["experiment"]["duration_s"].as_f64().filter(|d| d.is_finite() && *d > 0.0);
    let bin = ts.values().flat_map(|c| c.values()).find_map(|p| (p.len() > 1).then(|| p[1].0 - p[0].0)).unwrap_or(1.0);
    // Each series ends where its data does ([`trim`]): no bin after the
    // end of the arrivals is drawn as a zero that only pads the file.
    let ts: Series = ts
        .into_iter()
        .map(|(v, cols)| {
            let cols = cols.into_iter().map(|(k, p)| {
                let kind = if k == "offered_per_s" { Ends::Arrivals } else { Ends::Drain };
                let p = trim(p, duration, kind);
                (k, p)
            });
            (v, cols.collect())
        })
        .collect();
    let last = ts.values().flat_map(|c| c.values()).flat_map(|p| p.last().map(|x| x.0)).fold(0.0, f64::max);
    let end_mark =
        duration.map(|d| Mark { x: d, label: format!("arrivals end ({} s)", super::draw::short(d)), color: None });
    let shade = variants
        .first()
        .map(|v| read_faults(&dir.join("faults.csv"), &v.1, last.max(duration.unwrap_or(0.0)) + bin))
        .transpose()?
        .unwrap_or_default();
    let exp_name = summary["experiment"]["name"].as_str().unwrap_or("").to_string();
    let mut out: Vec<(Planned, Option<String>)> = Vec::new();
    let end_text = |drains: bool| match duration {
        Some(d) if drains => format!(
            " The dashed line marks the end of the arrivals at {} s; a line goes on past it only where its variant still works off a backlog there, to its last bin with activity.",
            super::draw::short(d)
        ),
        Some(d) => format!(" The dashed line marks the end of the arrivals at {} s.", super::draw::short(d)),
        None => String::new(),
    };
    // `offered`: the column of the intents offered, drawn beside the series.
    let time_chart = |col: &str, title: &str, y: &str, offered: Option<&str>, share: bool| -> (Chart, bool, bool) {
        let mut lines: Vec<Line> = variants
            .iter()
            .map(|(i, n, _)| Line {
                name: n.clone(),
                color: *i,
                points: ts.get(n).and_then(|c| c.get(col)).cloned().unwrap_or_default(),
                ..Line::default()
            })
            .collect();
        let mut per_variant = false;
        if let Some(offered) = offered {
            let of = |n: &str| ts.get(n).and_then(|c| c.get(offered)).cloned().unwrap_or_default();
            let first = variants.first().map(|v| of(&v.1)).unwrap_or_default();
            let top = first.iter().map(|p| p.1).fold(0.0, f64::max);
            per_variant = variants.iter().any(|(_, n, _)| differ(&of(n), &first, top * 1e-9));
            if per_variant {
                // One dotted line per distinct offered series, in the colour
                // of the first variant it is; one legend entry for them all.
                let mut groups: Vec<(usize, Vec<(f64, f64)>)> = Vec::new();
                for (i, n, _) in &variants {
                    let pts = of(n);
                    if !groups.iter().any(|g| !differ(&g.1, &pts, top * 1e-9)) {
                        groups.push((*i, pts));
                    }
                }
                for (k, (i, pts)) in groups.into_iter().enumerate() {
                    let line = Line {
                        name: "offered intents (dotted, in the colour of each variant)".into(),
                        color: i,
                        points: pts,
                        reference_colored: true,
                        hide_legend: k > 0,
                        legend_swatch: Some(Swatch::ReferenceEach),
                        ..Line::default()
                    };
                    lines.insert(k, line);
                }
            } else {
                lines.insert(
                    0,
                    Line { name: "offered intents".into(), points: first, reference: true, ..Line::default() },
                );
            }
        }
        let reach = lines.iter().flat_map(|l| l.points.last().map(|p| p.0)).fold(f64::NEG_INFINITY, f64::max);
        let chart = Chart::Lines(LineChart {
            title: format!("{title} — {exp_name}"),
            x_label: "time (s)".into(),
            y_label: y.into(),
            lines,
            shade: shade.clone(),
            // The end of the arrivals, when the data reaches it.
            marks: end_mark.iter().filter(|m| m.x <= reach + bin * 1.001).cloned().collect(),
            y_share: share,
            ..LineChart::default()
        });
        let drains = duration.is_some_and(|d| reach >= d);
        (chart, per_variant, drains)
    };
    let of_reps = format!("mean over {reps} replication(s), per {} s bin", super::draw::short(bin));
    let offered_text = |per_variant: bool| {
        if per_variant {
            "Offered intents are dotted, in the colour of each variant whose arrivals differ."
        } else {
            "Offered intents are the grey line."
        }
    };
    for (stem, col, title, y, offered, what) in [
        (
            "goodput",
            "goodput_per_s",
            "Goodput over time",
            "successful intents per second",
            true,
            "Successful intents per second",
        ),
        (
            "attempts",
            "attempts_per_s",
            "Attempts over time",
            "client attempts per second",
            true,
            "Attempts the clients sent per second (first attempts and retries)",
        ),
        (
            "hedges",
            "hedges_per_s",
            "Hedged copies over time",
            "hedges sent per second",
            false,
            "Hedged copies sent per second on every edge",
        ),
        (
            "throttled",
            "throttled_per_s",
            "Attempts the client-side throttle held back",
            "throttled attempts per second",
            false,
            "Attempts a client-side throttle refused or held back per second",
        ),
    ] {
        if !header.iter().any(|h| h == col) {
            continue;
        }
        let (chart, per_variant, drains) = time_chart(col, title, y, offered.then_some("offered_per_s"), false);
        let faults = if shade.is_empty() { "" } else { " Fault windows are shaded." };
        let drain_text = end_text(drains);
        let caption = format!(
            "{what}, per variant ({of_reps}).{}{faults}{drain_text}",
            if offered { format!(" {}", offered_text(per_variant)) } else { String::new() }
        );
        out.push((Planned { stem: stem.into(), metric: col.into(), caption, chart }, None));
    }
    // Goodput per client class, when there are several: a design can serve
    // one class by failing another, which the total hides.
    let classes: Vec<String> =
        header.iter().filter_map(|h| h.strip_suffix(".goodput_per_s")).map(str::to_string).collect();
    for c in &classes {
        let (chart, per_variant, drains) = time_chart(
            &format!("{c}.goodput_per_s"),
            &format!("Goodput of {c} over time"),
            &format!("successful intents of {c} per second"),
            Some(&format!("{c}.offered_per_s")),
            false,
        );
        let faults = if shade.is_empty() { "" } else { " Fault windows are shaded." };
        out.push((
            Planned {
                stem: format!("goodput_{c}"),
                metric: format!("{c}.goodput_per_s"),
                caption: format!(
                    "Successful intents of client class {c} per second, per variant ({of_reps}). {}{faults}{}",
                    offered_text(per_variant).replace("Offered intents", &format!("Offered intents of {c}")),
                    end_text(drains)
                ),
                chart,
            },
            None,
        ));
    }
    let cdf_lines = variants
        .iter()
        .map(|(i, n, v)| Line {
            name: n.clone(),
            color: *i,
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
    out.push((
        Planned {
            stem: "latency_cdf".into(),
            metric: "latency".into(),
            caption: "The distribution of end-to-end latency of successful intents, per variant, pooled over the replications: the share of them (y) finished within a latency (x, log scale). A long flat shelf before 1 is intents rescued by late retries.".into(),
            chart: Chart::Lines(LineChart {
                title: format!("End-to-end latency of successful intents — {exp_name}"),
                x_label: "latency (log scale)".into(),
                y_label: "share of successful intents at or below".into(),
                lines: cdf_lines,
                x_log10: true,
                y_share: true,
                ..LineChart::default()
            }),
        },
        None,
    ));
    let bars = |key: &str, metric: &str, title: &str, y: &str| -> Chart {
        let cats: Vec<String> = variants
            .first()
            .and_then(|v| v.2[key].as_object())
            .map(|o| o.keys().filter(|k| !k.contains('[')).cloned().collect())
            .unwrap_or_default();
        let series = variants
            .iter()
            .map(|(i, n, v)| BarSeries {
                name: n.clone(),
                color: *i,
                values: cats.iter().map(|c| bar_value(&v[key][c][metric])).collect(),
            })
            .collect();
        Chart::Bars(BarChart { title: format!("{title} — {exp_name}"), y_label: y.into(), categories: cats, series })
    };
    let ci = "Each bar is the mean over the replications with its 95% interval; n/a marks a value that does not apply, a stub on the axis a zero.";
    let repeat = edges_repeat_services(&variants);
    let edges_note = match &repeat {
        Some(_) => {
            " Each service here is called over one edge only, so these are also the requests per intent arriving at each service (the amplification); the services chart would repeat them and is not drawn."
        }
        None => "",
    };
    out.push((
        Planned {
            stem: "edges".into(),
            metric: "attempts_per_intent".into(),
            caption: format!("Attempts per intent on each call edge, per variant: how many attempts one business operation causes on that hop.{edges_note} {ci}"),
            chart: bars("edges", "attempts_per_intent", "Attempts per intent on each call edge", "attempts per intent"),
        },
        None,
    ));
    out.push((
        Planned {
            stem: "services".into(),
            metric: "amplification".into(),
            caption: format!("Requests per intent arriving at each service, per variant; the largest is the table's amplification. {ci}"),
            chart: bars("services", "requests_per_intent", "Requests per intent at each service (amplification)", "requests per intent"),
        },
        repeat.map(|pairs| format!("the same numbers as the edges chart: each service is called over one edge only ({pairs}), so its requests per intent are that edge's attempts per intent")),
    ));
    // Per client class: the classes' success side by side (a design can
    // serve one class by failing another; the total hides it).
    let classes = variants.first().and_then(|v| v.2["clients"].as_object()).map_or(0, |o| o.len());
    out.push((
        Planned {
            stem: "classes".into(),
            metric: "success_rate".into(),
            caption: format!(
                "Success per client class, per variant: the share of each class's intents that succeeded. {ci}"
            ),
            chart: bars(
                "clients",
                "success_rate",
                "Success per client class",
                "success (share of the class's intents)",
            ),
        },
        (classes < 2).then(|| "one client class: its success is the table's".to_string()),
    ));
    let effect_metrics = ["duplicate_intents", "orphan_commits", "lost_effects"];
    let effects = Chart::Bars(BarChart {
        title: format!("Side-effect anomalies per replication — {exp_name}"),
        y_label: "count per replication (intents in the window)".into(),
        categories: vec!["duplicate intents".into(), "orphan commits".into(), "lost effects".into()],
        series: variants
            .iter()
            .map(|(i, n, v)| BarSeries {
                name: n.clone(),
                color: *i,
                values: effect_metrics.iter().map(|m| bar_value(&v["metrics"][*m])).collect(),
            })
            .collect(),
    });
    let any_effect = variants
        .iter()
        .any(|(_, _, v)| effect_metrics.iter().any(|m| v["metrics"][*m]["mean"].as_f64().is_some_and(|x| x != 0.0)));
    out.push((
        Planned {
            stem: "effects".into(),
            metric: "effects".into(),
            caption: format!("Side-effect anomalies per replication (duplicate intents, orphan commits, lost effects), per variant. {ci}"),
            chart: effects,
        },
        (!any_effect).then(|| "no variant had a duplicate intent, an orphan commit or a lost effect (all zero)".to_string()),
    ));
    let services: Vec<String> =
        header.iter().filter_map(|h| h.strip_suffix(".queue_len")).map(str::to_string).collect();
    for svc in &services {
        let (chart, _, drains) = time_chart(
            &format!("{svc}.queue_len"),
            &format!("Queue length at {svc}"),
            "requests waiting (mean over the bin)",
            None,
            false,
        );
        out.push((
            Planned {
                stem: format!("queue_{svc}"),
                metric: format!("{svc}.queue_len"),
                caption: format!(
                    "Requests waiting in the queue of {svc} (time average over each bin), per variant ({of_reps}).{}",
                    end_text(drains)
                ),
                chart,
            },
            None,
        ));
        let (chart, _, drains) = time_chart(
            &format!("{svc}.utilization"),
            &format!("Utilisation of {svc}"),
            "busy share of the workers",
            None,
            true,
        );
        out.push((
            Planned {
                stem: format!("utilization_{svc}"),
                metric: format!("{svc}.utilization"),
                caption: format!("Busy share of the workers of {svc} (a worker waiting for a downstream call counts as busy), per variant ({of_reps}).{}", end_text(drains)),
                chart,
            },
            None,
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: &[f64]) -> Vec<(f64, f64)> {
        values.iter().enumerate().map(|(t, v)| (t as f64, *v)).collect()
    }

    #[test]
    fn nothing_after_the_end_of_the_arrivals_is_drawn_as_a_padding_zero() {
        // Arrivals end at 4 s; the file goes on to 8 s (another variant drained that long).
        let healthy = series(&[700.0, 710.0, 690.0, 700.0, 7.6, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(trim(healthy.clone(), Some(4.0), Ends::Drain), healthy[..4]);
        assert_eq!(trim(healthy.clone(), Some(4.0), Ends::Arrivals), healthy[..4]);
        // A real drain is drawn to its last bin with activity, not beyond.
        let backlog = series(&[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.4, 0.0, 0.0]);
        assert_eq!(trim(backlog.clone(), Some(4.0), Ends::Drain), backlog[..7]);
        assert_eq!(trim(backlog.clone(), Some(4.0), Ends::Arrivals), backlog[..4]);
        // A collapse before the end is data: its zeros stay.
        let collapsed = series(&[700.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(trim(collapsed.clone(), Some(4.0), Ends::Drain), collapsed[..4]);
        // A burst at 0 s whose retries go on long after the arrivals.
        let burst = series(&[100.0, 0.0, 0.0, 0.0, 5.0, 9.0, 3.0, 0.0]);
        assert_eq!(trim(burst.clone(), Some(1.0), Ends::Drain), burst[..7]);
    }

    #[test]
    fn edges_repeat_services_only_when_each_service_has_one_edge_and_the_same_numbers() {
        let m = |mean: f64| serde_json::json!({ "mean": mean, "ci95": [mean - 0.1, mean + 0.1] });
        let one = serde_json::json!({
            "edges": { "web->api": { "attempts_per_intent": m(1.5) } },
            "services": { "api": { "requests_per_intent": m(1.5) }, "api[0]": { "requests_per_intent": m(1.5) } },
        });
        let v = vec![(0, "a".to_string(), &one)];
        assert_eq!(edges_repeat_services(&v).as_deref(), Some("web->api into api"));
        let two_callers = serde_json::json!({
            "edges": { "web->api": { "attempts_per_intent": m(1.0) }, "batch->api": { "attempts_per_intent": m(0.5) } },
            "services": { "api": { "requests_per_intent": m(1.5) } },
        });
        assert_eq!(edges_repeat_services(&[(0, "a".to_string(), &two_callers)]), None);
        let hedged = serde_json::json!({
            "edges": { "web->api": { "attempts_per_intent": m(1.5) } },
            "services": { "api": { "requests_per_intent": m(1.8) } },
        });
        assert_eq!(edges_repeat_services(&[(0, "a".to_string(), &one), (1, "b".to_string(), &hedged)]), None);
    }
}
