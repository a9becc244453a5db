//! `HedgeLayer` over a tower `service_fn` whose copies answer after
//! scripted delays, under the shipped `policies/grpc-hedging.toml` (3
//! copies, a 100 ms hedging delay, non-fatal 500 and 503, a 2 s deadline
//! and no per-try timeout, so each copy's timer is the deadline left),
//! `policies/envoy-hedge.toml` (2 copies, 100 ms per try) and an inline
//! policy whose per-try timeout comes before its hedging delay.
//! The recorded sleeps show the delay the layer armed to the nanosecond;
//! the service's own clock shows when each copy went out; a drop flag on
//! each copy's future shows which copies were cancelled.

#[path = "support/recorded_sleep.rs"]
mod recorded_sleep;

use recorded_sleep::Sleeps;
use retrysim_policy::tower::{BoxFuture, HedgeLayer, RetryFailure};
use retrysim_policy::{Outcome, Policy};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tower::{Layer, Service, ServiceExt, service_fn};

const MS: Duration = Duration::from_millis(1);
const DELAY: Duration = Duration::from_millis(100);
const DEADLINE: Duration = Duration::from_secs(2);
/// Timer slack on a loaded machine.
const TOLERANCE: Duration = Duration::from_millis(150);

fn policy(name: &str) -> Policy {
    Policy::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies").join(name)).unwrap()
}

type Classify = fn(&Result<u16, String>) -> (Outcome, Option<Duration>);

fn classify(r: &Result<u16, String>) -> (Outcome, Option<Duration>) {
    match r {
        Ok(200) => (Outcome::Ok, None),
        Ok(s) => (Outcome::Status(*s), None),
        Err(_) => (Outcome::Reset, None),
    }
}

/// Sets its flag when the copy's future is dropped before it answered.
struct DropFlag(Arc<AtomicBool>, bool);

