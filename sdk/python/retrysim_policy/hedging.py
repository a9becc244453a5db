"""Hedged calls (a policy with ``[hedging]``), with the rules of the Rust
crate's ``HedgedState``: the first copy goes out like any first attempt;
each further copy after the hedging delay, or at once after a non-fatal
answer or a copy's per-try timeout; the first final answer ends the call
and cancels the copies still out. A copy whose timeout passed stays in the
race and is given up only when no further copy may go."""

from __future__ import annotations

from typing import Callable, Optional

from .latency import LATENCY_PERIOD, LatencyWindow
from .machines import Budget
from .policy import NEVER, Budget as BudgetSpec, Policy
from .state import Shared, attempt_timeout

EXTRA_LOAD_TTL = 10 * 10**9


class Hedger:
    """The hedging clock of a client: the delay (fixed, or a quantile of
    the latency of first copies learnt in a :class:`LatencyWindow`) and the
    extra-load cap (a ratio budget of hedges to first attempts over 10 s)."""

    def __init__(self, p: Policy):
        self.h = p.hedging
        self.latency = LatencyWindow(LATENCY_PERIOD)
        x = self.h.max_extra_load
        self.extra = None if x is None else Budget(
            BudgetSpec("ratio", {"ratio": x, "min_per_sec": 0.0, "ttl": EXTRA_LOAD_TTL}, "client"))

    def next_delay(self, now: int) -> Optional[int]:
        """The wait before the next copy of a call whose copy was sent at
        ``now``; None while a quantile delay has too little data."""
        if self.h.quantile is None:
            return self.h.delay
        self.latency.advance(now)
        return self.latency.quantile(self.h.quantile)

    def record(self, now: int, latency: int) -> None:
        """The latency of a call's first copy (to its answer, or to the
        moment it was given up or cancelled), seen at ``now``."""
        if self.h.quantile is not None:
            self.latency.record(now, latency)

    def on_first(self, now: int) -> None:
        if self.extra:
            self.extra.on_send(now, False)

    def grants(self, now: int) -> bool:
        return self.extra is None or self.extra.grants(now, "timeout")

    def on_hedge(self, now: int) -> None:
        if self.extra:
            self.extra.on_send(now, True)

    def snapshot(self, now: int) -> Optional[dict]:
        if self.extra is None:
            return None
        s = self.extra.snapshot(now)
        return {"first_attempts": s["first_attempts"], "hedges": s["retries"]}


def learn_copy(p: Policy, s: Shared, now: int, copy: int, sent: int, outcome: str, counts: bool) -> None:
    """The guards learn the end of a copy (``counts`` false: cancelled)."""
    latency = max(now - sent, 0)
    if copy == 0:
        # Only first copies teach a quantile delay (HedgedState made s.hedger).
        s.hedger.record(now, latency)
    if not counts:
        if s.budget:
            s.budget.on_cancel(copy > 0)
        return
    retryable = p.retry_on.contains(outcome) or p.hedging.is_non_fatal(outcome)
    if s.budget:
        s.budget.on_outcome(outcome, copy > 0, retryable, 0.0)
    if s.breaker:
        s.breaker.on_outcome(now, outcome, latency)
    if s.throttle:
        s.throttle.on_outcome(now, outcome)


