//! Policy tables: attempts, timeouts, `retry_on`, Retry-After, backoff,
//! budget and breaker.

use super::{V, budget};
use crate::breaker::{BreakerKind, BreakerSpec};
use crate::budget::BudgetScope;
use crate::error::InputResult;
use crate::hedge::{HedgeDelay, HedgeSpec};
use crate::raw::{BackoffRaw, BreakerRaw, HedgingRaw, PolicyRaw, ThrottleRaw};
use crate::throttle::{ThrottleKind, ThrottleSpec};
use crate::time::NEVER;
use crate::{Backoff, BackoffKind, Jitter, OnUnknown, Policy, RetryOn};

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
        Some(list) => outcomes(&v, list, &f("retry_on"))?,
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
    let hedging = match &raw.hedging {
        None => None,
        Some(h) => Some(hedging(&v, h, &f("hedging"))?),
    };
    if hedging.is_some() && max_attempts > 1 {
        return Err(v.err(
            &f("max_attempts"),
            "a policy with [hedging] does not retry (as in gRPC): leave max_attempts at 1 and set the copies in hedging.max_attempts",
        ));
    }
    let throttle = match &raw.throttle {
        None => None,
        Some(t) => Some(throttle(&v, t, &f("throttle"))?),
    };
    let on_unknown = match raw.on_unknown.as_deref() {
        None => OnUnknown::Retry,
        Some(text) => OnUnknown::parse(text).ok_or_else(|| {
            v.err(&f("on_unknown"), format!("\"{text}\" is not allowed: use \"retry\", \"query\" or \"give_up\""))
        })?,
    };
    if on_unknown == OnUnknown::Query && hedging.is_some() {
        return Err(v.err(
            &f("on_unknown"),
            "\"query\" asks for the state of one attempt at a time and cannot be combined with [hedging] (whose copies race): use \"retry\" or \"give_up\", or drop [hedging]",
        ));
    }
    let retry_after_clamp = match &raw.retry_after_clamp {
        None => None,
        Some(text) => Some(v.dur(&f("retry_after_clamp"), Some(text), 0)?),
    };
    Ok(Policy {
        name: raw.name.clone().unwrap_or_else(|| "inline".into()),
        max_attempts,
        per_try_timeout,
        deadline,
        min_attempt_time,
        retry_on,
        retry_unknown_without_key: raw.retry_unknown_without_key.unwrap_or(false),
        on_unknown,
        respect_retry_after: raw.respect_retry_after.unwrap_or(true),
        max_retry_after,
        backoff,
        budget,
        breaker,
        hedging,
        throttle,
        cancel_on_timeout: raw.cancel_on_timeout.unwrap_or(false),
        retry_after_clamp,
    })
}

/// A list of outcomes as `retry_on` writes them.
fn outcomes(v: &V, list: &[toml::Value], field: &str) -> InputResult<RetryOn> {
    let mut entries = Vec::new();
    for (i, e) in list.iter().enumerate() {
        let text = match e {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(n) => n.to_string(),
            other => other.to_string(),
        };
        entries.push(RetryOn::parse_entry(&text).map_err(|m| v.err(&format!("{field}[{i}]"), m))?);
    }
    Ok(RetryOn::from_entries(&entries))
}

/// `[hedging]`: copies, their delay (a duration or a quantile "p95"), the
/// extra-load cap, non-fatal answers and cancellation.
fn hedging(v: &V, h: &HedgingRaw, field: &str) -> InputResult<HedgeSpec> {
    let f = |n: &str| format!("{field}.{n}");
    let max_attempts = v.int_in(&f("max_attempts"), h.max_attempts, 2, 2, 100)? as u32;
    let Some(text) = &h.delay else {
        return Err(v.err(&f("delay"), "required: a duration such as \"20ms\" or a latency quantile such as \"p95\""));
    };
    let t = text.trim();
    let delay = if let Some(q) = t.strip_prefix('p') {
        match q.parse::<f64>() {
            Ok(x) if (1.0..=99.99).contains(&x) => HedgeDelay::Quantile(x / 100.0),
            _ => {
                return Err(v.err(
                    &f("delay"),
                    format!("\"{t}\" is not a quantile: use p1 to p99.99 (such as \"p95\"), or a duration"),
                ));
            }
        }
    } else {
        let d = v.dur(&f("delay"), Some(text), 0)?;
        HedgeDelay::Fixed(d)
    };
    let max_extra_load = match h.max_extra_load {
        None => None,
        Some(x) if x.is_finite() && x > 0.0 => Some(x),
        Some(x) => return Err(v.err(&f("max_extra_load"), format!("must be a share above 0, got {x}"))),
    };
    let non_fatal = match &h.non_fatal {
        None => RetryOn::none(),
        Some(list) => outcomes(v, list, &f("non_fatal"))?,
    };
    if non_fatal.connect_error || non_fatal.timeout || non_fatal.reset {
        return Err(v.err(
            &f("non_fatal"),
            "lists status codes (gRPC nonFatalStatusCodes); a copy's timeout always lets the others go on",
        ));
    }
    Ok(HedgeSpec { max_attempts, delay, max_extra_load, non_fatal, cancel: h.cancel.unwrap_or(true) })
}

