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
use crate::policy::budget::{BudgetKind, BudgetScope};
use crate::policy::{BackoffKind, Jitter, Outcome, Policy};
use serde::Serialize;
use std::collections::BTreeMap;

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

// ---------------------------------------------------------------- gRPC --

/// gRPC status codes (their canonical names) and the `retry_on` entries
/// each stands for. A code in `retryableStatusCodes` retries all of them.
const GRPC_CODES: [(&str, &[&str]); 12] = [
    ("UNAVAILABLE", &["connect_error", "reset", "502", "503"]),
    ("RESOURCE_EXHAUSTED", &["429"]),
    ("DEADLINE_EXCEEDED", &["timeout", "504"]),
    ("INTERNAL", &["500"]),
    ("UNIMPLEMENTED", &["501"]),
    ("INVALID_ARGUMENT", &["400"]),
    ("UNAUTHENTICATED", &["401"]),
    ("PERMISSION_DENIED", &["403"]),
    ("NOT_FOUND", &["404"]),
    ("ABORTED", &["409"]),
    ("FAILED_PRECONDITION", &["412"]),
    ("CANCELLED", &["499"]),
];

/// The gRPC status code name for one `retry_on` entry, if any.
pub fn grpc_code(entry: &str) -> Option<&'static str> {
    GRPC_CODES.iter().find(|(_, entries)| entries.contains(&entry)).map(|(code, _)| *code)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServiceConfig {
    method_config: Vec<MethodConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_throttling: Option<RetryThrottling>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MethodConfig {
    name: Vec<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_policy: Option<GrpcRetryPolicy>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GrpcRetryPolicy {
    max_attempts: u32,
    initial_backoff: String,
    max_backoff: String,
    backoff_multiplier: f64,
    retryable_status_codes: Vec<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RetryThrottling {
    max_tokens: f64,
    token_ratio: f64,
}

/// gRPC clients clamp `maxAttempts` to this (gRFC A6).
const GRPC_MAX_ATTEMPTS: u32 = 5;

/// The policy as a gRPC service config (gRFC A6).
pub fn to_grpc(p: &Policy) -> Exported {
    let mut x = Exported::new();
    x.notes.push(
        "methodConfig name [{}] applies the policy to every method of every service on the channel; \
         replace it with [{\"service\": \"pkg.Service\"}] or [{\"service\": \"pkg.Service\", \"method\": \"M\"}] to narrow it"
            .into(),
    );
    let retries = p.max_attempts > 1;

    // Status codes from retry_on.
    let labels = retry_on_labels(p);
    let mut codes: Vec<&'static str> = Vec::new();
    let mut unmapped: Vec<String> = Vec::new();
    for l in &labels {
        match grpc_code(l) {
            Some(c) => {
                if !codes.contains(&c) {
                    codes.push(c);
                }
            }
            None => unmapped.push(l.clone()),
        }
    }
    // Statuses with no gRPC equivalent: other 5xx are UNKNOWN, other 4xx have none.
    let (fivexx, others): (Vec<String>, Vec<String>) =
        unmapped.into_iter().partition(|l| l.parse::<u16>().is_ok_and(|s| (500..600).contains(&s)));
    if !fivexx.is_empty() {
        codes.push("UNKNOWN");
    }

    let mut policy = None;
    if retries && !codes.is_empty() {
        let mut max_attempts = p.max_attempts;
        if max_attempts > GRPC_MAX_ATTEMPTS {
            x.lose(
                "max_attempts",
                format!(
                    "gRPC clients clamp maxAttempts to {GRPC_MAX_ATTEMPTS} (gRFC A6); exported {GRPC_MAX_ATTEMPTS} instead of {}",
                    p.max_attempts
                ),
            );
            max_attempts = GRPC_MAX_ATTEMPTS;
        }
        let b = &p.backoff;
        let (initial, max, multiplier) = match b.kind {
            BackoffKind::None => {
                x.lose(
                    "backoff.kind",
                    "none (immediate retries): gRPC requires initialBackoff > 0; exported the smallest wait, 1ms",
                );
                (1_000_000, 1_000_000, 1.0)
            }
            BackoffKind::Constant => {
                x.lose(
                    "backoff.kind",
                    "constant: gRPC backoff is exponential; exported as backoffMultiplier 1 with maxBackoff = initialBackoff, the same limits",
                );
                (b.base, b.base, 1.0)
            }
            BackoffKind::Exponential => (b.base, cap_or_largest(p), b.multiplier),
            BackoffKind::Decorrelated => {
                x.lose(
                    "backoff.kind",
                    "decorrelated: gRPC has only capped exponential backoff; exported base and cap with backoffMultiplier 3, the growth of U(base, prev * 3) at its top",
                );
                let cap = if b.cap == NEVER { largest_limit_decorrelated(p) } else { b.cap };
                (b.base, cap, 3.0)
            }
        };
        match (b.kind, b.jitter) {
            (BackoffKind::None, _) | (BackoffKind::Decorrelated, _) => {}
            (_, Jitter::Proportional(r)) if (r - 0.2).abs() < 1e-9 => {}
            (_, j) => x.lose(
                "backoff.jitter",
                format!(
                    "{}: gRPC applies its own jitter, limit * U(0.8, 1.2) since the 2024 A6 update (older clients: full jitter U(0, limit)); it cannot be configured",
                    jitter_label(j)
                ),
            ),
        }
        policy = Some(GrpcRetryPolicy {
            max_attempts,
            initial_backoff: proto_duration(initial.max(1_000_000)),
            max_backoff: proto_duration(max.max(initial).max(1_000_000)),
            backoff_multiplier: multiplier,
            retryable_status_codes: codes.clone(),
        });
    } else if retries {
        x.lose(
            "retry_on",
            "no entry maps to a gRPC status code: no retryPolicy exported (it needs a non-empty retryableStatusCodes)",
        );
    } else {
        x.notes.push("max_attempts = 1: no retryPolicy (gRPC requires maxAttempts of at least 2)".into());
    }

    if retries && policy.is_some() {
        if !fivexx.is_empty() {
            x.lose(
                "retry_on",
                format!(
                    "{} mapped to UNKNOWN, which gRPC also uses for every error it cannot classify",
                    fivexx.join(", ")
                ),
            );
        }
        if !others.is_empty() {
            x.lose("retry_on", format!("{} have no gRPC status code; not retried", others.join(", ")));
        }
        // A code stands for several outcomes: it retries all of them.
        for (code, members) in GRPC_CODES {
            if !codes.contains(&code) {
                continue;
            }
            let extra: Vec<&str> =
                members.iter().copied().filter(|m| *m != "timeout" && !labels.iter().any(|l| l == m)).collect();
            if !extra.is_empty() {
                x.lose(
                    "retry_on",
                    format!(
                        "{code} also stands for {}, which retry_on leaves out: gRPC retries those too",
                        extra.join(", ")
                    ),
                );
            }
        }
        if p.retry_on.timeout {
            x.lose(
                "retry_on",
                "timeout: gRPC never retries when the call's own deadline expires and has no per-attempt timeout; \
                 DEADLINE_EXCEEDED is retried only when a server or proxy returns it",
            );
        }
        // gRPC never retries its own deadline: timeouts are not among them.
        let unknown: Vec<String> = unknown_outcomes(p).into_iter().filter(|o| o != "timeout").collect();
        if !p.retry_unknown_without_key && !unknown.is_empty() {
            x.lose(
                "retry_unknown_without_key",
                format!(
                    "false: gRPC retries {} on every method the methodConfig names, idempotent or not, with or without a key; name only idempotent or keyed methods",
                    unknown.join(", ")
                ),
            );
        }
    }

    if p.per_try_timeout != NEVER && p.per_try_timeout < p.deadline {
        x.lose(
            "per_try_timeout",
            format!(
                "{}: gRPC has no per-attempt timeout (gRFC A6); an attempt may use all of the call's remaining deadline",
                human(p.per_try_timeout)
            ),
        );
    }
    let timeout = (p.deadline != NEVER).then(|| proto_duration(p.deadline));
    if p.min_attempt_time > 0 && retries {
        x.lose(
            "min_attempt_time",
            format!("{}: gRPC starts a retry whenever the deadline has time left", human(p.min_attempt_time)),
        );
    }
    if retries {
        if !p.respect_retry_after {
            x.lose(
                "respect_retry_after",
                "false: gRPC clients always obey server pushback (grpc-retry-pushback-ms, the Retry-After of gRPC)",
            );
        } else if let Some(m) = p.max_retry_after {
            x.lose(
                "max_retry_after",
                format!("{}: gRPC waits whatever pushback the server sends; only the deadline ends the call", human(m)),
            );
        }
    }

    let mut throttling = None;
    // A budget only matters for retries.
    match p.budget.filter(|_| retries) {
        None => {}
        Some(b) => {
            match b.kind {
                BudgetKind::TokenBucket { max_tokens, token_ratio } => {
                    let mut mt = max_tokens;
                    if !(mt > 0.0 && mt <= 1000.0) {
                        let clamped = mt.clamp(1.0, 1000.0);
                        x.lose(
                            "budget.max_tokens",
                            format!("{mt}: gRPC accepts maxTokens in (0, 1000]; exported {clamped}"),
                        );
                        mt = clamped;
                    }
                    let mut tr = (token_ratio * 1000.0).round() / 1000.0;
                    if (tr - token_ratio).abs() > 1e-12 || tr <= 0.0 {
                        tr = tr.max(0.001);
                        x.lose(
                        "budget.token_ratio",
                        format!("{token_ratio}: gRPC keeps 3 decimal places of tokenRatio and needs it > 0; exported {tr}"),
                    );
                    }
                    if b.scope == BudgetScope::Shared {
                        x.lose(
                            "budget.scope",
                            "shared: gRPC keeps one token bucket per channel and server name, not one per client class",
                        );
                    }
                    throttling = Some(RetryThrottling { max_tokens: mt, token_ratio: tr });
                }
                ref k => x.lose(
                    "budget.kind",
                    format!(
                        "{}: gRPC's only retry budget is retryThrottling, a token bucket (budget kind token_bucket)",
                        budget_kind_label(k)
                    ),
                ),
            }
        }
    }
    if p.breaker.is_some() {
        x.lose("circuit_breaker", "gRPC has no circuit breaker in its service config");
    }

    let config = ServiceConfig {
        method_config: vec![MethodConfig { name: vec![BTreeMap::new()], timeout, retry_policy: policy }],
        retry_throttling: throttling,
    };
    x.text = serde_json::to_string_pretty(&config).expect("a service config serializes") + "\n";
    x
}

/// Decorrelated waits grow to at most `base * 3^n`: the limit before the last attempt.
fn largest_limit_decorrelated(p: &Policy) -> Nanos {
    let n = p.max_attempts.saturating_sub(1).max(1) as i32;
    let x = p.backoff.base as f64 * 3f64.powi(n);
    if x >= NEVER as f64 { NEVER } else { x as Nanos }
}

// --------------------------------------------------------------- Envoy --

/// Envoy's smallest backoff interval (values below 1 ms are rounded up).
const ENVOY_MIN_INTERVAL: Nanos = 1_000_000;

/// The policy as an Envoy route `retry_policy` (and, for a concurrency
/// budget, a cluster `circuit_breakers`) YAML fragment.
pub fn to_envoy(p: &Policy) -> Exported {
    let mut x = Exported::new();
    let r = &p.retry_on;
    let per_try = p.per_try_timeout != NEVER && p.per_try_timeout < p.deadline;
    let retries = p.max_attempts > 1;

    // retry_on conditions.
    let mut conditions: Vec<&str> = Vec::new();
    if r.connect_error {
        conditions.push("connect-failure");
    }
    let timeout_retried = r.timeout && per_try;
    if r.reset || timeout_retried {
        conditions.push("reset");
        let also_timeouts = r.reset && !r.timeout && per_try;
        if retries && (also_timeouts || (timeout_retried && !r.reset)) {
            let (has, other) = if r.reset { ("reset", "per-try timeouts") } else { ("timeout", "connection resets") };
            x.lose(
                "retry_on",
                format!(
                    "{has}: Envoy's `reset` condition covers resets and per-try timeouts together (no response: disconnect, reset, read timeout); it retries {other} too"
                ),
            );
        }
    }
    if r.timeout && !per_try && retries {
        x.lose(
            "retry_on",
            "timeout: without a per_try_timeout shorter than the deadline an attempt times out only when the route timeout ends the request, which Envoy never retries",
        );
    }
    if !r.statuses.is_empty() {
        conditions.push("retriable-status-codes");
    }

    let mut y = String::new();
    y.push_str(&format!("# Envoy retry policy exported by retrysim from policy {:?}.\n", p.name));
    y.push_str("# Goes in a route's `route:` (RouteAction), next to `cluster:`.\n");
    if p.deadline != NEVER {
        y.push_str(&format!(
            "# The deadline is the route timeout, outside retry_policy; add next to it:\n# timeout: \"{}\"\n",
            proto_duration(p.deadline)
        ));
        x.lose(
            "deadline",
            format!(
                "{}: not part of retry_policy; set the route's timeout (RouteAction.timeout, which includes all retries) to \"{}\", shown as a comment",
                human(p.deadline),
                proto_duration(p.deadline)
            ),
        );
    } else {
        y.push_str("# No deadline: Envoy's route timeout defaults to 15s; add `timeout: \"0s\"` next to retry_policy to disable it.\n");
        x.lose(
            "deadline",
            "none: Envoy's route timeout defaults to 15s and includes all retries; set timeout: \"0s\" on the route to disable it",
        );
    }
    y.push_str("retry_policy:\n");
    y.push_str(&format!("  retry_on: \"{}\"\n", conditions.join(",")));
    y.push_str(&format!("  num_retries: {}\n", p.max_attempts - 1));
    if p.per_try_timeout != NEVER {
        y.push_str(&format!("  per_try_timeout: \"{}\"\n", proto_duration(p.per_try_timeout)));
    }
    if !r.statuses.is_empty() {
        let list: Vec<String> = r.statuses.iter().map(u16::to_string).collect();
        y.push_str(&format!("  retriable_status_codes: [{}]\n", list.join(", ")));
    }

    // Backoff: Envoy's is always fully jittered, U(0, min(max_interval, (2^N - 1) * base)).
    let b = &p.backoff;
    let (base, max) = match b.kind {
        BackoffKind::None => {
            if retries {
                x.lose(
                    "backoff.kind",
                    "none (immediate retries): Envoy always backs off; exported its smallest base_interval, 1ms",
                );
            }
            (ENVOY_MIN_INTERVAL, ENVOY_MIN_INTERVAL)
        }
        BackoffKind::Constant => (b.base, b.base),
        BackoffKind::Exponential => (b.base, cap_or_largest(p)),
        BackoffKind::Decorrelated => {
            if retries {
                x.lose(
                    "backoff.kind",
                    "decorrelated: Envoy has only its exponential backoff; exported base and cap as base_interval and max_interval",
                );
            }
            (b.base, if b.cap == NEVER { largest_limit_decorrelated(p) } else { b.cap })
        }
    };
    if retries && b.kind == BackoffKind::Exponential && p.max_attempts > 2 {
        x.lose(
            "backoff.multiplier",
            format!(
                "{}: Envoy has no multiplier; the limit of its N-th retry is (2^N - 1) * base_interval (25ms, 75ms, 175ms, ... for 25ms), not base * multiplier^(N-1)",
                b.multiplier
            ),
        );
    }
    if retries && matches!(b.kind, BackoffKind::Constant | BackoffKind::Exponential) && b.jitter != Jitter::Full {
        x.lose(
            "backoff.jitter",
            format!("{}: Envoy always jitters fully, U(0, limit); it cannot be configured", jitter_label(b.jitter)),
        );
    }
    let base = base.max(ENVOY_MIN_INTERVAL);
    if b.kind != BackoffKind::None && b.base < ENVOY_MIN_INTERVAL && retries {
        x.lose("backoff.base", format!("{}: Envoy rounds base_interval up to 1ms", human(b.base)));
    }
    y.push_str("  retry_back_off:\n");
    y.push_str(&format!("    base_interval: \"{}\"\n", proto_duration(base)));
    y.push_str(&format!("    max_interval: \"{}\"\n", proto_duration(max.max(base))));

    // Retry-After (only a retry waits).
    if p.respect_retry_after && retries {
        let limit = match p.max_retry_after {
            None if p.deadline != NEVER => Some(p.deadline),
            None => None,
            Some(NEVER) => None,
            Some(m) => Some(m),
        };
        y.push_str("  rate_limited_retry_back_off:\n");
        y.push_str("    reset_headers:\n");
        y.push_str("    - name: \"Retry-After\"\n");
        y.push_str("      format: SECONDS\n");
        match limit {
            Some(m) => y.push_str(&format!("    max_interval: \"{}\"\n", proto_duration(m))),
            None => {
                x.lose("max_retry_after", "no limit: Envoy's rate_limited_retry_back_off.max_interval defaults to 300s")
            }
        }
        if retries {
            x.lose(
                "respect_retry_after",
                "Envoy jitters a Retry-After wait to U(t, 1.5 t), reads it only as whole seconds, and uses its exponential backoff instead of giving up when it is longer than max_interval",
            );
        }
    }
    if p.min_attempt_time > 0 && retries {
        x.lose(
            "min_attempt_time",
            format!("{}: Envoy starts a retry whenever the route timeout has time left", human(p.min_attempt_time)),
        );
    }
    let unknown = unknown_outcomes(p);
    if retries && !p.retry_unknown_without_key && !unknown.is_empty() {
        x.lose(
            "retry_unknown_without_key",
            format!(
                "false: Envoy retries {} by retry_on alone, whatever the method and whether the request carries an idempotency key; \
                 use this route only for idempotent or keyed requests (retriable_request_headers can require a key header)",
                unknown.join(", ")
            ),
        );
    }

    // Budget (only retries need one).
    match p.budget.filter(|_| retries) {
        Some(bs) => match bs.kind {
            BudgetKind::Concurrency { budget_percent, min_retry_concurrency } => {
                y.push_str("---\n");
                y.push_str("# Goes on the upstream cluster (Cluster.circuit_breakers): Envoy's retry budget.\n");
                y.push_str("circuit_breakers:\n");
                y.push_str("  thresholds:\n");
                y.push_str("  - priority: DEFAULT\n");
                y.push_str("    retry_budget:\n");
                y.push_str("      budget_percent:\n");
                y.push_str(&format!("        value: {budget_percent:?}\n"));
                y.push_str(&format!("      min_retry_concurrency: {min_retry_concurrency}\n"));
                if bs.scope == BudgetScope::Shared {
                    x.lose(
                        "budget.scope",
                        "shared: Envoy keeps one retry budget per proxy and upstream cluster, not one per client class",
                    );
                }
            }
            ref k => x.lose(
                "budget.kind",
                format!(
                    "{}: Envoy's only retry budget limits concurrent retries (circuit_breakers retry_budget, budget kind concurrency); \
                     its default circuit breaker allows 3 retries in flight per cluster",
                    budget_kind_label(k)
                ),
            ),
        },
        None if retries => x.lose(
            "budget",
            "none: Envoy always limits retries in flight per upstream cluster (circuit_breakers max_retries, default 3)",
        ),
        None => {}
    }
    if p.breaker.is_some() {
        x.lose(
            "circuit_breaker",
            "Envoy has no failure-ratio breaker per client: outlier detection ejects single hosts, and its circuit_breakers limit concurrency",
        );
    }
    x.text = y;
    x
}

// ----------------------------------------------------------------- AWS --

/// The quota of AWS standard retry mode before the 2026 update:
/// (initial, retry_cost, timeout_cost, throttling_cost, success_refund).
const AWS_QUOTA: (f64, f64, f64, f64, f64) = (500.0, 5.0, 10.0, 5.0, 1.0);
/// The same with the 2026 update (AWS_NEW_RETRIES_2026=true).
const AWS_QUOTA_2026: (f64, f64, f64, f64, f64) = (500.0, 14.0, 14.0, 5.0, 1.0);
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
        t.push_str("# The 2026 retry behaviour (retry cost 14, 50ms base, x-amz-retry-after) needs AWS_NEW_RETRIES_2026=true in the environment.\n");
    }
    t.push_str("[default]\n");
    t.push_str("retry_mode = standard\n");
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
        if !aws_backoff(expected) {
            x.lose(
                "backoff",
                format!(
                    "{} base {} cap {} multiplier {} jitter {}: the SDKs keep the backoff in code (standard mode: full jitter, x2, capped at 20s, base {} in this version); shared config has no key for it",
                    backoff_kind_label(b.kind),
                    human(b.base),
                    human(b.cap),
                    b.multiplier,
                    jitter_label(b.jitter),
                    human(expected)
                ),
            );
        }
        if p.respect_retry_after && !new_2026 {
            x.lose(
                "respect_retry_after",
                "true: standard mode waits its own backoff; only the 2026 update honours x-amz-retry-after (and clamps it to at most 5s above the backoff)",
            );
        } else if p.respect_retry_after {
            x.lose(
                "respect_retry_after",
                "true: the 2026 SDKs clamp x-amz-retry-after to at most 5s above the computed backoff",
            );
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
                 the SDKs' quota constants are fixed in code (500, 5, 10, 5, 1; 2026: 500, 14, 14, 5, 1)"
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
    x.notes.push(
        "retry_mode = standard: adaptive adds a client-side send-rate limiter that the policy does not describe; legacy differs per SDK"
            .into(),
    );
    x.text = t;
    x
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
