#!/usr/bin/env bash
# An experiment, not a ladder step: do three K/V stages (the Q tile kept in the third until its fragments are in
# registers, so that two blocks still share an SM) let FlashDecoding's split kernel stream K/V faster than two,
# where PyTorch's cuDNN backend read K/V at up to 4.60 TB/s and this kernel at 4.40
# (cuda/results/2026-11-29-h200-decode-prefetch)? FASIM_DECODE_STAGES=2|3 picks the variant at launch (a switch
# that lives only as long as the experiment). Two device calls on one warm machine:
#   cuda/scripts/decode_stages_experiment.sh check OUT_DIR   build for sm_90a, cuda-check of both variants,
#                                                            compute-sanitizer of the new one, the copy bandwidth
#   cuda/scripts/decode_stages_experiment.sh time OUT_DIR    the decode grid with each variant, twice, in the order
#                                                            2 3 3 2, and PyTorch's SDPA backends on the same shapes
set -uo pipefail
phase=${1:?check or time}
out=${2:?output dir}
mkdir -p "$out"
build=$PWD/build-gpu
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$out/session_$phase.log"; }
if [[ $phase == check ]]; then
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
  for v in 3 2; do
    log "cuda-check flash_decoding, $v stages"
    FASIM_DECODE_STAGES=$v timeout 120 "$build/cuda/cuda-check" --quiet --algo flash_decoding > "$out/check_stages$v.txt" 2>&1
    echo "exit $?" >> "$out/check_stages$v.txt"
    tail -2 "$out/check_stages$v.txt"
  done
  log "compute-sanitizer, 3 stages"
  FASIM_DECODE_STAGES=3 SANITIZE_ALGOS=flash_decoding timeout 180 bash cuda/scripts/sanitize.sh "$build" "$out/sanitizer_stages3" \
    > "$out/sanitizer_stages3.txt" 2>&1
  echo "exit $?" >> "$out/sanitizer_stages3.txt"
  tail -4 "$out/sanitizer_stages3.txt"
  log "copy bandwidth"
  timeout 60 "$build/cuda/peak-rates" --copy --json > "$out/copy.json" 2> "$out/copy.txt"; head -5 "$out/copy.json"
  log done
else
  round=0
  for v in 2 3 3 2; do
    round=$((round + 1))
    log "fa-validate --grid decode, $v stages (pass $round)"
    FASIM_DECODE_STAGES=$v timeout 110 "$build/cuda/validate/fa-validate" --grid decode --algo flash_decoding --runs 10 --warmup 2 \
      --sample-rows 4 --out "$out/validate_pass${round}_stages$v.json" > "$out/validate_pass${round}_stages$v.txt" 2>&1
    log "rc $?"
  done
  log "torch sdpa --grid decode"
  timeout 90 python3 cuda/scripts/torch_sdpa.py --grid decode --runs 10 --out "$out/torch_decode.json" > "$out/torch_decode.txt" 2>&1
  log "rc $?"
  log done
fi
