//! Linkerd annotations (and ServiceProfile) → policy: `retry.linkerd.io/*`
//! and `timeout.linkerd.io/*` of the first object that has them, and a
//! ServiceProfile `retryBudget` as a `ratio` budget. Linkerd retries at
//! once (no backoff) and does not retry connection errors.

use super::*;
use crate::policy::budget::{BudgetKind, BudgetScope, BudgetSpec};

pub(super) fn import(text: &str, file: &str, name: &str) -> InputResult<Imported> {
    let docs = yaml_docs(text, file)?;
    let annotated = docs.iter().find_map(|d| {
        let a = at(d, &["metadata", "annotations"])?.as_object()?;
        a.keys().any(|k| k.starts_with("retry.linkerd.io/") || k.starts_with("timeout.linkerd.io/")).then_some((d, a))
    });
    let profile = docs.iter().find(|d| d.get("kind").and_then(Value::as_str) == Some("ServiceProfile"));
    if annotated.is_none() && profile.is_none() {
        return Err(InputError::file(
            file,
            "no retry.linkerd.io/ or timeout.linkerd.io/ annotations and no ServiceProfile",
        ));
    }
    let name = annotated
        .and_then(|(_, a)| a.get("retrysim.io/policy").and_then(Value::as_str))
        .or_else(|| annotated.and_then(|(d, _)| at(d, &["metadata", "name"]).and_then(Value::as_str)))
        .unwrap_or(name);
    let mut x = Imported::new(name);
    x.policy.retry_unknown_without_key = true;
    x.policy.respect_retry_after = false;
    x.policy.retry_on = RetryOn { connect_error: false, timeout: false, reset: false, statuses: Vec::new() };
    if let Some((_, a)) = annotated {
        let text = |k: &str| a.get(k).map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()));
        if let Some(codes) = text("retry.linkerd.io/http") {
            for c in codes.split(',').map(str::trim).filter(|c| !c.is_empty()) {
                let bad = || {
                    InputError::field(
                        file,
                        "retry.linkerd.io/http",
                        format!("\"{c}\": allowed are 5xx, gateway-error, a status or a range such as 500-504"),
                    )
                };
                match c {
                    "5xx" => add_statuses(&mut x.policy.retry_on, 500..=599),
                    "gateway-error" => add_statuses(&mut x.policy.retry_on, [502, 503, 504]),
                    _ => {
                        let (lo, hi) = c.split_once('-').unwrap_or((c, c));
                        let (Ok(lo), Ok(hi)) = (lo.trim().parse::<u16>(), hi.trim().parse::<u16>()) else {
                            return Err(bad());
                        };
                        if !(100..600).contains(&lo) || !(100..600).contains(&hi) || lo > hi {
                            return Err(bad());
                        }
                        add_statuses(&mut x.policy.retry_on, lo..=hi);
                    }
                }
            }
            x.policy.max_attempts = 2; // Linkerd's default limit: 1 retry
        }
        if text("retry.linkerd.io/grpc").is_some() {
            x.lose("retry.linkerd.io/grpc", "gRPC status conditions: not read");
        }
        if let Some(l) = text("retry.linkerd.io/limit") {
            x.policy.max_attempts = retries(&Value::String(l), file, "retry.linkerd.io/limit")?;
        }
        if let Some(t) = text("retry.linkerd.io/timeout") {
            x.policy.per_try_timeout = duration(&Value::String(t), file, "retry.linkerd.io/timeout")?;
            x.policy.retry_on.timeout = true;
        }
        if let Some(t) = text("timeout.linkerd.io/request") {
            x.policy.deadline = duration(&Value::String(t), file, "timeout.linkerd.io/request")?;
        }
        for k in ["timeout.linkerd.io/response", "timeout.linkerd.io/idle"] {
            if a.contains_key(k) {
                x.lose(k, "no policy field");
            }
        }
    }
    if let Some(rb) = profile.and_then(|p| at(p, &["spec", "retryBudget"])) {
        let ratio = number(rb.get("retryRatio").unwrap_or(&Value::Null), file, "spec.retryBudget.retryRatio")?;
        let min_per_sec = number(
            rb.get("minRetriesPerSecond").unwrap_or(&Value::Null),
            file,
            "spec.retryBudget.minRetriesPerSecond",
        )?;
        let ttl = duration(rb.get("ttl").unwrap_or(&Value::Null), file, "spec.retryBudget.ttl")?;
        x.policy.budget =
            Some(BudgetSpec { kind: BudgetKind::Ratio { ratio, min_per_sec, ttl }, scope: BudgetScope::Client });
    }
    x.ensure_timeout(30_000_000_000, "Linkerd has no request timeout by default");
    Ok(x)
}
