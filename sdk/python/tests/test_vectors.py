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
from retrysim_policy.conformance import replay_file  # noqa: E402
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
