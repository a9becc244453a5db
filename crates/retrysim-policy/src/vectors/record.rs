//! Running one case and recording every step with its inputs, outputs and
//! the shared state after it.

use crate::backoff::{BackoffKind, Jitter};
use crate::breaker::BreakerState;
use crate::budget::BudgetKind;
use crate::decision::DenyReason;
use crate::random::SplitMix;
use crate::state::{Admit, Decision, RetryState, Shared};
use crate::throttle::Throttle;
use crate::time::{NEVER, Nanos};
use crate::{Outcome, Policy};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// One scripted answer: what the next attempt comes back with, after how
/// long, and the server's Retry-After. An attempt whose answer takes longer
/// than its timeout ends as a timeout at the timeout instead.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    /// The outcome.
    pub outcome: Outcome,
    /// Time from sending to the answer.
    pub latency: Nanos,
    /// Retry-After sent with the answer.
    pub retry_after: Option<Nanos>,
}

/// One call of a case, run to its end before the next starts.
#[derive(Debug, Clone)]
pub struct CallScript {
    /// Pause after the previous call ended (or after 0 for the first).
    pub gap: Nanos,
    /// The operation is idempotent.
    pub idempotent: bool,
    /// An idempotency key is sent.
    pub key_sent: bool,
    /// Answers of its attempts in order (the last repeats).
    pub answers: Vec<Answer>,
}

/// How a case drives its calls.
#[derive(Debug, Clone)]
pub enum Script {
    /// Calls one after another.
    Sequential(Vec<CallScript>),
    /// Calls started together: every first attempt is sent, then the
    /// answers arrive in the listed order (call index, answer), each call's
    /// retries sent at once.
    Overlapping { calls: usize, answers: Vec<(usize, Answer)> },
    /// Hedged calls one after another (a policy with `[hedging]`).
    Hedged(Vec<super::hedging::HedgedScript>),
}

/// A conformance case: a name, a policy and a script.
#[derive(Debug, Clone)]
pub struct Case {
    /// What the case is about.
    pub name: String,
    /// The policy the case runs (written into the case as TOML).
    pub policy: Policy,
    /// The calls.
    pub script: Script,
    /// Seed of the draws (recorded in the steps, so replays need not know it).
    pub seed: u64,
}

pub(super) struct Rec<'p> {
    pub(super) policy: &'p Policy,
    pub(super) shared: Shared,
    calls: Vec<RetryState<SplitMix>>,
    pub(super) steps: Vec<Value>,
    pub(super) covers: BTreeSet<String>,
    pub(super) seed: u64,
    /// The state after the previous step.
    last: Value,
    /// The case hedges: its state includes the hedger's extra-load counts.
    hedged: bool,
}

fn outcome_text(o: Outcome) -> String {
    o.to_string()
}

pub(super) fn opt(ns: Nanos) -> Value {
    if ns == NEVER { Value::Null } else { json!(ns) }
}

/// A duration of the public API in the vectors' nanoseconds.
pub(super) fn ns(d: Duration) -> Nanos {
    crate::time::nanos(d)
}

/// An optional duration ([`NEVER`] for none) in the vectors' nanoseconds.
pub(super) fn ns_or_never(d: Option<Duration>) -> Nanos {
    d.map_or(NEVER, ns)
}

/// What may happen before an attempt, in the vectors' nanoseconds.
pub(super) enum Before {
    /// Send it with this timeout ([`NEVER`] = none).
    Send(Nanos),
    /// Send a status query with this timeout instead (`on_unknown = "query"`).
    Query(Nanos),
    /// Wait this long first.
    Wait(Nanos),
}

