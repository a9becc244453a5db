#!/usr/bin/env bash
# retrysim next to the smallest event loop of the same model and to a
# hand-written SimPy model of it.
#
# Runs benches/peer/scenario.toml with retrysim, benches/limit/minimal.rs
# (the minimal loop: a binary heap plus a FIFO for the per-try timeouts)
# and benches/peer/simpy_model.py with SimPy, alternating (minimal loop,
# retrysim, SimPy, then again), each timed around the whole process:
# start-up and retrysim's output files included. It prints the metrics of
# all three, checks that they agree (success rate, attempts per intent and
# p99 latency, within sampling noise) and prints the ratios of the best
# CPU times (user + system) and wall times; with valgrind installed also
# the instructions of the minimal loop and of retrysim (one callgrind run
# each: repeatable on a noisy machine, unlike times).
#
# Usage: bash benches/peer/compare.sh
# Environment:
#   REPEAT=3              timed runs of each tool; the best is kept
#   DURATIONS="120 1200"  arrival windows in seconds, each timed and checked
#   DURATION=...          one arrival window instead of DURATIONS
#   INSTRUCTIONS=1        count instructions with callgrind (empty: skip)
#   PYTHON=python3
#   CARGO_TARGET_DIR      where cargo builds (default: target/ at the root)
# Exit status: 0 all agree, 1 they disagree, 2 a tool failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
REPEAT="${REPEAT:-3}"
DURATIONS="${DURATION:-${DURATIONS:-120 1200}}"
INSTRUCTIONS="${INSTRUCTIONS-1}"
PYTHON="${PYTHON:-python3}"
scenario="$here/scenario.toml"
model="$here/simpy_model.py"

if ! "$PYTHON" -c 'import simpy' 2>/dev/null; then
  echo "installing simpy ..." >&2
  "$PYTHON" -m pip install --quiet simpy
fi
if [[ -n "$INSTRUCTIONS" ]] && ! command -v valgrind >/dev/null; then
  echo "valgrind not found: no instruction counts" >&2
  INSTRUCTIONS=
fi
echo "building retrysim and the minimal loop --release ..." >&2
(cd "$root" && cargo build --release --quiet --bin retrysim --example limit)
target="${CARGO_TARGET_DIR:-$root/target}"
retrysim="$target/release/retrysim"
limit="$target/release/examples/limit"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# timed OUT -- CMD...: runs CMD with stdout to OUT; prints "wall cpu" in
# seconds (cpu: user + system of the child, from its resource usage).
timed() {
  local out="$1"; shift; shift
  "$PYTHON" - "$out" "$@" <<'EOF'
import os, resource, subprocess, sys, time
out = sys.argv[1]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
t0 = time.perf_counter()
with open(out, "w") as f:
    code = subprocess.call(sys.argv[2:], stdout=f)
wall = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_CHILDREN)
if code != 0:
    sys.exit(2)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
print(f"{wall:.6f} {cpu:.6f}")
EOF
}

# instructions CMD...: instructions the process executed, by callgrind.
instructions() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null \
    | awk '/Collected :/ {print $NF}'
}

rs_args() {
  echo run "$scenario" -q --no-plots --replications 1 --jobs 1 \
    --set "experiment.duration=${DURATION}s" --out "$work/rs"
}

# retrysim_metrics OUTDIR: the metrics of summary.json, in simpy_model.py's format.
retrysim_metrics() {
  "$PYTHON" - "$1/summary.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))["variants"][0]["metrics"]
for k in ["intents", "success_rate", "attempts_per_intent", "latency_mean_s",
          "latency_p99_s", "wasted_fraction"]:
    v = m[k]["mean"]
    print(f"{k:<19} {int(v) if k == 'intents' else format(v, '.6f')}")
EOF
}

best() { printf '%s\n' "$@" | sort -g | head -n1; }

# agree LABEL A B: success rate and attempts per intent within 4 standard
# errors of the difference of two independent runs; the p99 within the
# 4-standard-error intervals of the order statistic (B's, or A's when B
# prints none, counted for both) plus 0.2% (retrysim reads its p99 off an
# HDR histogram with 3 significant digits).
agree() {
  "$PYTHON" - "$@" <<'EOF'
import math, sys
label, pa, pb, na, nb = sys.argv[1:6]
def parse(path):
    d = {}
    for line in open(path):
        k, v = line.split()[:2]
        d[k] = float(v)
    return d
a, b = parse(pa), parse(pb)
n = min(a["intents"], b["intents"])
ok = True
p = (a["success_rate"] + b["success_rate"]) / 2
checks = [("success_rate", math.sqrt(2 * max(p * (1 - p), 1 / n) / n))]
extra = max((a["attempts_per_intent"] + b["attempts_per_intent"]) / 2 - 1, 1 / n)
checks.append(("attempts_per_intent", 4 * math.sqrt(2 * extra * (1 + extra) / n)))
checks[0] = (checks[0][0], 4 * checks[0][1])
def half(d):
    return (d["latency_p99_hi_s"] - d["latency_p99_lo_s"]) / 2 if "latency_p99_hi_s" in d else None
ha, hb = half(a), half(b)
ha = ha if ha is not None else hb
hb = hb if hb is not None else ha
tol = math.sqrt(ha * ha + hb * hb) + 0.002 * max(a["latency_p99_s"], b["latency_p99_s"])
checks.append(("latency_p99_s", tol))
for k, t in checks:
    diff = a[k] - b[k]
    verdict = "agree" if abs(diff) <= t + 1e-9 else "DISAGREE"
    ok &= verdict == "agree"
    print(f"  {label}: {k:<19} {na} {a[k]:.6f}  {nb} {b[k]:.6f}  "
          f"diff {diff:+.6f}  (allowed {t:.6f})  {verdict}")
sys.exit(0 if ok else 1)
EOF
}

