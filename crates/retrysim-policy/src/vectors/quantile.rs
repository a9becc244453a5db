//! Hedged cases with a quantile delay: first copies teach the edge's
//! latency window over one 5 s period, and the calls of the next period
//! hedge at exactly that period's quantile (HdrHistogram at 2 significant
//! digits), or do not hedge while it holds fewer than 20 latencies, or
//! after more than a whole period without writes.

use super::hedging::{HedgedScript, hedged_policy};
use super::record::{Answer, Script};
use crate::hedge::{HedgeDelay, HedgeSpec, LATENCY_PERIOD, MIN_DATA_POINTS};
use crate::time::Nanos;
use crate::{Outcome, Policy};

const MS: Nanos = 1_000_000;

/// The quantile of the cases when the policy's own delay is fixed.
const DEFAULT_QUANTILE: f64 = 0.9;

fn ok(latency: Nanos) -> Answer {
    Answer { outcome: Outcome::Ok, latency, retry_after: None }
}

fn call(gap: Nanos, copies: Vec<Answer>) -> HedgedScript {
    HedgedScript { gap, copies }
}

/// `n` calls 10 ms apart whose first copy answers `ok` after
/// `step · (i + 1)` plus an odd number of nanoseconds (so that values fall
/// inside HdrHistogram's steps, not on their edges): with no quantile to
/// read yet, none hedges and each ends when its first copy answers.
fn learning(n: u64, step: Nanos) -> Vec<HedgedScript> {
    (0..n).map(|i| call(10 * MS, vec![ok(step * (i + 1) + 37_337 * i)])).collect()
}

/// A call a whole period after the previous one ended (so in the next
/// period, the learning having taken less than one): its first copy is
/// slow and a hedge, once sent, answers in 20 ms.
fn next_period() -> HedgedScript {
    call(LATENCY_PERIOD, vec![ok(900 * MS), ok(20 * MS)])
}

/// The quantile cases, on `plain` hedged with a quantile delay: the
/// policy's own (`hedging`) when it has one, else p90.
pub(super) fn quantile_cases(plain: &Policy, hedging: Option<&HedgeSpec>) -> Vec<(String, Policy, Script)> {
    let q = match hedging.map(|h| h.delay) {
        Some(HedgeDelay::Quantile(q)) => q,
        _ => DEFAULT_QUANTILE,
    };
    let (_, p) = hedged_policy(plain, HedgeDelay::Quantile(q));
    let n = MIN_DATA_POINTS;
    vec![
        (
            format!(
                "hedge: {n} latencies in one period; the next period hedges at their quantile, and the \
                 cancelled first copy's age counts among the {n} it learns for the period after"
            ),
            p.clone(),
            Script::Hedged(
                [learning(n, 4 * MS), vec![next_period()], learning(n - 1, MS), vec![next_period()]].concat(),
            ),
        ),
        (
            format!("hedge: {} latencies in one period are too few: the next period does not hedge", n - 1),
            p.clone(),
            Script::Hedged([learning(n - 1, 4 * MS), vec![next_period()]].concat()),
        ),
        (
            "hedge: two periods without writes empty the window; it learns again from the next one".into(),
            p,
            Script::Hedged(
                [
                    learning(n, 4 * MS),
                    vec![call(2 * LATENCY_PERIOD, vec![ok(30 * MS)])],
                    learning(n - 1, 6 * MS),
                    vec![next_period()],
                ]
                .concat(),
            ),
        ),
    ]
}
