"""Backoff, budgets, breakers and throttles: the state machines of the
policy, step for step as the Rust crate ``retrysim-policy`` runs them, with
the same floating-point operations in the same order."""

from __future__ import annotations

import math
from collections import deque

from .policy import NEVER, Backoff, Breaker as BreakerSpec, Budget as BudgetSpec, is_failure, saturating_nanos


def powi(a: float, b: int) -> float:
    """LLVM's __powidf2 (what Rust's f64::powi computes at run time)."""
    recip = b < 0
    n = abs(b)
    r = 1.0
    while True:
        if n & 1:
            r *= a
        n >>= 1
        if n == 0:
            break
        a *= a
    return 1.0 / r if recip else r


def backoff_limit(b: Backoff, base: int, n: int) -> int:
    if b.kind == "none":
        return 0
    if b.kind == "constant":
        return min(base, b.cap)
    grown = float(base) * powi(b.multiplier, max(n - 1, 0))
    return min(saturating_nanos(grown), b.cap)


def backoff_delay(b: Backoff, outcome: str, n: int, prev: int, u: float) -> int:
    """The wait before retry ``n`` after ``outcome``; ``prev`` the previous wait."""
    base = b.throttling_base if (b.throttling_base is not None and outcome == "429") else b.base
    if b.kind == "decorrelated":
        prev = base if prev == 0 else prev
        hi = float(prev) * 3.0
        lo = float(base)
        d = lo + u * max(hi - lo, 0.0)
        return min(saturating_nanos(d), b.cap)
    limit = float(backoff_limit(b, base, n))
    if b.jitter == "none":
        d = limit
    elif b.jitter == "full":
        d = u * limit
    elif b.jitter == "equal":
        d = limit / 2.0 + u * limit / 2.0
    else:
        r = b.jitter_ratio
        d = limit * (1.0 - r + 2.0 * r * u)
    return saturating_nanos(d)


class Budget:
    def __init__(self, spec: BudgetSpec):
        self.kind = spec.kind
        self.p = spec.params
        self.level = float(self.p["max_tokens"]) if self.kind == "token_bucket" else (
            float(self.p["initial"]) if self.kind == "quota" else 0.0)
        self.recent = deque()
        self.recent_retries = 0
        self.active = 0
        self.active_retries = 0

    def expire(self, now: int) -> None:
        if self.kind != "ratio":
            return
        ttl = self.p["ttl"]
        while self.recent:
            t, retry = self.recent[0]
            if t + ttl > now:
                break
            self.recent.popleft()
            if retry:
                self.recent_retries -= 1

    def cost(self, outcome: str) -> float:
        if self.kind != "quota":
            return 0.0
        if outcome == "timeout":
            return float(self.p["timeout_cost"])
        if outcome == "429":
            return float(self.p["throttling_cost"])
        return float(self.p["retry_cost"])

    def grants(self, now: int, outcome: str) -> bool:
        self.expire(now)
        if self.kind == "token_bucket":
            return self.level > float(self.p["max_tokens"]) / 2.0
        if self.kind == "quota":
            return self.level >= self.cost(outcome)
        if self.kind == "ratio":
            requests = float(len(self.recent) - self.recent_retries)
            reserve = float(self.p["min_per_sec"]) * float(self.p["ttl"]) / 1e9
            return float(self.recent_retries + 1) <= float(self.p["ratio"]) * requests + reserve
        limit = max(float(self.p["budget_percent"]) / 100.0 * float(self.active), float(self.p["min_retry_concurrency"]))
        return float(self.active_retries + 1) <= limit

    def spend_retry(self, outcome: str) -> float:
        c = self.cost(outcome)
        if self.kind == "quota":
            self.level -= c
        elif self.kind == "concurrency":
            # Counted from the decision, through its backoff, to its answer (Envoy).
            self.active_retries += 1
        return c

    def release_retry(self) -> None:
        """A retry counted when it was decided is not sent (a throttle refused it)."""
        if self.kind == "concurrency":
            self.active_retries = max(self.active_retries - 1, 0)

    def on_send(self, now: int, retry: bool) -> None:
        if self.kind == "ratio":
            self.expire(now)
            self.recent.append((now, retry))
            if retry:
                self.recent_retries += 1
        elif self.kind == "concurrency":
            self.active += 1

    def on_cancel(self, retry: bool) -> None:
        """A hedged copy that lost the race: only the concurrency count changes."""
        if self.kind == "concurrency":
            self.active = max(self.active - 1, 0)
            if retry:
                self.active_retries = max(self.active_retries - 1, 0)

    def on_outcome(self, outcome: str, retry: bool, retryable: bool, refund: float) -> None:
        if self.kind == "token_bucket":
            mx = float(self.p["max_tokens"])
            if outcome == "ok":
                self.level = min(self.level + float(self.p["token_ratio"]), mx)
            elif retryable:
                self.level = max(self.level - 1.0, 0.0)
        elif self.kind == "quota":
            if outcome == "ok":
                back = refund if retry else float(self.p["success_refund"])
                self.level = min(self.level + back, float(self.p["initial"]))
        elif self.kind == "concurrency":
            self.active = max(self.active - 1, 0)
            if retry:
                self.active_retries = max(self.active_retries - 1, 0)

    def snapshot(self, now: int) -> dict:
        if self.kind in ("token_bucket", "quota"):
            return {"level": self.level}
        self.expire(now)
        if self.kind == "ratio":
            return {"first_attempts": len(self.recent) - self.recent_retries, "retries": self.recent_retries}
        return {"active": self.active, "active_retries": self.active_retries}


