//! `retrysim lint`: the static checks of the pre-launch checklist (DESIGN
//! §6), the capacity and cross-layer timeout checks, over one validated
//! variant of an experiment, and the worst-case amplification of every
//! call path.
//!
//! Every rule has a fixed id and severity ([`RULES`]); a [`Finding`] names
//! the file and field to change and a one-line fix. `docs/lint.md` lists the
//! rules, what triggers each and why; `tests/it/lint.rs` has one experiment
//! per rule.
//!
//! Conventions shared by the rules:
//! - a *retrying edge* is a call edge whose policy has `max_attempts > 1`;
//!   rules about retry settings look only at retrying edges;
//! - an *unknown outcome* is one that may have executed (timeout, reset,
//!   5xx other than 503: DESIGN §4);
//! - the operations on an edge are the client's operation, a call's own
//!   `operation`, or else every operation that reaches the calling service;
//! - a call edge carries a key always (`derive`, or `forward` when every
//!   request reaching the service has one), sometimes, or never.

use crate::config::Scenario;
use crate::engine::{NEVER, Nanos, to_secs_f64};
use crate::policy::{Outcome, Policy};
use graph::Graph;

mod capacity;
mod downstream;
mod graph;
mod hedging;
mod hosts;
mod layers;
mod ledgers;
mod paths;
mod protocol;
mod retries;
mod sources;
mod timeouts;
mod timing;
mod warmup;

pub use sources::{Sources, sources};

/// How bad a finding is. `lint` exits 1 when any finding is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    /// `error` or `warning`.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A lint rule: its id, fixed severity and what it checks.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub id: &'static str,
    pub severity: Severity,
    /// One line: what triggers it.
    pub checks: &'static str,
}

/// Every rule, in the order of DESIGN §6, then capacity and timeouts,
/// then hosts and caches (`unsafe-hedge` sits beside `unsafe-retry`).
pub const RULES: [Rule; 24] = [
    Rule {
        id: "unsafe-retry",
        severity: Severity::Error,
        checks: "a non-idempotent operation retried after unknown outcomes (timeout, reset, 500, 502, 504) without an idempotency key, or with a key the service does not check",
    },
    Rule {
        id: "unsafe-hedge",
        severity: Severity::Error,
        checks: "a non-idempotent operation hedged without an idempotency key, or with a key the service does not check",
    },
    Rule {
        id: "layered-retries",
        severity: Severity::Warning,
        checks: "more than one layer retries on one synchronous call path (the worst case multiplies)",
    },
    Rule {
        id: "no-jitter",
        severity: Severity::Warning,
        checks: "a client class with many instances retries without jitter",
    },
    Rule { id: "no-budget", severity: Severity::Warning, checks: "a retrying edge has no retry budget" },
    Rule {
        id: "retry-after-unbounded",
        severity: Severity::Warning,
        checks: "a policy that obeys Retry-After has max_retry_after unset, \"never\", or not shorter than the deadline",
    },
    Rule {
        id: "attempts-exceed-deadline",
        severity: Severity::Warning,
        checks: "per_try_timeout * max_attempts plus the longest waits exceeds the deadline",
    },
    Rule {
        id: "client-error-retried",
        severity: Severity::Error,
        checks: "400, 401 or 403 in retry_on of a retrying edge",
    },
    Rule {
        id: "ttl-shorter-than-retry-window",
        severity: Severity::Error,
        checks: "an idempotency ledger forgets keys before a caller can stop resending them",
    },
    Rule {
        id: "memory-ledger",
        severity: Severity::Warning,
        checks: "an idempotency ledger kept in memory (emptied by a crash)",
    },
    Rule {
        id: "non-atomic-ledger",
        severity: Severity::Warning,
        checks: "an idempotency record written after the business write, not with it",
    },
    Rule {
        id: "lease-too-short",
        severity: Severity::Warning,
        checks: "a ledger lease of \"never\" or shorter than the slowest execution it guards",
    },
    Rule {
        id: "unprotected-downstream-effect",
        severity: Severity::Warning,
        checks: "a downstream call to a service with side effects without an outbox with dedup, or a key checked by a ledger",
    },
    Rule {
        id: "over-capacity",
        severity: Severity::Error,
        checks: "a service gets more requests per second before any fault (the clients' steady load x requests per intent when nothing fails) than its workers can serve",
    },
    Rule {
        id: "near-capacity",
        severity: Severity::Warning,
        checks: "a service runs above 80% utilisation before any fault",
    },
    Rule {
        id: "timeout-below-callee-retries",
        severity: Severity::Warning,
        checks: "a caller's per-try timeout is shorter than the callee's own retry window on a downstream call: the callee keeps retrying for a caller that has gone",
    },
    Rule {
        id: "timeout-below-p99",
        severity: Severity::Warning,
        checks: "a per-try timeout below the modelled p99 latency of an attempt without queueing or failures",
    },
    Rule {
        id: "no-outlier-detection",
        severity: Severity::Warning,
        checks: "a service with replicas has a balancer but no outlier detection",
    },
    Rule {
        id: "retry-same-host",
        severity: Severity::Warning,
        checks: "a retrying edge into a service with replicas without retry_other_host",
    },
    Rule {
        id: "short-warmup",
        severity: Severity::Warning,
        checks: "the warm-up is shorter than the time an adaptive mechanism (quantile hedging, SRE throttle, ratio budget, breaker window) needs to settle",
    },
    Rule {
        id: "unknown-outcome-unresolved",
        severity: Severity::Warning,
        checks: "a non-idempotent call to a service that commits can time out, and no status query, key checked by a ledger, reconciler or queue finds out what happened",
    },
    Rule {
        id: "visibility-below-p99",
        severity: Severity::Warning,
        checks: "a queue's visibility timeout is below its consumer's p99 processing time",
    },
    Rule {
        id: "no-max-receives",
        severity: Severity::Warning,
        checks: "a queue without max_receives (a poison message is delivered for ever)",
    },
    Rule {
        id: "cold-cache-overload",
        severity: Severity::Warning,
        checks: "a cache in front of a service that cannot take the full miss load (the cache cold or flushed)",
    },
];

