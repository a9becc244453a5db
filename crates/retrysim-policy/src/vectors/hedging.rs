//! Hedged cases: policies with `[hedging]` run by [`HedgedState`] over
//! scripted copies, recording the hedging clock (when copies go, why one
//! may not, what ends and cancels them).

use super::record::{Answer, Before, Rec, Script, ns, ns_or_never, opt};
use crate::backoff::Backoff;
use crate::breaker::{BreakerKind, BreakerSpec};
use crate::budget::{BudgetKind, BudgetScope, BudgetSpec};
use crate::hedge::{HedgeDelay, HedgeSpec};
use crate::hedged::{HedgedState, Sent, Step};
use crate::random::SplitMix;
use crate::state::{Admit, Decision};
use crate::throttle::{ThrottleKind, ThrottleSpec};
use crate::time::{NEVER, Nanos};
use crate::{Outcome, Policy, RetryOn};
use serde_json::{Value, json};

const MS: Nanos = 1_000_000;
const S: Nanos = 1_000_000_000;

/// One hedged call: its pause after the previous call, and the answer of
/// each copy (the last repeats; a latency of [`NEVER`] never answers).
#[derive(Debug, Clone)]
pub struct HedgedScript {
    /// Pause after the previous call ended.
    pub gap: Nanos,
    /// Answers of copy 0, 1, …
    pub copies: Vec<Answer>,
}

fn a(outcome: Outcome, latency_ms: Nanos) -> Answer {
    Answer { outcome, latency: if latency_ms == NEVER { NEVER } else { latency_ms * MS }, retry_after: None }
}

fn ok(ms: Nanos) -> Answer {
    a(Outcome::Ok, ms)
}

fn st(code: u16, ms: Nanos) -> Answer {
    a(Outcome::Status(code), ms)
}

fn call(copies: Vec<Answer>) -> HedgedScript {
    HedgedScript { gap: 10 * MS, copies }
}

fn statuses(codes: &[u16]) -> RetryOn {
    RetryOn { statuses: codes.to_vec(), ..RetryOn::none() }
}

/// The hedging of the hedged cases (3 copies after `delay`, 503 non-fatal,
/// the losers cancelled), and `plain` made a one-attempt policy with it.
pub(super) fn hedged_policy(plain: &Policy, delay: HedgeDelay) -> (HedgeSpec, Policy) {
    let spec = HedgeSpec { max_attempts: 3, delay, max_extra_load: None, non_fatal: statuses(&[503]), cancel: true };
    let p = Policy {
        max_attempts: 1,
        per_try_timeout: S,
        deadline: NEVER,
        min_attempt_time: 0,
        backoff: Backoff::default(),
        hedging: Some(spec.clone()),
        ..plain.clone()
    };
    (spec, p)
}

/// The hedged cases for `base`, appended to the designed ones.
pub(super) fn hedged_cases(plain: &Policy) -> Vec<(String, Policy, Script)> {
    let (spec, p) = hedged_policy(plain, HedgeDelay::Fixed(100 * MS));
    let with = |h: HedgeSpec| Policy { hedging: Some(h), ..p.clone() };
    let mut out: Vec<(String, Policy, Script)> = Vec::new();
    let mut add = |name: &str, p: Policy, calls: Vec<HedgedScript>| out.push((name.into(), p, Script::Hedged(calls)));
    add(
        "hedge: a copy after each delay up to max_attempts; the first answer wins and cancels the rest",
        p.clone(),
        vec![call(vec![ok(350), ok(180), ok(500)]), call(vec![ok(50)])],
    );
    add(
        "hedge: cancel = false leaves the other copies running",
        with(HedgeSpec { cancel: false, ..spec.clone() }),
        vec![call(vec![ok(350), ok(180), ok(500)])],
    );
    add(
        "hedge: a non-fatal answer sends the next copy at once; a fatal answer ends the call",
        p.clone(),
        vec![call(vec![st(503, 20)]), call(vec![st(500, 20)]), call(vec![st(503, 20), ok(30)])],
    );
    add(
        "hedge: a per-try timeout sends the next copy, and the late copy may still win",
        Policy { per_try_timeout: 150 * MS, ..with(HedgeSpec { delay: HedgeDelay::Fixed(S), ..spec.clone() }) },
        vec![call(vec![ok(400), ok(300)]), call(vec![a(Outcome::Ok, NEVER)])],
    );
    add(
        "hedge: the deadline less min_attempt_time stops a hedge; expired copies are given up",
        Policy { deadline: 250 * MS, min_attempt_time: 100 * MS, ..p.clone() },
        vec![call(vec![a(Outcome::Ok, NEVER)])],
    );
    add(
        "hedge: the retry budget refuses a hedge",
        Policy {
            budget: Some(BudgetSpec {
                kind: BudgetKind::TokenBucket { max_tokens: 2.0, token_ratio: 0.5 },
                scope: BudgetScope::Client,
            }),
            ..p.clone()
        },
        vec![call(vec![st(503, 20)]), call(vec![ok(20)]), call(vec![ok(300), ok(20)])],
    );
    add(
        "hedge: max_extra_load caps hedges at a share of first attempts",
        with(HedgeSpec { max_extra_load: Some(0.5), ..spec.clone() }),
        vec![call(vec![ok(300)]), call(vec![ok(300), ok(150)]), call(vec![ok(300)])],
    );
    add(
        "hedge: an open breaker stops hedges and then first attempts",
        Policy {
            breaker: Some(BreakerSpec {
                kind: BreakerKind::Consecutive { failures: 2 },
                failure_ratio: None,
                window: 0,
                min_requests: 0,
                open_for: S,
                half_open_probes: 1,
                retries_only: false,
            }),
            ..p.clone()
        },
        vec![call(vec![st(503, 20)]), call(vec![ok(20)])],
    );
    add(
        "hedge: the throttle refuses hedges, which never wait for a token",
        Policy {
            throttle: Some(ThrottleSpec {
                kind: ThrottleKind::Sre { k: 1.1, window: 60 * S },
                scope: BudgetScope::Client,
            }),
            hedging: Some(HedgeSpec { non_fatal: statuses(&[429, 503]), ..spec }),
            ..p
        },
        (0..8).map(|_| call(vec![st(429, 5)])).collect(),
    );
    out
}

