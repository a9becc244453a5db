//! `[[queues]]`: message queues with at-least-once delivery.

use super::V;
use crate::config::raw::MessageQueueRaw;
use crate::config::scenario::MessageQueueSpec;
use crate::engine::NEVER;
use crate::error::InputResult;

/// SQS's defaults: a 30 s visibility timeout, 4 days of retention.
const VISIBILITY: u64 = 30_000_000_000;
const RETENTION: u64 = 4 * 86_400_000_000_000;

/// Validates the queues (their consumers are set by the calls through them).
pub fn queues(v: &V, raw: &[MessageQueueRaw]) -> InputResult<Vec<MessageQueueSpec>> {
    let mut out: Vec<MessageQueueSpec> = Vec::new();
    for q in raw {
        let f = |n: &str| format!("queues.{}.{n}", q.name);
        v.name(&f("name"), &q.name)?;
        if out.iter().any(|x| x.name == q.name) {
            return Err(v.err(&f("name"), "queue names must be unique"));
        }
        let visibility_timeout = v.positive_dur(&f("visibility_timeout"), q.visibility_timeout.as_ref(), VISIBILITY)?;
        let max_receives = match q.max_receives {
            None => None,
            Some(n) => Some(v.int_in(&f("max_receives"), Some(n), 1, 1, 1000)? as u32),
        };
        let retention = match q.retention.as_deref().map(str::trim) {
            Some("never") => NEVER,
            _ => v.positive_dur(&f("retention"), q.retention.as_ref(), RETENTION)?,
        };
        out.push(MessageQueueSpec {
            name: q.name.clone(),
            visibility_timeout,
            max_receives,
            retention,
            consumer: usize::MAX,
        });
    }
    Ok(out)
}
