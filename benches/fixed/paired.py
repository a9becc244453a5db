#!/usr/bin/env python3
"""Fixed cost of a small run: CPU time above process start, paired.

Runs a 10 ms run of benches/peer/scenario.toml (`--no-plots`, into a
folder that holds the previous run's files) and `--version` with each
binary given, N times, in a shuffled order each round, and reads each
child's CPU time (user + system) from wait4(). The cost above process
start is a run's CPU time less the `--version` of the same round; with
two binaries it also prints their paired difference. Each figure comes
with its 95% confidence half-width.

Byte-identical copies of one binary differ by up to 0.2 ms in these
figures (two copies on tmpfs: 1.31 against 1.17 ms above process start),
a per-file offset that stays for the file's life (hard links of one file
do not show it; it is presumably where its pages sit in physical memory).
So each binary is copied COPIES times (default 8) into a temporary
folder, round r runs copy r mod COPIES, and the confidence interval is
taken over the copies' means (Student's t), not over the rounds.

Usage: python3 benches/fixed/paired.py N BIN [BIN2]
  e.g. python3 benches/fixed/paired.py 1000 target/release/retrysim /tmp/retrysim-before
Environment: COPIES=8   copies of each binary (1: run the files given)
"""
import os
import random
import shutil
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


# Two-sided 95% quantiles of Student's t, by degrees of freedom.
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23,
       11: 2.20, 12: 2.18, 13: 2.16, 14: 2.14, 15: 2.13, 19: 2.09, 24: 2.06, 29: 2.05}


def ci(xs):
    """Half-width of the 95% interval of the mean of xs."""
    df = len(xs) - 1
    t = T95.get(df) or next((v for k, v in sorted(T95.items(), reverse=True) if k <= df), 1.96)
    return t * st.stdev(xs) / len(xs) ** 0.5


def copies_of(binary, k, into):
    """k copies of binary in folder into (the binary itself when k is 1)."""
    if k == 1:
        return [binary]
    out = []
    for i in range(k):
        d = os.path.join(into, f"{len(os.listdir(into))}")
        os.mkdir(d)
        out.append(shutil.copy2(binary, os.path.join(d, os.path.basename(binary))))
    return out


def by_copy(values, k):
    """The means of values taken by copy (round r ran copy r mod k)."""
    return [st.mean(values[i::k]) for i in range(k)]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    n = int(sys.argv[1])
    k = int(os.environ.get("COPIES", "8"))
    if k < 1 or n < 2 * k:
        sys.exit(f"COPIES must be at least 1 and N at least 2 * COPIES (N={n}, COPIES={k})")
    bins = [os.path.abspath(b) for b in sys.argv[2:4]]
    store = tempfile.mkdtemp()
    copies = {b: copies_of(b, k, store) for b in bins}
    for b in bins:
        for c in copies[b]:
            cpu_ms([c] + RUN)  # leaves the previous run's files in place
    random.seed(1)
    runs = {b: [] for b in bins}
    above = {b: [] for b in bins}
    for r in range(n):
        order = [(b, w) for b in bins for w in ("run", "version")]
        random.shuffle(order)
        exe = {b: copies[b][r % k] for b in bins}
        got = {(b, w): cpu_ms([exe[b]] + (RUN if w == "run" else ["--version"])) for b, w in order}
        for b in bins:
            runs[b].append(got[(b, "run")])
            above[b].append(got[(b, "run")] - got[(b, "version")])
    shutil.rmtree(store)
    # With copies, the spread between copies is the uncertainty; with one
    # file, the spread between rounds.
    spread = (lambda xs: by_copy(xs, k)) if k > 1 else (lambda xs: xs)
    for b in bins:
        print(f"{b}: run {st.mean(runs[b]):.3f} ms; above process start {st.mean(above[b]):.3f} "
              f"+- {ci(spread(above[b])):.3f} ms (mean of {n} rounds over {k} copies)")
    if len(bins) == 2:
        d = [x - y for x, y in zip(above[bins[0]], above[bins[1]])]
        print(f"first - second, above process start: {st.mean(d):.3f} +- {ci(spread(d)):.3f} ms")


if __name__ == "__main__":
    main()
