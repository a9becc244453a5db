//! Istio VirtualService → policy: the first HTTP route's `retries` and
//! `timeout`. A route without `retries` gets Istio's default: 2 retries on
//! connect-failure, refused-stream, unavailable, cancelled and 503, Envoy's
//! 25 ms backoff, retries avoiding the hosts already tried.

use super::*;

/// Istio's retryOn when a route sets none.
const ISTIO_DEFAULT_RETRY_ON: &str = "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes";

pub(super) fn import(text: &str, file: &str, name: &str) -> InputResult<Imported> {
    let docs = yaml_docs(text, file)?;
    let Some(vs) = docs.iter().find(|d| d.get("kind").and_then(Value::as_str) == Some("VirtualService")) else {
        return Err(InputError::file(
            file,
            "no VirtualService: expected an Istio VirtualService (kind: VirtualService)",
        ));
    };
    let name = at(vs, &["metadata", "name"]).and_then(Value::as_str).unwrap_or(name);
    let mut x = Imported::new(name);
    for d in &docs {
        if let Some(k) = d.get("kind").and_then(Value::as_str).filter(|k| *k != "VirtualService") {
            x.lose(k, "not read (a DestinationRule's outlier detection and connection pool are not a client policy)");
        }
    }
    let routes = at(vs, &["spec", "http"]).and_then(Value::as_array).cloned().unwrap_or_default();
    if routes.len() > 1 {
        x.lose("spec.http", format!("{} routes: read the first", routes.len()));
    }
    let route = routes.first().cloned().unwrap_or(Value::Null);
    x.policy.retry_unknown_without_key = true;
    x.policy.respect_retry_after = false;
    if let Some(t) = route.get("timeout") {
        let d = duration(t, file, "spec.http[0].timeout")?;
        x.policy.deadline = if d == 0 { NEVER } else { d };
    }
    let default_retries = serde_json::json!({ "attempts": 2, "retryOn": ISTIO_DEFAULT_RETRY_ON });
    let retries = match route.get("retries") {
        Some(r) => r.clone(),
        None => {
            x.lose("spec.http[0].retries", "none: Istio's default applies, 2 retries on connect-failure, refused-stream, unavailable, cancelled and 503, avoiding hosts already tried (retry_other_host in the experiment)");
            default_retries
        }
    };
    let f = |k: &str| format!("spec.http[0].retries.{k}");
    x.policy.max_attempts = match retries.get("attempts") {
        Some(a) => super::retries(a, file, &f("attempts"))?,
        None => 3,
    };
    if let Some(t) = retries.get("perTryTimeout") {
        x.policy.per_try_timeout = duration(t, file, &f("perTryTimeout"))?;
    }
    let per_try = x.policy.per_try_timeout != NEVER;
    let mut r = RetryOn { connect_error: false, timeout: false, reset: false, statuses: Vec::new() };
    let on_value = retries.get("retryOn").map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()));
    let on = on_value.as_deref().unwrap_or(ISTIO_DEFAULT_RETRY_ON);
    for c in on.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        match c {
            "connect-failure" => r.connect_error = true,
            "reset" => {
                r.reset = true;
                r.timeout |= per_try;
            }
            "refused-stream" => r.reset = true,
            "5xx" => {
                r.connect_error = true;
                r.reset = true;
                r.timeout |= per_try;
                add_statuses(&mut r, 500..=599);
            }
            "gateway-error" => add_statuses(&mut r, [502, 503, 504]),
            "retriable-status-codes" => add_statuses(&mut r, [503]),
            "unavailable" => add_statuses(&mut r, [503]),
            "resource-exhausted" => add_statuses(&mut r, [429]),
            "internal" => add_statuses(&mut r, [500]),
            "deadline-exceeded" => add_statuses(&mut r, [504]),
            s => match s.parse::<u16>() {
                Ok(code) if (100..600).contains(&code) => add_statuses(&mut r, [code]),
                _ => x.lose(&f("retryOn"), format!("{s}: no outcome of retrysim stands for it; not retried")),
            },
        }
    }
    // retriable-status-codes alone means 503 in Istio; with codes listed it means those.
    if on.contains("retriable-status-codes")
        && on.split(',').any(|c| c.trim().parse::<u16>().is_ok())
        && !on.contains("unavailable")
    {
        let listed: Vec<u16> = on.split(',').filter_map(|c| c.trim().parse().ok()).collect();
        if !listed.contains(&503) {
            r.statuses.retain(|&s| s != 503);
        }
    }
    if on.contains("cancelled") {
        x.lose(&f("retryOn"), "cancelled: a gRPC CANCELLED answer; no outcome of retrysim stands for it");
    }
    x.policy.retry_on = r;
    let base = match retries.get("backoff") {
        Some(b) => duration(b, file, &f("backoff"))?,
        None => 25_000_000,
    };
    x.policy.backoff = envoy_backoff(base, base.saturating_mul(10));
    for key in ["retryRemoteLocalities", "retryIgnorePreviousHosts"] {
        if retries.get(key).is_some() {
            x.lose(&f(key), "no policy field (host selection is the experiment's: retry_other_host)");
        }
    }
    x.ensure_timeout(30_000_000_000, "Istio routes have no timeout by default");
    Ok(x)
}
