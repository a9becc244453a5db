//! Counters of the in-window intents of one client class, and the headline
//! metrics computed from them: for each class (`clients` in summary.json)
//! and, with every class's counters added up, for the run as a whole.

use super::{LatencyHistogram, METRICS, MetricMap};
use crate::engine::{Nanos, to_secs_f64};
use std::borrow::Cow;

/// What one client class's in-window intents did.
#[derive(Debug, Clone)]
pub struct ClassCounters {
    pub intents: u64,
    /// Intents that ended `ok`.
    pub ok: u64,
    /// Latency of the intents that ended `ok`.
    pub latency: LatencyHistogram,
    /// Latency of the intents that did not end `ok`, to the moment their
    /// client knew the result: with [`ClassCounters::latency`], the latency
    /// of every intent ([`ClassCounters::latency_all`]). Kept apart so that
    /// a successful intent is recorded in one histogram, not two.
    pub latency_failed: LatencyHistogram,
    pub duplicates: u64,
    pub orphan_commits: u64,
    pub lost_effects: u64,
    pub events_sent: u64,
    /// Intents that ended after their client's deadline.
    pub deadline_overruns: u64,
    /// Requests arriving at each service for these intents.
    pub service_arrivals: Vec<u64>,
    /// Own service time of their executions, and of those already abandoned (ns).
    pub work_ns: f64,
    pub wasted_ns: f64,
    /// When the last of them ended (its client had the result).
    pub last_end: Nanos,
    /// Hedged copies sent for them (every edge), those of them answered
    /// first by a hedge, and attempts a client-side throttle refused or
    /// held back (every edge).
    pub hedges: u64,
    pub hedge_wins: u64,
    pub throttled: u64,
    /// Status queries sent for them (`on_unknown = "query"`, every edge).
    pub status_queries: u64,
    /// Own service time of their executions that cancellation saved (ns).
    pub cancelled_ns: f64,
}

impl ClassCounters {
    /// Empty counters for a scenario with `services` services.
    pub fn new(services: usize) -> Self {
        Self {
            intents: 0,
            ok: 0,
            latency: LatencyHistogram::default(),
            latency_failed: LatencyHistogram::default(),
            duplicates: 0,
            orphan_commits: 0,
            lost_effects: 0,
            events_sent: 0,
            deadline_overruns: 0,
            service_arrivals: vec![0; services],
            work_ns: 0.0,
            wasted_ns: 0.0,
            last_end: 0,
            hedges: 0,
            hedge_wins: 0,
            throttled: 0,
            status_queries: 0,
            cancelled_ns: 0.0,
        }
    }

    /// An intent ended at `now` after `latency`, `ok` or not.
    #[inline]
    pub fn ended(&mut self, now: Nanos, latency: Nanos, ok: bool) {
        if ok {
            self.ok += 1;
            self.latency.record(latency);
        } else {
            self.latency_failed.record(latency);
        }
        self.last_end = self.last_end.max(now);
    }

    /// Latency of every intent, `ok` or not: the same counts per bucket, and
    /// so the same quantiles, as one histogram recording all of them.
    /// Borrowed when one of the two is empty (nothing to add up).
    pub fn latency_all(&self) -> Cow<'_, LatencyHistogram> {
        if self.latency_failed.count() == 0 {
            return Cow::Borrowed(&self.latency);
        }
        if self.latency.count() == 0 {
            return Cow::Borrowed(&self.latency_failed);
        }
        let mut all = self.latency.clone();
        all.merge(&self.latency_failed);
        Cow::Owned(all)
    }

    /// Adds another class's counters (for the run's totals).
    pub fn absorb(&mut self, other: &ClassCounters) {
        self.intents += other.intents;
        self.ok += other.ok;
        self.latency.merge(&other.latency);
        self.latency_failed.merge(&other.latency_failed);
        self.duplicates += other.duplicates;
        self.orphan_commits += other.orphan_commits;
        self.lost_effects += other.lost_effects;
        self.events_sent += other.events_sent;
        self.deadline_overruns += other.deadline_overruns;
        for (a, b) in self.service_arrivals.iter_mut().zip(&other.service_arrivals) {
            *a += b;
        }
        self.work_ns += other.work_ns;
        self.wasted_ns += other.wasted_ns;
        self.last_end = self.last_end.max(other.last_end);
        self.hedges += other.hedges;
        self.hedge_wins += other.hedge_wins;
        self.throttled += other.throttled;
        self.status_queries += other.status_queries;
        self.cancelled_ns += other.cancelled_ns;
    }

    /// Requests arriving at each service per intent (`None` without intents).
    pub fn requests_per_intent(&self) -> Vec<Option<f64>> {
        let n = self.intents as f64;
        self.service_arrivals.iter().map(|&a| (self.intents > 0).then(|| a as f64 / n)).collect()
    }
}

