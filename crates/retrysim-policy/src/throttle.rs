//! Adaptive client-side throttling, applied before every attempt.
//!
//! - [`ThrottleKind::Sre`]: the Google SRE book's client-side throttling
//!   ("Handling Overload"), as Envoy's `admission_control` filter and
//!   Finagle's `NackAdmissionFilter` ship it. Over a sliding `window` of
//!   this client's own traffic it counts `requests` (every attempt the
//!   caller wanted to send, those refused locally included, each counted
//!   when refused or when its outcome arrives) and `accepts` (attempts the
//!   backend accepted), and refuses an attempt locally with
//!   probability `max(0, (requests - k * accepts) / (requests + 1))`. At a
//!   backend that accepts `C` per second the attempts that reach it settle
//!   near `k * C`; while the backend accepts a share of at least `1/k` the
//!   throttle never engages.
//! - [`ThrottleKind::AwsAdaptive`]: the AWS SDKs' `adaptive` retry mode, as
//!   botocore's `retries/adaptive.py`, `bucket.py` and `throttling.py`
//!   implement it. A token bucket whose fill rate a CUBIC controller sets
//!   (beta 0.7, scale 0.4), capped at twice the measured response rate
//!   (smoothed 0.8 over 0.5 s buckets). The bucket is off until the first
//!   throttling answer (429); from then on every attempt takes a token, and
//!   waits for one when the bucket is empty.
//!
//! An accepted attempt is one whose outcome does not say the service is
//! unwell (see [`super::breaker::is_failure`]): 5xx, 429, timeouts, resets and
//! connect errors are not accepts.

use super::Outcome;
use super::breaker::is_failure;
use super::budget::BudgetScope;
use crate::time::Nanos;
use std::collections::VecDeque;

/// Buckets of the SRE throttle's sliding window.
const SRE_BUCKETS: u64 = 60;

/// A validated `[throttle]` table's kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThrottleKind {
    /// Google SRE book: reject with `max(0, (requests - k accepts) / (requests + 1))`.
    Sre {
        /// How many requests per accept the client may send before it throttles.
        k: f64,
        /// The sliding window of requests and accepts.
        window: Nanos,
    },
    /// The AWS SDKs' adaptive retry mode (botocore's constants).
    AwsAdaptive,
}

/// A validated `[throttle]` table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThrottleSpec {
    /// What throttles.
    pub kind: ThrottleKind,
    /// One throttle per client instance, or one per client class.
    pub scope: BudgetScope,
}

/// What the throttle says about an attempt the caller wants to send now.
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub enum Admission {
    /// Send it now.
    Send,
    /// Refused locally (SRE), with the rejection probability in force.
    Refuse {
        /// The probability the draw fell under.
        p: f64,
    },
    /// Send it after this wait for a token (AWS adaptive); the token is
    /// taken already ([`Throttle::release`] gives it back if the attempt is
    /// not made after all).
    Wait(Nanos),
}

/// The running throttle of one client instance (or class).
#[derive(Debug, Clone)]
pub enum Throttle {
    /// The SRE book's throttle.
    Sre(SreThrottle),
    /// The AWS adaptive rate limiter.
    Aws(AdaptiveLimiter),
}

impl Throttle {
    /// A fresh throttle for `spec`, created at time 0.
    pub fn new(spec: &ThrottleSpec) -> Self {
        match spec.kind {
            ThrottleKind::Sre { k, window } => Throttle::Sre(SreThrottle::new(k, window)),
            ThrottleKind::AwsAdaptive => Throttle::Aws(AdaptiveLimiter::new(0.0)),
        }
    }

    /// Whether an attempt may go now; `u` is a uniform draw in (0, 1).
    pub fn admit(&mut self, now: Nanos, u: f64) -> Admission {
        match self {
            Throttle::Sre(t) => t.admit(now, u),
            Throttle::Aws(t) => match t.acquire(secs(now)) {
                0.0 => Admission::Send,
                w => Admission::Wait(crate::time::from_secs_f64(w)),
            },
        }
    }

    /// An attempt admitted with [`Admission::Wait`] is not made after all.
    pub fn release(&mut self) {
        if let Throttle::Aws(t) = self {
            t.bucket.capacity += 1.0;
        }
    }

