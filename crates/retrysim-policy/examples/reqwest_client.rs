//! An async reqwest client under a policy file: the crate's tower layer
//! retries each request as the policy decides — which outcomes, how many
//! attempts, each attempt's timeout, the backoff and jitter, the server's
//! Retry-After, and the budget and breaker that all requests of the client
//! share.
//!
//! ```sh
//! cargo run -p retrysim-policy --features tower --example reqwest_client -- \
//!     policies/tuned-example.toml http://127.0.0.1:8080/
//! ```
//!
//! Any policy file works, for instance one that `retrysim tune --emit`
//! wrote. The program prints the final status and body; it exits 1 when no
//! response came back and 2 when the policy file is bad.
//! `tests/reqwest_client.rs` runs this client against a scripted server.

use bytes::Bytes;
use retrysim_policy::tower::{BoxFuture, RetryFailure, RetryLayer};
use retrysim_policy::{Outcome, Policy};
use std::time::Duration;
use tower::{Service, ServiceBuilder, ServiceExt};

/// The request each attempt sends again: an `http::Request` with its body
/// in memory clones, where a `reqwest::Request` does not.
pub type Request = http::Request<Bytes>;

/// What one attempt came back with.
pub type Answer = Result<reqwest::Response, reqwest::Error>;

/// The classifier the layer takes.
pub type Classify = fn(&Answer) -> (Outcome, Option<Duration>);

/// The policy's outcome of one attempt and the server's Retry-After.
pub fn classify(answer: &Answer) -> (Outcome, Option<Duration>) {
    match answer {
        Ok(r) if r.status().is_success() => (Outcome::Ok, None),
        Ok(r) => (Outcome::Status(r.status().as_u16()), retry_after(r.headers())),
        Err(e) if e.is_connect() => (Outcome::ConnectError, None),
        Err(e) if e.is_timeout() => (Outcome::Timeout, None),
        Err(_) => (Outcome::Reset, None),
    }
}

/// `Retry-After` in seconds. An HTTP date is not read: the backoff applies.
fn retry_after(headers: &http::HeaderMap) -> Option<Duration> {
    let value = headers.get(http::header::RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

/// Waits on tokio's timer.
pub fn sleep(d: Duration) -> BoxFuture<()> {
    Box::pin(tokio::time::sleep(d))
}

/// The layer for `policy`, on tokio's timer.
pub fn layer(policy: Policy) -> RetryLayer<Classify, fn(Duration) -> BoxFuture<()>> {
    RetryLayer::new(policy, classify as Classify, sleep as fn(Duration) -> BoxFuture<()>)
}

/// `http` retried by `layer`. Clone the service into every task: the
/// clones share the layer's budget and breaker.
pub fn client<Z>(
    layer: RetryLayer<Classify, Z>,
    http: reqwest::Client,
) -> impl Service<Request, Response = reqwest::Response, Error = RetryFailure<reqwest::Error>, Future: Send> + Clone + Send
where
    Z: Fn(Duration) -> BoxFuture<()> + Clone + Send + 'static,
{
    let send = tower::service_fn(move |req: Request| {
        let http = http.clone();
        async move { http.execute(reqwest::Request::try_from(req)?).await }
    });
    ServiceBuilder::new().layer(layer).service(send)
}

/// A GET of `url`.
pub fn get(url: &str) -> Result<Request, http::Error> {
    http::Request::get(url).body(Bytes::new())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(url)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: reqwest_client POLICY.toml URL");
        std::process::exit(2);
    };
    let policy = Policy::load(path.as_ref()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let request = get(url).unwrap_or_else(|e| {
        eprintln!("{url}: {e}");
        std::process::exit(2);
    });
    let mut client = client(layer(policy), reqwest::Client::new());
    let answer = match client.ready().await {
        Ok(ready) => ready.call(request).await,
        Err(e) => Err(e),
    };
    match answer {
        Ok(response) => {
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            println!("{status}\n{body}");
        }
        Err(e) => {
            eprintln!("{url}: {e}");
            std::process::exit(1);
        }
    }
}
