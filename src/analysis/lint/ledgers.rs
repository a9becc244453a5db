//! The rules about idempotency ledgers: ttl-shorter-than-retry-window,
//! memory-ledger, non-atomic-ledger and lease-too-short.

use super::graph::Keyed;
use super::*;

impl Graph<'_> {
    /// Rules about idempotency ledgers.
    pub(super) fn ledger_rules(&self, out: &mut Vec<Finding>) {
        for (si, svc) in self.s.services.iter().enumerate() {
            let Some(l) = svc.ledger else { continue };
            let at = format!("services.{}", svc.name);
            let field = |f: &str| format!("services.{}.idempotency.{f}", svc.name);

            // ttl-shorter-than-retry-window
            let mut worst: Option<(usize, Option<Nanos>)> = None;
            for &e in &self.incoming[si] {
                if self.keyed(e) == Keyed::Never {
                    continue;
                }
                let span = self.span(e);
                if span == Some(0) {
                    continue;
                }
                let longer = match (worst, span) {
                    (None, _) => true,
                    (Some((_, None)), _) => false,
                    (Some(_), None) => true,
                    (Some((_, Some(a))), Some(b)) => b > a,
                };
                if longer {
                    worst = Some((e, span));
                }
            }
            if let Some((e, span)) = worst {
                let too_short = match span {
                    None => true,
                    Some(w) => w >= l.ttl,
                };
                if too_short {
                    let window = match span {
                        None => "without limit (no deadline, and no bound on the waits)".to_string(),
                        Some(w) => format!("up to {} after the first attempt", human(w)),
                    };
                    let fix = match span {
                        Some(w) => format!(
                            "raise {} above {} (e.g. \"24h\"), or give the callers a shorter deadline",
                            field("ttl"),
                            human(w)
                        ),
                        None => {
                            format!("give {} a deadline, and keep {} longer than it", self.location(e), field("ttl"))
                        }
                    };
                    out.push(self.on_experiment(
                        "ttl-shorter-than-retry-window",
                        field("ttl"),
                        at.clone(),
                        format!(
                            "{} forgets keys after {}, but {} can resend a key {window}: a late retry executes again as a new intent",
                            svc.name,
                            human(l.ttl),
                            self.location(e)
                        ),
                        fix,
                    ));
                }
            }

            if !l.durable {
                out.push(self.on_experiment(
                    "memory-ledger",
                    field("store"),
                    at.clone(),
                    format!(
                        "{}'s idempotency ledger is kept in memory: a crash empties it, and retries of the requests it had answered execute again, exactly when retries are most frequent",
                        svc.name
                    ),
                    "store = \"durable\" (the ledger in the same database as the business data)".into(),
                ));
            }
            if !l.atomic {
                out.push(self.on_experiment(
                    "non-atomic-ledger",
                    field("atomic"),
                    at.clone(),
                    format!(
                        "{} writes the idempotency record {} after the business write: a crash in between loses the record, and a retry executes again",
                        svc.name,
                        human(l.record_delay)
                    ),
                    "atomic = true: write the record in the same transaction as the business write".into(),
                ));
            }

            // lease-too-short
            let slowest = self.slowest(si);
            let problem = if l.lease == NEVER {
                Some("is \"never\": a placeholder left by a crash stays in progress for ever, and every retry of that key gets 409 or waits".to_string())
            } else {
                match slowest {
                    None => Some(format!(
                        "({}) may be shorter than the slowest execution, which is unbounded (a before_commit call has no timeout)",
                        human(l.lease)
                    )),
                    Some(t) if l.lease < t => Some(format!(
                        "({}) is shorter than the slowest execution ({}, p99.9 of the service time plus the before_commit calls): a duplicate then re-executes a request still in progress",
                        human(l.lease),
                        human(t)
                    )),
                    Some(_) => None,
                }
            };
            if let Some(problem) = problem {
                let fix = match slowest {
                    Some(t) => format!(
                        "set lease to a finite value above {}, e.g. \"{}\"",
                        human(t),
                        human(t.saturating_mul(2))
                    ),
                    None => {
                        "give the before_commit calls a deadline, then set lease above the slowest execution".into()
                    }
                };
                out.push(self.on_experiment(
                    "lease-too-short",
                    field("lease"),
                    at.clone(),
                    format!("{}'s ledger lease {problem}", svc.name),
                    fix,
                ));
            }
        }
    }
}
