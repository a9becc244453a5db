//! Policy tables: attempts, timeouts, `retry_on`, Retry-After, backoff,
//! budget and breaker.

use super::{V, budget, not_yet};
use crate::config::raw::{BackoffRaw, PolicyRaw};
use crate::engine::NEVER;
use crate::error::InputResult;
use crate::policy::{Backoff, BackoffKind, Jitter, Policy, RetryOn};

/// Validates a policy table. `prefix` is the field path of the table in its
/// file (empty for a policy file).
pub fn policy(raw: &PolicyRaw, file: &str, prefix: &str) -> InputResult<Policy> {
    let v = V { file };
    let f = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}.{name}")
        }
    };
    let max_attempts = v.int_in(&f("max_attempts"), raw.max_attempts, 1, 1, 1000)? as u32;
    let per_try_timeout =
        v.positive_dur(&f("per_try_timeout"), raw.per_try_timeout.as_ref(), NEVER)?;
    let deadline = v.positive_dur(&f("deadline"), raw.deadline.as_ref(), NEVER)?;
    if per_try_timeout == NEVER && deadline == NEVER {
        return Err(v.err(
            if prefix.is_empty() {
                "per_try_timeout"
            } else {
                prefix
            },
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
                entries.push(
                    RetryOn::parse_entry(&text)
                        .map_err(|m| v.err(&format!("{}[{i}]", f("retry_on")), m))?,
                );
            }
            RetryOn::from_entries(&entries)
        }
    };
    let max_retry_after =
        v.positive_dur(&f("max_retry_after"), raw.max_retry_after.as_ref(), NEVER)?;
    let backoff = match &raw.backoff {
        None => Backoff::default(),
        Some(b) => backoff(&v, b, &f("backoff"))?,
    };
    let budget = match &raw.budget {
        None => None,
        Some(b) => budget::budget(b, file, &f("budget"))?,
    };
    if raw.circuit_breaker.is_some() {
        return Err(not_yet(file, &f("circuit_breaker"), "the circuit breaker"));
    }
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
    })
}

fn backoff(v: &V, b: &BackoffRaw, field: &str) -> InputResult<Backoff> {
    let f = |n: &str| format!("{field}.{n}");
    let kind = match b.kind.as_deref().unwrap_or("none") {
        "none" => BackoffKind::None,
        "constant" => BackoffKind::Constant,
        "exponential" => BackoffKind::Exponential,
        "decorrelated" => BackoffKind::Decorrelated,
        other => return Err(v.err(
            &f("kind"),
            format!(
                "unknown backoff \"{other}\": allowed are none, constant, exponential, decorrelated"
            ),
        )),
    };
    let base = v.dur(&f("base"), b.base.as_ref(), 0)?;
    if kind != BackoffKind::None && b.base.is_none() {
        return Err(v.err(
            &f("base"),
            "required for this backoff kind (a duration such as \"100ms\")",
        ));
    }
    let cap = v.dur(&f("cap"), b.cap.as_ref(), NEVER)?;
    if cap < base {
        return Err(v.err(
            &f("cap"),
            format!(
                "must be at least `base` ({})",
                b.base.as_deref().unwrap_or("0s")
            ),
        ));
    }
    let multiplier = b.multiplier.unwrap_or(2.0);
    if !(multiplier.is_finite() && multiplier >= 1.0) {
        return Err(v.err(
            &f("multiplier"),
            format!("must be a number of at least 1, got {multiplier}"),
        ));
    }
    let ratio = b.jitter_ratio.unwrap_or(0.2);
    if !(0.0..=1.0).contains(&ratio) {
        return Err(v.err(
            &f("jitter_ratio"),
            format!("must be from 0 to 1, got {ratio}"),
        ));
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
        return Err(v.err(
            &f("jitter_ratio"),
            "only used with jitter = \"proportional\"",
        ));
    }
    if kind == BackoffKind::Decorrelated && jitter != Jitter::None {
        return Err(v.err(
            &f("jitter"),
            "decorrelated backoff draws its own random wait: leave jitter at \"none\"",
        ));
    }
    Ok(Backoff {
        kind,
        base,
        cap,
        multiplier,
        jitter,
    })
}
