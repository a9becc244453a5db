//! Counters of one run and the metrics computed from them at its end.

use super::class::{ClassCounters, Context, headline};
use super::{LatencyHistogram, TimeSeries, TraceRecord};
use crate::config::{ClientMode, Scenario};
use crate::engine::{Nanos, to_secs_f64};
use crate::policy::DenyReason;
use std::collections::BTreeMap;

/// Metric name → value; `None` where the model has no value.
pub type MetricMap = BTreeMap<String, Option<f64>>;

/// Streaming counters for one run. Only intents that arrived in
/// [warmup, duration) count towards the summary metrics; the time series
/// sees everything.
#[derive(Debug, Clone)]
pub struct RunCollector {
    /// Per client class: its in-window intents (the run's totals add them up).
    pub classes: Vec<ClassCounters>,
    pub edge_attempts: Vec<u64>,
    /// Per metrics slot (services, then the hosts of services with
    /// replicas, see [`host_slots`]).
    pub service_work_ns: Vec<f64>,
    pub service_wasted_ns: Vec<f64>,
    /// Per service: ∫ busy and ∫ queue length over [warmup, duration) (ns).
    pub window_busy: Vec<f64>,
    pub window_queue: Vec<f64>,
    /// The baseline window of the recovery metrics (whole bins in
    /// [warmup, first disturbance); empty without one) and the requests
    /// that reached each service during it, whatever their intent.
    pub baseline: (Nanos, Nanos),
    pub baseline_arrivals: Vec<u64>,
    /// Idempotency ledgers: answers replayed, 409s, 422s, placeholders
    /// recovered, and placeholders in progress past their lease at the end.
    pub ledger_replays: u64,
    pub ledger_conflicts: u64,
    pub ledger_rejects: u64,
    pub ledger_recoveries: u64,
    pub stuck_placeholders: u64,
    /// One intent (client class, number) per kind of violation, for counterexamples.
    pub witnesses: BTreeMap<String, (u32, u64)>,
    /// Per side-effect kind: commits, intents with more than one, and the extra ones.
    pub effects: Vec<u64>,
    pub effect_duplicates: Vec<u64>,
    pub effect_extra: Vec<u64>,
    /// How failed intents ended: `<last outcome> (<reason>)` → count.
    pub failures: BTreeMap<String, u64>,
    /// Retries refused, per reason.
    pub denials: BTreeMap<DenyReason, u64>,
    pub series: TimeSeries,
    pub window: (Nanos, Nanos),
    /// Attempt records of the traced intents, in the order decided.
    pub trace: Vec<TraceRecord>,
    /// Per host of a service with replicas (in [`host_slots`] order): requests
    /// of in-window intents that reached it, attempts sent to it, and `ok`
    /// answers its callers got.
    pub host_arrivals: Vec<u64>,
    pub host_sent: Vec<u64>,
    pub host_ok: Vec<u64>,
    /// Per service: cache lookups and hits of its calls' caches.
    pub cache_lookups: Vec<u64>,
    pub cache_hits: Vec<u64>,
    /// Per service: hosts ejected by outlier detection.
    pub ejections: Vec<u64>,
    /// Per service: hosts that crashed when their queue passed `memory_limit`.
    pub memory_crashes: Vec<u64>,
}

/// The hosts that get metrics of their own: (service, replica) of every
/// host of a service with replicas, in order. Their slots follow the services'.
pub fn host_slots(s: &Scenario) -> Vec<(usize, u32)> {
    s.services
        .iter()
        .enumerate()
        .filter(|(_, sv)| sv.hosts.replicas > 1)
        .flat_map(|(i, sv)| (0..sv.hosts.replicas).map(move |r| (i, r)))
        .collect()
}

