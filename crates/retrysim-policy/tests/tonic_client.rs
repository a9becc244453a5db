//! `examples/tonic_client.rs` against a scripted gRPC health server on
//! 127.0.0.1, under the shipped preset `policies/grpc-default.toml` (gRFC
//! A6's example: 4 attempts, UNAVAILABLE retried as "503", exponential
//! backoff 100 ms ×2 capped at 1 s with proportional jitter ±20%, pushback
//! obeyed, a token bucket of 10 tokens, +0.1 per success, -1 per retryable
//! failure, retries only while more than 5 are left, a 5 s deadline). The
//! layer is seeded, so the waits it must ask for follow from the backoff
//! formula `min(1 s, 100 ms * 2^(n-1)) * (0.8 + 0.4 u_n)` with the draws of
//! `SplitMix::new(SEED)`, one per failed attempt; the test checks those
//! waits to the nanosecond, the attempts the server saw, that the waits
//! were kept on the wall clock (never shorter, at most 500 ms longer on a
//! loaded machine), the budget the calls share and what the caller got.

#[allow(dead_code)]
#[path = "../examples/tonic_client.rs"]
mod example;
#[path = "support/grpc_script.rs"]
mod grpc_script;
#[path = "support/kept_waits.rs"]
mod kept_waits;
#[path = "support/recorded_sleep.rs"]
mod recorded_sleep;
#[path = "support/served.rs"]
mod served;

use grpc_script::{Reply, Script};
use kept_waits::{assert_kept, draws};
use recorded_sleep::Sleeps;
use retrysim_policy::Policy;
use retrysim_policy::tower::RetryLayer;
use std::time::Duration;
use tonic::Code;
use tonic::transport::Endpoint;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

const SEED: u64 = 14;

fn grpc_default() -> Policy {
    kept_waits::shipped("grpc-default.toml")
}

/// The backoff of retry `n` (1-based) for draw `u`.
fn backoff(n: u32, u: f64) -> Duration {
    let limit = (100e6 * 2f64.powi(n as i32 - 1)).min(1e9);
    Duration::from_nanos((limit * (0.8 + 0.4 * u)).round() as u64)
}

fn client(
    script: &Script,
    layer: RetryLayer<
        example::Classify,
        impl Fn(Duration) -> retrysim_policy::tower::BoxFuture<()> + Clone + Send + 'static,
    >,
) -> HealthClient<
    impl tonic::client::GrpcService<tonic::body::Body, ResponseBody = tonic::body::Body, Error = example::BoxError>,
> {
    let channel = Endpoint::from_shared(script.uri()).unwrap().connect_lazy();
    HealthClient::new(example::stack(layer, channel))
}

fn check() -> HealthCheckRequest {
    HealthCheckRequest { service: String::new() }
}

/// The waits the policy asked for: every second sleep (the first of each
/// pair is the attempt's timeout, the deadline left).
fn waits(asked: &[Duration]) -> Vec<Duration> {
    asked.iter().skip(1).step_by(2).copied().collect()
}

#[tokio::test]
async fn unavailable_then_pushback_then_ok_takes_three_attempts_and_the_policys_waits() {
    let script = Script::start(vec![Reply::Fail(Code::Unavailable), Reply::Pushback(300), Reply::Serving]).await;
    let sleeps = Sleeps::default();
    let layer = RetryLayer::new(grpc_default(), example::classify as example::Classify, sleeps.sleep()).seeded(SEED);
    let shared = layer.shared().clone();
    let mut client = client(&script, layer);
    let answer = client.check(check()).await.expect("SERVING after two retries");
    assert_eq!(answer.into_inner().status(), ServingStatus::Serving);
    assert_eq!(script.log.served().len(), 3, "three attempts");

    let asked = sleeps.asked();
    assert_eq!(asked.len(), 5, "three attempts' timeouts and two waits: {asked:?}");
    let u = draws(SEED, 1);
    let expected = [backoff(1, u[0]), Duration::from_millis(300)];
    assert_eq!(waits(&asked), expected, "the first retry's jittered backoff, then the pushback");
    assert!((Duration::from_millis(80)..=Duration::from_millis(120)).contains(&expected[0]));
    // No per-try timeout: each attempt may use what is left of the 5 s deadline.
    let timeouts: Vec<Duration> = asked.iter().step_by(2).copied().collect();
    assert!(timeouts[0] <= Duration::from_secs(5) && timeouts[0] > Duration::from_millis(4900), "{timeouts:?}");
    assert!(timeouts.windows(2).all(|w| w[1] < w[0]), "the deadline shrinks: {timeouts:?}");
    assert_kept(&script.log.gaps(), &expected);
    // Two retryable failures and one success: 10 - 2 + 0.1 tokens.
    assert!((shared.budget_level().unwrap() - 8.1).abs() < 1e-9, "{:?}", shared.budget_level());
}

#[tokio::test]
async fn a_status_outside_retry_on_reaches_the_caller_after_one_attempt() {
    let script = Script::start(vec![Reply::Fail(Code::Internal), Reply::Serving]).await;
    let sleeps = Sleeps::default();
    let layer = RetryLayer::new(grpc_default(), example::classify as example::Classify, sleeps.sleep()).seeded(SEED);
    let status = client(&script, layer).check(check()).await.expect_err("INTERNAL is not retried");
    assert_eq!(status.code(), Code::Internal);
    assert_eq!(script.log.served().len(), 1);
    assert_eq!(sleeps.asked().len(), 1, "only the first attempt's timeout");
}

#[tokio::test]
async fn the_token_bucket_is_shared_by_the_calls_of_one_client_and_stops_retries_at_half() {
    // Call 1: four UNAVAILABLE (max_attempts), 10 -> 6 tokens. Call 2: one
    // UNAVAILABLE, 6 -> 5 tokens, not more than 5 left: no retry.
    let script = Script::start(vec![Reply::Fail(Code::Unavailable); 5]).await;
    let sleeps = Sleeps::default();
    let layer = RetryLayer::new(grpc_default(), example::classify as example::Classify, sleeps.sleep()).seeded(SEED);
    let shared = layer.shared().clone();
    let mut client = client(&script, layer);

    let first = client.check(check()).await.expect_err("UNAVAILABLE after max_attempts");
    assert_eq!(first.code(), Code::Unavailable);
    assert_eq!(script.log.served().len(), 4, "max_attempts = 4");
    let u = draws(SEED, 3);
    let expected: Vec<Duration> = (1..=3).map(|n| backoff(n, u[n as usize - 1])).collect();
    let asked = sleeps.asked();
    assert_eq!(waits(&asked), expected);
    assert_kept(&script.log.gaps(), &expected);
    assert!((shared.budget_level().unwrap() - 6.0).abs() < 1e-9, "{:?}", shared.budget_level());

    let second = client.check(check()).await.expect_err("the budget refuses the retry");
    assert_eq!(second.code(), Code::Unavailable);
    assert_eq!(script.log.served().len(), 5, "one attempt only");
    assert_eq!(sleeps.asked().len(), asked.len() + 1, "the second call's timeout, no wait");
    assert!((shared.budget_level().unwrap() - 5.0).abs() < 1e-9, "{:?}", shared.budget_level());
}
