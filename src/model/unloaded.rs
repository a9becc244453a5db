//! The model without queueing and without failures: how long a request
//! holds a worker, what a service can serve, the request rate each service
//! gets from the clients' steady load, and how long one attempt takes. Lint
//! checks designs against these numbers before anything runs, and a run
//! uses the capacity to tell whether its baseline window was overloaded.

use crate::config::{ClientMode, Scenario, When};
use crate::engine::random::hash_words;
use crate::engine::{KeyedRandom, Nanos};

/// Mean seconds a request holds a worker at service `svc`: its own mean
/// service time plus, for each synchronous downstream call (before or after
/// the commit: the worker waits for it), one attempt's round trip without
/// queueing (the edge's mean latency twice plus the callee's holding time).
pub fn holding_time_s(s: &Scenario, svc: usize) -> f64 {
    let spec = &s.services[svc];
    let mut t = spec.service_time.mean_secs();
    for c in spec.calls.iter().filter(|c| c.when != When::Outbox) {
        t += 2.0 * s.edges[c.edge].latency.mean_secs() + holding_time_s(s, c.to);
    }
    t
}

/// Requests per second service `svc` serves with every worker busy:
/// `workers × replicas / holding time` (infinite for a service that takes no time).
pub fn capacity_per_s(s: &Scenario, svc: usize) -> f64 {
    let h = holding_time_s(s, svc);
    let workers = s.services[svc].workers as f64 * s.services[svc].hosts.replicas as f64;
    if h > 0.0 { workers / h } else { f64::INFINITY }
}

/// Requests arriving at each service per intent of client class `client`
/// when nothing fails and nothing is retried: one per call path from the
/// client to the service (an outbox relay's one attempt included).
///
/// A call behind a `cache` counts its warm miss ratio ([`warm_miss_ratio`])
/// at the calling service's steady request rate (worked out as if no cache
/// filtered anything upstream).
pub fn requests_per_intent(s: &Scenario, client: usize) -> Vec<f64> {
    let misses = miss_ratios(s);
    let mut out = vec![0.0; s.services.len()];
    visit(s, s.clients[client].target, 1.0, &misses, &mut out);
    out
}

/// Adds `weight` requests at `svc` and what its calls send on, each call's
/// weight multiplied by its miss ratio (1 without a cache).
fn visit(s: &Scenario, svc: usize, weight: f64, misses: &[Vec<f64>], out: &mut [f64]) {
    out[svc] += weight;
    for (i, c) in s.services[svc].calls.iter().enumerate() {
        visit(s, c.to, weight * misses.get(svc).and_then(|m| m.get(i)).copied().unwrap_or(1.0), misses, out);
    }
}

/// Per service and call: the share of its requests a call's cache misses
/// when warm (1 for a call without a cache).
fn miss_ratios(s: &Scenario) -> Vec<Vec<f64>> {
    let none: Vec<Vec<f64>> = Vec::new();
    let mut rate = vec![0.0; s.services.len()];
    for c in 0..s.clients.len() {
        if let Some(r) = steady_rate(s, c) {
            let mut out = vec![0.0; s.services.len()];
            visit(s, s.clients[c].target, 1.0, &none, &mut out);
            for (x, n) in rate.iter_mut().zip(out) {
                *x += r.per_s() * n;
            }
        }
    }
    s.services
        .iter()
        .enumerate()
        .map(|(i, sv)| sv.calls.iter().map(|c| c.cache.map_or(1.0, |k| warm_miss_ratio(k, rate[i]))).collect())
        .collect()
}

/// The share of lookups a warm TTL cache misses at `rate` lookups per
/// second: key k (Zipf popularity p_k) is asked for at r_k = rate × p_k, and
/// each miss fills it for `ttl`, so a renewal cycle has one miss and r_k ×
/// ttl hits on average: the miss ratio is Σ p_k / (1 + r_k ttl).
pub fn warm_miss_ratio(cache: crate::config::CacheSpec, rate: f64) -> f64 {
    if cache.ttl == crate::engine::NEVER {
        return 0.0;
    }
    let ttl = crate::engine::to_secs_f64(cache.ttl);
    let weights: Vec<f64> = (1..=cache.keys).map(|k| (k as f64).powf(-cache.zipf)).collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| w / total / (1.0 + rate * w / total * ttl)).sum()
}

/// How a client class's steady intent rate was worked out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SteadyRate {
    /// Open loop: the rate in force at the end of the warm-up, times `load_scale`.
    Open(f64),
    /// Closed loop: at most `count / mean think time`.
    AtMost(f64),
}

impl SteadyRate {
    /// Intents per second.
    pub fn per_s(self) -> f64 {
        match self {
            SteadyRate::Open(r) | SteadyRate::AtMost(r) => r,
        }
    }
}

/// The steady intent rate of client class `c` before any disturbance;
/// `None` for a burst (one intent per instance: no steady rate).
pub fn steady_rate(s: &Scenario, c: usize) -> Option<SteadyRate> {
    let spec = &s.clients[c];
    match &spec.mode {
        ClientMode::Open(schedule) => Some(SteadyRate::Open(schedule.rate_at(s.warmup).0 * s.load_scale)),
        ClientMode::Closed { think_time } => {
            let think = think_time.mean_secs();
            (think > 0.0).then(|| SteadyRate::AtMost(spec.count as f64 / think))
        }
        ClientMode::Burst { .. } => None,
    }
}

/// Draws that estimate an attempt's latency quantile.
const SAMPLES: u64 = 20_000;

/// The `q` quantile of one attempt's latency on edge `e` without queueing
/// and without failures: the edge's latency out, the callee's service time
/// and one attempt of each of its synchronous downstream calls (in order,
/// recursively), and the latency back. Estimated from 20 000 draws of a
/// fixed random source, so the same scenario always gives the same value
/// (within about 0.3% of the true 99th percentile).
pub fn attempt_latency_quantile(s: &Scenario, e: usize, q: f64) -> Nanos {
    let rng = KeyedRandom::for_replication(0x1A7E, 0);
    let mut xs: Vec<Nanos> = (0..SAMPLES).map(|i| attempt(s, &rng, e, hash_words(0, &[i]))).collect();
    let i = ((q * SAMPLES as f64).ceil() as usize).clamp(1, SAMPLES as usize) - 1;
    // The i-th smallest, as in the sorted sample, without sorting it.
    *xs.select_nth_unstable(i).1
}

/// One attempt on edge `e`, keyed by `key`.
fn attempt(s: &Scenario, rng: &KeyedRandom, e: usize, key: u64) -> Nanos {
    let edge = &s.edges[e];
    let spec = &s.services[edge.to];
    let mut t = edge.latency.sample(rng, &[1, key]);
    t = t.saturating_add(spec.service_time.sample(rng, &[2, key]));
    for (i, c) in spec.calls.iter().enumerate().filter(|(_, c)| c.when != When::Outbox) {
        t = t.saturating_add(attempt(s, rng, c.edge, hash_words(key, &[i as u64])));
    }
    t.saturating_add(edge.latency.sample(rng, &[3, key]))
}
