//! The attempt trace as JSON Lines (DESIGN §5 `--trace`).

use crate::analysis::RunSet;
use crate::engine::to_secs_f64;
use serde_json::json;
use std::io::Write;

/// Writes one JSON object per traced attempt: variants in order, then
/// replications, then attempts in the order they were decided.
pub fn render_trace(set: &RunSet) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    for v in &set.variants {
        let s = &v.scenario;
        for (rep, run) in v.runs.iter().enumerate() {
            for r in &run.trace {
                let row = json!({
                    "variant": s.variant,
                    "replication": rep,
                    "intent": r.intent,
                    "client": s.clients[r.client as usize].name,
                    "edge": s.edges[r.edge as usize].name,
                    "attempt": r.attempt,
                    "t_s": to_secs_f64(r.sent),
                    "wait_s": to_secs_f64(r.wait),
                    "trigger": r.trigger.map(|o| o.label()).unwrap_or_else(|| "first".into()),
                    "remaining_deadline_s": r.remaining_deadline.map(to_secs_f64),
                    "budget": r.budget,
                    "outcome": r.outcome.label(),
                    "decision": r.decision.label(),
                });
                serde_json::to_writer(&mut out, &row)?;
                out.write_all(b"\n")?;
            }
        }
    }
    Ok(out)
}
