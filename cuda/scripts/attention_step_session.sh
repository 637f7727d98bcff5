#!/usr/bin/env bash
# One device call: the FA2 step's issue rate at 1 to 4 warps per scheduler (peak-rates --attention-step,
# bench/attention_step.hpp), timed by clock64 and read by Nsight Compute, beside fa2_tc's own counters at
# training length (d = 64 and 128, the current kernel), for the runtime model's mma.sync issue rate.
#
#   bash cuda/scripts/attention_step_session.sh     (from the repository root, on the GPU machine)
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" peak-rates fa-validate
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics="smsp__issue_active.avg.per_cycle_active,smsp__issue_active.max.per_cycle_active,smsp__inst_executed.sum,\
smsp__inst_executed.max,smsp__cycles_active.max,smsp__warps_active.avg.per_cycle_active,sm__cycles_elapsed.avg.per_second,\
sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum"
log "peak-rates --attention-step (text, then JSON)"
step 120 attention_step "${into[@]}" "$out/attention_step.txt" "$build/cuda/peak-rates" --attention-step
step 120 attention_step_json "${into[@]}" "$out/attention_step.json" "$build/cuda/peak-rates" --attention-step --json
cat "$out/attention_step.txt"
log "ncu on the step's launches (the warm-up and the timed launch of each configuration)"
step 300 attention_step_ncu "${into[@]}" "$out/attention_step_ncu.csv" "$ncu" --clock-control none \
  --kernel-name regex:attention_step_kernel --section SchedulerStats --section WarpStateStats --metrics "$metrics" \
  --csv --page raw "$build/cuda/peak-rates" --attention-step
log "ncu on fa2_tc at training length, d = 64 and 128 (3 blocks of 4 warps per SM)"
for d in 64 128; do
  step 120 "fa2_tc_d$d" "${into[@]}" "$out/fa2_tc_d$d.txt" "$ncu" --clock-control none --kernel-name regex:fa2_tc_forward \
    --launch-count 1 --section SchedulerStats --section WarpStateStats --metrics "$metrics" \
    "$build/cuda/validate/fa-validate" --algo fa2_tc --N 4096 --d "$d" --dtype fp16 --causal off --batch 2 --heads 8 \
    --runs 1 --warmup 0
  grep -E "issue_active|inst_executed|cycles_active|warps_active|Issued Warp|No Eligible|Active Warps" "$out/fa2_tc_d$d.txt" | head -20
done
log "done"
