//! The experiment and policy files as written: serde types that reject
//! unknown keys. Units and cross-field rules are checked in
//! [`super::validate`], which turns these into the typed model.

use serde::Deserialize;
use std::collections::BTreeMap;

pub use retrysim_policy::raw::{BackoffRaw, BreakerRaw, BudgetRaw, HedgingRaw, PolicyRaw, ThrottleRaw};

/// A whole experiment file (after overrides, with policies inlined).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentRaw {
    pub experiment: ExperimentTableRaw,
    #[serde(default)]
    pub clients: Vec<ClientRaw>,
    #[serde(default)]
    pub operations: Vec<OperationRaw>,
    #[serde(default)]
    pub services: Vec<ServiceRaw>,
    #[serde(default)]
    pub faults: Vec<FaultRaw>,
    #[serde(default)]
    pub queues: Vec<MessageQueueRaw>,
    #[serde(default)]
    pub network: Option<NetworkRaw>,
    /// Read by `retrysim tune`; `run` leaves it alone.
    #[serde(default)]
    pub tune: Option<toml::Table>,
}

/// `[experiment]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentTableRaw {
    pub name: Option<String>,
    pub duration: Option<String>,
    pub warmup: Option<String>,
    pub seed: Option<i64>,
    pub replications: Option<i64>,
    pub bin: Option<String>,
    pub load_scale: Option<f64>,
    pub drain_limit: Option<String>,
    /// Extra metrics for the table and the report.
    pub show: Option<Vec<String>>,
    /// Equivalence margins of the vs-baseline comparisons, by metric.
    pub equivalence: Option<toml::Table>,
    /// The question the experiment answers.
    pub question: Option<String>,
    /// Metric paths that answer it.
    pub answer: Option<Vec<String>>,
}

/// `[[clients]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientRaw {
    pub name: String,
    pub count: Option<i64>,
    pub mode: Option<String>,
    pub rate: Option<toml::Value>,
    pub target: String,
    pub operation: Option<String>,
    pub policy: Option<PolicyRaw>,
    pub idempotency_key: Option<bool>,
    pub key_reuse_rate: Option<f64>,
    pub think_time: Option<DistRaw>,
    pub at: Option<String>,
    pub spread: Option<String>,
    pub priority: Option<String>,
}

/// `[[operations]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationRaw {
    pub name: String,
    pub idempotent: Option<bool>,
    pub status_time: Option<String>,
}

/// `[[services]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceRaw {
    pub name: String,
    pub workers: Option<i64>,
    pub queue: Option<QueueRaw>,
    pub service_time: Option<DistRaw>,
    pub drop_expired: Option<bool>,
    pub overload: Option<OverloadRaw>,
    pub rate_limit: Option<RateLimitRaw>,
    pub commits: Option<String>,
    pub idempotency: Option<LedgerRaw>,
    pub occ: Option<toml::Table>,
    pub replicas: Option<i64>,
    pub balancer: Option<String>,
    pub retry_other_host: Option<bool>,
    pub outlier_detection: Option<OutlierRaw>,
    pub concurrency_limit: Option<LimitRaw>,
    pub shed_by_priority: Option<ShedRaw>,
    pub memory_limit: Option<i64>,
    pub restart_after: Option<String>,
    #[serde(default)]
    pub calls: Vec<CallRaw>,
    #[serde(default)]
    pub reconcilers: Vec<ReconcilerRaw>,
}

/// `[[services.reconcilers]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcilerRaw {
    pub every: Option<String>,
    pub older_than: Option<String>,
    pub batch: Option<i64>,
    pub action: Option<String>,
}

/// `outlier_detection = { consecutive_5xx, interval, base_ejection, max_ejection, max_ejection_percent }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutlierRaw {
    pub consecutive_5xx: Option<i64>,
    pub interval: Option<String>,
    pub base_ejection: Option<String>,
    pub max_ejection: Option<String>,
    pub max_ejection_percent: Option<f64>,
}

