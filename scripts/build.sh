#!/usr/bin/env bash
# Configures and builds everything into build/ (CMake preset "default"; "ci" under CI,
# which also treats warnings as errors). The build registers the test "sanitizers" (the CPU suite under
# ASan + UBSan and the fuzz targets, built when that test runs: scripts/sanitizers.sh; 24 minutes of a
# 31-minute CI run from a clean clone on 2 cores, measured 2026-11-25). FASIM_SANITIZER_SUITE=OFF scripts/build.sh leaves it out.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
preset=default
[ -n "${CI:-}" ] && preset=ci
cmake --preset "$preset" -DFASIM_SANITIZER_SUITE="${FASIM_SANITIZER_SUITE:-ON}" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
