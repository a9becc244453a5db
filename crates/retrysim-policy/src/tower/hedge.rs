//! [`HedgeLayer`]: the hedging counterpart of [`super::RetryLayer`], for a
//! policy with `[hedging]`. Each call runs a [`HedgedState`], the steps the
//! simulator and the hedged conformance vectors take: the first copy goes
//! out like any first attempt; when the hedging delay comes due another
//! copy (a clone of the request) goes, up to the policy's hedging
//! `max_attempts` in flight; a non-fatal answer or a copy's per-try timeout
//! sends the next copy at once; the first final answer ends the call and
//! the copies still out are dropped, which cancels them. A copy past its
//! per-try timeout stays in the race until no further copy may go.
//!
//! The copies race in one future (a poll loop over boxed futures), so the
//! layer needs no runtime: like `RetryLayer` it takes a `sleep` function
//! for the hedging delay and the per-try timeouts, and a `classify`
//! function that names each answer's outcome (Retry-After plays no part in
//! hedging and is ignored). The caller gets the answer that ended the call
//! as it was (a fatal 500 stays a response); when every copy failed, the
//! last answer, or [`RetryFailure::TimedOut`] when none came.
//!
//! The copies the policy leaves to finish (the losers of the race with
//! `cancel = false`, copies given up after their per-try timeout with
//! `cancel_on_timeout = false`) need a runtime to finish on: given one
//! with [`HedgeLayer::leave_running`] (`|f| { tokio::spawn(f); }`), the
//! layer hands them to it and ignores their answers; without one it drops
//! them, which cancels them, whatever the policy says. A
//! hedge waits for the inner service's `poll_ready` before it goes; the
//! copies out are not polled meanwhile (their wake-ups are kept), so an
//! inner service that is slow to be ready delays the answers it holds.
//!
//! ```ignore
//! let layer = HedgeLayer::new(policy, classify, |d| Box::pin(tokio::time::sleep(d))).expect("[hedging]");
//! let client = tower::ServiceBuilder::new().layer(layer).service(http_client);
//! ```

use super::setup::{Setup, take_ready};
use super::{BoxFuture, RetryFailure};
use crate::hedged::{HedgedState, Step};
use crate::random::SplitMix;
use crate::state::{Admit, Shared};
use crate::{Outcome, Policy};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tower_layer::Layer;
use tower_service::Service;

/// Runs a copy left to finish to its end (its answer is ignored).
type Spawn = Arc<dyn Fn(BoxFuture<()>) + Send + Sync>;

/// The layer: one hedging policy and one [`Shared`] state for every service
/// it wraps.
#[derive(Clone)]
pub struct HedgeLayer<C, Z> {
    setup: Setup<C, Z>,
    spawn: Option<Spawn>,
}

impl<C, Z> HedgeLayer<C, Z> {
    /// A layer hedging under `policy`; `classify` names each answer's
    /// outcome, `sleep` waits. `None` when the policy has no `[hedging]`
    /// (use [`super::RetryLayer`] for it).
    pub fn new(policy: impl Into<Arc<Policy>>, classify: C, sleep: Z) -> Option<Self> {
        Self::with_shared(Shared::new(policy), classify, sleep)
    }

    /// A layer whose calls share `shared` (its policy, budget, breaker,
    /// throttle and hedging clock) with other layers or calls of the same
    /// client. `None` when the policy has no `[hedging]`.
    pub fn with_shared(shared: Shared, classify: C, sleep: Z) -> Option<Self> {
        shared.policy().hedging.as_ref()?;
        Some(Self { setup: Setup::new(shared, classify, sleep), spawn: None })
    }

    /// The same layer with reproducible draws (the throttle's): the `k`-th
    /// call draws from `SplitMix::new(seed + k)`.
    pub fn seeded(self, seed: u64) -> Self {
        Self { setup: self.setup.seeded(seed), ..self }
    }

    /// The same layer leaving the copies the policy does not cancel to
    /// finish on `spawn` (a runtime's spawn: `|f| { tokio::spawn(f); }`):
    /// the losers of the race when `[hedging] cancel = false`, and copies
    /// given up after their per-try timeout when `cancel_on_timeout =
    /// false`, as the simulator leaves them to do their work. Without it
    /// every copy the call no longer waits for is dropped (cancelled).
    pub fn leave_running(self, spawn: impl Fn(BoxFuture<()>) + Send + Sync + 'static) -> Self {
        Self { spawn: Some(Arc::new(spawn)), ..self }
    }

    /// The shared state (budget, breaker, throttle) of every wrapped service.
    pub fn shared(&self) -> &Shared {
        &self.setup.shared
    }
}

impl<S, C: Clone, Z: Clone> Layer<S> for HedgeLayer<C, Z> {
    type Service = Hedge<S, C, Z>;

    fn layer(&self, inner: S) -> Self::Service {
        Hedge { inner, setup: self.setup.clone(), spawn: self.spawn.clone() }
    }
}

/// The service [`HedgeLayer`] makes.
#[derive(Clone)]
pub struct Hedge<S, C, Z> {
    inner: S,
    setup: Setup<C, Z>,
    spawn: Option<Spawn>,
}

