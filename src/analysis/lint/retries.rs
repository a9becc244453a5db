//! The rules about one edge's retry settings: unsafe-retry, no-jitter,
//! no-budget, retry-after-unbounded, attempts-exceed-deadline and
//! client-error-retried.

use super::graph::{Keyed, UnsafeRetry};
use super::*;
use crate::config::Caller;

/// `1 time`, `3 times`.
fn times(n: u32) -> String {
    crate::words::plural(n as usize, "time")
}

impl Graph<'_> {
    /// The rules about one edge's policy.
    pub(super) fn edge_rules(&self, out: &mut Vec<Finding>) {
        for e in 0..self.s.edges.len() {
            let p = self.policy(e);
            if p.max_attempts < 2 {
                continue;
            }
            let loc = self.location(e);
            let n = p.max_attempts;
            let callee = self.callee(e);

            // unsafe-retry
            if let Some(kind) = self.unsafe_retry(e) {
                let unknown = unknown_outcomes(p).join(", ");
                let ops = self.unsafe_ops(e).join(", ");
                match kind {
                    UnsafeRetry::NoKey(keyed) => {
                        let how =
                            if keyed == Keyed::Never { "without an idempotency key" } else { "not always with a key" };
                        let fix = match self.s.edges[e].caller {
                            Caller::Client(_) => format!(
                                "send one key per intent ({loc}.idempotency_key = true) to a service with an idempotency ledger, or set retry_unknown_without_key = false"
                            ),
                            Caller::Service { .. } => format!(
                                "set {loc}.key = \"derive\" (or forward a key every caller sends) and give {callee} an idempotency ledger, or set retry_unknown_without_key = false"
                            ),
                        };
                        out.push(self.on_policy(
                            "unsafe-retry",
                            e,
                            "retry_unknown_without_key",
                            format!(
                                "{loc} retries {ops} (not idempotent) on {callee} after {unknown} {how}: a retry after an answer lost past the commit executes it again"
                            ),
                            fix,
                        ));
                    }
                    UnsafeRetry::KeyUnchecked => out.push(self.on_experiment(
                        "unsafe-retry",
                        format!("services.{callee}.idempotency"),
                        loc.clone(),
                        format!(
                            "{loc} sends an idempotency key to {callee}, which has no idempotency ledger, and retries {ops} (not idempotent) after {unknown}: the key protects nothing and a retry executes it again"
                        ),
                        format!(
                            "give {callee} a ledger: idempotency = {{ store = \"durable\", ttl = \"24h\" }}, or take the unknown outcomes out of retry_on"
                        ),
                    )),
                }
            }

            // no-jitter
            if let Caller::Client(c) = self.s.edges[e].caller {
                let count = self.s.clients[c].count;
                if count > 1 && !p.backoff.is_jittered() {
                    out.push(self.on_policy(
                        "no-jitter",
                        e,
                        "backoff.jitter",
                        format!(
                            "{loc} has {count} instances retrying up to {} with {} backoff and no jitter: instances that fail together retry together, in synchronized waves",
                            times(n - 1),
                            backoff_kind(p)
                        ),
                        "use capped exponential backoff with jitter: [backoff] kind = \"exponential\", jitter = \"full\"".into(),
                    ));
                }
            }

            // no-budget
            if p.budget.is_none() {
                out.push(self.on_policy(
                    "no-budget",
                    e,
                    "budget",
                    format!(
                        "{loc} retries up to {} with no retry budget: while {callee} fails, every intent makes {n} attempts ({n}x the load on a struggling service)",
                        times(n - 1)
                    ),
                    "add a [budget], e.g. kind = \"token_bucket\" (gRPC retry throttling) or kind = \"ratio\" with ratio = 0.1".into(),
                ));
            }

            // retry-after-unbounded
            if p.respect_retry_after {
                let problem = match p.max_retry_after {
                    None if p.deadline == NEVER => Some(
                        "is unset and there is no deadline: a server can make the client wait without limit"
                            .to_string(),
                    ),
                    None => Some(format!(
                        "is unset, so it defaults to the deadline ({}): a Retry-After can hold the intent for all of its remaining time and leave none for the attempt",
                        human(p.deadline)
                    )),
                    Some(NEVER) => Some("is \"never\": a server can make the client wait without limit".to_string()),
                    Some(m) if p.deadline != NEVER && m >= p.deadline => Some(format!(
                        "({}) is not shorter than the deadline ({}): such a wait can never be followed by an attempt",
                        human(m),
                        human(p.deadline)
                    )),
                    Some(_) => None,
                };
                if let Some(problem) = problem {
                    let suggestion = if p.deadline != NEVER { human(p.deadline / 3) } else { "30s".into() };
                    out.push(self.on_policy(
                        "retry-after-unbounded",
                        e,
                        "max_retry_after",
                        format!("{loc} obeys Retry-After and max_retry_after {problem}"),
                        format!("set max_retry_after well below the deadline, e.g. \"{suggestion}\", to give up instead of waiting"),
                    ));
                }
            }

            // attempts-exceed-deadline
            if p.per_try_timeout != NEVER && p.deadline != NEVER {
                let waits: Vec<Nanos> = (1..n).map(|k| p.backoff.max_delay(k)).collect();
                let total = p
                    .per_try_timeout
                    .saturating_mul(n as u64)
                    .saturating_add(waits.iter().fold(0u64, |a, &w| a.saturating_add(w)));
                if total > p.deadline {
                    // How many attempts fit in the deadline.
                    let mut fit = 0;
                    let mut used: Nanos = 0;
                    for k in 0..n {
                        let wait = if k == 0 { 0 } else { waits[k as usize - 1] };
                        used = used.saturating_add(wait).saturating_add(p.per_try_timeout);
                        if used > p.deadline {
                            break;
                        }
                        fit += 1;
                    }
                    let fits = match fit {
                        1 => "1 attempt that times out fits".to_string(),
                        _ => format!("{fit} attempts that time out fit"),
                    };
                    let wait_total = total - p.per_try_timeout.saturating_mul(n as u64).min(total);
                    out.push(self.on_policy(
                        "attempts-exceed-deadline",
                        e,
                        "per_try_timeout",
                        format!(
                            "{loc}: {n} attempts x per_try_timeout {} + waits up to {} = {} exceeds the deadline {}: only {fits}, the rest are cut short or never made",
                            human(p.per_try_timeout),
                            human(wait_total),
                            human(total),
                            human(p.deadline)
                        ),
                        format!(
                            "lower per_try_timeout to at most {}, lower max_attempts to {}, or raise the deadline to {}",
                            human(p.deadline.saturating_sub(wait_total) / n as u64),
                            fit.max(1),
                            human(total)
                        ),
                    ));
                }
            }

            // client-error-retried
            let bad: Vec<String> =
                p.retry_on.statuses.iter().filter(|s| matches!(s, 400 | 401 | 403)).map(u16::to_string).collect();
            if !bad.is_empty() {
                out.push(self.on_policy(
                    "client-error-retried",
                    e,
                    "retry_on",
                    format!(
                        "{loc} retries {}: a malformed, unauthenticated or forbidden request fails the same way every time; retrying only adds load",
                        bad.join(", ")
                    ),
                    format!("remove {} from retry_on", bad.join(", ")),
                ));
            }
        }
    }
}

fn backoff_kind(p: &Policy) -> &'static str {
    match p.backoff.kind {
        crate::policy::BackoffKind::None => "no",
        crate::policy::BackoffKind::Constant => "constant",
        crate::policy::BackoffKind::Exponential => "exponential",
        crate::policy::BackoffKind::Decorrelated => "decorrelated",
    }
}
