//! `summary.json` (schema `retrysim.summary/1`) and the per-variant
//! summaries the table and CSV are made from.

use super::differences::Difference;
use crate::analysis::stats::summarize_metric;
use crate::analysis::survival::{Observed, km_median};
use crate::analysis::{RunSet, Summary};
use crate::config::Experiment;
use crate::engine::to_secs_f64;
use crate::metrics::{
    EDGE_METRICS, EFFECT_METRICS, HOST_METRICS, LatencyHistogram, METRICS, MetricMap, QUEUE_METRICS, SERVICE_METRICS,
};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::collections::BTreeMap;

/// Quantiles at which `latency_cdf` is written.
pub fn cdf_quantiles() -> Vec<f64> {
    let mut q: Vec<f64> = (1..100).map(|i| i as f64 / 100.0).collect();
    q.extend([0.995, 0.999, 0.9995, 0.9999]);
    q
}

/// One variant's metrics summarised over its replications.
#[derive(Debug, Clone, Default)]
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
    /// Per message queue (empty without queues).
    pub queues: Vec<(String, Vec<(String, Summary)>)>,
    /// Totals over replications.
    pub failures: BTreeMap<String, u64>,
    pub denials: BTreeMap<String, u64>,
    /// (quantile, seconds) over all replications' successful intents.
    pub latency_cdf: Vec<(f64, f64)>,
    /// Paired difference to the baseline variant per metric (empty for the baseline).
    pub vs_baseline: Vec<(String, Difference)>,
    /// The baseline's name.
    pub baseline: String,
    /// Degraded replications, by the condition that kept each from recovering.
    pub degraded_by: BTreeMap<String, u64>,
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
    pub fn difference(&self, name: &str) -> Option<&Difference> {
        self.vs_baseline.iter().find(|(k, _)| k == name).map(|(_, s)| s)
    }
}

fn summarize_maps(maps: &[&MetricMap], names: &[&str]) -> Vec<(String, Summary)> {
    summarize_with(names, maps.len(), |j, k| maps[j].get(k).copied().flatten())
}

/// Summarises metrics `names` over `runs` replications, replication `j`'s
/// value of metric `k` being `get(j, k)`.
fn summarize_with(names: &[&str], runs: usize, get: impl Fn(usize, &str) -> Option<f64>) -> Vec<(String, Summary)> {
    names.iter().map(|&k| (k.to_string(), summarize_metric(k, (0..runs).map(|j| get(j, k)).collect()))).collect()
}

