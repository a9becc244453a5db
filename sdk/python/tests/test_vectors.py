"""Every vector under sdk/vectors/ passes, and the formulas hold on their own.

    python3 -m unittest discover -s sdk/python/tests
"""

import glob
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from retrysim_policy import NEVER, Policy, duration  # noqa: E402
from retrysim_policy.conformance import replay_case, replay_file  # noqa: E402
from retrysim_policy.machines import backoff_delay, powi  # noqa: E402

VECTORS = sorted(glob.glob(os.path.join(HERE, "..", "..", "vectors", "*.json")))


class Vectors(unittest.TestCase):
    def test_there_are_vectors_for_every_preset(self):
        presets = glob.glob(os.path.join(HERE, "..", "..", "..", "policies", "*.toml"))
        self.assertEqual(len(VECTORS), len(presets), "one vectors file per preset")

    def test_every_vector_passes(self):
        for path in VECTORS:
            with self.subTest(path=os.path.basename(path)):
                passed, failed, messages = replay_file(path)
                self.assertEqual(failed, 0, "\n".join(messages))
                self.assertGreaterEqual(passed, 20)


def _altered(value):
    """A different value of the same shape, or None when there is none."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value * 1.5 + 1.0
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value + [99]
    if value is None:
        return 0
    return None


def _leaves(node, path=()):
    """Every (path, value) below a dict of expectations or state."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, path + (k,))
    else:
        yield path, node


def _set(node, path, value):
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


class Mutations(unittest.TestCase):
    """The replay catches a vector altered in any expected value or state:
    every leaf of every step's ``expect`` and ``state`` in the hedged cases,
    quantile delays included (and in a sample of the others), changed one
    at a time."""

    def _check(self, case, every):
        import copy

        self.assertEqual(replay_case(case), [], case["name"])
        for n, step in enumerate(case["steps"]):
            if n % every:
                continue
            for part in ("expect", "state"):
                for path, value in _leaves(step.get(part, {})):
                    bad = _altered(value)
                    if bad is None:
                        continue
                    mutant = copy.deepcopy(case)
                    _set(mutant["steps"][n][part], path, bad)
                    with self.subTest(case=case["name"], step=n, field=".".join((part,) + path)):
                        self.assertNotEqual(replay_case(mutant), [], "an altered vector passed")

    def test_altered_vectors_fail(self):
        import json

        path = [v for v in VECTORS if v.endswith("grpc-hedging.json")][0]
        with open(path, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        hedged = [c for c in cases if c.get("runtime") == "hedged"]
        self.assertGreaterEqual(len(hedged), 12, "the hedged cases are in the file")
        for case in cases:
            self._check(case, 1 if case.get("runtime") == "hedged" else 7)

    def test_altered_quantile_vectors_fail(self):
        """The learnt p99 of the preset whose own delay is a quantile."""
        import json

        path = [v for v in VECTORS if v.endswith("finagle-backup-requests.json")][0]
        with open(path, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        learnt = [c for c in cases if any(t.startswith("hedge:quantile_") for t in c["covers"])]
        self.assertEqual(len(learnt), 3, "the quantile cases are in the file")
        for case in learnt:
            self._check(case, 1)

    def test_a_missing_or_extra_draw_fails(self):
        import copy
        import json

        path = [v for v in VECTORS if v.endswith("grpc-hedging.json")][0]
        with open(path, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        case = next(c for c in cases if c.get("runtime") == "hedged" and any(s.get("draw") for s in c["steps"]))
        n = next(i for i, s in enumerate(case["steps"]) if s.get("draw") is not None)
        mutant = copy.deepcopy(case)
        mutant["steps"][n]["draw"] = None
        self.assertNotEqual(replay_case(mutant), [])
        case = next(c for c in cases if c.get("runtime") == "hedged")
        m = next(i for i, s in enumerate(case["steps"]) if s.get("draw") is None and s["op"] != "start")
        mutant = copy.deepcopy(case)
        mutant["steps"][m]["draw"] = 0.5
        self.assertNotEqual(replay_case(mutant), [])


class Formulas(unittest.TestCase):
    def test_durations(self):
        self.assertEqual(duration("250ms"), 250_000_000)
        self.assertEqual(duration("1.5s"), 1_500_000_000)
        self.assertEqual(duration("1m"), 60_000_000_000)
        self.assertEqual(duration("never"), NEVER)

    def test_backoff_formulas(self):
        p = Policy.loads('max_attempts = 3\ndeadline = "3s"\n[backoff]\nkind = "exponential"\nbase = "100ms"\n'
                         'cap = "1s"\njitter = "full"\n')
        b = p.backoff
        self.assertEqual(backoff_delay(b, "503", 3, 0, 0.5), 200_000_000)
        self.assertEqual(backoff_delay(b, "503", 9, 0, 1.0 - 2**-53), 1_000_000_000)
        self.assertEqual(powi(2.0, 10), 1024.0)


if __name__ == "__main__":
    unittest.main()
