//! Counters of one run and the metrics computed from them at its end.

use super::class::{ClassCounters, Context, headline};
use super::tally::{Counters, INSIDE, Tally};
use super::{LatencyHistogram, TimeSeries, TraceRecord};
use crate::config::{ClientMode, ReconcileAction, Scenario};
use crate::engine::{Nanos, to_secs_f64};
use crate::policy::DenyReason;
use std::collections::BTreeMap;

/// Metric name → value; `None` where the model has no value.
pub type MetricMap = BTreeMap<String, Option<f64>>;

/// Streaming counters for one run. Only intents that arrived in
/// [warmup, duration) count towards the summary metrics (the inside of
/// the window, resolved once per intent into a [`Tally`]); the time series
/// sees everything.
#[derive(Debug, Clone)]
pub struct RunCollector {
    /// The counts outside and inside the measurement window ([`INSIDE`]).
    sides: [Counters; 2],
    /// Per service: ∫ busy and ∫ queue length over [warmup, duration) (ns).
    pub window_busy: Vec<f64>,
    pub window_queue: Vec<f64>,
    /// The baseline window of the recovery metrics (whole bins in
    /// [warmup, first disturbance); empty without one) and the requests
    /// that reached each service during it, whatever their intent.
    pub baseline: (Nanos, Nanos),
    pub baseline_arrivals: Vec<u64>,
    /// Placeholders in progress past their lease at the end.
    pub stuck_placeholders: u64,
    pub series: TimeSeries,
    pub window: (Nanos, Nanos),
    /// Attempt records of the traced intents, in the order decided.
    pub trace: Vec<TraceRecord>,
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
            sides: [Counters::new(s, hosts), Counters::new(s, hosts)],
            window_busy: vec![0.0; n],
            window_queue: vec![0.0; n],
            baseline: super::recovery::baseline_span(s).unwrap_or((0, 0)),
            baseline_arrivals: vec![0; services],
            stuck_placeholders: 0,
            series: TimeSeries::new(s.bin, n, s.clients.len()),
            window: (s.warmup, s.duration),
            trace: Vec::new(),
        }
    }

    /// The tally of an intent of client class `client` that arrived at
    /// `arrived`: the window is resolved here, once per intent.
    #[inline]
    pub fn tally(&self, arrived: Nanos, client: u32) -> Tally {
        Tally::new(self.in_window(arrived), client)
    }

    /// The counts an event of an intent with tally `t` goes to.
    #[inline(always)]
    pub fn counts(&mut self, t: Tally) -> &mut Counters {
        &mut self.sides[t.side()]
    }

    /// The counters of `t`'s client class on its side of the window.
    #[inline(always)]
    pub fn class(&mut self, t: Tally) -> &mut ClassCounters {
        &mut self.sides[t.side()].classes[t.client()]
    }

    /// The counts of something that happens at `now` rather than for an
    /// intent (a host crash).
    #[inline]
    pub fn counts_at(&mut self, now: Nanos) -> &mut Counters {
        let side = self.in_window(now) as usize;
        &mut self.sides[side]
    }

    /// Own work of `work` ns for an intent with tally `t` ended at `now` at
    /// metrics slot `svc` and, when its host has one, `host`; `abandoned`:
    /// its caller had stopped waiting (the work is wasted).
    #[inline]
    pub fn work_done(&mut self, t: Tally, svc: usize, host: Option<usize>, work: f64, abandoned: bool, now: Nanos) {
        let class = self.class(t);
        class.work_ns += work;
        if abandoned {
            class.wasted_ns += work;
        }
        for k in std::iter::once(svc).chain(host) {
            self.counts(t).work(k, work, abandoned);
            if abandoned {
                self.series.at(now).wasted[k] += 1;
            }
        }
    }

    /// Work of a request with tally `t` was cancelled at `now` after `done`
    /// of it (wasted, as [`RunCollector::work_done`] counts abandoned work)
    /// with `left` of it never done (saved by the cancellation).
    pub fn work_cancelled(&mut self, t: Tally, svc: usize, host: Option<usize>, done: f64, left: f64, now: Nanos) {
        self.work_done(t, svc, host, done, true, now);
        self.class(t).cancelled_ns += left;
    }

    /// An intent with tally `t` (its client class's `owner` number) ended
    /// at `now`, `latency` after it arrived, `ok` or failed with `failure`;
    /// `deadline` is its client's ([`crate::engine::NEVER`] = none).
    #[allow(clippy::too_many_arguments)]
    pub fn intent_ended(
        &mut self,
        t: Tally,
        owner: (u32, u64),
        now: Nanos,
        latency: Nanos,
        ok: bool,
        failure: String,
        deadline: Nanos,
    ) {
        if ok {
            self.series.record_success(now, latency, t.client());
        }
        if deadline != crate::engine::NEVER && latency > deadline {
            self.class(t).deadline_overruns += 1;
            self.counts(t).witness("deadline_overrun", owner);
        }
        self.class(t).ended(now, latency, ok);
        if !ok {
            *self.counts(t).failures.entry(failure).or_insert(0) += 1;
        }
    }

    /// The counts the summary reads.
    pub fn inside(&mut self) -> &mut Counters {
        &mut self.sides[INSIDE]
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
    pub fn finish(self, s: &Scenario, end: Nanos, events: u64) -> RunResult {
        let overloaded = self.baseline_overloaded(s);
        let [_, mut inside] = self.sides;
        let window_s = to_secs_f64(s.duration - s.warmup);
        // One client class is its own total: nothing to add up or copy.
        let absorbed = (inside.classes.len() != 1).then(|| {
            let mut total = ClassCounters::new(s.services.len());
            inside.classes.iter().for_each(|c| total.absorb(c));
            total
        });
        let total = absorbed.as_ref().unwrap_or_else(|| &inside.classes[0]);
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
            attempts: s.clients.iter().map(|c| inside.edge_attempts[c.edge]).sum(),
            window_s,
            amplification_service: amp_service,
            deadlines: s.clients.iter().any(|c| c.policy.deadline != crate::engine::NEVER),
            burst_start: burst_start(&mut s.clients.iter()),
            bursts_only: s.clients.iter().all(|c| matches!(c.mode, ClientMode::Burst { .. })),
            hedged: policies().any(|p| p.hedging.is_some()),
            client_hedged: s.clients.iter().any(|c| c.policy.hedging.is_some()),
            throttled: policies().any(|p| p.throttle.is_some()),
            cancels: policies().any(|p| p.cancel_on_timeout || p.hedging.as_ref().is_some_and(|h| h.cancel)),
            queries: policies().any(|p| p.on_unknown == crate::policy::OnUnknown::Query),
        };
        let clients: Vec<ClientResult> = s
            .clients
            .iter()
            .zip(&inside.classes)
            .map(|(spec, counters)| {
                let burst = matches!(spec.mode, ClientMode::Burst { .. });
                let x = Context {
                    attempts: inside.edge_attempts[spec.edge],
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
            ("ledger_replays", inside.ledger_replays),
            ("ledger_409", inside.ledger_conflicts),
            ("ledger_422", inside.ledger_rejects),
            ("ledger_recoveries", inside.ledger_recoveries),
            ("stuck_placeholders", self.stuck_placeholders),
        ] {
            put(k, ledgers.then_some(v as f64));
        }
        let reconciling = s.services.iter().any(|sv| !sv.reconcilers.is_empty());
        put("reconciled", reconciling.then_some(inside.reconciled as f64));
        let compensating =
            s.services.iter().flat_map(|sv| &sv.reconcilers).any(|r| r.action == ReconcileAction::Compensate);
        put("compensated", compensating.then_some(inside.compensated as f64));
        put("unresolved_at_end", reconciling.then_some(inside.unresolved_at_end as f64));
        let consistency = &inside.time_to_consistency;
        put("time_to_consistency_s", consistency.mean_s().filter(|_| reconciling));
        let p99 = (reconciling && consistency.count() > 0).then(|| consistency.quantiles_s(&[0.99])[0]);
        put("time_to_consistency_p99_s", p99);
        let queued = !s.queues.is_empty();
        let sum = |v: &[u64]| v.iter().sum::<u64>();
        // Messages that left their queue: acknowledged, dead-lettered or dropped.
        let ended = sum(&inside.queue_acked) + sum(&inside.queue_dead_letters) + sum(&inside.queue_dropped);
        let delivered = sum(&inside.queue_deliveries) as f64;
        let published = sum(&inside.queue_published) as f64;
        put("redeliveries", (queued && published > 0.0).then(|| (delivered - published).max(0.0) / published));
        put(
            "duplicate_deliveries",
            (queued && ended > 0).then(|| sum(&inside.queue_redelivered) as f64 / ended as f64),
        );
        put("dead_letters", queued.then(|| sum(&inside.queue_dead_letters) as f64));
        let mut ages = super::LatencyHistogram::default();
        for a in &inside.queue_age {
            ages.merge(a);
        }
        put("message_age_p99_s", (queued && ages.count() > 0).then(|| ages.quantiles_s(&[0.99])[0]));
        let budgeted = (0..s.edges.len()).any(|e| s.edge_policy(e).budget.is_some());
        let denied = inside.denials.get(&DenyReason::Budget).copied().unwrap_or(0);
        put("retries_denied_budget", budgeted.then_some(denied as f64));
        let bins = super::recovery::states(&self.series, self.series.rows().len());
        let rec = super::recovery::recovery(
            &bins,
            s.bin,
            s.warmup,
            s.duration,
            &super::recovery::disturbances(s),
            overloaded,
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
                    Some(c) => inside.classes[c].intents,
                    None => total.intents,
                };
                em.insert("attempts_per_intent".into(), (n > 0).then(|| inside.edge_attempts[i] as f64 / n as f64));
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
            let w = inside.service_work_ns[i];
            sm.insert("wasted_fraction".into(), (w > 0.0).then(|| inside.service_wasted_ns[i] / w));
            sm
        };
        let mut services = Vec::new();
        for (i, sv) in s.services.iter().enumerate() {
            let replicas = sv.hosts.replicas;
            let mut sm = slot_map(i, requests[i], sv.workers as f64 * replicas as f64);
            let mine: Vec<usize> = (0..slots.len()).filter(|&k| slots[k].0 == i).collect();
            if replicas > 1 {
                let (sent, ok) =
                    mine.iter().fold((0, 0), |(a, b), &k| (a + inside.host_sent[k], b + inside.host_ok[k]));
                sm.insert("success_rate".into(), (sent > 0).then(|| ok as f64 / sent as f64));
            }
            if sv.calls.iter().any(|c| c.cache.is_some()) {
                let n = inside.cache_lookups[i];
                sm.insert("cache_hit_ratio".into(), (n > 0).then(|| inside.cache_hits[i] as f64 / n as f64));
            }
            if sv.hosts.outlier.is_some() {
                sm.insert("ejections".into(), Some(inside.ejections[i] as f64));
            }
            if sv.memory.is_some() {
                sm.insert("memory_crashes".into(), Some(inside.memory_crashes[i] as f64));
            }
            services.push((sv.name.clone(), sm));
            for k in mine {
                let arrivals = (total.intents > 0).then(|| inside.host_arrivals[k] as f64 / total.intents as f64);
                let mut hm = slot_map(s.services.len() + k, arrivals, sv.workers as f64);
                let (sent, ok) = (inside.host_sent[k], inside.host_ok[k]);
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
                km.insert("commits_per_intent".into(), per_intent(inside.effects[k] as f64));
                km.insert("duplicate_intents".into(), Some(inside.effect_duplicates[k] as f64));
                km.insert("extra".into(), Some(inside.effect_extra[k] as f64));
                (name.clone(), km)
            })
            .collect();
        let queues = s
            .queues
            .iter()
            .enumerate()
            .map(|(q, spec)| {
                let mut qm = MetricMap::new();
                let (published, delivered) = (inside.queue_published[q], inside.queue_deliveries[q]);
                let ended = inside.queue_acked[q] + inside.queue_dead_letters[q] + inside.queue_dropped[q];
                qm.insert("messages".into(), Some(published as f64));
                qm.insert(
                    "redeliveries".into(),
                    (published > 0).then(|| delivered.saturating_sub(published) as f64 / published as f64),
                );
                qm.insert(
                    "duplicate_deliveries".into(),
                    (ended > 0).then(|| inside.queue_redelivered[q] as f64 / ended as f64),
                );
                qm.insert("dead_letters".into(), Some(inside.queue_dead_letters[q] as f64));
                qm.insert("dropped".into(), Some(inside.queue_dropped[q] as f64));
                qm.insert("left_at_end".into(), Some(published.saturating_sub(ended) as f64));
                let age = &inside.queue_age[q];
                qm.insert("message_age_p99_s".into(), (age.count() > 0).then(|| age.quantiles_s(&[0.99])[0]));
                (spec.name.clone(), qm)
            })
            .collect();
        let mut denials = BTreeMap::new();
        for (r, n) in &inside.denials {
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
            queues,
            witnesses: inside.witnesses,
            failures: inside.failures,
            denials,
            latency: match absorbed {
                Some(total) => total.latency,
                None => inside.classes.swap_remove(0).latency,
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
    /// Per message queue (see [`super::QUEUE_METRICS`]).
    pub queues: Vec<(String, MetricMap)>,
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
