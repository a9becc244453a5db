//! Policy tables: attempts, timeouts, `retry_on`, Retry-After, backoff,
//! budget and breaker.

use super::{V, budget};
use crate::config::raw::{BackoffRaw, BreakerRaw, PolicyRaw};
use crate::engine::NEVER;
use crate::error::InputResult;
use crate::policy::breaker::BreakerSpec;
use crate::policy::{Backoff, BackoffKind, Jitter, Policy, RetryOn};

/// Validates a policy table. `prefix` is the field path of the table in its
/// file (empty for a policy file).
pub fn policy(raw: &PolicyRaw, file: &str, prefix: &str) -> InputResult<Policy> {
    let v = V { file };
    let f = |name: &str| {
        if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") }
    };
    let max_attempts = v.int_in(&f("max_attempts"), raw.max_attempts, 1, 1, 1000)? as u32;
    let per_try_timeout = v.positive_dur_or_never(&f("per_try_timeout"), raw.per_try_timeout.as_ref(), NEVER)?;
    let deadline = v.positive_dur_or_never(&f("deadline"), raw.deadline.as_ref(), NEVER)?;
    if per_try_timeout == NEVER && deadline == NEVER {
        return Err(v.err(
            if prefix.is_empty() { "per_try_timeout" } else { prefix },
            "a policy needs `per_try_timeout` or `deadline` (or both)",
        ));
    }
    let min_attempt_time = v.dur(&f("min_attempt_time"), raw.min_attempt_time.as_ref(), 0)?;
    let retry_on = match &raw.retry_on {
        None => RetryOn::default(),
        Some(list) => {
            let mut entries = Vec::new();
            for (i, e) in list.iter().enumerate() {
                let text = match e {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(n) => n.to_string(),
                    other => other.to_string(),
                };
                entries.push(RetryOn::parse_entry(&text).map_err(|m| v.err(&format!("{}[{i}]", f("retry_on")), m))?);
            }
            RetryOn::from_entries(&entries)
        }
    };
    let max_retry_after = match &raw.max_retry_after {
        None => None,
        Some(text) => Some(v.positive_dur_or_never(&f("max_retry_after"), Some(text), NEVER)?),
    };
    let backoff = match &raw.backoff {
        None => Backoff::default(),
        Some(b) => backoff(&v, b, &f("backoff"))?,
    };
    let budget = match &raw.budget {
        None => None,
        Some(b) => budget::budget(b, file, &f("budget"))?,
    };
    let breaker = match &raw.circuit_breaker {
        None => None,
        Some(b) => Some(breaker(&v, b, &f("circuit_breaker"))?),
    };
    Ok(Policy {
        name: raw.name.clone().unwrap_or_else(|| "inline".into()),
        max_attempts,
        per_try_timeout,
        deadline,
        min_attempt_time,
        retry_on,
        retry_unknown_without_key: raw.retry_unknown_without_key.unwrap_or(false),
        respect_retry_after: raw.respect_retry_after.unwrap_or(true),
        max_retry_after,
        backoff,
        budget,
        breaker,
    })
}

/// `[circuit_breaker]`: every field is required.
fn breaker(v: &V, b: &BreakerRaw, field: &str) -> InputResult<BreakerSpec> {
    let f = |n: &str| format!("{field}.{n}");
    let missing = |n: &str| {
        v.err(
            &f(n),
            "required: a circuit breaker needs failure_ratio, window, min_requests, open_for and half_open_probes",
        )
    };
    let failure_ratio = b.failure_ratio.ok_or_else(|| missing("failure_ratio"))?;
    if !(failure_ratio > 0.0 && failure_ratio <= 1.0) {
        return Err(v.err(&f("failure_ratio"), format!("must be in (0, 1], got {failure_ratio}")));
    }
    let window = v.positive_dur(&f("window"), Some(b.window.as_ref().ok_or_else(|| missing("window"))?), 0)?;
    let open_for = v.positive_dur(&f("open_for"), Some(b.open_for.as_ref().ok_or_else(|| missing("open_for"))?), 0)?;
    if window == NEVER || open_for == NEVER {
        return Err(v.err(field, "window and open_for must be finite"));
    }
    let min_requests =
        v.int_in(&f("min_requests"), Some(b.min_requests.ok_or_else(|| missing("min_requests"))?), 1, 1, 1_000_000)?
            as u32;
    let half_open_probes = v.int_in(
        &f("half_open_probes"),
        Some(b.half_open_probes.ok_or_else(|| missing("half_open_probes"))?),
        1,
        1,
        1_000_000,
    )? as u32;
    Ok(BreakerSpec { failure_ratio, window, min_requests, open_for, half_open_probes })
}

fn backoff(v: &V, b: &BackoffRaw, field: &str) -> InputResult<Backoff> {
    let f = |n: &str| format!("{field}.{n}");
    let kind = match b.kind.as_deref().unwrap_or("none") {
        "none" => BackoffKind::None,
        "constant" => BackoffKind::Constant,
        "exponential" => BackoffKind::Exponential,
        "decorrelated" => BackoffKind::Decorrelated,
        other => {
            return Err(v.err(
                &f("kind"),
                format!("unknown backoff \"{other}\": allowed are none, constant, exponential, decorrelated"),
            ));
        }
    };
    let base = v.dur(&f("base"), b.base.as_ref(), 0)?;
    if kind != BackoffKind::None && b.base.is_none() {
        return Err(v.err(&f("base"), "required for this backoff kind (a duration such as \"100ms\")"));
    }
    let cap = v.dur_or_never(&f("cap"), b.cap.as_ref(), NEVER)?;
    if cap < base {
        return Err(v.err(&f("cap"), format!("must be at least `base` ({})", b.base.as_deref().unwrap_or("0s"))));
    }
    let multiplier = b.multiplier.unwrap_or(2.0);
    if !(multiplier.is_finite() && multiplier >= 1.0) {
        return Err(v.err(&f("multiplier"), format!("must be a number of at least 1, got {multiplier}")));
    }
    let ratio = b.jitter_ratio.unwrap_or(0.2);
    if !(0.0..=1.0).contains(&ratio) {
        return Err(v.err(&f("jitter_ratio"), format!("must be from 0 to 1, got {ratio}")));
    }
    let jitter = match b.jitter.as_deref().unwrap_or("none") {
        "none" => Jitter::None,
        "full" => Jitter::Full,
        "equal" => Jitter::Equal,
        "proportional" => Jitter::Proportional(ratio),
        other => {
            return Err(v.err(
                &f("jitter"),
                format!("unknown jitter \"{other}\": allowed are none, full, equal, proportional"),
            ));
        }
    };
    if b.jitter_ratio.is_some() && !matches!(jitter, Jitter::Proportional(_)) {
        return Err(v.err(&f("jitter_ratio"), "only used with jitter = \"proportional\""));
    }
    if kind == BackoffKind::Decorrelated && jitter != Jitter::None {
        return Err(v.err(&f("jitter"), "decorrelated backoff draws its own random wait: leave jitter at \"none\""));
    }
    Ok(Backoff { kind, base, cap, multiplier, jitter })
}
