"""Loading a retrysim policy file (docs/experiment-format.md, the policy table) with tomllib.

Durations become integer nanoseconds; ``NEVER`` stands for "no limit".
Only what the decision needs is kept; validation is the Rust crate's job
(``retrysim lint`` and ``Policy::load``), this loader trusts its input.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from typing import Optional

NEVER = 2**64 - 1

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def from_secs(secs: float) -> int:
    """Seconds to nanoseconds: nearest, ties away from zero, saturating."""
    if secs != secs or secs <= 0.0:
        return 0
    ns = secs * 1e9
    if ns >= float(NEVER):
        return NEVER
    whole = int(ns)
    return whole + 1 if ns - whole >= 0.5 else whole


def duration(text: str) -> int:
    """``"250ms"`` → 250000000; ``"never"`` → NEVER."""
    t = text.strip()
    if t == "never":
        return NEVER
    if t == "0":
        return 0
    i = 0
    while i < len(t) and (t[i].isdigit() or t[i] == "."):
        i += 1
    num, unit = t[:i], t[i:]
    per = _UNITS[unit]
    if num.isdigit():
        return int(num) * _round(per * 1e9)
    return from_secs(float(num) * per)


def _round(x: float) -> int:
    """Rust's f64::round for x ≥ 0."""
    f = math.floor(x)
    return int(f) + 1 if x - f >= 0.5 else int(f)


def saturating_nanos(x: float) -> int:
    """The crate's saturating_nanos: 0 for NaN or ≤ 0, NEVER above, else rounded."""
    if x != x or x <= 0.0:
        return 0
    if x >= float(NEVER):
        return NEVER
    return _round(x)


@dataclass
class RetryOn:
    connect_error: bool = False
    timeout: bool = False
    reset: bool = False
    statuses: frozenset = frozenset()

    @staticmethod
    def parse(entries) -> "RetryOn":
        r = RetryOn()
        codes = set()
        for e in entries:
            e = str(e)
            if e == "connect_error":
                r.connect_error = True
            elif e == "timeout":
                r.timeout = True
            elif e == "reset":
                r.reset = True
            else:
                codes.add(int(e))
        r.statuses = frozenset(codes)
        return r

    def contains(self, outcome: str) -> bool:
        if outcome == "ok":
            return False
        if outcome == "connect_error":
            return self.connect_error
        if outcome == "timeout":
            return self.timeout
        if outcome == "reset":
            return self.reset
        return int(outcome) in self.statuses


def nothing_executed(outcome: str) -> bool:
    """The outcome proves the request did not run: connect errors, 4xx, 503."""
    if outcome == "connect_error":
        return True
    if outcome in ("ok", "timeout", "reset"):
        return False
    s = int(outcome)
    return 400 <= s < 500 or s == 503


def is_failure(outcome: str) -> bool:
    """The outcome says the service is unwell (breaker, throttle)."""
    if outcome == "ok":
        return False
    if outcome in ("connect_error", "timeout", "reset"):
        return True
    s = int(outcome)
    return s >= 500 or s == 429


@dataclass
class Backoff:
    kind: str = "none"
    base: int = 0
    cap: int = NEVER
    multiplier: float = 2.0
    jitter: str = "none"
    jitter_ratio: float = 0.2
    throttling_base: Optional[int] = None


@dataclass
class Budget:
    kind: str
    params: dict
    scope: str = "client"


@dataclass
class Breaker:
    kind: str
    failure_ratio: Optional[float]
    window: int
    min_requests: int
    open_for: int
    half_open_probes: int
    retries_only: bool
    consecutive_failures: int = 0
    slow_call_duration: int = 0
    slow_call_ratio: float = 0.0


@dataclass
class Throttle:
    kind: str
    k: float = 2.0
    window: int = 120 * 10**9
    scope: str = "client"


@dataclass
class Hedging:
    """``[hedging]``: copies in flight at most, the delay before each further
    copy (``delay`` ns, or ``quantile`` of the observed latency), the
    extra-load cap, the non-fatal statuses, and whether the first final
    answer cancels the other copies."""
    max_attempts: int = 2
    delay: Optional[int] = None
    quantile: Optional[float] = None
    max_extra_load: Optional[float] = None
    non_fatal: RetryOn = field(default_factory=RetryOn)
    cancel: bool = True

    def is_non_fatal(self, outcome: str) -> bool:
        return outcome == "timeout" or (outcome != "ok" and self.non_fatal.contains(outcome))


