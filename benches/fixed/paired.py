#!/usr/bin/env python3
"""Fixed cost of a small run: CPU time above process start, paired.

Runs a 10 ms run of benches/peer/scenario.toml (`--no-plots`, into a
folder that holds the previous run's files) and `--version` with each
binary given, N times, in a shuffled order each round, and reads each
child's CPU time (user + system) from wait4(). The cost above process
start is a run's CPU time less the `--version` of the same round; with
two binaries it also prints their paired difference. Each figure comes
with its 95% confidence half-width.

Usage: python3 benches/fixed/paired.py N BIN [BIN2]
  e.g. python3 benches/fixed/paired.py 1000 target/release/retrysim /tmp/retrysim-before
"""
import os
import random
import statistics as st
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
scenario = os.path.join(here, "..", "peer", "scenario.toml")
out = os.path.join(tempfile.mkdtemp(), "fixed")
RUN = ["run", scenario, "-q", "--no-plots", "--replications", "1", "--jobs", "1",
       "--set", "experiment.duration=10ms", "--set", "experiment.warmup=0s", "--out", out]


def cpu_ms(argv):
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.execv(argv[0], argv)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"{argv[0]} failed with status {status}")
    return (usage.ru_utime + usage.ru_stime) * 1000


def ci(xs):
    return 1.96 * st.stdev(xs) / len(xs) ** 0.5


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n = int(sys.argv[1])
    bins = [os.path.abspath(b) for b in sys.argv[2:4]]
    for b in bins:
        cpu_ms([b] + RUN)  # leaves the previous run's files in place
    random.seed(1)
    runs = {b: [] for b in bins}
    above = {b: [] for b in bins}
    for _ in range(n):
        order = [(b, w) for b in bins for w in ("run", "version")]
        random.shuffle(order)
        got = {(b, w): cpu_ms([b] + (RUN if w == "run" else ["--version"])) for b, w in order}
        for b in bins:
            runs[b].append(got[(b, "run")])
            above[b].append(got[(b, "run")] - got[(b, "version")])
    for b in bins:
        print(f"{b}: run {st.mean(runs[b]):.3f} ms; above process start {st.mean(above[b]):.3f} "
              f"+- {ci(above[b]):.3f} ms (mean of {n})")
    if len(bins) == 2:
        d = [x - y for x, y in zip(runs[bins[0]], runs[bins[1]])]
        print(f"first - second: {st.mean(d):.3f} +- {ci(d):.3f} ms")


if __name__ == "__main__":
    main()