impl RunCollector {
    /// Empty counters for `scenario`.
    pub fn new(s: &Scenario) -> Self {
        let services = s.services.len();
        let hosts = host_slots(s).len();
        let n = services + hosts;
        Self {
            classes: vec![ClassCounters::new(services); s.clients.len()],
            edge_attempts: vec![0; s.edges.len()],
            service_work_ns: vec![0.0; n],
            service_wasted_ns: vec![0.0; n],
            window_busy: vec![0.0; n],
            window_queue: vec![0.0; n],
            baseline: super::recovery::baseline_span(s).unwrap_or((0, 0)),
            baseline_arrivals: vec![0; services],
            ledger_replays: 0,
            ledger_conflicts: 0,
            ledger_rejects: 0,
            ledger_recoveries: 0,
            stuck_placeholders: 0,
            witnesses: BTreeMap::new(),
            effects: vec![0; s.effect_kinds.len()],
            effect_duplicates: vec![0; s.effect_kinds.len()],
            effect_extra: vec![0; s.effect_kinds.len()],
            failures: BTreeMap::new(),
            denials: BTreeMap::new(),
            series: TimeSeries::new(s.bin, n, s.clients.len()),
            window: (s.warmup, s.duration),
            trace: Vec::new(),
            host_arrivals: vec![0; hosts],
            host_sent: vec![0; hosts],
            host_ok: vec![0; hosts],
            cache_lookups: vec![0; services],
            cache_hits: vec![0; services],
            ejections: vec![0; services],
            memory_crashes: vec![0; services],
        }
    }

    /// Remembers `intent` as the first example of a violation `kind`.
    pub fn witness(&mut self, kind: &str, intent: (u32, u64)) {
        self.witnesses.entry(kind.to_string()).or_insert(intent);
    }

    /// Whether an intent that arrived at `t` counts.
    #[inline]
    pub fn in_window(&self, t: Nanos) -> bool {
        t >= self.window.0 && t < self.window.1
    }

    /// A request reached service `s` at `now` (counted for the baseline's load).
    #[inline]
    pub fn reached(&mut self, s: usize, now: Nanos) {
        if now >= self.baseline.0 && now < self.baseline.1 {
            self.baseline_arrivals[s] += 1;
        }
    }

    /// Service `s` held `queue_len` waiting and `busy` working over [from, to).
    #[inline(always)]
    pub fn service_state(&mut self, s: usize, from: Nanos, to: Nanos, queue_len: usize, busy: u32) {
        self.series.accumulate(s, from, to, queue_len, busy);
        let (lo, hi) = (from.max(self.window.0), to.min(self.window.1));
        if hi > lo {
            let dt = crate::engine::nanos_f64(hi - lo);
            self.window_busy[s] += busy as f64 * dt;
            self.window_queue[s] += crate::engine::nanos_f64(queue_len as u64) * dt;
        }
    }

    /// Whether a service got more requests over the baseline window than it
    /// can serve (workers / holding time, [`crate::model::unloaded`]).
    fn baseline_overloaded(&self, s: &Scenario) -> bool {
        let secs = to_secs_f64(self.baseline.1.saturating_sub(self.baseline.0));
        secs > 0.0
            && self
                .baseline_arrivals
                .iter()
                .enumerate()
                .any(|(i, &a)| a as f64 / secs > crate::model::unloaded::capacity_per_s(s, i) * (1.0 + 1e-9))
    }

