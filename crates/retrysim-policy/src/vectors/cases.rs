//! The cases: policies derived from the given one, each with a script
//! that drives one rule, kind or transition, and random scripts on the
//! policy as given.

use super::record::{Answer, CallScript, Case, Script};
use crate::backoff::{Backoff, BackoffKind, Jitter};
use crate::breaker::{BreakerKind, BreakerSpec};
use crate::budget::{BudgetKind, BudgetScope, BudgetSpec};
use crate::random::{Random, SplitMix};
use crate::throttle::{ThrottleKind, ThrottleSpec};
use crate::time::{NEVER, Nanos};
use crate::{OnUnknown, Outcome, Policy, RetryOn};

/// Cases `retrysim vectors` writes by default.
pub const DEFAULT_CASES: usize = 50;

const MS: Nanos = 1_000_000;
const S: Nanos = 1_000_000_000;

fn ans(outcome: Outcome, latency_ms: Nanos) -> Answer {
    Answer { outcome, latency: latency_ms * MS, retry_after: None }
}

fn st(code: u16, latency_ms: Nanos) -> Answer {
    ans(Outcome::Status(code), latency_ms)
}

fn ok(latency_ms: Nanos) -> Answer {
    ans(Outcome::Ok, latency_ms)
}

fn with_ra(code: u16, latency_ms: Nanos, ra_ms: Nanos) -> Answer {
    Answer { retry_after: Some(ra_ms * MS), ..st(code, latency_ms) }
}

fn call(answers: Vec<Answer>) -> CallScript {
    CallScript { gap: 10 * MS, idempotent: true, key_sent: false, answers }
}

fn calls(n: usize, answers: Vec<Answer>) -> Vec<CallScript> {
    (0..n).map(|_| call(answers.clone())).collect()
}

/// The given policy as a retrying one: no hedging, at least 3 attempts,
/// 503 and connect errors retried, a per-try timeout.
fn retrying(base: &Policy) -> Policy {
    let mut p = base.clone();
    p.hedging = None;
    p.max_attempts = p.max_attempts.max(3);
    p.retry_on.statuses.push(503);
    p.retry_on.statuses.sort_unstable();
    p.retry_on.statuses.dedup();
    p.retry_on.connect_error = true;
    if p.per_try_timeout == NEVER {
        p.per_try_timeout = S;
    }
    p
}

/// [`retrying`] without budget, breaker or throttle, so that one rule acts alone.
fn plain(base: &Policy) -> Policy {
    Policy { budget: None, breaker: None, throttle: None, ..retrying(base) }
}

fn expo(jitter: Jitter) -> Backoff {
    Backoff { kind: BackoffKind::Exponential, base: 100 * MS, cap: S, multiplier: 2.0, jitter, throttling_base: None }
}

fn breaker(kind: BreakerKind) -> BreakerSpec {
    let (failure_ratio, window, min_requests) = match kind {
        BreakerKind::FailureRatio => (Some(0.5), 10 * S, 4),
        BreakerKind::Consecutive { .. } => (None, 0, 0),
        BreakerKind::SlowCall { .. } => (None, 10 * S, 4),
    };
    BreakerSpec { kind, failure_ratio, window, min_requests, open_for: S, half_open_probes: 2, retries_only: false }
}

fn budget(kind: BudgetKind) -> Option<BudgetSpec> {
    Some(BudgetSpec { kind, scope: BudgetScope::Client })
}

