//! The rule about hedged edges: unsafe-hedge. A hedge sends a second copy
//! while the first may still commit, so a non-idempotent operation is
//! executed twice unless every copy carries a key that the service checks.

use super::graph::Keyed;
use super::*;

impl Graph<'_> {
    /// unsafe-hedge: a non-idempotent operation hedged without a key, or
    /// with a key that the service does not check.
    pub(super) fn hedge_rules(&self, out: &mut Vec<Finding>) {
        for e in 0..self.s.edges.len() {
            let Some(h) = &self.policy(e).hedging else { continue };
            let ops = self.unsafe_ops(e);
            if ops.is_empty() {
                continue;
            }
            let (loc, callee, ops) = (self.location(e), self.callee(e).to_string(), ops.join(", "));
            let svc = &self.s.services[self.s.edges[e].to];
            let copies = h.max_attempts;
            let message = match self.keyed(e) {
                Keyed::Always if svc.ledger.is_some() || svc.commits.is_none() => continue,
                Keyed::Always => format!(
                    "{loc} hedges {ops} (not idempotent) on {callee} with up to {copies} copies; the key it sends is not checked ({callee} has no idempotency ledger), so every copy that runs commits"
                ),
                _ => format!(
                    "{loc} hedges {ops} (not idempotent) on {callee} with up to {copies} copies without an idempotency key: a copy that runs while another commits executes it again"
                ),
            };
            out.push(self.on_policy(
                "unsafe-hedge",
                e,
                "hedging",
                message,
                format!(
                    "hedge only idempotent operations, or send one key per intent to a service with an idempotency ledger (idempotency = {{ store = \"durable\" }} on {callee})"
                ),
            ));
        }
    }
}