    /// Computes the metrics of the finished run.
    pub fn finish(mut self, s: &Scenario, end: Nanos, events: u64) -> RunResult {
        let window_s = to_secs_f64(s.duration - s.warmup);
        // One client class is its own total: nothing to add up or copy.
        let absorbed = (self.classes.len() != 1).then(|| {
            let mut total = ClassCounters::new(s.services.len());
            self.classes.iter().for_each(|c| total.absorb(c));
            total
        });
        let total = absorbed.as_ref().unwrap_or_else(|| &self.classes[0]);
        // The run's busiest service; a summary of several variants moves the
        // headline to the baseline variant's busiest (RunResult::amplification_values).
        let amp_service = total
            .service_arrivals
            .iter()
            .enumerate()
            .map(|(i, &a)| (i, a))
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map_or(0, |x| x.0);
        let burst_start = |classes: &mut dyn Iterator<Item = &crate::config::ClientSpec>| {
            classes.filter_map(|c| if let ClientMode::Burst { at, .. } = c.mode { Some(at) } else { None }).min()
        };
        let policies = || (0..s.edges.len()).map(|e| s.edge_policy(e));
        let context = Context {
            attempts: s.clients.iter().map(|c| self.edge_attempts[c.edge]).sum(),
            window_s,
            amplification_service: amp_service,
            deadlines: s.clients.iter().any(|c| c.policy.deadline != crate::engine::NEVER),
            burst_start: burst_start(&mut s.clients.iter()),
            bursts_only: s.clients.iter().all(|c| matches!(c.mode, ClientMode::Burst { .. })),
            hedged: policies().any(|p| p.hedging.is_some()),
            client_hedged: s.clients.iter().any(|c| c.policy.hedging.is_some()),
            throttled: policies().any(|p| p.throttle.is_some()),
            cancels: policies().any(|p| p.cancel_on_timeout || p.hedging.as_ref().is_some_and(|h| h.cancel)),
        };
        let clients: Vec<ClientResult> = s
            .clients
            .iter()
            .zip(&self.classes)
            .map(|(spec, counters)| {
                let burst = matches!(spec.mode, ClientMode::Burst { .. });
                let x = Context {
                    attempts: self.edge_attempts[spec.edge],
                    deadlines: spec.policy.deadline != crate::engine::NEVER,
                    burst_start: burst_start(&mut std::iter::once(spec)),
                    bursts_only: burst,
                    client_hedged: spec.policy.hedging.is_some(),
                    ..context
                };
                ClientResult {
                    name: spec.name.clone(),
                    metrics: headline(counters, &x),
                    requests_per_intent: counters.requests_per_intent(),
                }
            })
            .collect();
        // With one class its context is the run's, and so are its metrics.
        let mut m = match (&absorbed, &clients[..]) {
            (None, [only]) => only.metrics.clone(),
            _ => headline(total, &context),
        };
        let mut put = |k: &str, v: Option<f64>| {
            m.insert(k.to_string(), v);
        };
        let ledgers = s.services.iter().any(|sv| sv.ledger.is_some());
        for (k, v) in [
            ("ledger_replays", self.ledger_replays),
            ("ledger_409", self.ledger_conflicts),
            ("ledger_422", self.ledger_rejects),
            ("ledger_recoveries", self.ledger_recoveries),
            ("stuck_placeholders", self.stuck_placeholders),
        ] {
            put(k, ledgers.then_some(v as f64));
        }
        let budgeted = (0..s.edges.len()).any(|e| s.edge_policy(e).budget.is_some());
        let denied = self.denials.get(&DenyReason::Budget).copied().unwrap_or(0);
        put("retries_denied_budget", budgeted.then_some(denied as f64));
        let bins = super::recovery::states(&self.series, self.series.rows().len());
        let rec = super::recovery::recovery(
            &bins,
            s.bin,
            s.warmup,
            s.duration,
            &super::recovery::disturbances(s),
            self.baseline_overloaded(s),
        );
        put("recovery_time_s", rec.recovery_time_s);
        put("recovered_fraction", rec.recovered);
        put("degraded_fraction", rec.degraded);
        put("collapse_time_s", rec.collapse_time_s);
        let mut reasons = BTreeMap::new();
        let why = if rec.never_healthy {
            Some(NEVER_HEALTHY)
        } else if rec.to_the_end {
            Some(DISTURBANCE_TO_END)
        } else {
            None
        };
        if let Some(why) = why {
            for k in ["recovery_time_s", "recovered_fraction", "degraded_fraction"] {
                reasons.insert(k.to_string(), why);
            }
        }
        let degraded_by = rec.degraded_by.map(super::recovery::Condition::name);

        let edges = s
            .edges
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let mut em = MetricMap::new();
                // A client edge counts per intent of its own client class.
                let n = match s.clients.iter().position(|c| c.edge == i) {
                    Some(c) => self.classes[c].intents,
                    None => total.intents,
                };
                em.insert("attempts_per_intent".into(), (n > 0).then(|| self.edge_attempts[i] as f64 / n as f64));
                (e.name.clone(), em)
            })
            .collect();
        let window_ns = (s.duration - s.warmup) as f64;
        let requests = total.requests_per_intent();
        let slots = host_slots(s);
        let slot_map = |i: usize, requests: Option<f64>, workers: f64| {
            let mut sm = MetricMap::new();
            sm.insert("requests_per_intent".into(), requests);
            sm.insert("utilization".into(), Some(self.window_busy[i] / (window_ns * workers)));
            sm.insert("queue_len".into(), Some(self.window_queue[i] / window_ns));
            let w = self.service_work_ns[i];
            sm.insert("wasted_fraction".into(), (w > 0.0).then(|| self.service_wasted_ns[i] / w));
            sm
        };
        let mut services = Vec::new();
        for (i, sv) in s.services.iter().enumerate() {
            let replicas = sv.hosts.replicas;
            let mut sm = slot_map(i, requests[i], sv.workers as f64 * replicas as f64);
            let mine: Vec<usize> = (0..slots.len()).filter(|&k| slots[k].0 == i).collect();
            if replicas > 1 {
                let (sent, ok) = mine.iter().fold((0, 0), |(a, b), &k| (a + self.host_sent[k], b + self.host_ok[k]));
                sm.insert("success_rate".into(), (sent > 0).then(|| ok as f64 / sent as f64));
            }
            if sv.calls.iter().any(|c| c.cache.is_some()) {
                let n = self.cache_lookups[i];
                sm.insert("cache_hit_ratio".into(), (n > 0).then(|| self.cache_hits[i] as f64 / n as f64));
            }
            if sv.hosts.outlier.is_some() {
                sm.insert("ejections".into(), Some(self.ejections[i] as f64));
            }
            if sv.memory.is_some() {
                sm.insert("memory_crashes".into(), Some(self.memory_crashes[i] as f64));
            }
            services.push((sv.name.clone(), sm));
            for k in mine {
                let arrivals = (total.intents > 0).then(|| self.host_arrivals[k] as f64 / total.intents as f64);
                let mut hm = slot_map(s.services.len() + k, arrivals, sv.workers as f64);
                let (sent, ok) = (self.host_sent[k], self.host_ok[k]);
                hm.insert("success_rate".into(), (sent > 0).then(|| ok as f64 / sent as f64));
                services.push((format!("{}[{}]", sv.name, slots[k].1), hm));
            }
        }
        let per_intent = |x: f64| (total.intents > 0).then(|| x / total.intents as f64);
        let effects = s
            .effect_kinds
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let mut km = MetricMap::new();
                km.insert("commits_per_intent".into(), per_intent(self.effects[k] as f64));
                km.insert("duplicate_intents".into(), Some(self.effect_duplicates[k] as f64));
                km.insert("extra".into(), Some(self.effect_extra[k] as f64));
                (name.clone(), km)
            })
            .collect();
        let mut denials = BTreeMap::new();
        for (r, n) in &self.denials {
            denials.insert(r.label().to_string(), *n);
        }
        RunResult {
            metrics: m,
            reasons,
            degraded_by,
            amplification_service: s.services[amp_service].name.clone(),
            clients,
            edges,
            services,
            effects,
            witnesses: self.witnesses,
            failures: self.failures,
            denials,
            latency: match absorbed {
                Some(total) => total.latency,
                None => self.classes.swap_remove(0).latency,
            },
            series: self.series,
            trace: self.trace,
            end,
            events,
        }
    }
}

