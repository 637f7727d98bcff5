#!/usr/bin/env bash
# How often does a warp issue when it computes alone? Nsight Compute on decode-shaped launches whose
# blocks have one or two computing warps (one query row per block: fa2_tc; the query heads of one K/V
# head packed as rows: flash_decoding), beside a full-tile fa2_tc launch, for the runtime model's
# readiness of mma.sync warps (docs/model.md, "Split-Q blocks with few rows"). Issue activity per
# scheduler, instructions, the SM clock, and the warp stall reasons.
#
#   cuda/scripts/profile_lone_warps.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=${1:?build dir}
out=${2:?output dir}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
exe="$build/cuda/validate/fa-validate"
metrics="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,smsp__inst_executed.max,\
smsp__cycles_active.max,smsp__issue_active.max.per_cycle_active,smsp__issue_active.avg.per_cycle_active,\
smsp__warps_active.max.per_cycle_active,sm__pipe_tensor_cycles_active.max.pct_of_peak_sustained_active"
run() {  # NAME KERNEL_REGEX fa-validate arguments...
  local name=$1 regex=$2
  shift 2
  echo "== $name: fa-validate $*"
  "$ncu" --clock-control none --kernel-name "regex:$regex" --launch-count 1 \
    --section SchedulerStats --section WarpStateStats --metrics "$metrics" "$exe" "$@" --runs 1 --warmup 0 \
    > "$out/$name.txt" 2>&1 || echo "ncu failed for $name"
  grep -E "issue_active|inst_executed|cycles_active|warps_active|per_second|duration|Stall|Issued Warp|No Eligible|Active Warps" "$out/$name.txt" | head -40
}
decode=(--grid decode --heads 32 --d 128 --dtype fp16 --batches 1)
run fa2_tc_one_row fa2_tc_forward "${decode[@]}" --algo fa2_tc --Nk 16384 --kv-heads 32
run flash_decoding_mha_one_row flash_decoding_split "${decode[@]}" --algo flash_decoding --Nk 131072 --kv-heads 32
run flash_decoding_mqa_32_rows flash_decoding_split "${decode[@]}" --algo flash_decoding --Nk 131072 --kv-heads 1
run fa2_tc_full_tiles fa2_tc_forward --algo fa2_tc --N 4096 --d 128 --dtype fp16 --causal off --batch 2 --heads 8
