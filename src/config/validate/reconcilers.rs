//! `[[services.reconcilers]]`: periodic repair jobs at a service.

use super::V;
use crate::config::raw::ServiceRaw;
use crate::config::scenario::{ReconcileAction, ReconcilerSpec};
use crate::error::InputResult;

/// The shortest pass interval: each pass is an event.
const MIN_EVERY: u64 = 1_000_000;

/// Validates the reconcilers of service `s` (its field path is `field`).
pub fn reconcilers(v: &V, s: &ServiceRaw, field: &str) -> InputResult<Vec<ReconcilerSpec>> {
    let mut out = Vec::new();
    for (i, r) in s.reconcilers.iter().enumerate() {
        let f = |n: &str| format!("{field}.reconcilers[{i}].{n}");
        let every = v.positive_dur(&f("every"), r.every.as_ref(), 0).map_err(|_| {
            v.err(&f("every"), "required: how often a pass runs, a duration of at least 1ms such as \"30s\"")
        })?;
        if every < MIN_EVERY {
            return Err(v.err(&f("every"), "must be at least 1ms"));
        }
        let older_than = v.dur(&f("older_than"), r.older_than.as_ref(), 0)?;
        let batch = v.int_in(&f("batch"), r.batch, 100, 1, 1_000_000)? as u32;
        let action = match r.action.as_deref().unwrap_or("query_downstream") {
            "query_downstream" => ReconcileAction::QueryDownstream,
            "compensate" => ReconcileAction::Compensate,
            other => {
                return Err(v.err(
                    &f("action"),
                    format!("unknown action \"{other}\": allowed are query_downstream and compensate"),
                ));
            }
        };
        out.push(ReconcilerSpec { every, older_than, batch, action });
    }
    Ok(out)
}
