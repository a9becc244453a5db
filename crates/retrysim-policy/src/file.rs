//! Writes a [`Policy`] as a policy file that `run` and the SDK
//! load as is: every field explicit, durations with units.

use super::breaker::BreakerKind;
use super::budget::{BudgetKind, BudgetScope};
use super::hedge::HedgeDelay;
use super::throttle::ThrottleKind;
use super::{BackoffKind, Jitter, Policy, RetryOn};
use crate::time::{NEVER, Nanos};
use std::fmt::Write as _;

/// A duration as the largest exact unit: `"2s"`, `"250ms"`, `"50us"`, `"7ns"`.
pub fn duration(ns: Nanos) -> String {
    if ns == NEVER {
        "never".into()
    } else if ns == 0 {
        "0s".into()
    } else if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// A string as a TOML basic string, escaped as TOML escapes (the toml
/// crate writes it): never Rust's debug escapes (`\u{202e}`), which TOML
/// does not read.
pub fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn float(x: f64) -> String {
    let s = format!("{x}");
    if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") { s } else { format!("{s}.0") }
}

/// A set of outcomes as a TOML array's items: `"connect_error", "503"`.
fn outcomes(set: &RetryOn) -> String {
    let mut on: Vec<String> = Vec::new();
    if set.connect_error {
        on.push("\"connect_error\"".into());
    }
    if set.timeout {
        on.push("\"timeout\"".into());
    }
    if set.reset {
        on.push("\"reset\"".into());
    }
    on.extend(set.statuses.iter().map(|s| format!("\"{s}\"")));
    on.join(", ")
}

/// The policy as TOML (without a header comment).
pub fn to_toml(p: &Policy) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "name = {}", toml_string(&p.name));
    let _ = writeln!(out, "max_attempts = {}", p.max_attempts);
    if p.per_try_timeout != NEVER {
        let _ = writeln!(out, "per_try_timeout = \"{}\"", duration(p.per_try_timeout));
    }
    if p.deadline != NEVER {
        let _ = writeln!(out, "deadline = \"{}\"", duration(p.deadline));
    }
    if p.min_attempt_time > 0 {
        let _ = writeln!(out, "min_attempt_time = \"{}\"", duration(p.min_attempt_time));
    }
    let _ = writeln!(out, "retry_on = [{}]", outcomes(&p.retry_on));
    let _ = writeln!(out, "retry_unknown_without_key = {}", p.retry_unknown_without_key);
    if p.on_unknown != crate::OnUnknown::Retry {
        let _ = writeln!(out, "on_unknown = \"{}\"", p.on_unknown.label());
    }
    let _ = writeln!(out, "respect_retry_after = {}", p.respect_retry_after);
    if let Some(m) = p.max_retry_after {
        let _ = writeln!(out, "max_retry_after = \"{}\"", duration(m));
    }
    if let Some(c) = p.retry_after_clamp {
        let _ = writeln!(out, "retry_after_clamp = \"{}\"", duration(c));
    }
    if p.cancel_on_timeout {
        let _ = writeln!(out, "cancel_on_timeout = true");
    }
    let b = &p.backoff;
    out.push_str("\n[backoff]\n");
    let kind = match b.kind {
        BackoffKind::None => "none",
        BackoffKind::Constant => "constant",
        BackoffKind::Exponential => "exponential",
        BackoffKind::Decorrelated => "decorrelated",
    };
    let _ = writeln!(out, "kind = \"{kind}\"");
    if b.kind != BackoffKind::None {
        let _ = writeln!(out, "base = \"{}\"", duration(b.base));
        if b.cap != NEVER {
            let _ = writeln!(out, "cap = \"{}\"", duration(b.cap));
        }
        let _ = writeln!(out, "multiplier = {}", float(b.multiplier));
        if let Some(t) = b.throttling_base {
            let _ = writeln!(out, "throttling_base = \"{}\"", duration(t));
        }
    }
    let jitter = match b.jitter {
        Jitter::None => "none".to_string(),
        Jitter::Full => "full".to_string(),
        Jitter::Equal => "equal".to_string(),
        Jitter::Proportional(r) => {
            let _ = writeln!(out, "jitter_ratio = {}", float(r));
            "proportional".to_string()
        }
    };
    let _ = writeln!(out, "jitter = \"{jitter}\"");
    if let Some(budget) = &p.budget {
        out.push_str("\n[budget]\n");
        match budget.kind {
            BudgetKind::TokenBucket { max_tokens, token_ratio } => {
                let _ = writeln!(
                    out,
                    "kind = \"token_bucket\"\nmax_tokens = {}\ntoken_ratio = {}",
                    float(max_tokens),
                    float(token_ratio)
                );
            }
            BudgetKind::Quota { initial, retry_cost, timeout_cost, throttling_cost, success_refund } => {
                let _ = writeln!(
                    out,
                    "kind = \"quota\"\ninitial = {}\nretry_cost = {}\ntimeout_cost = {}\nthrottling_cost = {}\nsuccess_refund = {}",
                    float(initial),
                    float(retry_cost),
                    float(timeout_cost),
                    float(throttling_cost),
                    float(success_refund)
                );
            }
            BudgetKind::Ratio { ratio, min_per_sec, ttl } => {
                let _ = writeln!(
                    out,
                    "kind = \"ratio\"\nratio = {}\nmin_per_sec = {}\nttl = \"{}\"",
                    float(ratio),
                    float(min_per_sec),
                    duration(ttl)
                );
            }
            BudgetKind::Concurrency { budget_percent, min_retry_concurrency } => {
                let _ = writeln!(
                    out,
                    "kind = \"concurrency\"\nbudget_percent = {}\nmin_retry_concurrency = {min_retry_concurrency}",
                    float(budget_percent)
                );
            }
        }
        let scope = match budget.scope {
            BudgetScope::Client => "client",
            BudgetScope::Shared => "shared",
        };
        let _ = writeln!(out, "scope = \"{scope}\"");
    }
    if let Some(c) = &p.breaker {
        out.push_str("\n[circuit_breaker]\n");
        match c.kind {
            BreakerKind::FailureRatio => {}
            BreakerKind::Consecutive { failures } => {
                let _ = writeln!(out, "kind = \"consecutive\"\nconsecutive_failures = {failures}");
            }
            BreakerKind::SlowCall { duration: d, ratio } => {
                let _ = writeln!(
                    out,
                    "kind = \"slow_call\"\nslow_call_duration = \"{}\"\nslow_call_ratio = {}",
                    duration(d),
                    float(ratio)
                );
            }
        }
        if c.retries_only {
            let _ = writeln!(out, "retries_only = true");
        }
        if let Some(r) = c.failure_ratio {
            let _ = writeln!(out, "failure_ratio = {}", float(r));
        }
        if !matches!(c.kind, BreakerKind::Consecutive { .. }) {
            let _ = writeln!(out, "window = \"{}\"\nmin_requests = {}", duration(c.window), c.min_requests);
        }
        let _ = writeln!(out, "open_for = \"{}\"\nhalf_open_probes = {}", duration(c.open_for), c.half_open_probes);
    }
    if let Some(h) = &p.hedging {
        out.push_str("\n[hedging]\n");
        let delay = match h.delay {
            HedgeDelay::Fixed(d) => duration(d),
            HedgeDelay::Quantile(q) => format!("p{}", (q * 100.0 * 1e9).round() / 1e9),
        };
        let _ = writeln!(out, "max_attempts = {}\ndelay = \"{delay}\"", h.max_attempts);
        if let Some(x) = h.max_extra_load {
            let _ = writeln!(out, "max_extra_load = {}", float(x));
        }
        let _ = writeln!(out, "non_fatal = [{}]\ncancel = {}", outcomes(&h.non_fatal), h.cancel);
    }
    if let Some(t) = &p.throttle {
        out.push_str("\n[throttle]\n");
        match t.kind {
            ThrottleKind::Sre { k, window } => {
                let _ = writeln!(out, "kind = \"sre\"\nk = {}\nwindow = \"{}\"", float(k), duration(window));
            }
            ThrottleKind::AwsAdaptive => out.push_str("kind = \"aws_adaptive\"\n"),
        }
        let scope = match t.scope {
            BudgetScope::Client => "client",
            BudgetScope::Shared => "shared",
        };
        let _ = writeln!(out, "scope = \"{scope}\"");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_round_trips() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies");
        let tmp = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let p = Policy::load(&path).unwrap();
            let out = tmp.path().join("p.toml");
            std::fs::write(&out, to_toml(&p)).unwrap();
            let q = Policy::load(&out).unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), to_toml(&p)));
            assert_eq!(p, q, "{}", path.display());
        }
    }

    #[test]
    fn durations_use_the_largest_exact_unit() {
        assert_eq!(duration(2_000_000_000), "2s");
        assert_eq!(duration(250_000_000), "250ms");
        assert_eq!(duration(1_500_000_000), "1500ms");
        assert_eq!(duration(50_000), "50us");
        assert_eq!(duration(NEVER), "never");
    }
}
