//! Istio: the policy as a VirtualService HTTP route with `retries` and
//! `timeout`, and a DestinationRule for what Istio keeps per upstream
//! (retries in flight, outlier detection). Checked against the Istio
//! 1.30.3 CRDs. Istio programs Envoy: its backoff is Envoy's (fully
//! jittered, `base * (2^N - 1)` capped at 10 × base), `retryOn` takes
//! Envoy's conditions and status codes.

use super::*;

/// The Istio release whose CRDs the export is checked against.
pub const ISTIO_VERSION: &str = "1.30.3";

/// The policy as an Istio VirtualService (and DestinationRule).
pub fn to_istio(p: &Policy) -> Exported {
    let mut x = Exported::new();
    let retries = p.max_attempts > 1;
    let name = k8s_name(&p.name);
    x.notes.push("hosts and destination \"backend\" are placeholders: replace them with your service".into());
    let r = &p.retry_on;
    let deadline = (p.deadline != NEVER).then_some(p.deadline);
    let per_try = (p.per_try_timeout != NEVER && p.per_try_timeout < p.deadline).then_some(p.per_try_timeout);

    let mut y = String::new();
    y.push_str(&format!("# Istio {ISTIO_VERSION} VirtualService exported by retrysim from policy {:?}.\n", p.name));
    y.push_str("apiVersion: networking.istio.io/v1\nkind: VirtualService\n");
    y.push_str(&format!("metadata:\n  name: {name}\n"));
    y.push_str("spec:\n  hosts:\n  - backend\n  http:\n  - route:\n    - destination:\n        host: backend\n");
    match deadline {
        Some(d) => y.push_str(&format!("    timeout: {}\n", gep_duration(d))),
        None => x.lose("deadline", "none: Istio routes have no timeout by default; exported none"),
    }
    for (field, v) in [("deadline", deadline), ("per_try_timeout", per_try)] {
        if let Some(v) = v.filter(|v| !v.is_multiple_of(1_000_000)) {
            x.lose(field, format!("{}: exported in whole milliseconds", human(v)));
        }
    }
    if !retries {
        // An explicit zero: without `retries` Istio applies its default of 2 retries.
        y.push_str("    retries:\n      attempts: 0\n");
    } else {
        let mut conditions: Vec<String> = Vec::new();
        if r.connect_error {
            conditions.push("connect-failure".into());
        }
        if r.reset || (r.timeout && per_try.is_some()) {
            conditions.push("reset".into());
            if per_try.is_some() && r.reset != r.timeout {
                x.lose(
                    "retry_on",
                    "Envoy's `reset` condition (which Istio uses) covers resets and per-try timeouts together: it retries both",
                );
            }
        }
        if r.timeout && per_try.is_none() {
            x.lose(
                "retry_on",
                "timeout: without a per_try_timeout shorter than the deadline no attempt times out on its own",
            );
        }
        conditions.extend(r.statuses.iter().map(u16::to_string));
        y.push_str("    retries:\n");
        y.push_str(&format!("      attempts: {}\n", p.max_attempts - 1));
        if let Some(t) = per_try {
            y.push_str(&format!("      perTryTimeout: {}\n", gep_duration(t)));
        }
        if !conditions.is_empty() {
            y.push_str(&format!("      retryOn: \"{}\"\n", conditions.join(",")));
        } else {
            x.lose("retry_on", "empty: Istio's default retryOn applies (connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes)");
        }
        let b = &p.backoff;
        match b.kind {
            BackoffKind::None => x.lose(
                "backoff.kind",
                "none (immediate retries): Istio always backs off; without backoff it uses Envoy's 25ms base",
            ),
            kind => {
                y.push_str(&format!("      backoff: {}\n", gep_duration(b.base.max(1_000_000))));
                if !b.base.is_multiple_of(1_000_000) || b.base < 1_000_000 {
                    x.lose(
                        "backoff.base",
                        format!("{}: Istio's backoff is whole milliseconds, at least 1ms", human(b.base)),
                    );
                }
                let envoy_like = kind == BackoffKind::Exponential
                    && b.jitter == Jitter::Full
                    && b.cap == b.base.saturating_mul(10)
                    && (b.multiplier - 2.0).abs() < 1e-12;
                if !envoy_like {
                    x.lose(
                        "backoff",
                        format!(
                            "{} base {} cap {} multiplier {} jitter {}: Istio sets only the base; Envoy jitters fully and caps at 10 x base",
                            backoff_kind_label(kind),
                            human(b.base),
                            human(b.cap),
                            b.multiplier,
                            jitter_label(b.jitter)
                        ),
                    );
                } else if p.max_attempts > 2 {
                    x.lose(
                        "backoff.multiplier",
                        "2: Envoy's N-th retry waits up to (2^N - 1) * base, not base * 2^(N-1)",
                    );
                }
            }
        }
        if p.respect_retry_after {
            x.lose(
                "respect_retry_after",
                "true: Istio does not configure Envoy's rate_limited_retry_back_off; Retry-After is not honoured",
            );
        }
        if !p.retry_unknown_without_key && !unknown_outcomes(p).is_empty() {
            x.lose(
                "retry_unknown_without_key",
                "false: Istio retries by retryOn whatever the method and whether the request carries an idempotency key",
            );
        }
    }
    lose_mesh_common(p, &mut x, "Istio");

    // DestinationRule: retries in flight and outlier detection.
    let mut dr = String::new();
    match p.budget.filter(|_| retries).map(|b| b.kind) {
        None if retries => x.notes.push(
            "no budget: Istio sets Envoy's retries in flight per cluster (maxRetries) to 2^32-1, so nothing limits retries".into(),
        ),
        None => {}
        Some(BudgetKind::Concurrency { budget_percent, min_retry_concurrency }) => {
            x.lose(
                "budget.budget_percent",
                format!(
                    "{budget_percent}: Istio has no retry budget; exported connectionPool.http.maxRetries = min_retry_concurrency, a fixed limit of retries in flight"
                ),
            );
            dr.push_str(&format!("    connectionPool:\n      http:\n        maxRetries: {min_retry_concurrency}\n"));
        }
        Some(ref k) => x.lose(
            "budget.kind",
            format!("{}: Istio has no retry budget (VirtualService has no budget field)", budget_kind_label(k)),
        ),
    }
    if let Some(c) = &p.breaker {
        match c.kind {
            crate::policy::breaker::BreakerKind::Consecutive { failures } => {
                x.lose(
                    "circuit_breaker",
                    "consecutive: exported as outlierDetection, which ejects one host after consecutive 5xx (per proxy), not a breaker per client",
                );
                dr.push_str(&format!(
                    "    outlierDetection:\n      consecutive5xxErrors: {failures}\n      interval: 10s\n      baseEjectionTime: {}\n",
                    gep_duration(c.open_for.max(1_000_000))
                ));
            }
            _ => x.lose(
                "circuit_breaker",
                "Istio has no failure-ratio or slow-call breaker: outlierDetection ejects single hosts",
            ),
        }
    }
    if !dr.is_empty() {
        y.push_str("---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\n");
        y.push_str(&format!("metadata:\n  name: {name}\nspec:\n  host: backend\n  trafficPolicy:\n"));
        y.push_str(&dr);
    }
    x.text = y;
    x
}