@dataclass
class Policy:
    name: str = "policy"
    max_attempts: int = 1
    per_try_timeout: int = NEVER
    deadline: int = NEVER
    min_attempt_time: int = 0
    retry_on: RetryOn = field(default_factory=lambda: RetryOn.parse(["connect_error", "503"]))
    retry_unknown_without_key: bool = False
    on_unknown: str = "retry"  # retry | query | give_up
    respect_retry_after: bool = True
    max_retry_after: Optional[int] = None
    retry_after_clamp: Optional[int] = None
    backoff: Backoff = field(default_factory=Backoff)
    budget: Optional[Budget] = None
    breaker: Optional[Breaker] = None
    throttle: Optional[Throttle] = None
    hedging: Optional[Hedging] = None

    @staticmethod
    def loads(text: str, name: str = "policy") -> "Policy":
        return Policy.from_table(tomllib.loads(text), name)

    @staticmethod
    def load(path: str) -> "Policy":
        import os

        with open(path, "rb") as f:
            table = tomllib.load(f)
        return Policy.from_table(table, os.path.splitext(os.path.basename(path))[0])

    @staticmethod
    def from_table(t: dict, name: str = "policy") -> "Policy":
        p = Policy(name=t.get("name", name))
        p.max_attempts = int(t.get("max_attempts", 1))
        dur = lambda key, default: duration(t[key]) if key in t else default  # noqa: E731
        p.per_try_timeout = dur("per_try_timeout", NEVER)
        p.deadline = dur("deadline", NEVER)
        p.min_attempt_time = dur("min_attempt_time", 0)
        if "retry_on" in t:
            p.retry_on = RetryOn.parse(t["retry_on"])
        p.retry_unknown_without_key = bool(t.get("retry_unknown_without_key", False))
        p.on_unknown = t.get("on_unknown", "retry")
        if p.on_unknown not in ("retry", "query", "give_up"):
            raise ValueError(f"on_unknown: {p.on_unknown!r} is not allowed: use 'retry', 'query' or 'give_up'")
        p.respect_retry_after = bool(t.get("respect_retry_after", True))
        p.max_retry_after = dur("max_retry_after", None)
        p.retry_after_clamp = dur("retry_after_clamp", None)
        b = t.get("backoff", {})
        p.backoff = Backoff(
            kind=b.get("kind", "none"),
            base=duration(b["base"]) if "base" in b else 0,
            cap=duration(b["cap"]) if "cap" in b else NEVER,
            multiplier=float(b.get("multiplier", 2.0)),
            jitter=b.get("jitter", "none"),
            jitter_ratio=float(b.get("jitter_ratio", 0.2)),
            throttling_base=duration(b["throttling_base"]) if "throttling_base" in b else None,
        )
        if "budget" in t and t["budget"].get("kind", "none") != "none":
            bt = dict(t["budget"])
            kind = bt.pop("kind")
            scope = bt.pop("scope", "client")
            defaults = {
                "token_bucket": {"max_tokens": 10.0, "token_ratio": 0.1},
                "quota": {"initial": 500.0, "retry_cost": 5.0, "timeout_cost": 10.0, "throttling_cost": 5.0,
                          "success_refund": 1.0},
                "ratio": {"ratio": 0.2, "min_per_sec": 10.0, "ttl": "10s"},
                "concurrency": {"budget_percent": 20.0, "min_retry_concurrency": 3},
            }[kind]
            params = {**defaults, **bt}
            if "ttl" in params:
                params["ttl"] = duration(params["ttl"])
            p.budget = Budget(kind, params, scope)
        if "circuit_breaker" in t:
            c = t["circuit_breaker"]
            p.breaker = Breaker(
                kind=c.get("kind", "failure_ratio"),
                failure_ratio=float(c["failure_ratio"]) if "failure_ratio" in c else None,
                window=duration(c["window"]) if "window" in c else 0,
                min_requests=int(c.get("min_requests", 0)),
                open_for=duration(c["open_for"]),
                half_open_probes=int(c["half_open_probes"]),
                retries_only=bool(c.get("retries_only", False)),
                consecutive_failures=int(c.get("consecutive_failures", 0)),
                slow_call_duration=duration(c["slow_call_duration"]) if "slow_call_duration" in c else 0,
                slow_call_ratio=float(c.get("slow_call_ratio", 0.0)),
            )
        if "throttle" in t:
            th = t["throttle"]
            p.throttle = Throttle(
                kind=th["kind"],
                k=float(th.get("k", 2.0)),
                window=duration(th["window"]) if "window" in th else 120 * 10**9,
                scope=th.get("scope", "client"),
            )
        if "hedging" in t:
            h = t["hedging"]
            text = str(h["delay"]).strip()
            quantile = float(text[1:]) / 100.0 if text.startswith("p") else None
            p.hedging = Hedging(
                max_attempts=int(h.get("max_attempts", 2)),
                delay=None if quantile is not None else duration(text),
                quantile=quantile,
                max_extra_load=float(h["max_extra_load"]) if "max_extra_load" in h else None,
                non_fatal=RetryOn.parse(h.get("non_fatal", [])),
                cancel=bool(h.get("cancel", True)),
            )
        return p
