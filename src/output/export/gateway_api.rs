//! Kubernetes Gateway API: the policy as an HTTPRoute rule with `retry`
//! (GEP-1731) and `timeouts` (GEP-1742), and for a `ratio` budget an
//! XBackendTrafficPolicy with `retryConstraint` (GEP-3388, experimental
//! channel). Checked against the v1.6.1 experimental CRDs.

use super::*;
use crate::policy::budget::BudgetScope;

/// The Gateway API release whose CRDs the export is checked against.
pub const GATEWAY_API_VERSION: &str = "v1.6.1";

/// The statuses a Gateway API `codes` list accepts.
const CODES: std::ops::RangeInclusive<u16> = 400..=599;

/// The policy as a Gateway API HTTPRoute (and XBackendTrafficPolicy).
pub fn to_gateway_api(p: &Policy) -> Exported {
    let mut x = Exported::new();
    let retries = p.max_attempts > 1;
    let name = k8s_name(&p.name);
    if name != p.name {
        x.notes.push(format!("metadata.name {name:?}: the policy name as a Kubernetes object name"));
    }
    x.notes.push(
        "parentRefs \"gateway\" and backendRefs \"backend\" port 80 are placeholders: replace them with your Gateway and Service"
            .into(),
    );
    let r = &p.retry_on;
    let (codes, other): (Vec<u16>, Vec<u16>) = r.statuses.iter().partition(|&&s| CODES.contains(&s));
    if retries {
        let mut no_code = Vec::new();
        if r.connect_error {
            no_code.push("connect_error");
        }
        if r.timeout {
            no_code.push("timeout");
        }
        if r.reset {
            no_code.push("reset");
        }
        if !no_code.is_empty() {
            x.lose(
                "retry_on",
                format!(
                    "{}: a Gateway API retry names HTTP status codes only; whether connection errors, resets and backend timeouts are retried is up to the implementation (Envoy Gateway and Istio retry connect failures and resets)",
                    no_code.join(", ")
                ),
            );
        }
        if !other.is_empty() {
            let list: Vec<String> = other.iter().map(u16::to_string).collect();
            x.lose("retry_on", format!("{}: Gateway API retry codes are 400-599; not retried", list.join(", ")));
        }
        if !p.retry_unknown_without_key && !unknown_outcomes(p).is_empty() {
            x.lose(
                "retry_unknown_without_key",
                "false: the gateway retries by status code whatever the method and whether the request carries an idempotency key",
            );
        }
        if p.respect_retry_after {
            x.lose(
                "respect_retry_after",
                "true: GEP-1731 says nothing of Retry-After; whether it is honoured is up to the implementation",
            );
        }
    }

    let mut y = String::new();
    y.push_str(&format!(
        "# Gateway API {GATEWAY_API_VERSION} (experimental channel) exported by retrysim from policy {:?}.\n",
        p.name
    ));
    y.push_str("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\n");
    y.push_str(&format!("metadata:\n  name: {name}\n"));
    y.push_str(
        "spec:\n  parentRefs:\n  - name: gateway\n  rules:\n  - backendRefs:\n    - name: backend\n      port: 80\n",
    );

    // Timeouts: the deadline is the request timeout, the per-try timeout the backend request's.
    let per_try = (p.per_try_timeout != NEVER).then_some(p.per_try_timeout);
    let deadline = (p.deadline != NEVER).then_some(p.deadline);
    let per_try = match (per_try, deadline) {
        (Some(t), Some(d)) if t >= d => None,
        (t, _) => t,
    };
    if deadline.is_some() || per_try.is_some() {
        y.push_str("    timeouts:\n");
        for (key, field, v) in [("request", "deadline", deadline), ("backendRequest", "per_try_timeout", per_try)] {
            if let Some(v) = v {
                if !v.is_multiple_of(1_000_000) {
                    x.lose(field, format!("{}: Gateway API durations are whole milliseconds", human(v)));
                }
                y.push_str(&format!("      {key}: {}\n", gep_duration(v)));
            }
        }
    }
    if deadline.is_none() {
        x.lose("deadline", "none: the implementation's default request timeout applies (Envoy Gateway: 15s)");
    }

    if retries {
        y.push_str("    retry:\n");
        y.push_str(&format!("      attempts: {}\n", p.max_attempts - 1));
        let b = &p.backoff;
        match b.kind {
            BackoffKind::None => x.lose(
                "backoff.kind",
                "none: a Gateway API retry without backoff waits as long as the implementation likes (Envoy Gateway: 25ms base)",
            ),
            kind => {
                if !b.base.is_multiple_of(1_000_000) || b.base == 0 {
                    x.lose("backoff.base", format!("{}: Gateway API durations are whole milliseconds", human(b.base)));
                }
                y.push_str(&format!("      backoff: {}\n", gep_duration(b.base.max(1_000_000))));
                if kind != BackoffKind::Constant || b.jitter != Jitter::None || b.cap < b.base {
                    x.lose(
                        "backoff",
                        format!(
                            "{} base {} cap {} multiplier {} jitter {}: a Gateway API backoff is only the least wait between attempts; growth, cap and jitter are the implementation's",
                            backoff_kind_label(kind),
                            human(b.base),
                            human(b.cap),
                            b.multiplier,
                            jitter_label(b.jitter)
                        ),
                    );
                }
            }
        }
        if !codes.is_empty() {
            let list: Vec<String> = codes.iter().map(u16::to_string).collect();
            y.push_str(&format!("      codes: [{}]\n", list.join(", ")));
        }
    }
    lose_mesh_common(p, &mut x, "Gateway API");
    if p.breaker.is_some() {
        x.lose("circuit_breaker", "Gateway API has no circuit breaker");
    }

    match p.budget.filter(|_| retries) {
        None => {}
        Some(bs) => match bs.kind {
            BudgetKind::Ratio { ratio, min_per_sec, ttl } => {
                let percent = (ratio * 100.0).round();
                if (percent - ratio * 100.0).abs() > 1e-9 {
                    x.lose("budget.ratio", format!("{ratio}: retryConstraint percent is a whole number; exported {percent}"));
                }
                let mut interval = ttl.clamp(1_000_000_000, 3_600_000_000_000);
                if !interval.is_multiple_of(1_000_000) {
                    interval = interval.div_ceil(1_000_000) * 1_000_000;
                }
                if interval != ttl {
                    x.lose("budget.ttl", format!("{}: the budget interval is whole milliseconds in [1s, 1h]", human(ttl)));
                }
                let count = min_per_sec.round().max(1.0);
                if count != min_per_sec {
                    x.lose(
                        "budget.min_per_sec",
                        format!("{min_per_sec}: minRetryRate is a whole count (at least 1) per interval; exported {count} per 1s"),
                    );
                }
                if bs.scope == BudgetScope::Client {
                    x.lose(
                        "budget.scope",
                        "client: the gateway keeps one budget per backend for all of its clients (scope shared)",
                    );
                }
                y.push_str("---\n# The retry budget (GEP-3388, experimental): retries as a share of active requests to the backend.\n");
                y.push_str("apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackendTrafficPolicy\n");
                y.push_str(&format!("metadata:\n  name: {name}\n"));
                y.push_str("spec:\n  targetRefs:\n  - group: \"\"\n    kind: Service\n    name: backend\n");
                y.push_str("  retryConstraint:\n    budget:\n");
                y.push_str(&format!("      percent: {percent}\n      interval: {}\n", gep_duration(interval)));
                y.push_str(&format!("    minRetryRate:\n      count: {count}\n      interval: 1s\n"));
            }
            ref k => x.lose(
                "budget.kind",
                format!(
                    "{}: the Gateway API retry budget (retryConstraint) is a share of requests over an interval (budget kind ratio)",
                    budget_kind_label(k)
                ),
            ),
        },
    }
    x.text = y;
    x
}
