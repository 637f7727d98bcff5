#!/usr/bin/env bash
# One device call: FlashDecoding at batch 1 with one and with 8 K/V heads (32 query heads, d = 128, fp16),
# 16k to 128k keys, at the heuristic's split count and at 1, 2, 3 and 4 blocks per SM (fa-validate
# --kv-splits), each with fa-sim's prediction beside it; the copy rate of the same call for the streaming
# share. Builds fa-validate and peak-rates. Everything lands in $OUT/gpu-session.tgz.
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" fa-validate peak-rates
echo "== $(date -u +%T) copy rate"
$build/cuda/peak-rates --copy >"$out/copy.txt" 2>&1
echo "== $(date -u +%T) decode splits ($sms SMs)"
$build/cuda/validate/fa-validate --grid decode --batches 1 --kv-heads 1,8 --Nk 16384,65536,131072 \
  --kv-splits "0,$sms,$((2 * sms)),$((3 * sms)),$((4 * sms))" --runs 20 --out "$out/decode_splits.json" >"$out/decode_splits.txt" 2>&1
echo "fa-validate exit $?" >>"$out/decode_splits.txt"
$build/cuda/peak-rates --copy >>"$out/copy.txt" 2>&1
echo "== $(date -u +%T) done"
cat "$out/copy.txt"
cat "$out/decode_splits.txt"
