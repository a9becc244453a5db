//! Model time over real time: model nanoseconds since the run started,
//! `scale` real seconds per model second.

use crate::engine::Nanos;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The run's clock. Its clones share one start, which [`Clock::restart`]
/// moves to the moment the load begins (after servers and proxies are up).
#[derive(Debug, Clone)]
pub struct Clock {
    base: Instant,
    /// The start, in nanoseconds after `base`.
    offset: Arc<AtomicU64>,
    scale: f64,
}

impl Clock {
    /// A clock starting now.
    pub fn start(scale: f64) -> Clock {
        Clock { base: Instant::now(), offset: Arc::new(AtomicU64::new(0)), scale }
    }

    /// Model time 0 is now (for every clone).
    pub fn restart(&self) {
        self.offset.store(self.base.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    fn begin(&self) -> Instant {
        self.base + Duration::from_nanos(self.offset.load(Ordering::Relaxed))
    }

    /// Model time now.
    pub fn now(&self) -> Nanos {
        self.model(self.begin().elapsed())
    }

    /// The model length of a real `d`.
    pub fn model(&self, d: Duration) -> Nanos {
        (d.as_nanos() as f64 / self.scale) as Nanos
    }

    /// The real length of model `n` nanoseconds.
    pub fn real(&self, n: Nanos) -> Duration {
        Duration::from_nanos((n as f64 * self.scale).min(u64::MAX as f64 / 2.0) as u64)
    }

    /// The real instant of model time `t`.
    pub fn real_at(&self, t: Nanos) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.begin() + self.real(t))
    }

    /// Model time now as an [`Instant`] the call machine reads: the run's
    /// start plus the model time elapsed.
    pub fn virtual_now(&self) -> Instant {
        self.begin() + Duration::from_nanos(self.now())
    }

    /// Model time `t` as a virtual instant (see [`Clock::virtual_now`]).
    pub fn virtual_at(&self, t: Nanos) -> Instant {
        self.begin() + Duration::from_nanos(t)
    }

    /// The real instant of a virtual instant (see [`Clock::virtual_now`]).
    pub fn real_of_virtual(&self, v: Instant) -> tokio::time::Instant {
        self.real_at(v.saturating_duration_since(self.begin()).as_nanos() as Nanos)
    }

    /// The run's start, the origin of virtual instants.
    pub fn origin(&self) -> Instant {
        self.begin()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_scale_stretches_real_time_and_shrinks_model_time() {
        let c = Clock { base: Instant::now(), offset: Arc::new(AtomicU64::new(0)), scale: 4.0 };
        assert_eq!(c.real(1_000_000), Duration::from_millis(4));
        assert_eq!(c.model(Duration::from_millis(4)), 1_000_000);
        let v = c.origin() + Duration::from_millis(10);
        assert_eq!(c.real_of_virtual(v), tokio::time::Instant::from_std(c.origin() + Duration::from_millis(40)));
    }
}
