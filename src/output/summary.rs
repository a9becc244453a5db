//! `summary.json` (schema `retrysim.summary/1`) and the per-variant
//! summaries the table and CSV are made from.

use crate::analysis::stats::summarize_metric;
use crate::analysis::{RunSet, Summary};
use crate::config::Experiment;
use crate::engine::to_secs_f64;
use crate::metrics::{EDGE_METRICS, EFFECT_METRICS, LatencyHistogram, METRICS, MetricMap, SERVICE_METRICS};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Quantiles at which `latency_cdf` is written.
pub fn cdf_quantiles() -> Vec<f64> {
    let mut q: Vec<f64> = (1..100).map(|i| i as f64 / 100.0).collect();
    q.extend([0.995, 0.999, 0.9995, 0.9999]);
    q
}

/// One variant's metrics summarised over its replications.
#[derive(Debug, Clone)]
pub struct VariantSummary {
    pub name: String,
    pub policy: String,
    pub metrics: Vec<(String, Summary)>,
    /// Why a metric has no mean, where known (`recovered_fraction` →
    /// `never_healthy`).
    pub reasons: BTreeMap<String, String>,
    /// Where `amplification` is taken: the baseline variant's busiest
    /// service, the same for every variant.
    pub amplification_service: String,
    /// Per client class: the headline metrics of its intents.
    pub clients: Vec<(String, Vec<(String, Summary)>)>,
    pub edges: Vec<(String, Vec<(String, Summary)>)>,
    pub services: Vec<(String, Vec<(String, Summary)>)>,
    /// Per side-effect kind.
    pub effects: Vec<(String, Vec<(String, Summary)>)>,
    /// Totals over replications.
    pub failures: BTreeMap<String, u64>,
    pub denials: BTreeMap<String, u64>,
    /// (quantile, seconds) over all replications' successful intents.
    pub latency_cdf: Vec<(f64, f64)>,
    /// Paired difference to the baseline variant per metric (empty for the baseline).
    pub vs_baseline: Vec<(String, Summary)>,
    /// The baseline's name.
    pub baseline: String,
}

impl VariantSummary {
    /// The summary of metric `name`.
    pub fn metric(&self, name: &str) -> Option<&Summary> {
        self.metrics.iter().find(|(k, _)| k == name).map(|(_, s)| s)
    }

    /// Why metric `name` has no mean, if known.
    pub fn reason(&self, name: &str) -> Option<&str> {
        self.reasons.get(name).map(String::as_str)
    }

    /// The paired difference to the baseline of metric `name`.
    pub fn difference(&self, name: &str) -> Option<&Summary> {
        self.vs_baseline.iter().find(|(k, _)| k == name).map(|(_, s)| s)
    }
}

fn summarize_maps(maps: &[&MetricMap], names: &[&str]) -> Vec<(String, Summary)> {
    names
        .iter()
        .map(|&k| (k.to_string(), summarize_metric(k, maps.iter().map(|m| m.get(k).copied().flatten()).collect())))
        .collect()
}

/// Summarises every variant of a run set against its first variant.
pub fn summarize_runs(set: &RunSet) -> Vec<VariantSummary> {
    summarize_against(set, 0)
}

/// Summarises every variant of a run set, taking `amplification` at the
/// service where variant `baseline` has most requests per intent, and
/// fills the paired differences to `baseline`.
pub fn summarize_against(set: &RunSet, baseline: usize) -> Vec<VariantSummary> {
    let amp = set.amplification_service(baseline);
    let mut out: Vec<VariantSummary> = set
        .variants
        .iter()
        .map(|v| {
            let s = &v.scenario;
            // Every run's amplification (and every class's) at the one service.
            let runs: Vec<crate::metrics::RunResult> = v
                .runs
                .iter()
                .map(|r| {
                    let mut r = r.clone_metrics();
                    if let Some(name) = &amp {
                        r.amplification_at(name);
                    }
                    r
                })
                .collect();
            let metrics = summarize_maps(&runs.iter().map(|r| &r.metrics).collect::<Vec<_>>(), &METRICS);
            let mut reasons = BTreeMap::new();
            for r in &runs {
                for (k, why) in &r.reasons {
                    reasons.insert(k.clone(), why.to_string());
                }
            }
            let metrics = metrics
                .into_iter()
                .map(|(k, sum)| {
                    // A reason in any replication: no mean (the values stay).
                    if reasons.contains_key(&k) { (k, Summary { mean: None, ci95: None, ..sum }) } else { (k, sum) }
                })
                .collect();
            let clients = (0..s.clients.len())
                .map(|i| {
                    let maps: Vec<&MetricMap> = runs.iter().map(|r| &r.clients[i].metrics).collect();
                    (s.clients[i].name.clone(), summarize_maps(&maps, &METRICS))
                })
                .collect();
            let per = |pick: fn(&crate::metrics::RunResult) -> &Vec<(String, MetricMap)>, names: &[&str], n: usize| {
                (0..n)
                    .map(|i| {
                        let maps: Vec<&MetricMap> = runs.iter().map(|r| &pick(r)[i].1).collect();
                        let name = runs.first().map(|r| pick(r)[i].0.clone()).unwrap_or_default();
                        (name, summarize_maps(&maps, names))
                    })
                    .collect::<Vec<_>>()
            };
            let edges = per(|r| &r.edges, &EDGE_METRICS, s.edges.len());
            let services = per(|r| &r.services, &SERVICE_METRICS, s.services.len());
            let effects = per(|r| &r.effects, &EFFECT_METRICS, s.effect_kinds.len());
            let mut failures = BTreeMap::new();
            let mut denials = BTreeMap::new();
            let mut latency = LatencyHistogram::default();
            for r in &v.runs {
                for (k, n) in &r.failures {
                    *failures.entry(k.clone()).or_insert(0) += n;
                }
                for (k, n) in &r.denials {
                    *denials.entry(k.clone()).or_insert(0) += n;
                }
                latency.merge(&r.latency);
            }
            let qs = cdf_quantiles();
            let latency_cdf = qs.iter().copied().zip(latency.quantiles_s(&qs)).collect();
            let policy: Vec<&str> = s.clients.iter().map(|c| c.policy.name.as_str()).collect();
            VariantSummary {
                name: s.variant.clone(),
                policy: policy.join(", "),
                metrics,
                reasons,
                amplification_service: amp.clone().unwrap_or_default(),
                clients,
                edges,
                services,
                effects,
                failures,
                denials,
                latency_cdf,
                vs_baseline: Vec::new(),
                baseline: String::new(),
            }
        })
        .collect();
    if baseline < out.len() {
        compare_to_baseline(&mut out, baseline);
    }
    out
}

