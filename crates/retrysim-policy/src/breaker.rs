//! A circuit breaker per client instance: closed, open, half-open.
//!
//! Closed, by [`BreakerKind`]:
//! - `failure_ratio`: outcomes are counted over a rolling `window` (ten
//!   buckets). When at least `min_requests` ended in the window and the
//!   failure share reaches `failure_ratio`, the breaker opens.
//! - `consecutive`: `consecutive_failures` failures in a row open it (a
//!   success resets the count), as Polly's basic breaker and gobreaker's
//!   default `ReadyToTrip` do.
//! - `slow_call`: resilience4j's slow-call rate. A call slower than
//!   `slow_call_duration` (strictly, as resilience4j compares) is slow,
//!   whether it succeeded or failed. Over the rolling `window`, with at
//!   least `min_requests` calls, the breaker opens when the slow share
//!   reaches `slow_call_ratio` (or, when `failure_ratio` is given too, the
//!   failure share reaches it).
//!
//! Open: every call fails fast (first attempts and retries) for `open_for`.
//! Half-open: up to `half_open_probes` calls go through. For
//! `failure_ratio` and `consecutive`, if that many succeed the breaker
//! closes with a fresh window and any failure opens it again; for
//! `slow_call`, as resilience4j does, once the probes have ended their slow
//! (and failure) shares are judged against the thresholds: above, it opens
//! again; below, it closes.
//!
//! With `retries_only` (Brooker's "retry circuit breaker", 2022), an open
//! breaker stops retries only: first attempts always go through, and in
//! half-open their outcomes are the probes (retries wait until it closes).
//!
//! Failures are outcomes that say the service is unwell: connect errors,
//! timeouts, resets, 5xx and 429. Other 4xx answers are the caller's own
//! errors and count as successes of the service.

use crate::Outcome;
use crate::time::Nanos;
use window::Window;

mod window;

/// What opens a closed breaker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BreakerKind {
    /// The failure share over the window reaches `failure_ratio`.
    FailureRatio,
    /// This many failures in a row.
    Consecutive {
        /// Failures in a row that open the breaker.
        failures: u32,
    },
    /// The share of calls slower than `duration` reaches `ratio` (resilience4j).
    SlowCall {
        /// A call slower than this is slow.
        duration: Nanos,
        /// The slow share that opens the breaker.
        ratio: f64,
    },
}

/// A validated `[circuit_breaker]` table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerSpec {
    /// What opens it.
    pub kind: BreakerKind,
    /// The failure share that opens it (`failure_ratio`; optional for
    /// `slow_call`; `None` for `consecutive`).
    pub failure_ratio: Option<f64>,
    /// The rolling window (0 for `consecutive`).
    pub window: Nanos,
    /// Calls the window needs before it judges (0 for `consecutive`).
    pub min_requests: u32,
    /// How long it stays open.
    pub open_for: Nanos,
    /// Calls let through half-open.
    pub half_open_probes: u32,
    /// An open breaker stops retries only, never first attempts.
    pub retries_only: bool,
}

const BUCKETS: usize = 10;

/// The breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls flow; outcomes are counted.
    Closed,
    /// Calls fail fast until `until`.
    Open {
        /// When it turns half-open.
        until: Nanos,
    },
    /// A few probes go through.
    HalfOpen {
        /// Probes sent.
        sent: u32,
        /// Probes that succeeded.
        succeeded: u32,
        /// Probes that ended slow or failed (slow_call).
        bad: u32,
    },
}

/// One circuit breaker: its specification, kept once, and its
/// [`BreakerMemory`].
///
/// A client class whose instances each keep a breaker of one
/// specification can keep one `Breaker` and a [`BreakerMemory`] per
/// instance, and [`Breaker::replace_memory`] to serve each instance in turn.
#[derive(Debug, Clone)]
pub struct Breaker {
    spec: BreakerSpec,
    memory: BreakerMemory,
}

