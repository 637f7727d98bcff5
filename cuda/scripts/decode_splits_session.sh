#!/usr/bin/env bash
# One device call: FlashDecoding at batch 1 with one and with 8 K/V heads (32 query heads, d = 128, fp16),
# 16k to 128k keys, at the heuristic's split count and at 1, 2, 3 and 4 blocks per SM (fa-validate
# --kv-splits), each with fa-sim's prediction beside it; the copy rate of the same call for the streaming
# share. Builds fa-validate and peak-rates. Everything lands in $OUT/gpu-session.tgz.
set -uo pipefail
final=${OUT:-$PWD/gpu-out}
out=$PWD/gpu-session
rm -rf "$out"
mkdir -p "$out" "$final"
trap 'tar czf "$final/gpu-session.tgz" -C "$PWD" gpu-session' EXIT
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,multiprocessor_count --format=csv 2>/dev/null ||
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nvcc --version | tail -2
  date -u
  git rev-parse HEAD 2>/dev/null; git status --short 2>/dev/null
} > "$out/device.txt" 2>&1
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
echo "== $(date -u +%T) build (sm_$arch)"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" -DFASIM_CUDA=ON -DFASIM_TESTS=OFF >"$out/build.log" 2>&1 &&
  cmake --build build-gpu -j 16 --target fa-validate peak-rates >>"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
sms=$(nvidia-smi --query-gpu=multiprocessor_count --format=csv,noheader 2>/dev/null | head -1)
[[ "$sms" =~ ^[0-9]+$ ]] || sms=132
echo "== $(date -u +%T) copy rate"
build-gpu/cuda/peak-rates --copy >"$out/copy.txt" 2>&1
echo "== $(date -u +%T) decode splits ($sms SMs)"
build-gpu/cuda/validate/fa-validate --grid decode --batches 1 --kv-heads 1,8 --Nk 16384,65536,131072 \
  --kv-splits "0,$sms,$((2 * sms)),$((3 * sms)),$((4 * sms))" --runs 20 --out "$out/decode_splits.json" >"$out/decode_splits.txt" 2>&1
echo "fa-validate exit $?" >>"$out/decode_splits.txt"
build-gpu/cuda/peak-rates --copy >>"$out/copy.txt" 2>&1
echo "== $(date -u +%T) done"
cat "$out/copy.txt"
cat "$out/decode_splits.txt"