    /// An attempt's outcome arrived at `now`.
    pub fn on_outcome(&mut self, now: Nanos, outcome: Outcome) {
        match self {
            Throttle::Sre(t) => t.on_outcome(now, outcome),
            Throttle::Aws(t) => {
                t.on_response(secs(now), outcome == Outcome::Status(429));
            }
        }
    }
}

fn secs(t: Nanos) -> f64 {
    t as f64 / 1e9
}

/// The SRE book's adaptive throttle over a bucketed sliding window.
#[derive(Debug, Clone)]
pub struct SreThrottle {
    k: f64,
    width: Nanos,
    /// (bucket index, requests, accepts), oldest first.
    buckets: VecDeque<(u64, u64, u64)>,
    requests: u64,
    accepts: u64,
}

impl SreThrottle {
    /// A throttle with multiplier `k` over `window`.
    pub fn new(k: f64, window: Nanos) -> Self {
        Self { k, width: (window / SRE_BUCKETS).max(1), buckets: VecDeque::new(), requests: 0, accepts: 0 }
    }

    fn slot(&mut self, now: Nanos) -> &mut (u64, u64, u64) {
        let b = now / self.width;
        while let Some(&(i, r, a)) = self.buckets.front() {
            if i + SRE_BUCKETS > b {
                break;
            }
            self.buckets.pop_front();
            self.requests -= r;
            self.accepts -= a;
        }
        if self.buckets.back().is_none_or(|&(i, _, _)| i != b) {
            self.buckets.push_back((b, 0, 0));
        }
        self.buckets.back_mut().expect("just pushed")
    }

    /// Requests and accepts in the window ending at `now`.
    pub fn counts(&mut self, now: Nanos) -> (u64, u64) {
        self.slot(now);
        (self.requests, self.accepts)
    }

    /// The rejection probability in force at `now`.
    pub fn rejection_probability(&mut self, now: Nanos) -> f64 {
        let (r, a) = self.counts(now);
        ((r as f64 - self.k * a as f64) / (r as f64 + 1.0)).max(0.0)
    }

    /// Decides a wanted request with the draw `u`; a refused one counts as
    /// a request at once.
    pub fn admit(&mut self, now: Nanos, u: f64) -> Admission {
        let p = self.rejection_probability(now);
        if u < p {
            self.slot(now).1 += 1;
            self.requests += 1;
            Admission::Refuse { p }
        } else {
            Admission::Send
        }
    }

    /// A sent request's outcome arrived: it counts as a request now, and as
    /// an accept when the backend accepted it. (Counting a sent request
    /// when its outcome is known keeps requests in flight out of both
    /// counts, so the answers' delay does not bias the ratio.)
    pub fn on_outcome(&mut self, now: Nanos, outcome: Outcome) {
        let accepted = !is_failure(outcome);
        let slot = self.slot(now);
        slot.1 += 1;
        slot.2 += u64::from(accepted);
        self.requests += 1;
        self.accepts += u64::from(accepted);
    }
}

/// botocore's `CubicCalculator`: times and rates in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cubic {
    w_max: f64,
    k: f64,
    last_fail: f64,
}

impl Cubic {
    /// `_SCALE_CONSTANT`.
    pub const SCALE: f64 = 0.4;
    /// `_BETA`.
    pub const BETA: f64 = 0.7;

    /// A calculator starting at `starting_max_rate` at `start_time`.
    pub fn new(starting_max_rate: f64, start_time: f64) -> Self {
        let mut c = Self { w_max: starting_max_rate, k: 0.0, last_fail: start_time };
        c.k = c.zero_point();
        c
    }

    fn zero_point(&self) -> f64 {
        (self.w_max * (1.0 - Self::BETA) / Self::SCALE).powf(1.0 / 3.0)
    }

    /// The rate after a success at `t`.
    pub fn success_received(&self, t: f64) -> f64 {
        Self::SCALE * (t - self.last_fail - self.k).powi(3) + self.w_max
    }

    /// The rate after a throttling error at `t` while sending at `rate`.
    pub fn error_received(&mut self, rate: f64, t: f64) -> f64 {
        self.w_max = rate;
        self.k = self.zero_point();
        self.last_fail = t;
        rate * Self::BETA
    }
}

/// botocore's `RateClocker`: the smoothed rate of responses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateClocker {
    measured: f64,
    last_bucket: f64,
    count: f64,
}

