//! The causal anatomy of a collapse: which mechanism carries the load that
//! sustains it, and which fix breaks the loop.
//!
//! A collapsed run is stopped at the trigger's end (the collapse point);
//! from that state it is continued as it is, and once per mechanism with
//! that mechanism switched off — under the same random numbers, so the
//! continuations differ only by the mechanism. Over the window that
//! follows, the *sustained excess load* is the attempts sent on client
//! edges beyond the intents offered; each mechanism's share is how much of
//! it disappears when the mechanism is switched off, and whether the run
//! then recovers (goodput ratio back to 95% of its baseline, DESIGN §5).

use crate::config::{Caller, Scenario};
use crate::engine::{Nanos, to_secs_f64};
use crate::metrics::recovery::{disturbances, recovery, states};
use crate::model::{RunOptions, World};
use crate::policy::Policy;
use crate::policy::breaker::{BreakerKind, BreakerSpec};
use crate::policy::budget::{BudgetKind, BudgetScope, BudgetSpec};

/// A mechanism that may sustain a collapse, and the switch that removes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// Retries: every policy makes one attempt only.
    Retries,
    /// Wasted work: every attempt is cancelled at the server when its caller times out.
    WastedWork,
    /// No retry budget: every client gets a shared gRPC token bucket (10, 0.1).
    NoBudget,
    /// No circuit breaker: every client gets one (50% failures over 10 s, 20 calls, open 5 s).
    NoBreaker,
}

/// Every mechanism, in the order they are reported.
pub const MECHANISMS: [Mechanism; 4] =
    [Mechanism::Retries, Mechanism::WastedWork, Mechanism::NoBudget, Mechanism::NoBreaker];

impl Mechanism {
    /// The switch, in words.
    pub fn label(self) -> &'static str {
        match self {
            Mechanism::Retries => "without retries (one attempt per call)",
            Mechanism::WastedWork => "cancelling abandoned work (cancel_on_timeout)",
            Mechanism::NoBudget => "with a shared token-bucket retry budget",
            Mechanism::NoBreaker => "with a circuit breaker on every client",
        }
    }

    /// `s` with this mechanism switched off.
    pub fn switch_off(self, s: &Scenario) -> Scenario {
        let mut s = s.clone();
        let change = |p: &mut Policy| match self {
            Mechanism::Retries => p.max_attempts = 1,
            Mechanism::WastedWork => p.cancel_on_timeout = true,
            Mechanism::NoBudget => {
                if p.budget.is_none() {
                    p.budget = Some(BudgetSpec {
                        kind: BudgetKind::TokenBucket { max_tokens: 10.0, token_ratio: 0.1 },
                        scope: BudgetScope::Shared,
                    });
                }
            }
            Mechanism::NoBreaker => {
                if p.breaker.is_none() {
                    p.breaker = Some(BreakerSpec {
                        kind: BreakerKind::FailureRatio,
                        failure_ratio: Some(0.5),
                        window: 10_000_000_000,
                        min_requests: 20,
                        open_for: 5_000_000_000,
                        half_open_probes: 3,
                        retries_only: false,
                    });
                }
            }
        };
        let client_only = matches!(self, Mechanism::NoBudget | Mechanism::NoBreaker);
        for c in &mut s.clients {
            change(&mut c.policy);
        }
        if !client_only {
            for e in 0..s.edges.len() {
                if let Caller::Service { service, index } = s.edges[e].caller {
                    change(&mut s.services[service].calls[index].policy);
                }
            }
        }
        s
    }
}

/// What one continuation did over the window.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Continuation {
    /// `None` for the run as it is.
    pub switched_off: Option<Mechanism>,
    /// Client-edge attempts beyond the offered intents, per second of the window.
    pub excess_per_s: f64,
    /// Share of the as-is excess this switch removes (1 − excess / as-is excess).
    pub share_of_excess: Option<f64>,
    /// Seconds after the trigger's end at which the goodput ratio was back, if it was within the window.
    pub recovered_after_s: Option<f64>,
}

/// Continues replication `rep` of `s` (whose trigger ends at `end`) from
/// `end`, as it is and with each mechanism off, for `window`.
pub fn anatomy(s: &Scenario, rep: u32, end: Nanos, window: Nanos) -> Vec<Continuation> {
    let bin = s.bin;
    let point = end.div_ceil(bin) * bin;
    let mut world = World::new(s, rep, RunOptions::metrics_only());
    world.advance_to(point.saturating_sub(1));
    let switched: Vec<Scenario> = MECHANISMS.iter().map(|m| m.switch_off(s)).collect();
    let mut out = Vec::new();
    let first = continue_for(world.clone(), s, point, window, None);
    let base = first.excess_per_s;
    out.push(first);
    for (m, sm) in MECHANISMS.iter().zip(&switched) {
        let mut c = continue_for(world.rebind(sm), s, point, window, Some(*m));
        c.share_of_excess = (base > 0.0).then(|| 1.0 - c.excess_per_s / base);
        out.push(c);
    }
    out
}

fn continue_for(mut w: World, s: &Scenario, point: Nanos, window: Nanos, m: Option<Mechanism>) -> Continuation {
    let stop = point + window;
    w.advance_to(stop.saturating_sub(1));
    let rows = w.series().rows();
    let (a, b) = ((point / s.bin) as usize, (stop / s.bin) as usize);
    let sum = |f: fn(&crate::metrics::timeseries::BinRow) -> u64| -> u64 { rows.iter().take(b).skip(a).map(f).sum() };
    let excess = sum(|r| r.attempts) as f64 - sum(|r| r.offered) as f64;
    let r = recovery(&states(w.series(), b), s.bin, s.warmup, stop, &disturbances(s), false);
    Continuation {
        switched_off: m,
        excess_per_s: excess.max(0.0) / to_secs_f64(window),
        share_of_excess: None,
        recovered_after_s: r.recovery_time_s,
    }
}
