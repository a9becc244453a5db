#!/usr/bin/env bash
# Regenerates the chart gallery in plots/ from the shipped experiments.
# Run from the repository root: bash plots/make-gallery.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=target/release/retrysim
out=out/gallery
$bin run experiments/metastable-spike.toml -q --out $out/metastable-spike > /dev/null
$bin run experiments/layered-amplification.toml -q --out $out/layered > /dev/null
$bin run experiments/thundering-herd.toml -q --out $out/herd > /dev/null
$bin run experiments/crash-recovery.toml -q --out $out/crash > /dev/null
$bin sweep experiments/quickstart.toml -q --param experiment.load_scale=0.6..1.4:9 --replications 3 --out $out/load-sweep > /dev/null
cp $out/metastable-spike/goodput.png plots/metastable-spike-goodput.png
cp $out/layered/edges.png plots/layered-amplification-edges.png
cp $out/herd/latency_cdf.png plots/thundering-herd-latency.png
cp $out/crash/effects.png plots/crash-recovery-effects.png
cp $out/load-sweep/sweep_success_rate.png plots/quickstart-load-sweep.png
echo "gallery written to plots/"
