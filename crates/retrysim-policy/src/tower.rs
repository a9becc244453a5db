//! Behind the `tower` feature: a [`tower_layer::Layer`] (the trait `tower`
//! re-exports as `tower::Layer`) that retries a [`tower_service::Service`]
//! under a policy, with the decision of [`RetryState`](crate::RetryState), and one that hedges
//! it ([`HedgeLayer`]).
//!
//! The layer does not pick an async runtime: it takes a `sleep` function
//! (with tokio, `|d| Box::pin(tokio::time::sleep(d))`) and a `classify`
//! function that names the outcome of each attempt and the server's
//! Retry-After. Requests are cloned for each attempt; the per-try timeout
//! is raced against the attempt with the same `sleep`. After the last
//! attempt the caller gets that attempt's response or error as it was
//! (a 503 response stays a response).
//!
//! Each call draws its jitter from a fresh [`SplitMix`](crate::SplitMix) seeded from the
//! clock; [`RetryLayer::seeded`] makes the draws reproducible (call `k` of
//! the layer's services seeds with `seed + k`).
//!
//! `examples/reqwest_client.rs` (an HTTP client) and
//! `examples/tonic_client.rs` (a gRPC client around a tonic `Channel`) put
//! the layer to use; the tests of the same names prove them against
//! scripted servers on 127.0.0.1.
//!
//! ```ignore
//! let layer = RetryLayer::new(policy, classify, |d| Box::pin(tokio::time::sleep(d)));
//! let client = tower::ServiceBuilder::new().layer(layer).service(http_client);
//! ```
//!
//! [`HedgeLayer`] is its hedging counterpart for a policy with `[hedging]`:
//! the same `classify`, `sleep`, `seeded` and `shared`, and the steps of
//! [`crate::HedgedState`] (copies after the hedging delay, the first final
//! answer wins, the others are dropped); `tests/tower_hedge.rs` proves it.

use crate::decision::DenyReason;
use crate::state::{Admit, Decision, Shared};
use crate::{Outcome, Policy};
use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower_layer::Layer;
use tower_service::Service;

mod hedge;
mod setup;
pub use hedge::{Hedge, HedgeLayer};
use setup::{Setup, take_ready};

/// A boxed future that can cross threads.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Why a retried call failed without a response.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryFailure<E> {
    /// The inner service's error of the last attempt.
    Inner(E),
    /// The last attempt passed its per-try timeout (or the deadline).
    TimedOut,
    /// No attempt was sent: the breaker was open or the throttle refused.
    Refused(DenyReason),
}

impl<E: fmt::Display> fmt::Display for RetryFailure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryFailure::Inner(e) => write!(f, "{e}"),
            RetryFailure::TimedOut => f.write_str("the last attempt timed out"),
            RetryFailure::Refused(reason) => write!(f, "no attempt sent: {reason}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for RetryFailure<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RetryFailure::Inner(e) => Some(e),
            _ => None,
        }
    }
}

/// How a [`RetryLayer`] asks for a call's state (`on_unknown = "query"`):
/// the status request for an original request.
pub trait StatusQuery<Req> {
    /// The status request asking whether `original` committed, if the layer
    /// can make one.
    fn status_request(&self, original: &Req) -> Option<Req>;
}

/// A layer without status queries: under `on_unknown = "query"` a call
/// whose outcome may have executed ends with that outcome, as `give_up`
/// would (set one with [`RetryLayer::status_query`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoStatusQuery;

impl<Req> StatusQuery<Req> for NoStatusQuery {
    fn status_request(&self, _: &Req) -> Option<Req> {
        None
    }
}

impl<Req, F: Fn(&Req) -> Req> StatusQuery<Req> for F {
    fn status_request(&self, original: &Req) -> Option<Req> {
        Some(self(original))
    }
}

/// The layer: one policy and one [`Shared`] state for every service it wraps.
#[derive(Clone)]
pub struct RetryLayer<C, Z, Q = NoStatusQuery> {
    setup: Setup<C, Z>,
    query: Q,
}

