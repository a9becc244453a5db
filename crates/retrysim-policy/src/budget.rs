//! Retry budgets with the semantics of the systems they come from.
//!
//! - [`BudgetKind::TokenBucket`]: gRPC A6 `retryThrottling`. The bucket
//!   starts full at `max_tokens`; every failure whose outcome is retryable
//!   takes one token, every success adds `token_ratio`; retries are allowed
//!   only while `tokens > max_tokens / 2`.
//! - [`BudgetKind::Quota`]: the AWS SDK "standard" retry quota. It starts
//!   at `initial`; a retry costs `retry_cost` (`timeout_cost` after a
//!   timeout, `throttling_cost` after a 429) and is refused when the quota
//!   cannot pay; a success refunds the cost of the retry that succeeded, or
//!   `success_refund` when it needed no retry (never above `initial`).
//! - [`BudgetKind::Ratio`]: Finagle `RetryBudget` / tower `TpsBudget`:
//!   within the last `ttl`, retries may be at most `ratio` × requests plus
//!   `min_per_sec` × `ttl`.
//! - [`BudgetKind::Concurrency`]: Envoy's retry budget: active retries may be
//!   at most `budget_percent`% of active requests, and at least
//!   `min_retry_concurrency`. As in Envoy, a retry is active from the
//!   moment it is decided, through its backoff, until its outcome.

use crate::Outcome;
use crate::time::Nanos;
use std::collections::VecDeque;

/// A validated `[budget]` table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetKind {
    TokenBucket { max_tokens: f64, token_ratio: f64 },
    Quota { initial: f64, retry_cost: f64, timeout_cost: f64, throttling_cost: f64, success_refund: f64 },
    Ratio { ratio: f64, min_per_sec: f64, ttl: Nanos },
    Concurrency { budget_percent: f64, min_retry_concurrency: u32 },
}

/// Who shares one budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetScope {
    /// One budget per client instance.
    Client,
    /// One budget per client class.
    Shared,
}

/// A validated `[budget]`: its kind and scope.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetSpec {
    pub kind: BudgetKind,
    pub scope: BudgetScope,
}

/// A budget: its kind, kept once, and its [`BudgetState`].
///
/// A client class whose instances each keep a budget of one kind needs the
/// kind once: it can keep one `Budget` and a [`BudgetState`] per instance,
/// and [`Budget::replace_state`] to serve each instance in turn.
#[derive(Debug, Clone)]
pub struct Budget {
    kind: BudgetKind,
    state: BudgetState,
}

/// What one budget of a given kind changes as it runs (16 bytes), without
/// its kind: a client instance's own budget.
#[derive(Debug, Clone)]
pub struct BudgetState(State);

#[derive(Debug, Clone)]
enum State {
    /// Token bucket tokens or quota capacity.
    Level(f64),
    /// Ratio: the requests sent within `ttl`.
    Recent(Box<Recent>),
    /// Concurrency: requests and retries in flight (each one a request
    /// in memory, so never near `u32::MAX`).
    Active { requests: u32, retries: u32 },
}

/// The ratio budget's requests within `ttl`.
#[derive(Debug, Clone, Default)]
struct Recent {
    /// (time, is_retry), oldest first.
    sent: VecDeque<(Nanos, bool)>,
    retries: u64,
}

impl BudgetState {
    /// The state of a fresh budget of `kind`.
    pub fn new(kind: BudgetKind) -> Self {
        Self(match kind {
            BudgetKind::TokenBucket { max_tokens, .. } => State::Level(max_tokens),
            BudgetKind::Quota { initial, .. } => State::Level(initial),
            BudgetKind::Ratio { .. } => State::Recent(Box::default()),
            BudgetKind::Concurrency { .. } => State::Active { requests: 0, retries: 0 },
        })
    }

    /// Whether this is the state of a budget of `kind`.
    fn fits(&self, kind: BudgetKind) -> bool {
        matches!(
            (kind, &self.0),
            (BudgetKind::TokenBucket { .. } | BudgetKind::Quota { .. }, State::Level(_))
                | (BudgetKind::Ratio { .. }, State::Recent(_))
                | (BudgetKind::Concurrency { .. }, State::Active { .. })
        )
    }
}