class HedgedState:
    """One hedged call. ``shared.hedger`` is the client's :class:`Hedger`."""

    def __init__(self, p: Policy, shared: Shared, now: int, draw: Callable[[], float]):
        self.p, self.s, self.draw = p, shared, draw
        if getattr(shared, "hedger", None) is None:
            shared.hedger = Hedger(p)
        self.deadline_at = NEVER if p.deadline == NEVER else min(now + p.deadline, NEVER)
        self.attempts = 0
        self.admitted = False
        self.live = []  # [copy, sent, expired]
        self.sent = 0
        self.due_at = None

    def _next(self, now: int) -> None:
        if self.sent >= self.p.hedging.max_attempts:
            self.due_at = None
            return
        d = self.s.hedger.next_delay(now)
        self.due_at = None if d is None else min(now + d, NEVER)

    def _send(self, now: int) -> int:
        self.attempts += 1
        if self.s.budget:
            self.s.budget.on_send(now, self.attempts > 1)
        if self.s.breaker:
            self.s.breaker.on_send(now)
        return attempt_timeout(self.p, now, self.deadline_at)

    def before_first(self, now: int):
        """("send", timeout) | ("wait", ns) | ("refuse", reason)."""
        s = self.s
        if not self.admitted and s.breaker and not s.breaker.allows_first(now):
            return ("refuse", "breaker_open")
        if s.throttle is not None and not self.admitted:
            a = s.throttle.admit(now, self.draw())
            if a[0] == "refuse":
                return ("refuse", "throttled")
            if a[0] == "wait":
                if self.deadline_at == NEVER or now + a[1] + self.p.min_attempt_time < self.deadline_at:
                    self.admitted = True
                    return ("wait", a[1])
                s.throttle.release()
                return ("refuse", "throttled")
        self.admitted = False
        timeout = self._send(now)
        self.live.append([0, now, False])
        self.sent = 1
        s.hedger.on_first(now)
        self._next(now)
        return ("send", timeout)

    def _try_hedge(self, now: int, trigger: Optional[str]):
        """("send", copy, timeout) | ("refuse", reason)."""
        p, s = self.p, self.s
        if self.sent >= p.hedging.max_attempts:
            return ("refuse", "max_attempts")
        if self.deadline_at != NEVER and now + p.min_attempt_time >= self.deadline_at:
            return ("refuse", "deadline")
        cost = trigger if trigger is not None else "timeout"
        if s.breaker and not s.breaker.allows(now):
            return ("refuse", "breaker_open")
        if s.budget and not s.budget.grants(now, cost):
            return ("refuse", "budget")
        if not s.hedger.grants(now):
            return ("refuse", "budget")
        if s.throttle:
            a = s.throttle.admit(now, self.draw())
            if a[0] != "send":
                if a[0] == "wait":
                    s.throttle.release()
                return ("refuse", "throttled")
        if s.budget:
            s.budget.spend_retry(cost)
        s.hedger.on_hedge(now)
        copy = self.sent
        self.sent += 1
        timeout = self._send(now)
        self.live.append([copy, now, False])
        self._next(now)
        return ("send", copy, timeout)

    def on_hedge_due(self, now: int):
        self.due_at = None
        return self._try_hedge(now, None)

    def on_copy_outcome(self, copy: int, outcome: str, now: int) -> dict:
        """{"end", "reason"?, "hedge", "given_up", "cancel"} as in the vectors."""
        c = next((c for c in self.live if c[0] == copy), None)
        if c is None:
            return {"end": None, "hedge": None, "given_up": [], "cancel": []}
        self.live.remove(c)
        learn_copy(self.p, self.s, now, c[0], c[1], outcome, True)
        if not self.p.hedging.is_non_fatal(outcome):
            rest, self.live = self.live, []
            for r in rest:
                learn_copy(self.p, self.s, now, r[0], r[1], "timeout", False)
            self.due_at = None
            out = {"end": "done" if outcome == "ok" else "give_up", "hedge": None, "given_up": [],
                   "cancel": [r[0] for r in rest]}
            if outcome != "ok":
                out["reason"] = "not_retryable"
            return out
        return self._hedge_or_settle(now, outcome)

    def on_copy_expired(self, copy: int, now: int) -> dict:
        c = next((c for c in self.live if c[0] == copy), None)
        if c is None:
            return {"end": None, "hedge": None, "given_up": [], "cancel": []}
        c[2] = True
        return self._hedge_or_settle(now, "timeout")

    def _hedge_or_settle(self, now: int, trigger: str) -> dict:
        r = self._try_hedge(now, trigger)
        if r[0] == "send":
            return {"end": None, "hedge": r, "given_up": [], "cancel": []}
        gone = [c for c in self.live if c[2]]
        self.live = [c for c in self.live if not c[2]]
        for c in gone:
            learn_copy(self.p, self.s, now, c[0], c[1], "timeout", True)
        out = {"end": None, "hedge": r, "given_up": [c[0] for c in gone], "cancel": []}
        if not self.live:
            self.due_at = None
            out["end"], out["reason"] = "give_up", r[1]
        return out