impl<'p> Rec<'p> {
    fn state(&self, now: Nanos) -> Value {
        let mut s = self.shared.lock();
        let mut out = serde_json::Map::new();
        if let Some(b) = s.budget.as_mut() {
            let v = match self.policy.budget.map(|b| b.kind) {
                Some(BudgetKind::TokenBucket { .. } | BudgetKind::Quota { .. }) => json!({ "level": b.level() }),
                Some(BudgetKind::Ratio { .. }) => {
                    let (first, retries) = b.counts(now);
                    json!({ "first_attempts": first, "retries": retries })
                }
                _ => {
                    let (active, retries) = b.counts(now);
                    json!({ "active": active, "active_retries": retries })
                }
            };
            out.insert("budget".into(), v);
        }
        if let Some(b) = s.breaker.as_mut() {
            let mut v = match b.state(now) {
                BreakerState::Closed => json!({ "state": "closed" }),
                BreakerState::Open { until } => json!({ "state": "open", "until": until }),
                BreakerState::HalfOpen { sent, succeeded, bad } => {
                    json!({ "state": "half_open", "sent": sent, "ended": succeeded, "bad": bad })
                }
            };
            v["opened"] = json!(b.opened());
            out.insert("breaker".into(), v);
        }
        if let Some(t) = s.throttle.as_mut() {
            let v = match t {
                Throttle::Sre(t) => {
                    let (requests, accepts) = t.counts(now);
                    json!({ "requests": requests, "accepts": accepts })
                }
                Throttle::Aws(l) => json!({
                    "enabled": l.enabled(),
                    "fill_rate": l.bucket().max_rate(),
                    "capacity": l.bucket().capacity(),
                    "measured_rate": l.measured_rate(),
                }),
            };
            out.insert("throttle".into(), v);
        }
        if let Some((first, hedges)) = s.hedger.as_mut().filter(|_| self.hedged).and_then(|h| h.extra_counts(now)) {
            out.insert("hedger".into(), json!({ "first_attempts": first, "hedges": hedges }));
        }
        Value::Object(out)
    }

    /// The instant `now` nanoseconds after the shared state's origin.
    pub(super) fn at(&self, now: Nanos) -> Instant {
        self.shared.origin() + Duration::from_nanos(now)
    }

    fn start(&mut self, now: Nanos, idempotent: bool, key_sent: bool) -> usize {
        let i = self.calls.len();
        let rng = SplitMix::new(self.seed.wrapping_mul(1_000_003).wrapping_add(i as u64));
        let st = RetryState::new(self.shared.clone(), self.at(now), rng).operation(idempotent, key_sent);
        self.calls.push(st);
        self.steps
            .push(json!({ "call": i, "op": "start", "now": now, "idempotent": idempotent, "key_sent": key_sent }));
        i
    }

    fn before(&mut self, i: usize, now: Nanos) -> Result<Before, DenyReason> {
        let at = self.at(now);
        let r = match self.calls[i].before_attempt(at) {
            Ok(Admit::Send { timeout }) => Ok(Before::Send(ns_or_never(timeout))),
            Ok(Admit::Query { timeout }) => Ok(Before::Query(ns_or_never(timeout))),
            Ok(Admit::Wait(w)) => Ok(Before::Wait(ns(w))),
            Err(reason) => Err(reason),
        };
        let draw = self.calls[i].take_draw();
        let expect = match r {
            Ok(Before::Send(timeout) | Before::Query(timeout)) => {
                if timeout != NEVER && timeout < self.policy.per_try_timeout {
                    self.covers.insert("timeout:clipped_to_deadline".into());
                }
                let admit = if matches!(r, Ok(Before::Query(_))) {
                    self.covers.insert("on_unknown:query".into());
                    "query"
                } else {
                    "send"
                };
                json!({ "admit": admit, "timeout": opt(timeout) })
            }
            Ok(Before::Wait(w)) => {
                self.covers.insert("throttle:wait".into());
                json!({ "admit": "wait", "wait": w })
            }
            Err(reason) => {
                self.covers.insert(format!("refuse:{reason}"));
                json!({ "admit": "refuse", "reason": reason.label() })
            }
        };
        let state = self.observe(now);
        self.steps.push(
            json!({ "call": i, "op": "before_attempt", "now": now, "draw": draw, "expect": expect, "state": state }),
        );
        r
    }

