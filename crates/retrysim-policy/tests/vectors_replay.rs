//! The crate's own API replays every vector under `sdk/vectors/`, the way
//! an SDK would: load each case's policy, feed each step's recorded draw,
//! and compare the admissions, decisions, waits and reasons (the state
//! snapshots are compared by `tests/it/sdk_vectors.rs` through the generator
//! and by the Python implementation).

use retrysim_policy::hedged::{Sent, Step};
use retrysim_policy::{Admit, Decision, DenyReason, HedgedState, Outcome, Policy, RetryState, Shared};
use serde_json::Value;
use std::cell::Cell;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

fn outcome(text: &str) -> Outcome {
    match text {
        "ok" => Outcome::Ok,
        "connect_error" => Outcome::ConnectError,
        "timeout" => Outcome::Timeout,
        "reset" => Outcome::Reset,
        code => Outcome::Status(code.parse().expect("a status code")),
    }
}

/// Draws taken from the step being replayed; `NaN` once taken.
#[derive(Clone)]
struct Tape(Rc<Cell<f64>>);

impl retrysim_policy::Random for Tape {
    fn unit(&mut self) -> f64 {
        let u = self.0.get();
        assert!(!u.is_nan(), "a draw the vector does not give");
        self.0.set(f64::NAN);
        u
    }
}

/// The vectors' times are nanoseconds from an origin; the API's are instants.
fn at(origin: Instant, ns: u64) -> Instant {
    origin + Duration::from_nanos(ns)
}

/// A duration as the vectors write it: nanoseconds.
fn ns(d: Duration) -> Value {
    u64::try_from(d.as_nanos()).expect("a duration the vectors can hold").into()
}

/// An optional duration as the vectors write it: nanoseconds, or null for none.
fn opt(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, ns)
}

fn due(st: &HedgedState<Tape>) -> Value {
    opt(st.hedge_due_at().map(|t| t.duration_since(st.shared().origin())))
}

fn hedge(h: &Option<Result<Sent, DenyReason>>) -> Value {
    match h {
        None => Value::Null,
        Some(Ok(s)) => serde_json::json!({ "copy": s.copy, "timeout": opt(s.timeout) }),
        Some(Err(r)) => serde_json::json!({ "refused": r.label() }),
    }
}

fn step_json(s: &Step, st: &HedgedState<Tape>) -> Value {
    let mut v = serde_json::json!({
        "end": match s.end { None => Value::Null, Some(Decision::Done) => "done".into(), Some(_) => "give_up".into() },
        "hedge": hedge(&s.hedge), "given_up": s.given_up, "cancel": s.cancel, "hedge_due": due(st),
    });
    if let Some(Decision::GiveUp(r)) = s.end {
        v["reason"] = r.label().into();
    }
    v
}

/// What the hedging delay's end gives: a copy sent, or why none was.
fn due_json(sent: &Result<Sent, DenyReason>, st: &HedgedState<Tape>) -> Value {
    serde_json::json!({
        "end": Value::Null, "hedge": hedge(&Some(*sent)), "given_up": [], "cancel": [], "hedge_due": due(st),
    })
}

/// A hedged case (`"runtime": "hedged"`) through `HedgedState`.
fn replay_hedged(case: &Value) -> Result<usize, String> {
    let policy = Policy::from_toml(case["policy"].as_str().unwrap(), "case").map_err(|e| e.to_string())?;
    let origin = Instant::now();
    let shared = Shared::with_origin(policy, origin);
    let tape = Tape(Rc::new(Cell::new(f64::NAN)));
    let mut calls: Vec<HedgedState<Tape>> = Vec::new();
    let steps = case["steps"].as_array().unwrap();
    for (n, step) in steps.iter().enumerate() {
        let now = at(origin, step["now"].as_u64().unwrap());
        tape.0.set(step["draw"].as_f64().unwrap_or(f64::NAN));
        let copy = step["copy"].as_u64().unwrap_or(0) as u32;
        let got = match step["op"].as_str().unwrap() {
            "start" => {
                calls.push(HedgedState::new(shared.clone(), now, tape.clone()).ok_or("a hedged policy")?);
                continue;
            }
            op => {
                let st = &mut calls[step["call"].as_u64().unwrap() as usize];
                match op {
                    "before_attempt" => match st.before_first(now) {
                        Ok(Admit::Send { timeout }) => {
                            serde_json::json!({ "admit": "send", "timeout": opt(timeout), "hedge_due": due(st) })
                        }
                        Ok(Admit::Wait(w)) => serde_json::json!({ "admit": "wait", "wait": ns(w) }),
                        Ok(other) => return Err(format!("step {n}: an admission the vectors lack: {other:?}")),
                        Err(r) => serde_json::json!({ "admit": "refuse", "reason": r.label() }),
                    },
                    "hedge_due" => {
                        let sent = st.on_hedge_due(now);
                        due_json(&sent, st)
                    }
                    "copy_outcome" => {
                        let s = st.on_copy_outcome(copy, outcome(step["outcome"].as_str().unwrap()), now);
                        step_json(&s, st)
                    }
                    "copy_expired" => {
                        let s = st.on_copy_expired(copy, now);
                        step_json(&s, st)
                    }
                    other => return Err(format!("step {n}: unknown op {other}")),
                }
            }
        };
        if got != step["expect"] {
            return Err(format!("step {n}: got {got}, expected {}", step["expect"]));
        }
        if !tape.0.get().is_nan() {
            return Err(format!("step {n}: the draw {} was not consumed", tape.0.get()));
        }
    }
    Ok(steps.len())
}

