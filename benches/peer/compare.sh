#!/usr/bin/env bash
# retrysim next to a hand-written SimPy model of the same scenario.
#
# Runs benches/peer/scenario.toml with retrysim and benches/peer/simpy_model.py
# with SimPy, prints both sets of metrics, checks that they agree (success
# rate and attempts per intent, within sampling noise), and prints the
# speed-up: SimPy wall time / retrysim wall time, each timed around the
# whole process (start-up and retrysim's output files included), best of
# REPEAT runs.
#
# Usage: bash benches/peer/compare.sh
# Environment:
#   REPEAT=3          timed runs of each tool; the best is kept
#   DURATIONS="60 600"  arrival windows in seconds, each timed and checked
#                     (the scenario has 60; at 600 start-up costs matter less)
#   DURATION=...      one arrival window instead of DURATIONS
#   CHECK_TIMEOUT=60  also check agreement with this per-try timeout in ms,
#                     where timeouts and wasted work do happen (empty: skip)
#   PYTHON=python3
# Exit status: 0 both agree, 1 they disagree, 2 a tool failed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
REPEAT="${REPEAT:-3}"
DURATIONS="${DURATION:-${DURATIONS:-60 600}}"
CHECK_TIMEOUT="${CHECK_TIMEOUT-60}"
PYTHON="${PYTHON:-python3}"
scenario="$here/scenario.toml"
model="$here/simpy_model.py"

if ! "$PYTHON" -c 'import simpy' 2>/dev/null; then
  echo "installing simpy ..." >&2
  "$PYTHON" -m pip install --quiet simpy
fi
echo "building retrysim --release ..." >&2
(cd "$root" && cargo build --release --quiet)
retrysim="$root/target/release/retrysim"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }

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

# run_retrysim OUT [--set ...]: one timed run; prints the wall time.
run_retrysim() {
  local out="$1"; shift
  local t0 t1
  t0="$(now)"
  "$retrysim" run "$scenario" -q --no-plots --replications 1 --jobs 1 \
    --set "experiment.duration=${DURATION}s" --out "$out" "$@" >/dev/null \
    || { echo "retrysim failed" >&2; exit 2; }
  t1="$(now)"
  echo "$t1 - $t0" | bc -l
}

# run_simpy OUTFILE [args]: one timed run; prints the wall time.
run_simpy() {
  local file="$1"; shift
  local t0 t1
  t0="$(now)"
  "$PYTHON" "$model" --duration "$DURATION" "$@" >"$file" \
    || { echo "simpy_model.py failed" >&2; exit 2; }
  t1="$(now)"
  echo "$t1 - $t0" | bc -l
}

best() { printf '%s\n' "$@" | sort -g | head -n1; }

# agree LABEL RETRYSIM_METRICS SIMPY_METRICS: checks success rate and
# attempts per intent within 4 standard errors of the difference of two
# independent runs; returns 1 when they disagree.
agree() {
  "$PYTHON" - "$1" "$2" "$3" <<'EOF'
import math, sys
label = sys.argv[1]
def parse(path):
    d = {}
    for line in open(path):
        k, v = line.split()[:2]
        d[k] = float(v)
    return d
a, b = parse(sys.argv[2]), parse(sys.argv[3])
n = min(a["intents"], b["intents"])
ok = True
# success rate: binomial; a floor of 1/n when both are (nearly) 0 or 1.
p = (a["success_rate"] + b["success_rate"]) / 2
se = math.sqrt(2 * max(p * (1 - p), 1 / n) / n)
checks = [("success_rate", se)]
# attempts per intent: extra attempts counted per intent, roughly Poisson.
extra = max((a["attempts_per_intent"] + b["attempts_per_intent"]) / 2 - 1, 1 / n)
checks.append(("attempts_per_intent", math.sqrt(2 * extra * (1 + extra) / n)))
for k, se in checks:
    diff = a[k] - b[k]
    verdict = "agree" if abs(diff) <= 4 * se + 1e-9 else "DISAGREE"
    ok &= verdict == "agree"
    print(f"  {label}: {k:<19} retrysim {a[k]:.6f}  simpy {b[k]:.6f}  "
          f"diff {diff:+.6f}  (4 s.e. = {4 * se:.6f})  {verdict}")
sys.exit(0 if ok else 1)
EOF
}

status=0
summary=()
for DURATION in $DURATIONS; do
  echo "scenario: $scenario (arrivals for ${DURATION} s), best of $REPEAT runs each"
  rs_times=(); py_times=()
  for ((i = 1; i <= REPEAT; i++)); do
    rs_times+=("$(run_retrysim "$work/rs")")
    py_times+=("$(run_simpy "$work/simpy.txt")")
  done
  rs_best="$(best "${rs_times[@]}")"
  py_best="$(best "${py_times[@]}")"
  retrysim_metrics "$work/rs" >"$work/rs.txt"

  echo
  fmt() { printf '%.3f ' "$@"; }
  echo "retrysim (wall times, s: $(fmt "${rs_times[@]}"))"
  sed 's/^/  /' "$work/rs.txt"
  printf '  %-19s %.3f   (whole process, best run)\n' wall_process_s "$rs_best"
  echo "SimPy $("$PYTHON" -c 'import simpy; print(simpy.__version__)') (wall times, s: $(fmt "${py_times[@]}"))"
  sed 's/^/  /' "$work/simpy.txt"
  printf '  %-19s %.3f   (whole process, best run; wall_s above: the simulation alone, last run)\n' wall_process_s "$py_best"
  echo
  ratio="$(printf '%.1f' "$(echo "$py_best / $rs_best" | bc -l)")"
  printf 'speed-up at %s s (SimPy wall time / retrysim wall time): %sx\n' "$DURATION" "$ratio"
  summary+=("$(printf '%6s s of arrivals: retrysim %.3f s, SimPy %.3f s, %sx' "$DURATION" "$rs_best" "$py_best" "$ratio")")
  echo

  echo "agreement:"
  agree "${DURATION} s, per-try timeout 200ms" "$work/rs.txt" "$work/simpy.txt" || status=1
  echo
done

if [[ -n "$CHECK_TIMEOUT" ]]; then
  DURATION="${DURATIONS%% *}"
  run_retrysim "$work/rs2" --set "clients.web.policy.per_try_timeout=${CHECK_TIMEOUT}ms" >/dev/null
  retrysim_metrics "$work/rs2" >"$work/rs2.txt"
  run_simpy "$work/simpy2.txt" --per-try-timeout "$(echo "$CHECK_TIMEOUT / 1000" | bc -l)" >/dev/null
  agree "${DURATION} s, per-try timeout ${CHECK_TIMEOUT}ms" "$work/rs2.txt" "$work/simpy2.txt" || status=1
  printf '  per-try timeout %sms: wasted_fraction     retrysim %s  simpy %s  (not checked)\n' "$CHECK_TIMEOUT" \
    "$(awk '$1 == "wasted_fraction" {print $2}' "$work/rs2.txt")" \
    "$(awk '$1 == "wasted_fraction" {print $2}' "$work/simpy2.txt")"
  echo
fi
echo "speed-up, whole processes, best of $REPEAT:"
printf '  %s\n' "${summary[@]}"
if [[ $status -ne 0 ]]; then
  echo "retrysim and SimPy DISAGREE beyond sampling noise (see above)" >&2
else
  echo "retrysim and SimPy agree within sampling noise"
fi
exit $status
