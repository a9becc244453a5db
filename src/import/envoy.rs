//! Envoy route `retry_policy` (YAML or JSON: the fragment `export --to
//! envoy` writes, a RouteAction, a whole bootstrap or a config dump) →
//! policy. The first `retry_policy` found anywhere in the documents is
//! read, with the `timeout` and `hedge_policy` beside it; a cluster
//! `retry_budget` and an `admission_control` filter anywhere are read too.

use super::*;
use crate::policy::budget::{BudgetKind, BudgetScope, BudgetSpec};
use crate::policy::hedge::{HedgeDelay, HedgeSpec};
use crate::policy::throttle::{ThrottleKind, ThrottleSpec};

/// Envoy's route timeout when a route sets none.
const ENVOY_ROUTE_TIMEOUT: Nanos = 15_000_000_000;

/// The first object (depth first) that has `key`, and its value.
fn find<'a>(v: &'a Value, key: &str) -> Option<(&'a Value, &'a Value)> {
    match v {
        Value::Object(m) => {
            if let Some(x) = m.get(key) {
                return Some((v, x));
            }
            m.values().find_map(|c| find(c, key))
        }
        Value::Array(a) => a.iter().find_map(|c| find(c, key)),
        _ => None,
    }
}

/// The first admission_control filter's typed_config.
fn admission_control(v: &Value) -> Option<&Value> {
    match v {
        Value::Object(m) => {
            let t = m.get("typed_config");
            let is_ac = m.get("name").and_then(Value::as_str) == Some("envoy.filters.http.admission_control")
                || t.and_then(|t| t.get("@type"))
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.ends_with(".AdmissionControl"));
            if is_ac {
                return t;
            }
            m.values().find_map(admission_control)
        }
        Value::Array(a) => a.iter().find_map(admission_control),
        _ => None,
    }
}

/// A `FractionalPercent`/`Percent` as `value` or a plain number.
fn percent(v: &Value) -> Option<f64> {
    v.as_f64().or_else(|| v.get("value").and_then(Value::as_f64))
}

