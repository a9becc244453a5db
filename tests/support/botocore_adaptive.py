"""Drives botocore's own adaptive retry mode (retries/adaptive.py,
bucket.py, throttling.py) through a scripted sequence of sends and
responses on a fake clock, and prints what it computed as JSON.

stdin: {"requests": [{"t": want_to_send, "r": response_time, "throttled": bool}, ...]}
stdout: [{"sent": time the send went out, "measured": ..., "fill_rate": ...,
          "capacity": ..., "enabled": ...}, ...] one per request, the rates
          read right after its response.

Nothing here reimplements the algorithm: the limiter, the CUBIC
calculator, the rate clocker and the token bucket are botocore's; the
script only supplies the clock and the throttling verdicts. A blocking
acquire waits on the bucket's condition variable: the fake condition
advances the fake clock by the wait instead of sleeping.
"""
import json
import math
import sys

from botocore.retries import adaptive, bucket, throttling


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def current_time(self):
        return self.now

    def sleep(self, amount):
        self.now += amount


class FakeCondition:
    """Stands in for threading.Condition: wait(timeout) advances the clock."""

    def __init__(self, clock):
        self._clock = clock

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def wait(self, timeout=None):
        # A real wait lasts at least its timeout, and time always moves on:
        # when rounding leaves the bucket a hair short, botocore waits again.
        self._clock.now = max(self._clock.now + timeout, math.nextafter(self._clock.now, math.inf))
        return True

    def notify(self, n=1):
        pass


class ScriptedDetector:
    def is_throttling_error(self, **kwargs):
        return kwargs["throttled"]


def main():
    script = json.load(sys.stdin)
    clock = FakeClock()
    token_bucket = bucket.TokenBucket(max_rate=1, clock=clock)
    token_bucket._new_fill_rate_condition = FakeCondition(clock)
    limiter = adaptive.ClientRateLimiter(
        rate_adjustor=throttling.CubicCalculator(starting_max_rate=0, start_time=clock.current_time()),
        rate_clocker=adaptive.RateClocker(clock),
        token_bucket=token_bucket,
        throttling_detector=ScriptedDetector(),
        clock=clock,
    )
    out = []
    for req in script["requests"]:
        clock.now = max(clock.now, req["t"])
        limiter.on_sending_request(request=None)
        sent = clock.now
        if req["r"] < sent:
            raise SystemExit("the script's response comes before botocore sent the request")
        clock.now = req["r"]
        limiter.on_receiving_response(throttled=req["throttled"])
        out.append(
            {
                "sent": sent,
                "measured": limiter._rate_clocker.measured_rate,
                "fill_rate": token_bucket.max_rate,
                "capacity": token_bucket.available_capacity,
                "enabled": limiter._enabled,
            }
        )
    json.dump(out, sys.stdout)


main()
