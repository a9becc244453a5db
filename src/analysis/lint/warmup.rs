//! The rule short-warmup: a warm-up shorter than the time an adaptive
//! mechanism needs to settle. Recovery is measured against the baseline
//! window after the warm-up; if a quantile hedge has not yet learnt its
//! delay, an SRE throttle's window not yet filled, a ratio budget's TTL not
//! yet passed or a breaker's window not yet seen a full window of calls,
//! the baseline is that of a system still adapting.

use super::*;
use crate::policy::budget::BudgetKind;
use crate::policy::hedge::{HedgeDelay, LATENCY_PERIOD};
use crate::policy::throttle::ThrottleKind;

impl Graph<'_> {
    /// The adaptive mechanisms of edge `e`'s policy with the time each
    /// needs to settle, and the field that sets it.
    fn settling(&self, e: usize) -> Vec<(&'static str, Nanos, &'static str)> {
        let p = self.policy(e);
        let mut out = Vec::new();
        if let Some(h) = &p.hedging
            && matches!(h.delay, HedgeDelay::Quantile(_))
        {
            // The quantile is read from the last full period of two.
            out.push(("a quantile hedging delay", 2 * LATENCY_PERIOD, "hedging.delay"));
        }
        if let Some(t) = &p.throttle
            && let ThrottleKind::Sre { window, .. } = t.kind
        {
            out.push(("the SRE throttle's window", window, "throttle.window"));
        }
        if let Some(b) = &p.budget
            && let BudgetKind::Ratio { ttl, .. } = b.kind
        {
            out.push(("the ratio budget's ttl", ttl, "budget.ttl"));
        }
        if let Some(b) = &p.breaker
            && b.window > 0
        {
            out.push(("the circuit breaker's window", b.window, "circuit_breaker.window"));
        }
        out
    }

    /// short-warmup, on every edge whose policy adapts more slowly than
    /// the warm-up lasts.
    pub(super) fn warmup_rules(&self, out: &mut Vec<Finding>) {
        let warmup = self.s.warmup;
        for e in 0..self.s.edges.len() {
            for (what, needs, field) in self.settling(e) {
                if needs > warmup {
                    out.push(self.on_experiment(
                        "short-warmup",
                        "experiment.warmup".into(),
                        self.location(e),
                        format!(
                            "the warm-up ({}) is shorter than {what} on {} ({}, policy field {field}): the baseline recovery is judged against is measured while it still adapts",
                            crate::output::table::fmt_seconds(to_secs_f64(warmup)),
                            self.location(e),
                            crate::output::table::fmt_seconds(to_secs_f64(needs)),
                        ),
                        format!(
                            "experiment.warmup = \"{}\" or more",
                            crate::policy::file::duration(needs)
                        ),
                    ));
                }
            }
        }
    }
}
