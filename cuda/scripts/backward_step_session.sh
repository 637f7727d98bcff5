#!/usr/bin/env bash
# One device call: the FA2 backward step's issue rate (peak-rates --backward-step, bench/backward_step.hpp), timed
# by clock64 and read by Nsight Compute, beside fa2_bwd_tc's own counters at training length; and fa2_bwd_tc as
# its step now comes from kernels/fa2_backward_step.cuh, checked against fp64 (cuda-check) and timed beside the
# build of commit OLD (the kernel before its step moved into that header), old, new, old, new.
#   OLD=1d8de9e bash cuda/scripts/backward_step_session.sh     (from the repository root, on the GPU machine)
set -uo pipefail
old=${OLD:?the commit to compare with}
source "$(dirname "$0")/session_preamble.sh" peak-rates cuda-check fa-validate
source "$(dirname "$0")/backward_ab_pass.sh"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
metrics="smsp__issue_active.avg.per_cycle_active,smsp__inst_executed.sum,smsp__cycles_active.max,\
smsp__warps_active.avg.per_cycle_active,sm__cycles_elapsed.avg.per_second,\
sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,\
sm__cycles_elapsed.max,gpu__time_duration.sum"
check_while_old_builds "$old"
log "peak-rates --backward-step (text, then JSON)"
step 120 backward_step "${into[@]}" "$out/backward_step.txt" "$build/cuda/peak-rates" --backward-step
step 120 backward_step_json "${into[@]}" "$out/backward_step.json" "$build/cuda/peak-rates" --backward-step --json
cat "$out/backward_step.txt"
log "ncu on the step's launches (the warm-up and the timed launch of each configuration)"
step 240 backward_step_ncu "${into[@]}" "$out/backward_step_ncu.csv" "$ncu" --clock-control none \
  --kernel-name regex:backward_step_kernel --section SchedulerStats --section WarpStateStats --metrics "$metrics" \
  --csv --page raw "$build/cuda/peak-rates" --backward-step
log "ncu on fa2_bwd_tc at training length, d = 64 and 128 (N = 4096, batch 2, 8 heads, fp16)"
for d in 64 128; do
  step 120 "fa2_bwd_tc_d$d" "${into[@]}" "$out/fa2_bwd_tc_d$d.txt" "$ncu" --clock-control none --kernel-name regex:fa2_bwd_tc_kernel \
    --launch-count 1 --section SchedulerStats --section WarpStateStats --metrics "$metrics" \
    "$build/cuda/validate/fa-validate" --pass bwd --algo fa2_bwd_tc --N 4096 --d "$d" --dtype fp16 --causal off --batch 2 \
    --heads 8 --runs 1 --warmup 0
  grep -E "issue_active|inst_executed|cycles_active|warps_active|Issued Warp|No Eligible|Active Warps|Stall" "$out/fa2_bwd_tc_d$d.txt" | head -24
done
ab_pass old /tmp/old_tree/build-gpu
ab_pass new "$build"
ab_pass old2 /tmp/old_tree/build-gpu
ab_pass new2 "$build"
log "done"
