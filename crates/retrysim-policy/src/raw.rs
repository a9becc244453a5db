//! The policy file as written: serde types that reject unknown keys.
//! Units and cross-field rules are checked in [`crate::validate`].

use serde::Deserialize;

/// A policy file, or a policy table inlined in an experiment.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRaw {
    pub name: Option<String>,
    pub max_attempts: Option<i64>,
    pub per_try_timeout: Option<String>,
    pub deadline: Option<String>,
    pub min_attempt_time: Option<String>,
    pub retry_on: Option<Vec<toml::Value>>,
    pub retry_unknown_without_key: Option<bool>,
    pub on_unknown: Option<String>,
    pub respect_retry_after: Option<bool>,
    pub max_retry_after: Option<String>,
    pub backoff: Option<BackoffRaw>,
    pub budget: Option<BudgetRaw>,
    pub circuit_breaker: Option<BreakerRaw>,
    pub hedging: Option<HedgingRaw>,
    pub throttle: Option<ThrottleRaw>,
    pub cancel_on_timeout: Option<bool>,
    pub retry_after_clamp: Option<String>,
}

/// `[hedging]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HedgingRaw {
    pub max_attempts: Option<i64>,
    pub delay: Option<String>,
    pub max_extra_load: Option<f64>,
    pub non_fatal: Option<Vec<toml::Value>>,
    pub cancel: Option<bool>,
}

/// `[throttle]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThrottleRaw {
    pub kind: Option<String>,
    pub k: Option<f64>,
    pub window: Option<String>,
    pub scope: Option<String>,
}

/// `[backoff]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffRaw {
    pub kind: Option<String>,
    pub base: Option<String>,
    pub cap: Option<String>,
    pub multiplier: Option<f64>,
    pub jitter: Option<String>,
    pub jitter_ratio: Option<f64>,
    pub throttling_base: Option<String>,
}

/// `[budget]`: every kind's fields; validation checks which belong.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetRaw {
    pub kind: Option<String>,
    pub scope: Option<String>,
    pub max_tokens: Option<f64>,
    pub token_ratio: Option<f64>,
    pub initial: Option<f64>,
    pub retry_cost: Option<f64>,
    pub timeout_cost: Option<f64>,
    pub throttling_cost: Option<f64>,
    pub success_refund: Option<f64>,
    pub ratio: Option<f64>,
    pub min_per_sec: Option<f64>,
    pub ttl: Option<String>,
    pub budget_percent: Option<f64>,
    pub min_retry_concurrency: Option<i64>,
}

/// `[circuit_breaker]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerRaw {
    pub kind: Option<String>,
    pub retries_only: Option<bool>,
    pub consecutive_failures: Option<i64>,
    pub slow_call_duration: Option<String>,
    pub slow_call_ratio: Option<f64>,
    pub failure_ratio: Option<f64>,
    pub window: Option<String>,
    pub min_requests: Option<i64>,
    pub open_for: Option<String>,
    pub half_open_probes: Option<i64>,
}