impl Budget {
    /// A fresh budget.
    pub fn new(kind: BudgetKind) -> Self {
        Self { kind, state: BudgetState::new(kind) }
    }

    /// Its kind.
    pub fn kind(&self) -> BudgetKind {
        self.kind
    }

    /// Puts `state`, the state of another budget of the same kind, in
    /// place of this budget's own, which it returns: the budget then runs on
    /// from where that one was. A state of another kind is taken as a fresh
    /// one.
    pub fn replace_state(&mut self, state: BudgetState) -> BudgetState {
        let state = if state.fits(self.kind) { state } else { BudgetState::new(self.kind) };
        std::mem::replace(&mut self.state, state)
    }

    /// Tokens (token bucket) or capacity (quota) left; `None` for the other kinds.
    pub fn level(&self) -> Option<f64> {
        match self.state.0 {
            State::Level(level) => Some(level),
            _ => None,
        }
    }

    /// Ratio: (first attempts, retries) sent within `ttl` before `now`;
    /// concurrency: (attempts, retries) in flight; (0, 0) for the others.
    pub fn counts(&mut self, now: Nanos) -> (u64, u64) {
        self.expire(now);
        match &self.state.0 {
            State::Recent(r) => (r.sent.len() as u64 - r.retries, r.retries),
            State::Active { requests, retries } => (u64::from(*requests), u64::from(*retries)),
            State::Level(_) => (0, 0),
        }
    }

    fn expire(&mut self, now: Nanos) {
        if let (BudgetKind::Ratio { ttl, .. }, State::Recent(r)) = (self.kind, &mut self.state.0) {
            while let Some(&(t, retry)) = r.sent.front() {
                if t.saturating_add(ttl) > now {
                    break;
                }
                r.sent.pop_front();
                if retry {
                    r.retries -= 1;
                }
            }
        }
    }

    /// The cost of a retry after `outcome` (quota only).
    fn quota_cost(&self, outcome: Outcome) -> f64 {
        match self.kind {
            BudgetKind::Quota { retry_cost, timeout_cost, throttling_cost, .. } => match outcome {
                Outcome::Timeout => timeout_cost,
                Outcome::Status(429) => throttling_cost,
                _ => retry_cost,
            },
            _ => 0.0,
        }
    }

    /// Whether a retry after `outcome` would be granted now. Spends nothing.
    pub fn grants(&mut self, now: Nanos, outcome: Outcome) -> bool {
        self.expire(now);
        match (self.kind, &self.state.0) {
            (BudgetKind::TokenBucket { max_tokens, .. }, &State::Level(level)) => level > max_tokens / 2.0,
            (BudgetKind::Quota { .. }, &State::Level(level)) => level >= self.quota_cost(outcome),
            (BudgetKind::Ratio { ratio, min_per_sec, ttl }, State::Recent(r)) => {
                let requests = (r.sent.len() as u64 - r.retries) as f64;
                let reserve = min_per_sec * ttl as f64 / 1e9;
                (r.retries + 1) as f64 <= ratio * requests + reserve
            }
            (
                BudgetKind::Concurrency { budget_percent, min_retry_concurrency },
                &State::Active { requests, retries },
            ) => {
                let limit = (budget_percent / 100.0 * requests as f64).max(min_retry_concurrency as f64);
                ((u64::from(retries) + 1) as f64) <= limit
            }
            // `replace_state` keeps the state fitting the kind.
            _ => true,
        }
    }

    /// A retry after `outcome` is made: spend what it costs. Returns the
    /// cost to refund if it succeeds (quota).
    pub fn spend_retry(&mut self, outcome: Outcome) -> f64 {
        let cost = self.quota_cost(outcome);
        match (self.kind, &mut self.state.0) {
            (BudgetKind::Quota { .. }, State::Level(level)) => *level -= cost,
            // Envoy counts a retry from the moment it is decided, through
            // its backoff, until its answer (envoyproxy/envoy#30205).
            (_, State::Active { retries, .. }) => *retries = retries.saturating_add(1),
            _ => {}
        }
        cost
    }

