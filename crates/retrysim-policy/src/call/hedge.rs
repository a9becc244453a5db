//! The hedging clock's steps of one call (a policy with `[hedging]`): when
//! the next copy is due, whether it may go, and what the guards learn of
//! each copy. The first copy goes out like any first attempt
//! ([`CallState::gate`], [`CallState::on_send`]).

use super::{CallState, Guards};
use crate::decision::DenyReason;
use crate::hedge::HedgeSpec;
use crate::throttle::Admission;
use crate::time::{NEVER, Nanos};
use crate::{Outcome, Policy};

impl CallState {
    /// The first copy of a hedged call went out at `now`: the extra-load
    /// cap counts it. Returns when the second copy is due (see
    /// [`CallState::next_hedge`]).
    #[inline]
    pub fn hedge_started<G: Guards>(&mut self, spec: &HedgeSpec, guards: &mut G, now: Nanos) -> Option<Nanos> {
        if let Some(h) = guards.hedger() {
            h.on_first(now);
        }
        Self::next_hedge(spec, guards, now, 1)
    }

    /// The wait from `now` until the next copy of a call that has sent
    /// `sent` copies is due: the hedging delay, or `None` when no copy is
    /// left or a quantile delay has too little data yet.
    #[inline]
    pub fn next_hedge<G: Guards>(spec: &HedgeSpec, guards: &mut G, now: Nanos, sent: u32) -> Option<Nanos> {
        if sent >= spec.max_attempts {
            return None;
        }
        guards.hedger().and_then(|h| h.next_delay(now))
    }

    /// Whether copy number `sent + 1` may go now, after the hedging delay
    /// (`trigger` = `None`) or a non-fatal answer or per-try timeout of a
    /// copy (`trigger` = that outcome). Checked in order: copies left
    /// (`max_attempts`), the deadline less `min_attempt_time` (`deadline`),
    /// the breaker (`breaker_open`), the budget for the trigger's cost (a
    /// timeout's after the delay) and the extra-load cap (`budget`), and
    /// the throttle, which a hedge does not wait for (`throttled`; `draw`
    /// is called once, only when the policy has a throttle). A copy that
    /// may go spends its budget cost and counts against the cap; send it
    /// with [`CallState::on_send`].
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn hedge_gate<G: Guards>(
        &mut self,
        policy: &Policy,
        spec: &HedgeSpec,
        guards: &mut G,
        now: Nanos,
        sent: u32,
        trigger: Option<Outcome>,
        draw: impl FnOnce() -> f64,
    ) -> Result<(), DenyReason> {
        if sent >= spec.max_attempts {
            return Err(DenyReason::Attempts);
        }
        if self.deadline_at != NEVER && now.saturating_add(policy.min_attempt_time) >= self.deadline_at {
            return Err(DenyReason::Deadline);
        }
        let cost_outcome = trigger.unwrap_or(Outcome::Timeout);
        if !guards.breaker().is_none_or(|b| b.allows(now)) {
            return Err(DenyReason::BreakerOpen);
        }
        if !guards.budget().is_none_or(|b| b.grants(now, cost_outcome)) {
            return Err(DenyReason::Budget);
        }
        if !guards.hedger().is_none_or(|h| h.grants(now)) {
            return Err(DenyReason::Budget);
        }
        if let Some(t) = guards.throttle() {
            match t.admit(now, draw()) {
                Admission::Send => {}
                refused => {
                    if matches!(refused, Admission::Wait(_)) {
                        // Hedges do not wait for a token: the moment has passed.
                        t.release();
                    }
                    return Err(DenyReason::Throttled);
                }
            }
        }
        self.retry_cost = guards.budget().map_or(0.0, |b| b.spend_retry(cost_outcome));
        if let Some(h) = guards.hedger() {
            h.on_hedge(now);
        }
        Ok(())
    }

    /// The guards learn the end of copy `copy` (0 = the first), sent at
    /// `sent`: its outcome at `now` (a timeout for a copy given up), or,
    /// when `counts` is false, that it was cancelled because another copy
    /// answered (the budget forgets it; breaker and throttle learn
    /// nothing). The first copy's latency feeds a quantile delay.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn learn_copy<G: Guards>(
        policy: &Policy,
        spec: &HedgeSpec,
        guards: &mut G,
        now: Nanos,
        copy: u32,
        sent: Nanos,
        outcome: Outcome,
        counts: bool,
    ) {
        let latency = now.saturating_sub(sent);
        if copy == 0
            && let Some(h) = guards.hedger()
        {
            h.record(now, latency);
        }
        if !counts {
            if let Some(b) = guards.budget() {
                b.on_cancel(copy > 0);
            }
            return;
        }
        let retryable = policy.retry_on.contains(outcome) || spec.is_non_fatal(outcome);
        if let Some(b) = guards.budget() {
            b.on_outcome(outcome, copy > 0, retryable, 0.0);
        }
        if let Some(b) = guards.breaker() {
            b.on_outcome(now, outcome, latency);
        }
        if let Some(t) = guards.throttle() {
            t.on_outcome(now, outcome);
        }
    }
}
