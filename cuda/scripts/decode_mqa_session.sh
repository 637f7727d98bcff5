#!/usr/bin/env bash
# One device call: where does batch-1 FlashDecoding with one K/V head (MQA) spend its time? Event timings
# of flash_decoding at batch 1 (32 query heads over 1, 8 and 32 K/V heads, d = 128, fp16, 16k-128k keys)
# at the heuristic's split count and at 16, 32 and 64 splits (the time against the tiles per split
# separates a fixed cost from a per-tile one), the copy rate, and Nsight Compute on the split and combine
# kernels of six of those shapes: each kernel's own duration, its DRAM throughput and its warps' stall
# reasons. Builds fa-validate and peak-rates. Everything lands in $OUT/gpu-session.tgz.
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" fa-validate peak-rates
log "copy rate"
"$build/cuda/peak-rates" --copy >"$out/copy.txt" 2>&1
log "event timings"
"$build/cuda/validate/fa-validate" --grid decode --algo flash_decoding --batches 1 --kv-heads 1,8,32 \
  --Nk 16384,65536,131072 --kv-splits 0,16,32,64 --runs 20 --out "$out/decode_mqa.json" >"$out/decode_mqa.txt" 2>&1
echo "fa-validate exit $?" >>"$out/decode_mqa.txt"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
profile() {  # NAME fa-validate arguments...
  local name=$1
  shift
  log "ncu $name: $*"
  timeout 120 "$ncu" --clock-control none --kernel-name "regex:flash_decoding" --launch-count 2 \
    --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg \
    "$build/cuda/validate/fa-validate" --grid decode --algo flash_decoding --heads 32 --d 128 --dtype fp16 --batches 1 \
    --runs 1 --warmup 0 --sample-rows 1 "$@" >"$out/ncu_$name.txt" 2>&1 || log "ncu exit $? for $name"
  grep -E "^  [a-z_]+.*\(|Duration|gpu__time_duration|DRAM Throughput|dram__bytes_read" "$out/ncu_$name.txt" | head -12
}
profile mqa_16k --kv-heads 1 --Nk 16384 --kv-splits 0
profile mqa_64k --kv-heads 1 --Nk 65536 --kv-splits 0
profile mqa_128k --kv-heads 1 --Nk 131072 --kv-splits 0
profile mqa_128k_s32 --kv-heads 1 --Nk 131072 --kv-splits 32
profile kv8_128k --kv-heads 8 --Nk 131072 --kv-splits 0
profile kv32_128k --kv-heads 32 --Nk 131072 --kv-splits 0
"$build/cuda/peak-rates" --copy >>"$out/copy.txt" 2>&1
log "done"
cat "$out/copy.txt"
cat "$out/decode_mqa.txt"