/// What one breaker changes as it runs, without its specification: its
/// state, the counts of its rolling window and the times it opened (64
/// bytes; a `slow_call` breaker's window, or one whose buckets count past
/// 65 535 calls, takes 128 bytes more on the heap). A client instance's own
/// breaker.
#[derive(Debug, Clone)]
pub struct BreakerMemory {
    phase: Phase,
    opened: u64,
}

/// The state, with what each state counts.
#[derive(Debug, Clone)]
enum Phase {
    /// Closed (`consecutive`): failures in a row.
    Streak(u32),
    /// Closed (`failure_ratio`): the window, while every count fits 16 bits.
    Narrow(Window<[u16; 2]>),
    /// Closed: the window with slow calls (`slow_call`), or with counts
    /// past 16 bits.
    Wide(Box<Window<[u32; 3]>>),
    /// Open until then.
    Open { until: Nanos },
    /// Half-open: probes sent, probes that succeeded, probes slow or failed.
    HalfOpen { sent: u32, succeeded: u32, bad: u32 },
}

impl BreakerMemory {
    /// The memory of a closed breaker of `spec` with an empty window.
    pub fn new(spec: &BreakerSpec) -> Self {
        Self { phase: Phase::closed(spec.kind), opened: 0 }
    }
}

impl Phase {
    fn closed(kind: BreakerKind) -> Self {
        match kind {
            BreakerKind::Consecutive { .. } => Phase::Streak(0),
            BreakerKind::FailureRatio => Phase::Narrow(Window::new()),
            BreakerKind::SlowCall { .. } => Phase::Wide(Box::new(Window::new())),
        }
    }

    /// Whether a breaker of `kind` can be in this phase.
    fn fits(&self, kind: BreakerKind) -> bool {
        match self {
            Phase::Streak(_) => matches!(kind, BreakerKind::Consecutive { .. }),
            Phase::Narrow(_) => kind == BreakerKind::FailureRatio,
            Phase::Wide(_) => !matches!(kind, BreakerKind::Consecutive { .. }),
            Phase::Open { .. } | Phase::HalfOpen { .. } => true,
        }
    }
}

