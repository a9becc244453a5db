//! The runtime's `RetryState` takes the decisions the simulator took: one
//! client instance sends intents one after another to a service that
//! answers 503 to 60% of attempts, under a policy with a token bucket and a
//! retries-only breaker; replaying the simulator's `--trace` (send times and
//! outcomes) through one `Shared` and a `RetryState` per intent gives the
//! same decision, wait and budget level after every attempt; so does the
//! public sans-IO `Call`, the machine both run.

use crate::support::simulator_trace;

use retrysim_policy::{Admit, Decision, Outcome, Policy, RetryState, Shared, SplitMix};
use simulator_trace::{MS, ONE_AFTER_ANOTHER, ns, random_503};

const POLICY: &str = r#"name = "p"
max_attempts = 4
per_try_timeout = "300ms"
retry_on = ["connect_error", "timeout", "503"]

[backoff]
kind = "exponential"
base = "10ms"
cap = "100ms"

[budget]
kind = "token_bucket"
max_tokens = 6
token_ratio = 0.5

[circuit_breaker]
kind = "consecutive"
retries_only = true
consecutive_failures = 3
open_for = "100ms"
half_open_probes = 1
"#;

/// One client, one worker answering 503 to 60% of attempts.
fn experiment() -> String {
    simulator_trace::OneClient {
        name: "x",
        duration: "3s",
        arrivals: ONE_AFTER_ANOTHER,
        policy: "p.toml",
        workers: 1,
        work: "1ms",
        faults: &random_503(0.6),
    }
    .toml()
}

#[test]
fn replaying_the_trace_gives_the_same_decisions_waits_and_budget() {
    let dir = tempfile::tempdir().unwrap();
    let rows = simulator_trace::run_traced(dir.path(), &[("p.toml", POLICY), ("e.toml", &experiment())], "e.toml");
    let decisions: Vec<&str> = rows.iter().map(|r| r["decision"].as_str().unwrap()).collect();
    for d in ["done", "retry", "budget", "breaker_open"] {
        assert!(decisions.contains(&d), "the script exercises {d}: {decisions:?}");
    }

    let policy = Policy::load(&dir.path().join("p.toml")).unwrap();
    let origin = std::time::Instant::now();
    let at = |t: u64| origin + std::time::Duration::from_nanos(t);
    let shared = Shared::with_origin(policy, origin);
    let mut state: Option<RetryState<SplitMix>> = None;
    for (i, r) in rows.iter().enumerate() {
        let sent = ns(r["t_s"].as_f64().unwrap());
        if r["attempt"] == 1 {
            state = Some(RetryState::new(shared.clone(), at(sent), SplitMix::new(i as u64)));
        }
        let st = state.as_mut().expect("a first attempt starts every intent");
        assert!(matches!(st.before_attempt(at(sent)), Ok(Admit::Send { .. })), "row {i}");
        // 503 is answered on arrival (1 ms each way); a success adds 1 ms of work.
        let (outcome, answered) = match r["outcome"].as_str().unwrap() {
            "ok" => (Outcome::Ok, sent + 3 * MS),
            "503" => (Outcome::Status(503), sent + 2 * MS),
            other => panic!("unexpected outcome {other}"),
        };
        let label = match st.after_outcome(outcome, at(answered), None) {
            Decision::Done => "done".to_string(),
            Decision::Retry { wait } => {
                let next = &rows[i + 1];
                assert_eq!(
                    ns(next["wait_s"].as_f64().unwrap()),
                    wait.as_nanos() as u64,
                    "row {i}: the wait before the retry"
                );
                "retry".to_string()
            }
            Decision::GiveUp(reason) => reason.label().to_string(),
            other => panic!("row {i}: a decision this test does not know: {other:?}"),
        };
        assert_eq!(label, decisions[i], "row {i}: {r}");
        let level = shared.budget_level().unwrap();
        assert!((level - r["budget"].as_f64().unwrap()).abs() < 1e-9, "row {i}: budget {level} vs {r}");
    }
}

/// The same trace through the public sans-IO `Call`: the sends, the waits
/// (as wake-up instants), the ends and the budget after every attempt are
/// the simulator's.
#[test]
fn replaying_the_trace_through_the_call_machine_gives_the_same_sends_waits_and_ends() {
    use retrysim_policy::{Call, CallAction, CallInput};
    let dir = tempfile::tempdir().unwrap();
    let rows = simulator_trace::run_traced(dir.path(), &[("p.toml", POLICY), ("e.toml", &experiment())], "e.toml");
    let decisions: Vec<&str> = rows.iter().map(|r| r["decision"].as_str().unwrap()).collect();
    let policy = Policy::load(&dir.path().join("p.toml")).unwrap();
    let origin = std::time::Instant::now();
    let at = |t: u64| origin + std::time::Duration::from_nanos(t);
    let shared = Shared::with_origin(policy, origin);
    let mut call: Option<Call<SplitMix>> = None;
    // What the previous answer asked for: the next attempt at once, or a wake-up.
    let mut pending: Vec<CallAction> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let sent = ns(r["t_s"].as_f64().unwrap());
        let copy = r["attempt"].as_u64().unwrap() as u32 - 1;
        let send = |steps: &[CallAction]| matches!(steps, [CallAction::Send { copy: c, .. }] if *c == copy);
        if copy == 0 {
            let mut c = Call::new(shared.clone(), SplitMix::new(i as u64));
            let steps = c.handle(CallInput::Start, at(sent));
            assert!(send(&steps), "row {i}: {steps:?}");
            call = Some(c);
        } else if !send(&pending) {
            assert_eq!(pending, [CallAction::WakeAt(at(sent))], "row {i}: the retry is sent when the wait ends");
            let steps = call.as_mut().unwrap().handle(CallInput::Timer, at(sent));
            assert!(send(&steps), "row {i}: {steps:?}");
        }
        let (outcome, answered) = match r["outcome"].as_str().unwrap() {
            "ok" => (Outcome::Ok, sent + 3 * MS),
            "503" => (Outcome::Status(503), sent + 2 * MS),
            other => panic!("unexpected outcome {other}"),
        };
        let c = call.as_mut().expect("a first attempt starts every intent");
        let steps = c.handle(CallInput::Answer { copy, outcome, retry_after: None }, at(answered));
        let label = match steps.as_slice() {
            [CallAction::Finish(Ok(()))] => "done".to_string(),
            [CallAction::Finish(Err(reason))] => reason.label().to_string(),
            [CallAction::Send { .. }] | [CallAction::WakeAt(_)] => "retry".to_string(),
            other => panic!("row {i}: {other:?}"),
        };
        assert_eq!(label, decisions[i], "row {i}: {r}");
        pending = steps;
        let level = shared.budget_level().unwrap();
        assert!((level - r["budget"].as_f64().unwrap()).abs() < 1e-9, "row {i}: budget {level} vs {r}");
    }
}