impl Drop for DropFlag {
    fn drop(&mut self) {
        if !self.1 {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

/// What the scripted service saw: when each copy was sent (since the
/// call began) and whether it was dropped unanswered.
#[derive(Default, Clone)]
struct Seen {
    sent: Arc<Mutex<Vec<Duration>>>,
    dropped: Arc<Mutex<Vec<Arc<AtomicBool>>>>,
}

impl Seen {
    fn sent(&self) -> Vec<Duration> {
        self.sent.lock().unwrap().clone()
    }
    fn dropped(&self) -> Vec<bool> {
        self.dropped.lock().unwrap().iter().map(|f| f.load(Ordering::SeqCst)).collect()
    }
}

/// One hedged call whose copy `k` answers `script[k]` (status, after).
async fn call(policy: Policy, script: Vec<(u16, Duration)>) -> (Result<u16, RetryFailure<String>>, Seen, Sleeps) {
    call_leaving(policy, script, false).await
}

/// [`call`], with the layer leaving the copies the policy does not cancel
/// running on tokio when `leave` is set.
async fn call_leaving(
    policy: Policy,
    script: Vec<(u16, Duration)>,
    leave: bool,
) -> (Result<u16, RetryFailure<String>>, Seen, Sleeps) {
    let sleeps = Sleeps::default();
    let seen = Seen::default();
    let start = Instant::now();
    let svc = {
        let seen = seen.clone();
        service_fn(move |_req: &'static str| {
            let k = seen.sent.lock().unwrap().len();
            seen.sent.lock().unwrap().push(start.elapsed());
            let flag = Arc::new(AtomicBool::new(false));
            seen.dropped.lock().unwrap().push(flag.clone());
            let (status, after) = script[k];
            async move {
                let mut guard = DropFlag(flag, false);
                tokio::time::sleep(after).await;
                guard.1 = true;
                Ok::<u16, String>(status)
            }
        })
    };
    let mut layer = HedgeLayer::new(policy, classify as Classify, sleeps.sleep()).expect("a hedging policy").seeded(7);
    if leave {
        layer = layer.leave_running(|f| {
            tokio::spawn(f);
        });
    }
    let mut hedged = layer.layer(svc);
    let answer = hedged.ready().await.unwrap().call("GET /").await;
    (answer, seen, sleeps)
}

fn near(got: Duration, want: Duration) -> bool {
    got >= want.saturating_sub(MS) && got <= want + TOLERANCE
}

#[tokio::test]
async fn a_slow_first_copy_is_hedged_at_the_delay_and_the_fast_second_wins() {
    let (answer, seen, sleeps) = call(policy("grpc-hedging.toml"), vec![(200, 1000 * MS), (200, 10 * MS)]).await;
    assert_eq!(answer, Ok(200));
    let sent = seen.sent();
    assert_eq!(sent.len(), 2, "the second copy answered before a third was due: {sent:?}");
    assert!(near(sent[1], DELAY), "the hedge went out at {:?}", sent[1]);
    assert_eq!(seen.dropped(), [true, false], "the slow first copy was cancelled, the winner answered");
    let asked = sleeps.asked();
    // The first copy's timer (the whole deadline), then the hedging delay
    // exactly, then the second copy's timer (the deadline left) and the
    // delay for a third copy.
    assert_eq!(asked[..2], [DEADLINE, DELAY], "{asked:?}");
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert!(asked[2] < DEADLINE - DELAY + MS && asked[2] > DEADLINE - DELAY - TOLERANCE, "{asked:?}");
    assert_eq!(asked[3], DELAY);
}

#[tokio::test]
async fn a_fast_first_answer_sends_no_second_copy() {
    let (answer, seen, sleeps) = call(policy("grpc-hedging.toml"), vec![(200, 10 * MS), (200, 10 * MS)]).await;
    assert_eq!(answer, Ok(200));
    assert_eq!(seen.sent().len(), 1);
    assert_eq!(seen.dropped(), [false]);
    assert_eq!(sleeps.asked(), [DEADLINE, DELAY], "the delay was armed, never came due");
}

#[tokio::test]
async fn no_more_copies_go_than_the_hedging_max() {
    // Every copy takes 400 ms: copies at 0, 100 and 200 ms, no fourth at
    // 300 ms; the first copy's answer at 400 ms wins and cancels the others.
    let slow = 400 * MS;
    let (answer, seen, sleeps) = call(policy("grpc-hedging.toml"), vec![(200, slow); 4]).await;
    assert_eq!(answer, Ok(200));
    let sent = seen.sent();
    assert_eq!(sent.len(), 3, "[hedging] max_attempts = 3: {sent:?}");
    assert!(near(sent[1], DELAY) && near(sent[2], 2 * DELAY), "{sent:?}");
    assert_eq!(seen.dropped(), [false, true, true]);
    let delays = sleeps.asked().iter().filter(|&&d| d == DELAY).count();
    assert_eq!(delays, 2, "no delay armed after the third copy: {:?}", sleeps.asked());
}

#[tokio::test]
async fn a_fatal_first_answer_ends_the_call_as_it_was() {
    // 404 is not in non_fatal: the call gives up with it, no hedge.
    let (answer, seen, _) = call(policy("grpc-hedging.toml"), vec![(404, 10 * MS), (200, 10 * MS)]).await;
    assert_eq!(answer, Ok(404));
    assert_eq!(seen.sent().len(), 1);
}

#[tokio::test]
async fn a_non_fatal_answer_sends_the_next_copy_at_once() {
    // 503 is non-fatal: the second copy goes at ~10 ms, not at 100 ms, and wins.
    let (answer, seen, _) = call(policy("grpc-hedging.toml"), vec![(503, 10 * MS), (200, 10 * MS)]).await;
    assert_eq!(answer, Ok(200));
    let sent = seen.sent();
    assert_eq!(sent.len(), 2);
    assert!(near(sent[1], 10 * MS) && sent[1] < DELAY, "{sent:?}");
}

#[tokio::test]
async fn when_every_copy_is_non_fatal_the_last_answer_comes_back() {
    let script = vec![(503, 10 * MS), (500, 10 * MS), (503, 10 * MS)];
    let (answer, seen, _) = call(policy("grpc-hedging.toml"), script).await;
    assert_eq!(answer, Ok(503), "the third copy's answer, as it was");
    assert_eq!(seen.sent().len(), 3);
}

#[tokio::test]
async fn a_copy_past_its_per_try_timeout_is_hedged_and_stays_in_the_race() {
    // 2 copies, 100 ms per try, a 300 ms hedging delay. The first copy
    // passes its per-try timeout at 100 ms (the hedge goes then, not at
    // 300 ms), yet answers first at 150 ms and wins; the second is
    // cancelled. (In envoy-hedge.toml the delay and the per-try timeout
    // coincide, and which fires first would decide.)
    let text = "max_attempts = 1\nper_try_timeout = \"100ms\"\n[hedging]\nmax_attempts = 2\ndelay = \"300ms\"\n";
    let p = Policy::from_toml(text, "per-try-hedge").unwrap();
    let (answer, seen, _) = call(p, vec![(200, 150 * MS), (200, 1000 * MS)]).await;
    assert_eq!(answer, Ok(200));
    let sent = seen.sent();
    assert_eq!(sent.len(), 2);
    assert!(near(sent[1], DELAY), "{sent:?}");
    assert_eq!(seen.dropped(), [false, true]);
}

#[tokio::test]
async fn when_every_copy_passes_its_per_try_timeout_the_call_times_out() {
    // envoy-hedge: the second copy's per-try timeout at 200 ms leaves no
    // copy to send, so both are given up (and dropped) without an answer.
    let start = Instant::now();
    let (answer, seen, sleeps) = call(policy("envoy-hedge.toml"), vec![(200, 1000 * MS), (200, 1000 * MS)]).await;
    assert_eq!(answer, Err(RetryFailure::TimedOut));
    assert!(near(start.elapsed(), 2 * DELAY), "{:?}", start.elapsed());
    assert_eq!(seen.dropped(), [true, true]);
    assert_eq!(sleeps.asked(), [DELAY, DELAY, DELAY], "a per-try timer for each copy and one hedging delay");
}

#[tokio::test]
async fn with_cancel_false_and_a_runtime_the_loser_finishes_and_with_cancel_true_it_is_cancelled() {
    // Two copies, a 100 ms hedging delay: the first answers at 300 ms, the
    // second (sent at 100 ms) at 110 ms and wins. With `cancel = false`
    // and a runtime the first goes on to answer (its answer ignored);
    // without a runtime, or with `cancel = true`, it is dropped.
    let text = |cancel: bool| {
        format!(
            "max_attempts = 1\ndeadline = \"2s\"\n[hedging]\nmax_attempts = 2\ndelay = \"100ms\"\ncancel = {cancel}\n"
        )
    };
    let script = vec![(200, 300 * MS), (200, 10 * MS)];
    for (cancel, leave, dropped) in [(false, true, false), (false, false, true), (true, true, true)] {
        let p = Policy::from_toml(&text(cancel), "cancel-or-not").unwrap();
        let (answer, seen, _) = call_leaving(p, script.clone(), leave).await;
        assert_eq!(answer, Ok(200));
        let sent = seen.sent();
        assert!(near(sent[1], DELAY), "{sent:?}");
        tokio::time::sleep(300 * MS).await; // past the first copy's answer
        assert_eq!(seen.dropped(), [dropped, false], "cancel = {cancel}, runtime given: {leave}");
    }
}

#[tokio::test]
async fn copies_given_up_after_their_per_try_timeout_run_on_unless_cancel_on_timeout() {
    // Two copies of 100 ms per try, both answering at 250 ms: both are
    // given up at 200 ms and the call times out. With a runtime they go on
    // to answer, as in the simulator, unless `cancel_on_timeout = true`.
    let text = |cancel: bool| {
        format!(
            "max_attempts = 1\nper_try_timeout = \"100ms\"\ncancel_on_timeout = {cancel}\n\
             [hedging]\nmax_attempts = 2\ndelay = \"100ms\"\n"
        )
    };
    for (cancel, dropped) in [(false, false), (true, true)] {
        let p = Policy::from_toml(&text(cancel), "given-up").unwrap();
        let (answer, seen, _) = call_leaving(p, vec![(200, 250 * MS); 2], true).await;
        assert_eq!(answer, Err(RetryFailure::TimedOut));
        tokio::time::sleep(300 * MS).await; // past both answers
        assert_eq!(seen.dropped(), [dropped, dropped], "cancel_on_timeout = {cancel}");
    }
}

#[test]
fn a_policy_without_hedging_makes_no_hedge_layer() {
    let sleep = |_: Duration| -> BoxFuture<()> { Box::pin(async {}) };
    assert!(HedgeLayer::new(policy("grpc-default.toml"), classify as Classify, sleep).is_none());
}
