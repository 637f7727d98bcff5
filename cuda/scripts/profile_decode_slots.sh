#!/usr/bin/env bash
# Where do the computing warps of decode blocks run? A FlashDecoding block with one query row computes on
# its first warp only (docs/model.md, "Split-Q blocks with few rows"); when two or three such blocks share
# an SM, do their first warps share a scheduler? Two views of it:
#   peak-rates --warp-slots: the warp slot (%warpid, mod 4 = scheduler) of each block's first warp, with
#     1-4 blocks of 4 warps per SM, and the time of FFMA chains run by those first warps alone;
#   Nsight Compute on flash_decoding_split (two blocks per SM at 227 registers): instructions of the
#     busiest scheduler against the mean (smsp__inst_executed.max over .avg).
#
#   cuda/scripts/profile_decode_slots.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=${1:?build dir}
out=${2:?output dir}
mkdir -p "$out"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$build/cuda/peak-rates" --warp-slots | tee "$out/warp_slots.txt"
"$build/cuda/peak-rates" --warp-slots --json > "$out/warp_slots.json"
exe="$build/cuda/validate/fa-validate"
metrics="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,smsp__inst_executed.max,\
smsp__inst_executed.avg,smsp__cycles_active.max,smsp__issue_active.max.per_cycle_active,smsp__issue_active.avg.per_cycle_active,\
smsp__warps_active.avg.per_cycle_active,launch__occupancy_limit_registers,launch__registers_per_thread,launch__grid_size"
run() {  # NAME fa-validate arguments...
  local name=$1
  shift
  echo "== $name: fa-validate $*"
  "$ncu" --clock-control none --kernel-name "regex:flash_decoding_split" --launch-count 1 --metrics "$metrics" \
    "$exe" "$@" --runs 1 --warmup 0 > "$out/$name.txt" 2>&1 || echo "ncu failed for $name"
  grep -E "inst_executed|issue_active|cycles_active|warps_active|per_second|duration|occupancy_limit|registers|grid_size" "$out/$name.txt" | head -20
}
decode=(--grid decode --heads 32 --d 128 --dtype fp16 --algo flash_decoding)
run b64_kv32_16k "${decode[@]}" --batches 64 --Nk 16384 --kv-heads 32
run b1_kv32_128k "${decode[@]}" --batches 1 --Nk 131072 --kv-heads 32
run b8_kv8_64k "${decode[@]}" --batches 8 --Nk 65536 --kv-heads 8
