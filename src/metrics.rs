//! Per-run collection: streaming counters, an HDR latency histogram and the
//! per-bin time series. Memory does not grow with the number of intents.

pub mod bin_latency;
pub mod class;
pub mod latency;
pub mod recovery;
pub mod run;
pub mod tally;
pub mod timeseries;
pub mod trace;

pub use latency::LatencyHistogram;
pub use run::{ClientResult, DISTURBANCE_TO_END, MetricMap, NEVER_HEALTHY, RunCollector, RunResult};
pub use tally::{Counters, Settled, Tally};
pub use timeseries::{BinRow, TimeSeries};
pub use trace::{TraceDecision, TraceNote, TraceRecord};

/// Headline metrics, in the order tables and files show them (DESIGN §5,
/// §8.3).
pub const METRICS: [&str; 43] = [
    "intents",
    "success_rate",
    "goodput_per_s",
    "burst_completion_s",
    "attempts_per_intent",
    "amplification",
    "latency_mean_s",
    "latency_p50_s",
    "latency_p99_s",
    "latency_p999_s",
    "latency_all_p50_s",
    "latency_all_p99_s",
    "latency_all_p999_s",
    "wasted_fraction",
    "duplicate_intents",
    "orphan_commits",
    "lost_effects",
    "retries_denied_budget",
    "hedges_per_intent",
    "hedge_wins",
    "throttled_per_intent",
    "status_queries_per_intent",
    "cancelled_fraction",
    "recovery_time_s",
    "recovered_fraction",
    "degraded_fraction",
    "outbox_events_per_intent",
    "ledger_replays",
    "ledger_409",
    "ledger_422",
    "ledger_recoveries",
    "stuck_placeholders",
    "deadline_overruns",
    "collapse_time_s",
    "reconciled",
    "compensated",
    "time_to_consistency_s",
    "time_to_consistency_p99_s",
    "unresolved_at_end",
    "redeliveries",
    "duplicate_deliveries",
    "dead_letters",
    "message_age_p99_s",
];

/// Metrics per call edge.
pub const EDGE_METRICS: [&str; 1] = ["attempts_per_intent"];

/// Metrics per message queue: messages published, deliveries beyond the
/// first per message, the share delivered more than once, dead letters,
/// messages dropped by retention, and the p99 age at acknowledgement.
pub const QUEUE_METRICS: [&str; 7] =
    ["messages", "redeliveries", "duplicate_deliveries", "dead_letters", "dropped", "left_at_end", "message_age_p99_s"];

/// Metrics per side-effect kind.
pub const EFFECT_METRICS: [&str; 3] = ["commits_per_intent", "duplicate_intents", "extra"];

/// Metrics per service.
pub const SERVICE_METRICS: [&str; 4] = ["requests_per_intent", "utilization", "queue_len", "wasted_fraction"];

/// Metrics a service has besides [`SERVICE_METRICS`] when it uses the
/// feature: `success_rate` (share of attempts answered `ok`) for a service
/// with replicas and each of its hosts (`"api[0]"`, …), `cache_hit_ratio`
/// for a service whose calls have caches, `ejections` with outlier detection,
/// `memory_crashes` with a `memory_limit`.
pub const HOST_METRICS: [&str; 4] = ["success_rate", "cache_hit_ratio", "ejections", "memory_crashes"];
