//! A circuit breaker per client instance: closed, open, half-open.
//!
//! Closed: outcomes are counted over a rolling `window` (ten buckets). When
//! at least `min_requests` ended in the window and the failure share reaches
//! `failure_ratio`, the breaker opens. Open: every call fails fast (first
//! attempts and retries) for `open_for`. Half-open: up to
//! `half_open_probes` calls go through; if that many succeed the breaker
//! closes with a fresh window, and any failure opens it again.
//!
//! Failures are outcomes that say the service is unwell: connect errors,
//! timeouts, resets, 5xx and 429. Other 4xx answers are the caller's own
//! errors and count as successes of the service.

use crate::engine::Nanos;
use crate::policy::Outcome;

/// A validated `[circuit_breaker]` table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerSpec {
    pub failure_ratio: f64,
    pub window: Nanos,
    pub min_requests: u32,
    pub open_for: Nanos,
    pub half_open_probes: u32,
}

const BUCKETS: usize = 10;

/// The breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    Closed,
    Open { until: Nanos },
    HalfOpen { sent: u32, succeeded: u32 },
}

/// One circuit breaker.
#[derive(Debug, Clone)]
pub struct Breaker {
    spec: BreakerSpec,
    state: BreakerState,
    /// Rolling window: (bucket index, successes, failures) per slot.
    buckets: [(u64, u32, u32); BUCKETS],
    /// Times the breaker opened.
    pub opened: u64,
}

/// Whether an outcome counts as a failure of the service.
pub fn is_failure(outcome: Outcome) -> bool {
    match outcome {
        Outcome::Ok => false,
        Outcome::ConnectError | Outcome::Timeout | Outcome::Reset => true,
        Outcome::Status(s) => s >= 500 || s == 429,
    }
}

impl Breaker {
    /// A closed breaker with an empty window.
    pub fn new(spec: BreakerSpec) -> Self {
        Self { spec, state: BreakerState::Closed, buckets: [(u64::MAX, 0, 0); BUCKETS], opened: 0 }
    }

    /// The current state (after moving from open to half-open if due).
    pub fn state(&mut self, now: Nanos) -> BreakerState {
        if let BreakerState::Open { until } = self.state
            && now >= until
        {
            self.state = BreakerState::HalfOpen { sent: 0, succeeded: 0 };
        }
        self.state
    }

    /// Whether a call may be sent now.
    pub fn allows(&mut self, now: Nanos) -> bool {
        match self.state(now) {
            BreakerState::Closed => true,
            BreakerState::Open { .. } => false,
            BreakerState::HalfOpen { sent, .. } => sent < self.spec.half_open_probes,
        }
    }

    /// A call is sent (counts half-open probes).
    pub fn on_send(&mut self, now: Nanos) {
        if let BreakerState::HalfOpen { sent, succeeded } = self.state(now) {
            self.state = BreakerState::HalfOpen { sent: sent + 1, succeeded };
        }
    }

    fn bucket_width(&self) -> Nanos {
        (self.spec.window / BUCKETS as u64).max(1)
    }

    /// A call ended with `outcome` at `now`.
    pub fn on_outcome(&mut self, now: Nanos, outcome: Outcome) {
        let failed = is_failure(outcome);
        match self.state(now) {
            BreakerState::Open { .. } => {}
            BreakerState::HalfOpen { sent, succeeded } => {
                if failed {
                    self.trip(now);
                } else if succeeded + 1 >= self.spec.half_open_probes {
                    self.state = BreakerState::Closed;
                    self.buckets = [(u64::MAX, 0, 0); BUCKETS];
                } else {
                    self.state = BreakerState::HalfOpen { sent, succeeded: succeeded + 1 };
                }
            }
            BreakerState::Closed => {
                let b = now / self.bucket_width();
                let slot = &mut self.buckets[(b % BUCKETS as u64) as usize];
                if slot.0 != b {
                    *slot = (b, 0, 0);
                }
                if failed {
                    slot.2 += 1;
                } else {
                    slot.1 += 1;
                }
                let (ok, bad) = self
                    .buckets
                    .iter()
                    .filter(|(i, _, _)| *i != u64::MAX && *i + BUCKETS as u64 > b)
                    .fold((0u64, 0u64), |(o, f), (_, s, x)| (o + *s as u64, f + *x as u64));
                let total = ok + bad;
                if total >= self.spec.min_requests as u64
                    && total > 0
                    && bad as f64 >= self.spec.failure_ratio * total as f64
                {
                    self.trip(now);
                }
            }
        }
    }

    fn trip(&mut self, now: Nanos) {
        self.state = BreakerState::Open { until: now.saturating_add(self.spec.open_for) };
        self.opened += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn spec() -> BreakerSpec {
        BreakerSpec { failure_ratio: 0.5, window: 1000 * MS, min_requests: 10, open_for: 500 * MS, half_open_probes: 2 }
    }

    #[test]
    fn opens_at_the_failure_ratio_once_enough_requests_ended() {
        let mut b = Breaker::new(spec());
        // Nine failures: below min_requests, still closed.
        for i in 0..9 {
            b.on_outcome(i * MS, Outcome::Status(503));
        }
        assert!(b.allows(10 * MS));
        b.on_outcome(10 * MS, Outcome::Timeout);
        assert_eq!(b.state(10 * MS), BreakerState::Open { until: 510 * MS });
        assert!(!b.allows(509 * MS));
        assert_eq!(b.opened, 1);
    }

    #[test]
    fn client_errors_do_not_count_and_old_buckets_expire() {
        let mut b = Breaker::new(spec());
        for i in 0..20 {
            b.on_outcome(i * MS, Outcome::Status(404));
        }
        for i in 0..9 {
            b.on_outcome((20 + i) * MS, Outcome::Status(503));
        }
        // 9 failures of 29: below one half.
        assert!(b.allows(30 * MS));
        // Two seconds later the successes have left the window.
        for i in 0..10 {
            b.on_outcome(2000 * MS + i * MS, Outcome::Status(500));
        }
        assert!(!b.allows(2010 * MS));
    }

    #[test]
    fn half_open_probes_close_or_reopen() {
        let mut b = Breaker::new(spec());
        for i in 0..10 {
            b.on_outcome(i * MS, Outcome::ConnectError);
        }
        // After open_for: half-open, two probes allowed.
        let t = 600 * MS;
        assert!(b.allows(t));
        b.on_send(t);
        b.on_send(t);
        assert!(!b.allows(t), "only half_open_probes calls go through");
        b.on_outcome(t + MS, Outcome::Ok);
        assert!(matches!(b.state(t + MS), BreakerState::HalfOpen { .. }));
        b.on_outcome(t + 2 * MS, Outcome::Ok);
        assert_eq!(b.state(t + 2 * MS), BreakerState::Closed);
        // Trip again; a failed probe reopens at once.
        for i in 0..10 {
            b.on_outcome(t + (10 + i) * MS, Outcome::Reset);
        }
        let t2 = t + 19 * MS + 500 * MS;
        assert!(b.allows(t2));
        b.on_send(t2);
        b.on_outcome(t2 + MS, Outcome::Status(503));
        assert!(!b.allows(t2 + MS));
        assert_eq!(b.opened, 3);
    }
}
