#!/usr/bin/env bash
# One device call: peak-rates three times over (its new probes: every SM reading 1 GiB, and writing 1 GiB,
# beside the copy's half-and-half), to learn whether DRAM streams one way at the copy's rate. Builds
# peak-rates only. Everything lands in $OUT/gpu-session.tgz.
set -uo pipefail
final=${OUT:-$PWD/gpu-out}
out=$PWD/gpu-session
rm -rf "$out"
mkdir -p "$out" "$final"
trap 'tar czf "$final/gpu-session.tgz" -C "$PWD" gpu-session' EXIT
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nvcc --version | tail -2
  date -u
  git rev-parse HEAD 2>/dev/null; git status --short 2>/dev/null
} > "$out/device.txt" 2>&1
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
echo "== $(date -u +%T) build (sm_$arch)"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" -DFASIM_CUDA=ON -DFASIM_TESTS=OFF >"$out/build.log" 2>&1 &&
  cmake --build build-gpu -j 16 --target peak-rates >>"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
for i in 1 2 3; do
  echo "== $(date -u +%T) peak-rates, pass $i"
  build-gpu/cuda/peak-rates >"$out/peak_rates_$i.txt" 2>&1
  build-gpu/cuda/peak-rates --json >"$out/peak_rates_$i.json" 2>&1
done
echo "== $(date -u +%T) done"
cat "$out"/peak_rates_*.txt | grep -E "copy|DRAM streams"