/// A copy sent, with the answer the script gives it.
struct Out {
    copy: u32,
    sent: Nanos,
    timeout: Nanos,
    answer: Answer,
    expired: bool,
}

/// Runs hedged calls one after another.
pub(super) fn run_hedged(rec: &mut Rec, calls: &[HedgedScript]) {
    let mut now: Nanos = 0;
    for (i, c) in calls.iter().enumerate() {
        now = run_one(rec, i, now + c.gap, c);
    }
}

fn sent_json(s: &Result<Sent, crate::DenyReason>) -> Value {
    match s {
        Ok(s) => json!({ "copy": s.copy, "timeout": opt(ns_or_never(s.timeout)) }),
        Err(r) => json!({ "refused": r.label() }),
    }
}

fn due(st: &HedgedState<SplitMix>) -> Value {
    due_at(st).map_or(Value::Null, |t| json!(t))
}

/// When the next copy is due, in nanoseconds from the origin.
fn due_at(st: &HedgedState<SplitMix>) -> Option<Nanos> {
    st.hedge_due_at().map(|t| ns(t.duration_since(st.shared().origin())))
}

/// One hedged call to its end; returns the time it ended.
fn run_one(rec: &mut Rec, i: usize, start: Nanos, c: &HedgedScript) -> Nanos {
    let rng = SplitMix::new(rec.seed.wrapping_mul(1_000_003).wrapping_add(i as u64));
    let mut st = HedgedState::new(rec.shared.clone(), rec.at(start), rng).expect("a hedged policy");
    let spec = rec.policy.hedging.clone().expect("a hedged policy");
    rec.steps.push(json!({ "call": i, "op": "start", "now": start, "idempotent": true, "key_sent": false }));
    let answer = |copy: u32| c.copies[(copy as usize).min(c.copies.len() - 1)];
    let mut now = start;
    let mut outs: Vec<Out> = Vec::new();
    loop {
        let learnt = latency_counts(rec);
        let r = match st.before_first(rec.at(now)) {
            Ok(Admit::Send { timeout }) => Ok(Before::Send(ns_or_never(timeout))),
            Ok(Admit::Wait(w)) => Ok(Before::Wait(ns(w))),
            Ok(_) => unreachable!("a hedged call's first step sends the operation or waits"),
            Err(reason) => Err(reason),
        };
        let draw = st.take_draw();
        let expect = match r {
            Ok(Before::Send(timeout)) => {
                tag_quantile(rec, learnt, st.hedge_due_at().is_some());
                json!({ "admit": "send", "timeout": opt(timeout), "hedge_due": due(&st) })
            }
            Ok(Before::Wait(w)) => json!({ "admit": "wait", "wait": w }),
            Ok(Before::Query(_)) => unreachable!("never made above"),
            Err(reason) => {
                rec.covers.insert(format!("refuse:{reason}"));
                json!({ "admit": "refuse", "reason": reason.label() })
            }
        };
        let state = rec.observe(now);
        rec.steps.push(
            json!({ "call": i, "op": "before_attempt", "now": now, "draw": draw, "expect": expect, "state": state }),
        );
        match r {
            Ok(Before::Send(timeout)) => {
                outs.push(Out { copy: 0, sent: now, timeout, answer: answer(0), expired: false });
                break;
            }
            Ok(Before::Wait(w)) => now += w,
            Ok(Before::Query(_)) => unreachable!("never made above"),
            Err(_) => return now,
        }
    }
    loop {
        // The next event: an answer, a per-try timeout, or the hedging delay.
        let live = st.live();
        let mut next: Option<(Nanos, u8, u32)> = None;
        for o in outs.iter().filter(|o| live.contains(&o.copy)) {
            let at = if o.answer.latency == NEVER { NEVER } else { o.sent.saturating_add(o.answer.latency) };
            if at != NEVER {
                next = next.min_by_key_opt((at, 0, o.copy));
            }
            if !o.expired && o.timeout != NEVER && o.answer.latency > o.timeout {
                next = next.min_by_key_opt((o.sent + o.timeout, 1, o.copy));
            }
        }
        if let Some(t) = due_at(&st) {
            next = next.min_by_key_opt((t, 2, 0));
        }
        let Some((t, kind, copy)) = next else {
            return now;
        };
        now = t;
        let (op, step) = match kind {
            0 => {
                let o = outs.iter().find(|o| o.copy == copy).expect("sent").answer.outcome;
                ("copy_outcome", st.on_copy_outcome(copy, o, rec.at(now)))
            }
            1 => {
                outs.iter_mut().find(|o| o.copy == copy).expect("sent").expired = true;
                ("copy_expired", st.on_copy_expired(copy, rec.at(now)))
            }
            _ => {
                let r = st.on_hedge_due(rec.at(now));
                ("hedge_due", Step { hedge: Some(r), ..Step::default() })
            }
        };
        let draw = st.take_draw();
        tag(rec, &spec, op, copy, &step);
        let mut expect = json!({
            "end": match step.end {
                None => Value::Null,
                Some(Decision::Done) => json!("done"),
                Some(_) => json!("give_up"),
            },
            "hedge": step.hedge.as_ref().map_or(Value::Null, sent_json),
            "given_up": step.given_up,
            "cancel": step.cancel,
            "hedge_due": due(&st),
        });
        if let Some(Decision::GiveUp(reason)) = step.end {
            expect["reason"] = json!(reason.label());
        }
        let mut s = json!({ "call": i, "op": op, "now": now });
        if kind != 2 {
            s["copy"] = json!(copy);
        }
        if kind == 0 {
            let o = outs.iter().find(|o| o.copy == copy).expect("sent").answer;
            s["outcome"] = json!(o.outcome.to_string());
            s["retry_after"] = json!(o.retry_after);
        }
        s["draw"] = json!(draw);
        s["expect"] = expect;
        s["state"] = rec.observe(now);
        rec.steps.push(s);
        if let Some(Ok(sent)) = step.hedge {
            outs.push(Out {
                copy: sent.copy,
                sent: now,
                timeout: ns_or_never(sent.timeout),
                answer: answer(sent.copy),
                expired: false,
            });
        }
        if step.end.is_some() {
            return now;
        }
    }
}