impl<C, Z> RetryLayer<C, Z> {
    /// A layer retrying under `policy`; `classify` names each attempt's
    /// outcome and Retry-After, `sleep` waits.
    pub fn new(policy: impl Into<Arc<Policy>>, classify: C, sleep: Z) -> Self {
        Self::with_shared(Shared::new(policy), classify, sleep)
    }

    /// A layer whose calls share `shared` (its policy, budget, breaker and
    /// throttle) with other layers or calls of the same client.
    pub fn with_shared(shared: Shared, classify: C, sleep: Z) -> Self {
        Self { setup: Setup::new(shared, classify, sleep), query: NoStatusQuery }
    }
}

impl<C, Z, Q> RetryLayer<C, Z, Q> {
    /// The same layer asking for a call's state with `status`, which makes
    /// the status request (such as `GET /payments/{key}`) for an original
    /// request, when the policy says `on_unknown = "query"`. `classify`
    /// names its answer: [`Outcome::Ok`] when the original committed (the
    /// call ends with this answer), `Outcome::Status(404)` when it did not
    /// (the original goes again).
    pub fn status_query<F>(self, status: F) -> RetryLayer<C, Z, F> {
        RetryLayer { setup: self.setup, query: status }
    }

    /// The same layer with reproducible jitter: the `k`-th call (counting
    /// from 0, over every service of this layer) draws from
    /// `SplitMix::new(seed + k)`.
    pub fn seeded(self, seed: u64) -> Self {
        Self { setup: self.setup.seeded(seed), query: self.query }
    }

    /// The shared state (budget, breaker, throttle) of every wrapped service.
    pub fn shared(&self) -> &Shared {
        &self.setup.shared
    }
}

impl<S, C: Clone, Z: Clone, Q: Clone> Layer<S> for RetryLayer<C, Z, Q> {
    type Service = Retry<S, C, Z, Q>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry { inner, setup: self.setup.clone(), query: self.query.clone() }
    }
}

/// The service [`RetryLayer`] makes.
#[derive(Clone)]
pub struct Retry<S, C, Z, Q = NoStatusQuery> {
    inner: S,
    setup: Setup<C, Z>,
    query: Q,
}

impl<S, Req, C, Z, Q> Service<Req> for Retry<S, C, Z, Q>
where
    Q: StatusQuery<Req> + Clone + Send + 'static,
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send,
    S::Error: Send,
    Req: Clone + Send + 'static,
    C: Fn(&Result<S::Response, S::Error>) -> (Outcome, Option<Duration>) + Clone + Send + 'static,
    Z: Fn(Duration) -> BoxFuture<()> + Clone + Send + 'static,
{
    type Response = S::Response;
    type Error = RetryFailure<S::Error>;
    type Future = BoxFuture<Result<S::Response, RetryFailure<S::Error>>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(RetryFailure::Inner)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        // The inner service was made ready for this call; later attempts
        // use a clone and wait until it is ready.
        let (ready, mut svc) = take_ready(&mut self.inner);
        let mut first = Some(ready);
        let rng = self.setup.next_rng();
        let Setup { shared, classify, sleep, .. } = self.setup.clone();
        let query = self.query.clone();
        Box::pin(async move {
            let mut state = shared.call(Instant::now(), rng);
            let mut last: Option<Option<Result<S::Response, S::Error>>> = None;
            loop {
                let (timeout, sent) = match state.before_attempt(Instant::now()) {
                    Ok(Admit::Send { timeout }) => (timeout, req.clone()),
                    Ok(Admit::Query { timeout }) => match query.status_request(&req) {
                        Some(status) => (timeout, status),
                        // No status query: the unknown outcome stands.
                        None => return finished(last.expect("a query follows an attempt")),
                    },
                    Ok(Admit::Wait(w)) => {
                        sleep(w).await;
                        continue;
                    }
                    Err(reason) => return Err(RetryFailure::Refused(reason)),
                };
                let attempt = match first.take() {
                    Some(mut ready) => ready.call(sent),
                    None => {
                        poll_fn(|cx| svc.poll_ready(cx)).await.map_err(RetryFailure::Inner)?;
                        svc.call(sent)
                    }
                };
                let result = race(attempt, timeout.map(&sleep)).await;
                let (outcome, retry_after) = match &result {
                    Some(r) => classify(r),
                    None => (Outcome::Timeout, None),
                };
                match state.after_outcome(outcome, Instant::now(), retry_after) {
                    Decision::Retry { wait } => {
                        last = Some(result);
                        sleep(wait).await
                    }
                    _ => return finished(result),
                }
            }
        })
    }
}

