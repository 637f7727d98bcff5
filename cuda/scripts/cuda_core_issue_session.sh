#!/usr/bin/env bash
# One device call: how often the schedulers issue in fa-sim's CUDA-core flash kernels (fa1, fa2) at training length,
# read by Nsight Compute beside the warps each scheduler holds. The model takes 1 - 0.63^W for W warps per scheduler
# (a lone warp's 37%, read from fa2 in fp32 at d = 64); the fp16 CUDA-core fa2 at d = 64 and fa2_bwd at d = 128,
# one warp per scheduler, are predicted 25-30% slow on both cards.
#   bash cuda/scripts/cuda_core_issue_session.sh     (from the repository root, on the GPU machine)
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" fa-validate
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics="smsp__issue_active.avg.per_cycle_active,smsp__inst_executed.sum,smsp__warps_active.avg.per_cycle_active,\
smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_lsu.sum,smsp__inst_executed_pipe_alu.sum,\
sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers,\
launch__occupancy_limit_shared_mem,sm__maximum_warps_per_active_cycle_pct"
# The FA2 paper's setting at N = 4096 (batch 4, hidden 2048), non-causal; fp32 at d = 64 is where the model's 37% was read.
for run in "fa2 64 fp16" "fa2 128 fp16" "fa1 64 fp16" "fa1 128 fp16" "fa2 64 fp32"; do
  read -r algo d dtype <<<"$run"
  name="ncu_${algo}_d${d}_${dtype}"
  log "$name"
  step 120 "$name" "${into[@]}" "$out/$name.txt" "$ncu" --clock-control none --kernel-name "regex:${algo}_forward_kernel" \
    --launch-count 1 --section SchedulerStats --section WarpStateStats --section LaunchStats --section Occupancy \
    --metrics "$metrics" "$build/cuda/validate/fa-validate" --algo "$algo" --N 4096 --d "$d" --dtype "$dtype" --causal off \
    --batch 4 --heads $((2048 / d)) --runs 1 --warmup 0
  grep -E "issue_active|warps_active|inst_executed.sum|pipe_fma|Registers Per|Block Limit|Achieved Occupancy|Waves" \
    "$out/$name.txt" | head -14
done
log "done"
