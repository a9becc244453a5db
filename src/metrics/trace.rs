//! The attempt trace (`--trace FILE`): one record per attempt with why it
//! was made and what the caller did next.

use crate::config::Scenario;
use crate::engine::{Nanos, to_secs_f64};
use crate::policy::{DenyReason, Outcome};

/// What the caller did after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceDecision {
    /// The intent ended with this attempt's success.
    Done,
    /// Another attempt follows.
    Retry,
    /// No retry, for this reason; the intent failed.
    Deny(DenyReason),
}

impl TraceDecision {
    /// The `decision` field: `done`, `retry` or the denial reason.
    pub fn label(self) -> &'static str {
        match self {
            TraceDecision::Done => "done",
            TraceDecision::Retry => "retry",
            TraceDecision::Deny(r) => r.label(),
        }
    }
}

/// One attempt, compactly; names are resolved when written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceRecord {
    pub client: u32,
    /// The intent's number within its client class.
    pub intent: u64,
    pub edge: u32,
    pub attempt: u32,
    /// When the attempt was sent.
    pub sent: Nanos,
    /// The wait before it (backoff or Retry-After); 0 for the first.
    pub wait: Nanos,
    /// The previous attempt's outcome; `None` for the first attempt.
    pub trigger: Option<Outcome>,
    /// Deadline left when it was sent; `None` without a deadline.
    pub remaining_deadline: Option<Nanos>,
    pub outcome: Outcome,
    pub decision: TraceDecision,
    /// Tokens or quota left after the decision; `None` without such a budget.
    pub budget: Option<f64>,
}

impl TraceRecord {
    /// The record as a trace row (DESIGN §5 fields), names resolved in `s`.
    pub fn to_json(&self, s: &Scenario, replication: usize) -> serde_json::Value {
        serde_json::json!({
            "variant": s.variant,
            "replication": replication,
            "intent": self.intent,
            "client": s.clients[self.client as usize].name,
            "edge": s.edges[self.edge as usize].name,
            "attempt": self.attempt,
            "t_s": to_secs_f64(self.sent),
            "wait_s": to_secs_f64(self.wait),
            "trigger": self.trigger.map(|o| o.label()).unwrap_or_else(|| "first".into()),
            "remaining_deadline_s": self.remaining_deadline.map(to_secs_f64),
            "budget": self.budget,
            "outcome": self.outcome.label(),
            "decision": self.decision.label(),
        })
    }
}
