#!/usr/bin/env bash
# One device call: peak-rates three times over (its new probes: every SM reading 1 GiB, and writing 1 GiB,
# beside the copy's half-and-half), to learn whether DRAM streams one way at the copy's rate. Builds
# peak-rates only. Everything lands in $OUT/gpu-session.tgz.
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" peak-rates
for i in 1 2 3; do
  echo "== $(date -u +%T) peak-rates, pass $i"
  $build/cuda/peak-rates >"$out/peak_rates_$i.txt" 2>&1
  $build/cuda/peak-rates --json >"$out/peak_rates_$i.json" 2>&1
done
echo "== $(date -u +%T) done"
cat "$out"/peak_rates_*.txt | grep -E "copy|DRAM streams"
