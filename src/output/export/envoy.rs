//! Envoy: the policy as a route `retry_policy` YAML fragment, plus a
//! cluster `circuit_breakers` fragment for a concurrency budget.

use super::*;
use crate::policy::budget::BudgetScope;

/// Envoy's smallest backoff interval (values below 1 ms are rounded up).
const ENVOY_MIN_INTERVAL: Nanos = 1_000_000;

/// The policy as an Envoy route `retry_policy` (and, for a concurrency
/// budget, a cluster `circuit_breakers`) YAML fragment.
pub fn to_envoy(p: &Policy) -> Exported {
    let mut x = Exported::new();
    let hedge = super::hedging::envoy_hedge(p, &mut x);
    let r = &p.retry_on;
    // A hedged policy's per-try timeout is its hedging delay, and a per-try
    // timeout must be retriable for Envoy to hedge on it.
    let per_try = hedge.is_some() || (p.per_try_timeout != NEVER && p.per_try_timeout < p.deadline);
    let retries = p.max_attempts > 1;

    // retry_on conditions.
    let mut conditions: Vec<&str> = Vec::new();
    if r.connect_error {
        conditions.push("connect-failure");
    }
    let timeout_retried = (r.timeout || hedge.is_some()) && per_try;
    if r.reset || timeout_retried {
        conditions.push("reset");
        let also_timeouts = r.reset && !r.timeout && per_try;
        if retries && (also_timeouts || (timeout_retried && !r.reset)) {
            let (has, other) = if r.reset { ("reset", "per-try timeouts") } else { ("timeout", "connection resets") };
            x.lose(
                "retry_on",
                format!(
                    "{has}: Envoy's `reset` condition covers resets and per-try timeouts together (no response: disconnect, reset, read timeout); it retries {other} too"
                ),
            );
        }
    }
    if r.timeout && !per_try && retries {
        x.lose(
            "retry_on",
            "timeout: without a per_try_timeout shorter than the deadline an attempt times out only when the route timeout ends the request, which Envoy never retries",
        );
    }
    if !r.statuses.is_empty() {
        conditions.push("retriable-status-codes");
    }

    let mut y = String::new();
    y.push_str(&format!("# Envoy retry policy exported by retrysim from policy {:?}.\n", p.name));
    y.push_str("# Goes in a route's `route:` (RouteAction), next to `cluster:`.\n");
    if p.deadline != NEVER {
        // The deadline is the route timeout (RouteAction.timeout, which includes all retries).
        y.push_str(&format!("timeout: \"{}\"\n", proto_duration(p.deadline)));
    } else {
        y.push_str("# No deadline: Envoy's route timeout defaults to 15s; `timeout: \"0s\"` disables it.\n");
        x.lose(
            "deadline",
            "none: Envoy's route timeout defaults to 15s and includes all retries; set timeout: \"0s\" on the route to disable it",
        );
    }
    y.push_str("retry_policy:\n");
    y.push_str(&format!("  retry_on: \"{}\"\n", conditions.join(",")));
    let (per_try_timeout, num_retries) = hedge.unwrap_or((p.per_try_timeout, p.max_attempts - 1));
    y.push_str(&format!("  num_retries: {num_retries}\n"));
    if per_try_timeout != NEVER {
        y.push_str(&format!("  per_try_timeout: \"{}\"\n", proto_duration(per_try_timeout)));
    }
    if !r.statuses.is_empty() {
        let list: Vec<String> = r.statuses.iter().map(u16::to_string).collect();
        y.push_str(&format!("  retriable_status_codes: [{}]\n", list.join(", ")));
    }

    // Backoff: Envoy's is always fully jittered, U(0, min(max_interval, (2^N - 1) * base)).
    let b = &p.backoff;
    let (base, max) = match b.kind {
        BackoffKind::None => {
            if retries {
                x.lose(
                    "backoff.kind",
                    "none (immediate retries): Envoy always backs off; exported its smallest base_interval, 1ms",
                );
            }
            (ENVOY_MIN_INTERVAL, ENVOY_MIN_INTERVAL)
        }
        BackoffKind::Constant => (b.base, b.base),
        BackoffKind::Exponential => (b.base, cap_or_largest(p)),
        BackoffKind::Decorrelated => {
            if retries {
                x.lose(
                    "backoff.kind",
                    "decorrelated: Envoy has only its exponential backoff; exported base and cap as base_interval and max_interval",
                );
            }
            (b.base, if b.cap == NEVER { largest_limit_decorrelated(p) } else { b.cap })
        }
    };
    if retries && b.kind == BackoffKind::Exponential && p.max_attempts > 2 {
        x.lose(
            "backoff.multiplier",
            format!(
                "{}: Envoy has no multiplier; the limit of its N-th retry is (2^N - 1) * base_interval (25ms, 75ms, 175ms, ... for 25ms), not base * multiplier^(N-1)",
                b.multiplier
            ),
        );
    }
    if retries && matches!(b.kind, BackoffKind::Constant | BackoffKind::Exponential) && b.jitter != Jitter::Full {
        x.lose(
            "backoff.jitter",
            format!("{}: Envoy always jitters fully, U(0, limit); it cannot be configured", jitter_label(b.jitter)),
        );
    }
    let base = base.max(ENVOY_MIN_INTERVAL);
    if b.kind != BackoffKind::None && b.base < ENVOY_MIN_INTERVAL && retries {
        x.lose("backoff.base", format!("{}: Envoy rounds base_interval up to 1ms", human(b.base)));
    }
    let hedge_policy = if hedge.is_some() { super::hedging::envoy_hedge_policy() } else { String::new() };
    y.push_str("  retry_back_off:\n");
    y.push_str(&format!("    base_interval: \"{}\"\n", proto_duration(base)));
    y.push_str(&format!("    max_interval: \"{}\"\n", proto_duration(max.max(base))));

    // Retry-After (only a retry waits).
    if p.respect_retry_after && retries {
        let limit = match p.max_retry_after {
            None if p.deadline != NEVER => Some(p.deadline),
            None => None,
            Some(NEVER) => None,
            Some(m) => Some(m),
        };
        y.push_str("  rate_limited_retry_back_off:\n");
        y.push_str("    reset_headers:\n");
        y.push_str("    - name: \"Retry-After\"\n");
        y.push_str("      format: SECONDS\n");
        match limit {
            Some(m) => y.push_str(&format!("    max_interval: \"{}\"\n", proto_duration(m))),
            None => {
                x.lose("max_retry_after", "no limit: Envoy's rate_limited_retry_back_off.max_interval defaults to 300s")
            }
        }
        if retries {
            x.lose(
                "respect_retry_after",
                "Envoy jitters a Retry-After wait to U(t, 1.5 t), reads it only as whole seconds, and uses its exponential backoff instead of giving up when it is longer than max_interval",
            );
        }
    }
    if p.min_attempt_time > 0 && retries {
        x.lose(
            "min_attempt_time",
            format!("{}: Envoy starts a retry whenever the route timeout has time left", human(p.min_attempt_time)),
        );
    }
    let unknown = unknown_outcomes(p);
    if retries && !p.retry_unknown_without_key && !unknown.is_empty() {
        x.lose(
            "retry_unknown_without_key",
            format!(
                "false: Envoy retries {} by retry_on alone, whatever the method and whether the request carries an idempotency key; \
                 use this route only for idempotent or keyed requests (retriable_request_headers can require a key header)",
                unknown.join(", ")
            ),
        );
    }

    y.push_str(&hedge_policy);

    // Budget (only retries need one).
    match p.budget.filter(|_| retries) {
        Some(bs) => match bs.kind {
            BudgetKind::Concurrency { budget_percent, min_retry_concurrency } => {
                y.push_str("---\n");
                y.push_str("# Goes on the upstream cluster (Cluster.circuit_breakers): Envoy's retry budget.\n");
                y.push_str("circuit_breakers:\n");
                y.push_str("  thresholds:\n");
                y.push_str("  - priority: DEFAULT\n");
                y.push_str("    retry_budget:\n");
                y.push_str("      budget_percent:\n");
                y.push_str(&format!("        value: {budget_percent:?}\n"));
                y.push_str(&format!("      min_retry_concurrency: {min_retry_concurrency}\n"));
                if bs.scope == BudgetScope::Shared {
                    x.lose(
                        "budget.scope",
                        "shared: Envoy keeps one retry budget per proxy and upstream cluster, not one per client class",
                    );
                }
            }
            ref k => x.lose(
                "budget.kind",
                format!(
                    "{}: Envoy's only retry budget limits concurrent retries (circuit_breakers retry_budget, budget kind concurrency); \
                     its default circuit breaker allows 3 retries in flight per cluster",
                    budget_kind_label(k)
                ),
            ),
        },
        None if retries => x.lose(
            "budget",
            "none: Envoy always limits retries in flight per upstream cluster (circuit_breakers max_retries, default 3)",
        ),
        None => {}
    }
    if p.breaker.is_some() {
        x.lose(
            "circuit_breaker",
            "Envoy has no failure-ratio breaker per client: outlier detection ejects single hosts, and its circuit_breakers limit concurrency",
        );
    }
    if let Some(filter) = super::hedging::envoy_filters(p, &mut x) {
        y.push_str(&filter);
    }
    x.text = y;
    x
}