    /// An attempt is sent (`retry` = not the first attempt).
    pub fn on_send(&mut self, now: Nanos, retry: bool) {
        self.expire(now);
        match &mut self.state.0 {
            State::Recent(r) => {
                r.sent.push_back((now, retry));
                if retry {
                    r.retries += 1;
                }
            }
            // A retry was counted when it was decided (`spend_retry`).
            State::Active { requests, .. } => *requests = requests.saturating_add(1),
            State::Level(_) => {}
        }
    }

    /// A retry counted when it was decided is not sent after all (a
    /// throttle refused it): the concurrency budget lets it go.
    pub fn release_retry(&mut self) {
        if let State::Active { retries, .. } = &mut self.state.0 {
            *retries = retries.saturating_sub(1);
        }
    }

    /// An attempt was given up without an outcome (a hedged copy that lost
    /// the race): only the concurrency budget's count of active requests
    /// changes.
    pub fn on_cancel(&mut self, retry: bool) {
        if let State::Active { requests, retries } = &mut self.state.0 {
            *requests = requests.saturating_sub(1);
            if retry {
                *retries = retries.saturating_sub(1);
            }
        }
    }

    /// An attempt ended with `outcome`. `retryable`: the outcome is in the
    /// policy's `retry_on`. `refund`: what [`Self::spend_retry`] cost for
    /// this attempt (0 for a first attempt).
    pub fn on_outcome(&mut self, outcome: Outcome, retry: bool, retryable: bool, refund: f64) {
        match (self.kind, &mut self.state.0) {
            (BudgetKind::TokenBucket { max_tokens, token_ratio }, State::Level(level)) => {
                if outcome == Outcome::Ok {
                    *level = (*level + token_ratio).min(max_tokens);
                } else if retryable {
                    *level = (*level - 1.0).max(0.0);
                }
            }
            (BudgetKind::Quota { initial, success_refund, .. }, State::Level(level)) if outcome == Outcome::Ok => {
                let back = if retry { refund } else { success_refund };
                *level = (*level + back).min(initial);
            }
            (_, State::Active { .. }) => self.on_cancel(retry),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn token_bucket_follows_grpc_a6() {
        let mut b = Budget::new(BudgetKind::TokenBucket { max_tokens: 10.0, token_ratio: 0.1 });
        assert!(b.grants(0, Outcome::Status(503)));
        // Five retryable failures: 10 -> 5, which is not > 5: throttled.
        for _ in 0..4 {
            b.on_outcome(Outcome::Status(503), false, true, 0.0);
        }
        assert_eq!(b.level(), Some(6.0));
        assert!(b.grants(0, Outcome::Status(503)));
        b.on_outcome(Outcome::Status(503), false, true, 0.0);
        assert!(!b.grants(0, Outcome::Status(503)));
        // A non-retryable failure costs nothing; ten successes add one token.
        b.on_outcome(Outcome::Status(400), false, false, 0.0);
        assert_eq!(b.level(), Some(5.0));
        for _ in 0..10 {
            b.on_outcome(Outcome::Ok, false, false, 0.0);
        }
        assert!((b.level().unwrap() - 6.0).abs() < 1e-9);
        assert!(b.grants(0, Outcome::Status(503)));
        // Never below 0 nor above max.
        for _ in 0..100 {
            b.on_outcome(Outcome::Timeout, true, true, 0.0);
        }
        assert_eq!(b.level(), Some(0.0));
        for _ in 0..1000 {
            b.on_outcome(Outcome::Ok, false, false, 0.0);
        }
        assert_eq!(b.level(), Some(10.0));
    }

    #[test]
    fn quota_drains_by_cost_and_refills_by_refund() {
        let kind = BudgetKind::Quota {
            initial: 500.0,
            retry_cost: 5.0,
            timeout_cost: 10.0,
            throttling_cost: 5.0,
            success_refund: 1.0,
        };
        let mut b = Budget::new(kind);
        assert_eq!(b.spend_retry(Outcome::Status(503)), 5.0);
        assert_eq!(b.spend_retry(Outcome::Timeout), 10.0);
        assert_eq!(b.level(), Some(485.0));
        // A successful retry refunds its own cost; a first-try success refunds 1.
        b.on_outcome(Outcome::Ok, true, false, 10.0);
        assert_eq!(b.level(), Some(495.0));
        b.on_outcome(Outcome::Ok, false, false, 0.0);
        assert_eq!(b.level(), Some(496.0));
        b.on_outcome(Outcome::Ok, false, false, 0.0);
        b.on_outcome(Outcome::Ok, false, false, 0.0);
        b.on_outcome(Outcome::Ok, false, false, 0.0);
        b.on_outcome(Outcome::Ok, false, false, 0.0);
        b.on_outcome(Outcome::Ok, false, false, 0.0);
        assert_eq!(b.level(), Some(500.0), "capped at initial");
        // 50 timeouts drain it: 500 / 10.
        for _ in 0..50 {
            assert!(b.grants(0, Outcome::Timeout));
            b.spend_retry(Outcome::Timeout);
        }
        assert!(!b.grants(0, Outcome::Timeout));
        assert!(!b.grants(0, Outcome::Status(503)));
    }

    #[test]
    fn ratio_allows_a_share_of_recent_requests_plus_a_reserve() {
        let mut b = Budget::new(BudgetKind::Ratio { ratio: 0.2, min_per_sec: 1.0, ttl: 10 * S });
        // Reserve: 1/s * 10 s = 10 retries with no traffic.
        for _ in 0..10 {
            assert!(b.grants(0, Outcome::Status(503)));
            b.on_send(0, true);
        }
        assert!(!b.grants(0, Outcome::Status(503)));
        // 100 requests allow 20 more.
        for _ in 0..100 {
            b.on_send(S, false);
        }
        for _ in 0..20 {
            assert!(b.grants(S, Outcome::Status(503)));
            b.on_send(S, true);
        }
        assert!(!b.grants(S, Outcome::Status(503)));
        // After ttl everything has expired: the reserve again.
        assert!(b.grants(12 * S, Outcome::Status(503)));
    }

    #[test]
    fn concurrency_limits_active_retries() {
        let mut b = Budget::new(BudgetKind::Concurrency { budget_percent: 20.0, min_retry_concurrency: 3 });
        for _ in 0..3 {
            assert!(b.grants(0, Outcome::Status(503)));
            b.spend_retry(Outcome::Status(503));
            b.on_send(0, true);
        }
        assert!(!b.grants(0, Outcome::Status(503)));
        for _ in 0..17 {
            b.on_send(0, false);
        }
        // 20 active: 20% = 4 retries.
        assert!(b.grants(0, Outcome::Status(503)));
        b.spend_retry(Outcome::Status(503));
        b.on_send(0, true);
        assert!(!b.grants(0, Outcome::Status(503)));
        b.on_outcome(Outcome::Ok, true, false, 0.0);
        assert!(b.grants(0, Outcome::Status(503)));
    }

    #[test]
    fn a_concurrency_budget_counts_retries_waiting_in_backoff_as_envoy_does() {
        let mut b = Budget::new(BudgetKind::Concurrency { budget_percent: 20.0, min_retry_concurrency: 3 });
        // Three retries decided and waiting in their backoff, none sent yet:
        // Envoy counts them all, so a fourth is refused.
        for _ in 0..3 {
            assert!(b.grants(0, Outcome::Status(503)));
            b.spend_retry(Outcome::Status(503));
        }
        assert!(!b.grants(0, Outcome::Status(503)));
        // One of them is refused by a throttle before it goes: its place is free.
        b.release_retry();
        assert!(b.grants(0, Outcome::Status(503)));
        // Sending the others adds active requests, not retries.
        b.on_send(0, true);
        assert!(b.grants(0, Outcome::Status(503)));
    }
}
