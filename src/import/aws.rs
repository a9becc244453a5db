//! AWS shared config profile (`~/.aws/config`) → policy: `retry_mode` and
//! `max_attempts` of the `[default]` profile (else the first), with what
//! botocore 1.44 and the 2026 SDKs do in that mode (aws-standard-2026,
//! plus the adaptive rate limiter for `adaptive`).

use super::*;
use crate::policy::budget::{BudgetKind, BudgetScope, BudgetSpec};
use crate::policy::throttle::{ThrottleKind, ThrottleSpec};

/// botocore's default read timeout: the per-try timeout the SDK applies.
const READ_TIMEOUT: Nanos = 60_000_000_000;

/// One profile: its section name and its (key, value, line) entries.
type Profile = (String, Vec<(String, String, usize)>);

pub(super) fn import(text: &str, file: &str, name: &str) -> InputResult<Imported> {
    let mut profiles: Vec<Profile> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split(['#', ';']).next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            profiles.push((section.trim().to_string(), Vec::new()));
        } else if let Some((k, v)) = line.split_once('=') {
            let Some(last) = profiles.last_mut() else {
                return Err(InputError::file(file, format!("line {}: a key before any [profile] section", i + 1)));
            };
            last.1.push((k.trim().to_string(), v.trim().to_string(), i + 1));
        } else {
            return Err(InputError::file(file, format!("line {}: expected `key = value` or `[profile name]`", i + 1)));
        }
    }
    let chosen = profiles.iter().position(|(s, _)| s == "default").or((!profiles.is_empty()).then_some(0));
    let Some(chosen) = chosen else {
        return Err(InputError::file(file, "no profile: expected a [default] or [profile NAME] section"));
    };
    let mut x = Imported::new(name);
    if profiles.len() > 1 {
        x.lose("profiles", format!("read [{}] only of {} profiles", profiles[chosen].0, profiles.len()));
    }
    let section = profiles[chosen].0.clone();
    // botocore >= 1.44 standard mode (aws-standard-2026).
    let p = &mut x.policy;
    p.max_attempts = 3;
    p.per_try_timeout = READ_TIMEOUT;
    p.retry_on = RetryOn { connect_error: true, timeout: true, reset: true, statuses: vec![429, 500, 502, 503, 504] };
    p.retry_unknown_without_key = true;
    p.respect_retry_after = true;
    p.retry_after_clamp = Some(5_000_000_000);
    p.backoff = Backoff {
        kind: BackoffKind::Exponential,
        base: 50_000_000,
        cap: 20_000_000_000,
        multiplier: 2.0,
        jitter: Jitter::Full,
        throttling_base: Some(1_000_000_000),
    };
    p.budget = Some(BudgetSpec {
        kind: BudgetKind::Quota {
            initial: 500.0,
            retry_cost: 14.0,
            timeout_cost: 14.0,
            throttling_cost: 5.0,
            success_refund: 1.0,
        },
        scope: BudgetScope::Client,
    });
    let mut mode = "standard".to_string();
    for (k, v, line) in profiles[chosen].1.clone() {
        let field = format!("[{section}].{k}");
        match k.as_str() {
            "retry_mode" => mode = v.clone(),
            "max_attempts" => {
                let n: u32 = v.parse().map_err(|_| {
                    InputError::field(file, &field, format!("line {line}: \"{v}\" is not a whole number of attempts"))
                })?;
                if n == 0 {
                    return Err(InputError::field(file, &field, "0: at least 1 (the first attempt)"));
                }
                x.policy.max_attempts = n;
            }
            _ => x.lose(&field, "no policy field"),
        }
    }
    match mode.as_str() {
        "standard" => {}
        "adaptive" => {
            x.policy.throttle = Some(ThrottleSpec { kind: ThrottleKind::AwsAdaptive, scope: BudgetScope::Client })
        }
        "legacy" => x.lose(
            &format!("[{section}].retry_mode"),
            "legacy: differs per SDK (botocore: 5 attempts for most services, its own backoff); imported as standard",
        ),
        other => {
            return Err(InputError::field(
                file,
                format!("[{section}].retry_mode"),
                format!("\"{other}\": allowed are standard, adaptive, legacy"),
            ));
        }
    }
    x.lose(
        "timeouts",
        "none in shared config: per_try_timeout is botocore's default read timeout, 60s; the SDKs have no total deadline",
    );
    x.notes.push(crate::output::export::AWS_2026_VERSIONS.into());
    Ok(x)
}
