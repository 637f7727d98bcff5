# The opening of every one-call device session script: sourced, not run.
#   source "$(dirname "$0")/session_preamble.sh" TARGET...
# Only a few files come back from the device machine, so the session works in ./gpu-session and packs it
# into $OUT/gpu-session.tgz when the script exits, whatever happens. Writes device.txt (GPU, driver, nvcc,
# torch, time, the checkout's commit and local changes), builds the named CMake targets for the GPU at
# hand in ./build-gpu (sm_90a on Hopper: fa2_wgmma's instructions exist there only) and leaves:
#   $out    the session folder      $build  the build folder      $arch  the CUDA architecture built
#   log MESSAGE...                  prints "== HH:MM:SS MESSAGE" and appends it to $out/session.log
#   step SECONDS NAME COMMAND...     runs the command with a time limit and logs its exit status (or that it was cut off)
#   "${into[@]}" FILE COMMAND...     the command with its output into FILE (for step: its log line stays out of FILE)
#   check_kernels SECONDS ALGO...    cuda-check of those kernels, the whole grid, into $out/check.txt
#   sanitize_small ALGO...           compute-sanitizer memcheck, racecheck, synccheck (30 s each) on cuda-check
#                                    --small --max-n 70 of those kernels; logs in $out/sanitizer/
#   build_commit COMMIT TARGET...    builds the targets of another commit (a git worktree in /tmp/old_tree, build
#                                    folder /tmp/old_tree/build-gpu, log $out/build_old.log; BUILD_JOBS, default 16),
#                                    for sessions that time a kernel before and after a change; exits if it fails
final=${OUT:-$PWD/gpu-out}
out=$PWD/gpu-session
build=$PWD/build-gpu
rm -rf "$out"
mkdir -p "$out" "$final"
trap 'tar czf "$final/gpu-session.tgz" -C "$PWD" gpu-session' EXIT
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$out/session.log"; }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nvcc --version | tail -2
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
  date -u
  git rev-parse HEAD 2>/dev/null
  git status --short 2>/dev/null
} >"$out/device.txt" 2>&1
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
[[ $arch == 90 ]] && arch=90a
sms=$(nvidia-smi --query-gpu=multiprocessor_count --format=csv,noheader 2>/dev/null | head -1)
[[ "$sms" =~ ^[0-9]+$ ]] || sms=$(python3 -c 'import torch; print(torch.cuda.get_device_properties(0).multi_processor_count)' 2>/dev/null)
[[ "$sms" =~ ^[0-9]+$ ]] || sms=132
log "build sm_$arch: $*"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" -DFASIM_CUDA=ON -DFASIM_TESTS=OFF \
  >"$out/build.log" 2>&1 &&
  cmake --build "$build" -j 16 --target "$@" >>"$out/build.log" 2>&1 || {
  log "build failed"
  tail -40 "$out/build.log"
  exit 1
}
build_commit() {
  local commit=$1
  shift
  rm -rf /tmp/old_tree
  git worktree add -f /tmp/old_tree "$commit" >"$out/build_old.log" 2>&1 &&
    cmake -S /tmp/old_tree -B /tmp/old_tree/build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
      -DFASIM_CUDA=ON -DFASIM_TESTS=OFF >>"$out/build_old.log" 2>&1 &&
    cmake --build /tmp/old_tree/build-gpu -j "${BUILD_JOBS:-16}" --target "$@" >>"$out/build_old.log" 2>&1 || {
    log "build of $commit failed"
    tail -30 "$out/build_old.log"
    exit 1
  }
}
into=(bash -c 'f=$1; shift; "$@" > "$f" 2>&1' into)
step() {
  local limit=$1 name=$2
  shift 2
  timeout "$limit" "$@"
  local rc=$?
  [[ $rc -eq 124 ]] && log "$name: cut off after ${limit}s" || log "$name: exit $rc"
}
check_kernels() {
  local limit=$1 algo_args=() a
  shift
  for a in "$@"; do algo_args+=(--algo "$a"); done
  log "cuda-check $* (whole grid)"
  step "$limit" cuda-check "$build/cuda/cuda-check" "${algo_args[@]}" >"$out/check.txt" 2>&1
  tail -3 "$out/check.txt"
}
sanitize_small() {
  local sanitizer algo_args=() tool extra a
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for a in "$@"; do algo_args+=(--algo "$a"); done
  log "compute-sanitizer on cuda-check --small --max-n 70: $*"
  mkdir -p "$out/sanitizer"
  for tool in memcheck racecheck synccheck; do
    extra=()
    [[ $tool == racecheck ]] && extra=(--racecheck-report all)
    FASIM_CUDA_SYNC=1 step 30 "$tool" "$sanitizer" --tool "$tool" "${extra[@]}" --error-exitcode 99 \
      --log-file "$out/sanitizer/$tool.log" "$build/cuda/cuda-check" --small --max-n 70 --seed 1 "${algo_args[@]}" \
      >"$out/sanitizer/$tool.stdout" 2>&1
    grep -hE "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer/$tool.log" | tail -1
    grep -hE "^[0-9]+ passed" "$out/sanitizer/$tool.stdout" | tail -1
  done
}
