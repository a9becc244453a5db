//! `run --compare-traces`: the simulated run beside the traces, per client
//! (end to end), call edge and service: latency p50 and p99, success and
//! attempts per call, each with its 95% interval and a verdict, and a chart
//! of both end-to-end latency distributions.

use super::infer::{CallSample, Model};
use super::observed::{self, Estimate};
use crate::analysis::RunSet;
use crate::analysis::stats::summarize_metric;
use crate::metrics::{TraceNote, TraceRecord};
use crate::policy::Outcome;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// How far a simulated value may be from the observed one and still match:
/// latencies within 20% of the observed value, shares within 2 points,
/// attempts per call within 0.05.
pub const LATENCY_TOLERANCE: f64 = 0.20;
/// See [`LATENCY_TOLERANCE`].
pub const SUCCESS_TOLERANCE: f64 = 0.02;
/// See [`LATENCY_TOLERANCE`].
pub const ATTEMPTS_TOLERANCE: f64 = 0.05;

/// One compared quantity.
#[derive(Debug, Clone)]
pub struct Row {
    /// `end-to-end`, `edge` or `service`.
    pub scope: &'static str,
    pub name: String,
    pub metric: &'static str,
    pub observed: Estimate,
    /// Mean over replications with its t interval.
    pub simulated: Estimate,
    pub verdict: &'static str,
}

/// Per-replication metrics of one set of calls.
fn metrics(calls: &[CallSample]) -> [Option<f64>; 4] {
    let mut ok: Vec<f64> = calls.iter().filter(|c| c.ok).map(|c| c.latency).collect();
    ok.sort_by(f64::total_cmp);
    let n = calls.len();
    let k = calls.iter().filter(|c| c.ok).count();
    let att = calls.iter().map(|c| c.attempts as f64).sum::<f64>();
    [
        observed::quantile(&ok, 0.5).value,
        observed::quantile(&ok, 0.99).value,
        (n > 0).then(|| k as f64 / n as f64),
        (n > 0).then(|| att / n as f64),
    ]
}

fn observed_of(calls: &[CallSample]) -> [Estimate; 4] {
    let mut ok: Vec<f64> = calls.iter().filter(|c| c.ok).map(|c| c.latency).collect();
    ok.sort_by(f64::total_cmp);
    let att: Vec<f64> = calls.iter().map(|c| c.attempts as f64).collect();
    [
        observed::quantile(&ok, 0.5),
        observed::quantile(&ok, 0.99),
        observed::share(calls.iter().filter(|c| c.ok).count(), calls.len()),
        observed::mean(&att),
    ]
}

const METRICS: [&str; 4] = ["latency_p50_s", "latency_p99_s", "success_rate", "attempts_per_call"];

fn verdict(metric: &str, o: &Estimate, s: &Estimate) -> &'static str {
    let (Some(ov), Some(sv)) = (o.value, s.value) else { return "no data" };
    let within = match metric {
        "latency_p50_s" | "latency_p99_s" => (sv - ov).abs() <= LATENCY_TOLERANCE * ov.abs(),
        "success_rate" => (sv - ov).abs() <= SUCCESS_TOLERANCE,
        _ => (sv - ov).abs() <= ATTEMPTS_TOLERANCE,
    };
    let overlap = match (o.ci95, s.ci95) {
        (Some(a), Some(b)) => a.0 <= b.1 && b.0 <= a.1,
        _ => false,
    };
    if within {
        "match"
    } else if overlap {
        "match (intervals overlap)"
    } else {
        "DIFFERS"
    }
}

/// A call in progress: first sent, last answered, ok, attempts.
type OpenCall = (i64, i64, bool, u32);
/// Per edge index: the calls, and the attempts.
type PerEdge = (Vec<Vec<CallSample>>, Vec<Vec<CallSample>>);