/// Whether an outcome counts as a failure of the service.
#[inline]
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
        Self { spec, memory: BreakerMemory::new(&spec) }
    }

    /// Its specification.
    pub fn spec(&self) -> &BreakerSpec {
        &self.spec
    }

    /// Puts `memory`, the memory of another breaker of the same
    /// specification, in place of this breaker's own, which it returns: the
    /// breaker then runs on from where that one was. A memory of another
    /// kind of breaker is taken as a fresh one.
    pub fn replace_memory(&mut self, memory: BreakerMemory) -> BreakerMemory {
        let memory = if memory.phase.fits(self.spec.kind) { memory } else { BreakerMemory::new(&self.spec) };
        std::mem::replace(&mut self.memory, memory)
    }

    /// Times the breaker opened.
    pub fn opened(&self) -> u64 {
        self.memory.opened
    }

    /// The current state (after moving from open to half-open if due).
    pub fn state(&mut self, now: Nanos) -> BreakerState {
        match self.memory.phase {
            Phase::Streak(_) | Phase::Narrow(_) | Phase::Wide(_) => BreakerState::Closed,
            Phase::Open { until } if now < until => BreakerState::Open { until },
            Phase::Open { .. } => {
                self.memory.phase = Phase::HalfOpen { sent: 0, succeeded: 0, bad: 0 };
                BreakerState::HalfOpen { sent: 0, succeeded: 0, bad: 0 }
            }
            Phase::HalfOpen { sent, succeeded, bad } => BreakerState::HalfOpen { sent, succeeded, bad },
        }
    }

    /// Whether a retry (or, without `retries_only`, any call) may be sent now.
    pub fn allows(&mut self, now: Nanos) -> bool {
        match self.state(now) {
            BreakerState::Closed => true,
            BreakerState::Open { .. } => false,
            BreakerState::HalfOpen { sent, .. } => !self.spec.retries_only && sent < self.spec.half_open_probes,
        }
    }

    /// Whether a first attempt may be sent now.
    pub fn allows_first(&mut self, now: Nanos) -> bool {
        self.spec.retries_only || self.allows(now)
    }

    /// A call is sent (counts half-open probes).
    pub fn on_send(&mut self, now: Nanos) {
        if let BreakerState::HalfOpen { sent, succeeded, bad } = self.state(now) {
            self.memory.phase = Phase::HalfOpen { sent: sent + 1, succeeded, bad };
        }
    }

    fn bucket_width(&self) -> Nanos {
        (self.spec.window / BUCKETS as u64).max(1)
    }

    fn is_slow(&self, latency: Nanos) -> bool {
        matches!(self.spec.kind, BreakerKind::SlowCall { duration, .. } if latency > duration)
    }

    /// A call ended with `outcome` at `now`, `latency` after it was sent.
    pub fn on_outcome(&mut self, now: Nanos, outcome: Outcome, latency: Nanos) {
        let failed = is_failure(outcome);
        let slow = self.is_slow(latency);
        match self.state(now) {
            BreakerState::Open { .. } => {}
            BreakerState::HalfOpen { sent, succeeded, bad } => match self.spec.kind {
                BreakerKind::SlowCall { ratio, .. } => {
                    let counts_failure = failed && self.spec.failure_ratio.is_some();
                    let bad = bad + u32::from(slow || counts_failure);
                    let ended = succeeded + 1;
                    if ended < self.spec.half_open_probes {
                        self.memory.phase = Phase::HalfOpen { sent, succeeded: ended, bad };
                        return;
                    }
                    // resilience4j judges the probes by the same thresholds.
                    let n = ended as f64;
                    let failures_too = self.spec.failure_ratio.is_some_and(|r| bad as f64 >= r * n);
                    if bad as f64 >= ratio * n || failures_too {
                        self.trip(now);
                    } else {
                        self.close();
                    }
                }
                _ => {
                    if failed {
                        self.trip(now);
                    } else if succeeded + 1 >= self.spec.half_open_probes {
                        self.close();
                    } else {
                        self.memory.phase = Phase::HalfOpen { sent, succeeded: succeeded + 1, bad };
                    }
                }
            },
            BreakerState::Closed => self.count(now, failed, slow),
        }
    }

    /// A closed breaker counts an outcome and opens if it must.
    fn count(&mut self, now: Nanos, failed: bool, slow: bool) {
        let b = now / self.bucket_width();
        let (ok, bad, slow) = match (self.spec.kind, &mut self.memory.phase) {
            (BreakerKind::Consecutive { failures }, Phase::Streak(streak)) => {
                *streak = if failed { *streak + 1 } else { 0 };
                if *streak >= failures {
                    self.trip(now);
                }
                return;
            }
            (_, phase) => {
                if let Phase::Narrow(w) = phase {
                    w.advance(b);
                    if w.add(failed, slow) {
                        w.totals()
                    } else {
                        let mut wide = Box::new(w.widen());
                        wide.add(failed, slow);
                        let totals = wide.totals();
                        *phase = Phase::Wide(wide);
                        totals
                    }
                } else if let Phase::Wide(w) = phase {
                    w.advance(b);
                    w.add(failed, slow);
                    w.totals()
                } else {
                    // `replace_memory` keeps the phase fitting the kind.
                    return;
                }
            }
        };
        let total = ok + bad;
        if total < self.spec.min_requests as u64 || total == 0 {
            return;
        }
        let failing = self.spec.failure_ratio.is_some_and(|r| bad as f64 >= r * total as f64);
        let slowing =
            matches!(self.spec.kind, BreakerKind::SlowCall { ratio, .. } if slow as f64 >= ratio * total as f64);
        if failing || slowing {
            self.trip(now);
        }
    }

    fn close(&mut self) {
        self.memory.phase = Phase::closed(self.spec.kind);
    }

    fn trip(&mut self, now: Nanos) {
        self.memory.phase = Phase::Open { until: now.saturating_add(self.spec.open_for) };
        self.memory.opened += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn spec() -> BreakerSpec {
        BreakerSpec {
            kind: BreakerKind::FailureRatio,
            failure_ratio: Some(0.5),
            window: 1000 * MS,
            min_requests: 10,
            open_for: 500 * MS,
            half_open_probes: 2,
            retries_only: false,
        }
    }

    #[test]
    fn opens_at_the_failure_ratio_once_enough_requests_ended() {
        let mut b = Breaker::new(spec());
        // Nine failures: below min_requests, still closed.
        for i in 0..9 {
            b.on_outcome(i * MS, Outcome::Status(503), 0);
        }
        assert!(b.allows(10 * MS));
        b.on_outcome(10 * MS, Outcome::Timeout, 0);
        assert_eq!(b.state(10 * MS), BreakerState::Open { until: 510 * MS });
        assert!(!b.allows(509 * MS));
        assert_eq!(b.opened(), 1);
    }

    #[test]
    fn client_errors_do_not_count_and_old_buckets_expire() {
        let mut b = Breaker::new(spec());
        for i in 0..20 {
            b.on_outcome(i * MS, Outcome::Status(404), 0);
        }
        for i in 0..9 {
            b.on_outcome((20 + i) * MS, Outcome::Status(503), 0);
        }
        // 9 failures of 29: below one half.
        assert!(b.allows(30 * MS));
        // Two seconds later the successes have left the window.
        for i in 0..10 {
            b.on_outcome(2000 * MS + i * MS, Outcome::Status(500), 0);
        }
        assert!(!b.allows(2010 * MS));
    }

    #[test]
    fn half_open_probes_close_or_reopen() {
        let mut b = Breaker::new(spec());
        for i in 0..10 {
            b.on_outcome(i * MS, Outcome::ConnectError, 0);
        }
        // After open_for: half-open, two probes allowed.
        let t = 600 * MS;
        assert!(b.allows(t));
        b.on_send(t);
        b.on_send(t);
        assert!(!b.allows(t), "only half_open_probes calls go through");
        b.on_outcome(t + MS, Outcome::Ok, 0);
        assert!(matches!(b.state(t + MS), BreakerState::HalfOpen { .. }));
        b.on_outcome(t + 2 * MS, Outcome::Ok, 0);
        assert_eq!(b.state(t + 2 * MS), BreakerState::Closed);
        // Trip again; a failed probe reopens at once.
        for i in 0..10 {
            b.on_outcome(t + (10 + i) * MS, Outcome::Reset, 0);
        }
        let t2 = t + 19 * MS + 500 * MS;
        assert!(b.allows(t2));
        b.on_send(t2);
        b.on_outcome(t2 + MS, Outcome::Status(503), 0);
        assert!(!b.allows(t2 + MS));
        assert_eq!(b.opened(), 3);
    }

    #[test]
    fn consecutive_opens_on_n_failures_in_a_row_only() {
        let spec = BreakerSpec {
            kind: BreakerKind::Consecutive { failures: 3 },
            failure_ratio: None,
            window: 0,
            min_requests: 0,
            ..spec()
        };
        let mut b = Breaker::new(spec);
        // Failure, failure, success, failure, failure: never three in a row.
        for (i, o) in [Outcome::Timeout, Outcome::Status(503), Outcome::Ok, Outcome::Reset, Outcome::Status(500)]
            .into_iter()
            .enumerate()
        {
            b.on_outcome(i as Nanos * MS, o, 0);
        }
        assert_eq!(b.state(5 * MS), BreakerState::Closed, "four failures of five, but not three in a row");
        b.on_outcome(6 * MS, Outcome::ConnectError, 0);
        assert_eq!(b.state(6 * MS), BreakerState::Open { until: 506 * MS });
        // Half-open: two successes close it, and the streak starts again.
        b.on_send(510 * MS);
        b.on_outcome(511 * MS, Outcome::Ok, 0);
        b.on_outcome(512 * MS, Outcome::Ok, 0);
        assert_eq!(b.state(512 * MS), BreakerState::Closed);
        b.on_outcome(513 * MS, Outcome::Timeout, 0);
        b.on_outcome(514 * MS, Outcome::Timeout, 0);
        assert_eq!(b.state(514 * MS), BreakerState::Closed);
    }

    fn slow_spec(failure_ratio: Option<f64>) -> BreakerSpec {
        BreakerSpec {
            kind: BreakerKind::SlowCall { duration: 100 * MS, ratio: 0.5 },
            failure_ratio,
            half_open_probes: 4,
            ..spec()
        }
    }

    #[test]
    fn slow_call_counts_calls_strictly_slower_than_the_threshold() {
        let mut b = Breaker::new(slow_spec(None));
        // Ten calls, four slow (successes or failures alike), one exactly at the threshold.
        for i in 0..10u64 {
            let latency = match i {
                0 | 1 => 150 * MS,
                2 => 101 * MS,
                3 => 100 * MS,
                _ => 10 * MS,
            };
            let o = if i == 2 { Outcome::Status(500) } else { Outcome::Ok };
            b.on_outcome(i * MS, o, latency);
        }
        // 3 slow of 10 (100 ms is not slower than 100 ms); failures alone never open it.
        assert_eq!(b.state(10 * MS), BreakerState::Closed);
        for i in 10..20u64 {
            b.on_outcome(i * MS, Outcome::Status(503), 5 * MS);
        }
        assert_eq!(b.state(20 * MS), BreakerState::Closed, "no failure_ratio: failures do not count");
        // Two more slow: 5 of 22 is below one half; then enough slow calls reach it.
        for i in 20..40u64 {
            b.on_outcome(i * MS, Outcome::Ok, 200 * MS);
            if b.state(i * MS) != BreakerState::Closed {
                // 3 + k slow of 20 + k calls reaches 0.5 at k = 14.
                assert_eq!(i, 33);
                break;
            }
        }
        assert!(matches!(b.state(34 * MS), BreakerState::Open { .. }));
    }

    #[test]
    fn slow_call_half_open_judges_the_probes_by_their_shares() {
        let mut b = Breaker::new(slow_spec(Some(0.5)));
        for i in 0..10u64 {
            b.on_outcome(i * MS, Outcome::Status(503), 0);
        }
        let t = 600 * MS;
        assert!(matches!(b.state(t), BreakerState::HalfOpen { .. }), "failure_ratio opened it");
        // Four probes: one slow, one failed: 2 of 4 reach 0.5: open again.
        for (o, lat) in [(Outcome::Ok, 200 * MS), (Outcome::Status(500), 0), (Outcome::Ok, 0), (Outcome::Ok, 0)] {
            b.on_outcome(t, o, lat);
        }
        assert!(matches!(b.state(t), BreakerState::Open { .. }));
        // Next time one slow probe of four: below the thresholds, closed.
        let t = t + 600 * MS;
        for (o, lat) in [(Outcome::Ok, 200 * MS), (Outcome::Ok, 0), (Outcome::Ok, 0), (Outcome::Ok, 0)] {
            b.on_outcome(t, o, lat);
        }
        assert_eq!(b.state(t), BreakerState::Closed);
    }

    #[test]
    fn retries_only_lets_first_attempts_through_while_open() {
        let mut b = Breaker::new(BreakerSpec { retries_only: true, ..spec() });
        for i in 0..10 {
            b.on_outcome(i * MS, Outcome::Status(503), 0);
        }
        assert!(!b.allows(20 * MS), "retries stop");
        assert!(b.allows_first(20 * MS), "first attempts go on");
        // Half-open: retries still wait; first attempts are the probes.
        let t = 600 * MS;
        assert!(!b.allows(t));
        assert!(b.allows_first(t));
        b.on_outcome(t, Outcome::Ok, 0);
        b.on_outcome(t, Outcome::Ok, 0);
        assert!(b.allows(t), "two successful first attempts closed it");
        let mut plain = Breaker::new(spec());
        for i in 0..10 {
            plain.on_outcome(i * MS, Outcome::Status(503), 0);
        }
        assert!(!plain.allows_first(20 * MS), "a plain breaker fails first attempts fast");
    }
}