/// The designed cases for `base`, in a fixed order.
pub fn designed_cases(base: &Policy) -> Vec<Case> {
    let mut out: Vec<(String, Policy, Script)> = Vec::new();
    let mut add = |name: &str, p: Policy, s: Script| out.push((name.to_string(), p, s));
    let seq = Script::Sequential;
    let plain_p = plain(base);

    // The policy as given.
    add("as given: success at once", base.clone(), seq(vec![call(vec![ok(5)])]));
    add("as given: 503 until it gives up", base.clone(), seq(vec![call(vec![st(503, 5)])]));
    add("as given: 503, 503, then success", base.clone(), seq(vec![call(vec![st(503, 5), st(503, 5), ok(5)])]));

    // The decision order, one rule at a time.
    add("rule 1: an outcome not in retry_on is not retried", plain_p.clone(), seq(vec![call(vec![st(418, 5)])]));
    let unsafe_p = Policy {
        retry_on: RetryOn::of(&["connect_error", "timeout", "500", "503"]),
        retry_unknown_without_key: false,
        ..plain_p.clone()
    };
    add(
        "rule 2: a 500 on a non-idempotent operation without a key is unsafe to retry",
        unsafe_p.clone(),
        seq(vec![CallScript { idempotent: false, ..call(vec![st(500, 5)]) }]),
    );
    add(
        "rule 2: an idempotency key makes it safe; a 503 proves nothing ran",
        unsafe_p.clone(),
        seq(vec![
            CallScript { idempotent: false, key_sent: true, ..call(vec![st(500, 5), ok(5)]) },
            CallScript { idempotent: false, ..call(vec![st(503, 5), st(500, 5)]) },
        ]),
    );
    add(
        "rule 2: retry_unknown_without_key retries what may have run",
        Policy { retry_unknown_without_key: true, ..unsafe_p.clone() },
        seq(vec![CallScript { idempotent: false, ..call(vec![st(500, 5), ok(5)]) }]),
    );
    let query_p = Policy { on_unknown: OnUnknown::Query, max_attempts: 4, ..unsafe_p.clone() };
    add(
        "on_unknown query: a 500 is followed by a status query; committed ends the call",
        query_p.clone(),
        seq(vec![CallScript { idempotent: false, ..call(vec![st(500, 5), ok(2)]) }]),
    );
    add(
        "on_unknown query: a failed query is queried again, not found sends the operation again",
        query_p,
        seq(vec![CallScript { idempotent: false, ..call(vec![st(500, 5), st(503, 2), st(404, 2), ok(5)]) }]),
    );
    add(
        "on_unknown give_up: an outcome that may have run ends the call, even when idempotent",
        Policy { on_unknown: OnUnknown::GiveUp, ..unsafe_p },
        seq(vec![call(vec![st(503, 5), st(500, 5)])]),
    );
    add(
        "rule 3: max_attempts",
        Policy { max_attempts: 3, backoff: expo(Jitter::None), deadline: NEVER, ..plain_p.clone() },
        seq(vec![call(vec![st(503, 5)])]),
    );
    add(
        "rule 4: an open breaker stops a retry and then the next first attempt",
        Policy {
            max_attempts: 4,
            backoff: Backoff::default(),
            breaker: Some(breaker(BreakerKind::Consecutive { failures: 2 })),
            deadline: NEVER,
            ..plain_p.clone()
        },
        seq(vec![call(vec![st(503, 5)]), call(vec![ok(5)])]),
    );
    let ra_p = Policy {
        respect_retry_after: true,
        max_retry_after: Some(S),
        retry_after_clamp: None,
        deadline: 10 * S,
        ..plain_p.clone()
    };
    add(
        "rule 5: Retry-After above max_retry_after gives up",
        ra_p.clone(),
        seq(vec![call(vec![with_ra(503, 5, 5000)])]),
    );
    add(
        "rule 5: Retry-After within max_retry_after replaces the backoff",
        Policy { backoff: expo(Jitter::Full), ..ra_p.clone() },
        seq(vec![call(vec![with_ra(503, 5, 300), with_ra(429, 5, 700), ok(5)])]),
    );
    add(
        "rule 5: Retry-After ignored when respect_retry_after = false",
        Policy { respect_retry_after: false, backoff: expo(Jitter::Equal), ..ra_p.clone() },
        seq(vec![call(vec![with_ra(503, 5, 5000), ok(5)])]),
    );
    add(
        "rule 5: Retry-After clamped to [backoff, backoff + retry_after_clamp] (AWS)",
        Policy {
            retry_after_clamp: Some(2 * S),
            max_retry_after: Some(NEVER),
            deadline: NEVER,
            backoff: expo(Jitter::Full),
            ..ra_p.clone()
        },
        seq(vec![call(vec![with_ra(503, 5, 60_000), with_ra(503, 5, 1), ok(5)])]),
    );
    add(
        "rule 5: without max_retry_after the deadline is the limit",
        Policy { max_retry_after: None, deadline: 2 * S, ..ra_p },
        seq(vec![call(vec![with_ra(503, 5, 1500), with_ra(503, 5, 2500)])]),
    );
    let dl = Policy {
        max_attempts: 5,
        per_try_timeout: 300 * MS,
        deadline: S,
        min_attempt_time: 0,
        backoff: Backoff { kind: BackoffKind::Constant, base: 100 * MS, ..Backoff::default() },
        retry_on: RetryOn::of(&["connect_error", "timeout", "503"]),
        ..plain_p.clone()
    };
    add(
        "rule 6: the deadline clips the last timeout and stops the retry that would pass it",
        dl.clone(),
        seq(vec![call(vec![ans(Outcome::Timeout, 900)])]),
    );
    add(
        "rule 6: min_attempt_time counts against the deadline",
        Policy { min_attempt_time: 300 * MS, ..dl },
        seq(vec![call(vec![st(503, 200)])]),
    );
    add(
        "rule 7: the budget is asked last (token bucket drained by failures, refilled by successes)",
        Policy {
            budget: budget(BudgetKind::TokenBucket { max_tokens: 4.0, token_ratio: 0.5 }),
            backoff: Backoff::default(),
            ..plain_p.clone()
        },
        seq([calls(2, vec![st(503, 5)]), calls(4, vec![ok(5)]), calls(1, vec![st(503, 5)])].concat()),
    );

    // Every backoff and jitter kind.
    for (name, b) in [
        ("backoff: exponential without jitter", expo(Jitter::None)),
        ("backoff: exponential with full jitter", expo(Jitter::Full)),
        ("backoff: exponential with equal jitter", expo(Jitter::Equal)),
        ("backoff: exponential with proportional jitter 0.2", expo(Jitter::Proportional(0.2))),
        ("backoff: constant with full jitter", Backoff { kind: BackoffKind::Constant, ..expo(Jitter::Full) }),
        ("backoff: decorrelated (AWS)", Backoff { kind: BackoffKind::Decorrelated, cap: 2 * S, ..expo(Jitter::None) }),
        ("backoff: none", Backoff::default()),
        (
            "backoff: throttling_base after a 429 (AWS 2026)",
            Backoff { base: 50 * MS, cap: 20 * S, throttling_base: Some(S), ..expo(Jitter::Full) },
        ),
    ] {
        let p = Policy {
            max_attempts: 6,
            backoff: b,
            deadline: NEVER,
            retry_on: RetryOn::of(&["connect_error", "429", "503"]),
            ..plain_p.clone()
        };
        add(name, p, seq(vec![call(vec![st(503, 5), st(429, 5), st(503, 5), st(429, 5), st(503, 5)])]));
    }

    // Every budget kind's state changes.
    add(
        "budget: quota spends per cost (timeouts dearer) and refunds on success (AWS standard)",
        Policy {
            budget: budget(BudgetKind::Quota {
                initial: 25.0,
                retry_cost: 5.0,
                timeout_cost: 10.0,
                throttling_cost: 5.0,
                success_refund: 1.0,
            }),
            retry_on: RetryOn::of(&["connect_error", "timeout", "503"]),
            per_try_timeout: 200 * MS,
            deadline: NEVER,
            ..plain_p.clone()
        },
        seq(vec![
            call(vec![st(503, 5), ok(5)]),
            call(vec![ans(Outcome::Timeout, 500), st(503, 5), ok(5)]),
            call(vec![ok(5)]),
            call(vec![st(503, 5)]),
        ]),
    );
    add(
        "budget: ratio of recent first attempts plus a reserve (Finagle)",
        Policy {
            budget: budget(BudgetKind::Ratio { ratio: 0.5, min_per_sec: 0.1, ttl: 10 * S }),
            backoff: Backoff::default(),
            deadline: NEVER,
            ..plain_p.clone()
        },
        seq([calls(2, vec![st(503, 5)]), calls(2, vec![ok(5)]), calls(1, vec![st(503, 5)])].concat()),
    );
    add(
        "budget: concurrency of retries in flight (Envoy)",
        Policy {
            budget: budget(BudgetKind::Concurrency { budget_percent: 50.0, min_retry_concurrency: 1 }),
            backoff: Backoff::default(),
            deadline: NEVER,
            ..plain_p.clone()
        },
        Script::Overlapping {
            calls: 3,
            answers: vec![(0, st(503, 0)), (1, st(503, 0)), (2, ok(0)), (0, ok(0)), (1, st(503, 0)), (1, ok(0))],
        },
    );

    // Every breaker kind and transition.
    let single =
        Policy { max_attempts: 3, backoff: Backoff::default(), per_try_timeout: S, deadline: NEVER, ..plain_p.clone() };
    add(
        "breaker: failure_ratio opens, fails fast, half-opens, closes, reopens",
        Policy { breaker: Some(breaker(BreakerKind::FailureRatio)), ..single.clone() },
        seq([
            calls(2, vec![st(503, 5)]),
            calls(1, vec![ok(5)]),
            vec![CallScript { gap: 1200 * MS, ..call(vec![ok(5)]) }],
            calls(1, vec![ok(5)]),
            calls(2, vec![st(503, 5)]),
            vec![CallScript { gap: 1200 * MS, ..call(vec![st(503, 5)]) }],
        ]
        .concat()),
    );
    add(
        "breaker: consecutive failures (Polly, gobreaker)",
        Policy { breaker: Some(breaker(BreakerKind::Consecutive { failures: 3 })), ..single.clone() },
        seq([
            calls(1, vec![st(503, 5), st(503, 5), ok(5)]),
            calls(1, vec![st(503, 5)]),
            vec![CallScript { gap: 1500 * MS, ..call(vec![ok(5)]) }],
            calls(2, vec![ok(5)]),
        ]
        .concat()),
    );
    add(
        "breaker: slow calls (resilience4j)",
        Policy { breaker: Some(breaker(BreakerKind::SlowCall { duration: 200 * MS, ratio: 0.5 })), ..single.clone() },
        seq([
            calls(2, vec![ok(300)]),
            calls(2, vec![ok(250)]),
            calls(1, vec![ok(5)]),
            vec![CallScript { gap: 1500 * MS, ..call(vec![ok(5)]) }],
            calls(2, vec![ok(5)]),
        ]
        .concat()),
    );
    add(
        "breaker: retries_only lets first attempts through (Brooker)",
        Policy {
            breaker: Some(BreakerSpec { retries_only: true, ..breaker(BreakerKind::Consecutive { failures: 2 }) }),
            ..single.clone()
        },
        seq(calls(3, vec![st(503, 5), st(503, 5), ok(5)])),
    );

    // Both throttles.
    add(
        "throttle: SRE client-side throttling refuses locally",
        Policy {
            throttle: Some(ThrottleSpec {
                kind: ThrottleKind::Sre { k: 1.1, window: 60 * S },
                scope: BudgetScope::Client,
            }),
            max_attempts: 2,
            backoff: Backoff::default(),
            deadline: NEVER,
            retry_on: RetryOn::of(&["connect_error", "429", "503"]),
            ..plain_p.clone()
        },
        seq(calls(12, vec![st(429, 5)])),
    );
    add(
        "throttle: AWS adaptive token bucket switched on by a 429",
        Policy {
            throttle: Some(ThrottleSpec { kind: ThrottleKind::AwsAdaptive, scope: BudgetScope::Client }),
            max_attempts: 3,
            backoff: Backoff::default(),
            deadline: NEVER,
            retry_on: RetryOn::of(&["connect_error", "429", "503"]),
            ..plain_p.clone()
        },
        seq([calls(4, vec![ok(100)]), calls(3, vec![st(429, 20), st(429, 20), ok(20)]), calls(3, vec![ok(5)])].concat()),
    );

    // The hedging clock.
    out.extend(super::hedging::hedged_cases(&plain_p));
    out.extend(super::quantile::quantile_cases(&plain_p, base.hedging.as_ref()));

    out.into_iter()
        .enumerate()
        .map(|(i, (name, policy, script))| Case { name, policy: reloaded(policy), script, seed: i as u64 + 1 })
        .collect()
}