/// The simulated calls of one replication per edge index: records of one
/// (client, intent, edge) in order, a new call at each first attempt.
fn sim_calls(trace: &[TraceRecord], edges: usize) -> PerEdge {
    let mut open: BTreeMap<(u32, u64, u32), OpenCall> = BTreeMap::new();
    let mut calls = vec![Vec::new(); edges];
    let mut attempts = vec![Vec::new(); edges];
    let close = |calls: &mut Vec<Vec<CallSample>>, e: u32, c: OpenCall| {
        calls[e as usize].push(CallSample { latency: (c.1 - c.0) as f64 / 1e9, ok: c.2, attempts: c.3 });
    };
    for r in trace {
        if matches!(r.note, Some(TraceNote::Refused { .. })) || r.copy.is_some_and(|c| c > 0) {
            continue;
        }
        let ok = r.outcome == Outcome::Ok;
        let (sent, answered) = (r.sent as i64, r.answered as i64);
        attempts[r.edge as usize].push(CallSample { latency: (answered - sent) as f64 / 1e9, ok, attempts: 1 });
        let key = (r.client, r.intent, r.edge);
        if r.attempt <= 1
            && let Some(c) = open.remove(&key)
        {
            close(&mut calls, r.edge, c);
        }
        let e = open.entry(key).or_insert((sent, answered, ok, 0));
        e.1 = answered;
        e.2 = ok;
        e.3 += 1;
    }
    for ((_, _, edge), c) in open {
        close(&mut calls, edge, c);
    }
    (calls, attempts)
}

/// The comparison of every variant of `set` with `model`'s observations.
pub fn compare(set: &RunSet, model: &Model) -> Vec<(String, Vec<Row>)> {
    let mut out = Vec::new();
    for v in &set.variants {
        let s = &v.scenario;
        let n_edges = s.edges.len();
        let per_rep: Vec<PerEdge> = v.runs.iter().map(|r| sim_calls(&r.trace, n_edges)).collect();
        let edge_index = |name: &str| s.edges.iter().position(|e| e.name == name);
        let mut rows = Vec::new();
        let mut push =
            |scope: &'static str, name: String, obs: &[CallSample], sim: &dyn Fn(usize) -> Vec<CallSample>| {
                let o = observed_of(obs);
                let vals: Vec<[Option<f64>; 4]> = (0..per_rep.len()).map(|r| metrics(&sim(r))).collect();
                for (k, metric) in METRICS.iter().enumerate() {
                    // Attempts into a service are one each: no attempts-per-call row.
                    if scope == "service" && k == 3 {
                        continue;
                    }
                    let sm = summarize_metric(metric, vals.iter().map(|x| x[k]).collect());
                    let se = Estimate { value: sm.mean, ci95: sm.ci95 };
                    rows.push(Row {
                        scope,
                        name: name.clone(),
                        metric,
                        verdict: verdict(metric, &o[k], &se),
                        observed: o[k],
                        simulated: se,
                    });
                }
            };
        for c in &model.clients {
            let name = format!("{}->{}", c.name, c.target);
            if let Some(e) = edge_index(&name) {
                push("end-to-end", name, &c.samples, &|r| per_rep[r].0[e].clone());
            }
        }
        for svc in &model.services {
            for call in &svc.calls {
                let name = format!("{}->{}", svc.name, call.to);
                if let Some(e) = edge_index(&name) {
                    push("edge", name, &call.samples, &|r| per_rep[r].0[e].clone());
                }
            }
        }
        for svc in &model.services {
            let into: Vec<usize> =
                s.edges.iter().enumerate().filter(|(_, e)| s.services[e.to].name == svc.name).map(|(i, _)| i).collect();
            if into.is_empty() {
                continue;
            }
            push("service", svc.name.clone(), &svc.attempts, &|r| {
                into.iter().flat_map(|&e| per_rep[r].1[e].iter().copied()).collect()
            });
        }
        out.push((s.variant.clone(), rows));
    }
    out
}

fn show(metric: &str, e: &Estimate) -> String {
    let f = |x: f64| if metric.ends_with("_s") { format!("{:.1}ms", x * 1e3) } else { format!("{x:.3}") };
    match (e.value, e.ci95) {
        (Some(v), Some((lo, hi))) => format!("{} [{}, {}]", f(v), f(lo), f(hi)),
        (Some(v), None) => f(v),
        _ => "-".into(),
    }
}

