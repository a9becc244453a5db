//! `RetryLayer::status_query` under `on_unknown = "query"`: a POST whose
//! answer is a 500 (it may have executed) is followed by the status request
//! the layer was given, not by the POST again; the status answer `200`
//! ends the call with it, `404` sends the POST again. Without a status
//! query the unknown outcome stands, as `give_up` would.

use retrysim_policy::tower::{BoxFuture, RetryLayer};
use retrysim_policy::{OnUnknown, Outcome, Policy};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::{Layer, ServiceExt, service_fn};

/// A request: a POST of an order, or the status request for it.
#[derive(Debug, Clone, PartialEq)]
enum Req {
    Post,
    Status,
}

fn policy() -> Policy {
    Policy::builder()
        .max_attempts(4)
        .per_try_timeout(Duration::from_secs(1))
        .retry_on(["500", "503"])
        .on_unknown(OnUnknown::Query)
        .build()
        .unwrap()
}

fn classify(r: &Result<u16, String>) -> (Outcome, Option<Duration>) {
    match r {
        Ok(200) => (Outcome::Ok, None),
        Ok(s) => (Outcome::Status(*s), None),
        Err(_) => (Outcome::Reset, None),
    }
}

fn no_sleep(_: Duration) -> BoxFuture<()> {
    Box::pin(async {})
}

/// The requests the service saw and the answers it gave, in order.
async fn run(script: Vec<u16>, with_query: bool) -> (Result<u16, String>, Vec<Req>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let answers = Arc::new(Mutex::new(script.into_iter()));
    let svc = {
        let seen = seen.clone();
        service_fn(move |req: Req| {
            seen.lock().unwrap().push(req);
            let status = answers.lock().unwrap().next().expect("a scripted answer");
            async move { Ok::<u16, String>(status) }
        })
    };
    let base = RetryLayer::new(policy(), classify as fn(&Result<u16, String>) -> _, no_sleep as fn(Duration) -> _);
    let result = if with_query {
        let layer = base.status_query(|_: &Req| Req::Status);
        layer.layer(svc).oneshot(Req::Post).await
    } else {
        base.layer(svc).oneshot(Req::Post).await
    };
    let seen = seen.lock().unwrap().clone();
    (result.map_err(|e| format!("{e:?}")), seen)
}

#[tokio::test]
async fn a_500_is_followed_by_the_status_request_and_a_found_order_ends_the_call() {
    let (result, seen) = run(vec![500, 200], true).await;
    assert_eq!(result, Ok(200));
    assert_eq!(seen, [Req::Post, Req::Status], "the POST is not sent again");
}

#[tokio::test]
async fn not_found_sends_the_post_again_and_a_failed_status_request_is_asked_again() {
    let (result, seen) = run(vec![500, 503, 404, 200], true).await;
    assert_eq!(result, Ok(200));
    assert_eq!(seen, [Req::Post, Req::Status, Req::Status, Req::Post]);
}

#[tokio::test]
async fn without_a_status_query_the_unknown_outcome_stands() {
    let (result, seen) = run(vec![500], false).await;
    assert_eq!(result, Ok(500), "the 500 response, as it came");
    assert_eq!(seen, [Req::Post]);
}