/// The Kaplan–Meier median time to recovery ([`km_median`]): every
/// replication counts, one that did not recover as censored at the
/// horizon (the end of the run after the last disturbance). Its `values`
/// are the recovery times (none for a replication that did not recover);
/// an open upper end of the interval is the horizon; without a median
/// (fewer than half recovered) there is no interval either. `None`
/// without a recovery to measure.
fn recovery_median(metrics: &[(String, Summary)], s: &crate::config::Scenario) -> Option<Summary> {
    let get = |k: &str| metrics.iter().find(|(n, _)| n == k).map(|(_, x)| x);
    let (rec, time) = (get("recovered_fraction")?, get("recovery_time_s")?);
    rec.mean?;
    let last_end = crate::metrics::recovery::disturbances(s).iter().map(|d| d.1).max()?;
    let horizon = to_secs_f64(s.duration.checked_sub(last_end).filter(|&h| h > 0)?);
    let mut obs = Vec::new();
    let mut values = Vec::with_capacity(rec.values.len());
    for (r, t) in rec.values.iter().zip(&time.values) {
        match (r, t) {
            (Some(r), Some(t)) if *r >= 0.5 => {
                obs.push(Observed::Event(*t));
                values.push(Some(*t));
            }
            (Some(_), _) => {
                obs.push(Observed::Censored(horizon));
                values.push(None);
            }
            _ => values.push(None),
        }
    }
    let m = km_median(&obs);
    let ci95 = m.median.map(|median| (m.ci95.0.unwrap_or(median), m.ci95.1.unwrap_or(horizon)));
    Some(Summary { mean: m.median, ci95, values })
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
            let runs = &v.runs;
            // Every run's amplification (and every class's) at the one service,
            // read in place of the run's own.
            let amps: Vec<(Option<f64>, Vec<Option<f64>>)> = match &amp {
                Some(name) => runs.iter().map(|r| r.amplification_values(name)).collect(),
                None => Vec::new(),
            };
            let metrics = summarize_with(&METRICS, runs.len(), |j, k| match amps.get(j) {
                Some((total, _)) if k == "amplification" => *total,
                _ => runs[j].metrics.get(k).copied().flatten(),
            });
            let mut reasons = BTreeMap::new();
            for r in runs {
                for (k, why) in &r.reasons {
                    reasons.insert(k.clone(), why.to_string());
                }
            }
            let mut metrics: Vec<(String, Summary)> = metrics
                .into_iter()
                .map(|(k, sum)| {
                    // A reason in any replication: no mean (the values stay).
                    if reasons.contains_key(&k) { (k, Summary { mean: None, ci95: None, ..sum }) } else { (k, sum) }
                })
                .collect();
            if let Some(km) = recovery_median(&metrics, s) {
                metrics.push(("recovery_time_median_s".into(), km));
            }
            let clients = (0..s.clients.len())
                .map(|i| {
                    let summary = summarize_with(&METRICS, runs.len(), |j, k| match amps.get(j) {
                        Some((_, classes)) if k == "amplification" => classes[i],
                        _ => runs[j].clients[i].metrics.get(k).copied().flatten(),
                    });
                    (s.clients[i].name.clone(), summary)
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
            let services: Vec<(String, Vec<(String, Summary)>)> = (0..v.runs.first().map_or(0, |r| r.services.len()))
                .map(|i| {
                    let maps: Vec<&MetricMap> = v.runs.iter().map(|r| &r.services[i].1).collect();
                    let names: Vec<&str> = SERVICE_METRICS
                        .iter()
                        .chain(&HOST_METRICS)
                        .copied()
                        .filter(|k| maps[0].contains_key(*k))
                        .collect();
                    (v.runs[0].services[i].0.clone(), summarize_maps(&maps, &names))
                })
                .collect();
            let effects = per(|r| &r.effects, &EFFECT_METRICS, s.effect_kinds.len());
            let queues = per(|r| &r.queues, &QUEUE_METRICS, s.queues.len());
            let mut failures = BTreeMap::new();
            let mut denials = BTreeMap::new();
            for r in &v.runs {
                for (k, n) in &r.failures {
                    *failures.entry(k.clone()).or_insert(0) += n;
                }
                for (k, n) in &r.denials {
                    *denials.entry(k.clone()).or_insert(0) += n;
                }
            }
            let merged;
            let latency = match v.runs.as_slice() {
                [one] => &one.latency,
                runs => {
                    let mut all = LatencyHistogram::default();
                    runs.iter().for_each(|r| all.merge(&r.latency));
                    merged = all;
                    &merged
                }
            };
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
                queues,
                failures,
                denials,
                latency_cdf,
                vs_baseline: Vec::new(),
                baseline: String::new(),
                degraded_by: runs.iter().filter_map(|r| r.degraded_by).fold(BTreeMap::new(), |mut m, c| {
                    *m.entry(c.to_string()).or_insert(0) += 1;
                    m
                }),
            }
        })
        .collect();
    if baseline < out.len() {
        // The family Holm adjusts over: the metrics the vs-baseline block shows.
        let mut show: Vec<String> = Vec::new();
        for v in &set.variants {
            for m in &v.scenario.show {
                if !show.contains(m) {
                    show.push(m.clone());
                }
            }
        }
        let mut answer: Vec<String> = Vec::new();
        for v in &set.variants {
            for m in &v.scenario.answer {
                if !answer.contains(m) {
                    answer.push(m.clone());
                }
            }
        }
        // Class, service, edge and effect paths among the answers have differences too.
        let paths = super::layout::answers(&super::layout::Variants(&out), &answer);
        let columns = super::vs_baseline::block_columns(&out, &show, &answer);
        let family: Vec<&str> = columns.iter().map(|c| c.path.as_str()).collect();
        let mut margins = Vec::new();
        for (m, margin) in set.variants.iter().flat_map(|v| &v.scenario.equivalence) {
            if !margins.iter().any(|(k, _): &(String, _)| k == m) {
                margins.push((m.clone(), *margin));
            }
        }
        super::differences::compare_to_baseline(&mut out, baseline, &family, &margins, &paths);
    }
    out
}