/// One copy in flight: its answer and its per-try timer (gone once it fired).
struct Flight<F> {
    copy: u32,
    answer: Pin<Box<F>>,
    timer: Option<BoxFuture<()>>,
}

/// What the poll loop saw first.
enum Event<T> {
    Answer(usize, T),
    Expired(usize),
    Due,
}

impl<S, Req, C, Z> Service<Req> for Hedge<S, C, Z>
where
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
        // The inner service was made ready for this call: the first copy
        // takes it; further copies use a clone and wait until it is ready.
        let (mut first, mut svc) = take_ready(&mut self.inner);
        let rng = self.setup.next_rng();
        let Setup { shared, classify, sleep, .. } = self.setup.clone();
        let spawn = self.spawn.clone();
        Box::pin(async move {
            let policy = shared.policy().clone();
            let spec = policy.hedging.as_ref().expect("HedgeLayer::new checked [hedging]");
            // Which of the copies the call no longer waits for the policy
            // leaves running.
            let leave = |step: &Step, copy: u32| {
                (!spec.cancel && step.cancel.contains(&copy))
                    || (!policy.cancel_on_timeout && step.given_up.contains(&copy))
            };
            // One reading for the call's start and its first copy: the
            // first copy's timer is the whole deadline.
            let mut now = Instant::now();
            let mut state = HedgedState::new(shared.clone(), now, rng).expect("HedgeLayer::new checked [hedging]");
            let timer = {
                let sleep = sleep.clone();
                move |timeout: Option<Duration>| timeout.map(&sleep)
            };
            let timeout = loop {
                match state.before_first(now) {
                    Ok(Admit::Send { timeout }) => break timeout,
                    Ok(Admit::Wait(w)) => sleep.clone()(w).await,
                    Ok(_) => unreachable!("a hedged call's first step sends the operation or waits"),
                    Err(reason) => return Err(RetryFailure::Refused(reason)),
                }
                now = Instant::now();
            };
            let mut flights =
                vec![Flight { copy: 0, answer: Box::pin(first.call(req.clone())), timer: timer(timeout) }];
            // The hedging delay, armed from the reading the state was given.
            let arm = move |state: &HedgedState<SplitMix>, now: Instant| {
                state.hedge_due_at().map(|at| (at, sleep(at.saturating_duration_since(now))))
            };
            let mut due = arm(&state, now);
            let mut last: Option<Result<S::Response, S::Error>> = None;
            while !flights.is_empty() {
                let event = poll_fn(|cx| {
                    for (i, f) in flights.iter_mut().enumerate() {
                        if let Poll::Ready(r) = f.answer.as_mut().poll(cx) {
                            return Poll::Ready(Event::Answer(i, r));
                        }
                        if let Some(Poll::Ready(())) = f.timer.as_mut().map(|t| t.as_mut().poll(cx)) {
                            f.timer = None;
                            return Poll::Ready(Event::Expired(i));
                        }
                    }
                    match due.as_mut().map(|(_, t)| t.as_mut().poll(cx)) {
                        Some(Poll::Ready(())) => Poll::Ready(Event::Due),
                        _ => Poll::Pending,
                    }
                })
                .await;
                now = Instant::now();
                let step = match event {
                    Event::Answer(i, r) => {
                        let copy = flights.remove(i).copy;
                        let (outcome, _) = classify(&r);
                        last = Some(r);
                        state.on_copy_outcome(copy, outcome, now)
                    }
                    Event::Expired(i) => state.on_copy_expired(flights[i].copy, now),
                    Event::Due => {
                        due = None;
                        let hedge = Some(state.on_hedge_due(now));
                        Step { hedge, ..Step::default() }
                    }
                };
                // Copies given up or cancelled are dropped here, or left
                // to finish where the policy says so and a runtime was given.
                let (gone, kept) = std::mem::take(&mut flights)
                    .into_iter()
                    .partition(|f| step.given_up.contains(&f.copy) || step.cancel.contains(&f.copy));
                flights = kept;
                if let Some(spawn) = &spawn {
                    for f in gone.into_iter().filter(|f: &Flight<_>| leave(&step, f.copy)) {
                        let answer = f.answer;
                        spawn(Box::pin(async move {
                            let _ = answer.await;
                        }));
                    }
                }
                if step.end.is_some() {
                    break; // Done, or GiveUp: the answer that ended the call, or the last one
                }
                if let Some(Ok(sent)) = step.hedge {
                    poll_fn(|cx| svc.poll_ready(cx)).await.map_err(RetryFailure::Inner)?;
                    let answer = Box::pin(svc.call(req.clone()));
                    flights.push(Flight { copy: sent.copy, answer, timer: timer(sent.timeout) });
                }
                if due.as_ref().map(|(at, _)| *at) != state.hedge_due_at() {
                    due = arm(&state, now);
                }
            }
            drop(flights);
            match last {
                Some(r) => r.map_err(RetryFailure::Inner),
                None => Err(RetryFailure::TimedOut),
            }
        })
    }
}