/// `concurrency_limit = { kind, initial, min, max, … }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitRaw {
    pub kind: Option<String>,
    pub initial: Option<i64>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub backoff_ratio: Option<f64>,
    pub timeout: Option<String>,
    pub smoothing: Option<f64>,
    pub probe_multiplier: Option<i64>,
    pub long_window: Option<i64>,
    pub queue_size: Option<i64>,
}

/// `shed_by_priority = { sheddable, degraded, critical }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShedRaw {
    pub sheddable: Option<f64>,
    pub degraded: Option<f64>,
    pub critical: Option<f64>,
}

/// `cache = { keys, zipf, ttl }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheRaw {
    pub keys: Option<i64>,
    pub zipf: Option<f64>,
    pub ttl: Option<String>,
}

/// `rate_limit = { rate, burst, status, retry_after }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitRaw {
    pub rate: Option<String>,
    pub burst: Option<i64>,
    pub status: Option<toml::Value>,
    pub retry_after: Option<String>,
}

/// `idempotency = { store, ttl, in_progress, lease, atomic, record_delay }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerRaw {
    pub store: Option<String>,
    pub ttl: Option<String>,
    pub in_progress: Option<String>,
    pub lease: Option<String>,
    pub atomic: Option<bool>,
    pub record_delay: Option<String>,
}

/// `[[services.calls]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallRaw {
    pub to: String,
    pub operation: Option<String>,
    pub policy: Option<PolicyRaw>,
    pub key: Option<String>,
    pub when: Option<String>,
    pub propagate_deadline: Option<bool>,
    pub latency: Option<DistRaw>,
    pub relay_delay: Option<DistRaw>,
    pub dedup: Option<bool>,
    pub cache: Option<CacheRaw>,
    pub via: Option<String>,
}

/// `[[queues]]`: a message queue.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageQueueRaw {
    pub name: String,
    pub visibility_timeout: Option<String>,
    pub max_receives: Option<i64>,
    pub retention: Option<String>,
}

/// `queue = { limit, discipline, target, interval }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueRaw {
    pub limit: Option<i64>,
    pub discipline: Option<String>,
    pub target: Option<String>,
    pub interval: Option<String>,
}

/// `overload = { status, retry_after }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverloadRaw {
    pub status: Option<toml::Value>,
    pub retry_after: Option<String>,
}

/// A distribution: `{ dist = "exp", mean = "15ms" }` and its siblings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistRaw {
    pub dist: String,
    pub value: Option<String>,
    pub mean: Option<String>,
    pub min: Option<String>,
    pub max: Option<String>,
    pub p99: Option<String>,
    pub mu: Option<f64>,
    pub sigma: Option<f64>,
    pub shape: Option<f64>,
    /// Only in a service's `service_time`: extra time per request in service.
    pub per_inflight: Option<String>,
    /// pareto: the scale (the smallest value).
    pub scale: Option<String>,
    /// mixture: the parts, each a distribution with a `weight`.
    pub parts: Option<Vec<DistRaw>>,
    /// A mixture part's weight.
    pub weight: Option<f64>,
    /// empirical: the samples' file, relative to the experiment.
    pub file: Option<String>,
}

/// `[[faults]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultRaw {
    pub name: Option<String>,
    pub kind: String,
    pub target: String,
    pub start: Option<String>,
    pub duration: Option<String>,
    pub capacity: Option<f64>,
    pub status: Option<toml::Value>,
    pub probability: Option<f64>,
    pub retry_after: Option<String>,
    pub extra: Option<DistRaw>,
    pub restart_after: Option<String>,
    pub factor: Option<f64>,
}

/// `[network]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkRaw {
    pub latency: Option<DistRaw>,
}

/// `[[variants]]`: a name and the overrides it applies.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantRaw {
    pub name: String,
    #[serde(default)]
    pub set: BTreeMap<String, toml::Value>,
}
