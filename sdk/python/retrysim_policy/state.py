"""The retry decision (in the order the Rust crate retrysim-policy decides) and one call's state, against an
injected clock (``now`` in nanoseconds) and injected random draws."""

from __future__ import annotations

from typing import Callable, Optional

from .machines import AwsAdaptive, Breaker, Budget, SreThrottle, backoff_delay
from .policy import NEVER, Policy, nothing_executed


NOT_FOUND = "404"


def decide(p: Policy, outcome: str, idempotent: bool, key_sent: bool, attempts_made: int, now: int,
           deadline_at: int, retry_after: Optional[int], backoff_wait: int, breaker_closed: bool,
           budget_grants: bool, query: bool = False):
    """("retry", wait) or ("deny", reason), checking in order: retryable,
    safe, attempts left, breaker, Retry-After, deadline, budget. ``query``:
    the failed attempt was a status query (``on_unknown = "query"``); its
    ``not found`` (404) sends the operation again at once."""
    not_found = query and outcome == NOT_FOUND
    if not not_found and not p.retry_on.contains(outcome):
        return ("deny", "not_retryable")
    unknown = not query and not nothing_executed(outcome)
    if query or not unknown or p.on_unknown == "query":
        safe = True
    elif p.on_unknown == "give_up":
        safe = False
    else:
        safe = idempotent or key_sent or p.retry_unknown_without_key
    if not safe:
        return ("deny", "unsafe")
    if attempts_made >= p.max_attempts:
        return ("deny", "max_attempts")
    if not breaker_closed:
        return ("deny", "breaker_open")
    respected = retry_after if p.respect_retry_after else None
    if not_found:
        wait = 0
    elif respected is not None:
        limit = p.max_retry_after if p.max_retry_after is not None else p.deadline
        if respected > limit:
            return ("deny", "retry_after_too_long")
        if p.retry_after_clamp is not None:
            wait = max(backoff_wait, min(respected, min(backoff_wait + p.retry_after_clamp, NEVER)))
        else:
            wait = respected
    else:
        wait = backoff_wait
    if deadline_at != NEVER:
        start_by = min(min(now + wait, NEVER) + p.min_attempt_time, NEVER)
        if start_by >= deadline_at:
            return ("deny", "deadline")
    if not budget_grants:
        return ("deny", "budget")
    return ("retry", wait)


def attempt_timeout(p: Policy, now: int, deadline_at: int) -> int:
    remaining = NEVER if deadline_at == NEVER else max(deadline_at - now, 0)
    return min(p.per_try_timeout, remaining)


class Shared:
    """What a client's calls share: budget, breaker, throttle."""

    def __init__(self, p: Policy):
        self.budget = Budget(p.budget) if p.budget else None
        self.breaker = Breaker(p.breaker) if p.breaker else None
        if p.throttle is None:
            self.throttle = None
        elif p.throttle.kind == "sre":
            self.throttle = SreThrottle(p.throttle.k, p.throttle.window)
        else:
            self.throttle = AwsAdaptive(0.0)

    def snapshot(self, now: int) -> dict:
        out = {}
        if self.budget:
            out["budget"] = self.budget.snapshot(now)
        if self.breaker:
            out["breaker"] = self.breaker.snapshot(now)
        if self.throttle:
            out["throttle"] = self.throttle.snapshot(now)
        return out


class RetryState:
    """One call. ``draw`` returns the next uniform draw in (0, 1)."""

    def __init__(self, p: Policy, shared: Shared, now: int, draw: Callable[[], float], idempotent: bool = True,
                 key_sent: bool = False):
        self.p, self.shared, self.draw = p, shared, draw
        self.idempotent, self.key_sent = idempotent, key_sent
        self.deadline_at = NEVER if p.deadline == NEVER else min(now + p.deadline, NEVER)
        self.attempts = 0
        self.sent_at = now
        self.prev_wait = 0
        self.retry_cost = 0.0
        self.admitted = False
        self.querying = False

    def _release_retry(self) -> None:
        """A refused retry that the budget counted when it was decided."""
        if self.attempts > 0 and self.shared.budget:
            self.shared.budget.release_retry()

    def before_attempt(self, now: int):
        """("send", timeout) | ("query", timeout) | ("wait", ns) | ("refuse", reason)."""
        s = self.shared
        if self.attempts == 0 and not self.admitted and s.breaker and not s.breaker.allows_first(now):
            return ("refuse", "breaker_open")
        if s.throttle is not None and not self.admitted:
            u = self.draw()
            a = s.throttle.admit(now, u)
            if a[0] == "refuse":
                self._release_retry()
                return ("refuse", "throttled")
            if a[0] == "wait":
                wait = a[1]
                if self.deadline_at == NEVER or now + wait + self.p.min_attempt_time < self.deadline_at:
                    self.admitted = True
                    return ("wait", wait)
                s.throttle.release()
                self._release_retry()
                return ("refuse", "throttled")
        self.admitted = False
        self.attempts += 1
        self.sent_at = now
        if s.budget:
            s.budget.on_send(now, self.attempts > 1)
        if s.breaker:
            s.breaker.on_send(now)
        return ("query" if self.querying else "send", attempt_timeout(self.p, now, self.deadline_at))

    def after_outcome(self, outcome: str, now: int, retry_after: Optional[int]):
        """("done",) | ("retry", wait) | ("give_up", reason)."""
        p, s = self.p, self.shared
        retryable = p.retry_on.contains(outcome)
        retry, refund = self.attempts > 1, self.retry_cost
        latency = max(now - self.sent_at, 0)
        grants = True
        if s.budget:
            s.budget.on_outcome(outcome, retry, retryable, refund)
            grants = outcome == "ok" or s.budget.grants(now, outcome)
        closed = True
        if s.breaker:
            s.breaker.on_outcome(now, outcome, latency)
            closed = s.breaker.allows(now)
        if s.throttle:
            s.throttle.on_outcome(now, outcome)
        if outcome == "ok":
            return ("done",)
        u = self.draw()
        wait0 = backoff_delay(p.backoff, outcome, self.attempts, self.prev_wait, u)
        d = decide(p, outcome, self.idempotent, self.key_sent, self.attempts, now, self.deadline_at, retry_after,
                   wait0, closed, grants, self.querying)
        if d[0] == "retry":
            self.retry_cost = s.budget.spend_retry(outcome) if s.budget else 0.0
            self.prev_wait = d[1]
            if self.querying:
                self.querying = outcome != NOT_FOUND
            else:
                self.querying = p.on_unknown == "query" and not nothing_executed(outcome)
            return ("retry", d[1])
        return ("give_up", d[1])
