#!/usr/bin/env bash
# One device call: build for the GPU at hand, check every kernel against the float64
# reference, run compute-sanitizer, validate timings against the simulator, read
# hardware counters, and time PyTorch's SDPA. Everything lands in $OUT (or ./gpu-out).
#   usage: cuda/scripts/gpu_session.sh [build|calibrate|predict|check|sanitize|validate|half|naive|paper|ncu|peaks|profile|torch|backward|decode|ladder ...]
#   (default: all but naive and profile)
# Steps: validate = fp32 grid (plus the naive GEMM); half = fp16/bf16 grid with the tensor-core FA2 and
# cuBLAS; naive = standard attention on the naive GEMM in fp16 and bf16; paper = the FlashAttention-2
# paper's benchmark setting (16k tokens per batch, hidden 2048); peaks = peak-rates (arithmetic and L2
# request ceilings), with Nsight Compute's L2 counters on its L2 probe; backward = the backward kernels:
# cuda-check, fa-validate --pass bwd (fp16/bf16, and fp32 with ncu on the CUDA-core kernel) and PyTorch's
# backward (torch_sdpa.py --pass bwd) on the same problems; decode = FlashDecoding on decode shapes (one
# query row, grouped K/V heads): cuda-check and compute-sanitizer of flash_decoding, fa-validate --grid decode
# (flash_decoding and, where KV = H, fa2_tc), PyTorch's SDPA backends on the same shapes and the card's
# device-to-device copy bandwidth, the yardsticks of the K/V streaming bandwidth; calibrate = fa-calibrate:
# the GPU file of this card ($OUT/calibrated-gpu.json, also copied out of the archive), its probes'
# raw results, and fa-sim's prediction with it (docs/calibrate.md). `gpu_session.sh build calibrate` is
# the whole calibration (no network). predict = before any timing step, fa-sim's predictions of the
# paper, backward and decode steps named in the same call (predict_before.py), with the preset of the
# card at hand and, after calibrate, with the card's calibrated file: written before anything is timed,
# from the committed simulator (the hold-out rule, docs/model.md). BWD_CHECK=0 leaves cuda-check out of
# the backward step (a card of an architecture the check already passed on, when time is short).
# ladder = the forward kernel ladder (docs/kernel-ladder.md): cuda-check and compute-sanitizer of the rungs
# LADDER_NEW names (default fa2_tc_tuned,fa2_wgmma), then every rung (fa2, fa2_tc, fa2_tc_tuned, fa2_wgmma)
# timed in the FA2 paper's setting beside PyTorch's flash and cuDNN backends, fp16 (the CUDA-core fa2) and
# fp16/bf16 (the tensor-core rungs); LADDER_N, LADDER_D and LADDER_CAUSAL (on, off, both) narrow it.
set -uo pipefail
# Only a few files come back from the device machine: work in a folder, pack it at the end.
final=${OUT:-$PWD/gpu-out}
out=$PWD/gpu-session
rm -rf "$out"
mkdir -p "$out" "$final"
trap 'tar czf "$final/gpu-session.tgz" -C "$PWD" gpu-session; cp "$out/session.log" "$final/" 2>/dev/null' EXIT
steps=${*:-build check sanitize validate half paper ncu peaks torch backward decode}
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$out/session.log"; }
has() { [[ " $steps " == *" $1 "* ]]; }
build=$PWD/build-gpu

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nvcc --version | tail -2
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1
  date -u
} > "$out/device.txt" 2>&1

if has build; then
  log "build"
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)
  [[ $arch == 90 ]] && arch=90a  # Hopper's own instructions (wgmma, setmaxnreg: fa2_wgmma) exist on sm_90a only
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" -DFASIM_CUDA=ON -DFASIM_TESTS=OFF >"$out/build.log" 2>&1 &&
    cmake --build "$build" -j 16 --target cuda-check fa-validate fa-sim peak-rates fa-calibrate >>"$out/build.log" 2>&1 || { log "build failed"; tail -40 "$out/build.log"; exit 1; }
fi

