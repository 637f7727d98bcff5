#!/usr/bin/env bash
# One device call: the tensor-core kernels before and after a change to their tile copies
# (load_tile_async, kernels/mma_fragments.cuh), timed in the same call. Builds cuda-check, fa-validate and
# peak-rates from this tree and fa-validate from commit OLD (a git worktree, built while cuda-check runs),
# checks every kernel that copies tiles with load_tile_async against fp64 (cuda-check) and under
# compute-sanitizer, then times old, new, then decoding again, old, new:
#   STEPS=decode  FlashDecoding at batch 1 and 8 (32 query heads over 32, 8 and 1 K/V heads, d = 128, fp16,
#                 16k-128k keys), the copy rate beside it;
#   STEPS=ladder  fa2_tc, fa2_tc_tuned and fa1_tc in the FA2 paper's setting (fp16, batch x N = 16k tokens,
#                 hidden 2048; N = 2048 and 8192, d = 64 and 128, causal and not), PyTorch's flash backend on
#                 the same problems once;
#   STEPS=bwd     fa2_bwd_tc in the same setting (--pass bwd).
# CHECK=0 leaves out cuda-check and compute-sanitizer (they ran in an earlier call on the same tree); the
# sanitizer runs last, after the timings.
# Everything lands in $OUT/gpu-session.tgz.
# CHECK_ALGOS narrows cuda-check and compute-sanitizer (default: all five kernels).
#   OLD=82281d7 STEPS="decode" bash cuda/scripts/tile_copy_ab_session.sh
set -uo pipefail
old=${OLD:?the commit to compare with}
steps=${STEPS:-decode ladder bwd}
check_algos=${CHECK_ALGOS:-fa1_tc,fa2_tc,fa2_tc_tuned,fa2_bwd_tc,flash_decoding}
source "$(dirname "$0")/session_preamble.sh" cuda-check fa-validate peak-rates
if [[ ${CHECK:-1} != 0 ]]; then
  log "cuda-check $check_algos (while $old builds)"
  (timeout 240 "$build/cuda/cuda-check" --quiet $(echo "$check_algos" | sed 's/^/--algo /; s/,/ --algo /g') \
    >"$out/check.txt" 2>&1
  echo "exit $?" >>"$out/check.txt") &
  check_pid=$!
fi
BUILD_JOBS=12 build_commit "$old" fa-validate  # 12 jobs: cuda-check runs beside it
log "built $old"
if [[ ${CHECK:-1} != 0 ]]; then
  wait "$check_pid"
  log "cuda-check done"
  tail -3 "$out/check.txt"
fi
has() { [[ " $steps " == *" $1 "* ]]; }
pass() {  # NAME BUILD_DIR [STEPS of this pass, default all]
  local name=$1 dir=$2 steps=${3:-$steps}
  if has decode; then
    log "decode $name"
    "$dir/cuda/validate/fa-validate" --grid decode --algo flash_decoding --batches 1,8 --kv-heads 32,8,1 \
      --Nk 16384,65536,131072 --runs 20 --sample-rows 2 --out "$out/decode_$name.json" >"$out/decode_$name.txt" 2>&1
    echo "fa-validate exit $?" >>"$out/decode_$name.txt"
  fi
  for d in 64 128; do
    for N in 2048 8192; do
      common=(--dtype fp16 --d "$d" --N "$N" --batch $((16384 / N)) --heads $((2048 / d)) --runs 5 --warmup 1
        --sample-rows 4 --causal both)
      if has ladder; then
        log "ladder $name d=$d N=$N"
        timeout 100 "$dir/cuda/validate/fa-validate" --algo fa2_tc,fa2_tc_tuned,fa1_tc "${common[@]}" \
          --out "$out/ladder_${name}_d${d}_N${N}.json" >>"$out/ladder_$name.txt" 2>&1
      fi
      if has bwd; then
        log "bwd $name d=$d N=$N"
        timeout 100 "$dir/cuda/validate/fa-validate" --pass bwd --algo fa2_bwd_tc "${common[@]}" \
          --out "$out/bwd_${name}_d${d}_N${N}.json" >>"$out/bwd_$name.txt" 2>&1
      fi
    done
  done
}
has decode && "$build/cuda/peak-rates" --copy >"$out/copy.txt" 2>&1
pass old_1 /tmp/old_tree/build-gpu
pass new_1 "$build"
# The second round times decoding only: the compute-bound kernels move by 1% or less between rounds.
pass old_2 /tmp/old_tree/build-gpu decode
pass new_2 "$build" decode
if has ladder; then
  log "PyTorch flash"
  for d in 64 128; do
    for N in 2048 8192; do
      timeout 100 python3 cuda/scripts/torch_sdpa.py --backends flash --dtype fp16 --d "$d" --N "$N" \
        --batch $((16384 / N)) --heads $((2048 / d)) --runs 10 --warmup 3 \
        --out "$out/torch_d${d}_N${N}.json" >>"$out/torch.txt" 2>&1
    done
  done
fi
has decode && "$build/cuda/peak-rates" --copy >>"$out/copy.txt" 2>&1
if [[ ${CHECK:-1} != 0 ]]; then
  log "compute-sanitizer $check_algos"
  SANITIZE_ALGOS=$check_algos timeout ${SANITIZE_S:-100} bash cuda/scripts/sanitize.sh "$build" "$out/sanitizer" >"$out/sanitizer.txt" 2>&1
  echo "exit $?" >>"$out/sanitizer.txt"
  tail -4 "$out/sanitizer.txt"
fi
log "done"
cat "$out/copy.txt" 2>/dev/null
