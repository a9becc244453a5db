#!/usr/bin/env python3
"""The scenario of benches/peer/scenario.toml, written by hand with SimPy.

Open-loop Poisson clients send intents to one service. Each intent is a
SimPy process that makes up to MAX_ATTEMPTS attempts; each attempt is a
process of its own (the request at the service), raced against the
client's per-try timeout with `request | timeout` (an AnyOf event). A
request that loses the race is abandoned by its client but keeps its place
in the queue and does its work anyway (wasted work). An error fault answers
a share of the requests 503 on arrival, before they queue. Timeouts and
503s are retried after a capped exponential backoff with full jitter.

The service is a `simpy.Resource` with one slot per worker (FIFO), and the
network adds no latency. Summary metrics count the intents that arrive in
[warmup, duration), followed to their end, as retrysim does.

Usage: python3 benches/peer/simpy_model.py [--seed N] [--rate 700] ...

Besides the metrics it prints `latency_p99_lo_s` and `latency_p99_hi_s`:
a distribution-free interval for the p99 (the order statistics 4 standard
errors of the rank either side).
Requires: pip install simpy
"""

import argparse
import math
import random
import time

import simpy


class Stats:
    """What the in-window intents did."""

    def __init__(self):
        self.intents = 0
        self.succeeded = 0
        self.attempts = 0
        self.latencies = []
        self.work = 0.0
        self.wasted = 0.0


class Attempt:
    """One attempt as the service sees it; the client marks it abandoned."""

    def __init__(self, in_window):
        self.in_window = in_window
        self.abandoned = False


def request(env, service, attempt, cfg, rng, stats):
    """An attempt's request at the service; its value is the answer's status."""
    if rng.random() < cfg.error_probability:
        return 503  # the error fault answers on arrival, without work
    with service.request() as worker:
        yield worker
        work = rng.expovariate(1.0 / cfg.service_time_mean)
        yield env.timeout(work)
    if attempt.in_window:
        stats.work += work
        if attempt.abandoned:
            stats.wasted += work
    return 200


def backoff(cfg, rng, retry):
    """Capped exponential backoff with full jitter before retry number `retry`."""
    limit = min(cfg.backoff_cap, cfg.backoff_base * 2.0 ** (retry - 1))
    return rng.uniform(0.0, limit)


def intent(env, service, cfg, rng, stats):
    """One business operation: attempts, timeouts and retries."""
    arrived = env.now
    in_window = cfg.warmup <= arrived < cfg.duration
    if in_window:
        stats.intents += 1
    for number in range(1, cfg.max_attempts + 1):
        attempt = Attempt(in_window)
        if in_window:
            stats.attempts += 1
        answer = env.process(request(env, service, attempt, cfg, rng, stats))
        timer = env.timeout(cfg.per_try_timeout)
        done = yield answer | timer
        if answer in done:
            outcome = done[answer]
        else:
            attempt.abandoned = True
            outcome = "timeout"
        if outcome == 200:
            if in_window:
                stats.succeeded += 1
                stats.latencies.append(env.now - arrived)
            return
        if outcome not in ("timeout", 503) or number == cfg.max_attempts:
            return  # failed: not retryable, or no attempt left
        yield env.timeout(backoff(cfg, rng, number))


def clients(env, service, cfg, rng, stats):
    """Poisson arrivals of intents during [0, duration)."""
    while True:
        yield env.timeout(rng.expovariate(cfg.rate))
        if env.now >= cfg.duration:
            return
        env.process(intent(env, service, cfg, rng, stats))


def quantile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[index]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=float, default=700.0, help="intents/s")
    parser.add_argument("--duration", type=float, default=120.0, help="s")
    parser.add_argument("--warmup", type=float, default=5.0, help="s")
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--service-time-mean", type=float, default=0.010, help="s")
    parser.add_argument("--error-probability", type=float, default=0.02)
    parser.add_argument("--per-try-timeout", type=float, default=0.050, help="s")
    parser.add_argument("--max-attempts", type=int, default=3)
    parser.add_argument("--backoff-base", type=float, default=0.020, help="s")
    parser.add_argument("--backoff-cap", type=float, default=0.500, help="s")
    cfg = parser.parse_args()

    started = time.perf_counter()
    rng = random.Random(cfg.seed)
    stats = Stats()
    env = simpy.Environment()
    service = simpy.Resource(env, capacity=cfg.workers)
    env.process(clients(env, service, cfg, rng, stats))
    env.run()  # until nothing is left: every intent and request has finished
    wall = time.perf_counter() - started

    latencies = sorted(stats.latencies)
    mean = sum(latencies) / len(latencies) if latencies else float("nan")
    se = math.sqrt(0.99 * 0.01 / max(len(latencies), 1))
    rows = [
        ("intents", str(stats.intents)),
        ("success_rate", f"{stats.succeeded / stats.intents:.6f}"),
        ("attempts_per_intent", f"{stats.attempts / stats.intents:.6f}"),
        ("latency_mean_s", f"{mean:.6f}"),
        ("latency_p99_s", f"{quantile(latencies, 0.99):.6f}"),
        ("latency_p99_lo_s", f"{quantile(latencies, 0.99 - 4 * se):.6f}"),
        ("latency_p99_hi_s", f"{quantile(latencies, 0.99 + 4 * se):.6f}"),
        ("wasted_fraction", f"{stats.wasted / stats.work if stats.work else 0.0:.6f}"),
        ("wall_s", f"{wall:.3f}"),
    ]
    for name, value in rows:
        print(f"{name:<19} {value}")

if __name__ == "__main__":
    main()