# The kernel catalog's kernels of this repository (sim/kernels/kernel_catalog.cpp, as fa-sim lists it),
# comma separated, those whose row k satisfies the Python condition $1.
kernels() {
  "$build/sim/fa-sim" --list-kernels --json |
    python3 -c "import json, sys; print(','.join(k['name'] for k in json.load(sys.stdin)['kernels'] if k['in_repository'] and ($1)))"
}
# Every kernel, but the naive GEMM's standard attention (the "first CUDA attempt"): it runs separately, up to
# N=4096; beyond, one run takes seconds.
# Forward kernels only (a backward kernel names the forward kernel it reads): the backward step times those.
# The decoding kernels run on decode shapes (the decode step), not on the N = Nk grids.
not_naive='not k["forward_kernel"] and k["matmul"] != "naive" and k["algorithm"] != "flash_decoding"'
naive='not k["forward_kernel"] and k["matmul"] == "naive"'

if has calibrate; then
  log "fa-calibrate"
  "$build/cuda/fa-calibrate" --out "$out/calibrated-gpu.json" --raw "$out/calibrate_raw.json" > "$out/calibrate.txt" 2>&1
  echo "exit $?" >> "$out/calibrate.txt"
  cat "$out/calibrate.txt"
  cp "$out/calibrated-gpu.json" "$out/calibrate_raw.json" "$final/" 2>/dev/null
  "$build/sim/fa-sim" --gpu-file "$out/calibrated-gpu.json" --algo fa2 --N 4096 > "$out/calibrate_fa2.txt" 2>&1
  tail -4 "$out/calibrate_fa2.txt"
fi

if has predict; then
  # The preset of this card, as fa-validate and fa-calibrate pick it (gpu_catalog's preset_for_device).
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
    *H200*) preset=H200 ;; *H100*) preset=H100-SXM ;; *) preset= ;;
  esac
  # PREDICT="paper backward decode": the steps to predict (default: those of this call), e.g. for a later call.
  for_steps=" ${PREDICT:-$steps} "
  for_step() { [[ "$for_steps" == *" $1 "* ]]; }
  # Each file's predictions run in the background (one fa-sim per configuration): the card waits less.
  pb() { (FASIM_COMMIT=$(cat .fasim-commit 2>/dev/null) python3 cuda/scripts/predict_before.py --fa-sim "$build/sim/fa-sim" "$@" \
            > "$out/predict_$(basename "${@: -1}" .json).txt" 2>&1) & }
  for source in preset calibrated; do
    if [[ $source == preset ]]; then
      [[ -n "$preset" ]] || { log "predict: no preset matches this card"; continue; }
      gpu=(--gpu "$preset")
    else
      [[ -f "$out/calibrated-gpu.json" ]] || continue
      gpu=(--gpu-file "$out/calibrated-gpu.json")
    fi
    log "predict ($source: ${gpu[*]})"
    if for_step paper; then
      pb "${gpu[@]}" --paper --kernels "$(kernels "not k['forward_kernel'] and (k['products'] == 'library_gemm' or k['algorithm'] in ('fa1', 'fa2'))"),torch_flash" \
         --out "$out/predicted_before_paper_$source.json"
    fi
    if for_step backward; then
      pb "${gpu[@]}" --kernels "$(kernels "k['forward_kernel']"),torch_flash_bwd,torch_math_bwd" --N "${BWD_N:-1024,2048,4096,8192,16384}" \
         --out "$out/predicted_before_bwd_$source.json"
      pb "${gpu[@]}" --kernels "$(kernels "k['forward_kernel'] and 'fp32' in k['dtypes']")" --N 2048,4096 --dtype fp32 \
         --out "$out/predicted_before_bwd_fp32_$source.json"
    fi
    if for_step decode; then
      pb "${gpu[@]}" --decode --kernels flash_decoding,fa2_tc,torch_flash_decoding --out "$out/predicted_before_decode_$source.json"
    fi
  done
  wait
  cat "$out"/predict_*.txt
fi

if has check; then
  log "cuda-check"
  "$build/cuda/cuda-check" --quiet > "$out/check.txt" 2>&1; echo "exit $?" >> "$out/check.txt"
  tail -5 "$out/check.txt"
fi

if has sanitize; then
  log "compute-sanitizer"
  # SANITIZE_ALGOS=a,b limits it to those kernels (cuda/scripts/sanitize.sh)
  bash cuda/scripts/sanitize.sh "$build" "$out/sanitizer" > "$out/sanitizer.txt" 2>&1
  tail -8 "$out/sanitizer.txt"