/// Entries sorted by key, the last of equal keys kept: the keys a JSON
/// object of retrysim's outputs has, in the order they are written
/// (`serde_json`'s maps are sorted).
fn sorted<'a, T>(entries: impl Iterator<Item = (&'a str, T)>) -> Vec<(&'a str, T)> {
    let mut v: Vec<(&str, T)> = entries.collect();
    // Reversed, so that the stable sort puts the last of equal keys first.
    v.reverse();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v.dedup_by(|later, kept| later.0 == kept.0);
    v
}

/// A metric's summary: `ci95`, `mean`, `reason` (if any), and in
/// `vs_baseline` `p`, `p_adjusted` and `significant`; then `values`.
struct MetricJson<'a> {
    summary: &'a Summary,
    reason: Option<&'a str>,
    test: Option<&'a Difference>,
}

impl Serialize for MetricJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let equivalence = self.test.and_then(|d| d.equivalence);
        let n = 3 + self.reason.is_some() as usize + 3 * self.test.is_some() as usize + equivalence.is_some() as usize;
        let mut m = ser.serialize_map(Some(n))?;
        m.serialize_entry("ci95", &self.summary.ci95)?;
        if let Some(e) = equivalence {
            #[derive(serde::Serialize)]
            struct EquivalenceJson {
                equivalent: bool,
                margin: f64,
                p: Option<f64>,
            }
            m.serialize_entry(
                "equivalence",
                &EquivalenceJson { equivalent: e.equivalent(), margin: e.margin, p: e.p },
            )?;
        }
        m.serialize_entry("mean", &self.summary.mean)?;
        if let Some(d) = self.test {
            m.serialize_entry("p", &d.p)?;
            m.serialize_entry("p_adjusted", &d.p_adjusted)?;
        }
        if let Some(why) = self.reason {
            m.serialize_entry("reason", why)?;
        }
        if let Some(d) = self.test {
            m.serialize_entry("significant", &d.significant())?;
        }
        m.serialize_entry("values", &self.summary.values)?;
        m.end()
    }
}

/// A map of metric names to their summaries.
struct MetricsJson<'a>(&'a [(String, Summary)], Option<&'a BTreeMap<String, String>>);

impl Serialize for MetricsJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let entries = sorted(self.0.iter().map(|(k, s)| (k.as_str(), s)));
        let mut m = ser.serialize_map(Some(entries.len()))?;
        for (k, summary) in entries {
            let reason = self.1.and_then(|r| r.get(k)).map(String::as_str);
            m.serialize_entry(k, &MetricJson { summary, reason, test: None })?;
        }
        m.end()
    }
}

/// Clients, edges, services or effects: each name's metrics.
struct GroupsJson<'a>(&'a [(String, Vec<(String, Summary)>)]);

impl Serialize for GroupsJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let entries = sorted(self.0.iter().map(|(n, ms)| (n.as_str(), ms)));
        let mut m = ser.serialize_map(Some(entries.len()))?;
        for (n, ms) in entries {
            m.serialize_entry(n, &MetricsJson(ms, None))?;
        }
        m.end()
    }
}

/// A value of `vs_baseline`: the baseline's name or a metric's difference.
enum VsEntry<'a> {
    Baseline(&'a str),
    Metric(MetricJson<'a>),
}

impl Serialize for VsEntry<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self {
            VsEntry::Baseline(name) => ser.serialize_str(name),
            VsEntry::Metric(m) => m.serialize(ser),
        }
    }
}

/// `vs_baseline`: null for the baseline itself.
struct VsBaselineJson<'a>(&'a VariantSummary);

impl Serialize for VsBaselineJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        if v.vs_baseline.is_empty() {
            return ser.serialize_none();
        }
        let metrics = v.vs_baseline.iter().map(|(k, d)| {
            (k.as_str(), VsEntry::Metric(MetricJson { summary: &d.summary, reason: None, test: Some(d) }))
        });
        let entries = sorted(std::iter::once(("baseline", VsEntry::Baseline(&v.baseline))).chain(metrics));
        let mut m = ser.serialize_map(Some(entries.len()))?;
        for (k, e) in &entries {
            m.serialize_entry(k, e)?;
        }
        m.end()
    }
}

