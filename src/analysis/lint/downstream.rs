//! unprotected-downstream-effect: a side effect committed downstream that a
//! repeat can execute twice, or a failure after the commit can lose.

use super::graph::Keyed;
use super::*;
use crate::config::{Caller, When};

impl Graph<'_> {
    /// Whether a layer above service `svc` retries (so it can execute twice).
    fn retries_above(&self, svc: usize) -> bool {
        self.incoming[svc].iter().any(|&e| {
            self.policy(e).max_attempts > 1
                || matches!(self.s.edges[e].caller, Caller::Service { service, .. } if self.retries_above(service))
        })
    }

    /// unprotected-downstream-effect: a call to a service that commits a
    /// side effect of a non-idempotent operation, unless it is an outbox
    /// with consumer dedup or always carries a key the callee's ledger
    /// checks, and it can repeat (a retry on or above it, an outbox relay)
    /// or be lost (after_commit).
    pub(super) fn downstream_effects(&self, out: &mut Vec<Finding>) {
        for (si, svc) in self.s.services.iter().enumerate() {
            for c in &svc.calls {
                let callee = &self.s.services[c.to];
                let Some(kind) = callee.commits else { continue };
                let e = c.edge;
                if self.unsafe_ops(e).is_empty() {
                    continue;
                }
                let keyed = self.keyed(e);
                let protected = ((c.when == When::Outbox || c.via.is_some()) && c.dedup)
                    || (keyed == Keyed::Always && callee.ledger.is_some());
                // The call's own unsafe retries are reported by unsafe-retry.
                if protected || self.unsafe_retry(e).is_some() {
                    continue;
                }
                let repeats = self.retries_above(si);
                if !repeats && c.when != When::AfterCommit {
                    continue;
                }
                // A reconciler at the caller repairs an effect lost after the commit.
                if !repeats && !svc.reconcilers.is_empty() {
                    continue;
                }
                let effect = &self.s.effect_kinds[kind];
                let loc = self.location(e);
                let key = match (keyed, callee.ledger.is_some()) {
                    (Keyed::Always, false) => {
                        format!("the key it sends is not checked ({} has no idempotency ledger)", callee.name)
                    }
                    (Keyed::Sometimes, _) => {
                        "it does not always carry a key (some requests have none to forward)".into()
                    }
                    _ => "it carries no idempotency key".into(),
                };
                let why =
                    if c.when == When::Outbox { format!("its consumer does not deduplicate and {key}") } else { key };
                let consequence = if repeats {
                    format!("a repeat of {} (a retry above it) repeats the \"{effect}\" effect", svc.name)
                } else {
                    "a failed call after the commit loses the effect for good (no relay retries it, no reconciler repairs it)"
                        .to_string()
                };
                let field = if c.when == When::Outbox { "dedup" } else { "key" };
                out.push(self.on_experiment(
                    "unprotected-downstream-effect",
                    format!("{loc}.{field}"),
                    loc.clone(),
                    format!("{loc} reaches {}, which commits \"{effect}\", but {why}: {consequence}", callee.name),
                    if repeats {
                        format!(
                            "make it an outbox call with dedup = true, or send a stable key (key = \"derive\") to an idempotency ledger at {}",
                            callee.name
                        )
                    } else {
                        format!(
                            "make it an outbox call with dedup = true, send a stable key (key = \"derive\") to an idempotency ledger at {}, or add a [[services.reconcilers]] at {}",
                            callee.name, svc.name
                        )
                    },
                ));
            }
        }
    }
}
