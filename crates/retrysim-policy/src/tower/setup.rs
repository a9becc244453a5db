//! What [`super::RetryLayer`] and [`super::HedgeLayer`] both hold and hand
//! to every service they make: the policy, the [`Shared`] state, the
//! `classify` and `sleep` functions and the seeds of the calls' draws.

use crate::random::SplitMix;
use crate::state::Shared;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A layer's setup, cloned into each service it wraps.
#[derive(Clone)]
pub(super) struct Setup<C, Z> {
    pub(super) shared: Shared,
    pub(super) classify: C,
    pub(super) sleep: Z,
    seeds: Option<Arc<AtomicU64>>,
}

impl<C, Z> Setup<C, Z> {
    /// Fresh shared state for `policy`; draws seeded from the clock.
    pub(super) fn new(shared: Shared, classify: C, sleep: Z) -> Self {
        Self { shared, classify, sleep, seeds: None }
    }

    /// Reproducible draws: the `k`-th call (counting from 0, over every
    /// service of the layer) draws from `SplitMix::new(seed + k)`.
    pub(super) fn seeded(mut self, seed: u64) -> Self {
        self.seeds = Some(Arc::new(AtomicU64::new(seed)));
        self
    }

    /// The random source of the next call.
    pub(super) fn next_rng(&self) -> SplitMix {
        match &self.seeds {
            Some(next) => SplitMix::new(next.fetch_add(1, Ordering::Relaxed)),
            None => SplitMix::from_time(),
        }
    }
}

/// The inner service made ready for this call, leaving a clone in its
/// place, and another clone for the later attempts (they wait until it is
/// ready).
pub(super) fn take_ready<S: Clone>(inner: &mut S) -> (S, S) {
    let mut ready = inner.clone();
    std::mem::swap(&mut ready, inner);
    (ready, inner.clone())
}
