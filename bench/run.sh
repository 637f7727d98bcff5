#!/usr/bin/env bash
# Runs the CPU benchmarks and records their output with the machine and date.
# Usage: bench/run.sh [BUILD_DIR]   (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../build}
cmake --build "$build" --target bench-simulator -j2 >/dev/null
out=$here/results/simulator.txt
{
  echo "# bench-simulator: $(date -u +%Y-%m-%d) on $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "# command: bench/run.sh (build type $(grep CMAKE_BUILD_TYPE: "$build/CMakeCache.txt" | cut -d= -f2)); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  "$build/bench/bench-simulator"
} | tee "$out"
