#!/usr/bin/env bash
# One device call: the backward kernels on shapes no committed run timed (N = 3072 and 6144, batch 3, 12 heads:
# 36 heads a grid, ragged waves; d = 64 and 128, fp16, causal and not), fa-sim's own and PyTorch's flash backward in
# the same call, to check the predictions committed before it (predicted_before.json, H200 preset); and Nsight
# Compute's issue counters of the CUDA-core fa2_bwd at d = 64 and 128, whose predictions miss on both cards.
#   bash cuda/scripts/backward_unseen_session.sh     (from the repository root, on the GPU machine)
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" fa-validate
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
shape=(--N 3072,6144 --d 64,128 --dtype fp16 --batch 3 --heads 12)
log "fa-validate --pass bwd: fa2_bwd_tc, fa2_bwd, standard_cublas_bwd"
step 240 validate "${into[@]}" "$out/validate_bwd.txt" "$build/cuda/validate/fa-validate" --pass bwd \
  --algo fa2_bwd_tc,fa2_bwd,standard_cublas_bwd "${shape[@]}" --causal both --runs 5 --warmup 1 --sample-rows 4 \
  --out "$out/validate_bwd_half.json"
tail -3 "$out/validate_bwd.txt"
log "torch sdpa --pass bwd (flash)"
step 120 torch "${into[@]}" "$out/torch_bwd.txt" python3 cuda/scripts/torch_sdpa.py --pass bwd --backends flash "${shape[@]}" \
  --runs 10 --out "$out/torch_bwd.json"
tail -3 "$out/torch_bwd.txt"
metrics="smsp__issue_active.avg.per_cycle_active,smsp__inst_executed.sum,smsp__warps_active.avg.per_cycle_active,\
sm__cycles_elapsed.avg.per_second,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_lsu.sum,gpu__time_duration.sum"
for d in 64 128; do
  log "ncu fa2_bwd d=$d (N = 4096, batch 2, 8 heads, fp16)"
  step 120 "ncu_fa2_bwd_d$d" "${into[@]}" "$out/ncu_fa2_bwd_d$d.txt" "$ncu" --clock-control none --kernel-name regex:fa2_backward_kernel \
    --launch-count 1 --section SchedulerStats --section WarpStateStats --metrics "$metrics" \
    "$build/cuda/validate/fa-validate" --pass bwd --algo fa2_bwd --N 4096 --d "$d" --dtype fp16 --causal off --batch 2 \
    --heads 8 --runs 1 --warmup 0
  grep -E "issue_active|inst_executed|warps_active|pipe_fma|pipe_lsu|Issued Warp|No Eligible|Stall" \
    "$out/ncu_fa2_bwd_d$d.txt" | head -30
done
log "done"
