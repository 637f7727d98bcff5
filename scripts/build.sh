#!/usr/bin/env bash
# Configures and builds everything into build/ (CMake preset "default"; "ci" under CI,
# which also treats warnings as errors). FASIM_SANITIZER_SUITE=ON scripts/build.sh adds the test
# "sanitizers" (the CPU suite under ASan + UBSan and the fuzz targets, built by that test:
# scripts/sanitizers.sh); it is off until its time on CI's 2 cores has been measured.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
preset=default
[ -n "${CI:-}" ] && preset=ci
cmake --preset "$preset" -DFASIM_SANITIZER_SUITE="${FASIM_SANITIZER_SUITE:-OFF}" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
