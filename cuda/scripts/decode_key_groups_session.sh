#!/usr/bin/env bash
# One device call: FlashDecoding with its warps in key groups and the combine's early loads (90b06f9).
# cuda-check of flash_decoding (fp64 reference) and compute-sanitizer (memcheck, racecheck, synccheck);
# the copy rate; fa-validate --grid decode at batch 1 and 8 (32 query heads over 32, 8 and 1 K/V heads,
# d = 128, fp16, 16k-128k keys) with fa-sim's predictions beside each (committed before the call in
# predicted_before.json); Nsight Compute's durations of the split and combine kernels for batch-1 MQA at
# 16k and 128k keys. Builds cuda-check, fa-validate and peak-rates. Everything lands in $OUT/gpu-session.tgz.
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" cuda-check fa-validate peak-rates
log "cuda-check flash_decoding"
"$build/cuda/cuda-check" --quiet --algo flash_decoding >"$out/check.txt" 2>&1
echo "exit $?" >>"$out/check.txt"
tail -3 "$out/check.txt"
log "compute-sanitizer flash_decoding"
SANITIZE_ALGOS=flash_decoding bash cuda/scripts/sanitize.sh "$build" "$out/sanitizer" >"$out/sanitizer.txt" 2>&1
echo "exit $?" >>"$out/sanitizer.txt"
tail -4 "$out/sanitizer.txt"
log "copy rate"
"$build/cuda/peak-rates" --copy >"$out/copy.txt" 2>&1
log "fa-validate --grid decode"
"$build/cuda/validate/fa-validate" --grid decode --algo flash_decoding --batches 1,8 --kv-heads 32,8,1 \
  --Nk 16384,65536,131072 --runs 20 --sample-rows 4 --out "$out/decode.json" >"$out/decode.txt" 2>&1
echo "fa-validate exit $?" >>"$out/decode.txt"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for nk in 16384 131072; do
  log "ncu MQA $nk"
  timeout 120 "$ncu" --clock-control none --kernel-name "regex:flash_decoding" --launch-count 2 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__issue_active.avg.per_cycle_active,sm__cycles_active.avg \
    "$build/cuda/validate/fa-validate" --grid decode --algo flash_decoding --heads 32 --d 128 --dtype fp16 --batches 1 \
    --kv-heads 1 --Nk $nk --runs 1 --warmup 0 --sample-rows 1 >"$out/ncu_mqa_$nk.txt" 2>&1 || log "ncu exit $?"
  grep -E "flash_decoding_|gpu__time_duration" "$out/ncu_mqa_$nk.txt" | head -6
done
"$build/cuda/peak-rates" --copy >>"$out/copy.txt" 2>&1
log "done"
cat "$out/copy.txt"
cat "$out/decode.txt"
