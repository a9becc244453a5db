//! Backoff and jitter formulas.
//!
//! `n = 1` is the first retry. Exponential: `limit = min(cap, base *
//! multiplier^(n-1))`; constant: `limit = base`. Jitter: none → `limit`;
//! full → `U(0, limit)`; equal → `limit/2 + U(0, limit/2)`; proportional →
//! `limit * U(1-r, 1+r)`. Decorrelated (AWS): `min(cap, U(base, prev*3))`
//! with `prev` starting at `base`.

use super::Outcome;
use crate::time::{NEVER, Nanos};

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
    /// The wait is its limit.
    None,
    /// `U(0, limit)`.
    Full,
    /// `limit/2 + U(0, limit/2)`.
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
    #[inline]
    pub fn delay_after(&self, outcome: Outcome, n: u32, prev: Nanos, u: f64) -> Nanos {
        match self.throttling_base {
            Some(base) if outcome == Outcome::Status(429) => Backoff { base, ..*self }.delay(n, prev, u),
            _ => self.delay(n, prev, u),
        }
    }

    /// The limit of the wait before retry `n` (n ≥ 1), before jitter.
    #[inline]
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
    #[inline]
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

#[inline]
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
}
