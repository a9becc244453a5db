//! What the targets make of hedging, client-side throttles and the retry
//! details of DESIGN §8.1 (`throttling_base`, `retry_after_clamp`,
//! `cancel_on_timeout`): each target's exporter calls these and writes
//! what they return.

use super::*;
use crate::policy::hedge::HedgeDelay;
use crate::policy::throttle::ThrottleKind;
use serde::Serialize;

/// gRPC's `hedgingPolicy` (gRFC A6).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GrpcHedgingPolicy {
    max_attempts: u32,
    hedging_delay: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    non_fatal_status_codes: Vec<&'static str>,
}

/// gRPC clients clamp a hedging policy's `maxAttempts` to this (gRFC A6).
const GRPC_MAX_HEDGES: u32 = 5;

fn lose_common_hedging(x: &mut Exported, target: &str, h: &crate::policy::hedge::HedgeSpec) {
    if let Some(share) = h.max_extra_load {
        x.lose(
            "hedging.max_extra_load",
            format!("{share}: {target} has no cap on hedges as a share of requests (Finagle and brpc do); a retry budget limits them"),
        );
    }
    if !h.cancel {
        x.lose("hedging.cancel", format!("false: {target} cancels the other copies once one answers"));
    }
}

/// The gRPC `hedgingPolicy` for a policy with `[hedging]`, with its losses.
pub(super) fn grpc_hedging(p: &Policy, x: &mut Exported) -> Option<GrpcHedgingPolicy> {
    let h = p.hedging.as_ref()?;
    lose_common_hedging(x, "gRPC", h);
    let delay = match h.delay {
        HedgeDelay::Fixed(d) => d,
        HedgeDelay::Quantile(q) => {
            x.lose(
                "hedging.delay",
                format!(
                    "p{}: gRPC's hedgingDelay is a fixed duration; no hedgingPolicy exported (run the experiment to read the edge's latency at that quantile and set it as delay)",
                    q * 100.0
                ),
            );
            return None;
        }
    };
    let mut max_attempts = h.max_attempts;
    if max_attempts > GRPC_MAX_HEDGES {
        x.lose(
            "hedging.max_attempts",
            format!("{max_attempts}: gRPC clamps a hedging policy's maxAttempts to {GRPC_MAX_HEDGES}; exported {GRPC_MAX_HEDGES}"),
        );
        max_attempts = GRPC_MAX_HEDGES;
    }
    let mut codes = Vec::new();
    for s in &h.non_fatal.statuses {
        match grpc_code(&s.to_string()) {
            Some(c) if !codes.contains(&c) => codes.push(c),
            Some(_) => {}
            None => x.lose("hedging.non_fatal", format!("{s} has no gRPC status code; a {s} ends the call")),
        }
    }
    x.notes.push(
        "hedgingPolicy: grpc-java and grpc-go hedge; grpcio (Python) and grpc-core accept the policy but send no hedges".into(),
    );
    if p.budget.is_some() {
        x.notes.push(
            "retryThrottling applies to hedges too: hedges stop while the token count is at or below half".into(),
        );
    }
    Some(GrpcHedgingPolicy { max_attempts, hedging_delay: proto_duration(delay), non_fatal_status_codes: codes })
}

/// Losses shared by every target for the retry details it has no key for.
fn lose_details(p: &Policy, x: &mut Exported, target: &str, keeps_throttling_base: bool, keeps_clamp: bool) {
    if let Some(b) = p.backoff.throttling_base.filter(|_| !keeps_throttling_base && p.max_attempts > 1) {
        x.lose(
            "backoff.throttling_base",
            format!(
                "{}: {target} backs off from one base whatever the answer; exported the base for every retry",
                human(b)
            ),
        );
    }
    if let Some(c) = p.retry_after_clamp.filter(|_| !keeps_clamp && p.max_attempts > 1) {
        x.lose("retry_after_clamp", format!("{}: {target} does not clamp Retry-After around its backoff", human(c)));
    }
}

/// gRPC's losses for the throttle and retry details.
pub(super) fn grpc_losses(p: &Policy, x: &mut Exported) {
    if let Some(t) = &p.throttle {
        x.lose(
            "throttle",
            format!(
                "{}: gRPC's service config has no adaptive client-side throttle (retryThrottling limits retries and hedges only)",
                throttle_label(t.kind)
            ),
        );
    }
    lose_details(p, x, "gRPC", false, false);
}

fn throttle_label(k: ThrottleKind) -> &'static str {
    match k {
        ThrottleKind::Sre { .. } => "sre",
        ThrottleKind::AwsAdaptive => "aws_adaptive",
    }
}