/// The call's result from its last attempt (`None`: it timed out).
fn finished<R, E>(result: Option<Result<R, E>>) -> Result<R, RetryFailure<E>> {
    match result {
        Some(r) => r.map_err(RetryFailure::Inner),
        None => Err(RetryFailure::TimedOut),
    }
}

/// The attempt's result, or `None` when `timer` ends first.
async fn race<F: Future>(attempt: F, timer: Option<BoxFuture<()>>) -> Option<F::Output> {
    let mut attempt = std::pin::pin!(attempt);
    let mut timer = timer;
    poll_fn(move |cx| {
        if let Poll::Ready(r) = attempt.as_mut().poll(cx) {
            return Poll::Ready(Some(r));
        }
        match timer.as_mut().map(|t| t.as_mut().poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(None),
            _ => Poll::Pending,
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::task::{Wake, Waker};

    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        let waker = Waker::from(Arc::new(Noop));
        let mut cx = Context::from_waker(&waker);
        let mut f = std::pin::pin!(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
            std::thread::yield_now();
        }
    }

    /// Answers 503 `fails` times, then 200.
    #[derive(Clone)]
    struct Flaky {
        calls: Arc<AtomicU32>,
        fails: u32,
    }

    impl Service<&'static str> for Flaky {
        type Response = u16;
        type Error = String;
        type Future = BoxFuture<Result<u16, String>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), String>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: &'static str) -> Self::Future {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            let fails = self.fails;
            Box::pin(async move { Ok(if n < fails { 503 } else { 200 }) })
        }
    }

    type Classify = fn(&Result<u16, String>) -> (Outcome, Option<Duration>);
    type Sleep = fn(Duration) -> BoxFuture<()>;

    fn classify(r: &Result<u16, String>) -> (Outcome, Option<Duration>) {
        match r {
            Ok(200) => (Outcome::Ok, None),
            Ok(s) => (Outcome::Status(*s), None),
            Err(_) => (Outcome::Reset, None),
        }
    }

    fn sleep(d: Duration) -> BoxFuture<()> {
        Box::pin(async move { std::thread::sleep(d) })
    }

    fn layer() -> RetryLayer<Classify, Sleep> {
        let policy = Policy::from_toml(
            "max_attempts = 3\nper_try_timeout = \"1s\"\n[backoff]\nkind = \"constant\"\nbase = \"1ms\"\n",
            "test",
        )
        .unwrap();
        RetryLayer::new(policy, classify as Classify, sleep as Sleep)
    }

    #[test]
    fn retries_until_success_within_max_attempts() {
        let calls = Arc::new(AtomicU32::new(0));
        let mut svc = layer().layer(Flaky { calls: calls.clone(), fails: 2 });
        assert_eq!(block_on(svc.call("GET /")), Ok(200));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn gives_the_last_response_back_when_attempts_run_out() {
        let calls = Arc::new(AtomicU32::new(0));
        let mut svc = layer().layer(Flaky { calls: calls.clone(), fails: 5 });
        assert_eq!(block_on(svc.call("GET /")), Ok(503));
        assert_eq!(calls.load(Ordering::SeqCst), 3, "max_attempts = 3");
    }
}