/// What the headline metrics of some counters need besides them.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// Attempts these intents sent on their client edges.
    pub attempts: u64,
    /// The window's length, seconds.
    pub window_s: f64,
    /// Where `amplification` is taken (a service index).
    pub amplification_service: usize,
    /// Whether some client class counted here has a deadline.
    pub deadlines: bool,
    /// The earliest burst start, when these intents include burst clients'.
    pub burst_start: Option<Nanos>,
    /// Every client class counted here sends bursts.
    pub bursts_only: bool,
    /// Some edge hedges / some client class counted here hedges its own
    /// calls / some edge throttles / some policy cancels work (the metrics
    /// of those mechanisms are `None` without them).
    pub hedged: bool,
    pub client_hedged: bool,
    pub throttled: bool,
    pub cancels: bool,
    /// Some policy queries the state of an unknown outcome.
    pub queries: bool,
}

/// The headline metrics of `c` (every name of [`METRICS`]; those the
/// counters cannot give, such as the ledger and recovery metrics, `None`
/// for the caller to fill).
pub fn headline(c: &ClassCounters, x: &Context) -> MetricMap {
    let intents = c.intents as f64;
    let per_intent = |v: f64| (c.intents > 0).then(|| v / intents);
    let mut m: MetricMap = METRICS.iter().map(|k| (k.to_string(), None)).collect();
    let mut put = |k: &str, v: Option<f64>| {
        m.insert(k.to_string(), v);
    };
    put("intents", Some(intents));
    put("success_rate", per_intent(c.ok as f64));
    // Burst clients: from the burst's start to the end of its last intent.
    let completion = x.burst_start.filter(|_| c.intents > 0).map(|start| to_secs_f64(c.last_end.saturating_sub(start)));
    put("burst_completion_s", completion);
    let goodput = if x.bursts_only {
        completion.filter(|&t| t > 0.0).map(|t| c.ok as f64 / t)
    } else {
        Some(c.ok as f64 / x.window_s)
    };
    put("goodput_per_s", goodput);
    put("attempts_per_intent", per_intent(x.attempts as f64));
    put("amplification", per_intent(c.service_arrivals.get(x.amplification_service).copied().unwrap_or(0) as f64));
    put("latency_mean_s", c.latency.mean_s());
    let tails = c.latency.quantiles_s(&[0.5, 0.99, 0.999]);
    let mut tail = tails.iter().copied();
    put("latency_p50_s", tail.next());
    put("latency_p99_s", tail.next());
    put("latency_p999_s", tail.next());
    // Every intent succeeded: the same histogram, the same quantiles.
    let all_tails =
        if c.latency_failed.count() == 0 { tails } else { c.latency_all().quantiles_s(&[0.5, 0.99, 0.999]) };
    let mut all = all_tails.into_iter();
    put("latency_all_p50_s", all.next());
    put("latency_all_p99_s", all.next());
    put("latency_all_p999_s", all.next());
    put("wasted_fraction", (c.work_ns > 0.0).then(|| c.wasted_ns / c.work_ns));
    put("duplicate_intents", Some(c.duplicates as f64));
    put("orphan_commits", Some(c.orphan_commits as f64));
    put("lost_effects", Some(c.lost_effects as f64));
    put("outbox_events_per_intent", per_intent(c.events_sent as f64));
    put("deadline_overruns", x.deadlines.then_some(c.deadline_overruns as f64));
    put("hedges_per_intent", if x.hedged { per_intent(c.hedges as f64) } else { None });
    put("hedge_wins", if x.client_hedged { per_intent(c.hedge_wins as f64) } else { None });
    put("throttled_per_intent", if x.throttled { per_intent(c.throttled as f64) } else { None });
    put("status_queries_per_intent", if x.queries { per_intent(c.status_queries as f64) } else { None });
    let planned = c.work_ns + c.cancelled_ns;
    put("cancelled_fraction", (x.cancels && planned > 0.0).then(|| c.cancelled_ns / planned));
    m
}
