#!/usr/bin/env bash
# EXPERIMENT (issue 22): fa2_tc_tuned's variants (FASIM_TUNED_VARIANT bits: 1 heavy-first causal launch order,
# 2 full-tile copies with precomputed addresses, 4 lazy rescale, 8 skip fully masked warp tiles), checked and
# timed in the FA2 paper's setting beside PyTorch's flash backend, in one run on one card.
set -uo pipefail
final=${OUT:-$PWD/gpu-out}
out=$PWD/gpu-variants
rm -rf "$out"; mkdir -p "$out" "$final"
trap 'tar czf "$final/variants.tgz" -C "$PWD" gpu-variants; cp "$out/session.log" "$out/variants.txt" "$final/" 2>/dev/null' EXIT
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$out/session.log"; }
build=$PWD/build-gpu
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv; nvcc --version | tail -2
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1; date -u; echo "command: $0 $*"; } > "$out/device.txt" 2>&1
cat "$out/device.txt"
log build
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a -DFASIM_CUDA=ON -DFASIM_TESTS=OFF >"$out/build.log" 2>&1 &&
  cmake --build "$build" -j 16 --target cuda-check fa-validate >>"$out/build.log" 2>&1 || { log "build failed"; tail -40 "$out/build.log"; exit 1; }
for v in 2 15; do
  log "cuda-check fa2_tc_tuned variant $v"
  FASIM_TUNED_VARIANT=$v timeout 200 "$build/cuda/cuda-check" --quiet --algo fa2_tc_tuned > "$out/check_v$v.txt" 2>&1; echo "exit $?" >> "$out/check_v$v.txt"
  tail -2 "$out/check_v$v.txt"
done
for v in 15; do
  log "compute-sanitizer variant $v"
  FASIM_TUNED_VARIANT=$v SANITIZE_ALGOS=fa2_tc_tuned timeout 180 bash cuda/scripts/sanitize.sh "$build" "$out/sanitizer_v$v" > "$out/sanitizer_v$v.txt" 2>&1
  tail -3 "$out/sanitizer_v$v.txt"
done
log "timings"
for d in 64 128; do
  for N in 2048 4096 8192 16384; do
    common=(--d "$d" --N "$N" --batch $((16384 / N)) --heads $((2048 / d)) --runs 5 --warmup 1 --sample-rows 4 --causal both --dtype fp16,bf16 --algo fa2_tc_tuned)
    for v in 0 1 3 7 15 0b; do
      FASIM_TUNED_VARIANT=${v%b} timeout 120 "$build/cuda/validate/fa-validate" "${common[@]}" --out "$out/v${v}_d${d}_N${N}.json" >> "$out/validate.txt" 2>&1
    done
    python3 cuda/scripts/torch_sdpa.py --N "$N" --d "$d" --dtype fp16,bf16 --batch $((16384 / N)) --heads $((2048 / d)) \
        --backends flash --runs 10 --out "$out/torch_d${d}_N${N}.json" >> "$out/validate.txt" 2>&1
  done
done
python3 - "$out" > "$out/variants.txt" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
t = {}
for p in glob.glob(os.path.join(out, "*.json")):
    tag = os.path.basename(p).split("_")[0]
    for r in json.load(open(p)).get("results", []):
        if "measured_s" in r:
            t[(tag if tag != "torch" else r["algo"], r["dtype"], r["d"], r["N"], r["causal"])] = r["measured_s"]
tags = ["v0", "v1", "v3", "v7", "v15", "v0b"]
print("flash time over each variant's (>1: variant faster); ms of v0 and flash")
print("d   causal dtype N      " + " ".join(f"{x:>6}" for x in tags) + "   v0 ms  flash ms")
for d in (64, 128):
    for c in (False, True):
        for dt in ("fp16", "bf16"):
            for N in (2048, 4096, 8192, 16384):
                f = t.get(("torch_flash", dt, d, N, c))
                row = [f / t[(x, dt, d, N, c)] if f and (x, dt, d, N, c) in t else float("nan") for x in tags]
                v0 = t.get(("v0", dt, d, N, c), float("nan"))
                print(f"{d:<3} {'yes' if c else 'no ':<6} {dt:<5} {N:<6} " + " ".join(f"{x:6.3f}" for x in row) + f"  {v0*1e3:6.3f}  {(f or float('nan'))*1e3:6.3f}")
PY
cat "$out/variants.txt"
log done
