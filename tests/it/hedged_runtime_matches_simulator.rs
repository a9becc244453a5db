//! The runtime's `HedgedState` hedges as the simulator does: one client
//! sends intents one after another under a hedging policy (copies after
//! 20 ms, up to 3, 503 non-fatal, a token bucket) to a service whose work
//! takes 30 ms and that answers 503 at once to 40% of attempts; replaying
//! each intent of the simulator's `--trace` through one `Shared` and a
//! `HedgedState` gives the same copies at the same send times, the same
//! decision for every copy (done, hedge, cancelled, budget…) and the same
//! budget level after each; so does the public sans-IO `Call`, the machine
//! both run.

use crate::support::simulator_trace;

use retrysim_policy::hedged::Step;
use retrysim_policy::{Admit, Decision, HedgedState, NEVER, Outcome, Policy, Shared, SplitMix};
use serde_json::Value;
use simulator_trace::{MS, ONE_AFTER_ANOTHER, ns, random_503};
use std::collections::BTreeMap;

const POLICY: &str = r#"name = "h"
max_attempts = 1
per_try_timeout = "1s"
retry_on = ["connect_error", "timeout", "503"]

[hedging]
max_attempts = 3
delay = "20ms"
non_fatal = ["503"]
cancel = true

[budget]
kind = "token_bucket"
max_tokens = 4
token_ratio = 0.5
"#;

/// One client, eight workers taking 30 ms, 503 at once to 40% of attempts.
fn experiment() -> String {
    simulator_trace::OneClient {
        name: "x",
        duration: "4s",
        arrivals: ONE_AFTER_ANOTHER,
        policy: "p.toml",
        workers: 8,
        work: "30ms",
        faults: &random_503(0.4),
    }
    .toml()
}

/// When a copy sent at `sent` answers: a 503 on arrival (1 ms each way), a
/// success after 30 ms of work; a copy the trace shows cancelled never did.
fn answer_at(sent: u64, outcome: &str) -> u64 {
    match outcome {
        "503" => sent + 2 * MS,
        "ok" => sent + 32 * MS,
        _ => NEVER,
    }
}

/// The trace's decision for the copy that answered: a non-fatal answer is
/// `hedge` (the others go on, or the call fails when no copy may follow).
fn label(step: &Step) -> String {
    match step.end {
        Some(Decision::Done) => "done".into(),
        Some(Decision::GiveUp(r)) if step.hedge.is_none() => r.label().into(),
        _ => "hedge".into(),
    }
}

#[test]
fn replaying_a_hedged_trace_gives_the_same_copies_decisions_and_budget() {
    let dir = tempfile::tempdir().unwrap();
    let rows = simulator_trace::run_traced(dir.path(), &[("p.toml", POLICY), ("e.toml", &experiment())], "e.toml");
    let decisions: Vec<&str> = rows.iter().map(|r| r["decision"].as_str().unwrap()).collect();
    for d in ["done", "hedge", "cancelled"] {
        assert!(decisions.contains(&d), "the script exercises {d}: {decisions:?}");
    }
    let mut intents: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for r in &rows {
        intents.entry(r["intent"].as_u64().unwrap()).or_default().push(r);
    }

    let policy = Policy::load(&dir.path().join("p.toml")).unwrap();
    let origin = std::time::Instant::now();
    let at = |t: u64| origin + std::time::Duration::from_nanos(t);
    let since = |i: std::time::Instant| i.duration_since(origin).as_nanos() as u64;
    let shared = Shared::with_origin(policy, origin);
    let mut checked = 0;
    let mut refused_by_budget = 0;
    for (intent, rows) in &intents {
        let by_copy = |c: u32| *rows.iter().find(|r| r["copy"] == c).expect("a row per copy");
        let t0 = ns(by_copy(0)["t_s"].as_f64().unwrap());
        let mut st = HedgedState::new(shared.clone(), at(t0), SplitMix::new(*intent)).unwrap();
        assert!(matches!(st.before_first(at(t0)), Ok(Admit::Send { .. })), "intent {intent}");
        let mut sent: Vec<(u32, u64)> = vec![(0, t0)];
        // The rows in the order the replay learns each copy's end.
        let mut replayed: Vec<(u32, String, u64, f64)> = Vec::new();
        loop {
            let live = st.live();
            let answer = sent
                .iter()
                .filter(|(c, _)| live.contains(c))
                .map(|&(c, s)| (answer_at(s, by_copy(c)["outcome"].as_str().unwrap()), c))
                .min();
            let due = st.hedge_due_at().map_or(NEVER, since);
            let (when, copy) = answer.unwrap_or((NEVER, 0));
            assert!(when != NEVER || due != NEVER, "intent {intent}: stuck with copies {live:?}");
            let step = if due < when {
                match st.on_hedge_due(at(due)) {
                    Ok(s) => {
                        sent.push((s.copy, due));
                        continue;
                    }
                    Err(_) => continue,
                }
            } else {
                let o = if by_copy(copy)["outcome"] == "ok" { Outcome::Ok } else { Outcome::Status(503) };
                st.on_copy_outcome(copy, o, at(when))
            };
            let level = shared.budget_level().unwrap();
            replayed.push((copy, label(&step), when, level));
            if let Some(Ok(s)) = step.hedge {
                sent.push((s.copy, when));
            }
            if step.end == Some(Decision::GiveUp(retrysim_policy::DenyReason::Budget)) {
                refused_by_budget += 1;
            }
            if step.end.is_some() {
                for &c in &step.cancel {
                    replayed.push((c, "cancelled".into(), when, level));
                }
                break;
            }
        }
        assert_eq!(replayed.len(), rows.len(), "intent {intent}: {replayed:?} vs {rows:?}");
        for ((copy, decision, _, level), r) in replayed.iter().zip(rows.iter()) {
            assert_eq!(r["copy"], *copy, "intent {intent}: {replayed:?} vs {rows:?}");
            assert_eq!(r["decision"], decision.as_str(), "intent {intent} copy {copy}: {r}");
            let budget = r["budget"].as_f64().unwrap();
            assert!((budget - level).abs() < 1e-9, "intent {intent} copy {copy}: budget {level} vs {r}");
            let at = sent.iter().find(|(c, _)| c == copy).expect("sent").1;
            assert_eq!(ns(r["t_s"].as_f64().unwrap()), at, "intent {intent} copy {copy}: sent at");
        }
        checked += rows.len();
    }
    assert!(checked > 50, "{checked} copies replayed");
    assert!(refused_by_budget > 0, "the budget ends some intents");
}

