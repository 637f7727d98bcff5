#!/usr/bin/env bash
# The sanitizer suites of issue 25. Run by the ctest test "sanitizers" (registered when the build is
# configured with -DFASIM_SANITIZER_SUITE=ON, as scripts/build.sh does, so CI runs it), or by hand:
#   scripts/sanitizers.sh [DIR]
#   1. CMake preset asan into DIR/asan (default: build-asan/): every CPU target (simulator,
#      reference, lessons, tests) built with g++ -fsanitize=address,undefined, then its test suite
#      (the notebook tests excluded: they execute Python, which is not instrumented). Any finding
#      stops the program and fails its test.
#   2. CMake preset fuzz into DIR/fuzz (default: build-fuzz/): the libFuzzer targets of fuzz/
#      (clang++-16), each run for FASIM_FUZZ_RUNS inputs. Skipped, and said so, without clang++-16
#      (scripts/install-deps.sh installs it on Debian 12).
# Both builds are incremental: a second run rebuilds only what changed. Measured from scratch on 2 cores
# (2026-11-25): asan build 336 s, its suite 458 s, fuzz build and runs 102 s; with the ordinary suite
# beside it, `ctest -j2` took 14 min 56 s instead of 1 min 21 s.
set -euo pipefail
cd "$(dirname "$0")/.."
asan_dir="${1:+$1/asan}"; asan_dir="${asan_dir:-build-asan}"
fuzz_dir="${1:+$1/fuzz}"; fuzz_dir="${fuzz_dir:-build-fuzz}"
jobs="$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
start=$(date +%s)
echo "sanitizers: building preset asan into $asan_dir"
cmake --preset asan -B "$asan_dir" >/dev/null
cmake --build "$asan_dir" -j "$jobs" >"$asan_dir/build.log" 2>&1 || { tail -50 "$asan_dir/build.log"; exit 1; }
echo "sanitizers: built in $(( $(date +%s) - start )) s; running its tests"
t=$(date +%s)
ctest --test-dir "$asan_dir" -E '^notebooks_' -j "$jobs" --output-on-failure
echo "sanitizers: ASan + UBSan suite ran in $(( $(date +%s) - t )) s"
if command -v clang++-16 >/dev/null 2>&1; then
  t=$(date +%s)
  echo "sanitizers: building preset fuzz into $fuzz_dir"
  cmake --preset fuzz -B "$fuzz_dir" >/dev/null
  cmake --build "$fuzz_dir" -j "$jobs" >"$fuzz_dir/build.log" 2>&1 || { tail -50 "$fuzz_dir/build.log"; exit 1; }
  ctest --test-dir "$fuzz_dir" -j "$jobs" --output-on-failure
  echo "sanitizers: fuzz targets built and run in $(( $(date +%s) - t )) s"
else
  echo "sanitizers: SKIPPED the fuzz targets: clang++-16 not found (Debian: apt-get install clang-16 libclang-rt-16-dev)"
fi
echo "sanitizers: done in $(( $(date +%s) - start )) s"
