//! Linkerd: the policy as the retry and timeout annotations of a Service
//! (Linkerd 2.16 and later: `retry.linkerd.io/*`, `timeout.linkerd.io/*`)
//! and, for a `ratio` budget, a ServiceProfile `retryBudget` (Linkerd's
//! budget is retrysim's ratio budget: `retryRatio`, `minRetriesPerSecond`,
//! `ttl`). Linkerd retries at once (no backoff), does not retry connection
//! errors, and has no budget for annotation retries.

use super::*;

/// The policy as Linkerd annotations (and a ServiceProfile).
pub fn to_linkerd(p: &Policy) -> Exported {
    let mut x = Exported::new();
    let retries = p.max_attempts > 1;
    let name = k8s_name(&p.name);
    x.notes
        .push("the annotations go on the Service's metadata (or an HTTPRoute's); \"backend\" is a placeholder".into());
    let r = &p.retry_on;
    let per_try = (p.per_try_timeout != NEVER && p.per_try_timeout < p.deadline).then_some(p.per_try_timeout);
    let mut y = String::new();
    y.push_str(&format!("# Linkerd retry and timeout annotations exported by retrysim from policy {:?}.\n", p.name));
    y.push_str("apiVersion: v1\nkind: Service\n");
    y.push_str(&format!(
        "metadata:\n  name: backend\n  annotations:\n    retrysim.io/policy: {}\n",
        yaml_string(&p.name)
    ));
    if retries {
        let codes: Vec<String> = r.statuses.iter().map(u16::to_string).collect();
        if !codes.is_empty() {
            y.push_str(&format!("    retry.linkerd.io/http: \"{}\"\n", codes.join(",")));
        } else {
            x.lose("retry_on", "no status: Linkerd's retry.linkerd.io/http names statuses; without one it retries 5xx");
        }
        y.push_str(&format!("    retry.linkerd.io/limit: \"{}\"\n", p.max_attempts - 1));
        if let Some(t) = per_try {
            y.push_str(&format!("    retry.linkerd.io/timeout: {}\n", gep_duration(t)));
        }
        if r.connect_error {
            x.lose(
                "retry_on",
                "connect_error: Linkerd does not retry connection errors as such (its proxy reconnects and balances on its own)",
            );
        }
        if r.reset {
            x.lose("retry_on", "reset: Linkerd retries on statuses and per-try timeouts, not on resets");
        }
        if r.timeout && per_try.is_none() {
            x.lose(
                "retry_on",
                "timeout: without a per_try_timeout shorter than the deadline no attempt times out on its own",
            );
        } else if !r.timeout && per_try.is_some() {
            x.lose("retry_on", "timeout left out: Linkerd retries an attempt that hits retry.linkerd.io/timeout");
        }
        if p.backoff.kind != BackoffKind::None {
            x.lose(
                "backoff",
                format!("{}: Linkerd retries at once, with no backoff", backoff_kind_label(p.backoff.kind)),
            );
        }
        if p.respect_retry_after {
            x.lose("respect_retry_after", "true: Linkerd does not read Retry-After");
        }
        if !p.retry_unknown_without_key && !unknown_outcomes(p).is_empty() {
            x.lose(
                "retry_unknown_without_key",
                "false: Linkerd retries by status whatever the method and whether the request carries an idempotency key",
            );
        }
    }
    if p.deadline != NEVER {
        y.push_str(&format!("    timeout.linkerd.io/request: {}\n", gep_duration(p.deadline)));
    } else {
        x.lose("deadline", "none: exported no request timeout (Linkerd's default: none)");
    }
    for (field, v) in [("deadline", p.deadline), ("per_try_timeout", per_try.unwrap_or(NEVER))] {
        if v != NEVER && !v.is_multiple_of(1_000_000) {
            x.lose(field, format!("{}: exported in whole milliseconds", human(v)));
        }
    }
    y.push_str("spec:\n  selector:\n    app: backend\n  ports:\n  - port: 80\n");
    lose_mesh_common(p, &mut x, "Linkerd");
    if p.breaker.is_some() {
        x.lose(
            "circuit_breaker",
            "Linkerd has no breaker per client (failure accrual on a Service ejects endpoints after consecutive failures)",
        );
    }
    match p.budget.filter(|_| retries) {
        None => {}
        Some(b) => match b.kind {
            BudgetKind::Ratio { ratio, min_per_sec, ttl } => {
                x.notes.push(
                    "the ServiceProfile's retryBudget limits the profile's retries (routes with isRetryable); annotation retries have no budget"
                        .into(),
                );
                let min = min_per_sec.round();
                if min != min_per_sec {
                    x.lose("budget.min_per_sec", format!("{min_per_sec}: minRetriesPerSecond is a whole number; exported {min}"));
                }
                if b.scope == crate::policy::budget::BudgetScope::Shared {
                    x.lose("budget.scope", "shared: each Linkerd proxy (client pod) keeps its own budget");
                }
                y.push_str("---\n# Linkerd's retry budget: retries at most retryRatio of requests, plus minRetriesPerSecond, over ttl.\n");
                y.push_str("apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\n");
                y.push_str(&format!("metadata:\n  name: backend.default.svc.cluster.local\n  labels:\n    retrysim.io/policy: {name}\n"));
                y.push_str("spec:\n  routes:\n  - name: all\n    condition:\n      pathRegex: \".*\"\n    isRetryable: true\n");
                if p.deadline != NEVER {
                    y.push_str(&format!("    timeout: {}\n", gep_duration(p.deadline)));
                }
                y.push_str(&format!(
                    "  retryBudget:\n    retryRatio: {ratio:?}\n    minRetriesPerSecond: {min}\n    ttl: {}\n",
                    gep_duration(ttl)
                ));
            }
            ref k => x.lose(
                "budget.kind",
                format!(
                    "{}: Linkerd's only budget is the ServiceProfile retryBudget (budget kind ratio); annotation retries have none",
                    budget_kind_label(k)
                ),
            ),
        },
    }
    x.text = y;
    x
}
