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
    /// A hedged copy failed with a non-fatal answer (or timed out); the
    /// other copies go on.
    Hedge,
    /// A hedged copy was cancelled: another copy answered first.
    Cancelled,
    /// A hedged copy was left to finish as wasted work: another copy
    /// answered first and the policy does not cancel.
    Abandoned,
}

impl TraceDecision {
    /// The `decision` field: `done`, `retry` or the denial reason.
    pub fn label(self) -> &'static str {
        match self {
            TraceDecision::Done => "done",
            TraceDecision::Retry => "retry",
            TraceDecision::Deny(r) => r.label(),
            TraceDecision::Hedge => "hedge",
            TraceDecision::Cancelled => "cancelled",
            TraceDecision::Abandoned => "abandoned",
        }
    }
}

/// What the client-side throttle or hedging did to an attempt, beyond its outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TraceNote {
    /// The throttle refused it locally: never sent. `p` is the SRE
    /// rejection probability; `None` when an adaptive token would have come
    /// after the deadline.
    Refused { p: Option<f64> },
    /// The adaptive throttle held it back this long for a token.
    Delayed { wait: Nanos },
    /// Cancelled at its service before it answered.
    Cancelled,
    /// Left unanswered: another copy won and it goes on as wasted work.
    Unanswered,
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
    /// When the caller had its outcome (answer, timeout or refusal).
    pub answered: Nanos,
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
    /// Which copy of a hedged call (0 = the first); `None` without hedging.
    pub copy: Option<u32>,
    /// What the throttle or hedging did to it, if anything.
    pub note: Option<TraceNote>,
}

impl TraceRecord {
    /// The record as a trace row (DESIGN §5 fields), names resolved in `s`.
    pub fn to_json(&self, s: &Scenario, replication: usize) -> serde_json::Value {
        let mut row = serde_json::json!({
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
        });
        // Fields beyond DESIGN §5's appear only where hedging or a throttle acted.
        let obj = row.as_object_mut().expect("an object");
        if let Some(copy) = self.copy {
            obj.insert("copy".into(), copy.into());
            if copy > 0 && self.trigger.is_none() {
                obj.insert("trigger".into(), "hedge_delay".into());
            }
        }
        match self.note {
            None => {}
            Some(TraceNote::Refused { p }) => {
                obj.insert("outcome".into(), "throttled".into());
                obj.insert("throttle".into(), if p.is_some() { "sre" } else { "aws_adaptive" }.into());
                obj.insert(
                    "throttle_reason".into(),
                    match p {
                        Some(_) => "refused with the rejection probability".into(),
                        None => "a token would come after the deadline".into(),
                    },
                );
                if let Some(p) = p {
                    obj.insert("throttle_p".into(), p.into());
                }
            }
            Some(TraceNote::Delayed { wait }) => {
                obj.insert("throttle".into(), "aws_adaptive".into());
                obj.insert("throttle_wait_s".into(), to_secs_f64(wait).into());
            }
            Some(TraceNote::Cancelled) => {
                obj.insert("outcome".into(), "cancelled".into());
            }
            Some(TraceNote::Unanswered) => {
                obj.insert("outcome".into(), "unanswered".into());
            }
        }
        row
    }
}
