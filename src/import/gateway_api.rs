//! Gateway API HTTPRoute (and XBackendTrafficPolicy) → policy: the first
//! rule's `retry` and `timeouts`, and a `retryConstraint` as a `ratio`
//! budget shared by the gateway's clients.

use super::*;
use crate::policy::budget::{BudgetKind, BudgetScope, BudgetSpec};

pub(super) fn import(text: &str, file: &str, name: &str) -> InputResult<Imported> {
    let docs = yaml_docs(text, file)?;
    let kind = |d: &Value| d.get("kind").and_then(Value::as_str).map(str::to_string);
    let Some(route) = docs.iter().find(|d| kind(d).as_deref() == Some("HTTPRoute")) else {
        return Err(InputError::file(file, "no HTTPRoute: expected a Gateway API HTTPRoute (kind: HTTPRoute)"));
    };
    let name = at(route, &["metadata", "name"]).and_then(Value::as_str).unwrap_or(name);
    let mut x = Imported::new(name);
    let rules = at(route, &["spec", "rules"]).and_then(Value::as_array).cloned().unwrap_or_default();
    if rules.len() > 1 {
        x.lose("spec.rules", format!("{} rules: read the first", rules.len()));
    }
    let rule = rules.first().cloned().unwrap_or(Value::Null);
    x.policy.retry_unknown_without_key = true;
    x.policy.respect_retry_after = false;
    x.policy.retry_on = RetryOn { connect_error: false, timeout: false, reset: false, statuses: Vec::new() };
    if let Some(t) = at(&rule, &["timeouts", "request"]) {
        x.policy.deadline = duration(t, file, "spec.rules[0].timeouts.request")?;
    }
    if let Some(t) = at(&rule, &["timeouts", "backendRequest"]) {
        x.policy.per_try_timeout = duration(t, file, "spec.rules[0].timeouts.backendRequest")?;
    }
    if let Some(retry) = rule.get("retry") {
        let f = |k: &str| format!("spec.rules[0].retry.{k}");
        x.policy.max_attempts = match retry.get("attempts") {
            Some(a) => retries(a, file, &f("attempts"))?,
            None => {
                x.lose(&f("attempts"), "unset: implementation-specific; imported 1 retry");
                2
            }
        };
        if let Some(b) = retry.get("backoff") {
            let base = duration(b, file, &f("backoff"))?;
            x.policy.backoff = Backoff { kind: BackoffKind::Constant, base, ..Backoff::default() };
            x.lose(&f("backoff"), "the least wait between attempts: imported as a constant backoff; implementations may grow and jitter it");
        }
        for c in retry.get("codes").and_then(Value::as_array).into_iter().flatten() {
            let s = uint(c, file, &f("codes"))?;
            if !(400..600).contains(&s) {
                return Err(InputError::field(file, f("codes"), format!("{s}: allowed are 400-599")));
            }
            add_statuses(&mut x.policy.retry_on, [s as u16]);
        }
    }
    let policy = docs.iter().find(|d| kind(d).is_some_and(|k| k.ends_with("BackendTrafficPolicy")));
    if let Some(rc) = policy.and_then(|p| at(p, &["spec", "retryConstraint"])) {
        let percent = at(rc, &["budget", "percent"])
            .map(|v| number(v, file, "retryConstraint.budget.percent"))
            .transpose()?
            .unwrap_or(20.0);
        let ttl = at(rc, &["budget", "interval"])
            .map(|v| duration(v, file, "retryConstraint.budget.interval"))
            .transpose()?
            .unwrap_or(10_000_000_000);
        let count = at(rc, &["minRetryRate", "count"])
            .map(|v| number(v, file, "retryConstraint.minRetryRate.count"))
            .transpose()?
            .unwrap_or(10.0);
        let per = at(rc, &["minRetryRate", "interval"])
            .map(|v| duration(v, file, "retryConstraint.minRetryRate.interval"))
            .transpose()?
            .unwrap_or(1_000_000_000);
        if per == 0 {
            return Err(InputError::field(file, "retryConstraint.minRetryRate.interval", "0s: must be positive"));
        }
        x.policy.budget = Some(BudgetSpec {
            kind: BudgetKind::Ratio { ratio: percent / 100.0, min_per_sec: count / (per as f64 / 1e9), ttl },
            scope: BudgetScope::Shared,
        });
    }
    x.ensure_timeout(15_000_000_000, "the implementation's default request timeout applies (Envoy Gateway: 15s)");
    Ok(x)
}