/// `latency_cdf`: `{"latency_s": x, "q": q}` per quantile.
struct CdfJson<'a>(&'a [(f64, f64)]);

impl Serialize for CdfJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        struct Point(f64, f64);
        impl Serialize for Point {
            fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
                let mut m = ser.serialize_map(Some(2))?;
                m.serialize_entry("latency_s", &self.1)?;
                m.serialize_entry("q", &self.0)?;
                m.end()
            }
        }
        ser.collect_seq(self.0.iter().map(|&(q, x)| Point(q, x)))
    }
}

/// One variant of `summary.json`.
struct VariantJson<'a>(&'a VariantSummary, usize);

impl Serialize for VariantJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let v = self.0;
        let mut m = ser.serialize_map(Some(14))?;
        m.serialize_entry("amplification_service", &v.amplification_service)?;
        m.serialize_entry("clients", &GroupsJson(&v.clients))?;
        m.serialize_entry("degraded_by", &v.degraded_by)?;
        m.serialize_entry("edges", &GroupsJson(&v.edges))?;
        m.serialize_entry("effects", &GroupsJson(&v.effects))?;
        m.serialize_entry("failures", &v.failures)?;
        m.serialize_entry("latency_cdf", &CdfJson(&v.latency_cdf))?;
        m.serialize_entry("metrics", &MetricsJson(&v.metrics, Some(&v.reasons)))?;
        m.serialize_entry("name", &v.name)?;
        m.serialize_entry("policy", &v.policy)?;
        if !v.queues.is_empty() {
            m.serialize_entry("queues", &GroupsJson(&v.queues))?;
        }
        m.serialize_entry("replications", &self.1)?;
        m.serialize_entry("retry_denials", &v.denials)?;
        m.serialize_entry("services", &GroupsJson(&v.services))?;
        m.serialize_entry("vs_baseline", &VsBaselineJson(v))?;
        m.end()
    }
}

/// The `summary.json` document.
struct SummaryJson<'a> {
    exp: &'a Experiment,
    set: &'a RunSet,
    summaries: &'a [VariantSummary],
}

impl Serialize for SummaryJson<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        struct ExperimentJson<'a>(&'a Experiment, &'a [VariantSummary]);
        impl Serialize for ExperimentJson<'_> {
            fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
                let first = &self.0.variants[0];
                let mut m = ser.serialize_map(Some(9))?;
                // The paths that answer the question: as written, or the defaults.
                m.serialize_entry(
                    "answer",
                    &super::layout::answers(&super::layout::Variants(self.1), &self.0.answer()),
                )?;
                m.serialize_entry("bin_s", &to_secs_f64(first.bin))?;
                m.serialize_entry("duration_s", &to_secs_f64(first.duration))?;
                m.serialize_entry("file", &self.0.path.display().to_string())?;
                m.serialize_entry("name", &first.name)?;
                m.serialize_entry("question", &self.0.question())?;
                m.serialize_entry("seed", &first.seed)?;
                m.serialize_entry("show", &self.0.show())?;
                m.serialize_entry("warmup_s", &to_secs_f64(first.warmup))?;
                m.end()
            }
        }
        let variants: Vec<VariantJson> =
            self.summaries.iter().zip(&self.set.variants).map(|(v, runs)| VariantJson(v, runs.runs.len())).collect();
        let mut m = ser.serialize_map(Some(3))?;
        m.serialize_entry("experiment", &ExperimentJson(self.exp, self.summaries))?;
        m.serialize_entry("schema", "retrysim.summary/1")?;
        m.serialize_entry("variants", &variants)?;
        m.end()
    }
}

/// The text of `summary.json` (schema `retrysim.summary/1`), pretty
/// printed with a final newline. Written straight from the summaries, in
/// the order of sorted keys, with no JSON tree in between.
pub fn summary_json(exp: &Experiment, set: &RunSet, summaries: &[VariantSummary]) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(32 * 1024);
    serde_json::to_writer_pretty(&mut out, &SummaryJson { exp, set, summaries })?;
    out.push(b'\n');
    // serde_json writes UTF-8 only.
    String::from_utf8(out).map_err(<serde_json::Error as serde::ser::Error>::custom)
}