ratio() { printf '%.2f' "$(echo "$1 / $2" | bc -l)"; }

status=0
summary=()
for DURATION in $DURATIONS; do
  echo "scenario: $scenario (arrivals for ${DURATION} s), best of $REPEAT runs each, alternating"
  lm_w=(); lm_c=(); rs_w=(); rs_c=(); py_w=(); py_c=()
  for ((i = 1; i <= REPEAT; i++)); do
    r="$(timed "$work/lm.txt" -- "$limit" --duration "$DURATION")" || { echo "minimal loop failed" >&2; exit 2; }
    read -r w c <<<"$r"
    lm_w+=("$w"); lm_c+=("$c")
    # shellcheck disable=SC2046
    r="$(timed "$work/rs.out" -- "$retrysim" $(rs_args))" || { echo "retrysim failed" >&2; exit 2; }
    read -r w c <<<"$r"
    rs_w+=("$w"); rs_c+=("$c")
    r="$(timed "$work/py.txt" -- "$PYTHON" "$model" --duration "$DURATION")" || { echo "simpy_model.py failed" >&2; exit 2; }
    read -r w c <<<"$r"
    py_w+=("$w"); py_c+=("$c")
  done
  retrysim_metrics "$work/rs" >"$work/rs.txt"
  fmt() { printf '%.4f ' "$@"; }
  echo
  echo "minimal loop (CPU s: $(fmt "${lm_c[@]}"))"
  sed 's/^/  /' "$work/lm.txt"
  echo "retrysim (CPU s: $(fmt "${rs_c[@]}"))"
  sed 's/^/  /' "$work/rs.txt"
  echo "SimPy $("$PYTHON" -c 'import simpy; print(simpy.__version__)') (CPU s: $(fmt "${py_c[@]}"))"
  sed 's/^/  /' "$work/py.txt"
  echo
  lmc="$(best "${lm_c[@]}")"; rsc="$(best "${rs_c[@]}")"; pyc="$(best "${py_c[@]}")"
  lmw="$(best "${lm_w[@]}")"; rsw="$(best "${rs_w[@]}")"; pyw="$(best "${py_w[@]}")"
  printf '%-14s %12s %12s\n' "best of $REPEAT" "CPU s" "wall s"
  printf '%-14s %12.4f %12.4f\n' "minimal loop" "$lmc" "$lmw" retrysim "$rsc" "$rsw" SimPy "$pyc" "$pyw"
  line="$(printf '%6s s: CPU retrysim/minimal %s, SimPy/minimal %s, SimPy/retrysim %s' "$DURATION" \
    "$(ratio "$rsc" "$lmc")" "$(ratio "$pyc" "$lmc")" "$(ratio "$pyc" "$rsc")")"
  if [[ -n "$INSTRUCTIONS" ]]; then
    lmi="$(instructions "$limit" --duration "$DURATION")"
    # shellcheck disable=SC2046
    rsi="$(instructions "$retrysim" $(rs_args))"
    printf 'instructions (callgrind): minimal loop %s, retrysim %s\n' "$lmi" "$rsi"
    line+="; instructions retrysim/minimal $(ratio "$rsi" "$lmi")"
  fi
  echo "$line"
  summary+=("$line")
  echo
  echo "agreement:"
  agree "${DURATION} s" "$work/rs.txt" "$work/lm.txt" retrysim minimal || status=1
  agree "${DURATION} s" "$work/py.txt" "$work/lm.txt" simpy minimal || status=1
  agree "${DURATION} s" "$work/rs.txt" "$work/py.txt" retrysim simpy || status=1
  echo
done

echo "ratios, whole processes, best of $REPEAT:"
printf '  %s\n' "${summary[@]}"
if [[ $status -ne 0 ]]; then
  echo "the three DISAGREE beyond sampling noise (see above)" >&2
else
  echo "retrysim, the minimal loop and SimPy agree within sampling noise"
fi
exit $status
