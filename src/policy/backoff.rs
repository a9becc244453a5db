//! Backoff and jitter formulas (DESIGN §2).
//!
//! `n = 1` is the first retry. Exponential: `limit = min(cap, base *
//! multiplier^(n-1))`; constant: `limit = base`. Jitter: none → `limit`;
//! full → `U(0, limit)`; equal → `limit/2 + U(0, limit/2)`; proportional →
//! `limit * U(1-r, 1+r)`. Decorrelated (AWS): `min(cap, U(base, prev*3))`
//! with `prev` starting at `base`.

use super::Outcome;
use crate::engine::{NEVER, Nanos};

/// How the wait limit grows with the retry number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BackoffKind {
    /// Retry at once.
    None,
    /// Always `base`.
    Constant,
    /// `base * multiplier^(n-1)`, capped.
    Exponential,
    /// `min(cap, U(base, prev * 3))`.
    Decorrelated,
}

/// How the wait is randomised below its limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Jitter {
    None,
    Full,
    Equal,
    /// `limit * U(1-r, 1+r)`.
    Proportional(f64),
}

/// A validated `[backoff]` table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub kind: BackoffKind,
    pub base: Nanos,
    /// [`NEVER`] = no cap.
    pub cap: Nanos,
    pub multiplier: f64,
    pub jitter: Jitter,
    /// The base after a throttling answer (429) when it differs (the AWS
    /// SDKs since 2026: 1 s for throttling, 50 ms otherwise).
    pub throttling_base: Option<Nanos>,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            kind: BackoffKind::None,
            base: 0,
            cap: NEVER,
            multiplier: 2.0,
            jitter: Jitter::None,
            throttling_base: None,
        }
    }
}

impl Backoff {
    /// The wait before retry `n` after `outcome`: [`Self::delay`] with
    /// `throttling_base` as the base after a 429.
    pub fn delay_after(&self, outcome: Outcome, n: u32, prev: Nanos, u: f64) -> Nanos {
        match self.throttling_base {
            Some(base) if outcome == Outcome::Status(429) => Backoff { base, ..*self }.delay(n, prev, u),
            _ => self.delay(n, prev, u),
        }
    }

    /// The limit of the wait before retry `n` (n ≥ 1), before jitter.
    pub fn limit(&self, n: u32) -> Nanos {
        match self.kind {
            BackoffKind::None => 0,
            BackoffKind::Constant => self.base.min(self.cap),
            BackoffKind::Exponential | BackoffKind::Decorrelated => {
                let grown = self.base as f64 * self.multiplier.powi(n.saturating_sub(1) as i32);
                saturating_nanos(grown).min(self.cap)
            }
        }
    }

    /// The wait before retry `n`, given the previous wait `prev` (for
    /// decorrelated; 0 before the first retry) and a uniform draw `u` in (0, 1).
    pub fn delay(&self, n: u32, prev: Nanos, u: f64) -> Nanos {
        if self.kind == BackoffKind::Decorrelated {
            let prev = if prev == 0 { self.base } else { prev };
            let hi = (prev as f64) * 3.0;
            let lo = self.base as f64;
            let d = lo + u * (hi - lo).max(0.0);
            return saturating_nanos(d).min(self.cap);
        }
        let limit = self.limit(n) as f64;
        let d = match self.jitter {
            Jitter::None => limit,
            Jitter::Full => u * limit,
            Jitter::Equal => limit / 2.0 + u * limit / 2.0,
            Jitter::Proportional(r) => limit * (1.0 - r + 2.0 * r * u),
        };
        saturating_nanos(d)
    }

    /// The longest wait retry `n` can draw (after any outcome).
    pub fn max_delay(&self, n: u32) -> Nanos {
        if let Some(base) = self.throttling_base.filter(|&b| b > self.base) {
            return Backoff { base, throttling_base: None, ..*self }.max_delay(n);
        }
        match (self.kind, self.jitter) {
            (BackoffKind::Decorrelated, _) => self.cap,
            (_, Jitter::Proportional(r)) => saturating_nanos(self.limit(n) as f64 * (1.0 + r)),
            _ => self.limit(n),
        }
    }

    /// Whether the wait is randomised.
    pub fn is_jittered(&self) -> bool {
        match self.kind {
            BackoffKind::None => false,
            BackoffKind::Decorrelated => true,
            _ => self.jitter != Jitter::None,
        }
    }
}

