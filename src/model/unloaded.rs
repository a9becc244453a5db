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
/// `workers / holding time` (infinite for a service that takes no time).
pub fn capacity_per_s(s: &Scenario, svc: usize) -> f64 {
    let h = holding_time_s(s, svc);
    if h > 0.0 { s.services[svc].workers as f64 / h } else { f64::INFINITY }
}

/// Requests arriving at each service per intent of client class `client`
/// when nothing fails and nothing is retried: one per call path from the
/// client to the service (an outbox relay's one attempt included).
pub fn requests_per_intent(s: &Scenario, client: usize) -> Vec<f64> {
    fn visit(s: &Scenario, svc: usize, out: &mut [f64]) {
        out[svc] += 1.0;
        for c in &s.services[svc].calls {
            visit(s, c.to, out);
        }
    }
    let mut out = vec![0.0; s.services.len()];
    visit(s, s.clients[client].target, &mut out);
    out
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
    xs.sort_unstable();
    let i = ((q * SAMPLES as f64).ceil() as usize).clamp(1, SAMPLES as usize) - 1;
    xs[i]
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
