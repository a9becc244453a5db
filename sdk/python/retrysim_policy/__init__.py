"""retrysim_policy: a pure-Python implementation of the retrysim policy
runtime (the retry decision, backoff and jitter, budgets, breakers,
client-side throttles and hedged calls with fixed or quantile delays), checked against the conformance vectors that
``retrysim vectors`` writes (docs/vectors.md)."""

from .hedging import HedgedState
from .policy import NEVER, Policy, duration
from .state import RetryState, Shared, attempt_timeout, decide

__all__ = ["NEVER", "HedgedState", "Policy", "RetryState", "Shared", "attempt_timeout", "decide", "duration"]