fi

if has validate; then
  log "fa-validate fp32"
  # standard_naive (the "first CUDA attempt") only up to N=4096: beyond, one run takes seconds.
  "$build/cuda/validate/fa-validate" --algo "$(kernels "$not_naive and 'fp32' in k['dtypes']")" --runs 5 --warmup 1 --sample-rows 8 \
      --out "$out/validate_fp32.json" > "$out/validate.txt" 2>&1
  "$build/cuda/validate/fa-validate" --algo "$(kernels "$naive")" --N 512,1024,2048,4096 --runs 5 --warmup 1 --sample-rows 8 \
      --out "$out/validate_fp32_naive.json" >> "$out/validate.txt" 2>&1
  tail -3 "$out/validate.txt"
fi

if has half; then
  log "fa-validate fp16/bf16"
  # HALF_ALGOS="fa1_tc,fa2_tc" runs a subset of the grid's kernels.
  "$build/cuda/validate/fa-validate" --dtype fp16,bf16 --algo "${HALF_ALGOS:-$(kernels "$not_naive")}" --runs 5 \
      --warmup 1 --sample-rows 8 --out "$out/validate_half.json" > "$out/validate_half.txt" 2>&1
  tail -3 "$out/validate_half.txt"
fi

if has naive; then
  log "fa-validate naive GEMM, fp16/bf16"
  "$build/cuda/validate/fa-validate" --dtype fp16,bf16 --algo "$(kernels "$naive")" --N 512,1024,2048,4096 --runs 5 --warmup 1 \
      --sample-rows 8 --out "$out/validate_half_naive.json" > "$out/validate_half_naive.txt" 2>&1
  tail -3 "$out/validate_half_naive.txt"
fi

if has paper; then
  # FlashAttention-2 paper, section 4.1: batch x sequence = 16k tokens, hidden dimension 2048
  # (32 heads of 64 or 16 heads of 128), fp16. Standard attention here is cuBLAS GEMMs + softmax; then
  # every FA1 and FA2 kernel.
  paper_kernels=$(kernels "not k['forward_kernel'] and (k['products'] == 'library_gemm' or k['algorithm'] in ('fa1', 'fa2'))")
  log "fa-validate, the FA2 paper's setting"
  for d in 64 128; do
    for N in 2048 4096 8192 16384; do
      "$build/cuda/validate/fa-validate" --dtype fp16 --d "$d" --N "$N" --batch $((16384 / N)) --heads $((2048 / d)) \
          --algo "$paper_kernels" --runs 5 --warmup 1 --sample-rows 4 \
          --out "$out/paper_d${d}_N${N}.json" >> "$out/paper.txt" 2>&1
      python3 cuda/scripts/torch_sdpa.py --N "$N" --d "$d" --dtype fp16 --batch $((16384 / N)) --heads $((2048 / d)) \
          --runs 10 --out "$out/paper_torch_d${d}_N${N}.json" >> "$out/paper.txt" 2>&1
    done
  done
  tail -4 "$out/paper.txt"
fi

if has ncu; then
  log "fa-validate --ncu"
  "$build/cuda/validate/fa-validate" --ncu --N 2048,4096,8192 --d 64 --causal off --runs 3 --out "$out/validate_ncu.json" > "$out/ncu.txt" 2>&1
  tail -20 "$out/ncu.txt"
fi

if has peaks; then
  log "peak-rates"
  "$build/cuda/peak-rates" > "$out/peak_rates.txt" 2>&1
  "$build/cuda/peak-rates" --json > "$out/peak_rates.json" 2>>"$out/peak_rates.txt"
  cat "$out/peak_rates.txt"
  # The L2 probe's requests and sectors as the L2 slices count them (4 probes x 21 launches).
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  "$ncu" --clock-control none --kernel-name regex:l2_request --launch-count 84 --csv --page raw \
      --print-units base --metrics gpu__time_duration.sum,lts__t_requests_srcunit_tex_op_read.sum,\
lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum,lts__cycles_elapsed.avg.per_second,\
sm__cycles_elapsed.avg.per_second "$build/cuda/peak-rates" > "$out/peak_rates_l2_ncu.csv" 2> "$out/peak_rates_l2_ncu.err" ||
      tail -3 "$out/peak_rates_l2_ncu.err"
fi

if has profile; then
  log "profile_bottlenecks (ncu)"
  # PROFILE_DIMS="64 128": one folder per head dim (profile/ for the first, profile_d<d>/ for the others).
  first=1
  for pd in ${PROFILE_DIMS:-64}; do
    dir="$out/profile"; [[ $first == 1 ]] || dir="$out/profile_d$pd"
    first=0
    bash cuda/scripts/profile_bottlenecks.sh "$build" "$dir" 4096 "$pd" > "$dir.txt" 2>&1
    tail -6 "$dir.txt"
  done
fi

if has torch; then
  log "torch sdpa"
  python3 cuda/scripts/torch_sdpa.py --out "$out/torch_sdpa.json" > "$out/torch.txt" 2>&1
  tail -3 "$out/torch.txt"
fi
if has backward; then
  # BWD_N: the sequence lengths of the backward's timings.
  bwd_n=${BWD_N:-1024,2048,4096,8192,16384}
  backward_kernels=$(kernels "k['forward_kernel']")
  if ! has check && [[ ${BWD_CHECK:-1} != 0 ]]; then  # the check step checks every kernel, backward ones too
    log "backward: cuda-check ($backward_kernels)"
    "$build/cuda/cuda-check" --quiet --algo $(echo "$backward_kernels" | sed 's/,/ --algo /g') > "$out/bwd_check.txt" 2>&1
    echo "exit $?" >> "$out/bwd_check.txt"
    tail -3 "$out/bwd_check.txt"
  fi
  log "backward: fa-validate --pass bwd fp16/bf16"
  "$build/cuda/validate/fa-validate" --pass bwd --dtype fp16,bf16 --N "$bwd_n" --algo "$backward_kernels" --runs 5 --warmup 1 \
      --sample-rows 4 --out "$out/validate_bwd_half.json" > "$out/validate_bwd.txt" 2>&1
  tail -3 "$out/validate_bwd.txt"
  log "backward: fa-validate --pass bwd fp32 (ncu on the CUDA-core kernel at d=64)"
  "$build/cuda/validate/fa-validate" --pass bwd --dtype fp32 --N 2048,4096 --algo "$(kernels "k['forward_kernel'] and 'fp32' in k['dtypes']")" \
      --runs 3 --warmup 1 --sample-rows 4 --ncu --out "$out/validate_bwd_fp32.json" >> "$out/validate_bwd.txt" 2>&1
  tail -3 "$out/validate_bwd.txt"
  log "backward: fa-validate --pass fwd+bwd (a training step's attention) at N=4096"
  "$build/cuda/validate/fa-validate" --pass fwd+bwd --dtype fp16 --N 4096 --algo "$(kernels "k['forward_kernel'] and k['products'] != 'cuda_cores'")" \
      --runs 5 --warmup 1 --sample-rows 4 --out "$out/validate_fwd_bwd.json" >> "$out/validate_bwd.txt" 2>&1
  tail -3 "$out/validate_bwd.txt"
  log "backward: torch sdpa --pass bwd and fwd+bwd"
  python3 cuda/scripts/torch_sdpa.py --pass bwd --N "$bwd_n" --dtype fp16,bf16 --runs 10 --out "$out/torch_bwd.json" \
      > "$out/torch_bwd.txt" 2>&1
  python3 cuda/scripts/torch_sdpa.py --pass fwd+bwd --N 4096 --dtype fp16 --runs 10 --out "$out/torch_fwd_bwd.json" \
      >> "$out/torch_bwd.txt" 2>&1
  tail -3 "$out/torch_bwd.txt"