    /// The decision after outcome `o`: `Some(wait)` to retry.
    fn outcome(&mut self, i: usize, o: Outcome, now: Nanos, retry_after: Option<Nanos>) -> Option<Nanos> {
        let at = self.at(now);
        let d = self.calls[i].after_outcome(o, at, retry_after.map(Duration::from_nanos));
        let draw = self.calls[i].take_draw();
        let expect = match d {
            Decision::Done => {
                self.covers.insert("decision:done".into());
                json!({ "decision": "done" })
            }
            Decision::Retry { wait } => {
                self.covers.insert("decision:retry".into());
                self.tag_wait(o, retry_after);
                json!({ "decision": "retry", "wait": ns(wait) })
            }
            Decision::GiveUp(reason) => {
                self.covers.insert(format!("deny:{reason}"));
                if reason == DenyReason::Deadline && self.policy.min_attempt_time > 0 {
                    self.covers.insert("deadline:min_attempt_time".into());
                }
                json!({ "decision": "give_up", "reason": reason.label() })
            }
        };
        let state = self.observe(now);
        self.steps.push(json!({
            "call": i, "op": "outcome", "now": now, "outcome": outcome_text(o),
            "retry_after": retry_after, "draw": draw, "expect": expect, "state": state,
        }));
        match d {
            Decision::Retry { wait } => Some(ns(wait)),
            _ => None,
        }
    }

    fn tag_wait(&mut self, o: Outcome, retry_after: Option<Nanos>) {
        let p = self.policy;
        match (retry_after, p.respect_retry_after, p.retry_after_clamp) {
            (Some(_), true, Some(_)) => {
                self.covers.insert("retry_after:clamped".into());
            }
            (Some(_), true, None) => {
                self.covers.insert("retry_after:respected".into());
            }
            (Some(_), false, _) => {
                self.covers.insert("retry_after:ignored".into());
            }
            _ => {}
        }
        let b = &p.backoff;
        let kind = match b.kind {
            BackoffKind::None => "none",
            BackoffKind::Constant => "constant",
            BackoffKind::Exponential => "exponential",
            BackoffKind::Decorrelated => "decorrelated",
        };
        self.covers.insert(format!("backoff:{kind}"));
        if matches!(b.kind, BackoffKind::Constant | BackoffKind::Exponential) {
            let jitter = match b.jitter {
                Jitter::None => "none",
                Jitter::Full => "full",
                Jitter::Equal => "equal",
                Jitter::Proportional(_) => "proportional",
            };
            self.covers.insert(format!("jitter:{jitter}"));
        }
        if b.throttling_base.is_some() && o == Outcome::Status(429) {
            self.covers.insert("backoff:throttling_base".into());
        }
    }

    /// The state now, with the changes since the previous step tagged.
    pub(super) fn observe(&mut self, now: Nanos) -> Value {
        let state = self.state(now);
        let before = std::mem::replace(&mut self.last, state.clone());
        self.tag_state(&before, &state);
        state
    }

    fn tag_state(&mut self, before: &Value, after: &Value) {
        if let (Some(a), Some(b)) = (before["budget"]["level"].as_f64(), after["budget"]["level"].as_f64()) {
            let kind = match self.policy.budget.map(|b| b.kind) {
                Some(BudgetKind::TokenBucket { .. }) => "token_bucket",
                _ => "quota",
            };
            if b < a {
                self.covers.insert(format!("budget:{kind}:spent"));
            } else if b > a {
                self.covers.insert(format!("budget:{kind}:refilled"));
            }
        }
        let (x, y) = (&before["breaker"]["state"], &after["breaker"]["state"]);
        if let (Some(x), Some(y)) = (x.as_str(), y.as_str())
            && x != y
        {
            self.covers.insert(format!("breaker:{x}->{y}"));
        }
    }
}

