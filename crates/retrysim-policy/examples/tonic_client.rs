//! A tonic gRPC client under a policy file: the crate's tower layer around
//! a tonic `Channel`, so every unary call of a generated client is retried
//! as the policy decides. The client here is `grpc.health.v1.Health` (the
//! code `tonic-health` ships, so no protoc is needed); any generated client
//! takes the same stack.
//!
//! ```sh
//! cargo run -p retrysim-policy --features tower --example tonic_client -- \
//!     policies/grpc-default.toml http://127.0.0.1:50051
//! ```
//!
//! The stack, from the generated client down:
//! - [`Collect`] reads the request body (the encoded message of a unary
//!   call) into memory, so that each attempt can send it again;
//! - the [`RetryLayer`], with [`classify`] naming each attempt's outcome
//!   from its `grpc-status` and the server's `grpc-retry-pushback-ms`;
//! - [`ToChannel`] hands each attempt to the `Channel`.
//!
//! gRPC status codes become the policy's HTTP-like outcomes by the mapping
//! of `google.rpc.Code` (UNAVAILABLE → 503, RESOURCE_EXHAUSTED → 429,
//! DEADLINE_EXCEEDED → 504, INTERNAL → 500, …), which is how the gRPC
//! presets under `policies/` write their `retry_on`: `grpc-default.toml`
//! retries UNAVAILABLE as `"503"`. Streaming calls should not go through
//! this stack: their bodies would be read whole before the first attempt.
//! `tests/tonic_client.rs` runs this client against a scripted server.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use retrysim_policy::tower::{BoxFuture, RetryFailure, RetryLayer};
use retrysim_policy::{Outcome, Policy};
use std::task::{Context, Poll};
use std::time::Duration;
use tonic::Code;
use tonic::body::Body;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tower::{Service, ServiceBuilder, ServiceExt};

/// A boxed error, as tonic takes them.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What one attempt came back with.
pub type Answer = Result<http::Response<Body>, tonic::transport::Error>;

/// The classifier the layer takes.
pub type Classify = fn(&Answer) -> (Outcome, Option<Duration>);

/// The HTTP-like status of a gRPC code (`google.rpc.Code`'s mapping).
pub fn http_status(code: Code) -> u16 {
    match code {
        Code::Ok => 200,
        Code::Cancelled => 499,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => 400,
        Code::Unauthenticated => 401,
        Code::PermissionDenied => 403,
        Code::NotFound => 404,
        Code::AlreadyExists | Code::Aborted => 409,
        Code::ResourceExhausted => 429,
        Code::Unimplemented => 501,
        Code::Unavailable => 503,
        Code::DeadlineExceeded => 504,
        Code::Unknown | Code::Internal | Code::DataLoss => 500,
    }
}

/// The policy's outcome of one attempt and the server's pushback. A gRPC
/// error answer carries its `grpc-status` in the response headers (a
/// "trailers-only" response); an answer without one is a success whose
/// status follows in the trailers. An answer that is not HTTP 200 came
/// from something other than a gRPC server (a proxy) and keeps its status.
pub fn classify(answer: &Answer) -> (Outcome, Option<Duration>) {
    match answer {
        Ok(r) if r.status() != http::StatusCode::OK => (Outcome::Status(r.status().as_u16()), None),
        Ok(r) => {
            let code = r.headers().get("grpc-status").and_then(|v| v.to_str().ok()?.parse::<i32>().ok());
            match code.map(Code::from_i32) {
                None | Some(Code::Ok) => (Outcome::Ok, None),
                Some(code) => (Outcome::Status(http_status(code)), pushback(r.headers())),
            }
        }
        Err(e) if refused(e) => (Outcome::ConnectError, None),
        Err(_) => (Outcome::Reset, None),
    }
}

/// `grpc-retry-pushback-ms` (gRFC A6): the server's Retry-After.
fn pushback(headers: &http::HeaderMap) -> Option<Duration> {
    let ms = headers.get("grpc-retry-pushback-ms")?.to_str().ok()?.trim().parse::<u64>().ok()?;
    Some(Duration::from_millis(ms))
}

/// Whether the channel could not connect: an I/O error that proves the
/// request was never sent.
fn refused(e: &tonic::transport::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            return matches!(io.kind(), ConnectionRefused | AddrNotAvailable | HostUnreachable | NetworkUnreachable);
        }
        source = err.source();
    }
    false
}

/// Waits on tokio's timer.
pub fn sleep(d: Duration) -> BoxFuture<()> {
    Box::pin(tokio::time::sleep(d))
}

/// The layer for `policy`, on tokio's timer.
pub fn layer(policy: Policy) -> RetryLayer<Classify, fn(Duration) -> BoxFuture<()>> {
    RetryLayer::new(policy, classify as Classify, sleep as fn(Duration) -> BoxFuture<()>)
}

/// The bottom of the stack: an attempt's request, body in memory, to the channel.
#[derive(Clone)]
pub struct ToChannel(pub Channel);

impl Service<http::Request<Bytes>> for ToChannel {
    type Response = http::Response<Body>;
    type Error = tonic::transport::Error;
    type Future = <Channel as Service<http::Request<Body>>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Bytes>) -> Self::Future {
        self.0.call(req.map(|bytes| Body::new(Full::new(bytes))))
    }
}

/// The top of the stack: reads the call's request body into memory and
/// passes the request, which now clones, to `S`.
#[derive(Clone)]
pub struct Collect<S>(pub S);

impl<S> Service<http::Request<Body>> for Collect<S>
where
    S: Service<http::Request<Bytes>, Response = http::Response<Body>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
{
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<Result<http::Response<Body>, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // The body must be read first; readiness is awaited in `call`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let inner = self.0.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let bytes = body.collect().await?.to_bytes();
            let req = http::Request::from_parts(parts, bytes);
            inner.oneshot(req).await.map_err(Into::into)
        })
    }
}

/// The retried service under a generated client.
pub type Stack<Z> = Collect<retrysim_policy::tower::Retry<ToChannel, Classify, Z>>;

/// `channel` retried by `layer`, ready for any generated client:
/// `HealthClient::new(stack(layer, channel))`. Clones share the layer's
/// budget and breaker.
pub fn stack<Z>(layer: RetryLayer<Classify, Z>, channel: Channel) -> Stack<Z>
where
    Z: Fn(Duration) -> BoxFuture<()> + Clone + Send + 'static,
{
    Collect(ServiceBuilder::new().layer(layer).service(ToChannel(channel)))
}

/// The error the layer gives when no answer came back, for callers that
/// want to tell it from a gRPC status.
pub fn retry_failure(status: &tonic::Status) -> Option<&RetryFailure<tonic::transport::Error>> {
    std::error::Error::source(status)?.downcast_ref()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(uri)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: tonic_client POLICY.toml URI");
        std::process::exit(2);
    };
    let policy = Policy::load(path.as_ref()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let endpoint = Endpoint::from_shared(uri.clone()).unwrap_or_else(|e| {
        eprintln!("{uri}: {e}");
        std::process::exit(2);
    });
    // Lazy: a refused connection is an attempt's outcome, not a start-up error.
    let mut client = HealthClient::new(stack(layer(policy), endpoint.connect_lazy()));
    match client.check(HealthCheckRequest { service: String::new() }).await {
        Ok(answer) => println!("{:?}", answer.into_inner().status()),
        Err(status) => {
            eprintln!("{uri}: {status}");
            std::process::exit(1);
        }
    }
}
