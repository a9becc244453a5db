//! `examples/reqwest_client.rs` against a scripted HTTP server on
//! 127.0.0.1, under the shipped tuned policy `policies/tuned-example.toml`
//! (3 attempts, 1 s per try, retry on connect errors, timeouts and 503,
//! Retry-After respected, exponential backoff from 250 ms with full
//! jitter). The layer is seeded, so the waits it must ask for follow from
//! the full-jitter formula `U(0, min(cap, base * 2^(n-1)))` with the draws of
//! `SplitMix::new(SEED)`, one per failed attempt; the test checks those
//! waits to the nanosecond, the attempts the server saw, that the waits
//! were kept on the wall clock (never shorter, at most 500 ms longer on a
//! loaded machine), and what the caller finally got.

#[allow(dead_code)]
#[path = "../examples/reqwest_client.rs"]
mod example;
#[path = "support/http_script.rs"]
mod http_script;
#[path = "support/kept_waits.rs"]
mod kept_waits;
#[path = "support/recorded_sleep.rs"]
mod recorded_sleep;
#[path = "support/served.rs"]
mod served;

use http_script::{Answer, Script};
use kept_waits::{TOLERANCE_S, assert_kept, draws};
use recorded_sleep::Sleeps;
use retrysim_policy::Policy;
use retrysim_policy::tower::{RetryFailure, RetryLayer};
use std::time::Duration;
use tower::{Service, ServiceExt};

const SEED: u64 = 2026;

fn tuned() -> Policy {
    kept_waits::shipped("tuned-example.toml")
}

/// The full-jitter waits of retries 1..=n: `u_k * 250 ms * 2^(k-1)`.
fn jittered(n: u32) -> Vec<Duration> {
    let u = draws(SEED, n as usize);
    u.iter().zip(0..).map(|(u, k)| Duration::from_nanos((u * 250e6 * 2f64.powi(k)).round() as u64)).collect()
}

/// Runs one GET of `url` through the example's client with recorded sleeps.
async fn get_url(url: &str) -> (Result<reqwest::Response, RetryFailure<reqwest::Error>>, Sleeps) {
    let sleeps = Sleeps::default();
    let layer = RetryLayer::new(tuned(), example::classify as example::Classify, sleeps.sleep()).seeded(SEED);
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let mut client = example::client(layer, http);
    let answer = client.ready().await.unwrap().call(example::get(url).unwrap()).await;
    (answer, sleeps)
}

/// Runs one GET of the script's server.
async fn get(script: &Script) -> (Result<reqwest::Response, String>, Sleeps) {
    let (answer, sleeps) = get_url(&script.url()).await;
    (answer.map_err(|e| e.to_string()), sleeps)
}

#[tokio::test]
async fn a_503_then_a_retry_after_then_success_takes_three_attempts_and_the_policys_waits() {
    let script = Script::start(vec![
        Answer::status(503, &[], "busy"),
        Answer::status(503, &["Retry-After: 1"], "busy"),
        Answer::status(200, &[], "ok"),
    ]);
    let (answer, sleeps) = get(&script).await;
    let response = answer.expect("a response");
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "ok");
    assert_eq!(script.served().len(), 3, "three attempts");

    // Each attempt raced its 1 s per-try timeout; the first retry waited its
    // full jitter, the second what Retry-After said (not its backoff).
    let w1 = jittered(1)[0];
    assert!(w1 <= Duration::from_millis(250), "{w1:?}");
    let second = Duration::from_secs(1);
    let per_try = Duration::from_secs(1);
    assert_eq!(sleeps.asked(), [per_try, w1, per_try, second, per_try]);
    assert_kept(&script.gaps(), &[w1, second]);
}

#[tokio::test]
async fn an_attempt_past_its_per_try_timeout_is_abandoned_and_retried() {
    let script = Script::start(vec![
        Answer::status(200, &[], "too late").after(Duration::from_secs(3)),
        Answer::status(200, &[], "ok"),
    ]);
    let (answer, sleeps) = get(&script).await;
    let response = answer.expect("a response");
    assert_eq!(response.text().await.unwrap(), "ok", "the second attempt's answer");
    let w1 = jittered(1)[0];
    assert_eq!(sleeps.asked(), [Duration::from_secs(1), w1, Duration::from_secs(1)]);
    // The first attempt was given up at 1 s, then the retry waited w1.
    let served = script.served();
    assert_eq!(served.len(), 2);
    let between = (served[1].arrived - served[0].arrived).as_secs_f64();
    let expected = 1.0 + w1.as_secs_f64();
    // Arrivals are stamped when the server thread reads them: on a loaded
    // machine the first can be stamped a few milliseconds after the client
    // sent it (and started its per-try timeout), which shortens this gap.
    const FIRST_STAMP_SLACK_S: f64 = 0.050;
    assert!(
        between >= expected - FIRST_STAMP_SLACK_S && between <= expected + TOLERANCE_S,
        "{between} s, expected {expected} s"
    );
}

#[tokio::test]
async fn when_attempts_run_out_the_caller_gets_the_last_503() {
    let script = Script::start(vec![
        Answer::status(503, &[], "busy 1"),
        Answer::status(503, &[], "busy 2"),
        Answer::status(503, &[], "busy 3"),
    ]);
    let (answer, sleeps) = get(&script).await;
    let response = answer.expect("the last response, as it was");
    assert_eq!(response.status(), 503);
    assert_eq!(response.text().await.unwrap(), "busy 3");
    assert_eq!(script.served().len(), 3, "max_attempts = 3");
    let waits = jittered(2);
    let per_try = Duration::from_secs(1);
    assert_eq!(sleeps.asked(), [per_try, waits[0], per_try, waits[1], per_try]);
    assert_kept(&script.gaps(), &waits);
}

#[tokio::test]
async fn a_status_outside_retry_on_is_not_retried() {
    let script = Script::start(vec![Answer::status(500, &[], "broken"), Answer::status(200, &[], "ok")]);
    let (answer, sleeps) = get(&script).await;
    assert_eq!(answer.expect("a response").status(), 500);
    assert_eq!(script.served().len(), 1);
    assert_eq!(sleeps.asked(), [Duration::from_secs(1)], "only the first attempt's timeout");
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_and_is_retried_until_attempts_run_out() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (answer, sleeps) = get_url(&format!("http://127.0.0.1:{port}/")).await;
    let err = answer.expect_err("no server");
    assert!(matches!(err, RetryFailure::Inner(ref e) if e.is_connect()), "{err}");
    let waits = jittered(2);
    let per_try = Duration::from_secs(1);
    assert_eq!(sleeps.asked(), [per_try, waits[0], per_try, waits[1], per_try]);
}
