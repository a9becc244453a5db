//! Writes a [`Policy`] as a policy file (DESIGN §2) that `run` and the SDK
//! load as is: every field explicit, durations with units.

use super::budget::{BudgetKind, BudgetScope};
use super::{BackoffKind, Jitter, Policy};
use crate::engine::{NEVER, Nanos};
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

fn float(x: f64) -> String {
    let s = format!("{x}");
    if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") { s } else { format!("{s}.0") }
}

/// The policy as TOML (without a header comment).
pub fn to_toml(p: &Policy) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "name = {:?}", p.name);
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
    let mut on: Vec<String> = Vec::new();
    if p.retry_on.connect_error {
        on.push("\"connect_error\"".into());
    }
    if p.retry_on.timeout {
        on.push("\"timeout\"".into());
    }
    if p.retry_on.reset {
        on.push("\"reset\"".into());
    }
    on.extend(p.retry_on.statuses.iter().map(|s| format!("\"{s}\"")));
    let _ = writeln!(out, "retry_on = [{}]", on.join(", "));
    let _ = writeln!(out, "retry_unknown_without_key = {}", p.retry_unknown_without_key);
    let _ = writeln!(out, "respect_retry_after = {}", p.respect_retry_after);
    if let Some(m) = p.max_retry_after {
        let _ = writeln!(out, "max_retry_after = \"{}\"", duration(m));
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
        let _ = writeln!(
            out,
            "failure_ratio = {}\nwindow = \"{}\"\nmin_requests = {}\nopen_for = \"{}\"\nhalf_open_probes = {}",
            float(c.failure_ratio),
            duration(c.window),
            c.min_requests,
            duration(c.open_for),
            c.half_open_probes
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_round_trips() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("policies");
        let tmp = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let p = crate::config::load_policy_file(&path).unwrap();
            let out = tmp.path().join("p.toml");
            std::fs::write(&out, to_toml(&p)).unwrap();
            let q = crate::config::load_policy_file(&out)
                .unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), to_toml(&p)));
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
