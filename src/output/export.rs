//! `retrysim export`: a policy file translated to the retry settings of
//! gRPC (service-config JSON, gRFC A6), Envoy (a route `retry_policy` YAML
//! fragment, plus a cluster `circuit_breakers` fragment for a concurrency
//! budget), the AWS SDKs (shared-config keys), the Kubernetes Gateway API
//! (HTTPRoute `retry`, XBackendTrafficPolicy `retryConstraint`), Istio
//! (VirtualService `retries`, DestinationRule), Linkerd (retry annotations,
//! ServiceProfile `retryBudget`) and resilience4j (Spring Boot YAML).
//!
//! Each translation is a pure function of a validated [`Policy`] that
//! returns the text and every field that could not be carried over, with
//! why ([`Loss`]). The mappings and their caveats are documented in
//! `docs/export.md`; `tests/it/export.rs` parses the output back and checks
//! every mapped field and every loss.

use crate::engine::{NEVER, Nanos};
use crate::policy::budget::BudgetKind;
use crate::policy::{BackoffKind, Jitter, OnUnknown, Outcome, Policy};

mod aws;
mod envoy;
mod gateway_api;
mod grpc;
mod hedging;
mod istio;
mod linkerd;
mod resilience4j;

pub use aws::{AWS_2026_VERSIONS, AWS_LEGACY_VERSIONS, to_aws};
pub use envoy::to_envoy;
pub use gateway_api::to_gateway_api;
pub use grpc::{GRPC_MIN_BACKOFF, grpc_code, to_grpc};
pub use istio::to_istio;
pub use linkerd::to_linkerd;
pub use resilience4j::to_resilience4j;

/// Where a policy is exported to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// gRPC service config JSON (`methodConfig[].retryPolicy`, `retryThrottling`).
    Grpc,
    /// An Envoy route `retry_policy` YAML fragment.
    Envoy,
    /// AWS SDK shared config keys (`retry_mode`, `max_attempts`).
    Aws,
    /// A Kubernetes Gateway API HTTPRoute `retry` (GEP-1731) and an
    /// XBackendTrafficPolicy `retryConstraint` (GEP-3388).
    GatewayApi,
    /// An Istio VirtualService `retries` and a DestinationRule.
    Istio,
    /// Linkerd retry annotations and a ServiceProfile `retryBudget`.
    Linkerd,
    /// Spring Boot `resilience4j.retry` + `resilience4j.circuitbreaker` YAML.
    Resilience4j,
}

impl Target {
    /// The target's name as given to `--to`.
    pub fn label(self) -> &'static str {
        match self {
            Target::Grpc => "grpc",
            Target::Envoy => "envoy",
            Target::Aws => "aws",
            Target::GatewayApi => "gateway-api",
            Target::Istio => "istio",
            Target::Linkerd => "linkerd",
            Target::Resilience4j => "resilience4j",
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
    let mut x = by_target(policy, target);
    // No target asks a server for a call's state before retrying.
    let why = match policy.on_unknown {
        OnUnknown::Query => Some(
            "\"query\": the target cannot ask the server whether a timed-out request committed; it retries (or not) by \
             its retry conditions alone. Make the status query in the application (retrysim-policy's Call or RetryState \
             say when) and keep unknown outcomes out of the target's retry conditions",
        ),
        OnUnknown::GiveUp => Some(
            "\"give_up\": the target retries what its retry conditions name, whether or not it may have executed; \
             keep timeouts, resets and 500/502/504 out of them to give up on unknown outcomes",
        ),
        _ => None,
    };
    if let Some(why) = why {
        x.lose("on_unknown", why);
    }
    x
}

fn by_target(policy: &Policy, target: Target) -> Exported {
    match target {
        Target::Grpc => to_grpc(policy),
        Target::Envoy => to_envoy(policy),
        Target::Aws => to_aws(policy),
        Target::GatewayApi => to_gateway_api(policy),
        Target::Istio => to_istio(policy),
        Target::Linkerd => to_linkerd(policy),
        Target::Resilience4j => to_resilience4j(policy),
    }
}

/// A duration in the Gateway API `Duration` form (GEP-2257, also a Go
/// duration): whole milliseconds as `h`, `m`, `s` and `ms` parts, e.g.
/// `"1s500ms"`, `"2m"`; 0 is `"0s"`. Sub-millisecond parts are rounded up.
pub fn gep_duration(ns: Nanos) -> String {
    let mut ms = ns.div_ceil(1_000_000);
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, size) in [("h", 3_600_000), ("m", 60_000), ("s", 1_000), ("ms", 1)] {
        if ms >= size {
            out.push_str(&format!("{}{unit}", ms / size));
            ms %= size;
        }
    }
    out
}

/// A string as a YAML double-quoted scalar: `"` and `\` escaped, and every
/// character YAML does not allow as printed (C0 and C1 controls, DEL, the
/// line and paragraph separators, the byte-order mark) as `\uXXXX`.
pub fn yaml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A Kubernetes object name (RFC 1123 label) made from a policy name:
/// lower case letters, digits and `-`, at most 63 characters.
pub fn k8s_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_matches('-').chars().take(63).collect();
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { "retrysim-policy".into() } else { out }
}

/// Losses for the fields that the mesh and gateway targets (Gateway API,
/// Istio, Linkerd) have no key for.
fn lose_mesh_common(p: &Policy, x: &mut Exported, target: &str) {
    let retries = p.max_attempts > 1;
    if p.min_attempt_time > 0 && retries {
        x.lose(
            "min_attempt_time",
            format!(
                "{}: {target} starts a retry whenever the request timeout has time left",
                human(p.min_attempt_time)
            ),
        );
    }
    if let Some(m) = p.max_retry_after.filter(|_| retries) {
        x.lose("max_retry_after", format!("{}: {target} has no such limit", human(m)));
    }
    if let Some(b) = p.backoff.throttling_base.filter(|_| retries) {
        x.lose("backoff.throttling_base", format!("{}: {target} has one backoff for every answer", human(b)));
    }
    if let Some(c) = p.retry_after_clamp.filter(|_| retries) {
        x.lose("retry_after_clamp", format!("{}: {target} has no Retry-After clamp", human(c)));
    }
    if p.hedging.is_some() {
        x.lose("hedging", format!("{target} has no hedged requests"));
    }
    if p.throttle.is_some() {
        x.lose("throttle", format!("{target} has no adaptive client-side throttle"));
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
