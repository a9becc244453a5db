//! Timeouts across layers: timeout-below-callee-retries (a caller gives up
//! on an attempt while the callee is still retrying for it) and
//! timeout-below-p99 (a per-try timeout that even an idle system misses
//! more than 1% of the time).

use super::timing::window;
use super::*;
use crate::config::When;
use crate::model::unloaded::attempt_latency_quantile;

impl Graph<'_> {
    /// The time the caller on edge `e` waits for one attempt, and the field
    /// that sets it: the per-try timeout clipped to the deadline; `None`
    /// when it waits as long as it takes.
    fn attempt_timeout(&self, e: usize) -> Option<(Nanos, &'static str)> {
        let p = self.policy(e);
        match (p.per_try_timeout, p.deadline) {
            (NEVER, NEVER) => None,
            (t, d) if t <= d => Some((t, "per_try_timeout")),
            (_, d) => Some((d, "deadline")),
        }
    }

    /// Both rules, for every edge that has a timeout.
    pub(super) fn timeout_rules(&self, out: &mut Vec<Finding>) {
        for e in 0..self.s.edges.len() {
            // A call through a queue publishes: it never waits for the callee.
            if let crate::config::Caller::Service { service, index } = self.s.edges[e].caller
                && self.s.services[service].calls[index].via.is_some()
            {
                continue;
            }
            let Some((timeout, field)) = self.attempt_timeout(e) else { continue };
            let loc = self.location(e);
            let callee = self.s.edges[e].to;
            let callee_name = self.callee(e).to_string();

            // timeout-below-callee-retries
            for c in self.s.services[callee].calls.iter().filter(|c| c.when != When::Outbox) {
                let p = &c.policy;
                if p.max_attempts < 2 {
                    continue;
                }
                let mut own = window(p, self.sends_retry_after(c.to));
                // A propagated deadline stops the callee's retries with the caller's deadline.
                let caller_deadline = self.policy(e).deadline;
                if c.propagate_deadline && caller_deadline != NEVER {
                    own = Some(own.map_or(caller_deadline, |w| w.min(caller_deadline)));
                }
                if own.is_some_and(|w| w <= timeout) {
                    continue;
                }
                let call = self.location(c.edge);
                let how_long = match own {
                    Some(w) => format!("for up to {}", human(w)),
                    None => "without a time limit (no deadline, no per-try timeout)".into(),
                };
                let on_top = if self.policy(e).max_attempts > 1 {
                    format!(", and {loc}'s own retry sends it a second round on top")
                } else {
                    String::new()
                };
                out.push(self.on_policy(
                    "timeout-below-callee-retries",
                    e,
                    field,
                    format!(
                        "{loc} gives up on an attempt to {callee_name} after {} ({field}), but {call} makes up to {} attempts {how_long}: {callee_name} keeps retrying for a caller that has gone{on_top}",
                        human(timeout),
                        p.max_attempts,
                    ),
                    match own {
                        Some(w) => format!(
                            "make {loc}'s {field} longer than {}, or bound {call}'s retries below {} (a deadline, fewer attempts, or propagate_deadline = true with a deadline at {loc})",
                            human(w),
                            human(timeout)
                        ),
                        None => format!(
                            "give {call} a deadline or a per_try_timeout so that its retries end within {}",
                            human(timeout)
                        ),
                    },
                ));
            }

            // timeout-below-p99
            let p99 = attempt_latency_quantile(self.s, e, 0.99);
            if timeout < p99 {
                let p999 = attempt_latency_quantile(self.s, e, 0.999);
                out.push(self.on_policy(
                    "timeout-below-p99",
                    e,
                    field,
                    format!(
                        "{loc} gives up on an attempt after {} ({field}), below the modelled p99 latency of an attempt to {callee_name} ({}: network both ways, service time and synchronous downstream calls, with no queueing and no failure): more than 1% of attempts time out on an idle system, and each becomes a retry or a failure",
                        human(timeout),
                        human(p99)
                    ),
                    format!("raise {field} above the p99.9 of an attempt ({}), or make the callee faster", human(p999)),
                ));
            }
        }
    }
}
