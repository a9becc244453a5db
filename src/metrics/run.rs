//! Counters of one run and the metrics computed from them at its end.

use super::{LatencyHistogram, TimeSeries, TraceRecord};
use crate::config::Scenario;
use crate::engine::{Nanos, to_secs_f64};
use crate::policy::DenyReason;
use std::collections::BTreeMap;

/// Metric name → value; `None` where the model has no value.
pub type MetricMap = BTreeMap<String, Option<f64>>;

/// Streaming counters for one run. Only intents that arrived in
/// [warmup, duration) count towards the summary metrics; the time series
/// sees everything.
#[derive(Debug)]
pub struct RunCollector {
    pub intents: u64,
    /// Intents in the window per client class.
    pub client_intents: Vec<u64>,
    pub ok: u64,
    pub edge_attempts: Vec<u64>,
    pub service_arrivals: Vec<u64>,
    pub service_work_ns: Vec<f64>,
    pub service_wasted_ns: Vec<f64>,
    /// Per service: work cancelled before it was done (ns).
    pub service_cancelled_ns: Vec<f64>,
    /// Hedged copies sent, hedged intents answered first by a hedge, and
    /// attempts the client-side throttle refused or held back.
    pub hedges: u64,
    pub hedge_wins: u64,
    pub throttled: u64,
    /// Per service: ∫ busy and ∫ queue length over [warmup, duration) (ns).
    pub window_busy: Vec<f64>,
    pub window_queue: Vec<f64>,
    pub latency: LatencyHistogram,
    pub duplicates: u64,
    pub orphan_commits: u64,
    /// Effects intents should have caused and did not.
    pub lost_effects: u64,
    /// Idempotency ledgers: answers replayed, 409s, 422s, placeholders
    /// recovered, and placeholders in progress past their lease at the end.
    pub ledger_replays: u64,
    pub ledger_conflicts: u64,
    pub ledger_rejects: u64,
    pub ledger_recoveries: u64,
    pub stuck_placeholders: u64,
    /// Intents that ended after their client's deadline.
    pub deadline_overruns: u64,
    /// One intent (client class, number) per kind of violation, for counterexamples.
    pub witnesses: BTreeMap<String, (u32, u64)>,
    /// Outbox events written.
    pub events_sent: u64,
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
}

