//! AWS SDKs: the policy as shared-config keys (`retry_mode`, `max_attempts`)
//! of standard retry mode.
//!
//! Two generations of standard mode are recognised. Before the 2026
//! update (botocore up to 1.43, and SDKs that have not shipped it): base
//! 1 s, retry cost 5, timeout retry cost 10. From botocore 1.44.0 (the AWS
//! SDKs' 2026 retry behaviour, always on; `AWS_NEW_RETRIES_2026` is no
//! longer read): base 50 ms, 1 s after throttling, retry cost 14 (no
//! separate timeout cost), throttling retry cost 5, `x-amz-retry-after`
//! honoured and clamped to at most 5 s above the backoff; `standard` is
//! the default `retry_mode`. The numbers are botocore 1.44.8's
//! (`retries/standard.py`, `retries/quota.py`).

use super::*;
use crate::policy::budget::BudgetScope;

/// The quota of AWS standard retry mode before the 2026 update:
/// (initial, retry_cost, timeout_cost, throttling_cost, success_refund).
const AWS_QUOTA: (f64, f64, f64, f64, f64) = (500.0, 5.0, 10.0, 5.0, 1.0);
/// The same with the 2026 behaviour (botocore 1.44 and later).
const AWS_QUOTA_2026: (f64, f64, f64, f64, f64) = (500.0, 14.0, 14.0, 5.0, 1.0);
/// The SDK versions whose behaviour the 2026 settings produce.
pub const AWS_2026_VERSIONS: &str = "Behaviour of botocore >= 1.44.0 (checked with botocore 1.44.8; AWS CLI v1 and boto3 on it) and the AWS SDKs' 2026 standard retry mode: 50ms base, 1s after throttling, retry cost 14, x-amz-retry-after honoured.";
/// The SDK versions whose behaviour the older settings produce.
pub const AWS_LEGACY_VERSIONS: &str = "Behaviour of botocore < 1.44 (e.g. 1.43.x) and the AWS SDKs' standard retry mode before the 2026 update: 1s base, retry cost 5, timeout retry cost 10; botocore >= 1.44 behaves as aws-standard-2026.";

/// What standard mode retries: transient errors and throttling.
const AWS_RETRY_ON: [&str; 8] = ["connect_error", "timeout", "reset", "429", "500", "502", "503", "504"];

