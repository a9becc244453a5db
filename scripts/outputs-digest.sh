#!/usr/bin/env bash
# Runs every shipped experiment, a sweep and a tune with the retrysim binary
# BIN and prints one sha256 line per output file (charts included), so two
# builds can be compared byte for byte:
#
#   scripts/outputs-digest.sh target/release/retrysim > after.txt
#   diff before.txt after.txt
#
# Outputs go to a temporary folder that is removed at the end.
set -euo pipefail
bin=$(realpath "$1")
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Relative output folders, so that no temporary path shows in what is printed.
cd "$tmp"
for exp in "$repo"/experiments/*.toml; do
  name=$(basename "$exp" .toml)
  "$bin" run "$exp" --out "run/$name" -q > "run-$name.stdout" 2>&1 || echo "exit $? $name" >> "run-$name.stdout"
done
"$bin" sweep "$repo"/experiments/quickstart.toml --param experiment.load_scale=0.5..1.5:3 --replications 2 \
  --out sweep -q > sweep.stdout 2>&1 || echo "exit $?" >> sweep.stdout
"$bin" tune "$repo"/experiments/tune-sdk.toml --format json --out tune -q > tune.stdout 2>&1 \
  || echo "exit $?" >> tune.stdout
find . -type f | LC_ALL=C sort | xargs sha256sum