/// The same trace through the public sans-IO `Call`: copies go at the
/// simulator's send times (at once, or when a wake-up the machine asked
/// for comes), and every copy ends as the simulator's did, with the same
/// budget after it.
#[test]
fn replaying_a_hedged_trace_through_the_call_machine_gives_the_same_copies_and_ends() {
    use retrysim_policy::{Call, CallAction, CallInput};
    let dir = tempfile::tempdir().unwrap();
    let rows = simulator_trace::run_traced(dir.path(), &[("p.toml", POLICY), ("e.toml", &experiment())], "e.toml");
    let mut intents: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for r in &rows {
        intents.entry(r["intent"].as_u64().unwrap()).or_default().push(r);
    }
    let policy = Policy::load(&dir.path().join("p.toml")).unwrap();
    let origin = std::time::Instant::now();
    let at = |t: u64| origin + std::time::Duration::from_nanos(t);
    let since = |i: std::time::Instant| i.duration_since(origin).as_nanos() as u64;
    let shared = Shared::with_origin(policy, origin);
    let mut checked = 0;
    for (intent, rows) in &intents {
        let by_copy = |c: u32| *rows.iter().find(|r| r["copy"] == c).expect("a row per copy");
        let t0 = ns(by_copy(0)["t_s"].as_f64().unwrap());
        let mut call = Call::new(shared.clone(), SplitMix::new(*intent));
        let mut sent: Vec<(u32, u64)> = Vec::new();
        let mut live: Vec<u32> = Vec::new();
        let mut due: Option<u64> = None;
        let mut replayed: Vec<(u32, String, f64)> = Vec::new();
        // Sends and wake-ups of one step, at `now`.
        let apply =
            |steps: &[CallAction], now: u64, sent: &mut Vec<(u32, u64)>, live: &mut Vec<u32>, due: &mut Option<u64>| {
                for s in steps {
                    match *s {
                        CallAction::Send { copy, .. } => {
                            sent.push((copy, now));
                            live.push(copy);
                        }
                        CallAction::WakeAt(t) => *due = Some(since(t)),
                        CallAction::Abandon { copy, .. } => live.retain(|&c| c != copy),
                        _ => {}
                    }
                }
            };
        let steps = call.handle(CallInput::Start, at(t0));
        apply(&steps, t0, &mut sent, &mut live, &mut due);
        while !call.is_over() {
            let answer = live
                .iter()
                .map(|&c| {
                    (answer_at(sent.iter().find(|s| s.0 == c).unwrap().1, by_copy(c)["outcome"].as_str().unwrap()), c)
                })
                .min();
            let (when, copy) = answer.unwrap_or((NEVER, 0));
            let next_due = due.unwrap_or(NEVER);
            assert!(when != NEVER || next_due != NEVER, "intent {intent}: stuck with copies {live:?}");
            if next_due < when {
                due = None;
                let steps = call.handle(CallInput::Timer, at(next_due));
                apply(&steps, next_due, &mut sent, &mut live, &mut due);
                continue;
            }
            live.retain(|&c| c != copy);
            let o = if by_copy(copy)["outcome"] == "ok" { Outcome::Ok } else { Outcome::Status(503) };
            let steps = call.handle(CallInput::Answer { copy, outcome: o, retry_after: None }, at(when));
            let level = shared.budget_level().unwrap();
            let fatal = steps.iter().any(|s| matches!(s, CallAction::Finish(Err(r)) if r.label() == "not_retryable"));
            let label = match steps.iter().find(|s| matches!(s, CallAction::Finish(_))) {
                Some(CallAction::Finish(Ok(()))) => "done".to_string(),
                _ if fatal => "not_retryable".to_string(),
                _ => "hedge".to_string(),
            };
            replayed.push((copy, label, level));
            for s in &steps {
                if let CallAction::Abandon { copy: c, cancel: true } = s {
                    replayed.push((*c, "cancelled".into(), level));
                }
            }
            apply(&steps, when, &mut sent, &mut live, &mut due);
        }
        assert_eq!(replayed.len(), rows.len(), "intent {intent}: {replayed:?} vs {rows:?}");
        for ((copy, decision, level), r) in replayed.iter().zip(rows.iter()) {
            assert_eq!(r["copy"], *copy, "intent {intent}: {replayed:?} vs {rows:?}");
            assert_eq!(r["decision"], decision.as_str(), "intent {intent} copy {copy}: {r}");
            let budget = r["budget"].as_f64().unwrap();
            assert!((budget - level).abs() < 1e-9, "intent {intent} copy {copy}: budget {level} vs {r}");
            let t = sent.iter().find(|(c, _)| c == copy).expect("sent").1;
            assert_eq!(ns(r["t_s"].as_f64().unwrap()), t, "intent {intent} copy {copy}: sent at");
        }
        checked += rows.len();
    }
    assert!(checked > 50, "{checked} copies replayed");
}