/// The latencies of a quantile delay's window: (read, written).
fn latency_counts(rec: &Rec) -> Option<(u64, u64)> {
    rec.shared.lock().hedger.as_ref().and_then(|h| h.latency_counts())
}

/// What a first copy shows of a quantile delay: hedged at the learnt
/// quantile, too few latencies in the period read, or a window emptied by
/// more than a whole period without writes (latencies were being written
/// and none is left, read or written: a rotation by one period would have
/// moved them to the read side). `before` are the counts before the step.
fn tag_quantile(rec: &mut Rec, before: Option<(u64, u64)>, hedges: bool) {
    let (Some((_, written)), Some((read, writing))) = (before, latency_counts(rec)) else {
        return;
    };
    let tag = if hedges {
        "hedge:quantile_learnt"
    } else if read > 0 {
        "hedge:quantile_too_few"
    } else if written > 0 && writing == 0 {
        "hedge:quantile_reset"
    } else {
        return;
    };
    rec.covers.insert(tag.into());
}

/// What a step shows of the hedging clock.
fn tag(rec: &mut Rec, spec: &HedgeSpec, op: &str, copy: u32, step: &Step) {
    let c = &mut rec.covers;
    if spec.max_extra_load.is_some() {
        c.insert("hedge:extra_load".into());
    }
    match &step.hedge {
        Some(Ok(_)) => {
            let why = match op {
                "hedge_due" => "delay",
                "copy_expired" => "timeout",
                _ => "non_fatal",
            };
            c.insert(format!("hedge:sent_after_{why}"));
        }
        Some(Err(reason)) => {
            c.insert(format!("hedge:refused:{reason}"));
        }
        None => {}
    }
    if !step.given_up.is_empty() {
        c.insert("hedge:given_up".into());
    }
    if !step.cancel.is_empty() {
        c.insert(if spec.cancel { "hedge:cancelled" } else { "hedge:left_running" }.into());
    }
    match step.end {
        Some(Decision::Done) if copy > 0 => {
            c.insert("hedge:won_by_a_later_copy".into());
        }
        Some(Decision::GiveUp(crate::DenyReason::NotRetryable)) => {
            c.insert("hedge:fatal_answer".into());
        }
        Some(Decision::GiveUp(_)) => {
            c.insert("hedge:failed".into());
        }
        _ => {}
    }
}

/// The earlier of two events, by (time, kind, copy).
trait MinOpt {
    fn min_by_key_opt(self, e: (Nanos, u8, u32)) -> Self;
}

impl MinOpt for Option<(Nanos, u8, u32)> {
    fn min_by_key_opt(self, e: (Nanos, u8, u32)) -> Self {
        Some(self.map_or(e, |x| x.min(e)))
    }
}
