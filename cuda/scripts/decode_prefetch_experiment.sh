#!/usr/bin/env bash
# An experiment, not a ladder step: does asking L2 to prefetch around FlashDecoding's K/V copies
# (cp.async ... .L2::128B or .L2::256B) let the split kernel stream K/V faster, where PyTorch's cuDNN
# backend streamed up to 4.59 TB/s and flash_decoding 4.1-4.25 on an H200 (cuda/results/2026-11-28-h200-decode)?
# The variant is picked at launch by FASIM_DECODE_PREFETCH=0|128|256 (a switch that lives only as long as
# the experiment). One device call: build for the card, cuda-check and compute-sanitizer memcheck of the
# prefetching variants, the copy bandwidth, then the decode grid timed with every variant, twice in
# alternating order (0 128 256 256 128 0: drift shows up as a difference between the two rounds), and
# PyTorch's SDPA backends on the same shapes.
#   cuda/scripts/decode_prefetch_experiment.sh OUT_DIR
set -uo pipefail
out=${1:?output dir}
mkdir -p "$out"
build=$PWD/build-gpu
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$out/session.log"; }
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nvcc --version | tail -2
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
  git rev-parse HEAD; git status --short | head
  date -u
} > "$out/device.txt" 2>&1
log build
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DFASIM_CUDA=ON -DFASIM_TESTS=OFF >"$out/build.log" 2>&1 &&
  cmake --build "$build" -j 16 --target cuda-check fa-validate peak-rates >>"$out/build.log" 2>&1 || { log "build failed"; tail -40 "$out/build.log"; exit 1; }
for v in 128 256; do
  log "cuda-check flash_decoding, prefetch $v"
  FASIM_DECODE_PREFETCH=$v "$build/cuda/cuda-check" --quiet --algo flash_decoding > "$out/check_pf$v.txt" 2>&1; echo "exit $?" >> "$out/check_pf$v.txt"
  tail -2 "$out/check_pf$v.txt"
  log "compute-sanitizer, prefetch $v"
  FASIM_DECODE_PREFETCH=$v SANITIZE_ALGOS=flash_decoding bash cuda/scripts/sanitize.sh "$build" "$out/sanitizer_pf$v" > "$out/sanitizer_pf$v.txt" 2>&1
  tail -3 "$out/sanitizer_pf$v.txt"
done
log "copy bandwidth"
"$build/cuda/peak-rates" --copy --json > "$out/copy.json" 2> "$out/copy.txt"; cat "$out/copy.json" | head -5
round=0
for v in 0 128 256 256 128 0; do
  round=$((round + 1))
  log "fa-validate --grid decode, prefetch $v (pass $round)"
  FASIM_DECODE_PREFETCH=$v "$build/cuda/validate/fa-validate" --grid decode --algo flash_decoding --runs 10 --warmup 2 \
      --sample-rows 4 --out "$out/validate_pass${round}_pf$v.json" > "$out/validate_pass${round}_pf$v.txt" 2>&1
  tail -n 2 "$out/validate_pass${round}_pf$v.txt"
done
log "torch sdpa --grid decode"
python3 cuda/scripts/torch_sdpa.py --grid decode --runs 10 --out "$out/torch_decode.json" > "$out/torch_decode.txt" 2>&1
tail -3 "$out/torch_decode.txt"
log done
