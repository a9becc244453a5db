//! Conformance vectors (`schema = "retrysim.vectors/1"`, docs/vectors.md):
//! deterministic cases that run this crate's [`RetryState`](crate::RetryState) over scripted
//! outcomes and record every input (clock readings, outcomes, Retry-After
//! values, the random draws consumed) with every output (admissions,
//! decisions, waits, denial reasons, and the budget, breaker and throttle
//! state after each step). An SDK in any language replays the inputs and
//! compares the outputs.
//!
//! The cases derive policies from the given one so that every rule of the
//! decision order, every backoff and jitter kind, every budget kind, every
//! breaker kind and transition, both throttles, deadline clipping and the
//! Retry-After caps are exercised whatever the given policy is; a few more
//! replay random scripts against the policy exactly as given.

mod cases;
mod hedging;
mod quantile;
mod record;

pub use cases::{DEFAULT_CASES, designed_cases};
pub use record::{Answer, Case};

use crate::Policy;
use serde_json::{Value, json};

/// The schema name of the output.
pub const SCHEMA: &str = "retrysim.vectors/1";

/// The vectors of `policy`: `cases` cases (the designed ones first, then
/// random scripts on the policy as given; fewer than the designed ones
/// keeps the first `cases`). `source` names the policy file.
pub fn vectors(policy: &Policy, source: &str, cases: usize) -> Value {
    let mut all = designed_cases(policy);
    let mut seed = 1u64;
    while all.len() < cases {
        all.push(cases::random_case(policy, seed));
        seed += 1;
    }
    all.truncate(cases);
    let cases: Vec<Value> = all.iter().map(Case::run).collect();
    let mut covers: Vec<String> = cases
        .iter()
        .flat_map(|c| c["covers"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    covers.sort();
    covers.dedup();
    json!({
        "schema": SCHEMA,
        "generator": format!("retrysim-policy {}", env!("CARGO_PKG_VERSION")),
        "source": source,
        "policy": crate::file::to_toml(policy),
        "units": { "time": "ns", "draws": "uniform in (0, 1)" },
        "covers": covers,
        "cases": cases,
    })
}