impl RateClocker {
    /// `_DEFAULT_SMOOTHING`.
    pub const SMOOTHING: f64 = 0.8;
    /// `_TIME_BUCKET_RANGE` (seconds).
    pub const BUCKET: f64 = 0.5;

    /// A clocker created at `t` (botocore floors the start to a whole second).
    pub fn new(t: f64) -> Self {
        Self { measured: 0.0, last_bucket: t.floor(), count: 0.0 }
    }

    /// Counts one response at `t`; returns the measured rate.
    pub fn record(&mut self, t: f64) -> f64 {
        let scale = 1.0 / Self::BUCKET;
        let bucket = (t * scale).floor() / scale;
        self.count += 1.0;
        if bucket > self.last_bucket {
            let current = self.count / (bucket - self.last_bucket);
            self.measured = current * Self::SMOOTHING + self.measured * (1.0 - Self::SMOOTHING);
            self.count = 0.0;
            self.last_bucket = bucket;
        }
        self.measured
    }

    /// The last measured rate.
    pub fn measured_rate(&self) -> f64 {
        self.measured
    }
}

/// botocore's `TokenBucket` with reservations instead of blocking: an
/// attempt that finds it empty takes its token ahead (the capacity goes
/// negative) and waits until the fill has paid it back, so waiting
/// attempts are served in order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucket {
    fill_rate: f64,
    max_capacity: f64,
    capacity: f64,
    last: Option<f64>,
}

impl TokenBucket {
    /// `_MIN_RATE`.
    pub const MIN_RATE: f64 = 0.5;

    /// A bucket with `max_rate`, empty.
    pub fn new(max_rate: f64, t: f64) -> Self {
        let mut b = Self { fill_rate: 0.0, max_capacity: 0.0, capacity: 0.0, last: None };
        b.set_max_rate(max_rate, t);
        b
    }

    fn refill(&mut self, t: f64) {
        let Some(last) = self.last else {
            self.last = Some(t);
            return;
        };
        self.capacity = self.max_capacity.min(self.capacity + (t - last) * self.fill_rate);
        self.last = Some(t);
    }

    /// The `max_rate` setter: refills at the old rate, then changes it.
    pub fn set_max_rate(&mut self, value: f64, t: f64) {
        self.refill(t);
        self.fill_rate = value.max(Self::MIN_RATE);
        self.max_capacity = if value >= 1.0 { value } else { 1.0 };
        self.capacity = self.capacity.min(self.max_capacity);
    }

    /// Takes a token at `t`; returns how long to wait for it (0 = at once).
    pub fn acquire(&mut self, t: f64) -> f64 {
        self.refill(t);
        let wait = if self.capacity >= 1.0 { 0.0 } else { (1.0 - self.capacity) / self.fill_rate };
        self.capacity -= 1.0;
        wait
    }

    /// The fill rate (botocore's `max_rate`).
    pub fn max_rate(&self) -> f64 {
        self.fill_rate
    }

    /// Tokens available (negative: reserved by waiting attempts).
    pub fn capacity(&self) -> f64 {
        self.capacity
    }
}

/// botocore's `ClientRateLimiter`.
#[derive(Debug, Clone)]
pub struct AdaptiveLimiter {
    cubic: Cubic,
    clocker: RateClocker,
    bucket: TokenBucket,
    enabled: bool,
}

impl AdaptiveLimiter {
    /// `_MAX_RATE_ADJUST_SCALE`.
    pub const MAX_RATE_ADJUST_SCALE: f64 = 2.0;

    /// A limiter created at `t` (seconds), as `register_retry_handler` makes it.
    pub fn new(t: f64) -> Self {
        Self {
            cubic: Cubic::new(0.0, t),
            clocker: RateClocker::new(t),
            bucket: TokenBucket::new(1.0, t),
            enabled: false,
        }
    }

    /// `on_sending_request`: the wait for a token (0 while not enabled).
    pub fn acquire(&mut self, t: f64) -> f64 {
        if self.enabled { self.bucket.acquire(t) } else { 0.0 }
    }

