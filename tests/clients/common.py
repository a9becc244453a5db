"""Shared helpers of the real-client suite: running `retrysim export`, the
policies under test, and a tiny test runner that prints one line per case
and the closing line `N passed, N failed, N skipped`."""

import glob
import os
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


def policies():
    """(label, path) of every preset in policies/ and of the tuned policy."""
    out = [(os.path.basename(p)[:-5], p) for p in sorted(glob.glob(os.path.join(ROOT, "policies", "*.toml")))]
    d = tempfile.mkdtemp(prefix="retrysim-clients-")
    tuned = os.path.join(d, "tuned.toml")
    with open(tuned, "w") as f:
        f.write(TUNED)
    out.append(("tuned", tuned))
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