fi
if has decode; then
  if ! has check; then  # the check step checks every kernel, flash_decoding too
    log "decode: cuda-check flash_decoding"
    "$build/cuda/cuda-check" --quiet --algo flash_decoding > "$out/decode_check.txt" 2>&1; echo "exit $?" >> "$out/decode_check.txt"
    tail -3 "$out/decode_check.txt"
  fi
  if ! has sanitize; then
    log "decode: compute-sanitizer (flash_decoding)"
    SANITIZE_ALGOS=flash_decoding bash cuda/scripts/sanitize.sh "$build" "$out/decode_sanitizer" > "$out/decode_sanitizer.txt" 2>&1
    tail -4 "$out/decode_sanitizer.txt"
  fi
  log "decode: copy bandwidth"
  "$build/cuda/peak-rates" --copy > "$out/decode_copy.txt" 2>&1
  "$build/cuda/peak-rates" --copy --json > "$out/decode_copy.json" 2>>"$out/decode_copy.txt"
  cat "$out/decode_copy.txt"
  # DECODE_NK, DECODE_BATCHES, DECODE_KV: a part of the grid (defaults: Nk 1024..131072, batch 1, 8, 64, KV 32, 8, 1).
  grid=(--Nk "${DECODE_NK:-1024,4096,16384,65536,131072}" --batches "${DECODE_BATCHES:-1,8,64}" --kv-heads "${DECODE_KV:-32,8,1}")
  log "decode: fa-validate --grid decode"
  "$build/cuda/validate/fa-validate" --grid decode "${grid[@]}" --algo flash_decoding,fa2_tc --runs 10 --warmup 2 \
      --sample-rows 4 --out "$out/validate_decode.json" > "$out/validate_decode.txt" 2>&1
  tail -n +2 "$out/validate_decode.txt"
  log "decode: torch sdpa --grid decode"
  python3 cuda/scripts/torch_sdpa.py --grid decode "${grid[@]}" --runs 10 --out "$out/torch_decode.json" \
      > "$out/torch_decode.txt" 2>&1
  cat "$out/torch_decode.txt"
fi
if has ladder; then
  new=${LADDER_NEW:-fa2_tc_tuned,fa2_wgmma}
  if [[ ${LADDER_CHECK:-1} != 0 ]]; then  # LADDER_CHECK=0: timings only (the check ran in an earlier call)
  log "ladder: cuda-check ($new)"
  # A new kernel that deadlocks (an mbarrier never completing) must not take the whole call: 4 minutes at most.
  timeout 240 "$build/cuda/cuda-check" --quiet --algo $(echo "$new" | sed 's/,/ --algo /g') > "$out/ladder_check.txt" 2>&1
  echo "exit $?" >> "$out/ladder_check.txt"
  tail -4 "$out/ladder_check.txt"
  log "ladder: compute-sanitizer ($new)"
  SANITIZE_ALGOS=$new timeout 180 bash cuda/scripts/sanitize.sh "$build" "$out/ladder_sanitizer" > "$out/ladder_sanitizer.txt" 2>&1
  tail -4 "$out/ladder_sanitizer.txt"
  fi
  log "ladder: the FA2 paper's setting, every rung, PyTorch's flash and cuDNN"
  causal=${LADDER_CAUSAL:-both}
  for d in ${LADDER_D:-64 128}; do
    for N in ${LADDER_N:-2048 4096 8192 16384}; do
      common=(--d "$d" --N "$N" --batch $((16384 / N)) --heads $((2048 / d)) --runs 5 --warmup 1 --sample-rows 4 --causal "$causal")
      timeout 120 "$build/cuda/validate/fa-validate" --dtype fp16 --algo fa2,fa2_tc,fa2_tc_tuned,fa2_wgmma "${common[@]}" \
          --out "$out/ladder_fp16_d${d}_N${N}.json" >> "$out/ladder.txt" 2>&1
      timeout 120 "$build/cuda/validate/fa-validate" --dtype bf16 --algo fa2_tc,fa2_tc_tuned,fa2_wgmma "${common[@]}" \
          --out "$out/ladder_bf16_d${d}_N${N}.json" >> "$out/ladder.txt" 2>&1
      python3 cuda/scripts/torch_sdpa.py --N "$N" --d "$d" --dtype fp16,bf16 --batch $((16384 / N)) --heads $((2048 / d)) \
          --backends flash,cudnn --runs 10 --out "$out/ladder_torch_d${d}_N${N}.json" >> "$out/ladder.txt" 2>&1
    done
  done
  grep -E "fa2_tc_tuned|fa2_wgmma|torch_(flash|cudnn)" "$out/ladder.txt" | tail -24
fi

log "done"
