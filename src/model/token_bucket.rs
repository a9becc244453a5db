//! A server's rate limiter: a token bucket refilled at `rate` tokens per
//! second up to `burst`, starting full; a request takes one token or is
//! refused. The simulator's hosts and the emulator's servers both use it.

use crate::config::RateLimit;
use crate::engine::Nanos;

/// Tokens left and when they were last refilled.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TokenBucket {
    tokens: f64,
    last_refill: Nanos,
}

impl TokenBucket {
    /// A full bucket of `limit`, as at time 0.
    pub fn new(limit: &RateLimit) -> TokenBucket {
        TokenBucket { tokens: limit.burst, last_refill: 0 }
    }

    /// Refills for the time since the last refill and takes a token at
    /// `now`; false (nothing taken) when less than one is left.
    pub fn take(&mut self, limit: &RateLimit, now: Nanos) -> bool {
        let elapsed = now.saturating_sub(self.last_refill) as f64 / 1e9;
        self.tokens = (self.tokens + elapsed * limit.rate).min(limit.burst);
        self.last_refill = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let limit = RateLimit { rate: 10.0, burst: 3.0, status: 429, retry_after: None };
        let mut b = TokenBucket::new(&limit);
        assert!((0..3).all(|_| b.take(&limit, 0)), "the burst is there at once");
        assert!(!b.take(&limit, 0));
        assert!(!b.take(&limit, 99_000_000), "0.99 tokens after 99 ms");
        assert!(b.take(&limit, 100_000_000), "one token per 100 ms");
        assert!(!b.take(&limit, 100_000_000));
        assert!((0..3).all(|_| b.take(&limit, 60_000_000_000)) && !b.take(&limit, 60_000_000_000), "at most the burst");
    }
}
