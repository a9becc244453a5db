#!/usr/bin/env bash
# Writes sdk/vectors/<preset>.json, the conformance vectors of every policy
# under policies/, with the retrysim binary built from this checkout.
# tests/it/sdk_vectors.rs fails when a file is not what this writes.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --bin retrysim
bin=target/debug/retrysim
mkdir -p sdk/vectors
rm -f sdk/vectors/*.json
for p in policies/*.toml; do
  "$bin" vectors "$p" > "sdk/vectors/$(basename "$p" .toml).json"
done
echo "wrote $(ls sdk/vectors/*.json | wc -l) file(s) under sdk/vectors/"
