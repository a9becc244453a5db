"""The learnt latency of a hedged call edge, with the Rust crate's numbers
to the nanosecond: :class:`Histogram` counts values the way the
``hdrhistogram`` crate (7.6) does for the bounds the crate uses (1 ns to
1 day, 2 significant digits), and :class:`LatencyWindow` keeps two
rotating periods of it (tower's ``RotatingHistogram``), read from the last
complete one.

At 2 significant digits a bucket has 256 sub-buckets: values below 256 are
exact; from 256 * 2^(k-1) to 256 * 2^k - 1 they are counted in steps of
2^k, and a quantile is the highest value of the step it falls in."""

from __future__ import annotations

import math
from typing import Dict, Optional

LATENCY_PERIOD = 5 * 10**9
"""Length of one period of the window (ns)."""

MIN_DATA_POINTS = 20
"""Latencies the read period needs before a quantile delay is trusted."""

LOWEST = 1
HIGHEST = 86_400_000_000_000
SIGNIFICANT_DIGITS = 2


class Histogram:
    """Counts of values in HdrHistogram's buckets (``new_with_bounds(low,
    high, sigfig)``, no auto-resize), recorded with ``saturating_record``."""

    def __init__(self, low: int = LOWEST, high: int = HIGHEST, sigfig: int = SIGNIFICANT_DIGITS):
        self.low, self.high = low, high
        largest = 2 * 10**sigfig
        self.unit_magnitude = int(math.floor(math.log2(low)))
        count_magnitude = int(math.ceil(math.log2(largest)))
        self.half_magnitude = count_magnitude - 1
        self.sub_bucket_count = 1 << count_magnitude
        self.half_count = self.sub_bucket_count // 2
        self.sub_bucket_mask = (self.sub_bucket_count - 1) << self.unit_magnitude
        self.zero_base = 64 - self.unit_magnitude - count_magnitude
        buckets, untrackable = 1, self.sub_bucket_count << self.unit_magnitude
        while untrackable <= high:
            if untrackable > (2**64 - 1) // 2:
                buckets += 1
                break
            untrackable <<= 1
            buckets += 1
        self.bins = (buckets + 1) * self.half_count
        self.counts: Dict[int, int] = {}
        self.total = 0

    def bucket_for(self, value: int) -> int:
        """The bucket of ``value`` (64 less the leading zeros of ``value |
        mask``, from the count of bucket 0's)."""
        return self.zero_base - (64 - (value | self.sub_bucket_mask).bit_length())

    def index_for(self, value: int) -> int:
        b = self.bucket_for(value)
        sub = value >> (b + self.unit_magnitude)
        return ((b + 1) << self.half_magnitude) + sub - self.half_count

    def value_for(self, index: int) -> int:
        b = (index >> self.half_magnitude) - 1
        sub = (index & (self.half_count - 1)) + self.half_count
        if b < 0:
            sub -= self.half_count
            b = 0
        return sub << (b + self.unit_magnitude)

    def lowest_equivalent(self, value: int) -> int:
        b = self.bucket_for(value)
        return (value >> (b + self.unit_magnitude)) << (b + self.unit_magnitude)

    def highest_equivalent(self, value: int) -> int:
        """The largest value counted with ``value`` (capped at 2^64 - 1)."""
        if value == 2**64 - 1:
            return value
        b = self.bucket_for(value)
        return min(self.lowest_equivalent(value) + (1 << (self.unit_magnitude + b)), 2**64 - 1) - 1

    def record(self, value: int) -> None:
        """``saturating_record``: a value outside the counts is counted at
        ``high`` (above) or ``low`` (below)."""
        i = self.index_for(value)
        if not 0 <= i < self.bins:
            i = self.index_for(self.high if value > self.high else self.low)
        self.counts[i] = self.counts.get(i, 0) + 1
        self.total += 1

    def reset(self) -> None:
        self.counts.clear()
        self.total = 0

    def __len__(self) -> int:
        return self.total

    def value_at_quantile(self, q: float) -> int:
        """The highest value equivalent to the one at which the cumulative
        count first reaches ``ceil(q * total)`` (at least 1); 0 when empty;
        the lowest equivalent value for ``q = 0``."""
        q = min(q, 1.0)
        target = max(math.ceil(q * float(self.total)), 1)
        seen = 0
        for i in sorted(self.counts):
            seen += self.counts[i]
            if seen >= target:
                v = self.value_for(i)
                return self.lowest_equivalent(v) if q == 0.0 else self.highest_equivalent(v)
        return 0


class LatencyWindow:
    """Latencies over two rotating periods: the current one written, the
    last complete one read."""

    def __init__(self, period: int = LATENCY_PERIOD):
        self.period = max(period, 1)
        self.written_since = 0
        self.read = Histogram()
        self.write = Histogram()

    def advance(self, now: int) -> None:
        """Rotates the periods up to ``now``: one period over, the written
        one is read; two or more, nothing recent is left to read."""
        elapsed = max(now - self.written_since, 0)
        if elapsed < self.period:
            return
        if elapsed >= 2 * self.period:
            self.read.reset()
        else:
            self.read, self.write = self.write, self.read
        self.write.reset()
        self.written_since = now - elapsed % self.period

    def record(self, now: int, latency: int) -> None:
        self.advance(now)
        self.write.record(max(latency, 1))

    def quantile(self, q: float) -> Optional[int]:
        """The ``q`` quantile of the read period, or None while it holds
        fewer than :data:`MIN_DATA_POINTS` latencies."""
        return self.read.value_at_quantile(q) if len(self.read) >= MIN_DATA_POINTS else None