fn replay(case: &Value) -> Result<usize, String> {
    if case["runtime"] == "hedged" {
        return replay_hedged(case);
    }
    let policy = Policy::from_toml(case["policy"].as_str().unwrap(), "case").map_err(|e| e.to_string())?;
    let origin = Instant::now();
    let shared = Shared::with_origin(policy, origin);
    let tape = Tape(Rc::new(Cell::new(f64::NAN)));
    let mut calls: Vec<RetryState<Tape>> = Vec::new();
    let steps = case["steps"].as_array().unwrap();
    for (n, step) in steps.iter().enumerate() {
        let now = at(origin, step["now"].as_u64().unwrap());
        tape.0.set(step["draw"].as_f64().unwrap_or(f64::NAN));
        let got = match step["op"].as_str().unwrap() {
            "start" => {
                let st = RetryState::new(shared.clone(), now, tape.clone())
                    .operation(step["idempotent"].as_bool().unwrap(), step["key_sent"].as_bool().unwrap());
                calls.push(st);
                continue;
            }
            "before_attempt" => match calls[step["call"].as_u64().unwrap() as usize].before_attempt(now) {
                Ok(Admit::Send { timeout }) => serde_json::json!({ "admit": "send", "timeout": opt(timeout) }),
                Ok(Admit::Query { timeout }) => serde_json::json!({ "admit": "query", "timeout": opt(timeout) }),
                Ok(Admit::Wait(w)) => serde_json::json!({ "admit": "wait", "wait": ns(w) }),
                Ok(other) => return Err(format!("step {n}: an admission the vectors lack: {other:?}")),
                Err(r) => serde_json::json!({ "admit": "refuse", "reason": r.label() }),
            },
            _ => {
                let o = outcome(step["outcome"].as_str().unwrap());
                let ra = step["retry_after"].as_u64().map(Duration::from_nanos);
                match calls[step["call"].as_u64().unwrap() as usize].after_outcome(o, now, ra) {
                    Decision::Done => serde_json::json!({ "decision": "done" }),
                    Decision::Retry { wait } => serde_json::json!({ "decision": "retry", "wait": ns(wait) }),
                    Decision::GiveUp(r) => serde_json::json!({ "decision": "give_up", "reason": r.label() }),
                    other => return Err(format!("step {n}: a decision the vectors lack: {other:?}")),
                }
            }
        };
        if got != step["expect"] {
            return Err(format!("step {n}: got {got}, expected {}", step["expect"]));
        }
        if !tape.0.get().is_nan() {
            return Err(format!("step {n}: the draw {} was not consumed", tape.0.get()));
        }
    }
    Ok(steps.len())
}

#[test]
fn every_vector_replays_through_the_public_api() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk/vectors");
    let mut files = 0;
    let mut steps = 0;
    let mut hedged = 0;
    for entry in std::fs::read_dir(&dir).expect("sdk/vectors/") {
        let path = entry.unwrap().path();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(doc["schema"], "retrysim.vectors/1");
        for case in doc["cases"].as_array().unwrap() {
            hedged += usize::from(case["runtime"] == "hedged");
            steps += replay(case).unwrap_or_else(|e| panic!("{}: {}: {e}", path.display(), case["name"]));
        }
        files += 1;
    }
    assert!(files >= 18, "{files} files");
    assert!(steps > 5000, "{steps} steps");
    assert!(hedged >= 9 * files, "{hedged} hedged cases in {files} files");
}