/// The `reason` of a recovery metric whose baseline window was itself
/// overloaded: there was no healthy state to come back to.
pub const NEVER_HEALTHY: &str = "never_healthy";

/// Why the recovery metrics of a run have no value: the last disturbance
/// lasts to the end of the arrivals, so there is no after to recover in.
pub const DISTURBANCE_TO_END: &str = "disturbance_to_end";

/// One client class's metrics in one run.
#[derive(Debug, Clone)]
pub struct ClientResult {
    pub name: String,
    /// The headline metrics of its intents (see [`super::METRICS`]; those
    /// not counted per class are `None`).
    pub metrics: MetricMap,
    /// Requests arriving at each service per intent of this class, in
    /// scenario order.
    pub requests_per_intent: Vec<Option<f64>>,
}

/// Everything one run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Headline metrics (see [`super::METRICS`]).
    pub metrics: MetricMap,
    /// Why a metric has no value, where the reason is known
    /// (`recovered_fraction` → [`NEVER_HEALTHY`]).
    pub reasons: BTreeMap<String, &'static str>,
    /// For a degraded run (users served, state not back), the condition
    /// that kept it from recovering.
    pub degraded_by: Option<&'static str>,
    /// The service where `amplification` is taken: the run's busiest (the
    /// summaries take it at the baseline's, [`RunResult::amplification_values`]).
    pub amplification_service: String,
    /// Per client class, in scenario order.
    pub clients: Vec<ClientResult>,
    /// Per call edge, in scenario order.
    pub edges: Vec<(String, MetricMap)>,
    /// Per service, in scenario order.
    pub services: Vec<(String, MetricMap)>,
    /// Per side-effect kind (see [`super::EFFECT_METRICS`]).
    pub effects: Vec<(String, MetricMap)>,
    /// One intent (client class, number) per kind of violation seen.
    pub witnesses: BTreeMap<String, (u32, u64)>,
    /// How failed intents ended.
    pub failures: BTreeMap<String, u64>,
    /// Retries refused, per reason.
    pub denials: BTreeMap<String, u64>,
    /// Latency of successful intents in the window.
    pub latency: LatencyHistogram,
    /// The time series.
    pub series: TimeSeries,
    /// Attempt records of the traced intents (empty unless tracing).
    pub trace: Vec<TraceRecord>,
    /// Simulated time at which the run ended.
    pub end: Nanos,
    /// Events processed.
    pub events: u64,
}

