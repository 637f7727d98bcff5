#!/usr/bin/env bash
# One device call: what reading a decode step's K and V once costs at least on the GPU at hand.
# `peak-rates --read-once` times one read of 8 MiB to 1 GiB from DRAM (every SM reading, L2 flushed before each
# run, CUDA events around the launch, median of 20: as fa-validate times a kernel), beside the copy rate. The sizes
# are batch-1 K/V caches at d = 128 in fp16: one K/V head at 16k, 32k, 64k and 128k keys (8-64 MiB), 32 at 16k
# (256 MiB). Everything lands in $OUT/gpu-session.tgz.
#   bash cuda/scripts/read_once_session.sh
set -uo pipefail
source "$(dirname "$0")/session_preamble.sh" peak-rates
log "read once"
"$build/cuda/peak-rates" --read-once 8,16,32,64,256,1024 >"$out/read_once.txt" 2>&1
"$build/cuda/peak-rates" --read-once 8,16,32,64,256,1024 --json >"$out/read_once.json" 2>&1
log "done"
cat "$out/read_once.txt"
