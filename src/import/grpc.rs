//! gRPC service config JSON (gRFC A6) → policy.

use super::*;
use crate::policy::budget::{BudgetKind, BudgetScope, BudgetSpec};
use crate::policy::hedge::{HedgeDelay, HedgeSpec};

/// The `retry_on` entries a gRPC status code stands for (the inverse of
/// the export's table; DEADLINE_EXCEEDED is a 504 from a server or proxy,
/// since gRPC never retries its own deadline).
fn members(code: &str) -> Option<(bool, bool, &'static [u16])> {
    // (connect_error, reset, statuses)
    let m: (bool, bool, &'static [u16]) = match code {
        "UNAVAILABLE" => (true, true, &[502, 503]),
        "RESOURCE_EXHAUSTED" => (false, false, &[429]),
        "DEADLINE_EXCEEDED" => (false, false, &[504]),
        "INTERNAL" => (false, false, &[500]),
        "UNIMPLEMENTED" => (false, false, &[501]),
        "INVALID_ARGUMENT" => (false, false, &[400]),
        "UNAUTHENTICATED" => (false, false, &[401]),
        "PERMISSION_DENIED" => (false, false, &[403]),
        "NOT_FOUND" => (false, false, &[404]),
        "ABORTED" => (false, false, &[409]),
        "FAILED_PRECONDITION" => (false, false, &[412]),
        "CANCELLED" => (false, false, &[499]),
        _ => return None,
    };
    Some(m)
}

fn codes(list: Option<&Value>, x: &mut Imported, field: &str) -> RetryOn {
    let mut r = RetryOn { connect_error: false, timeout: false, reset: false, statuses: Vec::new() };
    for c in list.and_then(Value::as_array).into_iter().flatten() {
        let name = c.as_str().map(str::to_ascii_uppercase).unwrap_or_else(|| c.to_string());
        match members(&name) {
            Some((connect, reset, statuses)) => {
                r.connect_error |= connect;
                r.reset |= reset;
                add_statuses(&mut r, statuses.iter().copied());
            }
            None => x.lose(field, format!("{name}: no outcome of retrysim stands for it; not retried")),
        }
    }
    r
}

pub(super) fn import(text: &str, file: &str, name: &str) -> InputResult<Imported> {
    let v: Value = serde_json::from_str(text).map_err(|e| InputError::file(file, format!("not valid JSON: {e}")))?;
    let mut x = Imported::new(name);
    let configs = v.get("methodConfig").and_then(Value::as_array).cloned().unwrap_or_default();
    if configs.len() > 1 {
        x.lose("methodConfig", format!("{} entries: read the first; a policy is one method config", configs.len()));
    }
    x.policy.respect_retry_after = true; // gRPC clients always obey server pushback
    x.policy.retry_unknown_without_key = true; // and retry whatever the method
    if let Some(mc) = configs.first() {
        if let Some(t) = mc.get("timeout") {
            x.policy.deadline = duration(t, file, "methodConfig[0].timeout")?;
        }
        for key in ["waitForReady", "maxRequestMessageBytes", "maxResponseMessageBytes"] {
            if mc.get(key).is_some() {
                x.lose(&format!("methodConfig[0].{key}"), "no policy field");
            }
        }
        if let Some(rp) = mc.get("retryPolicy") {
            let f = |k: &str| format!("methodConfig[0].retryPolicy.{k}");
            let max = uint(rp.get("maxAttempts").unwrap_or(&Value::Null), file, &f("maxAttempts"))?;
            if max < 2 {
                return Err(InputError::field(file, f("maxAttempts"), format!("{max}: gRPC requires at least 2")));
            }
            if max > 5 {
                x.lose(&f("maxAttempts"), format!("{max}: gRPC clients clamp it to 5; imported 5"));
            }
            x.policy.max_attempts = max.min(5) as u32;
            let need = |k: &str| rp.get(k).ok_or_else(|| InputError::field(file, f(k), "missing: gRFC A6 requires it"));
            let base = duration(need("initialBackoff")?, file, &f("initialBackoff"))?;
            let cap = duration(need("maxBackoff")?, file, &f("maxBackoff"))?;
            let multiplier = number(need("backoffMultiplier")?, file, &f("backoffMultiplier"))?;
            x.policy.backoff = Backoff {
                kind: BackoffKind::Exponential,
                base,
                cap,
                multiplier,
                jitter: Jitter::Proportional(0.2),
                throttling_base: None,
            };
            x.policy.retry_on = codes(rp.get("retryableStatusCodes"), &mut x, &f("retryableStatusCodes"));
            if let Some(p) = rp.get("perAttemptRecvTimeout") {
                x.policy.per_try_timeout = duration(p, file, &f("perAttemptRecvTimeout"))?;
            }
        } else if let Some(hp) = mc.get("hedgingPolicy") {
            let f = |k: &str| format!("methodConfig[0].hedgingPolicy.{k}");
            let max = uint(hp.get("maxAttempts").unwrap_or(&Value::Null), file, &f("maxAttempts"))?;
            if max < 2 {
                return Err(InputError::field(file, f("maxAttempts"), format!("{max}: gRPC requires at least 2")));
            }
            let delay = match hp.get("hedgingDelay") {
                Some(d) => duration(d, file, &f("hedgingDelay"))?,
                None => 0,
            };
            let non_fatal = codes(hp.get("nonFatalStatusCodes"), &mut x, &f("nonFatalStatusCodes"));
            if non_fatal.connect_error || non_fatal.reset {
                x.lose(
                    &f("nonFatalStatusCodes"),
                    "UNAVAILABLE: kept its statuses (502, 503) only; connect errors and resets end a hedge",
                );
            }
            let non_fatal = RetryOn { connect_error: false, reset: false, ..non_fatal };
            x.policy.hedging = Some(HedgeSpec {
                max_attempts: max.min(5) as u32,
                delay: HedgeDelay::Fixed(delay),
                max_extra_load: None,
                non_fatal,
                cancel: true,
            });
        }
    }
    if let Some(t) = v.get("retryThrottling") {
        let max_tokens = number(t.get("maxTokens").unwrap_or(&Value::Null), file, "retryThrottling.maxTokens")?;
        let token_ratio = number(t.get("tokenRatio").unwrap_or(&Value::Null), file, "retryThrottling.tokenRatio")?;
        x.policy.budget =
            Some(BudgetSpec { kind: BudgetKind::TokenBucket { max_tokens, token_ratio }, scope: BudgetScope::Client });
    }
    for key in ["loadBalancingConfig", "loadBalancingPolicy", "healthCheckConfig"] {
        if v.get(key).is_some() {
            x.lose(key, "no policy field");
        }
    }
    x.ensure_timeout(30_000_000_000, "gRPC calls have no deadline unless the caller sets one");
    Ok(x)
}