BUCKETS = 10


class Breaker:
    def __init__(self, spec: BreakerSpec):
        self.s = spec
        self.state = ("closed",)
        self.buckets = [None] * BUCKETS  # [index, ok, failed, slow]
        self.streak = 0
        self.opened = 0

    def current(self, now: int):
        if self.state[0] == "open" and now >= self.state[1]:
            self.state = ("half_open", 0, 0, 0)
        return self.state

    def allows(self, now: int) -> bool:
        st = self.current(now)
        if st[0] == "closed":
            return True
        if st[0] == "open":
            return False
        return (not self.s.retries_only) and st[1] < self.s.half_open_probes

    def allows_first(self, now: int) -> bool:
        return self.s.retries_only or self.allows(now)

    def on_send(self, now: int) -> None:
        st = self.current(now)
        if st[0] == "half_open":
            self.state = ("half_open", st[1] + 1, st[2], st[3])

    def _trip(self, now: int) -> None:
        self.state = ("open", min(now + self.s.open_for, NEVER))
        self.opened += 1

    def _close(self) -> None:
        self.state = ("closed",)
        self.buckets = [None] * BUCKETS
        self.streak = 0

    def on_outcome(self, now: int, outcome: str, latency: int) -> None:
        s = self.s
        failed = is_failure(outcome)
        slow = s.kind == "slow_call" and latency > s.slow_call_duration
        st = self.current(now)
        if st[0] == "open":
            return
        if st[0] == "half_open":
            sent, succeeded, bad = st[1], st[2], st[3]
            if s.kind == "slow_call":
                counts_failure = failed and s.failure_ratio is not None
                bad = bad + (1 if (slow or counts_failure) else 0)
                ended = succeeded + 1
                if ended < s.half_open_probes:
                    self.state = ("half_open", sent, ended, bad)
                    return
                n = float(ended)
                failures_too = s.failure_ratio is not None and float(bad) >= s.failure_ratio * n
                if float(bad) >= s.slow_call_ratio * n or failures_too:
                    self._trip(now)
                else:
                    self._close()
            else:
                if failed:
                    self._trip(now)
                elif succeeded + 1 >= s.half_open_probes:
                    self._close()
                else:
                    self.state = ("half_open", sent, succeeded + 1, bad)
            return
        if s.kind == "consecutive":
            self.streak = self.streak + 1 if failed else 0
            if self.streak >= s.consecutive_failures:
                self._trip(now)
            return
        width = max(s.window // BUCKETS, 1)
        b = now // width
        slot = b % BUCKETS
        if self.buckets[slot] is None or self.buckets[slot][0] != b:
            self.buckets[slot] = [b, 0, 0, 0]
        if failed:
            self.buckets[slot][2] += 1
        else:
            self.buckets[slot][1] += 1
        if slow:
            self.buckets[slot][3] += 1
        ok = bad = slows = 0
        for x in self.buckets:
            if x is not None and x[0] + BUCKETS > b:
                ok += x[1]
                bad += x[2]
                slows += x[3]
        total = ok + bad
        if total < s.min_requests or total == 0:
            return
        failing = s.failure_ratio is not None and float(bad) >= s.failure_ratio * float(total)
        slowing = s.kind == "slow_call" and float(slows) >= s.slow_call_ratio * float(total)
        if failing or slowing:
            self._trip(now)

    def snapshot(self, now: int) -> dict:
        st = self.current(now)
        if st[0] == "closed":
            v = {"state": "closed"}
        elif st[0] == "open":
            v = {"state": "open", "until": st[1]}
        else:
            v = {"state": "half_open", "sent": st[1], "ended": st[2], "bad": st[3]}
        v["opened"] = self.opened
        return v


SRE_BUCKETS = 60


class SreThrottle:
    def __init__(self, k: float, window: int):
        self.k = k
        self.width = max(window // SRE_BUCKETS, 1)
        self.buckets = deque()  # [index, requests, accepts]
        self.requests = 0
        self.accepts = 0

    def slot(self, now: int):
        b = now // self.width
        while self.buckets:
            i, r, a = self.buckets[0]
            if i + SRE_BUCKETS > b:
                break
            self.buckets.popleft()
            self.requests -= r
            self.accepts -= a
        if not self.buckets or self.buckets[-1][0] != b:
            self.buckets.append([b, 0, 0])
        return self.buckets[-1]

    def counts(self, now: int):
        self.slot(now)
        return self.requests, self.accepts

    def admit(self, now: int, u: float):
        r, a = self.counts(now)
        p = max((float(r) - self.k * float(a)) / (float(r) + 1.0), 0.0)
        if u < p:
            self.slot(now)[1] += 1
            self.requests += 1
            return ("refuse", p)
        return ("send",)

    def release(self) -> None:
        pass

    def on_outcome(self, now: int, outcome: str) -> None:
        accepted = not is_failure(outcome)
        slot = self.slot(now)
        slot[1] += 1
        slot[2] += 1 if accepted else 0
        self.requests += 1
        self.accepts += 1 if accepted else 0

    def snapshot(self, now: int) -> dict:
        r, a = self.counts(now)
        return {"requests": r, "accepts": a}


class AwsAdaptive:
    """botocore's ClientRateLimiter (CUBIC, RateClocker, TokenBucket)."""

    SCALE, BETA, SMOOTHING, BUCKET, MIN_RATE, MAX_ADJUST = 0.4, 0.7, 0.8, 0.5, 0.5, 2.0

    def __init__(self, t: float = 0.0):
        self.w_max = 0.0
        self.last_fail = t
        self.k = self._zero_point()
        self.measured = 0.0
        self.last_bucket = float(math.floor(t))
        self.count = 0.0
        self.fill_rate = 0.0
        self.max_capacity = 0.0
        self.capacity = 0.0
        self.last = None
        self._set_max_rate(1.0, t)
        self.enabled = False

    def _zero_point(self) -> float:
        return (self.w_max * (1.0 - self.BETA) / self.SCALE) ** (1.0 / 3.0)

    def _refill(self, t: float) -> None:
        if self.last is None:
            self.last = t
            return
        self.capacity = min(self.max_capacity, self.capacity + (t - self.last) * self.fill_rate)
        self.last = t

    def _set_max_rate(self, value: float, t: float) -> None:
        self._refill(t)
        self.fill_rate = max(value, self.MIN_RATE)
        self.max_capacity = value if value >= 1.0 else 1.0
        self.capacity = min(self.capacity, self.max_capacity)

    def admit(self, now: int, u: float):
        if not self.enabled:
            return ("send",)
        t = now / 1e9
        self._refill(t)
        wait = 0.0 if self.capacity >= 1.0 else (1.0 - self.capacity) / self.fill_rate
        self.capacity -= 1.0
        if wait == 0.0:
            return ("send",)
        from .policy import from_secs

        return ("wait", from_secs(wait))

    def release(self) -> None:
        self.capacity += 1.0

    def _record(self, t: float) -> float:
        scale = 1.0 / self.BUCKET
        bucket = float(math.floor(t * scale)) / scale
        self.count += 1.0
        if bucket > self.last_bucket:
            current = self.count / (bucket - self.last_bucket)
            self.measured = current * self.SMOOTHING + self.measured * (1.0 - self.SMOOTHING)
            self.count = 0.0
            self.last_bucket = bucket
        return self.measured

    def on_outcome(self, now: int, outcome: str) -> None:
        t = now / 1e9
        measured = self._record(t)
        if outcome != "429":
            new_rate = self.SCALE * powi(t - self.last_fail - self.k, 3) + self.w_max
        else:
            rate = min(measured, self.fill_rate) if self.enabled else measured
            self.enabled = True
            self.w_max = rate
            self.k = self._zero_point()
            self.last_fail = t
            new_rate = rate * self.BETA
        self._set_max_rate(min(new_rate, self.MAX_ADJUST * measured), t)

    def snapshot(self, now: int) -> dict:
        return {"enabled": self.enabled, "fill_rate": self.fill_rate, "capacity": self.capacity,
                "measured_rate": self.measured}