    /// `on_receiving_response`: returns the new fill rate.
    pub fn on_response(&mut self, t: f64, throttled: bool) -> f64 {
        let measured = self.clocker.record(t);
        let new_rate = if !throttled {
            self.cubic.success_received(t)
        } else {
            let rate = if self.enabled { measured.min(self.bucket.max_rate()) } else { measured };
            self.enabled = true;
            self.cubic.error_received(rate, t)
        };
        self.bucket.set_max_rate(new_rate.min(Self::MAX_RATE_ADJUST_SCALE * measured), t);
        self.bucket.max_rate()
    }

    /// Whether a throttling answer has switched the bucket on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The token bucket.
    pub fn bucket(&self) -> &TokenBucket {
        &self.bucket
    }

    /// The measured response rate.
    pub fn measured_rate(&self) -> f64 {
        self.clocker.measured_rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn sre_refuses_with_the_books_probability() {
        let mut t = SreThrottle::new(2.0, 120 * S);
        // 100 requests answered, 10 accepted: p = (100 - 20) / 101.
        for _ in 0..100 {
            assert_eq!(t.admit(0, 0.999_999), Admission::Send);
        }
        assert_eq!(t.counts(0), (0, 0), "requests in flight count when their outcome arrives");
        for _ in 0..10 {
            t.on_outcome(0, Outcome::Ok);
        }
        for _ in 0..90 {
            t.on_outcome(0, Outcome::Status(429));
        }
        let p = t.rejection_probability(S);
        assert!((p - 80.0 / 101.0).abs() < 1e-12, "{p}");
        assert_eq!(t.admit(S, 0.5), Admission::Refuse { p });
        // Refused requests count as requests.
        assert_eq!(t.counts(S), (101, 10));
        // While accepts >= requests / k nothing is refused.
        let mut t = SreThrottle::new(2.0, 120 * S);
        for _ in 0..100 {
            let _ = t.admit(0, 0.5);
            t.on_outcome(0, Outcome::Ok);
        }
        assert_eq!(t.rejection_probability(0), 0.0);
        // The window forgets: after two minutes the counts are gone.
        assert_eq!(t.counts(121 * S), (0, 0));
    }

    #[test]
    fn cubic_follows_botocore() {
        // An error at rate 10 cuts to beta * 10; successes then follow
        // scale * (dt - k)^3 + w_max with k = cbrt(w_max (1 - beta) / scale).
        let mut c = Cubic::new(10.0, 0.0);
        assert_eq!(c.error_received(10.0, 1.0), 7.0);
        let k = (10.0f64 * 0.3 / 0.4).powf(1.0 / 3.0);
        let at = |dt: f64| 0.4 * (dt - k).powi(3) + 10.0;
        for dt in [0.1, 0.5, 1.0, 2.0, 3.0] {
            assert!((c.success_received(1.0 + dt) - at(dt)).abs() < 1e-12);
        }
        // At the zero point the rate is back at w_max.
        assert!((c.success_received(1.0 + k) - 10.0).abs() < 1e-12);
    }

    #[test]
    fn bucket_takes_tokens_and_reserves_when_empty() {
        let mut b = TokenBucket::new(10.0, 0.0);
        assert!((b.acquire(0.0) - 0.1).abs() < 1e-12, "empty: wait 1 / rate for the first token");
        let mut b = TokenBucket::new(10.0, 0.0);
        assert_eq!(b.acquire(1.0), 0.0, "a second at 10/s filled it (capped at 10)");
        assert_eq!(b.capacity(), 9.0);
        for _ in 0..9 {
            assert_eq!(b.acquire(1.0), 0.0);
        }
        // Empty: the next two wait 0.1 s and 0.2 s.
        assert!((b.acquire(1.0) - 0.1).abs() < 1e-12);
        assert!((b.acquire(1.0) - 0.2).abs() < 1e-12);
        b.set_max_rate(0.1, 1.0);
        assert_eq!(b.max_rate(), TokenBucket::MIN_RATE);
    }

    #[test]
    fn adaptive_is_off_until_the_first_throttle() {
        let mut l = AdaptiveLimiter::new(0.0);
        for i in 0..100 {
            let t = i as f64 * 0.01;
            assert_eq!(l.acquire(t), 0.0);
            l.on_response(t + 0.005, false);
        }
        assert!(!l.enabled());
        let rate = l.on_response(1.2, true);
        assert!(l.enabled());
        // beta times the measured rate, within 2x the measured rate.
        assert!((rate - 0.7 * l.measured_rate()).abs() < 1e-9, "{rate} vs {}", l.measured_rate());
    }
}