/// The rule with this id.
pub fn rule(id: &str) -> &'static Rule {
    RULES.iter().find(|r| r.id == id).expect("a known rule id")
}

/// One finding of one rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule's id.
    pub rule: &'static str,
    /// The variant linted.
    pub variant: String,
    pub severity: Severity,
    /// The file to change: the experiment, or the policy file a policy came from.
    pub file: String,
    /// The field in that file, as a dotted path.
    pub field: String,
    /// Where in the experiment: `clients.web`, `services.api.calls.payments`, `services.orders`.
    pub at: String,
    /// What is wrong and what it leads to.
    pub message: String,
    /// One line: how to fix it.
    pub fix: String,
}

/// The worst-case amplification of one call path from a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRow {
    /// The client class.
    pub client: String,
    /// The client, then every service along the path.
    pub hops: Vec<String>,
    /// `max_attempts` of each edge along the path.
    pub attempts: Vec<u32>,
    /// Whether each edge is an outbox relay.
    pub outbox: Vec<bool>,
    /// The product of `attempts`: requests at the last service per intent, at worst.
    pub worst_case: u64,
}

/// What `lint` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// Errors first, then warnings; in rule order within each.
    pub findings: Vec<Finding>,
    /// Every call path from every client (each prefix of a longer path too).
    pub paths: Vec<PathRow>,
}

impl Report {
    /// Findings of this severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == severity).count()
    }
}

/// The findings of warning and error level of one variant as one line
/// each, naming the variant. Fields are named by their path in the
/// experiment (`clients.web.policy.budget`).
pub fn warnings_for_run(s: &Scenario) -> Vec<String> {
    warnings_for_variants(std::slice::from_ref(s))
}

/// The findings of every variant as one line each, for `run` to print at
/// its start: a finding that several variants share is printed once,
/// naming them (`every variant` when all of them have it).
pub fn warnings_for_variants(variants: &[Scenario]) -> Vec<String> {
    let groups = shared(variants);
    lines(&groups, variants.len())
}

/// What `run` prints on stderr before it simulates, `-q` or not: a line
/// with the number of errors and warnings (each as printed, once however
/// many variants share it), then [`warnings_for_variants`]; nothing
/// without a finding.
pub fn lint_block(variants: &[Scenario]) -> Vec<String> {
    let groups = shared(variants);
    if groups.is_empty() {
        return Vec::new();
    }
    let count = |sev: Severity| groups.iter().filter(|(f, _)| f.severity == sev).count();
    let what = match variants {
        [one] => format!("\"{}\"", one.variant),
        all => format!("{} variants", all.len()),
    };
    let mut out = vec![format!(
        "lint of {what}: {}, {}",
        crate::words::plural(count(Severity::Error), "error"),
        crate::words::plural(count(Severity::Warning), "warning")
    )];
    out.extend(lines(&groups, variants.len()));
    out
}