/// Fills every variant's paired differences to variant `baseline`. A
/// metric that has a reason instead of a mean in either variant has no
/// difference either.
pub fn compare_to_baseline(summaries: &mut [VariantSummary], baseline: usize) {
    let base = summaries[baseline].clone();
    for (i, v) in summaries.iter_mut().enumerate() {
        v.baseline = base.name.clone();
        v.vs_baseline.clear();
        if i == baseline {
            continue;
        }
        v.vs_baseline = v
            .metrics
            .iter()
            .map(|(k, s)| {
                let b = base.metric(k).map(|b| b.values.clone()).unwrap_or_default();
                let d = crate::analysis::stats::paired_metric(k, &b, &s.values);
                if v.reasons.contains_key(k) || base.reasons.contains_key(k) {
                    (k.clone(), Summary { mean: None, ci95: None, ..d })
                } else {
                    (k.clone(), d)
                }
            })
            .collect();
    }
}

fn summary_value(s: &Summary) -> Value {
    json!({
        "mean": s.mean,
        "ci95": s.ci95.map(|(lo, hi)| json!([lo, hi])).unwrap_or(Value::Null),
        "values": s.values,
    })
}

fn vs_baseline_value(v: &VariantSummary) -> Value {
    if v.vs_baseline.is_empty() {
        return Value::Null;
    }
    let mut m: Map<String, Value> = Map::new();
    m.insert("baseline".into(), json!(v.baseline));
    for (k, s) in &v.vs_baseline {
        let mut o = summary_value(s);
        o["significant"] = json!(crate::analysis::stats::significant(s));
        m.insert(k.clone(), o);
    }
    Value::Object(m)
}

fn metrics_object(ms: &[(String, Summary)], reasons: &BTreeMap<String, String>) -> Value {
    Value::Object(
        ms.iter()
            .map(|(k, s)| {
                let mut o = summary_value(s);
                if let Some(why) = reasons.get(k) {
                    o["reason"] = json!(why);
                }
                (k.clone(), o)
            })
            .collect::<Map<_, _>>(),
    )
}

fn groups_object(groups: &[(String, Vec<(String, Summary)>)]) -> Value {
    let none = BTreeMap::new();
    Value::Object(groups.iter().map(|(n, m)| (n.clone(), metrics_object(m, &none))).collect())
}

/// The `summary.json` document.
pub fn summary_json(exp: &Experiment, set: &RunSet, summaries: &[VariantSummary]) -> Value {
    let first = &exp.variants[0];
    let variants: Vec<Value> = summaries
        .iter()
        .zip(&set.variants)
        .map(|(v, runs)| {
            json!({
                "name": v.name,
                "policy": v.policy,
                "replications": runs.runs.len(),
                "metrics": metrics_object(&v.metrics, &v.reasons),
                "amplification_service": v.amplification_service,
                "clients": groups_object(&v.clients),
                "edges": groups_object(&v.edges),
                "services": groups_object(&v.services),
                "effects": groups_object(&v.effects),
                "failures": v.failures,
                "retry_denials": v.denials,
                "vs_baseline": vs_baseline_value(v),
                "latency_cdf": v.latency_cdf.iter().map(|(q, x)| json!({"q": q, "latency_s": x})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "schema": "retrysim.summary/1",
        "experiment": {
            "name": first.name,
            "file": exp.path.display().to_string(),
            "seed": first.seed,
            "duration_s": to_secs_f64(first.duration),
            "warmup_s": to_secs_f64(first.warmup),
            "bin_s": to_secs_f64(first.bin),
            "show": exp.show(),
        },
        "variants": variants,
    })
}
