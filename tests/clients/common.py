"""Shared helpers of the real-client suite: running `retrysim export`, the
policies under test, and a tiny test runner that prints one line per case
and the closing line `N passed, N failed, N skipped`."""

import atexit
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RETRYSIM = os.environ.get("RETRYSIM", os.path.join(ROOT, "target", "debug", "retrysim"))

# A tuned policy as `retrysim tune --emit` writes it, beside the presets.
TUNED = """# Policy tuned by retrysim (a tune --emit file, as the suite's tuned policy).
name = "tuned"
max_attempts = 3
per_try_timeout = "400ms"
deadline = "2s"
retry_on = ["connect_error", "503"]
retry_unknown_without_key = false
respect_retry_after = true

[backoff]
kind = "exponential"
base = "20ms"
cap = "200ms"
multiplier = 2.0
jitter = "full"

[budget]
kind = "token_bucket"
max_tokens = 7.5
token_ratio = 0.25
scope = "client"
"""


def tmpdir(prefix):
    """A temporary folder, removed when the suite ends."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


def policies(with_generated=True):
    """(label, path) of every preset in policies/, of the tuned policy and
    (unless told not to) of the generated policies."""
    out = [(os.path.basename(p)[:-5], p) for p in sorted(glob.glob(os.path.join(ROOT, "policies", "*.toml")))]
    d = tmpdir("retrysim-clients-")
    tuned = os.path.join(d, "tuned.toml")
    with open(tuned, "w") as f:
        f.write(TUNED)
    out.append(("tuned", tuned))
    if with_generated and os.environ.get("RETRYSIM_CLIENTS_GENERATED", "1") != "0":
        out += generated()
    return out


def generated(n=12, seed=2026):
    """(label, path) of n policies drawn at random (fixed seed): attempts,
    backoff kinds and bases down to 1 ms, jitters, fractional token
    buckets, ratio and concurrency budgets, per-try timeouts, breakers."""
    import random

    rng = random.Random(seed)
    d = tmpdir("retrysim-generated-")
    out = []
    for i in range(n):
        deadline = rng.choice([2, 3, 5, 8, 10])
        lines = [f'name = "generated-{i}"', f"max_attempts = {rng.randint(2, 7)}", f'deadline = "{deadline}s"']
        if rng.random() < 0.5:
            lines.append(f'per_try_timeout = "{rng.choice([200, 300, 500, 800])}ms"')
        on = [e for e in ["connect_error", "timeout", "reset", "429", "500", "502", "503", "504"] if rng.random() < 0.5]
        lines.append("retry_on = [" + ", ".join(f'"{e}"' for e in (on or ["503"])) + "]")
        lines.append(f"respect_retry_after = {str(rng.random() < 0.5).lower()}")
        kind = rng.choice(["none", "constant", "exponential", "exponential", "decorrelated"])
        lines.append("\n[backoff]")
        lines.append(f'kind = "{kind}"')
        if kind != "none":
            base = rng.choice([1, 2, 5, 10, 25, 50, 100])
            lines.append(f'base = "{base}ms"')
            lines.append(f'cap = "{base * rng.choice([4, 10, 20])}ms"')
            lines.append(f"multiplier = {rng.choice([1.5, 2.0, 3.0])}")
            jitter = "none" if kind == "decorrelated" else rng.choice(["none", "full", "equal", "proportional"])
            lines.append(f'jitter = "{jitter}"')
        budget = rng.choice([None, "token_bucket", "token_bucket", "ratio", "concurrency"])
        if budget == "token_bucket":
            lines += ["\n[budget]", 'kind = "token_bucket"', f"max_tokens = {rng.choice([3, 6.5, 10, 20.25])}", f"token_ratio = {rng.choice([0.1, 0.5, 0.125])}"]
        elif budget == "ratio":
            lines += ["\n[budget]", 'kind = "ratio"', f"ratio = {rng.choice([0.1, 0.2])}", "min_per_sec = 10", 'ttl = "10s"']
        elif budget == "concurrency":
            lines += ["\n[budget]", 'kind = "concurrency"', "budget_percent = 20", "min_retry_concurrency = 3"]
        if rng.random() < 0.3:
            lines += ["\n[circuit_breaker]", 'kind = "consecutive"', f"consecutive_failures = {rng.randint(3, 10)}", 'open_for = "5s"', "half_open_probes = 1"]
        if kind == "constant":
            lines = [l for l in lines if not l.startswith(("cap =", "multiplier ="))]
        path = os.path.join(d, f"generated-{i}.toml")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        out.append((f"generated-{i}", path))
    return out


def export(path, target, *extra):
    """`retrysim export PATH --to TARGET`: (stdout, stderr, exit code)."""
    r = subprocess.run([RETRYSIM, "export", path, "--to", target, *extra], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise AssertionError(f"export {path} --to {target} exited {r.returncode}: {r.stderr}")
    return r.stdout, r.stderr, r.returncode


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Suite:
    """Cases run in order; a case is a callable that raises on failure or
    raises Skip(reason)."""

    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.results = []

    def case(self, target, client, name, fn):
        try:
            detail = fn()
            self.passed += 1
            self.results.append((target, client, name, "pass", detail or ""))
            print(f"ok   {target:<12} {client:<24} {name}" + (f"  ({detail})" if detail else ""), flush=True)
        except Skip as s:
            self.skipped += 1
            self.results.append((target, client, name, "skip", str(s)))
            print(f"SKIP {target:<12} {client:<24} {name}: {s}", flush=True)
        except Exception as e:  # noqa: BLE001 - a failed case is reported, the suite goes on
            self.failed += 1
            self.results.append((target, client, name, "FAIL", str(e)))
            print(f"FAIL {target:<12} {client:<24} {name}: {e}", flush=True)
            traceback.print_exc(file=sys.stdout)

    def summary(self):
        by = {}
        for target, client, _, result, _ in self.results:
            k = (target, client)
            by.setdefault(k, {"pass": 0, "FAIL": 0, "skip": 0})[result] += 1
        print("\ntarget       real client              pass fail skip")
        for (t, c), n in sorted(by.items()):
            print(f"{t:<12} {c:<24} {n['pass']:>4} {n['FAIL']:>4} {n['skip']:>4}")
        print(f"\nclients: {self.passed} passed, {self.failed} failed, {self.skipped} skipped")
        return 0 if self.failed == 0 else 1


class Skip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)
