#!/usr/bin/env bash
# One device call: FlashDecoding's split kernel with its K/V tiles copied per thread (cp.async, 16 bytes a
# copy) and by the copy engine (TMA: cp.async.bulk.tensor, boxes of 64 columns, 128-byte-swizzled), picked at
# launch by FASIM_DECODE_COPIES,
# in one build. Checks the tensor copies against fp64 (cuda-check) and under compute-sanitizer, then times
# decoding (32 query heads over 32, 8 and 1 K/V heads, d = 128, fp16; batch 1 and 8 at 16k-128k keys, batch 64
# at 16k and 64k) per_thread, tensor_tiles, per_thread, tensor_tiles, and PyTorch's backends on the same shapes.
# Everything lands in $OUT/gpu-session.tgz.
# The switch existed for the experiment only (commit 69d66ff; the first call ran the same script with
# FASIM_DECODE_COPIES=bulk_rows, a bulk copy per key row, on 488d50c's tree changed as its device.txt says):
#   git checkout 69d66ff && bash cuda/scripts/decode_copies_session.sh
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" cuda-check fa-validate peak-rates
log "smoke: cuda-check --small, tensor_tiles"
FASIM_DECODE_COPIES=tensor_tiles timeout 40 "$build/cuda/cuda-check" --small --quiet --algo flash_decoding >"$out/smoke.txt" 2>&1
rc=$?
tail -3 "$out/smoke.txt"
if (( rc != 0 )); then
  log "smoke failed (exit $rc): stop"
  exit 1
fi
if [[ ${CHECK:-1} != 0 ]]; then
  log "cuda-check flash_decoding, tensor_tiles"
  FASIM_DECODE_COPIES=tensor_tiles timeout 200 "$build/cuda/cuda-check" --quiet --algo flash_decoding >"$out/check_bulk.txt" 2>&1
  echo "exit $?" >>"$out/check_bulk.txt"
  tail -3 "$out/check_bulk.txt"
fi
"$build/cuda/peak-rates" --copy >"$out/copy.txt" 2>&1
pass() {  # NAME COPIES
  log "decode $1"
  local v="$build/cuda/validate/fa-validate"
  FASIM_DECODE_COPIES=$2 timeout 150 "$v" --grid decode --algo flash_decoding --batches 1,8 --kv-heads 32,8,1 \
    --Nk 16384,65536,131072 --runs 10 --sample-rows 2 --out "$out/decode_$1_b1-8.json" >"$out/decode_$1.txt" 2>&1
  echo "fa-validate exit $?" >>"$out/decode_$1.txt"
  FASIM_DECODE_COPIES=$2 timeout 150 "$v" --grid decode --algo flash_decoding --batches 64 --kv-heads 32,8,1 \
    --Nk 16384,65536 --runs 10 --sample-rows 2 --out "$out/decode_$1_b64.json" >>"$out/decode_$1.txt" 2>&1
  echo "fa-validate exit $?" >>"$out/decode_$1.txt"
}
pass per_thread_1 per_thread
pass tensor_tiles_1 tensor_tiles
pass per_thread_2 per_thread
pass tensor_tiles_2 tensor_tiles
log "PyTorch"
timeout 120 python3 cuda/scripts/torch_sdpa.py --grid decode --batches 1,8 --Nk 16384,65536,131072 --runs 10 \
  --out "$out/torch_decode_b1-8.json" >"$out/torch_decode.txt" 2>&1
timeout 120 python3 cuda/scripts/torch_sdpa.py --grid decode --batches 64 --Nk 16384,65536 --runs 10 \
  --out "$out/torch_decode_b64.json" >>"$out/torch_decode.txt" 2>&1
"$build/cuda/peak-rates" --copy >>"$out/copy.txt" 2>&1
if [[ ${CHECK:-1} != 0 ]]; then
  log "compute-sanitizer flash_decoding, tensor_tiles"
  FASIM_DECODE_COPIES=tensor_tiles SANITIZE_ALGOS=flash_decoding timeout 100 bash cuda/scripts/sanitize.sh "$build" \
    "$out/sanitizer" >"$out/sanitizer.txt" 2>&1
  echo "exit $?" >>"$out/sanitizer.txt"
  tail -4 "$out/sanitizer.txt"
fi
log "done"
cat "$out/copy.txt"
