#!/usr/bin/env bash
# One device call: fa-calibrate, which now also times cuBLAS's attention-shaped GEMMs (S = Q K^T over d,
# O = P V onto d columns) against its square rate, and the kernels PyTorch's math backend launches forward
# and backward (torch_math_kernels.py). Builds fa-calibrate only. Everything lands in $OUT/gpu-session.tgz.
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" fa-calibrate
echo "== $(date -u +%T) fa-calibrate"
$build/cuda/fa-calibrate --out "$out/calibrated-gpu.json" --raw "$out/calibrate_raw.json" >"$out/calibrate.txt" 2>&1
echo "fa-calibrate exit $?" >>"$out/calibrate.txt"
echo "== $(date -u +%T) torch_math_kernels"
python3 cuda/scripts/torch_math_kernels.py --out "$out/torch_math_kernels.json" >"$out/torch_math_kernels.txt" 2>&1
echo "torch_math_kernels exit $?" >>"$out/torch_math_kernels.txt"
echo "== $(date -u +%T) done"
tail -3 "$out/calibrate.txt"
