"""The learnt latency of quantile hedging delays: HdrHistogram's steps at 2
significant digits, its quantiles, and the two rotating periods. The
numbers are the Rust crate's: crates/retrysim-policy/src/hedge.rs asserts
the same ones against the ``hdrhistogram`` crate.

    python3 -m unittest discover -s sdk/python/tests
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from retrysim_policy import HedgedState, Policy, Shared  # noqa: E402
from retrysim_policy.latency import LATENCY_PERIOD, MIN_DATA_POINTS, Histogram, LatencyWindow  # noqa: E402

MS = 1_000_000
PRESETS = os.path.join(HERE, "..", "..", "..", "policies")


def read(values, qs):
    """The quantiles of ``values`` written in one period, read in the next."""
    w = LatencyWindow(LATENCY_PERIOD)
    for i, v in enumerate(values):
        w.record(i, v)
    w.advance(LATENCY_PERIOD)
    return [w.quantile(q) for q in qs]


class Buckets(unittest.TestCase):
    def test_the_layout_of_two_significant_digits(self):
        h = Histogram()
        self.assertEqual(h.sub_bucket_count, 256)
        self.assertEqual(h.bins, 5248, "41 half-buckets of 128")

    def test_values_are_counted_in_steps_that_double_at_each_256_times_2_to_the_k(self):
        h = Histogram()
        cases = [
            (1, 1, 1),
            (255, 255, 255),
            (256, 256, 257),
            (257, 256, 257),
            (511, 510, 511),
            (512, 512, 515),
            (1023, 1020, 1023),
            (1024, 1024, 1031),
            (134_217_727, 133_693_440, 134_217_727),  # 256 * 2^19 - 1: steps of 2^19
            (134_217_728, 134_217_728, 135_266_303),  # 256 * 2^19: steps of 2^20
            (100_000_000, 99_614_720, 100_139_007),
            (86_400_000_000_000, 86_311_662_780_416, 86_861_418_594_303),
        ]
        for v, low, high in cases:
            with self.subTest(value=v):
                self.assertEqual((h.lowest_equivalent(v), h.highest_equivalent(v)), (low, high))


class Quantiles(unittest.TestCase):
    def test_quantiles_of_1_to_100_ms(self):
        self.assertEqual(read([i * MS for i in range(1, 101)], [0.5, 0.9, 0.95, 0.99, 0.999]),
                         [50_069_503, 90_177_535, 95_420_415, 99_090_431, 100_139_007])

    def test_the_count_at_a_quantile_is_rounded_up(self):
        # ceil(0.5 * 25) = 13: the 13th value, 144 568 ns, in a step of 1024
        # (rounding to the nearest even count would give the 12th, 121 855).
        squares = [1_000 + 997 * i * i for i in range(25)]
        self.assertEqual(read(squares, [0.5, 0.9, 0.04]), [145_407, 485_375, 1_003])

    def test_zero_counts_as_one_ns_and_past_the_counts_as_one_day(self):
        self.assertEqual(read([0] * 19 + [1 << 50], [0.5, 0.99]), [1, 86_861_418_594_303])


class Window(unittest.TestCase):
    def test_the_period_being_written_is_not_read(self):
        w = LatencyWindow(LATENCY_PERIOD)
        for i in range(30):
            w.record(i * MS, 10 * MS)
        w.advance(LATENCY_PERIOD - 1)
        self.assertIsNone(w.quantile(0.5))
        w.advance(LATENCY_PERIOD)
        self.assertEqual(w.quantile(0.5), 10_027_007)

    def test_fewer_than_min_data_points_give_no_quantile(self):
        self.assertEqual(read([5 * MS] * (MIN_DATA_POINTS - 1), [0.5]), [None])
        self.assertEqual(read([5 * MS] * MIN_DATA_POINTS, [0.5]), [5_013_503])

    def test_two_periods_without_writes_empty_the_window(self):
        w = LatencyWindow(LATENCY_PERIOD)
        for i in range(20):
            w.record(i, 10 * MS)
        w.advance(2 * LATENCY_PERIOD)
        self.assertIsNone(w.quantile(0.5), "the written period ended a whole period ago")
        w = LatencyWindow(LATENCY_PERIOD)
        for i in range(20):
            w.record(i, 10 * MS)
        w.advance(2 * LATENCY_PERIOD - 1)
        self.assertEqual(w.quantile(0.5), 10_027_007, "one period later it is read")
        w.advance(2 * LATENCY_PERIOD)
        self.assertIsNone(w.quantile(0.5), "and the next period has nothing")


class Preset(unittest.TestCase):
    def test_finagle_backup_requests_hedges_at_the_learnt_p99(self):
        policy = Policy.load(os.path.join(PRESETS, "finagle-backup-requests.toml"))
        shared = Shared(policy)
        now = 0
        for i in range(100):  # first copies of 1..100 ms, all in the first period
            call = HedgedState(policy, shared, now, lambda: 0.5)
            self.assertEqual(call.before_first(now)[0], "send")
            self.assertIsNone(call.due_at, "nothing learnt yet")
            now += (i + 1) * 40_000
            self.assertEqual(call.on_copy_outcome(0, "ok", now)["end"], "done")
        now = LATENCY_PERIOD + MS
        call = HedgedState(policy, shared, now, lambda: 0.5)
        call.before_first(now)
        # ceil(0.99 * 100) = 99th value, 3.96 ms: 241 steps of 2^14 ns and part of the 242nd.
        self.assertEqual(call.due_at - now, 242 * 2**14 - 1)


if __name__ == "__main__":
    unittest.main()