/// The findings of `variants`, each once with the names of the variants
/// that have it: errors first, then in the order of the first variant
/// that has it.
fn shared(variants: &[Scenario]) -> Vec<(Finding, Vec<String>)> {
    let mut groups: Vec<(Finding, Vec<String>)> = Vec::new();
    for s in variants {
        for f in lint(s, &Sources::default()).findings {
            let same = |g: &Finding| {
                (g.severity, g.rule, &g.field, &g.message, &g.fix) == (f.severity, f.rule, &f.field, &f.message, &f.fix)
            };
            match groups.iter_mut().find(|(g, _)| same(g)) {
                Some((_, names)) => names.push(f.variant.clone()),
                None => {
                    let name = f.variant.clone();
                    groups.push((f, vec![name]));
                }
            }
        }
    }
    groups.sort_by_key(|(f, _)| std::cmp::Reverse(f.severity));
    groups
}

/// One line per finding: `lint warning [rule] variants …: field: message (fix: …)`.
fn lines(groups: &[(Finding, Vec<String>)], total: usize) -> Vec<String> {
    groups
        .iter()
        .map(|(f, names)| {
            format!(
                "lint {} [{}] {}: {}: {} (fix: {})",
                f.severity.label(),
                f.rule,
                variants_label(names, total),
                f.field,
                f.message,
                f.fix
            )
        })
        .collect()
}

/// `variant "a"`, `variants "a", "b"`, or `every variant` (all of `total`, more than one).
pub fn variants_label(names: &[String], total: usize) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    match names.len() {
        1 => format!("variant {}", quoted[0]),
        n if n == total => "every variant".into(),
        _ => format!("variants {}", quoted.join(", ")),
    }
}

/// Runs every rule over `s` and lists the call paths.
pub fn lint(s: &Scenario, src: &Sources) -> Report {
    let g = Graph::new(s, src);
    let mut findings = Vec::new();
    g.edge_rules(&mut findings);
    g.hedge_rules(&mut findings);
    g.layered_retries(&mut findings);
    g.ledger_rules(&mut findings);
    g.downstream_effects(&mut findings);
    g.capacity_rules(&mut findings);
    g.timeout_rules(&mut findings);
    g.host_rules(&mut findings);
    g.warmup_rules(&mut findings);
    g.protocol_rules(&mut findings);
    let order = |id: &str| RULES.iter().position(|r| r.id == id).unwrap_or(usize::MAX);
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then(order(a.rule).cmp(&order(b.rule))));
    Report { findings, paths: g.paths() }
}

/// The outcomes in `retry_on` that may have executed (DESIGN §4).
fn unknown_outcomes(p: &Policy) -> Vec<String> {
    let r = &p.retry_on;
    let mut out = Vec::new();
    if r.timeout {
        out.push("timeout".to_string());
    }
    if r.reset {
        out.push("reset".into());
    }
    out.extend(r.statuses.iter().filter(|&&s| !Outcome::Status(s).nothing_executed()).map(u16::to_string));
    out
}

/// A duration for messages: `250ms`, `1.5s`, `never`.
fn human(ns: Nanos) -> String {
    fn trim(x: f64) -> String {
        let s = format!("{x:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
    if ns == NEVER {
        "never".into()
    } else if ns == 0 {
        "0s".into()
    } else if ns >= 3_600_000_000_000 && ns.is_multiple_of(3_600_000_000_000) {
        format!("{}h", ns / 3_600_000_000_000)
    } else if ns >= 1_000_000_000 {
        format!("{}s", trim(ns as f64 / 1e9))
    } else if ns >= 1_000_000 {
        format!("{}ms", trim(ns as f64 / 1e6))
    } else {
        format!("{}µs", trim(ns as f64 / 1e3))
    }
}

#[cfg(test)]
mod tests {
    use super::timing::quantile;
    use super::*;
    use crate::model::Dist;
    use std::collections::BTreeSet;

    #[test]
    fn quantiles() {
        assert_eq!(quantile(&Dist::Const(5), 0.999), 5);
        let q = quantile(&Dist::Exp { mean: 0.01 }, 0.999) as f64 / 1e9;
        assert!((q - 0.01 * 1000f64.ln()).abs() < 1e-6);
        let g = quantile(&Dist::Gamma { shape: 1.0, scale: 0.01 }, 0.999) as f64 / 1e9;
        assert!((g - q).abs() < 1e-4, "gamma(1) is exponential: {g} vs {q}");
    }

    #[test]
    fn every_rule_id_is_unique() {
        let ids: BTreeSet<&str> = RULES.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), RULES.len());
    }
}
