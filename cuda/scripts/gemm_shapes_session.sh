#!/usr/bin/env bash
# One device call: fa-calibrate, which now also times cuBLAS's attention-shaped GEMMs (S = Q K^T over d,
# O = P V onto d columns) against its square rate, and the kernels PyTorch's math backend launches forward
# and backward (torch_math_kernels.py). Builds fa-calibrate only. Everything lands in $OUT/gpu-session.tgz.
set -uo pipefail
final=${OUT:-$PWD/gpu-out}
out=$PWD/gpu-session
rm -rf "$out"
mkdir -p "$out" "$final"
trap 'tar czf "$final/gpu-session.tgz" -C "$PWD" gpu-session' EXIT
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nvcc --version | tail -2
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
  date -u
  git rev-parse HEAD 2>/dev/null; git status --short 2>/dev/null
} > "$out/device.txt" 2>&1
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
echo "== $(date -u +%T) build (sm_$arch)"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" -DFASIM_CUDA=ON -DFASIM_TESTS=OFF >"$out/build.log" 2>&1 &&
  cmake --build build-gpu -j 16 --target fa-calibrate >>"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
echo "== $(date -u +%T) fa-calibrate"
build-gpu/cuda/fa-calibrate --out "$out/calibrated-gpu.json" --raw "$out/calibrate_raw.json" >"$out/calibrate.txt" 2>&1
echo "fa-calibrate exit $?" >>"$out/calibrate.txt"
echo "== $(date -u +%T) torch_math_kernels"
python3 cuda/scripts/torch_math_kernels.py --out "$out/torch_math_kernels.json" >"$out/torch_math_kernels.txt" 2>&1
echo "torch_math_kernels exit $?" >>"$out/torch_math_kernels.txt"
echo "== $(date -u +%T) done"
tail -3 "$out/calibrate.txt"