impl RunResult {
    /// `amplification` taken at the service named `service`: the run's (its
    /// requests per intent there) and every client class's, in class order;
    /// `None` where this run has no such service.
    pub fn amplification_values(&self, service: &str) -> (Option<f64>, Vec<Option<f64>>) {
        let entry = self.services.iter().find(|(n, _)| n == service);
        let total = entry.and_then(|(_, m)| m.get("requests_per_intent").copied().flatten());
        // Per-class counters are per service: hosts' entries (`api[0]`) are not among them.
        let i = self.services.iter().filter(|(n, _)| !is_host_entry(n)).position(|(n, _)| n == service);
        let classes =
            self.clients.iter().map(|c| i.and_then(|i| c.requests_per_intent.get(i).copied().flatten())).collect();
        (total, classes)
    }

    /// Drops what only the outputs of a single `run` use (the time series,
    /// the latency histogram and the trace), keeping the metrics.
    pub fn drop_detail(&mut self) {
        self.series = TimeSeries::new(self.series.bin(), 0, 0);
        self.latency = LatencyHistogram::unallocated();
        self.trace = Vec::new();
    }
}

/// Whether a `services` entry is one host of a service with replicas (`api[2]`).
pub fn is_host_entry(name: &str) -> bool {
    name.ends_with(']')
}