/// `[throttle]`: `kind = "sre"` (with `k`, `window`) or `"aws_adaptive"`.
fn throttle(v: &V, t: &ThrottleRaw, field: &str) -> InputResult<ThrottleSpec> {
    let f = |n: &str| format!("{field}.{n}");
    let scope = match t.scope.as_deref().unwrap_or("client") {
        "client" => BudgetScope::Client,
        "shared" => BudgetScope::Shared,
        other => return Err(v.err(&f("scope"), format!("unknown scope \"{other}\": allowed are client, shared"))),
    };
    let kind = match t.kind.as_deref() {
        Some("sre") => {
            let k = t.k.unwrap_or(2.0);
            if !(k.is_finite() && k >= 1.0) {
                return Err(v.err(&f("k"), format!("must be a number of at least 1 (the SRE book uses 2), got {k}")));
            }
            let window = v.positive_dur(&f("window"), t.window.as_ref(), 120_000_000_000)?;
            ThrottleKind::Sre { k, window }
        }
        Some("aws_adaptive") => {
            for (name, here) in [("k", t.k.is_some()), ("window", t.window.is_some())] {
                if here {
                    return Err(
                        v.err(&f(name), "not used by kind = \"aws_adaptive\" (its CUBIC constants are the AWS SDKs')")
                    );
                }
            }
            ThrottleKind::AwsAdaptive
        }
        Some(other) => {
            return Err(v.err(&f("kind"), format!("unknown throttle \"{other}\": allowed are sre, aws_adaptive")));
        }
        None => return Err(v.err(&f("kind"), "required: sre or aws_adaptive")),
    };
    Ok(ThrottleSpec { kind, scope })
}

/// `[circuit_breaker]`: the fields its kind needs are required, the others refused.
fn breaker(v: &V, b: &BreakerRaw, field: &str) -> InputResult<BreakerSpec> {
    let f = |n: &str| format!("{field}.{n}");
    let kind_name = b.kind.as_deref().unwrap_or("failure_ratio");
    let needs: &[&str] = match kind_name {
        "failure_ratio" => &["failure_ratio", "window", "min_requests", "open_for", "half_open_probes"],
        "consecutive" => &["consecutive_failures", "open_for", "half_open_probes"],
        "slow_call" => {
            &["slow_call_duration", "slow_call_ratio", "window", "min_requests", "open_for", "half_open_probes"]
        }
        other => {
            return Err(v.err(
                &f("kind"),
                format!("unknown breaker \"{other}\": allowed are failure_ratio, consecutive, slow_call"),
            ));
        }
    };
    let present = [
        ("failure_ratio", b.failure_ratio.is_some()),
        ("window", b.window.is_some()),
        ("min_requests", b.min_requests.is_some()),
        ("open_for", b.open_for.is_some()),
        ("half_open_probes", b.half_open_probes.is_some()),
        ("consecutive_failures", b.consecutive_failures.is_some()),
        ("slow_call_duration", b.slow_call_duration.is_some()),
        ("slow_call_ratio", b.slow_call_ratio.is_some()),
    ];
    let optional: &[&str] = if kind_name == "slow_call" { &["failure_ratio"] } else { &[] };
    for (name, here) in present {
        if here && !needs.contains(&name) && !optional.contains(&name) {
            return Err(v.err(&f(name), format!("not used by kind = \"{kind_name}\" (it takes {})", needs.join(", "))));
        }
        if !here && needs.contains(&name) {
            return Err(v.err(&f(name), format!("required: a {kind_name} circuit breaker needs {}", needs.join(", "))));
        }
    }
    let failure_ratio = match b.failure_ratio {
        None => None,
        Some(r) if r > 0.0 && r <= 1.0 => Some(r),
        Some(r) => return Err(v.err(&f("failure_ratio"), format!("must be in (0, 1], got {r}"))),
    };
    let open_for = v.positive_dur(&f("open_for"), b.open_for.as_ref(), 0)?;
    let window = match &b.window {
        None => 0,
        Some(w) => v.positive_dur(&f("window"), Some(w), 0)?,
    };
    let min_requests = match b.min_requests {
        None => 0,
        Some(n) => v.int_in(&f("min_requests"), Some(n), 1, 1, 1_000_000)? as u32,
    };
    let half_open_probes = v.int_in(&f("half_open_probes"), b.half_open_probes, 1, 1, 1_000_000)? as u32;
    let kind = match kind_name {
        "consecutive" => BreakerKind::Consecutive {
            failures: v.int_in(&f("consecutive_failures"), b.consecutive_failures, 1, 1, 1_000_000)? as u32,
        },
        "slow_call" => {
            let duration = v.positive_dur(&f("slow_call_duration"), b.slow_call_duration.as_ref(), 0)?;
            let ratio = b.slow_call_ratio.unwrap_or(f64::NAN);
            if !(ratio > 0.0 && ratio <= 1.0) {
                return Err(v.err(&f("slow_call_ratio"), format!("must be in (0, 1], got {ratio}")));
            }
            BreakerKind::SlowCall { duration, ratio }
        }
        _ => BreakerKind::FailureRatio,
    };
    Ok(BreakerSpec {
        kind,
        failure_ratio,
        window,
        min_requests,
        open_for,
        half_open_probes,
        retries_only: b.retries_only.unwrap_or(false),
    })
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
    let throttling_base = match &b.throttling_base {
        None => None,
        Some(text) => {
            if kind == BackoffKind::None {
                return Err(v.err(&f("throttling_base"), "needs a backoff kind other than \"none\""));
            }
            let d = v.dur(&f("throttling_base"), Some(text), 0)?;
            if d > cap || d == NEVER {
                return Err(v.err(&f("throttling_base"), "must be finite and at most `cap`"));
            }
            Some(d)
        }
    };
    if kind == BackoffKind::Decorrelated && jitter != Jitter::None {
        return Err(v.err(&f("jitter"), "decorrelated backoff draws its own random wait: leave jitter at \"none\""));
    }
    Ok(Backoff { kind, base, cap, multiplier, jitter, throttling_base })
}
