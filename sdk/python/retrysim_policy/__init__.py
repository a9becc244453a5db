"""retrysim_policy: a pure-Python implementation of the retrysim policy
runtime (the retry decision, backoff and jitter, budgets, breakers and
client-side throttles), checked against the conformance vectors that
``retrysim vectors`` writes (docs/vectors.md)."""

from .policy import NEVER, Policy, duration
from .state import RetryState, Shared, attempt_timeout, decide

__all__ = ["NEVER", "Policy", "RetryState", "Shared", "attempt_timeout", "decide", "duration"]