impl Case {
    /// Runs the case; returns its JSON object.
    pub fn run(&self) -> Value {
        let policy = &self.policy;
        let mut rec = Rec {
            policy,
            shared: Shared::new(policy.clone()),
            calls: Vec::new(),
            steps: Vec::new(),
            covers: BTreeSet::new(),
            seed: self.seed,
            last: Value::Null,
            hedged: matches!(self.script, Script::Hedged(_)),
        };
        match &self.script {
            Script::Sequential(calls) => {
                let mut now: Nanos = 0;
                for c in calls {
                    now = run_call(&mut rec, now + c.gap, c);
                }
            }
            Script::Overlapping { calls, answers } => run_overlapping(&mut rec, *calls, answers),
            Script::Hedged(calls) => super::hedging::run_hedged(&mut rec, calls),
        }
        if let Some(b) = policy.budget {
            let kind = match b.kind {
                BudgetKind::TokenBucket { .. } => "token_bucket",
                BudgetKind::Quota { .. } => "quota",
                BudgetKind::Ratio { .. } => "ratio",
                BudgetKind::Concurrency { .. } => "concurrency",
            };
            rec.covers.insert(format!("budget:{kind}"));
        }
        if let Some(b) = policy.breaker {
            let kind = match b.kind {
                crate::breaker::BreakerKind::FailureRatio => "failure_ratio",
                crate::breaker::BreakerKind::Consecutive { .. } => "consecutive",
                crate::breaker::BreakerKind::SlowCall { .. } => "slow_call",
            };
            rec.covers.insert(format!("breaker:{kind}"));
            if b.retries_only {
                rec.covers.insert("breaker:retries_only".into());
            }
        }
        if let Some(t) = &policy.throttle {
            let kind = match t.kind {
                crate::throttle::ThrottleKind::Sre { .. } => "sre",
                crate::throttle::ThrottleKind::AwsAdaptive => "aws_adaptive",
            };
            rec.covers.insert(format!("throttle:{kind}"));
        }
        let mut out = json!({
            "name": self.name,
            "policy": crate::file::to_toml(policy),
            "covers": rec.covers.iter().collect::<Vec<_>>(),
            "steps": rec.steps,
        });
        if rec.hedged {
            out["runtime"] = json!("hedged");
        }
        out
    }
}

/// One call to its end; returns the time it ended.
fn run_call(rec: &mut Rec, start: Nanos, c: &CallScript) -> Nanos {
    let i = rec.start(start, c.idempotent, c.key_sent);
    let mut now = start;
    let mut k = 0;
    loop {
        let timeout = match rec.before(i, now) {
            Ok(Before::Send(timeout) | Before::Query(timeout)) => timeout,
            Ok(Before::Wait(w)) => {
                now += w;
                continue;
            }
            Err(_) => return now,
        };
        let a = c.answers[k.min(c.answers.len() - 1)];
        k += 1;
        let (o, ra) = if timeout != NEVER && a.latency > timeout {
            now += timeout;
            (Outcome::Timeout, None)
        } else {
            now += a.latency;
            (a.outcome, a.retry_after)
        };
        match rec.outcome(i, o, now, ra) {
            Some(wait) => now += wait,
            None => return now,
        }
    }
}

/// Calls started together at 0; answers arrive 1 ms apart in the listed order.
fn run_overlapping(rec: &mut Rec, calls: usize, answers: &[(usize, Answer)]) {
    let mut now: Nanos = 0;
    let ids: Vec<usize> = (0..calls).map(|_| rec.start(0, true, false)).collect();
    let mut live: Vec<bool> = ids.iter().map(|&i| rec.before(i, 0).is_ok()).collect();
    for &(c, a) in answers {
        if !live[c] {
            continue;
        }
        now += 1_000_000;
        match rec.outcome(ids[c], a.outcome, now, a.retry_after) {
            Some(_) => live[c] = rec.before(ids[c], now).is_ok(),
            None => live[c] = false,
        }
    }
}