impl RunCollector {
    /// Empty counters for `scenario`.
    pub fn new(s: &Scenario) -> Self {
        let n = s.services.len();
        Self {
            intents: 0,
            client_intents: vec![0; s.clients.len()],
            ok: 0,
            edge_attempts: vec![0; s.edges.len()],
            service_arrivals: vec![0; n],
            service_work_ns: vec![0.0; n],
            service_wasted_ns: vec![0.0; n],
            service_cancelled_ns: vec![0.0; n],
            hedges: 0,
            hedge_wins: 0,
            throttled: 0,
            window_busy: vec![0.0; n],
            window_queue: vec![0.0; n],
            latency: LatencyHistogram::default(),
            duplicates: 0,
            orphan_commits: 0,
            lost_effects: 0,
            ledger_replays: 0,
            ledger_conflicts: 0,
            ledger_rejects: 0,
            ledger_recoveries: 0,
            stuck_placeholders: 0,
            deadline_overruns: 0,
            witnesses: BTreeMap::new(),
            events_sent: 0,
            effects: vec![0; s.effect_kinds.len()],
            effect_duplicates: vec![0; s.effect_kinds.len()],
            effect_extra: vec![0; s.effect_kinds.len()],
            failures: BTreeMap::new(),
            denials: BTreeMap::new(),
            series: TimeSeries::new(s.bin, n),
            window: (s.warmup, s.duration),
            trace: Vec::new(),
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

    /// Service `s` held `queue_len` waiting and `busy` working over [from, to).
    #[inline]
    pub fn service_state(&mut self, s: usize, from: Nanos, to: Nanos, queue_len: usize, busy: u32) {
        self.series.accumulate(s, from, to, queue_len, busy);
        let (lo, hi) = (from.max(self.window.0), to.min(self.window.1));
        if hi > lo {
            let dt = (hi - lo) as f64;
            self.window_busy[s] += busy as f64 * dt;
            self.window_queue[s] += queue_len as f64 * dt;
        }
    }

    /// Computes the metrics of the finished run.
    pub fn finish(self, s: &Scenario, end: Nanos, events: u64) -> RunResult {
        let intents = self.intents as f64;
        let per_intent = |x: f64| (self.intents > 0).then(|| x / intents);
        let window_s = to_secs_f64(s.duration - s.warmup);
        let mut m = MetricMap::new();
        let mut put = |k: &str, v: Option<f64>| {
            m.insert(k.to_string(), v);
        };
        put("intents", Some(intents));
        put("success_rate", per_intent(self.ok as f64));
        put("goodput_per_s", Some(self.ok as f64 / window_s));
        let client_attempts: u64 = s.clients.iter().map(|c| self.edge_attempts[c.edge]).sum();
        put("attempts_per_intent", per_intent(client_attempts as f64));
        let (amp_service, amp) = self
            .service_arrivals
            .iter()
            .enumerate()
            .map(|(i, &a)| (i, a))
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .unwrap_or((0, 0));
        put("amplification", per_intent(amp as f64));
        put("latency_mean_s", self.latency.mean_s());
        let mut tail = self.latency.quantiles_s(&[0.5, 0.99, 0.999]).into_iter();
        put("latency_p50_s", tail.next());
        put("latency_p99_s", tail.next());
        put("latency_p999_s", tail.next());
        let work: f64 = self.service_work_ns.iter().sum();
        let wasted: f64 = self.service_wasted_ns.iter().sum();
        put("wasted_fraction", (work > 0.0).then(|| wasted / work));
        put("duplicate_intents", Some(self.duplicates as f64));
        put("orphan_commits", Some(self.orphan_commits as f64));
        put("lost_effects", Some(self.lost_effects as f64));
        put("outbox_events_per_intent", per_intent(self.events_sent as f64));
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
        let deadlines = s.clients.iter().any(|c| c.policy.deadline != crate::engine::NEVER);
        put("deadline_overruns", deadlines.then_some(self.deadline_overruns as f64));
        let budgeted = (0..s.edges.len()).any(|e| s.edge_policy(e).budget.is_some());
        let denied = self.denials.get(&DenyReason::Budget).copied().unwrap_or(0);
        put("retries_denied_budget", budgeted.then_some(denied as f64));
        let policies = || (0..s.edges.len()).map(|e| s.edge_policy(e));
        let hedged = policies().any(|p| p.hedging.is_some());
        put("hedges_per_intent", if hedged { per_intent(self.hedges as f64) } else { None });
        let client_hedged = s.clients.iter().any(|c| c.policy.hedging.is_some());
        put("hedge_wins", if client_hedged { per_intent(self.hedge_wins as f64) } else { None });
        let throttled = policies().any(|p| p.throttle.is_some());
        put("throttled_per_intent", if throttled { per_intent(self.throttled as f64) } else { None });
        let cancels = policies().any(|p| p.cancel_on_timeout || p.hedging.as_ref().is_some_and(|h| h.cancel));
        let cancelled: f64 = self.service_cancelled_ns.iter().sum();
        put("cancelled_fraction", (cancels && work + cancelled > 0.0).then(|| cancelled / (work + cancelled)));
        let rows = self.series.rows();
        let goodput: Vec<u64> = rows.iter().map(|r| r.goodput).collect();
        let offered: Vec<u64> = rows.iter().map(|r| r.offered).collect();
        let rec = super::recovery::recovery(
            &goodput,
            &offered,
            s.bin,
            s.warmup,
            s.duration,
            &super::recovery::disturbances(s),
        );
        put("recovery_time_s", rec.recovery_time_s);
        put("recovered_fraction", rec.recovered);
        put("collapse_time_s", rec.collapse_time_s);

        let edges = s
            .edges
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let mut em = MetricMap::new();
                // A client edge counts per intent of its own client class.
                let own = s.clients.iter().position(|c| c.edge == i).map(|c| self.client_intents[c]);
                let value = match own {
                    Some(n) => (n > 0).then(|| self.edge_attempts[i] as f64 / n as f64),
                    None => per_intent(self.edge_attempts[i] as f64),
                };
                em.insert("attempts_per_intent".into(), value);
                (e.name.clone(), em)
            })
            .collect();
        let window_ns = (s.duration - s.warmup) as f64;
        let services = s
            .services
            .iter()
            .enumerate()
            .map(|(i, sv)| {
                let mut sm = MetricMap::new();
                sm.insert("requests_per_intent".into(), per_intent(self.service_arrivals[i] as f64));
                sm.insert("utilization".into(), Some(self.window_busy[i] / (window_ns * sv.workers as f64)));
                sm.insert("queue_len".into(), Some(self.window_queue[i] / window_ns));
                let w = self.service_work_ns[i];
                sm.insert("wasted_fraction".into(), (w > 0.0).then(|| self.service_wasted_ns[i] / w));
                (sv.name.clone(), sm)
            })
            .collect();
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
            amplification_service: s.services[amp_service].name.clone(),
            edges,
            services,
            effects,
            witnesses: self.witnesses,
            failures: self.failures,
            denials,
            latency: self.latency,
            series: self.series,
            trace: self.trace,
            end,
            events,
        }
    }
}

/// Everything one run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Headline metrics (see [`super::METRICS`]).
    pub metrics: MetricMap,
    /// The service where `amplification` is largest.
    pub amplification_service: String,
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
    /// Drops what only the outputs of a single `run` use (the time series,
    /// the latency histogram and the trace), keeping the metrics.
    pub fn drop_detail(&mut self) {
        self.series = TimeSeries::new(self.series.bin(), 0);
        self.latency = LatencyHistogram::unallocated();
        self.trace = Vec::new();
    }
}