/// Envoy hedging: it hedges only on per-try timeout, so the hedging delay
/// becomes `per_try_timeout` and the copies count against `num_retries`.
/// Returns (per_try_timeout, num_retries) for the retry policy.
pub(super) fn envoy_hedge(p: &Policy, x: &mut Exported) -> Option<(Nanos, u32)> {
    let h = p.hedging.as_ref()?;
    lose_common_hedging(x, "Envoy", h);
    let HedgeDelay::Fixed(delay) = h.delay else {
        x.lose(
            "hedging.delay",
            "a latency quantile: Envoy hedges only on a fixed per_try_timeout; no hedge_policy exported (set delay to the edge's latency at that quantile)",
        );
        return None;
    };
    x.lose(
        "hedging",
        "Envoy hedges only on per-try timeout: the hedging delay is exported as retry_policy.per_try_timeout, the copies count against num_retries, and Envoy still retries the failures retry_on names",
    );
    if p.per_try_timeout != NEVER && p.per_try_timeout != delay {
        x.lose(
            "per_try_timeout",
            format!(
                "{}: replaced by the hedging delay, which is Envoy's per-try timeout when it hedges",
                human(p.per_try_timeout)
            ),
        );
    }
    if !h.non_fatal.statuses.is_empty() {
        x.lose(
            "hedging.non_fatal",
            "Envoy has no non-fatal statuses: a hedged request that fails is retried by retry_on, if at all",
        );
    }
    Some((delay, h.max_attempts - 1))
}

/// The Envoy `hedge_policy` block (RouteAction).
pub(super) fn envoy_hedge_policy() -> String {
    "hedge_policy:\n  hedge_on_per_try_timeout: true\n".into()
}

/// The Envoy HTTP filter for an SRE throttle (`admission_control`) and the
/// losses of the throttle and retry details.
pub(super) fn envoy_filters(p: &Policy, x: &mut Exported) -> Option<String> {
    lose_details(p, x, "Envoy", false, false);
    let t = p.throttle.as_ref()?;
    let ThrottleKind::Sre { k, window } = t.kind else {
        x.lose("throttle", "aws_adaptive: Envoy has no CUBIC send-rate limiter; admission_control is the SRE throttle");
        return None;
    };
    x.lose(
        "throttle.scope",
        "Envoy keeps the admission_control window in the proxy (per worker thread), not per client instance or class",
    );
    let sr = 100.0 / k;
    let mut y = String::new();
    y.push_str("---\n");
    y.push_str("# Goes in the HTTP connection manager's http_filters, before envoy.filters.http.router:\n");
    y.push_str(
        "# the SRE book's client-side throttling, p = max(0, (requests - accepts / sr_threshold) / (requests + 1)).\n",
    );
    y.push_str("name: envoy.filters.http.admission_control\n");
    y.push_str("typed_config:\n");
    y.push_str(
        "  \"@type\": type.googleapis.com/envoy.extensions.filters.http.admission_control.v3.AdmissionControl\n",
    );
    y.push_str("  enabled:\n    default_value: true\n    runtime_key: admission_control.enabled\n");
    y.push_str(&format!("  sampling_window: \"{}\"\n", proto_duration(window)));
    y.push_str("  aggression:\n    default_value: 1.0\n    runtime_key: admission_control.aggression\n");
    y.push_str(&format!(
        "  sr_threshold:\n    default_value:\n      value: {sr:?}\n    runtime_key: admission_control.sr_threshold\n"
    ));
    y.push_str("  # Envoy caps rejections at 80% unless told otherwise; the SRE formula has no cap.\n");
    y.push_str(
        "  max_rejection_probability:\n    default_value:\n      value: 100.0\n    runtime_key: admission_control.max_rejection_probability\n",
    );
    y.push_str("  # Accepted: what retrysim counts as accepted (not 5xx, not 429).\n");
    y.push_str("  success_criteria:\n    http_criteria:\n      http_success_status:\n");
    y.push_str("      - start: 100\n        end: 429\n      - start: 430\n        end: 500\n");
    Some(y)
}

/// AWS: the retry mode a throttle asks for, with the losses of the new
/// fields. `new_2026`: the policy has the 2026 retry quota.
pub(super) fn aws_mode(p: &Policy, x: &mut Exported, new_2026: bool) -> &'static str {
    if p.hedging.is_some() {
        x.lose("hedging", "the AWS SDKs do not hedge requests");
    }
    let keeps_base = new_2026 && p.backoff.throttling_base == Some(1_000_000_000);
    let keeps_clamp = new_2026 && p.retry_after_clamp == Some(5_000_000_000);
    lose_details(p, x, "the AWS SDKs (this version)", keeps_base, keeps_clamp);
    match p.throttle.as_ref().map(|t| (t.kind, t.scope)) {
        Some((ThrottleKind::AwsAdaptive, scope)) => {
            if scope == crate::policy::budget::BudgetScope::Shared {
                x.lose("throttle.scope", "shared: the SDKs keep one rate limiter per client instance");
            }
            "adaptive"
        }
        Some((ThrottleKind::Sre { .. }, _)) => {
            x.lose(
                "throttle",
                "sre: the SDKs' only client-side throttle is retry_mode = adaptive (a CUBIC send-rate bucket); kept retry_mode = standard",
            );
            "standard"
        }
        None => "standard",
    }
}