/// The policy as AWS SDK shared config keys.
pub fn to_aws(p: &Policy) -> Exported {
    let mut x = Exported::new();
    let retries = p.max_attempts > 1;
    let quota = p.budget.and_then(|b| match b.kind {
        BudgetKind::Quota { initial, retry_cost, timeout_cost, throttling_cost, success_refund } => {
            Some((initial, retry_cost, timeout_cost, throttling_cost, success_refund))
        }
        _ => None,
    });
    let new_2026 = quota == Some(AWS_QUOTA_2026);
    let b = &p.backoff;
    let aws_backoff = |base: Nanos| {
        b.kind == BackoffKind::Exponential
            && b.base == base
            && b.cap == 20_000_000_000
            && (b.multiplier - 2.0).abs() < 1e-12
            && b.jitter == Jitter::Full
    };

    let mut t = String::new();
    t.push_str(&format!("# AWS SDK shared config (~/.aws/config) exported by retrysim from policy {:?}.\n", p.name));
    if new_2026 {
        t.push_str(&format!("# {AWS_2026_VERSIONS}\n"));
    } else {
        t.push_str(&format!("# {AWS_LEGACY_VERSIONS}\n"));
    }
    let mode = super::hedging::aws_mode(p, &mut x, new_2026);
    t.push_str("[default]\n");
    t.push_str(&format!("retry_mode = {mode}\n"));
    t.push_str(&format!("max_attempts = {}\n", p.max_attempts));

    if retries {
        let labels = retry_on_labels(p);
        let missing: Vec<&str> = AWS_RETRY_ON.iter().copied().filter(|e| !labels.iter().any(|l| l == e)).collect();
        let extra: Vec<&str> = labels.iter().map(String::as_str).filter(|l| !AWS_RETRY_ON.contains(l)).collect();
        if !missing.is_empty() || !extra.is_empty() {
            let mut parts = Vec::new();
            if !missing.is_empty() {
                parts.push(format!("they also retry {}, which retry_on leaves out", missing.join(", ")));
            }
            if !extra.is_empty() {
                parts.push(format!("they never retry {}", extra.join(", ")));
            }
            x.lose(
                "retry_on",
                format!(
                    "the SDKs retry a fixed set of errors (no response, 500, 502, 503, 504, throttling such as 429); {}",
                    parts.join("; ")
                ),
            );
        }
        if !p.retry_unknown_without_key && !unknown_outcomes(p).is_empty() {
            x.lose(
                "retry_unknown_without_key",
                "false: the SDKs retry transient errors on every operation; non-idempotent APIs are protected only where they take an idempotency token (ClientToken)",
            );
        }
        let expected = if new_2026 { 50_000_000 } else { 1_000_000_000 };
        if !aws_backoff(expected) || (new_2026 && b.throttling_base != Some(1_000_000_000)) {
            x.lose(
                "backoff",
                format!(
                    "{} base {} cap {} multiplier {} jitter {}: the SDKs keep the backoff in code (standard mode: full jitter, x2, capped at 20s, base {} in this version{}); shared config has no key for it",
                    backoff_kind_label(b.kind),
                    human(b.base),
                    human(b.cap),
                    b.multiplier,
                    jitter_label(b.jitter),
                    human(expected),
                    if new_2026 { ", 1s after throttling" } else { "" }
                ),
            );
        }
        if p.respect_retry_after && !new_2026 {
            x.lose(
                "respect_retry_after",
                "true: standard mode before botocore 1.44 waits its own backoff; only the 2026 behaviour honours x-amz-retry-after (and clamps it to at most 5s above the backoff)",
            );
        } else if p.respect_retry_after {
            // retry_after_clamp = 5s says what the 2026 SDKs do.
            if p.retry_after_clamp != Some(5_000_000_000) {
                x.lose(
                    "respect_retry_after",
                    "true: the 2026 SDKs (botocore >= 1.44) clamp x-amz-retry-after to at most 5s above the computed backoff (retry_after_clamp = \"5s\")",
                );
            }
        } else if new_2026 {
            x.lose("respect_retry_after", "false: the 2026 SDKs honour x-amz-retry-after");
        }
        if let Some(m) = p.max_retry_after {
            x.lose("max_retry_after", format!("{}: no shared-config key", human(m)));
        }
        if p.min_attempt_time > 0 {
            x.lose("min_attempt_time", format!("{}: no shared-config key", human(p.min_attempt_time)));
        }
    }
    if p.per_try_timeout != NEVER {
        x.lose(
            "per_try_timeout",
            format!(
                "{}: no shared-config key; set the SDK client's per-attempt (socket/read) timeout in code",
                human(p.per_try_timeout)
            ),
        );
    }
    if p.deadline != NEVER {
        x.lose(
            "deadline",
            format!("{}: no shared-config key; set the SDK client's API call timeout in code", human(p.deadline)),
        );
    }
    match (p.budget.filter(|_| retries), quota.filter(|_| retries)) {
        (_, Some(q)) if q == AWS_QUOTA || q == AWS_QUOTA_2026 => {
            if p.budget.is_some_and(|b| b.scope == BudgetScope::Shared) {
                x.lose("budget.scope", "shared: the SDKs keep one retry quota per client instance");
            }
        }
        (_, Some((initial, retry_cost, timeout_cost, throttling_cost, success_refund))) => x.lose(
            "budget",
            format!(
                "quota initial {initial} retry_cost {retry_cost} timeout_cost {timeout_cost} throttling_cost {throttling_cost} success_refund {success_refund}: \
                 the SDKs' quota constants are fixed in code (500, 5, 10, 5, 1 before botocore 1.44; from 1.44: 500, 14, 14, 5, 1)"
            ),
        ),
        (Some(b), None) => x.lose(
            "budget.kind",
            format!(
                "{}: standard mode's only budget is its retry quota (500 tokens, budget kind quota)",
                budget_kind_label(&b.kind)
            ),
        ),
        (None, None) if retries => {
            x.lose("budget", "none: standard mode always has a retry quota of 500 tokens; it cannot be turned off")
        }
        (None, None) => {}
    }
    if p.breaker.is_some() {
        x.lose("circuit_breaker", "the SDKs have no circuit breaker");
    }
    if mode == "adaptive" {
        x.notes.push(
            "retry_mode = adaptive: standard mode's retries and quota plus the CUBIC send-rate token bucket the policy's [throttle] describes; botocore marks it experimental"
                .into(),
        );
    } else {
        x.notes.push(
            "retry_mode = standard (the default from botocore 1.44): adaptive adds a client-side send-rate limiter that the policy does not describe; legacy differs per SDK"
                .into(),
        );
    }
    x.notes.push(if new_2026 { AWS_2026_VERSIONS.into() } else { AWS_LEGACY_VERSIONS.into() });
    x.text = t;
    x
}
