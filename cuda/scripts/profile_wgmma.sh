#!/usr/bin/env bash
# What does the Hopper rung (fa2_wgmma) pay for beyond its products? peak-rates' wgmma probe (the products alone,
# in the rung's shapes) beside Nsight Compute on the rung at d = 64 and 128 (N = 8192, fp16, no mask, B = 2,
# H = 16): the tensor pipe's busy share, issue, warp stalls, the SM clock.
#
#   cuda/scripts/profile_wgmma.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=${1:?build dir}
out=${2:?output dir}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$build/cuda/peak-rates" | tee "$out/peak_rates.txt"
"$ncu" --query-metrics 2>/dev/null | grep -iE "gmma|pipe_tensor" > "$out/ncu_tensor_metrics.txt"
exe="$build/cuda/validate/fa-validate"
metrics="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,\
smsp__issue_active.avg.per_cycle_active,sm__ops_path_tensor_src_fp16_dst_fp32.sum"
for d in 128 64; do
  echo "== fa2_wgmma d=$d N=8192 fp16"
  "$ncu" --clock-control none --kernel-name "regex:fa2_wgmma_kernel" --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --metrics "$metrics" "$exe" --algo fa2_wgmma --N 8192 --d $d --dtype fp16 --causal off --batch 2 --heads 16 --runs 1 --warmup 0 \
    > "$out/fa2_wgmma_d$d.txt" 2>&1 || echo "ncu failed (d=$d)"
  # The gmma pipe's own counter, where this ncu has it (a name it does not know fails the whole call).
  "$ncu" --clock-control none --kernel-name "regex:fa2_wgmma_kernel" --launch-count 1 \
    --metrics sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum \
    "$exe" --algo fa2_wgmma --N 8192 --d $d --dtype fp16 --causal off --batch 2 --heads 16 --runs 1 --warmup 0 \
    > "$out/fa2_wgmma_gmma_d$d.txt" 2>&1 || echo "no gmma pipe counter (d=$d)"
  grep -E "duration|per_second|inst_executed|issue_active|ops_path|gmma|Tensor|Issued Warp|No Eligible|Stall|Pipe" "$out/fa2_wgmma_d$d.txt" | head -30
  grep -E "gmma|ERR" "$out/fa2_wgmma_gmma_d$d.txt" | head -5
done
