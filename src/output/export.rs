//! `retrysim export`: a policy file translated to the retry settings of
//! gRPC (service-config JSON, gRFC A6), Envoy (a route `retry_policy` YAML
//! fragment, plus a cluster `circuit_breakers` fragment for a concurrency
//! budget) and the AWS SDKs (shared-config keys).
//!
//! Each translation is a pure function of a validated [`Policy`] that
//! returns the text and every field that could not be carried over, with
//! why ([`Loss`]). The mappings and their caveats are documented in
//! `docs/export.md`; `tests/export.rs` parses the output back and checks
//! every mapped field and every loss.

use crate::engine::{NEVER, Nanos};
use crate::policy::budget::BudgetKind;
use crate::policy::{BackoffKind, Jitter, Outcome, Policy};

mod aws;
mod envoy;
mod grpc;
mod hedging;

pub use aws::to_aws;
pub use envoy::to_envoy;
pub use grpc::{grpc_code, to_grpc};

/// Where a policy is exported to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// gRPC service config JSON (`methodConfig[].retryPolicy`, `retryThrottling`).
    Grpc,
    /// An Envoy route `retry_policy` YAML fragment.
    Envoy,
    /// AWS SDK shared config keys (`retry_mode`, `max_attempts`).
    Aws,
}

impl Target {
    /// The target's name as given to `--to`.
    pub fn label(self) -> &'static str {
        match self {
            Target::Grpc => "grpc",
            Target::Envoy => "envoy",
            Target::Aws => "aws",
        }
    }
}

/// A policy field that the target cannot express (exactly), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loss {
    /// The policy field as written in the policy file (`per_try_timeout`, `backoff.jitter`, …).
    pub field: String,
    /// Why it is lost, and what the target does instead.
    pub why: String,
}

/// The result of one translation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// What goes on stdout.
    pub text: String,
    /// Fields that could not be carried over, in the order of the policy file.
    pub losses: Vec<Loss>,
    /// Remarks about how the output applies (not losses).
    pub notes: Vec<String>,
}

impl Exported {
    fn new() -> Self {
        Self { text: String::new(), losses: Vec::new(), notes: Vec::new() }
    }

    fn lose(&mut self, field: &str, why: impl Into<String>) {
        self.losses.push(Loss { field: field.into(), why: why.into() });
    }
}

/// Translates `policy` for `target`.
pub fn export(policy: &Policy, target: Target) -> Exported {
    match target {
        Target::Grpc => to_grpc(policy),
        Target::Envoy => to_envoy(policy),
        Target::Aws => to_aws(policy),
    }
}

/// A duration in the proto3 JSON form (`google.protobuf.Duration`):
/// seconds with 0, 3, 6 or 9 fractional digits and an `s`, e.g. `"0.100s"`.
pub fn proto_duration(ns: Nanos) -> String {
    let (secs, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        format!("{secs}s")
    } else if frac % 1_000_000 == 0 {
        format!("{secs}.{:03}s", frac / 1_000_000)
    } else if frac % 1_000 == 0 {
        format!("{secs}.{:06}s", frac / 1_000)
    } else {
        format!("{secs}.{frac:09}s")
    }
}

/// A duration for messages: `250ms`, `1.5s`.
fn human(ns: Nanos) -> String {
    if ns == NEVER {
        "never".into()
    } else if ns >= 1_000_000_000 {
        format!("{}s", trim(ns as f64 / 1e9))
    } else if ns >= 1_000_000 {
        format!("{}ms", trim(ns as f64 / 1e6))
    } else {
        format!("{}µs", trim(ns as f64 / 1e3))
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The `retry_on` entries as written in a policy file.
fn retry_on_labels(p: &Policy) -> Vec<String> {
    let r = &p.retry_on;
    let mut out = Vec::new();
    if r.connect_error {
        out.push("connect_error".to_string());
    }
    if r.timeout {
        out.push("timeout".into());
    }
    if r.reset {
        out.push("reset".into());
    }
    out.extend(r.statuses.iter().map(|s| s.to_string()));
    out
}

/// The outcomes in `retry_on` that may have executed (DESIGN §4).
fn unknown_outcomes(p: &Policy) -> Vec<String> {
    let r = &p.retry_on;
    let mut out = Vec::new();
    if r.timeout {
        out.push("timeout".to_string());
    }
    if r.reset {
        out.push("reset".into());
    }
    out.extend(r.statuses.iter().filter(|&&s| !Outcome::Status(s).nothing_executed()).map(|s| s.to_string()));
    out
}

/// The largest wait limit the policy reaches (before its last attempt).
fn largest_limit(p: &Policy) -> Nanos {
    p.backoff.limit(p.max_attempts.saturating_sub(1).max(1))
}

/// The backoff cap, or without one the largest limit the policy reaches.
fn cap_or_largest(p: &Policy) -> Nanos {
    if p.backoff.cap == NEVER { largest_limit(p) } else { p.backoff.cap }
}

/// Decorrelated waits grow to at most `base * 3^n`: the limit before the last attempt.
fn largest_limit_decorrelated(p: &Policy) -> Nanos {
    let n = p.max_attempts.saturating_sub(1).max(1) as i32;
    let x = p.backoff.base as f64 * 3f64.powi(n);
    if x >= NEVER as f64 { NEVER } else { x as Nanos }
}

fn jitter_label(j: Jitter) -> String {
    match j {
        Jitter::None => "none".into(),
        Jitter::Full => "full".into(),
        Jitter::Equal => "equal".into(),
        Jitter::Proportional(r) => format!("proportional (jitter_ratio {r})"),
    }
}

fn backoff_kind_label(k: BackoffKind) -> &'static str {
    match k {
        BackoffKind::None => "none",
        BackoffKind::Constant => "constant",
        BackoffKind::Exponential => "exponential",
        BackoffKind::Decorrelated => "decorrelated",
    }
}

fn budget_kind_label(k: &BudgetKind) -> &'static str {
    match k {
        BudgetKind::TokenBucket { .. } => "token_bucket",
        BudgetKind::Quota { .. } => "quota",
        BudgetKind::Ratio { .. } => "ratio",
        BudgetKind::Concurrency { .. } => "concurrency",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proto_durations() {
        assert_eq!(proto_duration(100_000_000), "0.100s");
        assert_eq!(proto_duration(1_000_000_000), "1s");
        assert_eq!(proto_duration(20_000_000_000), "20s");
        assert_eq!(proto_duration(1_500_000), "0.001500s");
        assert_eq!(proto_duration(7), "0.000000007s");
    }

    #[test]
    fn grpc_codes() {
        assert_eq!(grpc_code("503"), Some("UNAVAILABLE"));
        assert_eq!(grpc_code("connect_error"), Some("UNAVAILABLE"));
        assert_eq!(grpc_code("429"), Some("RESOURCE_EXHAUSTED"));
        assert_eq!(grpc_code("504"), Some("DEADLINE_EXCEEDED"));
        assert_eq!(grpc_code("500"), Some("INTERNAL"));
        assert_eq!(grpc_code("418"), None);
    }
}