pub(super) fn import(text: &str, file: &str, name: &str) -> InputResult<Imported> {
    let docs = Value::Array(yaml_docs(text, file)?);
    let mut x = Imported::new(name);
    x.policy.retry_unknown_without_key = true; // Envoy retries by retry_on alone
    x.policy.respect_retry_after = false;
    let Some((route, rp)) = find(&docs, "retry_policy") else {
        return Err(InputError::file(
            file,
            "no retry_policy found: expected an Envoy route retry_policy (YAML or JSON)",
        ));
    };
    let f = |k: &str| format!("retry_policy.{k}");
    if !rp.is_object() {
        return Err(InputError::field(
            file,
            "retry_policy",
            format!("expected key: value pairs (an Envoy RetryPolicy), got {}", shown_value(rp)),
        ));
    }
    let hedge_policy = mapping(route, "hedge_policy", file, "hedge_policy")?;
    let back_off = mapping(rp, "retry_back_off", file, &f("retry_back_off"))?;
    let rate_limited = mapping(rp, "rate_limited_retry_back_off", file, &f("rate_limited_retry_back_off"))?;
    match route.get("timeout") {
        Some(t) => {
            let d = duration(t, file, "timeout")?;
            x.policy.deadline = if d == 0 { NEVER } else { d };
        }
        None => {
            x.policy.deadline = ENVOY_ROUTE_TIMEOUT;
            x.lose("timeout", "none on the route: Envoy's default route timeout, 15s, is the deadline");
        }
    }
    let num_retries = match rp.get("num_retries") {
        Some(n) => retries(n, file, &f("num_retries"))? - 1,
        None => 1,
    };
    if let Some(t) = rp.get("per_try_timeout") {
        x.policy.per_try_timeout = duration(t, file, &f("per_try_timeout"))?;
    }
    // A per-try timeout as long as the route timeout never fires first.
    let per_try = x.policy.per_try_timeout != NEVER && x.policy.per_try_timeout < x.policy.deadline;
    let mut r = RetryOn { connect_error: false, timeout: false, reset: false, statuses: Vec::new() };
    let conditions = string(rp, "retry_on", file, &f("retry_on"))?.unwrap_or("");
    for c in conditions.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        match c {
            "connect-failure" => r.connect_error = true,
            "reset" | "reset-before-request" => {
                r.reset = true;
                r.timeout |= per_try;
            }
            "retriable-status-codes" => {}
            "5xx" => {
                r.connect_error = true;
                r.reset = true;
                r.timeout |= per_try;
                add_statuses(&mut r, 500..=599);
            }
            "gateway-error" => {
                r.timeout |= per_try;
                add_statuses(&mut r, [502, 503, 504]);
            }
            "retriable-4xx" => add_statuses(&mut r, [409]),
            other => x.lose(&f("retry_on"), format!("{other}: no outcome of retrysim stands for it; not retried")),
        }
    }
    if let Some(codes) = rp.get("retriable_status_codes") {
        let codes = codes.as_array().ok_or_else(|| {
            InputError::field(
                file,
                f("retriable_status_codes"),
                format!("expected a list of status codes, got {}", shown_value(codes)),
            )
        })?;
        for c in codes {
            let s = uint(c, file, &f("retriable_status_codes"))?;
            if !(100..600).contains(&s) {
                return Err(InputError::field(file, f("retriable_status_codes"), format!("{s}: not a status 100-599")));
            }
            if conditions.contains("retriable-status-codes") {
                add_statuses(&mut r, [s as u16]);
            }
        }
    }
    x.policy.retry_on = r;
    let base = match back_off.and_then(|b| b.get("base_interval")) {
        Some(b) => duration(b, file, &f("retry_back_off.base_interval"))?,
        None => 25_000_000,
    };
    let max = match back_off.and_then(|b| b.get("max_interval")) {
        Some(m) => duration(m, file, &f("retry_back_off.max_interval"))?,
        None => base.saturating_mul(10),
    };
    x.policy.backoff = envoy_backoff(base, max);
    if let Some(rl) = rate_limited {
        x.policy.respect_retry_after = true;
        if let Some(m) = rl.get("max_interval") {
            let m = duration(m, file, &f("rate_limited_retry_back_off.max_interval"))?;
            if m != x.policy.deadline {
                x.policy.max_retry_after = Some(m);
            }
        } else {
            x.policy.max_retry_after = Some(300_000_000_000);
        }
    }
    for key in [
        "retry_host_predicate",
        "host_selection_retry_max_attempts",
        "retry_priority",
        "retriable_headers",
        "retriable_request_headers",
    ] {
        if rp.get(key).is_some() {
            x.lose(
                &f(key),
                "no policy field (host selection and header matching are the experiment's and the route's)",
            );
        }
    }
    let hedged = match hedge_policy {
        Some(h) => boolean(h, "hedge_on_per_try_timeout", file, "hedge_policy.hedge_on_per_try_timeout")? == Some(true),
        None => false,
    };
    if hedged && x.policy.per_try_timeout != NEVER {
        x.policy.hedging = Some(HedgeSpec {
            max_attempts: num_retries + 1,
            delay: HedgeDelay::Fixed(x.policy.per_try_timeout),
            max_extra_load: None,
            non_fatal: RetryOn { connect_error: false, timeout: false, reset: false, statuses: Vec::new() },
            cancel: true,
        });
        x.policy.max_attempts = 1;
        x.policy.per_try_timeout = NEVER;
        x.lose(
            "hedge_policy",
            "Envoy also retries the failures retry_on names while it hedges; the policy hedges only",
        );
    } else {
        x.policy.max_attempts = num_retries + 1;
    }
    if let Some((holder, _)) = find(&docs, "retry_budget") {
        let rb = mapping(holder, "retry_budget", file, "retry_budget")?.expect("found");
        let budget_percent = match rb.get("budget_percent") {
            None => 20.0,
            Some(p) => percent(p).ok_or_else(|| {
                InputError::field(
                    file,
                    "retry_budget.budget_percent",
                    format!("expected a percentage such as {{ value: 20 }}, got {}", shown_value(p)),
                )
            })?,
        };
        let min_retry_concurrency = match rb.get("min_retry_concurrency") {
            Some(m) => u32::try_from(uint(m, file, "retry_budget.min_retry_concurrency")?)
                .map_err(|_| InputError::field(file, "retry_budget.min_retry_concurrency", "too large"))?,
            None => 3,
        };
        x.policy.budget = Some(BudgetSpec {
            kind: BudgetKind::Concurrency { budget_percent, min_retry_concurrency },
            scope: BudgetScope::Client,
        });
    } else if find(&docs, "max_retries").is_some() {
        x.lose(
            "circuit_breakers.max_retries",
            "a fixed limit of retries in flight: no policy field (budget kind concurrency is a share)",
        );
    }
    if let Some(ac) = admission_control(&docs) {
        let sr = at(ac, &["sr_threshold", "default_value"]).and_then(percent).unwrap_or(95.0);
        let window = match ac.get("sampling_window") {
            Some(w) => duration(w, file, "admission_control.sampling_window")?,
            None => 30_000_000_000,
        };
        x.policy.throttle =
            Some(ThrottleSpec { kind: ThrottleKind::Sre { k: 100.0 / sr, window }, scope: BudgetScope::Client });
        let aggression = at(ac, &["aggression", "default_value"]).and_then(Value::as_f64).unwrap_or(1.0);
        if aggression != 1.0 {
            x.lose("admission_control.aggression", format!("{aggression}: the SRE formula has aggression 1"));
        }
        if at(ac, &["max_rejection_probability", "default_value"]).and_then(percent).unwrap_or(80.0) < 100.0 {
            x.lose("admission_control.max_rejection_probability", "below 100%: the SRE formula has no cap");
        }
    }
    x.ensure_timeout(ENVOY_ROUTE_TIMEOUT, "Envoy's default route timeout");
    Ok(x)
}
