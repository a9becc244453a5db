"""Replays retrysim conformance vectors (``schema = "retrysim.vectors/1"``,
docs/vectors.md) against this package and reports every mismatch.

    python3 -m retrysim_policy.conformance sdk/vectors/*.json
"""

from __future__ import annotations

import json
import math
import sys

from .hedging import HedgedState
from .policy import NEVER, Policy
from .state import RetryState, Shared

SCHEMA = "retrysim.vectors/1"


class Draws:
    """Feeds each step's recorded draw and notices a draw too many or too few."""

    def __init__(self):
        self.pending = None
        self.used = False
        self.extra = False

    def arm(self, value):
        self.pending, self.used, self.extra = value, False, False

    def __call__(self) -> float:
        if self.pending is None or self.used:
            self.extra = True
            return 0.5
        self.used = True
        return self.pending


def _same(a, b, path, errors):
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            errors.append(f"{path}: keys {sorted(a)} != {sorted(b)}")
            return
        for k in a:
            _same(a[k], b[k], f"{path}.{k}", errors)
    elif isinstance(a, bool) or isinstance(b, bool) or isinstance(a, int) and isinstance(b, int):
        if a != b:
            errors.append(f"{path}: got {a!r}, expected {b!r}")
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
            errors.append(f"{path}: got {a!r}, expected {b!r}")
    elif a != b:
        errors.append(f"{path}: got {a!r}, expected {b!r}")


def _expect_before(r):
    if r[0] in ("send", "query"):
        return {"admit": r[0], "timeout": None if r[1] == 2**64 - 1 else r[1]}
    if r[0] == "wait":
        return {"admit": "wait", "wait": r[1]}
    return {"admit": "refuse", "reason": r[1]}


def _expect_after(r):
    if r[0] == "done":
        return {"decision": "done"}
    if r[0] == "retry":
        return {"decision": "retry", "wait": r[1]}
    return {"decision": "give_up", "reason": r[1]}


def _opt(ns):
    return None if ns is None or ns == NEVER else ns


def _hedge(r):
    if r is None:
        return None
    if r[0] == "send":
        return {"copy": r[1], "timeout": _opt(r[2])}
    return {"refused": r[1]}


def _expect_copy(out: dict, st: HedgedState) -> dict:
    e = {"end": out["end"], "hedge": _hedge(out["hedge"]), "given_up": out["given_up"], "cancel": out["cancel"],
         "hedge_due": st.due_at}
    if "reason" in out:
        e["reason"] = out["reason"]
    return e


def _hedged_snapshot(shared: Shared, now: int) -> dict:
    out = shared.snapshot(now)
    h = shared.hedger.snapshot(now) if getattr(shared, "hedger", None) else None
    if h is not None:
        out["hedger"] = h
    return out


def _replay(case: dict, start, step_result, snapshot) -> list:
    """The mismatches of one case's steps: ``start(policy, shared, now,
    draws, step)`` makes a call's state at its ``start`` step,
    ``step_result(state, step, now)`` takes any other step and gives what
    it returned as the vector writes it (``None`` for an unknown op),
    ``snapshot(shared, now)`` the shared state after it."""
    policy = Policy.loads(case["policy"])
    shared = Shared(policy)
    calls = {}
    draws = Draws()
    errors = []
    for n, step in enumerate(case["steps"]):
        where = f"step {n} (call {step['call']}, {step['op']})"
        now = step["now"]
        draws.arm(step.get("draw"))
        if step["op"] == "start":
            calls[step["call"]] = start(policy, shared, now, draws, step)
            continue
        got = step_result(calls[step["call"]], step, now)
        if got is None:
            errors.append(f"{where}: unknown op {step['op']!r}")
            break
        _same(got, step["expect"], where, errors)
        if draws.extra:
            errors.append(f"{where}: drew a random number the vector does not give")
        if step.get("draw") is not None and not draws.used:
            errors.append(f"{where}: did not consume the draw {step['draw']}")
        _same(snapshot(shared, now), step["state"], f"{where} state", errors)
        if errors:
            break
    return errors


def _hedged_step(st: HedgedState, step: dict, now: int):
    op = step["op"]
    if op == "before_attempt":
        r = st.before_first(now)
        got = _expect_before(r)
        if r[0] == "send":
            got["hedge_due"] = st.due_at
        return got
    if op == "hedge_due":
        r = st.on_hedge_due(now)
        return _expect_copy({"end": None, "hedge": r, "given_up": [], "cancel": []}, st)
    if op == "copy_outcome":
        return _expect_copy(st.on_copy_outcome(step["copy"], step["outcome"], now), st)
    if op == "copy_expired":
        return _expect_copy(st.on_copy_expired(step["copy"], now), st)
    return None


def _retry_step(st: RetryState, step: dict, now: int):
    if step["op"] == "before_attempt":
        return _expect_before(st.before_attempt(now))
    return _expect_after(st.after_outcome(step["outcome"], now, step.get("retry_after")))


def replay_hedged(case: dict) -> list:
    """The mismatches of a hedged case (``"runtime": "hedged"``)."""
    return _replay(
        case,
        lambda policy, shared, now, draws, step: HedgedState(policy, shared, now, draws),
        _hedged_step,
        _hedged_snapshot,
    )


def replay_case(case: dict) -> list:
    """The mismatches of one case (empty when it passes)."""
    if case.get("runtime") == "hedged":
        return replay_hedged(case)
    return _replay(
        case,
        lambda policy, shared, now, draws, step: RetryState(
            policy, shared, now, draws, step["idempotent"], step["key_sent"]
        ),
        _retry_step,
        lambda shared, now: shared.snapshot(now),
    )


def replay_file(path: str):
    """(cases passed, cases failed, messages) for one vectors file."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if doc.get("schema") != SCHEMA:
        return 0, 1, [f"{path}: schema {doc.get('schema')!r}, expected {SCHEMA!r}"]
    passed, failed, messages = 0, 0, []
    for case in doc["cases"]:
        errs = replay_case(case)
        if errs:
            failed += 1
            messages.append(f"{path}: case {case['name']!r}: {errs[0]}")
        else:
            passed += 1
    return passed, failed, messages


def main(argv=None) -> int:
    paths = (argv if argv is not None else sys.argv[1:])
    if not paths:
        print("usage: python3 -m retrysim_policy.conformance VECTORS.json...", file=sys.stderr)
        return 2
    total_pass = total_fail = steps = 0
    for path in paths:
        p, f, msgs = replay_file(path)
        with open(path, encoding="utf-8") as fh:
            steps += sum(len(c["steps"]) for c in json.load(fh)["cases"])
        total_pass += p
        total_fail += f
        for m in msgs:
            print(m)
    print(f"{total_pass} case(s) passed, {total_fail} failed, {len(paths)} file(s), {steps} step(s)")
    return 0 if total_fail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
