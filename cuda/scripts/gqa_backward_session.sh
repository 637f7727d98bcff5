#!/usr/bin/env bash
# One device call: grouped-query attention (GQA/MQA) in the tensor-core FlashAttention-2 kernels, fa2_tc and
# fa2_bwd_tc (KV K/V heads for H query heads; the backward writes each query head's dK, dV and
# fa2_bwd_sum_groups sums them over the group, as flash-attention 2's mha_bwd does). Builds cuda-check and
# fa-validate for the GPU at hand (sm_90a on Hopper), then:
#   check.txt          cuda-check --algo fa2_tc --algo fa2_bwd_tc (every result as it comes): the whole grid, the grouped cases included
#   sanitizer/         compute-sanitizer memcheck, racecheck, synccheck on cuda-check --small --max-n 70 of
#                      fa2_tc and fa2_bwd_tc (its grouped problems: 2 groups of 2 heads in 2 batches, and MQA over
#                      4 heads; the sum kernel included)
#   validate_bwd.txt/.json   fa-validate --pass bwd, fa2_bwd_tc, B = 2, H = 16, KV in {16, 4, 1}, fp16 and bf16,
#                      causal and not, d = 128 at N in {2048, 4096, 8192} and d = 64 at N = 4096 (median of 5
#                      runs after one warm-up; fa-sim's prediction beside each, or why it has none)
#   torch_bwd.txt/.json      PyTorch's flash backend's backward on the same problems (enable_gqa where KV < H),
#                      the kernels it ran or why it refused; torch_math_bwd.* the math backend at N = 2048, d = 128
# Every step has a time limit (the whole session stays under 9 minutes on an H200); a step cut short says so
# in session.log. Everything lands in $OUT/gpu-session.tgz.
#   bash cuda/scripts/gqa_backward_session.sh
# The first call (2026-11-30) cut cuda-check and fa-validate off at these limits; a second call gave them more
# time and ran only those two: STEPS="check validate" CHECK_LIMIT_S=250 VALIDATE_LIMIT_S=150 KEY_ROWS_MAX_N=2048.
# After the group sum took 16-32 keys a block, a third: STEPS="check sanitize validate torch" CHECK_LIMIT_S=200
# VALIDATE_LIMIT_S=100 KEY_ROWS_MAX_N=2048 N_D128=2048,4096.
set -uo pipefail
STEPS=${STEPS:-"check sanitize validate torch"}
CHECK_LIMIT_S=${CHECK_LIMIT_S:-110}
VALIDATE_LIMIT_S=${VALIDATE_LIMIT_S:-90}
KEY_ROWS_MAX_N=${KEY_ROWS_MAX_N:-4096}
N_D128=${N_D128:-2048,4096,8192}  # fa-validate's and PyTorch's lengths at d = 128
wants() { [[ " $STEPS " == *" $1 "* ]]; }
source "$(dirname "$0")/session_preamble.sh" cuda-check fa-validate

wants check && check_kernels "$CHECK_LIMIT_S" fa2_tc fa2_bwd_tc  # grouped K/V heads included

# compute-sanitizer as cuda/scripts/sanitize.sh runs it, on the --small problems up to N = 70: among them the two
# grouped ones (fa2_bwd_tc's sum kernel included) and a few ungrouped.
wants sanitize && sanitize_small fa2_tc fa2_bwd_tc

# B = 2, H = 16 over KV = 16 (no grouping), 4 and 1; dK, dV of sampled key rows checked in float64 up to N = 4096.
bwd=(--pass bwd --algo fa2_bwd_tc --batch 2 --heads 16 --kv-heads 16,4,1 --dtype fp16,bf16 --runs 5 --warmup 1
  --sample-rows 4 --key-rows-max-n "$KEY_ROWS_MAX_N")
if wants validate; then
log "fa-validate --pass bwd fa2_bwd_tc, d = 128, N $N_D128"
step "$VALIDATE_LIMIT_S" fa-validate-d128 "$build/cuda/validate/fa-validate" "${bwd[@]}" --d 128 --N "$N_D128" \
  --out "$out/validate_bwd_d128.json" >"$out/validate_bwd.txt" 2>&1
tail -2 "$out/validate_bwd.txt"
log "fa-validate --pass bwd fa2_bwd_tc, d = 64, N 4096"
step $((VALIDATE_LIMIT_S * 2 / 5)) fa-validate-d64 "$build/cuda/validate/fa-validate" "${bwd[@]}" --d 64 --N 4096 \
  --out "$out/validate_bwd_d64.json" >>"$out/validate_bwd.txt" 2>&1
tail -2 "$out/validate_bwd.txt"
fi

torch=(--pass bwd --batch 2 --heads 16 --kv-heads 16,4,1 --dtype fp16,bf16 --runs 5 --warmup 1)
if wants torch; then
log "torch sdpa --pass bwd, flash backend"
step 50 torch-flash-d128 python3 cuda/scripts/torch_sdpa.py "${torch[@]}" --backends flash --d 128 --N "$N_D128" \
  --out "$out/torch_bwd_d128.json" >"$out/torch_bwd.txt" 2>&1
step 20 torch-flash-d64 python3 cuda/scripts/torch_sdpa.py "${torch[@]}" --backends flash --d 64 --N 4096 \
  --out "$out/torch_bwd_d64.json" >>"$out/torch_bwd.txt" 2>&1
tail -4 "$out/torch_bwd.txt"
log "torch sdpa --pass bwd, math backend (N = 2048, d = 128, fp16)"
step 25 torch-math python3 cuda/scripts/torch_sdpa.py --pass bwd --batch 2 --heads 16 --kv-heads 16,4,1 --dtype fp16 \
  --runs 3 --warmup 1 --backends math,flash --d 128 --N 2048 --out "$out/torch_math_bwd.json" >"$out/torch_math_bwd.txt" 2>&1
tail -2 "$out/torch_math_bwd.txt"
fi
log "done"
