#!/usr/bin/env bash
# Runs compute-sanitizer's memcheck and racecheck (and synccheck: barriers reached by only part of a
# block or warp) over `cuda-check --small` (a few tiny problems per algorithm, every kernel launched)
# and writes one log per tool into LOG_DIR.
#
#   cuda/scripts/sanitize.sh [BUILD_DIR] [LOG_DIR]        (defaults: build, sanitize-logs)
#   SANITIZE_ALGOS=fa2_bwd,fa2_bwd_tc cuda/scripts/sanitize.sh ...   only these kernels
#
# Exit status: 0 when every tool reports no error and cuda-check passes, 77 when there is no CUDA
# device, 1 otherwise. FASIM_CUDA_SYNC=1 makes each launch synchronize, so a fault is blamed on the
# launch that caused it.
set -uo pipefail

build_dir=${1:-build}
log_dir=${2:-sanitize-logs}
exe="$build_dir/cuda/cuda-check"
if [[ ! -x "$exe" ]]; then
  echo "sanitize.sh: $exe not found. Fix: cmake --build $build_dir --target cuda-check" >&2
  exit 2
fi
mkdir -p "$log_dir"
algo_args=()
sanitize_algos=${SANITIZE_ALGOS:-}  # unset: every kernel
for a in ${sanitize_algos//,/ }; do algo_args+=(--algo "$a"); done

"$exe" --small --quiet "${algo_args[@]}" >/dev/null 2>&1
rc=$?
if [[ $rc -eq 77 ]]; then
  echo "SKIPPED: no CUDA device"
  exit 77
fi

sanitizer=$(command -v compute-sanitizer || true)
[[ -z "$sanitizer" && -x /usr/local/cuda/bin/compute-sanitizer ]] && sanitizer=/usr/local/cuda/bin/compute-sanitizer
if [[ -z "$sanitizer" ]]; then
  echo "sanitize.sh: compute-sanitizer not found (it ships with the CUDA toolkit: /usr/local/cuda/bin)" >&2
  exit 2
fi

status=0
for tool in memcheck racecheck synccheck; do
  extra=()  # no --leak-check: the cuBLAS handle is deliberately kept until exit (standard_cublas.cu)
  [[ $tool == racecheck ]] && extra=(--racecheck-report all)
  FASIM_CUDA_SYNC=1 "$sanitizer" --tool "$tool" "${extra[@]}" --error-exitcode 99 \
    --log-file "$log_dir/$tool.log" "$exe" --small --seed 1 "${algo_args[@]}" >"$log_dir/$tool.stdout" 2>&1
  rc=$?
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log_dir/$tool.log" | tail -n 1)
  passed=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$log_dir/$tool.stdout" | tail -n 1)
  echo "$tool: exit $rc  ${summary:-"(no summary line)"}  cuda-check: ${passed:-"?"}  -> $log_dir/$tool.log"
  if [[ $rc -ne 0 ]]; then status=1; fi
done
exit $status
