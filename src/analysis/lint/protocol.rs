//! The rules about the end of the protocol: unknown-outcome-unresolved,
//! visibility-below-p99 and no-max-receives.

use super::graph::Keyed;
use super::timing::quantile;
use super::*;
use crate::config::Caller;
use crate::policy::OnUnknown;

impl Graph<'_> {
    /// Rules about unknown outcomes and message queues.
    pub(super) fn protocol_rules(&self, out: &mut Vec<Finding>) {
        for e in 0..self.s.edges.len() {
            self.unknown_outcome_unresolved(e, out);
        }
        for q in &self.s.queues {
            let consumer = &self.s.services[q.consumer];
            let p99 = quantile(&consumer.service_time, 0.99);
            let at = format!("queues.{}", q.name);
            if q.visibility_timeout < p99 {
                out.push(self.on_experiment(
                    "visibility-below-p99",
                    format!("queues.{}.visibility_timeout", q.name),
                    at.clone(),
                    format!(
                        "{}'s visibility timeout ({}) is below {}'s p99 processing time ({}): more than 1% of the messages are delivered again while their first delivery still runs",
                        q.name,
                        human(q.visibility_timeout),
                        consumer.name,
                        human(p99)
                    ),
                    format!(
                        "raise visibility_timeout above {} (with room for the network and queueing), and give the call dedup = true",
                        human(p99)
                    ),
                ));
            }
            if q.max_receives.is_none() {
                out.push(self.on_experiment(
                    "no-max-receives",
                    format!("queues.{}.max_receives", q.name),
                    at,
                    format!(
                        "{} has no max_receives: a message its consumer always fails (a poison message) is delivered again every visibility timeout until its retention ends, taking a worker each time",
                        q.name
                    ),
                    "set max_receives (e.g. 5) so that it goes to the dead-letter queue, and watch that queue".into(),
                ));
            }
        }
    }

    /// unknown-outcome-unresolved: a client's edge `e` sends a
    /// non-idempotent operation to a service that commits, an answer can
    /// fail to come (a timeout), and nothing finds out what happened: no
    /// status query (`on_unknown = "query"`) and no key the callee's ledger
    /// answers when it comes again. A client that retries it unsafely or
    /// hedges it is reported by unsafe-retry or unsafe-hedge instead; a
    /// downstream call by unprotected-downstream-effect (which a reconciler
    /// at the caller satisfies after the commit).
    fn unknown_outcome_unresolved(&self, e: usize, out: &mut Vec<Finding>) {
        if !matches!(self.s.edges[e].caller, Caller::Client(_)) || self.unsafe_retry(e).is_some() {
            return;
        }
        let p = self.policy(e);
        if p.hedging.is_some() {
            return;
        }
        let callee = &self.s.services[self.s.edges[e].to];
        if callee.commits.is_none() || self.unsafe_ops(e).is_empty() || p.on_unknown == OnUnknown::Query {
            return;
        }
        if p.per_try_timeout == crate::engine::NEVER && p.deadline == crate::engine::NEVER {
            return;
        }
        // One key per intent into a ledger: whoever sends it again (this
        // edge or a retry upstream) gets the recorded answer.
        if self.keyed(e) == Keyed::Always && callee.ledger.is_some() {
            return;
        }
        out.push(self.on_policy(
            "unknown-outcome-unresolved",
            e,
            "on_unknown",
            format!(
                "{} sends {} (not idempotent) to {}, which commits: after a timeout nobody learns whether it committed, so the intent can fail with its effect written (an orphan) or be written twice",
                self.location(e),
                self.unsafe_ops(e).join(", "),
                callee.name
            ),
            "set on_unknown = \"query\" (ask before sending again), or send one key per intent to a service with an idempotency ledger".into(),
        ));
    }
}