fn saturating_nanos(x: f64) -> Nanos {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= NEVER as f64 {
        NEVER
    } else {
        x.round() as Nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn expo(jitter: Jitter) -> Backoff {
        Backoff {
            kind: BackoffKind::Exponential,
            base: 100 * MS,
            cap: 1000 * MS,
            multiplier: 2.0,
            jitter,
            throttling_base: None,
        }
    }

    #[test]
    fn exponential_limit_grows_then_caps() {
        let b = expo(Jitter::None);
        let limits: Vec<Nanos> = (1..=6).map(|n| b.limit(n) / MS).collect();
        assert_eq!(limits, vec![100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.delay(3, 0, 0.9), 400 * MS);
    }

    #[test]
    fn constant_and_none() {
        let c = Backoff { kind: BackoffKind::Constant, base: 50 * MS, ..Backoff::default() };
        assert_eq!(c.delay(1, 0, 0.3), 50 * MS);
        assert_eq!(c.delay(7, 0, 0.3), 50 * MS);
        assert_eq!(Backoff::default().delay(4, 0, 0.5), 0);
    }

    #[test]
    fn jitter_bounds_and_means() {
        let n = 20_000;
        let mut stream = crate::engine::Stream::from_state(42);
        for (jitter, lo, hi, mean) in [
            (Jitter::Full, 0.0, 400.0, 200.0),
            (Jitter::Equal, 200.0, 400.0, 300.0),
            (Jitter::Proportional(0.2), 320.0, 480.0, 400.0),
        ] {
            let b = expo(jitter);
            let draws: Vec<f64> = (0..n).map(|_| b.delay(3, 0, stream.unit()) as f64 / MS as f64).collect();
            let m = draws.iter().sum::<f64>() / n as f64;
            assert!(draws.iter().all(|&d| d >= lo && d <= hi), "{jitter:?} out of [{lo}, {hi}]");
            // Uniform on [lo, hi]: sd = (hi-lo)/sqrt(12); 5 standard errors.
            let se = (hi - lo) / 12f64.sqrt() / (n as f64).sqrt();
            assert!((m - mean).abs() < 5.0 * se, "{jitter:?} mean {m} vs {mean}");
        }
    }

    #[test]
    fn decorrelated_stays_between_base_and_three_times_prev() {
        let b = Backoff { kind: BackoffKind::Decorrelated, base: 100 * MS, cap: 2000 * MS, ..Backoff::default() };
        let mut stream = crate::engine::Stream::from_state(7);
        let mut prev = 0;
        for n in 1..50 {
            let d = b.delay(n, prev, stream.unit());
            let hi = 3 * if prev == 0 { b.base } else { prev };
            assert!(d >= b.base && d <= hi.min(b.cap), "retry {n}: {d} not in [{}, {}]", b.base, hi);
            prev = d;
        }
        // u = 0.5 from prev = base: base + (3 base - base) / 2 = 2 base.
        assert_eq!(b.delay(1, 0, 0.5), 200 * MS);
    }
}

#[cfg(test)]
mod sequence_tests {
    use super::*;
    use crate::engine::Stream;

    const MS: Nanos = 1_000_000;

    /// The waits of retries 1..=6 for a fixed stream, in ms.
    fn sequence(b: &Backoff) -> Vec<f64> {
        let mut s = Stream::from_state(2024);
        let mut prev = 0;
        (1..=6)
            .map(|n| {
                let d = b.delay(n, prev, s.unit());
                prev = d;
                (d as f64 / MS as f64 * 1000.0).round() / 1000.0
            })
            .collect()
    }

    #[test]
    fn sequences_for_a_fixed_seed_follow_the_formulas() {
        let mut s = Stream::from_state(2024);
        let u: Vec<f64> = (0..6).map(|_| s.unit()).collect();
        let expo = |jitter| Backoff {
            kind: BackoffKind::Exponential,
            base: 100 * MS,
            cap: 1000 * MS,
            multiplier: 2.0,
            jitter,
            throttling_base: None,
        };
        let limits = [100.0, 200.0, 400.0, 800.0, 1000.0, 1000.0];
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        let full: Vec<f64> = (0..6).map(|i| round(u[i] * limits[i])).collect();
        let equal: Vec<f64> = (0..6).map(|i| round(limits[i] / 2.0 + u[i] * limits[i] / 2.0)).collect();
        let prop: Vec<f64> = (0..6).map(|i| round(limits[i] * (0.8 + 0.4 * u[i]))).collect();
        assert_eq!(sequence(&expo(Jitter::None)), limits.to_vec());
        assert_eq!(sequence(&expo(Jitter::Full)), full);
        assert_eq!(sequence(&expo(Jitter::Equal)), equal);
        assert_eq!(sequence(&expo(Jitter::Proportional(0.2))), prop);
        let dec = Backoff { kind: BackoffKind::Decorrelated, base: 100 * MS, cap: 1000 * MS, ..Backoff::default() };
        let mut prev = 100.0;
        let expected: Vec<f64> = u
            .iter()
            .map(|u| {
                let d = (100.0 + u * (prev * 3.0 - 100.0)).min(1000.0);
                prev = (d * 1e6).round() / 1e6;
                round(d)
            })
            .collect();
        assert_eq!(sequence(&dec), expected);
        // Golden: the generator is fixed, so this sequence never changes.
        assert_eq!(sequence(&expo(Jitter::Full)), vec![62.277, 19.446, 119.43, 92.949, 830.578, 552.421]);
    }

    #[test]
    fn throttling_answers_use_their_own_base_as_the_aws_sdks_do() {
        // AWS 2026: t_i = rand * min(base_scale * 2^(i-1), 20 s), base 1 s after
        // throttling, 50 ms otherwise.
        let b = Backoff {
            kind: BackoffKind::Exponential,
            base: 50 * MS,
            cap: 20_000 * MS,
            multiplier: 2.0,
            jitter: Jitter::Full,
            throttling_base: Some(1000 * MS),
        };
        assert_eq!(b.delay_after(Outcome::Status(503), 3, 0, 0.5), 100 * MS);
        assert_eq!(b.delay_after(Outcome::Status(429), 3, 0, 0.5), 2000 * MS);
        assert_eq!(b.delay_after(Outcome::Status(429), 6, 0, 0.5), 10_000 * MS, "capped at 20 s");
        assert_eq!(b.max_delay(2), 2000 * MS, "the larger base bounds every wait");
    }
}
