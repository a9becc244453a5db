//! gRPC: the policy as a service config (gRFC A6), `methodConfig[].retryPolicy`
//! and `retryThrottling`.

use super::*;
use crate::policy::budget::BudgetScope;
use serde::Serialize;
use std::collections::BTreeMap;

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
    #[serde(skip_serializing_if = "Option::is_none")]
    hedging_policy: Option<super::hedging::GrpcHedgingPolicy>,
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
    max_tokens: u32,
    token_ratio: f64,
}

/// gRPC clients clamp `maxAttempts` to this (gRFC A6).
const GRPC_MAX_ATTEMPTS: u32 = 5;

/// The smallest backoff exported to gRPC. gRPC accepts any `initialBackoff`
/// above 0, but Python grpcio (grpc-core) stalls retries scheduled 1 ms
/// ahead until the call's deadline (39 of 40 calls in the real-client
/// suite, grpcio 1.85.3); 5 ms works in every implementation.
pub const GRPC_MIN_BACKOFF: Nanos = 5_000_000;

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
                    format!(
                        "none (immediate retries): gRPC requires initialBackoff > 0; exported {}, the smallest wait that works in every gRPC client (grpcio stalls 1ms retries until the deadline)",
                        human(GRPC_MIN_BACKOFF)
                    ),
                );
                (GRPC_MIN_BACKOFF, GRPC_MIN_BACKOFF, 1.0)
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
        if b.kind != BackoffKind::None && initial < GRPC_MIN_BACKOFF {
            x.lose(
                "backoff.base",
                format!(
                    "{}: exported initialBackoff {}, the smallest that works in every gRPC client: grpcio (grpc-core) stalls retries scheduled 1ms ahead until the call's deadline",
                    human(initial),
                    human(GRPC_MIN_BACKOFF)
                ),
            );
        }
        let initial = initial.max(GRPC_MIN_BACKOFF);
        policy = Some(GrpcRetryPolicy {
            max_attempts,
            initial_backoff: proto_duration(initial),
            max_backoff: proto_duration(max.max(initial)),
            backoff_multiplier: multiplier,
            retryable_status_codes: codes.clone(),
        });
    } else if retries {
        x.lose(
            "retry_on",
            "no entry maps to a gRPC status code: no retryPolicy exported (it needs a non-empty retryableStatusCodes)",
        );
    } else if p.hedging.is_none() {
        x.notes.push("max_attempts = 1: no retryPolicy (gRPC requires maxAttempts of at least 2)".into());
    }
    let hedging_policy = super::hedging::grpc_hedging(p, &mut x);

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
    // A budget only matters for retries (and hedges, which retryThrottling limits too).
    match p.budget.filter(|_| retries || hedging_policy.is_some()) {
        None => {}
        Some(b) => {
            match b.kind {
                BudgetKind::TokenBucket { max_tokens, token_ratio } => {
                    // maxTokens is an unsigned integer in (0, 1000] (gRFC A6).
                    let mt = max_tokens.round().clamp(1.0, 1000.0);
                    if mt != max_tokens {
                        x.lose(
                            "budget.max_tokens",
                            format!(
                                "{max_tokens}: gRPC's maxTokens is an integer in (0, 1000] (gRFC A6); exported {mt}"
                            ),
                        );
                    }
                    let mt = mt as u32;
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
    super::hedging::grpc_losses(p, &mut x);

    let config = ServiceConfig {
        method_config: vec![MethodConfig {
            name: vec![BTreeMap::new()],
            timeout,
            retry_policy: policy,
            hedging_policy,
        }],
        retry_throttling: throttling,
    };
    x.text = serde_json::to_string_pretty(&config).expect("a service config serializes") + "\n";
    x
}