/// The comparison as a text table.
pub fn render_text(cmp: &[(String, Vec<Row>)]) -> String {
    let mut out = String::new();
    for (variant, rows) in cmp {
        let _ = writeln!(out, "\nsimulated vs observed in the traces — variant \"{variant}\" (95% intervals)");
        let cells: Vec<[String; 5]> = rows
            .iter()
            .map(|r| {
                [
                    format!("{} {}", r.scope, r.name),
                    r.metric.to_string(),
                    show(r.metric, &r.observed),
                    show(r.metric, &r.simulated),
                    r.verdict.to_string(),
                ]
            })
            .collect();
        let head = ["where".to_string(), "metric".into(), "observed".into(), "simulated".into(), "verdict".into()];
        let widths: Vec<usize> = (0..5)
            .map(|k| cells.iter().map(|c| c[k].chars().count()).chain([head[k].len()]).max().unwrap_or(0))
            .collect();
        let line = |c: &[String; 5]| {
            let mut s = String::new();
            for k in 0..5 {
                let _ = write!(s, "{:<w$}  ", c[k], w = widths[k]);
            }
            s.trim_end().to_string() + "\n"
        };
        out.push_str(&line(&head));
        for c in &cells {
            out.push_str(&line(c));
        }
    }
    out
}

fn est_json(e: &Estimate) -> Value {
    json!({ "value": e.value, "ci95": e.ci95.map(|(a, b)| vec![a, b]) })
}

/// The comparison as `compare-traces.json` (`schema = "retrysim.compare_traces/1"`).
pub fn to_json(cmp: &[(String, Vec<Row>)], files: &[PathBuf]) -> Value {
    json!({
        "schema": "retrysim.compare_traces/1",
        "traces": files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "tolerances": { "latency_relative": LATENCY_TOLERANCE, "success_rate": SUCCESS_TOLERANCE, "attempts_per_call": ATTEMPTS_TOLERANCE },
        "variants": cmp.iter().map(|(name, rows)| json!({
            "name": name,
            "rows": rows.iter().map(|r| json!({
                "scope": r.scope, "name": r.name, "metric": r.metric,
                "observed": est_json(&r.observed), "simulated": est_json(&r.simulated), "verdict": r.verdict,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// Draws `compare-traces.png`/`.svg` into `dir`: the end-to-end latency CDF
/// of successful calls, observed and simulated (all replications pooled),
/// for every client of the first variant.
pub fn chart(set: &RunSet, model: &Model, dir: &Path) -> anyhow::Result<()> {
    use crate::charts::draw::{Chart, Line, LineChart, save};
    let Some(v) = set.variants.first() else { return Ok(()) };
    let s = &v.scenario;
    let cdf = |mut x: Vec<f64>| -> Vec<(f64, f64)> {
        x.sort_by(f64::total_cmp);
        let n = x.len() as f64;
        let step = (x.len() / 400).max(1);
        x.iter()
            .enumerate()
            .filter(|(i, _)| i % step == 0 || *i + 1 == x.len())
            .map(|(i, l)| (l.max(1e-6).log10(), (i + 1) as f64 / n))
            .collect()
    };
    let mut lines = Vec::new();
    for (k, c) in model.clients.iter().enumerate() {
        let name = format!("{}->{}", c.name, c.target);
        let Some(e) = s.edges.iter().position(|x| x.name == name) else { continue };
        let obs: Vec<f64> = c.samples.iter().filter(|c| c.ok).map(|c| c.latency).collect();
        let sim: Vec<f64> = v
            .runs
            .iter()
            .flat_map(|r| sim_calls(&r.trace, s.edges.len()).0.swap_remove(e))
            .filter(|c| c.ok)
            .map(|c| c.latency)
            .collect();
        lines.push(Line { name: format!("{name} observed"), color: 2 * k, points: cdf(obs), ..Line::default() });
        lines.push(Line { name: format!("{name} simulated"), color: 2 * k + 1, points: cdf(sim), ..Line::default() });
    }
    save(
        &Chart::Lines(LineChart {
            title: format!("End-to-end latency, traces vs simulation — {}", s.name),
            x_label: "latency (log scale)".into(),
            y_label: "share of successful calls at or below".into(),
            lines,
            x_log10: true,
            legend_lower_right: true,
            ..LineChart::default()
        }),
        dir,
        "compare-traces",
    )
}