/// The policy as its TOML reads back, so that the case runs exactly what
/// it writes.
fn reloaded(p: Policy) -> Policy {
    let text = crate::file::to_toml(&p);
    let q = Policy::from_toml(&text, "case").unwrap_or_else(|e| panic!("a case's policy must load: {e}\n{text}"));
    // Retrying at once has no base or cap: the file leaves them out, and
    // they read back as the defaults. Everything else round-trips.
    let mut same = p.clone();
    if p.backoff.kind == crate::backoff::BackoffKind::None {
        (same.backoff.base, same.backoff.cap) = (q.backoff.base, q.backoff.cap);
    }
    debug_assert_eq!(same, q, "a case's policy round-trips");
    q
}

/// A random script of three calls on the policy as given.
pub fn random_case(base: &Policy, seed: u64) -> Case {
    let mut r = SplitMix::new(0xC0FFEE ^ seed);
    let pick = |r: &mut SplitMix| -> Answer {
        let latency = 1 + (r.unit() * 300.0) as Nanos;
        let u = r.unit();
        match (u * 8.0) as u32 {
            0 | 1 => ok(latency),
            2 => st(503, latency),
            3 => with_ra(503, latency, 1 + (r.unit() * 2000.0) as Nanos),
            4 => with_ra(429, latency, 1 + (r.unit() * 2000.0) as Nanos),
            5 => st(500, latency),
            6 => ans(Outcome::ConnectError, 1),
            _ => ans(Outcome::Timeout, 5000),
        }
    };
    let calls = (0..3)
        .map(|_| {
            let answers = (0..6).map(|_| pick(&mut r)).collect();
            CallScript {
                gap: (r.unit() * 500.0) as Nanos * MS,
                idempotent: r.unit() < 0.7,
                key_sent: r.unit() < 0.3,
                answers,
            }
        })
        .collect();
    Case {
        name: format!("as given: random script {seed}"),
        policy: base.clone(),
        script: Script::Sequential(calls),
        seed: 1000 + seed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A policy that retries at once but also names a base (the fuzz found
    /// one): its cases still load, with everything that matters kept.
    #[test]
    fn a_policy_retrying_at_once_with_a_base_reloads() {
        let text = "max_attempts = 3\nper_try_timeout = \"1s\"\n[backoff]\nkind = \"none\"\nbase = \"100ms\"\n";
        let p = Policy::from_toml(text, "t").unwrap();
        assert_eq!(p.backoff.base, 100_000_000);
        let q = reloaded(p.clone());
        assert_eq!((q.max_attempts, q.backoff.kind), (p.max_attempts, p.backoff.kind));
    }
}
